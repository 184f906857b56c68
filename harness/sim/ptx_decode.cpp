// What every decoder shares: reading the operands and the modifier chain, the instruction's type,
// its destination and source slots. The decoders themselves are in ptx_decode_arithmetic.cpp and
// ptx_decode_memory.cpp; opcodes.def says which decodes which opcode.

#include "sim/ptx_decode.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "sim/program.hpp"
#include "sim/ptx_parser.hpp"
#include "sim/sim.hpp"

namespace grader::sim::detail {

void Decoding::read() {
    ops = parser_.operands(operands_begin_, operands_end_);
    chain = ModifierChain(opcode);
    ins.ftz = chain.has("ftz");
}

void Decoding::only(std::initializer_list<std::string_view> allowed) const {
    if (!chain.only(allowed))
        throw Unsupported{opcode};
}

Type Decoding::one_type() const {
    if (chain.types().size() != 1)
        throw ParseError(line, opcode + ": expected one type");
    return chain.types()[0];
}

Rounding Decoding::rounding() const {
    Rounding r = Rounding::none;
    chain.first_written<Rounding>({{"rn", Rounding::rn},
                                   {"rz", Rounding::rz},
                                   {"rm", Rounding::rm},
                                   {"rp", Rounding::rp},
                                   {"rni", Rounding::rni},
                                   {"rzi", Rounding::rzi},
                                   {"rmi", Rounding::rmi},
                                   {"rpi", Rounding::rpi}},
                                  r);
    return r;
}

void Decoding::need(std::size_t count) const {
    if (ops.size() != count) {
        throw ParseError(line, opcode + " takes " + std::to_string(count) + " operands, found " +
                                   std::to_string(ops.size()));
    }
}

std::int32_t Decoding::dst(const Operand& operand) const {
    if (operand.kind != Operand::Kind::reg && operand.kind != Operand::Kind::sink)
        throw ParseError(line, opcode + ": the destination must be a register");
    const std::int32_t slot = parser_.name_slot(operand.name, line);
    const Entry& entry = *parser_.entry_;
    if (slot >= entry.special_base &&
        slot < entry.special_base + static_cast<int>(Special::count)) {
        throw ParseError(line, opcode + ": cannot write a special register");
    }
    return slot;
}

std::int32_t Decoding::value(const Operand& operand, Type type) const {
    return parser_.value_slot(operand, type, line);
}

std::int32_t Decoding::name(std::string_view register_name) const {
    return parser_.name_slot(register_name, line);
}

std::int32_t Decoding::sink() const {
    return parser_.entry_->sink_slot;
}

void Decoding::address(const Operand& operand) const {
    if (operand.kind != Operand::Kind::address)
        throw ParseError(line, "expected an address");
    ins.offset = operand.offset;
    ins.src[0] = operand.name.empty() ? parser_.constant_slot(0, -1) : name(operand.name);
}

void Decoding::binary(Op operation) const {
    need(3);
    ins.op = operation;
    ins.type = one_type();
    ins.dst[0] = dst(ops[0]);
    ins.src[0] = value(ops[1], ins.type);
    // shl/shr take a .u32 shift amount whatever the type.
    const Type second = (operation == Op::shl || operation == Op::shr) ? Type::u32 : ins.type;
    ins.src[1] = value(ops[2], second);
}

void Decoding::unary(Op operation) const {
    need(2);
    ins.op = operation;
    ins.type = one_type();
    ins.dst[0] = dst(ops[0]);
    ins.src[0] = value(ops[1], ins.type);
}

bool Decoding::names_local_symbol(std::string_view symbol_name) const {
    const std::int32_t symbol = parser_.symbol_index(symbol_name);
    return symbol >= 0 &&
           parser_.program_.symbols[static_cast<std::size_t>(symbol)].space == Space::local;
}

void Decoding::branch_to(std::string_view label) const {
    parser_.pending_branches_.emplace_back(parser_.entry_->code.size(), label);
}

Decoding::CallNames Decoding::call_names() const {
    CallNames names;
    int depth = 0;
    bool after_callee = false;
    for (std::size_t k = operands_begin_; k < operands_end_; ++k) {
        const Token& t = parser_.tokens_[k];
        if (t.text == "(")
            ++depth;
        if (t.text == ")")
            --depth;
        if (t.kind != TokenKind::word)
            continue;
        if (depth == 0 && !after_callee) {
            names.callee = t.text;
            after_callee = true;
        } else if (depth != 0) {
            (after_callee ? names.arguments : names.results).push_back(t.text);
        }
    }
    return names;
}

}  // namespace grader::sim::detail
