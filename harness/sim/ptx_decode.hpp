#pragma once

// Decoding one instruction, private to the parser. opcodes.def names each PTX opcode's decoder;
// a decoder reads the opcode's modifier chain and operands through a Decoding and fills in the
// Instruction, or throws Unsupported (an instruction the simulator cannot execute, reported when
// it is reached) or ParseError (malformed PTX).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/program.hpp"
#include "sim/ptx_parser.hpp"

namespace grader::sim::detail {

// An opcode's dotted chain: its base (ld of ld.global.v2.u32), its type suffixes and its other
// modifiers, each in the order written. Every decoder asks its modifiers through these queries.
class ModifierChain {
public:
    // Throws Unsupported for a type suffix the simulator does not execute (f16, bf16, ...).
    explicit ModifierChain(std::string_view opcode);

    template <class V>
    using Table = std::initializer_list<std::pair<std::string_view, V>>;

    std::string_view base() const { return base_; }
    const std::vector<Type>& types() const { return types_; }
    bool empty() const { return mods_.empty(); }
    bool has(std::string_view modifier) const;
    // Whether every modifier is one of `allowed`.
    bool only(std::initializer_list<std::string_view> allowed) const;
    // The value of the last modifier written that the table names (PTX writes one of each kind;
    // where a chain repeats a kind, the last one counts).
    template <class V>
    bool last_written(Table<V> table, V& value) const {
        bool found = false;
        for (const std::string_view m : mods_) {
            for (const auto& [name, v] : table) {
                if (m == name) {
                    value = v;
                    found = true;
                }
            }
        }
        return found;
    }
    // The value of the first modifier written that the table names.
    template <class V>
    bool first_written(Table<V> table, V& value) const {
        for (const std::string_view m : mods_) {
            for (const auto& [name, v] : table) {
                if (m == name) {
                    value = v;
                    return true;
                }
            }
        }
        return false;
    }
    // The value of the table's first row the chain has: the table's order is the priority.
    template <class V>
    bool first_listed(Table<V> table, V& value) const {
        for (const auto& [name, v] : table) {
            if (has(name)) {
                value = v;
                return true;
            }
        }
        return false;
    }
    // Whether the table names the modifier.
    template <class V>
    static bool names(Table<V> table, std::string_view modifier) {
        for (const auto& row : table) {
            if (row.first == modifier)
                return true;
        }
        return false;
    }
    // Calls f(modifier) for each modifier, in the order written.
    template <class F>
    void each(F&& f) const {
        for (const std::string_view m : mods_)
            f(m);
    }

private:
    std::string_view base_;
    std::vector<Type> types_;
    std::vector<std::string_view> mods_;
};

// The modifiers of float arithmetic that change nothing in a functional simulation, or that
// Instruction carries (.ftz, .sat).
inline const std::initializer_list<std::string_view> kFloatModifiers = {
    "rn", "rz", "rm", "rp", "ftz", "sat", "approx", "full"};

// One instruction being decoded: what a decoder reads, and the parser's name resolution.
class Decoding {
public:
    Decoding(Parser& parser, Instruction& instruction, const std::string& opcode_text, Op table_op,
             int ptx_line, std::size_t operands_begin, std::size_t operands_end)
        : ins(instruction),
          opcode(opcode_text),
          op(table_op),
          line(ptx_line),
          parser_(parser),
          operands_begin_(operands_begin),
          operands_end_(operands_end) {}

    Instruction& ins;
    const std::string& opcode;
    const Op op;  // opcodes.def's operation for the opcode's spelling
    const int line;
    std::vector<Operand> ops;
    ModifierChain chain{""};

    // Reads the operands and the modifier chain (every decoder but call's).
    void read();
    std::string_view base() const { return chain.base(); }
    bool has(std::string_view modifier) const { return chain.has(modifier); }
    // Throws Unsupported unless every modifier is one of `allowed`.
    void only(std::initializer_list<std::string_view> allowed) const;
    Type one_type() const;
    Rounding rounding() const;
    void need(std::size_t count) const;
    std::int32_t dst(const Operand& operand) const;
    std::int32_t value(const Operand& operand, Type type) const;
    std::int32_t name(std::string_view register_name) const;
    std::int32_t sink() const;
    // An address operand: its register (or zero) in src[0], its offset in ins.offset.
    void address(const Operand& operand) const;
    // d = a OP b, d = OP a: the instruction's one type for every operand.
    void binary(Op op) const;
    void unary(Op op) const;
    bool names_local_symbol(std::string_view symbol_name) const;
    void branch_to(std::string_view label) const;
    // A call's function (empty for a call through a pointer), return values and arguments as
    // named: `call (retval0), f, (param0, param1)`.
    struct CallNames {
        std::string_view callee;
        std::vector<std::string_view> results, arguments;
    };
    CallNames call_names() const;

private:
    Parser& parser_;
    std::size_t operands_begin_, operands_end_;
};

using Decoder = void (*)(Decoding&);

#define PTX_OPCODE(spelling, decoder, op) void decoder(Decoding& d);
#include "sim/opcodes.def"

// The decoder of an opcode's base (ld of ld.global.u32) and the operation it decodes to, or
// nullptr: an opcode the simulator does not know may have operand syntax it does not know either
// (tex, suld), and is not parsed.
struct OpcodeRow {
    std::string_view spelling;
    Decoder decoder;
    Op op;
};
const OpcodeRow* opcode_row(std::string_view base);

}  // namespace grader::sim::detail
