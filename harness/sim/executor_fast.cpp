// The decoded engine's full-warp cases of the families a kernel's loops spend their time in:
// integer add, sub, mul, mad, logic, shifts, conversions, comparisons and moves of 32 and 64 bits,
// f32 add, sub and mul rounded to nearest, and 32-bit shared loads. Each is the same computation
// as its family in opcodes.def for exactly the instructions full_warp_step picks, written as one
// loop over the 32 lanes of a warp whose every lane runs it, which the compiler vectorises; any
// other mask goes to the family itself. Float arithmetic calls the families' own lane function
// (float_binary: rounding, .sat and the GPU's NaN in one place); the integer cases are the
// two's-complement operation itself. tests/test_sim_engine.cpp runs every fixture on both
// engines, and a family whose semantics change changes its case here or drops it from
// full_warp_step.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "common/wide_vectors.hpp"
#include "sim/executor.hpp"
#include "sim/program.hpp"
#include "sim/rounding.hpp"

namespace grader::sim::detail {

namespace {

constexpr std::uint32_t kWholeWarp = ~0u;

std::uint64_t* slot_of(Warp& w, std::int32_t slot) {
    return &w.regs[static_cast<std::size_t>(slot) * 32];
}

// d = f(a, b) in every lane.
template <class F>
void each_lane(Warp& w, const Instruction& in, F f) {
    std::uint64_t* d = slot_of(w, in.dst[0]);
    const std::uint64_t* a = slot_of(w, in.src[0]);
    const std::uint64_t* b = slot_of(w, in.src[1]);
    for (unsigned l = 0; l < 32; ++l)
        d[l] = f(a[l], b[l]);
}

template <class U>
std::uint64_t low(std::uint64_t bits) {
    return static_cast<U>(bits);
}

// add and sub of integers without .sat: execute_add_sub's unsigned case.
template <class U, bool Add>
GRADER_WIDE_VECTORS void add_sub_int(Executor& self, Warp& w, const Instruction& in,
                                     std::uint32_t exec) {
    if (exec != kWholeWarp)
        return execute_add_sub(self, w, in, exec);
    each_lane(w, in, [](std::uint64_t a, std::uint64_t b) {
        return low<U>(Add ? static_cast<U>(a) + static_cast<U>(b)
                          : static_cast<U>(a) - static_cast<U>(b));
    });
}

float f32_of(std::uint64_t bits) {
    const auto b = static_cast<std::uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

std::uint64_t bits_of_f32(float r) {
    std::uint32_t bits;
    std::memcpy(&bits, &r, 4);
    return bits;
}

// add, sub and mul of f32 rounded to nearest without .sat or .ftz: float_binary, the families'
// own lane, with its mode and .sat constant.
template <FloatBinary Kind>
GRADER_WIDE_VECTORS void f32_arithmetic(Executor& self, Warp& w, const Instruction& in,
                                        std::uint32_t exec) {
    if (exec != kWholeWarp) {
        return Kind == FloatBinary::mul ? execute_mul_lo(self, w, in, exec)
                                        : execute_add_sub(self, w, in, exec);
    }
    each_lane(w, in, [](std::uint64_t a, std::uint64_t b) {
        return bits_of_f32(
            float_binary<Kind>(f32_of(a), f32_of(b), rounding::Direction::nearest, false));
    });
}

// mul.lo of 32 or 64 bits: execute_mul_lo's integer case.
template <class U>
GRADER_WIDE_VECTORS void mul_lo_int(Executor& self, Warp& w, const Instruction& in,
                                    std::uint32_t exec) {
    if (exec != kWholeWarp)
        return execute_mul_lo(self, w, in, exec);
    each_lane(w, in, [](std::uint64_t a, std::uint64_t b) {
        return low<U>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    });
}

// mul.wide of 32 bits: execute_mul_wide.
template <class T>
GRADER_WIDE_VECTORS void mul_wide_32(Executor& self, Warp& w, const Instruction& in,
                                     std::uint32_t exec) {
    if (exec != kWholeWarp)
        return execute_mul_wide(self, w, in, exec);
    using W = std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>;
    each_lane(w, in, [](std::uint64_t a, std::uint64_t b) {
        return static_cast<std::uint64_t>(static_cast<W>(static_cast<T>(a)) *
                                          static_cast<W>(static_cast<T>(b)));
    });
}

// mad.lo of 32 or 64 bits without .sat: execute_mad's unsigned case.
template <class U>
GRADER_WIDE_VECTORS void mad_lo_int(Executor& self, Warp& w, const Instruction& in,
                                    std::uint32_t exec) {
    if (exec != kWholeWarp)
        return execute_mad(self, w, in, exec);
    std::uint64_t* d = slot_of(w, in.dst[0]);
    const std::uint64_t* a = slot_of(w, in.src[0]);
    const std::uint64_t* b = slot_of(w, in.src[1]);
    const std::uint64_t* c = slot_of(w, in.src[2]);
    for (unsigned l = 0; l < 32; ++l) {
        d[l] = low<U>(
            static_cast<U>(static_cast<U>(a[l]) * static_cast<U>(b[l]) + static_cast<U>(c[l])));
    }
}

// and, or, xor of 32 or 64 bits or predicates: execute_bitwise.
template <Op Kind>
GRADER_WIDE_VECTORS void bitwise(Executor& self, Warp& w, const Instruction& in,
                                 std::uint32_t exec) {
    if (exec != kWholeWarp)
        return execute_bitwise(self, w, in, exec);
    const std::uint64_t keep = low_bits(in.type == Type::pred ? 1 : type_bits(in.type));
    each_lane(w, in, [keep](std::uint64_t a, std::uint64_t b) {
        return (Kind == Op::and_ ? a & b : (Kind == Op::or_ ? a | b : a ^ b)) & keep;
    });
}

// shl and shr of 32 or 64 bits: execute_shift.
template <class T, bool Left>
GRADER_WIDE_VECTORS void shift(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    if (exec != kWholeWarp)
        return execute_shift(self, w, in, exec);
    using U = std::make_unsigned_t<T>;
    constexpr unsigned width = 8 * sizeof(T);
    each_lane(w, in, [](std::uint64_t a, std::uint64_t b) {
        const auto amount = static_cast<std::uint32_t>(b);
        const auto x = static_cast<T>(static_cast<U>(a));
        T r;
        if (Left) {
            r = amount >= width ? T(0)
                                : static_cast<T>(static_cast<U>(static_cast<U>(x) << amount));
        } else if (std::is_signed_v<T>) {
            r = amount >= width ? (x < T(0) ? T(-1) : T(0)) : static_cast<T>(x >> amount);
        } else {
            r = amount >= width ? T(0) : static_cast<T>(static_cast<U>(x) >> amount);
        }
        return static_cast<std::uint64_t>(static_cast<U>(r));
    });
}

// cvt between integers of 32 and 64 bits without .sat: execute_cvt's extension and truncation.
template <class S, class D>
GRADER_WIDE_VECTORS void convert_int(Executor& self, Warp& w, const Instruction& in,
                                     std::uint32_t exec) {
    if (exec != kWholeWarp)
        return execute_cvt(self, w, in, exec);
    using UD = std::make_unsigned_t<D>;
    std::uint64_t* d = slot_of(w, in.dst[0]);
    const std::uint64_t* a = slot_of(w, in.src[0]);
    for (unsigned l = 0; l < 32; ++l) {
        const auto x = static_cast<S>(static_cast<std::make_unsigned_t<S>>(a[l]));
        const std::uint64_t wide = std::is_signed_v<S>
                                       ? static_cast<std::uint64_t>(static_cast<std::int64_t>(x))
                                       : static_cast<std::uint64_t>(x);
        d[l] = static_cast<UD>(wide);
    }
}

// setp of 32- or 64-bit integers without a combining predicate: execute_setp.
template <class T>
GRADER_WIDE_VECTORS void setp_int(Executor& self, Warp& w, const Instruction& in,
                                  std::uint32_t exec) {
    if (exec != kWholeWarp)
        return execute_setp(self, w, in, exec);
    using U = std::make_unsigned_t<T>;
    std::uint64_t* p = slot_of(w, in.dst[0]);
    const std::uint64_t* a = slot_of(w, in.src[0]);
    const std::uint64_t* b = slot_of(w, in.src[1]);
    const auto compare = [&](auto holds) {
        for (unsigned l = 0; l < 32; ++l) {
            const auto x = static_cast<T>(static_cast<U>(a[l]));
            const auto y = static_cast<T>(static_cast<U>(b[l]));
            p[l] = holds(x, y) ? 1 : 0;
        }
    };
    switch (in.compare) {
        case Compare::eq:
            compare([](T x, T y) { return x == y; });
            break;
        case Compare::ne:
            compare([](T x, T y) { return x != y; });
            break;
        case Compare::lt:
            compare([](T x, T y) { return x < y; });
            break;
        case Compare::le:
            compare([](T x, T y) { return x <= y; });
            break;
        case Compare::gt:
            compare([](T x, T y) { return x > y; });
            break;
        case Compare::ge:
            compare([](T x, T y) { return x >= y; });
            break;
        case Compare::lo:
            compare([](T x, T y) { return static_cast<U>(x) < static_cast<U>(y); });
            break;
        case Compare::ls:
            compare([](T x, T y) { return static_cast<U>(x) <= static_cast<U>(y); });
            break;
        case Compare::hi:
            compare([](T x, T y) { return static_cast<U>(x) > static_cast<U>(y); });
            break;
        case Compare::hs:
            compare([](T x, T y) { return static_cast<U>(x) >= static_cast<U>(y); });
            break;
        default:
            for (unsigned l = 0; l < 32; ++l)
                p[l] = 0;
            break;
    }
    if (in.dst2 >= 0) {
        std::uint64_t* q = slot_of(w, in.dst2);
        for (unsigned l = 0; l < 32; ++l)
            q[l] = p[l] ^ 1;
    }
}

// mov of a value (not a predicate): execute_mov.
GRADER_WIDE_VECTORS void move(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    if (exec != kWholeWarp)
        return execute_mov(self, w, in, exec);
    const std::uint64_t keep = low_bits(type_bits(in.type));
    std::uint64_t* d = slot_of(w, in.dst[0]);
    const std::uint64_t* a = slot_of(w, in.src[0]);
    for (unsigned l = 0; l < 32; ++l)
        d[l] = a[l] & keep;
}

// The integer types of 32 and 64 bits, as a family's unsigned or signed case reads them.
bool int32_type(Type t) {
    return t == Type::b32 || t == Type::u32 || t == Type::s32;
}
bool int64_type(Type t) {
    return t == Type::b64 || t == Type::u64 || t == Type::s64;
}
bool round_to_nearest(Rounding r) {
    return r == Rounding::none || r == Rounding::rn;
}

// cvt between integers of 32 and 64 bits, from `from` to `to`, or none.
StepHandler convert_step(Type from, Type to) {
    const auto pick = [&](auto source) -> StepHandler {
        using S = decltype(source);
        if (to == Type::u32 || to == Type::b32)
            return &convert_int<S, std::uint32_t>;
        if (to == Type::s32)
            return &convert_int<S, std::int32_t>;
        if (to == Type::u64 || to == Type::b64)
            return &convert_int<S, std::uint64_t>;
        if (to == Type::s64)
            return &convert_int<S, std::int64_t>;
        return nullptr;
    };
    if (from == Type::u32 || from == Type::b32)
        return pick(std::uint32_t{});
    if (from == Type::s32)
        return pick(std::int32_t{});
    if (from == Type::u64 || from == Type::b64)
        return pick(std::uint64_t{});
    if (from == Type::s64)
        return pick(std::int64_t{});
    return nullptr;
}

}  // namespace

// A 32-bit shared load (memory_access's first case, load_shared_words): in a block not checked
// whose every lane loads, where no clock is read, the words alone.
GRADER_WIDE_VECTORS void Executor::shared_load_step(Executor& self, Warp& w, const Instruction& in,
                                                    std::uint32_t exec) {
    const std::uint64_t* base = self.reg(w, in.src[0]);
    if (exec == kWholeWarp && !self.checked_ && !self.clock_observed_ && self.shared_bytes_ >= 4) {
        const std::uint64_t last_word_at = self.shared_bytes_ - 4;
        const auto offset = static_cast<std::uint64_t>(in.offset);
        std::uint64_t outside = 0;
        std::uint64_t misaligned = 0;
        for (unsigned lane = 0; lane < 32; ++lane) {
            const std::uint64_t address = base[lane] + offset;
            outside |= (last_word_at - address) | address;
            misaligned |= address;
        }
        if ((outside >> 63) == 0 && (misaligned & 3) == 0) {
            std::uint64_t* value = self.reg(w, in.dst[0]);
            const std::byte* shared = self.shared_.data();
            // Each address read before its lane's value is written (the destination may be the
            // address's register): write_lanes reads a pair's addresses before it writes it.
            write_lanes(value, [&](unsigned lane) -> std::uint64_t {
                std::uint32_t v;
                std::memcpy(&v, shared + base[lane] + offset, 4);
                return v;
            });
            return;
        }
    }
    if (!self.load_shared_words(w, in, exec, base))
        self.memory_access(w, in, exec);
}

StepHandler Executor::full_warp_step(const Instruction& in) {
    if (in.ftz || in.saturate)
        return nullptr;
    const Type t = in.type;
    switch (in.op) {
        case Op::add:
        case Op::sub: {
            const bool add = in.op == Op::add;
            if (int32_type(t))
                return add ? &add_sub_int<std::uint32_t, true> : &add_sub_int<std::uint32_t, false>;
            if (int64_type(t))
                return add ? &add_sub_int<std::uint64_t, true> : &add_sub_int<std::uint64_t, false>;
            if (t == Type::f32 && round_to_nearest(in.rounding))
                return add ? &f32_arithmetic<FloatBinary::add> : &f32_arithmetic<FloatBinary::sub>;
            return nullptr;
        }
        case Op::mul_lo:
            if (int32_type(t))
                return &mul_lo_int<std::uint32_t>;
            if (int64_type(t))
                return &mul_lo_int<std::uint64_t>;
            if (t == Type::f32 && round_to_nearest(in.rounding))
                return &f32_arithmetic<FloatBinary::mul>;
            return nullptr;
        case Op::mul_wide:
            if (t == Type::u32 || t == Type::b32)
                return &mul_wide_32<std::uint32_t>;
            if (t == Type::s32)
                return &mul_wide_32<std::int32_t>;
            return nullptr;
        case Op::mad_lo:
            if (int32_type(t))
                return &mad_lo_int<std::uint32_t>;
            if (int64_type(t))
                return &mad_lo_int<std::uint64_t>;
            return nullptr;
        case Op::and_:
            return int32_type(t) || int64_type(t) || t == Type::pred ? &bitwise<Op::and_> : nullptr;
        case Op::or_:
            return int32_type(t) || int64_type(t) || t == Type::pred ? &bitwise<Op::or_> : nullptr;
        case Op::xor_:
            return int32_type(t) || int64_type(t) || t == Type::pred ? &bitwise<Op::xor_> : nullptr;
        case Op::shl:
        case Op::shr: {
            const bool left = in.op == Op::shl;
            if (t == Type::b32 || t == Type::u32)
                return left ? &shift<std::uint32_t, true> : &shift<std::uint32_t, false>;
            if (t == Type::s32)
                return left ? &shift<std::int32_t, true> : &shift<std::int32_t, false>;
            if (t == Type::b64 || t == Type::u64)
                return left ? &shift<std::uint64_t, true> : &shift<std::uint64_t, false>;
            if (t == Type::s64)
                return left ? &shift<std::int64_t, true> : &shift<std::int64_t, false>;
            return nullptr;
        }
        case Op::cvt:
            return convert_step(in.source_type, t);
        case Op::setp:
            if (in.src[2] >= 0)
                return nullptr;
            if (t == Type::b32 || t == Type::u32)
                return &setp_int<std::uint32_t>;
            if (t == Type::s32)
                return &setp_int<std::int32_t>;
            if (t == Type::b64 || t == Type::u64)
                return &setp_int<std::uint64_t>;
            if (t == Type::s64)
                return &setp_int<std::int64_t>;
            return nullptr;
        case Op::mov:
            return t != Type::pred && type_bits(t) >= 8 ? &move : nullptr;
        case Op::ld:
            if (in.space == Space::shared && in.vector == 1 && in.bytes == 4 && !is_signed(t))
                return &Executor::shared_load_step;
            return nullptr;
        default:
            return nullptr;
    }
}

}  // namespace grader::sim::detail
