// PTX's vocabulary as the simulator knows it: the opcodes it decodes and the type suffixes.

#include <string>
#include <string_view>
#include <unordered_map>

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

bool known_opcode(std::string_view opcode) {
    static const char* const bases[] = {
        "mov",       "add",     "sub",     "mul",        "mad",    "fma",   "div",       "rem",
        "min",       "max",     "neg",     "abs",        "and",    "or",    "xor",       "not",
        "cnot",      "popc",    "clz",     "brev",       "shl",    "shr",   "bfe",       "bfi",
        "prmt",      "setp",    "selp",    "cvt",        "cvta",   "rcp",   "sqrt",      "rsqrt",
        "ex2",       "lg2",     "sin",     "cos",        "ld",     "ldu",   "st",        "atom",
        "red",       "shfl",    "vote",    "activemask", "bra",    "brx",   "ret",       "exit",
        "trap",      "brkpt",   "bar",     "barrier",    "membar", "fence", "nanosleep", "prefetch",
        "prefetchu", "discard", "pmevent", "call",       "bfind",  "shf",   "sad",       "copysign",
        "redux"};
    const std::string_view base = opcode.substr(0, opcode.find('.'));
    for (const char* b : bases) {
        if (base == b)
            return true;
    }
    return false;
}

}  // namespace grader::sim::detail
