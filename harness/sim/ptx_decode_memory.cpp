// The decoders of what touches memory (ld, st, atom, cvta), of the warp's lanes together (shfl,
// vote, redux, activemask) and of control (branches, barriers, calls, exits). See opcodes.def
// for which decodes which opcode.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/program.hpp"
#include "sim/ptx_decode.hpp"
#include "sim/ptx_parser.hpp"
#include "sim/sim.hpp"

namespace grader::sim::detail {

namespace {

// The operations of atom, red, redux and bar.red, by modifier.
const ModifierChain::Table<AtomOp> kAtomOps = {
    {"add", AtomOp::add}, {"min", AtomOp::min},   {"max", AtomOp::max}, {"inc", AtomOp::inc},
    {"dec", AtomOp::dec}, {"exch", AtomOp::exch}, {"cas", AtomOp::cas}, {"and", AtomOp::and_},
    {"or", AtomOp::or_},  {"xor", AtomOp::xor_}};

// Throws Unsupported where the chain has a modifier the table names.
void refuse(const Decoding& d, std::initializer_list<std::string_view> unsupported) {
    d.chain.each([&](std::string_view m) {
        for (const std::string_view u : unsupported) {
            if (m == u)
                throw Unsupported{d.opcode};
        }
    });
}

// A vector store's element: a register, a number or the sink.
Operand element_operand(std::string_view text) {
    Operand element;
    element.kind = text == "_" ? Operand::Kind::sink : Operand::Kind::reg;
    element.name = text;
    if (!text.empty() && (text[0] >= '0' && text[0] <= '9')) {
        element.kind = Operand::Kind::immediate;
        element.number = text;
    }
    return element;
}

}  // namespace

// cvta.SPACE (to generic) and cvta.to.SPACE (from generic).
void decode_cvta(Decoding& d) {
    d.need(2);
    Instruction& ins = d.ins;
    ins.type = d.one_type();
    ins.op = d.has("to") ? Op::cvta_from_generic : Op::cvta_to_generic;
    const ModifierChain::Table<Space> spaces = {{"global", Space::global},
                                                {"shared", Space::shared},
                                                {"shared::cta", Space::shared},
                                                {"local", Space::local},
                                                {"const", Space::constant}};
    d.chain.each([&](std::string_view m) {
        if (!ModifierChain::names(spaces, m) && m != "to")
            throw Unsupported{d.opcode};
    });
    d.chain.last_written(spaces, ins.space);
    ins.dst[0] = d.dst(d.ops[0]);
    ins.src[0] = d.value(d.ops[1], ins.type);
}

// ld, ldu and st, scalar or vector (v2, v4).
void decode_ld_st(Decoding& d) {
    Instruction& ins = d.ins;
    const bool load = d.op == Op::ld;
    ins.op = d.op;
    refuse(d, {"v8", "shared::cluster", "param::func", "global::cluster"});
    // .nc, .volatile, .weak, .relaxed, .acquire, .release, .gpu, .cta, .sys, cache operators
    // (.ca .cg .cs .lu .cv .wb .wt) and .L1::/.L2:: hints: no effect here.
    d.chain.last_written<Space>({{"global", Space::global},
                                 {"shared", Space::shared},
                                 {"shared::cta", Space::shared},
                                 {"local", Space::local},
                                 {"param", Space::param},
                                 {"param::entry", Space::param},
                                 {"const", Space::constant}},
                                ins.space);
    d.chain.last_written<std::uint8_t>({{"v2", 2}, {"v4", 4}}, ins.vector);
    ins.type = d.one_type();
    if (ins.type == Type::pred)
        throw ParseError(d.line, "ld/st of .pred");
    d.need(2);
    const Operand& value = load ? d.ops[0] : d.ops[1];
    const Operand& where = load ? d.ops[1] : d.ops[0];
    if (ins.space == Space::param && where.kind == Operand::Kind::address && !where.name.empty() &&
        d.names_local_symbol(where.name)) {
        ins.space = Space::local;  // a call sequence's argument scratch
    }
    ins.bytes = static_cast<std::uint8_t>(type_size_bytes(ins.type));
    ins.polls = load && (ins.space == Space::global || ins.space == Space::generic) &&
                (d.has("volatile") || d.has("relaxed") || d.has("acquire"));
    d.address(where);
    std::vector<std::string_view> elements;
    if (value.kind == Operand::Kind::vector) {
        elements = value.elements;
        if (elements.size() != ins.vector)
            throw ParseError(d.line, "vector size mismatch");
    } else if (ins.vector != 1) {
        throw ParseError(d.line, "vector access needs a {...} operand");
    }
    if (load) {
        if (elements.empty()) {
            ins.dst[0] = d.dst(value);
        } else {
            for (std::size_t e = 0; e < elements.size(); ++e)
                ins.dst[e] = d.name(elements[e]);
        }
        return;
    }
    // src[0] is the address; the values are src[1..]. A vector store has at most 4 values, and
    // src has 4 slots: vector stores keep their values in dst[] instead.
    if (elements.empty()) {
        ins.dst[0] = d.value(value, ins.type);
    } else {
        for (std::size_t e = 0; e < elements.size(); ++e)
            ins.dst[e] = d.value(element_operand(elements[e]), ins.type);
    }
}

// atom d, [a], b[, c] and red [a], b: red is an atom whose result goes to the sink.
void decode_atom(Decoding& d) {
    Instruction& ins = d.ins;
    refuse(d, {"v2", "v4", "shared::cluster"});
    if (!d.chain.last_written(kAtomOps, ins.atom_op))
        throw ParseError(d.line, d.opcode + " without an operation");
    d.chain.last_written<Space>(
        {{"global", Space::global}, {"shared", Space::shared}, {"shared::cta", Space::shared}},
        ins.space);
    ins.op = Op::atom;
    ins.polls = ins.space != Space::shared;
    ins.type = d.one_type();
    ins.bytes = static_cast<std::uint8_t>(type_size_bytes(ins.type));
    if (ins.bytes < 4)
        throw Unsupported{d.opcode};
    const bool is_red = d.base() == "red";
    const std::size_t values = ins.atom_op == AtomOp::cas ? 2 : 1;
    d.need((is_red ? 1 : 2) + values);
    std::size_t k = 0;
    ins.dst[0] = is_red ? d.sink() : d.dst(d.ops[k++]);
    d.address(d.ops[k++]);
    ins.src[1] = d.value(d.ops[k++], ins.type);
    if (values == 2)
        ins.src[2] = d.value(d.ops[k++], ins.type);
}

// shfl.sync.MODE.b32 d[|p], a, b, c, membermask.
void decode_shfl(Decoding& d) {
    if (!d.has("sync"))
        throw Unsupported{d.opcode};
    Instruction& ins = d.ins;
    ins.op = Op::shfl;
    if (!d.chain.first_listed<ShuffleMode>({{"up", ShuffleMode::up},
                                            {"down", ShuffleMode::down},
                                            {"bfly", ShuffleMode::bfly},
                                            {"idx", ShuffleMode::idx}},
                                           ins.shuffle)) {
        throw ParseError(d.line, "shfl without a mode");
    }
    ins.type = d.one_type();
    d.need(5);
    const auto& ops = d.ops;
    if (ops[0].kind == Operand::Kind::pair) {
        ins.dst[0] = d.name(ops[0].name);
        ins.dst2 = d.name(ops[0].elements[0]);
    } else {
        ins.dst[0] = d.dst(ops[0]);
    }
    ins.src[0] = d.value(ops[1], Type::b32);
    ins.src[1] = d.value(ops[2], Type::u32);
    ins.src[2] = d.value(ops[3], Type::u32);
    ins.src[3] = d.value(ops[4], Type::u32);
}

void decode_vote(Decoding& d) {
    Instruction& ins = d.ins;
    if (!d.chain.first_listed<Op>({{"ballot", Op::vote_ballot},
                                   {"all", Op::vote_all},
                                   {"any", Op::vote_any},
                                   {"uni", Op::vote_uni}},
                                  ins.op)) {
        throw Unsupported{d.opcode};
    }
    ins.type = d.one_type();
    if (d.ops.size() != 2 && d.ops.size() != 3)
        throw ParseError(d.line, "vote takes 2 or 3 operands");
    ins.dst[0] = d.dst(d.ops[0]);
    ins.src[0] = d.value(d.ops[1], Type::pred);
    ins.negate_c = d.ops[1].negate;
}

void decode_activemask(Decoding& d) {
    d.need(1);
    d.ins.op = Op::activemask;
    d.ins.type = Type::b32;
    d.ins.dst[0] = d.dst(d.ops[0]);
}

// redux.sync.OP.TYPE d, a, membermask (integers only).
void decode_redux(Decoding& d) {
    if (!d.has("sync"))
        throw Unsupported{d.opcode};
    Instruction& ins = d.ins;
    ins.op = Op::redux;
    if (!d.chain.first_listed<AtomOp>({{"add", AtomOp::add},
                                       {"min", AtomOp::min},
                                       {"max", AtomOp::max},
                                       {"and", AtomOp::and_},
                                       {"or", AtomOp::or_},
                                       {"xor", AtomOp::xor_}},
                                      ins.atom_op)) {
        throw Unsupported{d.opcode};
    }
    ins.type = d.one_type();
    if (is_float(ins.type))
        throw Unsupported{d.opcode};
    d.need(3);
    ins.dst[0] = d.dst(d.ops[0]);
    ins.src[0] = d.value(d.ops[1], ins.type);
}

// bra LABEL (brx, an indirect branch, is not executed).
void decode_bra(Decoding& d) {
    if (d.op == Op::unsupported)
        throw Unsupported{d.opcode};
    d.need(1);
    d.ins.op = Op::bra;
    if (d.ops[0].kind != Operand::Kind::reg)
        throw ParseError(d.line, "bra needs a label");
    d.branch_to(d.ops[0].name);
}

// What the table's operation says, whatever the operands: exit, trap, nop.
void decode_operation(Decoding& d) {
    d.ins.op = d.op;
}

// bar.sync, barrier.sync, barrier (whole block); bar.red (__syncthreads_count/_and/_or);
// bar.warp.sync (__syncwarp: lanes already run in lockstep here).
void decode_bar(Decoding& d) {
    Instruction& ins = d.ins;
    if (d.has("warp")) {
        ins.op = Op::nop;
        return;
    }
    if (d.has("red")) {
        // bar.red.popc.u32 d, 0, {!}p (no thread count).
        if (d.ops.size() != 3)
            throw Unsupported{d.opcode + " with a thread count"};
        ins.op = Op::bar_red;
        if (!d.chain.first_listed<AtomOp>(
                {{"popc", AtomOp::add}, {"and", AtomOp::and_}, {"or", AtomOp::or_}}, ins.atom_op)) {
            throw Unsupported{d.opcode};
        }
        ins.type = d.one_type();
        ins.dst[0] = d.dst(d.ops[0]);
        ins.src[1] = d.value(d.ops[2], Type::pred);
        ins.negate_c = d.ops[2].negate;
        return;
    }
    if (!(d.has("sync") || (d.base() == "barrier" && d.chain.empty())))
        throw Unsupported{d.opcode};
    // A thread count other than the whole block would need named-barrier counting.
    if (d.ops.size() != 1)
        throw Unsupported{d.opcode + " with a thread count"};
    ins.op = Op::bar;
}

// call: only vprintf, whose output the simulator drops (counted in LaunchCounts) but whose
// result it gives: src[0] is the address of the format argument's scratch, src[1] that of the
// result's (none where the kernel does not read it). Device functions NVRTC did not inline are
// not executed.
void decode_call(Decoding& d) {
    const Decoding::CallNames names = d.call_names();
    const std::string_view callee = names.callee;
    if (callee == "vprintf") {
        if (names.arguments.size() != 2 || names.results.size() > 1 ||
            !d.names_local_symbol(names.arguments[0]) ||
            (!names.results.empty() && !d.names_local_symbol(names.results[0])))
            throw Unsupported{"call of vprintf other than (result), vprintf, (format, arguments)"};
        d.ins.op = Op::printf_call;
        d.ins.src[0] = d.name(names.arguments[0]);
        if (!names.results.empty())
            d.ins.src[1] = d.name(names.results[0]);
        return;
    }
    throw Unsupported{"call of " + std::string(callee.empty() ? "a function pointer" : callee)};
}

void decode_nanosleep(Decoding& d) {
    d.need(1);
    d.ins.op = Op::nanosleep;
    d.ins.type = Type::u32;
    d.ins.src[0] = d.value(d.ops[0], Type::u32);
}

}  // namespace grader::sim::detail
