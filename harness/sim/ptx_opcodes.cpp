// PTX's vocabulary as the simulator knows it: the type suffixes, the opcodes it decodes (the
// table of opcodes.def) and the modifier chains that follow them.

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/program.hpp"
#include "sim/ptx_decode.hpp"
#include "sim/ptx_parser.hpp"

namespace grader::sim::detail {

Type type_from(std::string_view s, bool& is_type) {
    static const std::unordered_map<std::string_view, Type> types = {
        {"pred", Type::pred}, {"b8", Type::b8},   {"b16", Type::b16}, {"b32", Type::b32},
        {"b64", Type::b64},   {"u8", Type::u8},   {"u16", Type::u16}, {"u32", Type::u32},
        {"u64", Type::u64},   {"s8", Type::s8},   {"s16", Type::s16}, {"s32", Type::s32},
        {"s64", Type::s64},   {"f32", Type::f32}, {"f64", Type::f64},
    };
    static const char* const unsupported[] = {"f16",    "f16x2",  "bf16",  "bf16x2",
                                              "b128",   "tf32",   "e4m3",  "e5m2",
                                              "e4m3x2", "e5m2x2", "u16x2", "s16x2"};
    is_type = false;
    const auto it = types.find(s);
    if (it != types.end()) {
        is_type = true;
        return it->second;
    }
    for (const char* u : unsupported) {
        if (s == u)
            throw Unsupported{"type ." + std::string(s)};
    }
    return Type::none;
}

const OpcodeRow* opcode_row(std::string_view base) {
    static const OpcodeRow rows[] = {
#define PTX_OPCODE(spelling, decoder, op) {#spelling, &decoder, Op::op},
#include "sim/opcodes.def"
    };
    for (const OpcodeRow& row : rows) {
        if (row.spelling == base)
            return &row;
    }
    return nullptr;
}

ModifierChain::ModifierChain(std::string_view opcode) {
    std::string_view rest = opcode;
    std::size_t dot = rest.find('.');
    base_ = rest.substr(0, dot);
    while (dot != std::string_view::npos) {
        rest = rest.substr(dot + 1);
        dot = rest.find('.');
        const std::string_view part = rest.substr(0, dot);
        bool is_type = false;
        const Type t = type_from(part, is_type);
        if (is_type) {
            types_.push_back(t);
        } else {
            mods_.push_back(part);
        }
    }
}

bool ModifierChain::has(std::string_view modifier) const {
    return std::find(mods_.begin(), mods_.end(), modifier) != mods_.end();
}

bool ModifierChain::only(std::initializer_list<std::string_view> allowed) const {
    for (const std::string_view m : mods_) {
        if (std::find(allowed.begin(), allowed.end(), m) == allowed.end())
            return false;
    }
    return true;
}

}  // namespace grader::sim::detail
