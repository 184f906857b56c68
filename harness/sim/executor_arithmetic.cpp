// The executor's arithmetic: integer and float operations on registers alone, one function per
// family of opcodes.def, and the dispatch that table generates. See executor.hpp.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "sim/executor.hpp"
#include "sim/program.hpp"
#include "sim/rounding.hpp"

namespace grader::sim::detail {

namespace {

template <class T>
struct Wider;
template <>
struct Wider<std::uint8_t> {
    using type = std::uint16_t;
};
template <>
struct Wider<std::int8_t> {
    using type = std::int16_t;
};
template <>
struct Wider<std::uint16_t> {
    using type = std::uint32_t;
};
template <>
struct Wider<std::int16_t> {
    using type = std::int32_t;
};
template <>
struct Wider<std::uint32_t> {
    using type = std::uint64_t;
};
template <>
struct Wider<std::int32_t> {
    using type = std::int64_t;
};
__extension__ typedef unsigned __int128 UInt128;  // GCC and Clang: mul.hi of 64 bits
__extension__ typedef __int128 Int128;
template <>
struct Wider<std::uint64_t> {
    using type = UInt128;
};
template <>
struct Wider<std::int64_t> {
    using type = Int128;
};

template <class T>
T mul_high(T a, T b) {
    using W = typename Wider<T>::type;
    return static_cast<T>((static_cast<W>(a) * static_cast<W>(b)) >> (8 * sizeof(T)));
}

// A subnormal f32 (in a register's low 32 bits) as the zero of its sign; anything else unchanged.
std::uint64_t flush_subnormal(std::uint64_t bits) {
    const auto b = static_cast<std::uint32_t>(bits);
    if ((b & 0x7f800000u) == 0 && (b & 0x007fffffu) != 0)
        return b & 0x80000000u;
    return bits;
}

// An .approx f32 result: the hardware's units are accurate to an ulp or two, not correctly
// rounded. On an H200, rsqrt.approx.f32 gave the correctly rounded result for 97 of 128 inputs,
// one ulp below it for 25 and one above for 6 (tests/fixtures/kernels/differential_ops_h200):
// the simulator moves the correctly rounded result by an ulp at about those rates, for inputs
// chosen by their bits (the same input, the same result), so that no kernel finds it exact. The
// hardware's own choice is measured by scripts/gpu-check.sh's behaviours section.
float approximate(float rounded, float input, Op op) {
    if (!std::isfinite(rounded) || rounded == 0.0f)
        return rounded;
    std::uint32_t bits;
    std::memcpy(&bits, &input, 4);
    std::uint32_t h = bits * 0x9e3779b1u ^ static_cast<std::uint32_t>(op) * 0x85ebca6bu;
    h ^= h >> 15;
    h *= 0x2c1b3c6du;
    h ^= h >> 12;
    const std::uint32_t pick = h % 128;
    if (pick < 25)
        return std::nextafter(rounded, 0.0f);
    if (pick < 31)
        return std::nextafter(rounded, rounded > 0 ? INFINITY : -INFINITY);
    return rounded;
}

// The angle sin.approx/cos.approx.f32 take the sine or cosine of. Their unit works in turns:
// the compiled code first multiplies x by 1/(2 pi) in f32, rounding toward zero (FMUL.RZ before
// MUFU.SIN in sm_90's code), so far from zero the angle is off by up to an f32 ulp of x/(2 pi)
// turns: __sinf(1e5) is about 0.006 from sinf(1e5) (sim_fidelity/sinf_large_argument_sniffing).
// Within [-pi, pi] the measured accuracy holds (approximate), and the host's result is kept.
constexpr double kTwoPi = 6.283185307179586476925286766559;

// An .approx f32 sine or cosine of x outside [-pi, pi], which the unit takes in turns.
template <class T>
bool far_turns(T x, bool approx) {
    return std::is_same_v<T, float> && approx && std::isfinite(x) &&
           std::fabs(x) > static_cast<T>(kTwoPi / 2);
}

// x as the unit's angle: x / (2 pi) in f32 rounded toward zero, back in radians.
template <class T>
double angle_in_turns(T x) {
    const float turns =
        rounding::mul(static_cast<float>(x), 0.15915494f, rounding::Direction::toward_zero);
    return static_cast<double>(turns) * kTwoPi;
}

// div.approx.f32 (__fdividef): x times the hardware's reciprocal of y, which is 0 for
// 2^126 < |y| < 2^128 (its result would be subnormal, and the unit flushes it), so the quotient
// is 0 there, or NaN for an infinite x (the CUDA guide's and libdevice's stated range).
float approximate_quotient(float x, float y) {
    const float magnitude = std::fabs(y);
    if (!std::isnan(x) && magnitude > 0x1p126f && magnitude < INFINITY)
        return std::isinf(x) ? NAN : std::copysign(0.0f, x) * std::copysign(1.0f, y);
    return approximate(x / y, y, Op::div);
}

}  // namespace

void Executor::execute(Warp& w, const Instruction& in, std::uint32_t exec) {
    switch (in.op) {
#define SIM_OP(op, executor)          \
    case Op::op:                      \
        executor(*this, w, in, exec); \
        return;
#include "sim/opcodes.def"
    }
}

// .ftz on an f32 operation, as the GPU honours it: subnormal f32 sources read as signed zero and
// a subnormal f32 result is written as signed zero. The source registers keep their values (the
// flush happens in the operation, not in the register file).
void Executor::execute_ftz(Warp& w, const Instruction& in, std::uint32_t exec) {
    const bool f32_sources = in.op == Op::cvt ? in.source_type == Type::f32 : in.type == Type::f32;
    const bool f32_result = in.op != Op::setp && in.type == Type::f32;
    // setp's third source is a predicate; cvt has one source.
    const int sources = in.op == Op::cvt ? 1 : (in.op == Op::setp ? 2 : 4);
    std::array<std::array<std::uint64_t, 32>, 4> saved{};
    std::array<std::int32_t, 4> flushed = {kNoSlot, kNoSlot, kNoSlot, kNoSlot};
    if (f32_sources) {
        for (int k = 0; k < sources; ++k) {
            const std::int32_t slot = in.src[k];
            if (slot < 0 || std::find(flushed.begin(), flushed.end(), slot) != flushed.end())
                continue;
            flushed[static_cast<std::size_t>(k)] = slot;
            std::uint64_t* v = reg(w, slot);
            std::copy(v, v + 32, saved[static_cast<std::size_t>(k)].begin());
            for_lanes(exec, [&](unsigned l) { v[l] = flush_subnormal(v[l]); });
        }
    }
    execute(w, in, exec);
    for (int k = 0; k < 4; ++k) {
        const std::int32_t slot = flushed[static_cast<std::size_t>(k)];
        if (slot < 0 || slot == in.dst[0])
            continue;
        std::uint64_t* v = reg(w, slot);
        std::copy(saved[static_cast<std::size_t>(k)].begin(),
                  saved[static_cast<std::size_t>(k)].end(), v);
    }
    if (f32_result && in.dst[0] >= 0) {
        std::uint64_t* d = reg(w, in.dst[0]);
        for_lanes(exec, [&](unsigned l) { d[l] = flush_subnormal(d[l]); });
    }
}

void execute_add_sub(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<2>(w, in);
    dispatch_any(in.type, [&](auto zero) {
        using T = decltype(zero);
        const bool add = in.op == Op::add;
        if constexpr (std::is_floating_point_v<T>) {
            const auto mode = rounding::direction_of(in.rounding);
            for_lanes(exec, [&](unsigned l) {
                const T x = as<T>(o.a[l]), y = as<T>(o.b[l]);
                o.d[l] = bits_of<T>(add ? float_binary<FloatBinary::add>(x, y, mode, in.saturate)
                                        : float_binary<FloatBinary::sub>(x, y, mode, in.saturate));
            });
        } else if (in.saturate && std::is_same_v<T, std::int32_t>) {
            for_lanes(exec, [&](unsigned l) {
                const std::int64_t x = as<std::int32_t>(o.a[l]), y = as<std::int32_t>(o.b[l]);
                std::int64_t r = add ? x + y : x - y;
                r = std::min<std::int64_t>(INT32_MAX, std::max<std::int64_t>(INT32_MIN, r));
                o.d[l] = bits_of<std::int32_t>(static_cast<std::int32_t>(r));
            });
        } else {
            using U = Unsigned<T>;
            for_lanes(exec, [&](unsigned l) {
                const U x = as<U>(o.a[l]), y = as<U>(o.b[l]);
                o.d[l] = bits_of<U>(static_cast<U>(add ? x + y : x - y));
            });
        }
    });
}

void execute_mul_lo(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<2>(w, in);
    dispatch_any(in.type, [&](auto zero) {
        using T = decltype(zero);
        if constexpr (std::is_floating_point_v<T>) {
            const auto mode = rounding::direction_of(in.rounding);
            for_lanes(exec, [&](unsigned l) {
                const T x = as<T>(o.a[l]), y = as<T>(o.b[l]);
                o.d[l] = bits_of<T>(float_binary<FloatBinary::mul>(x, y, mode, in.saturate));
            });
        } else {
            using U = Unsigned<T>;
            using W = std::conditional_t<(sizeof(U) < 4), std::uint32_t, U>;
            for_lanes(exec, [&](unsigned l) {
                o.d[l] = bits_of<U>(
                    static_cast<U>(static_cast<W>(as<U>(o.a[l])) * static_cast<W>(as<U>(o.b[l]))));
            });
        }
    });
}

void execute_mul_hi(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<2>(w, in);
    dispatch_int(in.type, [&](auto zero) {
        using T = decltype(zero);
        for_lanes(exec, [&](unsigned l) {
            o.d[l] = bits_of<T>(mul_high<T>(as<T>(o.a[l]), as<T>(o.b[l])));
        });
    });
}

void execute_mul_wide(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<2>(w, in);
    dispatch_int(in.type, [&](auto zero) {
        using T = decltype(zero);
        if constexpr (sizeof(T) <= 4) {  // PTX has no mul.wide of 64-bit operands
            using W = typename Wider<T>::type;
            for_lanes(exec, [&](unsigned l) {
                o.d[l] = bits_of<W>(
                    static_cast<W>(static_cast<W>(as<T>(o.a[l])) * static_cast<W>(as<T>(o.b[l]))));
            });
        }
    });
}

void execute_mad(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<3>(w, in);
    dispatch_int(in.type, [&](auto zero) {
        using T = decltype(zero);
        using U = Unsigned<T>;
        using W = std::conditional_t<(sizeof(U) < 4), std::uint32_t, U>;
        const bool high = in.op == Op::mad_hi;
        for_lanes(exec, [&](unsigned l) {
            const U product =
                high
                    ? static_cast<U>(mul_high<T>(as<T>(o.a[l]), as<T>(o.b[l])))
                    : static_cast<U>(static_cast<W>(as<U>(o.a[l])) * static_cast<W>(as<U>(o.b[l])));
            if (in.saturate && std::is_same_v<T, std::int32_t>) {
                const std::int64_t r = static_cast<std::int64_t>(static_cast<T>(product)) +
                                       static_cast<std::int64_t>(as<T>(o.c[l]));
                o.d[l] = bits_of<std::int32_t>(static_cast<std::int32_t>(
                    std::min<std::int64_t>(INT32_MAX, std::max<std::int64_t>(INT32_MIN, r))));
            } else {
                o.d[l] = bits_of<U>(
                    static_cast<U>(static_cast<W>(product) + static_cast<W>(as<U>(o.c[l]))));
            }
        });
    });
}

void execute_mad_wide(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<3>(w, in);
    dispatch_int(in.type, [&](auto zero) {
        using T = decltype(zero);
        if constexpr (sizeof(T) == 2 || sizeof(T) == 4) {
            using W = typename Wider<T>::type;
            using UW = Unsigned<W>;
            for_lanes(exec, [&](unsigned l) {
                const UW product =
                    static_cast<UW>(static_cast<W>(as<T>(o.a[l])) * static_cast<W>(as<T>(o.b[l])));
                o.d[l] = bits_of<UW>(static_cast<UW>(product + as<UW>(o.c[l])));
            });
        }
    });
}

void execute_fma(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<3>(w, in);
    const auto mode = rounding::direction_of(in.rounding);
    if (in.type == Type::f32) {
        for_lanes(exec, [&](unsigned l) {
            float r = rounding::fma(as<float>(o.a[l]), as<float>(o.b[l]), as<float>(o.c[l]), mode);
            if (in.saturate)
                r = saturate_unit(r);
            o.d[l] = bits_of<float>(gpu_nan(r));
        });
    } else {
        for_lanes(exec, [&](unsigned l) {
            const double x = as<double>(o.a[l]), y = as<double>(o.b[l]), z = as<double>(o.c[l]);
            o.d[l] = bits_of<double>(gpu_nan(rounding::fma(x, y, z, mode), x, y, z));
        });
    }
}

void execute_div_rem(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<2>(w, in);
    dispatch_any(in.type, [&](auto zero) {
        using T = decltype(zero);
        const bool quotient = in.op == Op::div;
        if constexpr (std::is_floating_point_v<T>) {
            const auto mode = rounding::direction_of(in.rounding);
            for_lanes(exec, [&](unsigned l) {
                const T x = as<T>(o.a[l]), y = as<T>(o.b[l]);
                T r = quotient ? rounding::div(x, y, mode) : std::fmod(x, y);
                if (quotient && in.approx && std::is_same_v<T, float>)
                    r = approximate_quotient(x, y);
                o.d[l] = bits_of<T>(gpu_nan(r, x, y));
            });
        } else {
            for_lanes(exec, [&](unsigned l) {
                const T x = as<T>(o.a[l]), y = as<T>(o.b[l]);
                T r;
                if (y == 0) {
                    r = quotient ? static_cast<T>(~Unsigned<T>(0)) : x;  // as the GPU: no trap
                } else if (std::is_signed_v<T> && y == T(-1)) {
                    r = quotient ? static_cast<T>(Unsigned<T>(0) - static_cast<Unsigned<T>>(x))
                                 : T(0);
                } else {
                    r = quotient ? static_cast<T>(x / y) : static_cast<T>(x % y);
                }
                o.d[l] = bits_of<T>(r);
            });
        }
    });
}

void execute_min_max(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<2>(w, in);
    dispatch_any(in.type, [&](auto zero) {
        using T = decltype(zero);
        const bool lowest = in.op == Op::min;
        for_lanes(exec, [&](unsigned l) {
            const T x = as<T>(o.a[l]), y = as<T>(o.b[l]);
            if constexpr (std::is_floating_point_v<T>) {
                // A NaN comes out only where both are NaN: the first, as min(NaN, NaN) kept
                // 0x7fc00123 on the H200 (behaviours section 8), in either width.
                const T r = lowest ? std::fmin(x, y) : std::fmax(x, y);
                o.d[l] = bits_of<T>(std::isnan(r) ? quieted(x) : r);
            } else {
                o.d[l] = bits_of<T>(lowest ? std::min(x, y) : std::max(x, y));
            }
        });
    });
}

void execute_neg_abs(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<1>(w, in);
    dispatch_any(in.type, [&](auto zero) {
        using T = decltype(zero);
        const bool negate = in.op == Op::neg;
        for_lanes(exec, [&](unsigned l) {
            const T x = as<T>(o.a[l]);
            if constexpr (std::is_floating_point_v<T>) {
                // An f32 NaN comes out canonical (0x7fffffff on the H100 and H200, behaviours
                // section 8); an f64 one keeps its bits.
                const T r = negate ? -x : std::fabs(x);
                if constexpr (std::is_same_v<T, float>) {
                    o.d[l] = bits_of<T>(gpu_nan(r));
                } else {
                    o.d[l] = bits_of<T>(r);
                }
            } else {
                using U = Unsigned<T>;
                const U minus = static_cast<U>(U(0) - static_cast<U>(x));
                o.d[l] = bits_of<U>(negate || x < T(0) ? minus : static_cast<U>(x));
            }
        });
    });
}

void execute_sad(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<3>(w, in);
    dispatch_int(in.type, [&](auto zero) {
        using T = decltype(zero);
        using U = Unsigned<T>;
        for_lanes(exec, [&](unsigned l) {
            const T x = as<T>(o.a[l]), y = as<T>(o.b[l]);
            const U diff = x > y ? static_cast<U>(static_cast<U>(x) - static_cast<U>(y))
                                 : static_cast<U>(static_cast<U>(y) - static_cast<U>(x));
            o.d[l] = bits_of<U>(static_cast<U>(diff + as<U>(o.c[l])));
        });
    });
}

void execute_copysign(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<2>(w, in);
    // PTX: the sign of a, the magnitude of b.
    if (in.type == Type::f32) {
        for_lanes(exec, [&](unsigned l) {
            o.d[l] = bits_of<float>(std::copysign(as<float>(o.b[l]), as<float>(o.a[l])));
        });
    } else {
        for_lanes(exec, [&](unsigned l) {
            o.d[l] = bits_of<double>(std::copysign(as<double>(o.b[l]), as<double>(o.a[l])));
        });
    }
}

void execute_float_unary(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<1>(w, in);
    dispatch_any(in.type, [&](auto zero) {
        using T = decltype(zero);
        if constexpr (std::is_floating_point_v<T>) {
            const auto mode = rounding::direction_of(in.rounding);
            for_lanes(exec, [&](unsigned l) {
                const T x = as<T>(o.a[l]);
                T r = x;
                switch (in.op) {
                    case Op::rcp:
                        r = rounding::div(T(1), x, mode);
                        break;
                    case Op::sqrt:
                        r = rounding::sqrt(x, mode);
                        break;
                    case Op::rsqrt:
                        r = T(1) / std::sqrt(x);
                        break;
                    case Op::ex2:
                        r = std::exp2(x);
                        break;
                    case Op::lg2:
                        r = std::log2(x);
                        break;
                    case Op::sin:
                        r = far_turns(x, in.approx) ? static_cast<T>(std::sin(angle_in_turns(x)))
                                                    : std::sin(x);
                        break;
                    default:
                        r = far_turns(x, in.approx) ? static_cast<T>(std::cos(angle_in_turns(x)))
                                                    : std::cos(x);
                        break;
                }
                if constexpr (std::is_same_v<T, float>) {
                    if (in.approx)
                        r = approximate(r, x, in.op);
                }
                o.d[l] = bits_of<T>(gpu_nan(r, x));
            });
        }
    });
}

}  // namespace grader::sim::detail
