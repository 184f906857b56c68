// The executor's arithmetic: what an instruction does with registers alone. See executor.hpp.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "sim/executor.hpp"

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

template <class F>
F round_float(F x, Rounding r) {
    switch (r) {
        case Rounding::rni:
            return std::nearbyint(x);
        case Rounding::rzi:
            return std::trunc(x);
        case Rounding::rmi:
            return std::floor(x);
        case Rounding::rpi:
            return std::ceil(x);
        default:
            return x;
    }
}

}  // namespace

namespace {

// A subnormal f32 (in a register's low 32 bits) as the zero of its sign; anything else unchanged.
std::uint64_t flush_subnormal(std::uint64_t bits) {
    const auto b = static_cast<std::uint32_t>(bits);
    if ((b & 0x7f800000u) == 0 && (b & 0x007fffffu) != 0)
        return b & 0x80000000u;
    return bits;
}

}  // namespace

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

void Executor::execute(Warp& w, const Instruction& in, std::uint32_t exec) {
    std::uint64_t* d = in.dst[0] >= 0 ? reg(w, in.dst[0]) : nullptr;
    const std::uint64_t* a = in.src[0] >= 0 ? reg(w, in.src[0]) : nullptr;
    const std::uint64_t* b = in.src[1] >= 0 ? reg(w, in.src[1]) : nullptr;
    const std::uint64_t* c = in.src[2] >= 0 ? reg(w, in.src[2]) : nullptr;
    switch (in.op) {
        case Op::nop:
            return;
        case Op::printf_call:
            counts_.printf_calls += popcount(exec);
            return;
        case Op::nanosleep: {
            // The warp sleeps as long as its longest-sleeping lane asks (nanoseconds).
            std::uint64_t longest = 0;
            for_lanes(exec, [&](unsigned l) {
                longest = std::max<std::uint64_t>(longest, static_cast<std::uint32_t>(a[l]));
            });
            w.cycles +=
                static_cast<std::uint64_t>(static_cast<double>(longest) * ModeledClock::kGigahertz);
            return;
        }
        case Op::mov:
            if (in.type == Type::pred) {
                for_lanes(exec, [&](unsigned l) { d[l] = a[l] != 0; });
            } else {
                const unsigned bits = type_bits(in.type);
                const std::uint64_t keep = bits == 64 ? ~0ull : ((1ull << bits) - 1);
                for_lanes(exec, [&](unsigned l) { d[l] = a[l] & keep; });
            }
            return;
        case Op::mov_pack: {
            const unsigned part = type_bits(in.type) / in.vector;
            const std::uint64_t keep = part == 64 ? ~0ull : ((1ull << part) - 1);
            for_lanes(exec, [&](unsigned l) {
                std::uint64_t v = 0;
                for (unsigned e = 0; e < in.vector; ++e)
                    v |= (reg(w, in.src[e])[l] & keep) << (e * part);
                d[l] = v;
            });
            return;
        }
        case Op::mov_unpack: {
            const unsigned part = type_bits(in.type) / in.vector;
            const std::uint64_t keep = part == 64 ? ~0ull : ((1ull << part) - 1);
            for_lanes(exec, [&](unsigned l) {
                const std::uint64_t v = a[l];
                for (unsigned e = 0; e < in.vector; ++e)
                    reg(w, in.dst[e])[l] = (v >> (e * part)) & keep;
            });
            return;
        }
        case Op::add:
        case Op::sub:
            dispatch_any(in.type, [&](auto zero) {
                using T = decltype(zero);
                const bool add = in.op == Op::add;
                if constexpr (std::is_floating_point_v<T>) {
                    for_lanes(exec, [&](unsigned l) {
                        T r = add ? as<T>(a[l]) + as<T>(b[l]) : as<T>(a[l]) - as<T>(b[l]);
                        if (in.saturate)
                            r = std::isnan(r) ? T(0) : std::min(T(1), std::max(T(0), r));
                        d[l] = bits_of<T>(r);
                    });
                } else if (in.saturate && std::is_same_v<T, std::int32_t>) {
                    for_lanes(exec, [&](unsigned l) {
                        const std::int64_t x = as<std::int32_t>(a[l]), y = as<std::int32_t>(b[l]);
                        std::int64_t r = add ? x + y : x - y;
                        r = std::min<std::int64_t>(INT32_MAX, std::max<std::int64_t>(INT32_MIN, r));
                        d[l] = bits_of<std::int32_t>(static_cast<std::int32_t>(r));
                    });
                } else {
                    using U = Unsigned<T>;
                    for_lanes(exec, [&](unsigned l) {
                        const U x = as<U>(a[l]), y = as<U>(b[l]);
                        d[l] = bits_of<U>(static_cast<U>(add ? x + y : x - y));
                    });
                }
            });
            return;
        case Op::mul_lo:
            dispatch_any(in.type, [&](auto zero) {
                using T = decltype(zero);
                if constexpr (std::is_floating_point_v<T>) {
                    for_lanes(exec, [&](unsigned l) {
                        T r = as<T>(a[l]) * as<T>(b[l]);
                        if (in.saturate)
                            r = std::isnan(r) ? T(0) : std::min(T(1), std::max(T(0), r));
                        d[l] = bits_of<T>(r);
                    });
                } else {
                    using U = Unsigned<T>;
                    using W = std::conditional_t<(sizeof(U) < 4), std::uint32_t, U>;
                    for_lanes(exec, [&](unsigned l) {
                        d[l] = bits_of<U>(static_cast<U>(static_cast<W>(as<U>(a[l])) *
                                                         static_cast<W>(as<U>(b[l]))));
                    });
                }
            });
            return;
        case Op::mul_hi:
            dispatch_int(in.type, [&](auto zero) {
                using T = decltype(zero);
                for_lanes(exec, [&](unsigned l) {
                    d[l] = bits_of<T>(mul_high<T>(as<T>(a[l]), as<T>(b[l])));
                });
            });
            return;
        case Op::mul_wide:
            dispatch_int(in.type, [&](auto zero) {
                using T = decltype(zero);
                if constexpr (sizeof(T) <= 2) {
                    using W = typename Wider<T>::type;
                    for_lanes(exec, [&](unsigned l) {
                        d[l] = bits_of<W>(static_cast<W>(static_cast<W>(as<T>(a[l])) *
                                                         static_cast<W>(as<T>(b[l]))));
                    });
                } else if constexpr (sizeof(T) == 4) {
                    using W = typename Wider<T>::type;
                    for_lanes(exec, [&](unsigned l) {
                        d[l] = bits_of<W>(static_cast<W>(static_cast<W>(as<T>(a[l])) *
                                                         static_cast<W>(as<T>(b[l]))));
                    });
                }
            });
            return;
        case Op::mad_lo:
        case Op::mad_hi:
            dispatch_int(in.type, [&](auto zero) {
                using T = decltype(zero);
                using U = Unsigned<T>;
                using W = std::conditional_t<(sizeof(U) < 4), std::uint32_t, U>;
                const bool high = in.op == Op::mad_hi;
                for_lanes(exec, [&](unsigned l) {
                    const U product = high ? static_cast<U>(mul_high<T>(as<T>(a[l]), as<T>(b[l])))
                                           : static_cast<U>(static_cast<W>(as<U>(a[l])) *
                                                            static_cast<W>(as<U>(b[l])));
                    if (in.saturate && std::is_same_v<T, std::int32_t>) {
                        const std::int64_t r = static_cast<std::int64_t>(static_cast<T>(product)) +
                                               static_cast<std::int64_t>(as<T>(c[l]));
                        d[l] =
                            bits_of<std::int32_t>(static_cast<std::int32_t>(std::min<std::int64_t>(
                                INT32_MAX, std::max<std::int64_t>(INT32_MIN, r))));
                    } else {
                        d[l] = bits_of<U>(
                            static_cast<U>(static_cast<W>(product) + static_cast<W>(as<U>(c[l]))));
                    }
                });
            });
            return;
        case Op::mad_wide:
            dispatch_int(in.type, [&](auto zero) {
                using T = decltype(zero);
                if constexpr (sizeof(T) == 2 || sizeof(T) == 4) {
                    using W = typename Wider<T>::type;
                    using UW = Unsigned<W>;
                    for_lanes(exec, [&](unsigned l) {
                        const UW product = static_cast<UW>(static_cast<W>(as<T>(a[l])) *
                                                           static_cast<W>(as<T>(b[l])));
                        d[l] = bits_of<UW>(static_cast<UW>(product + as<UW>(c[l])));
                    });
                }
            });
            return;
        case Op::fma:
            if (in.type == Type::f32) {
                for_lanes(exec, [&](unsigned l) {
                    float r = std::fma(as<float>(a[l]), as<float>(b[l]), as<float>(c[l]));
                    if (in.saturate)
                        r = std::isnan(r) ? 0.0f : std::min(1.0f, std::max(0.0f, r));
                    d[l] = bits_of<float>(r);
                });
            } else {
                for_lanes(exec, [&](unsigned l) {
                    d[l] = bits_of<double>(
                        std::fma(as<double>(a[l]), as<double>(b[l]), as<double>(c[l])));
                });
            }
            return;
        case Op::div:
        case Op::rem:
            dispatch_any(in.type, [&](auto zero) {
                using T = decltype(zero);
                const bool quotient = in.op == Op::div;
                if constexpr (std::is_floating_point_v<T>) {
                    for_lanes(exec, [&](unsigned l) {
                        const T x = as<T>(a[l]), y = as<T>(b[l]);
                        d[l] = bits_of<T>(quotient ? x / y : std::fmod(x, y));
                    });
                } else {
                    for_lanes(exec, [&](unsigned l) {
                        const T x = as<T>(a[l]), y = as<T>(b[l]);
                        T r;
                        if (y == 0) {
                            r = quotient ? static_cast<T>(~Unsigned<T>(0))
                                         : x;  // as the GPU: no trap
                        } else if (std::is_signed_v<T> && y == T(-1)) {
                            r = quotient
                                    ? static_cast<T>(Unsigned<T>(0) - static_cast<Unsigned<T>>(x))
                                    : T(0);
                        } else {
                            r = quotient ? static_cast<T>(x / y) : static_cast<T>(x % y);
                        }
                        d[l] = bits_of<T>(r);
                    });
                }
            });
            return;
        case Op::min:
        case Op::max:
            dispatch_any(in.type, [&](auto zero) {
                using T = decltype(zero);
                const bool lowest = in.op == Op::min;
                for_lanes(exec, [&](unsigned l) {
                    const T x = as<T>(a[l]), y = as<T>(b[l]);
                    if constexpr (std::is_floating_point_v<T>) {
                        d[l] = bits_of<T>(lowest ? std::fmin(x, y) : std::fmax(x, y));
                    } else {
                        d[l] = bits_of<T>(lowest ? std::min(x, y) : std::max(x, y));
                    }
                });
            });
            return;
        case Op::neg:
        case Op::abs:
            dispatch_any(in.type, [&](auto zero) {
                using T = decltype(zero);
                const bool negate = in.op == Op::neg;
                for_lanes(exec, [&](unsigned l) {
                    const T x = as<T>(a[l]);
                    if constexpr (std::is_floating_point_v<T>) {
                        d[l] = bits_of<T>(negate ? -x : std::fabs(x));
                    } else {
                        using U = Unsigned<T>;
                        const U minus = static_cast<U>(U(0) - static_cast<U>(x));
                        d[l] = bits_of<U>(negate || x < T(0) ? minus : static_cast<U>(x));
                    }
                });
            });
            return;
        case Op::and_:
        case Op::or_:
        case Op::xor_: {
            const unsigned bits = in.type == Type::pred ? 1 : type_bits(in.type);
            const std::uint64_t keep = bits == 64 ? ~0ull : ((1ull << bits) - 1);
            if (in.op == Op::and_) {
                for_lanes(exec, [&](unsigned l) { d[l] = (a[l] & b[l]) & keep; });
            } else if (in.op == Op::or_) {
                for_lanes(exec, [&](unsigned l) { d[l] = (a[l] | b[l]) & keep; });
            } else {
                for_lanes(exec, [&](unsigned l) { d[l] = (a[l] ^ b[l]) & keep; });
            }
            return;
        }
        case Op::not_:
        case Op::cnot: {
            const unsigned bits = in.type == Type::pred ? 1 : type_bits(in.type);
            const std::uint64_t keep = bits == 64 ? ~0ull : ((1ull << bits) - 1);
            if (in.op == Op::not_) {
                for_lanes(exec, [&](unsigned l) { d[l] = ~a[l] & keep; });
            } else {
                for_lanes(exec, [&](unsigned l) { d[l] = (a[l] & keep) == 0 ? 1 : 0; });
            }
            return;
        }
        case Op::shl:
        case Op::shr:
            dispatch_int(in.type, [&](auto zero) {
                using T = decltype(zero);
                using U = Unsigned<T>;
                constexpr unsigned width = 8 * sizeof(T);
                const bool left = in.op == Op::shl;
                for_lanes(exec, [&](unsigned l) {
                    const auto amount = static_cast<std::uint32_t>(b[l]);
                    const T x = as<T>(a[l]);
                    T r;
                    if (left) {
                        r = amount >= width
                                ? T(0)
                                : static_cast<T>(static_cast<U>(static_cast<U>(x) << amount));
                    } else if (std::is_signed_v<T>) {
                        r = amount >= width ? (x < T(0) ? T(-1) : T(0))
                                            : static_cast<T>(x >> amount);
                    } else {
                        r = amount >= width ? T(0) : static_cast<T>(static_cast<U>(x) >> amount);
                    }
                    d[l] = bits_of<T>(r);
                });
            });
            return;
        case Op::popc:
        case Op::clz:
        case Op::brev: {
            const bool wide = type_bits(in.type) == 64;
            for_lanes(exec, [&](unsigned l) {
                const std::uint64_t x = wide ? a[l] : static_cast<std::uint32_t>(a[l]);
                if (in.op == Op::popc) {
                    d[l] = static_cast<std::uint64_t>(__builtin_popcountll(x));
                } else if (in.op == Op::clz) {
                    d[l] = x == 0
                               ? (wide ? 64 : 32)
                               : static_cast<std::uint64_t>(__builtin_clzll(x) - (wide ? 0 : 32));
                } else {
                    std::uint64_t r = 0;
                    const unsigned n = wide ? 64 : 32;
                    for (unsigned k = 0; k < n; ++k)
                        r |= ((x >> k) & 1) << (n - 1 - k);
                    d[l] = r;
                }
            });
            return;
        }
        case Op::bfe:
            dispatch_int(in.type, [&](auto zero) {
                using T = decltype(zero);
                using U = Unsigned<T>;
                constexpr unsigned width = 8 * sizeof(T);
                for_lanes(exec, [&](unsigned l) {
                    const unsigned pos = static_cast<std::uint8_t>(b[l]);
                    const unsigned len = static_cast<std::uint8_t>(c[l]);
                    const U x = as<U>(a[l]);
                    const unsigned msb_index = std::min(pos + len, width) - (len == 0 ? 0 : 1);
                    const bool sign = std::is_signed_v<T> && len != 0 &&
                                      ((x >> std::min(msb_index, width - 1)) & 1);
                    U r = 0;
                    for (unsigned k = 0; k < width; ++k) {
                        const bool bit =
                            (k < len && pos + k < width) ? ((x >> (pos + k)) & 1) : sign;
                        if (bit)
                            r = static_cast<U>(r | (U(1) << k));
                    }
                    d[l] = bits_of<U>(r);
                });
            });
            return;
        case Op::bfi:
            dispatch_int(in.type, [&](auto zero) {
                using U = Unsigned<decltype(zero)>;
                constexpr unsigned width = 8 * sizeof(U);
                const std::uint64_t* e = reg(w, in.src[3]);
                for_lanes(exec, [&](unsigned l) {
                    const unsigned pos = static_cast<std::uint8_t>(c[l]);
                    const unsigned len = static_cast<std::uint8_t>(e[l]);
                    U r = as<U>(b[l]);
                    const U f = as<U>(a[l]);
                    for (unsigned k = 0; k < len && pos + k < width; ++k) {
                        const U bit = U(1) << (pos + k);
                        r = static_cast<U>(((f >> k) & 1) ? (r | bit) : (r & ~bit));
                    }
                    d[l] = bits_of<U>(r);
                });
            });
            return;
        case Op::prmt:
            for_lanes(exec, [&](unsigned l) {
                const std::uint64_t bytes =
                    (static_cast<std::uint64_t>(static_cast<std::uint32_t>(b[l])) << 32) |
                    static_cast<std::uint32_t>(a[l]);
                const auto selector = static_cast<std::uint32_t>(c[l]);
                std::uint32_t r = 0;
                for (unsigned k = 0; k < 4; ++k) {
                    const unsigned s = (selector >> (4 * k)) & 0xf;
                    std::uint32_t byte =
                        static_cast<std::uint32_t>((bytes >> (8 * (s & 7))) & 0xff);
                    if (s & 8)
                        byte = (byte & 0x80) ? 0xff : 0;  // sign replicate
                    r |= byte << (8 * k);
                }
                d[l] = r;
            });
            return;
        case Op::bfind:
            dispatch_int(in.type, [&](auto zero) {
                using T = decltype(zero);
                using U = Unsigned<T>;
                constexpr unsigned width = 8 * sizeof(T);
                for_lanes(exec, [&](unsigned l) {
                    U x = as<U>(a[l]);
                    if (std::is_signed_v<T> && (x >> (width - 1)) != 0)
                        x = static_cast<U>(~x);
                    std::uint32_t r = 0xffffffffu;
                    for (unsigned k = width; k-- > 0;) {
                        if ((x >> k) & 1) {
                            r = in.shift == ShiftMode::left_clamp ? width - 1 - k : k;
                            break;
                        }
                    }
                    d[l] = r;
                });
            });
            return;
        case Op::shf:
            for_lanes(exec, [&](unsigned l) {
                const std::uint64_t pair =
                    (static_cast<std::uint64_t>(static_cast<std::uint32_t>(b[l])) << 32) |
                    static_cast<std::uint32_t>(a[l]);
                const auto amount = static_cast<std::uint32_t>(c[l]);
                const bool clamp =
                    in.shift == ShiftMode::left_clamp || in.shift == ShiftMode::right_clamp;
                const std::uint32_t n = clamp ? std::min<std::uint32_t>(amount, 32) : (amount & 31);
                const bool left =
                    in.shift == ShiftMode::left_wrap || in.shift == ShiftMode::left_clamp;
                d[l] = left ? static_cast<std::uint32_t>((pair << n) >> 32)
                            : static_cast<std::uint32_t>(pair >> n);
            });
            return;
        case Op::sad:
            dispatch_int(in.type, [&](auto zero) {
                using T = decltype(zero);
                using U = Unsigned<T>;
                for_lanes(exec, [&](unsigned l) {
                    const T x = as<T>(a[l]), y = as<T>(b[l]);
                    const U diff = x > y ? static_cast<U>(static_cast<U>(x) - static_cast<U>(y))
                                         : static_cast<U>(static_cast<U>(y) - static_cast<U>(x));
                    d[l] = bits_of<U>(static_cast<U>(diff + as<U>(c[l])));
                });
            });
            return;
        case Op::copysign:
            // PTX: the sign of a, the magnitude of b.
            if (in.type == Type::f32) {
                for_lanes(exec, [&](unsigned l) {
                    d[l] = bits_of<float>(std::copysign(as<float>(b[l]), as<float>(a[l])));
                });
            } else {
                for_lanes(exec, [&](unsigned l) {
                    d[l] = bits_of<double>(std::copysign(as<double>(b[l]), as<double>(a[l])));
                });
            }
            return;
        case Op::redux:
            dispatch_int(in.type, [&](auto zero) {
                using T = decltype(zero);
                using U = Unsigned<T>;
                bool first = true;
                T r{};
                for_lanes(exec, [&](unsigned l) {
                    const T x = as<T>(a[l]);
                    if (first) {
                        r = x;
                        first = false;
                        return;
                    }
                    switch (in.atom_op) {
                        case AtomOp::add:
                            r = static_cast<T>(
                                static_cast<U>(static_cast<U>(r) + static_cast<U>(x)));
                            break;
                        case AtomOp::min:
                            r = std::min(r, x);
                            break;
                        case AtomOp::max:
                            r = std::max(r, x);
                            break;
                        case AtomOp::and_:
                            r = static_cast<T>(r & x);
                            break;
                        case AtomOp::or_:
                            r = static_cast<T>(r | x);
                            break;
                        default:
                            r = static_cast<T>(r ^ x);
                            break;
                    }
                });
                for_lanes(exec, [&](unsigned l) { d[l] = bits_of<T>(r); });
            });
            return;
        case Op::setp:
            setp(w, in, exec);
            return;
        case Op::selp: {
            const unsigned bits = type_bits(in.type);
            const std::uint64_t keep = bits == 64 ? ~0ull : ((1ull << bits) - 1);
            for_lanes(exec, [&](unsigned l) { d[l] = (c[l] != 0 ? a[l] : b[l]) & keep; });
            return;
        }
        case Op::cvt:
            cvt(in, exec, d, a);
            return;
        case Op::cvta_to_generic:
        case Op::cvta_from_generic: {
            std::uint64_t window = 0;
            if (in.space == Space::shared)
                window = kSharedWindow;
            if (in.space == Space::local)
                window = kLocalWindow;
            const unsigned bits = type_bits(in.type);
            const std::uint64_t keep = bits == 64 ? ~0ull : ((1ull << bits) - 1);
            if (in.op == Op::cvta_to_generic) {
                for_lanes(exec, [&](unsigned l) { d[l] = (a[l] + window) & keep; });
            } else {
                for_lanes(exec, [&](unsigned l) { d[l] = (a[l] - window) & keep; });
            }
            return;
        }
        case Op::rcp:
        case Op::sqrt:
        case Op::rsqrt:
        case Op::ex2:
        case Op::lg2:
        case Op::sin:
        case Op::cos:
            dispatch_any(in.type, [&](auto zero) {
                using T = decltype(zero);
                if constexpr (std::is_floating_point_v<T>) {
                    for_lanes(exec, [&](unsigned l) {
                        const T x = as<T>(a[l]);
                        T r = x;
                        switch (in.op) {
                            case Op::rcp:
                                r = T(1) / x;
                                break;
                            case Op::sqrt:
                                r = std::sqrt(x);
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
                                r = std::sin(x);
                                break;
                            default:
                                r = std::cos(x);
                                break;
                        }
                        d[l] = bits_of<T>(r);
                    });
                }
            });
            return;
        case Op::ld:
        case Op::st:
            memory_access(w, in, exec);
            return;
        case Op::atom:
            atomic(w, in, exec);
            return;
        case Op::shfl: {
            std::array<std::uint64_t, 32> source;
            for (unsigned l = 0; l < 32; ++l)
                source[l] = a[l];
            // The membermask (src[3]) is not checked: the executing lanes take part.
            std::uint64_t* p = in.dst2 >= 0 ? reg(w, in.dst2) : nullptr;
            for_lanes(exec, [&](unsigned lane) {
                const auto bval = static_cast<std::uint32_t>(b[lane]) & 31;
                const auto cword = static_cast<std::uint32_t>(c[lane]);
                const std::uint32_t cval = cword & 31;
                const std::uint32_t segmask = (cword >> 8) & 31;
                const std::uint32_t max_lane = (lane & segmask) | (cval & ~segmask);
                const std::uint32_t min_lane = lane & segmask;
                int j = static_cast<int>(lane);
                bool pval = false;
                switch (in.shuffle) {
                    case ShuffleMode::up:
                        j = static_cast<int>(lane) - static_cast<int>(bval);
                        pval = j >= static_cast<int>(max_lane);
                        break;
                    case ShuffleMode::down:
                        j = static_cast<int>(lane + bval);
                        pval = j <= static_cast<int>(max_lane);
                        break;
                    case ShuffleMode::bfly:
                        j = static_cast<int>(lane ^ bval);
                        pval = j <= static_cast<int>(max_lane);
                        break;
                    case ShuffleMode::idx:
                        j = static_cast<int>(min_lane | (bval & ~segmask));
                        pval = j <= static_cast<int>(max_lane);
                        break;
                }
                if (!pval)
                    j = static_cast<int>(lane);
                d[lane] = static_cast<std::uint32_t>(source[static_cast<unsigned>(j) & 31]);
                if (p != nullptr)
                    p[lane] = pval ? 1 : 0;
            });
            return;
        }
        case Op::vote_ballot:
        case Op::vote_all:
        case Op::vote_any:
        case Op::vote_uni: {
            std::uint32_t ballot = 0;
            for_lanes(exec, [&](unsigned l) {
                if ((a[l] != 0) != in.negate_c)
                    ballot |= 1u << l;
            });
            std::uint64_t value = ballot;
            if (in.op == Op::vote_all)
                value = ballot == exec;
            if (in.op == Op::vote_any)
                value = ballot != 0;
            if (in.op == Op::vote_uni)
                value = ballot == 0 || ballot == exec;
            for_lanes(exec, [&](unsigned l) { d[l] = value; });
            return;
        }
        case Op::activemask:
            for_lanes(exec, [&](unsigned l) { d[l] = w.mask; });
            return;
        default:
            throw std::logic_error("instruction without an executor");
    }
}

void Executor::setp(Warp& w, const Instruction& in, std::uint32_t exec) {
    std::uint64_t* p = reg(w, in.dst[0]);
    std::uint64_t* q = in.dst2 >= 0 ? reg(w, in.dst2) : nullptr;
    const std::uint64_t* a = reg(w, in.src[0]);
    const std::uint64_t* b = reg(w, in.src[1]);
    const std::uint64_t* c = in.src[2] >= 0 ? reg(w, in.src[2]) : nullptr;
    dispatch_any(in.type, [&](auto zero) {
        using T = decltype(zero);
        for_lanes(exec, [&](unsigned l) {
            const T x = as<T>(a[l]), y = as<T>(b[l]);
            bool t = false;
            if constexpr (std::is_floating_point_v<T>) {
                const bool unordered = std::isnan(x) || std::isnan(y);
                switch (in.compare) {
                    case Compare::eq:
                        t = !unordered && x == y;
                        break;
                    case Compare::ne:
                        t = !unordered && x != y;
                        break;
                    case Compare::lt:
                        t = !unordered && x < y;
                        break;
                    case Compare::le:
                        t = !unordered && x <= y;
                        break;
                    case Compare::gt:
                        t = !unordered && x > y;
                        break;
                    case Compare::ge:
                        t = !unordered && x >= y;
                        break;
                    case Compare::equ:
                        t = unordered || x == y;
                        break;
                    case Compare::neu:
                        t = unordered || x != y;
                        break;
                    case Compare::ltu:
                        t = unordered || x < y;
                        break;
                    case Compare::leu:
                        t = unordered || x <= y;
                        break;
                    case Compare::gtu:
                        t = unordered || x > y;
                        break;
                    case Compare::geu:
                        t = unordered || x >= y;
                        break;
                    case Compare::num:
                        t = !unordered;
                        break;
                    case Compare::nan:
                        t = unordered;
                        break;
                    default:
                        t = false;
                        break;
                }
            } else {
                using U = Unsigned<T>;
                const U ux = static_cast<U>(x), uy = static_cast<U>(y);
                switch (in.compare) {
                    case Compare::eq:
                        t = x == y;
                        break;
                    case Compare::ne:
                        t = x != y;
                        break;
                    case Compare::lt:
                        t = x < y;
                        break;
                    case Compare::le:
                        t = x <= y;
                        break;
                    case Compare::gt:
                        t = x > y;
                        break;
                    case Compare::ge:
                        t = x >= y;
                        break;
                    case Compare::lo:
                        t = ux < uy;
                        break;
                    case Compare::ls:
                        t = ux <= uy;
                        break;
                    case Compare::hi:
                        t = ux > uy;
                        break;
                    case Compare::hs:
                        t = ux >= uy;
                        break;
                    default:
                        t = false;
                        break;
                }
            }
            bool first = t, second = !t;
            if (c != nullptr) {
                const bool cv = (c[l] != 0) != in.negate_c;
                switch (in.bool_op) {
                    case BoolOp::and_:
                        first = first && cv;
                        second = second && cv;
                        break;
                    case BoolOp::or_:
                        first = first || cv;
                        second = second || cv;
                        break;
                    case BoolOp::xor_:
                        first = first != cv;
                        second = second != cv;
                        break;
                    case BoolOp::none:
                        break;
                }
            }
            p[l] = first ? 1 : 0;
            if (q != nullptr)
                q[l] = second ? 1 : 0;
        });
    });
}

// Conversions: float to integer rounds as asked (rzi when none), saturates, NaN gives 0.
// Float rounding modes other than round-to-nearest for float results (.rz/.rm/.rp) are
// computed as round-to-nearest.
void Executor::cvt(const Instruction& in, std::uint32_t exec, std::uint64_t* d,
                   const std::uint64_t* a) {
    const Type to = in.type;
    const Type from = in.source_type;
    dispatch_any(from, [&](auto source_zero) {
        using S = decltype(source_zero);
        dispatch_any(to, [&](auto target_zero) {
            using D = decltype(target_zero);
            for_lanes(exec, [&](unsigned l) {
                const S x = as<S>(a[l]);
                D r{};
                if constexpr (std::is_floating_point_v<D>) {
                    if constexpr (std::is_floating_point_v<S>) {
                        r = round_float(static_cast<D>(x), in.rounding);
                        if (sizeof(D) < sizeof(S))
                            r = static_cast<D>(round_float(x, in.rounding));
                    } else {
                        r = static_cast<D>(x);
                    }
                    if (in.saturate)
                        r = std::isnan(r) ? D(0) : std::min(D(1), std::max(D(0), r));
                } else if constexpr (std::is_floating_point_v<S>) {
                    const Rounding mode =
                        in.rounding == Rounding::none ? Rounding::rzi : in.rounding;
                    const long double v = round_float(static_cast<long double>(x), mode);
                    if (std::isnan(v)) {
                        r = D(0);
                    } else if (v <= static_cast<long double>(std::numeric_limits<D>::min())) {
                        r = std::numeric_limits<D>::min();
                    } else if (v >= static_cast<long double>(std::numeric_limits<D>::max())) {
                        r = std::numeric_limits<D>::max();
                    } else {
                        r = static_cast<D>(v);
                    }
                } else {
                    if (in.saturate) {
                        // Clamp the source value to the destination's range.
                        const bool negative = std::is_signed_v<S> && x < S(0);
                        if (negative) {
                            r = std::is_signed_v<D> &&
                                        static_cast<std::int64_t>(x) >=
                                            static_cast<std::int64_t>(std::numeric_limits<D>::min())
                                    ? static_cast<D>(x)
                                    : std::numeric_limits<D>::min();
                        } else {
                            r = static_cast<std::uint64_t>(x) <=
                                        static_cast<std::uint64_t>(std::numeric_limits<D>::max())
                                    ? static_cast<D>(x)
                                    : std::numeric_limits<D>::max();
                        }
                    } else {
                        // Sign or zero extension by the source type, truncation to the
                        // destination's width.
                        r = static_cast<D>(static_cast<Unsigned<D>>(
                            std::is_signed_v<S>
                                ? static_cast<std::uint64_t>(static_cast<std::int64_t>(x))
                                : static_cast<std::uint64_t>(x)));
                    }
                }
                d[l] = bits_of<D>(r);
            });
        });
    });
}

}  // namespace grader::sim::detail
