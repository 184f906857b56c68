// The decoders of what registers alone decide: moves, integer and float arithmetic, bits,
// comparisons and conversions. See opcodes.def for which decodes which opcode.

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

// mov d, a; mov d, {a, b} (pack); mov {a, b}, d (unpack).
void decode_mov(Decoding& d) {
    Instruction& ins = d.ins;
    d.need(2);
    ins.type = d.one_type();
    const auto& ops = d.ops;
    if (ops[1].kind == Operand::Kind::vector) {
        ins.op = Op::mov_pack;
        ins.dst[0] = d.dst(ops[0]);
        if (ops[1].elements.size() > 4 || ops[1].elements.empty())
            throw Unsupported{d.opcode};
        ins.vector = static_cast<std::uint8_t>(ops[1].elements.size());
        for (std::size_t e = 0; e < ops[1].elements.size(); ++e)
            ins.src[e] = d.name(ops[1].elements[e]);
    } else if (ops[0].kind == Operand::Kind::vector) {
        ins.op = Op::mov_unpack;
        if (ops[0].elements.size() > 4 || ops[0].elements.empty())
            throw Unsupported{d.opcode};
        ins.vector = static_cast<std::uint8_t>(ops[0].elements.size());
        for (std::size_t e = 0; e < ops[0].elements.size(); ++e)
            ins.dst[e] = d.name(ops[0].elements[e]);
        ins.src[0] = d.value(ops[1], ins.type);
    } else {
        ins.op = Op::mov;
        ins.dst[0] = d.dst(ops[0]);
        ins.src[0] = d.value(ops[1], ins.type);
    }
}

void decode_selp(Decoding& d) {
    d.only({});
    d.need(4);
    Instruction& ins = d.ins;
    ins.op = Op::selp;
    ins.type = d.one_type();
    ins.dst[0] = d.dst(d.ops[0]);
    ins.src[0] = d.value(d.ops[1], ins.type);
    ins.src[1] = d.value(d.ops[2], ins.type);
    ins.src[2] = d.value(d.ops[3], Type::pred);
}

void decode_add_sub(Decoding& d) {
    d.only({"rn", "rz", "rm", "rp", "ftz", "sat"});
    d.binary(d.op);
    d.ins.saturate = d.has("sat");
    d.ins.rounding = d.rounding();
}

void decode_mul(Decoding& d) {
    d.only({"lo", "hi", "wide", "rn", "rz", "rm", "rp", "ftz", "sat"});
    Op op = d.op;
    d.chain.first_listed<Op>({{"wide", Op::mul_wide}, {"hi", Op::mul_hi}}, op);
    d.binary(op);
    d.ins.rounding = d.rounding();
    if (op == Op::mul_wide && type_bits(d.ins.type) > 32)
        throw ParseError(d.line, "mul.wide of 64 bits");
}

// mad and fma: mad.lo, mad.hi, mad.wide of integers; fma (or mad) of floats.
void decode_mad(Decoding& d) {
    d.only({"lo", "hi", "wide", "rn", "rz", "rm", "rp", "ftz", "sat"});
    d.need(4);
    Instruction& ins = d.ins;
    ins.type = d.one_type();
    Op op = is_float(ins.type) ? Op::fma : d.op;
    d.chain.first_listed<Op>({{"wide", Op::mad_wide}, {"hi", Op::mad_hi}}, op);
    ins.op = op;
    ins.dst[0] = d.dst(d.ops[0]);
    const Type addend =
        op == Op::mad_wide
            ? (is_signed(ins.type) ? (type_bits(ins.type) == 16 ? Type::s32 : Type::s64)
                                   : (type_bits(ins.type) == 16 ? Type::u32 : Type::u64))
            : ins.type;
    ins.src[0] = d.value(d.ops[1], ins.type);
    ins.src[1] = d.value(d.ops[2], ins.type);
    ins.src[2] = d.value(d.ops[3], addend);
    ins.saturate = d.has("sat");
    ins.rounding = d.rounding();
}

// div, rem, min, max.
void decode_float_binary(Decoding& d) {
    d.only(kFloatModifiers);
    d.binary(d.op);
    d.ins.approx = d.has("approx") || d.has("full");
    d.ins.rounding = d.rounding();
}

void decode_neg_abs(Decoding& d) {
    d.only({"ftz"});
    d.unary(d.op);
}

void decode_sad(Decoding& d) {
    d.only({});
    d.need(4);
    Instruction& ins = d.ins;
    ins.op = Op::sad;
    ins.type = d.one_type();
    ins.dst[0] = d.dst(d.ops[0]);
    ins.src[0] = d.value(d.ops[1], ins.type);
    ins.src[1] = d.value(d.ops[2], ins.type);
    ins.src[2] = d.value(d.ops[3], ins.type);
}

void decode_copysign(Decoding& d) {
    d.only({});
    d.binary(Op::copysign);
}

// and, or, xor.
void decode_bitwise(Decoding& d) {
    d.only({});
    d.binary(d.op);
}

// not, cnot, popc, clz, brev.
void decode_bit_unary(Decoding& d) {
    d.only({});
    d.unary(d.op);
}

void decode_shift(Decoding& d) {
    d.only({});
    d.binary(d.op);
}

void decode_bfe(Decoding& d) {
    d.only({});
    d.need(4);
    Instruction& ins = d.ins;
    ins.op = Op::bfe;
    ins.type = d.one_type();
    ins.dst[0] = d.dst(d.ops[0]);
    ins.src[0] = d.value(d.ops[1], ins.type);
    ins.src[1] = d.value(d.ops[2], Type::u32);
    ins.src[2] = d.value(d.ops[3], Type::u32);
}

void decode_bfi(Decoding& d) {
    d.only({});
    d.need(5);
    Instruction& ins = d.ins;
    ins.op = Op::bfi;
    ins.type = d.one_type();
    ins.dst[0] = d.dst(d.ops[0]);
    ins.src[0] = d.value(d.ops[1], ins.type);
    ins.src[1] = d.value(d.ops[2], ins.type);
    ins.src[2] = d.value(d.ops[3], Type::u32);
    ins.src[3] = d.value(d.ops[4], Type::u32);
}

void decode_prmt(Decoding& d) {
    d.only({});  // the f4e, b4e, rc8, ecl, ecr, rc16 modes are not implemented
    d.need(4);
    Instruction& ins = d.ins;
    ins.op = Op::prmt;
    ins.type = d.one_type();
    ins.dst[0] = d.dst(d.ops[0]);
    ins.src[0] = d.value(d.ops[1], Type::b32);
    ins.src[1] = d.value(d.ops[2], Type::b32);
    ins.src[2] = d.value(d.ops[3], Type::b32);
}

void decode_bfind(Decoding& d) {
    d.only({"shiftamt"});
    d.need(2);
    Instruction& ins = d.ins;
    ins.op = Op::bfind;
    ins.type = d.one_type();
    ins.shift = d.has("shiftamt") ? ShiftMode::left_clamp : ShiftMode::left_wrap;
    ins.dst[0] = d.dst(d.ops[0]);
    ins.src[0] = d.value(d.ops[1], ins.type);
}

void decode_shf(Decoding& d) {
    d.only({"l", "r", "wrap", "clamp"});
    d.need(4);
    Instruction& ins = d.ins;
    ins.op = Op::shf;
    ins.type = d.one_type();
    const bool left = d.has("l");
    const bool clamp = d.has("clamp");
    ins.shift = left ? (clamp ? ShiftMode::left_clamp : ShiftMode::left_wrap)
                     : (clamp ? ShiftMode::right_clamp : ShiftMode::right_wrap);
    ins.dst[0] = d.dst(d.ops[0]);
    ins.src[0] = d.value(d.ops[1], Type::b32);
    ins.src[1] = d.value(d.ops[2], Type::b32);
    ins.src[2] = d.value(d.ops[3], Type::u32);
}

// setp.CMP[.BOOL] p[|q], a, b[, {!}c].
void decode_setp(Decoding& d) {
    Instruction& ins = d.ins;
    const ModifierChain::Table<Compare> compares = {
        {"eq", Compare::eq},   {"ne", Compare::ne},   {"lt", Compare::lt},   {"le", Compare::le},
        {"gt", Compare::gt},   {"ge", Compare::ge},   {"lo", Compare::lo},   {"ls", Compare::ls},
        {"hi", Compare::hi},   {"hs", Compare::hs},   {"equ", Compare::equ}, {"neu", Compare::neu},
        {"ltu", Compare::ltu}, {"leu", Compare::leu}, {"gtu", Compare::gtu}, {"geu", Compare::geu},
        {"num", Compare::num}, {"nan", Compare::nan}};
    const ModifierChain::Table<BoolOp> combiners = {
        {"and", BoolOp::and_}, {"or", BoolOp::or_}, {"xor", BoolOp::xor_}};
    d.chain.each([&](std::string_view m) {
        if (!ModifierChain::names(compares, m) && !ModifierChain::names(combiners, m) &&
            m != "ftz") {
            throw Unsupported{d.opcode};
        }
    });
    if (!d.chain.last_written(compares, ins.compare))
        throw ParseError(d.line, "setp without a comparison");
    d.chain.last_written(combiners, ins.bool_op);
    ins.op = Op::setp;
    ins.type = d.one_type();
    d.need(ins.bool_op == BoolOp::none ? 3 : 4);
    const auto& ops = d.ops;
    if (ops[0].kind == Operand::Kind::pair) {
        ins.dst[0] = d.name(ops[0].name);
        ins.dst2 = d.name(ops[0].elements[0]);
    } else {
        ins.dst[0] = d.dst(ops[0]);
    }
    ins.src[0] = d.value(ops[1], ins.type);
    ins.src[1] = d.value(ops[2], ins.type);
    if (ins.bool_op != BoolOp::none) {
        ins.src[2] = d.value(ops[3], Type::pred);
        ins.negate_c = ops[3].negate;
    }
}

// cvt.ROUND?.sat?.TO.FROM d, a.
void decode_cvt(Decoding& d) {
    d.only({"rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "ftz", "sat"});
    d.need(2);
    const auto& types = d.chain.types();
    if (types.size() != 2)
        throw ParseError(d.line, "cvt needs two types");
    Instruction& ins = d.ins;
    ins.op = Op::cvt;
    ins.type = types[0];
    ins.source_type = types[1];
    ins.rounding = d.rounding();
    ins.saturate = d.has("sat");
    ins.dst[0] = d.dst(d.ops[0]);
    ins.src[0] = d.value(d.ops[1], ins.source_type);
}

// rcp, sqrt, rsqrt, ex2, lg2, sin, cos.
void decode_float_unary(Decoding& d) {
    d.only(kFloatModifiers);
    d.unary(d.op);
    d.ins.approx = d.has("approx");
    d.ins.rounding = d.rounding();
    if (!is_float(d.ins.type))
        throw ParseError(d.line, d.opcode + " needs a float type");
}

}  // namespace grader::sim::detail
