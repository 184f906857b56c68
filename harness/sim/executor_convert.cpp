// The executor's moves, selections, comparisons and conversions. One function per family of
// opcodes.def; see executor.hpp.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "sim/executor.hpp"
#include "sim/program.hpp"
#include "sim/rounding.hpp"

namespace grader::sim::detail {

namespace {

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

void execute_mov(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<1>(w, in);
    if (in.type == Type::pred) {
        for_lanes(exec, [&](unsigned l) { o.d[l] = o.a[l] != 0; });
    } else {
        const unsigned bits = type_bits(in.type);
        const std::uint64_t keep = low_bits(bits);
        for_lanes(exec, [&](unsigned l) { o.d[l] = o.a[l] & keep; });
    }
}

void execute_mov_pack(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    std::uint64_t* d = self.dst(w, in);
    const unsigned part = type_bits(in.type) / in.vector;
    const std::uint64_t keep = low_bits(part);
    for_lanes(exec, [&](unsigned l) {
        std::uint64_t v = 0;
        for (unsigned e = 0; e < in.vector; ++e)
            v |= (self.reg(w, in.src[e])[l] & keep) << (e * part);
        d[l] = v;
    });
}

void execute_mov_unpack(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const std::uint64_t* a = self.src(w, in, 0);
    const unsigned part = type_bits(in.type) / in.vector;
    const std::uint64_t keep = low_bits(part);
    for_lanes(exec, [&](unsigned l) {
        const std::uint64_t v = a[l];
        for (unsigned e = 0; e < in.vector; ++e)
            self.reg(w, in.dst[e])[l] = (v >> (e * part)) & keep;
    });
}

void execute_selp(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<3>(w, in);
    const unsigned bits = type_bits(in.type);
    const std::uint64_t keep = low_bits(bits);
    for_lanes(exec, [&](unsigned l) { o.d[l] = (o.c[l] != 0 ? o.a[l] : o.b[l]) & keep; });
}

void execute_cvta(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<1>(w, in);
    std::uint64_t window = 0;
    if (in.space == Space::shared)
        window = self.shared_window_;
    if (in.space == Space::local)
        window = self.local_window_;
    const unsigned bits = type_bits(in.type);
    const std::uint64_t keep = low_bits(bits);
    if (in.op == Op::cvta_to_generic) {
        for_lanes(exec, [&](unsigned l) { o.d[l] = (o.a[l] + window) & keep; });
    } else {
        for_lanes(exec, [&](unsigned l) { o.d[l] = (o.a[l] - window) & keep; });
    }
}

// setp's comparison of a and b. Float comparisons without a u are false where either is NaN;
// with a u (equ, ltu, ...) they are true there.
template <class T>
bool compares(T x, T y, Compare compare) {
    if constexpr (std::is_floating_point_v<T>) {
        const bool unordered = std::isnan(x) || std::isnan(y);
        switch (compare) {
            case Compare::eq:
                return !unordered && x == y;
            case Compare::ne:
                return !unordered && x != y;
            case Compare::lt:
                return !unordered && x < y;
            case Compare::le:
                return !unordered && x <= y;
            case Compare::gt:
                return !unordered && x > y;
            case Compare::ge:
                return !unordered && x >= y;
            case Compare::equ:
                return unordered || x == y;
            case Compare::neu:
                return unordered || x != y;
            case Compare::ltu:
                return unordered || x < y;
            case Compare::leu:
                return unordered || x <= y;
            case Compare::gtu:
                return unordered || x > y;
            case Compare::geu:
                return unordered || x >= y;
            case Compare::num:
                return !unordered;
            case Compare::nan:
                return unordered;
            default:
                return false;
        }
    } else {
        using U = Unsigned<T>;
        const U ux = static_cast<U>(x), uy = static_cast<U>(y);
        switch (compare) {
            case Compare::eq:
                return x == y;
            case Compare::ne:
                return x != y;
            case Compare::lt:
                return x < y;
            case Compare::le:
                return x <= y;
            case Compare::gt:
                return x > y;
            case Compare::ge:
                return x >= y;
            case Compare::lo:
                return ux < uy;
            case Compare::ls:
                return ux <= uy;
            case Compare::hi:
                return ux > uy;
            case Compare::hs:
                return ux >= uy;
            default:
                return false;
        }
    }
}

void execute_setp(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    std::uint64_t* p = self.reg(w, in.dst[0]);
    std::uint64_t* q = in.dst2 >= 0 ? self.reg(w, in.dst2) : nullptr;
    const std::uint64_t* a = self.reg(w, in.src[0]);
    const std::uint64_t* b = self.reg(w, in.src[1]);
    const std::uint64_t* c = in.src[2] >= 0 ? self.reg(w, in.src[2]) : nullptr;
    dispatch_any(in.type, [&](auto zero) {
        using T = decltype(zero);
        for_lanes(exec, [&](unsigned l) {
            const T x = as<T>(a[l]), y = as<T>(b[l]);
            const bool t = compares(x, y, in.compare);
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

// A NaN converted to float type D: between f32 and f64 its payload carried over (widened_nan,
// narrowed_nan); within one width, as the arithmetic gives it (gpu_nan).
template <class D, class S>
D converted_nan(S x) {
    if constexpr (sizeof(D) > sizeof(S)) {
        return widened_nan(x);
    } else if constexpr (sizeof(D) < sizeof(S)) {
        return narrowed_nan(x);
    } else {
        return gpu_nan(x, x);
    }
}

// Conversions: float to integer rounds as asked (rzi when none), saturates, NaN gives 0. A
// float result rounds as .rn/.rz/.rm/.rp ask (sim/rounding.hpp), or to an integral value as
// .rni/.rzi/.rmi/.rpi ask.
void execute_cvt(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    const auto o = self.operands<1>(w, in);
    const Type to = in.type;
    const Type from = in.source_type;
    const auto mode = rounding::direction_of(in.rounding);
    dispatch_any(from, [&](auto source_zero) {
        using S = decltype(source_zero);
        dispatch_any(to, [&](auto target_zero) {
            using D = decltype(target_zero);
            for_lanes(exec, [&](unsigned l) {
                const S x = as<S>(o.a[l]);
                D r{};
                if constexpr (std::is_floating_point_v<D>) {
                    if constexpr (std::is_floating_point_v<S>) {
                        r = round_float(static_cast<D>(x), in.rounding);
                        if constexpr (sizeof(D) < sizeof(S))
                            r = rounding::narrow(round_float(x, in.rounding), mode);
                    } else {
                        r = rounding::from_integer<D>(x, mode);
                    }
                    if (in.saturate) {
                        r = saturate_unit(r);
                    } else if constexpr (std::is_floating_point_v<S>) {
                        if (std::isnan(x))
                            r = converted_nan<D>(x);
                    }
                } else if constexpr (std::is_floating_point_v<S>) {
                    const Rounding integral =
                        in.rounding == Rounding::none ? Rounding::rzi : in.rounding;
                    const long double v = round_float(static_cast<long double>(x), integral);
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
                o.d[l] = bits_of<D>(r);
            });
        });
    });
}

}  // namespace grader::sim::detail
