#include "sim/rounding.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

namespace grader::sim::rounding {

namespace {

// A format exact for the product of two doubles (106 bits of significand) and wide in range: IEEE
// binary128, as long double on AArch64 or __float128 on x86-64.
#if defined(__LDBL_MANT_DIG__) && __LDBL_MANT_DIG__ >= 113
using Quad = long double;
#elif defined(__SIZEOF_FLOAT128__)
__extension__ typedef __float128 Quad;
#else
#error "the simulator's directed rounding needs IEEE binary128 (__float128 or long double)"
#endif

// Where the product of two F, and the sum of that and an F rounded once, is computed: exact for
// the product, and finer than F by more than F's whole significand.
template <class F>
struct Wider;
template <>
struct Wider<float> {
    using type = double;
};
template <>
struct Wider<double> {
    using type = Quad;
};

template <class T>
int compare(T x, T y) {
    return (x > y) - (x < y);
}

template <class T>
T fabs_of(T x) {
    return x < 0 ? -x : x;  // binary128 has no std::fabs
}

// The exact result rounded in direction d, from `nearest` (it rounded to nearest) and `side`:
// where the exact result lies against nearest (+1 above, -1 below, 0 equal). Rounding to nearest
// and directed rounding differ by at most one ulp, so one step does it; an overflow to infinity
// steps back to the largest finite value, and a result rounded to zero keeps the exact one's sign.
template <class F>
F step(F nearest, int side, Direction d) {
    constexpr F kInfinity = std::numeric_limits<F>::infinity();
    switch (d) {
        case Direction::nearest:
            return nearest;
        case Direction::toward_zero:
            if ((nearest > 0 && side < 0) || (nearest < 0 && side > 0))
                return std::nextafter(nearest, F(0));
            return nearest;
        case Direction::down:
            return side < 0 ? std::nextafter(nearest, -kInfinity) : nearest;
        case Direction::up:
            return side > 0 ? std::nextafter(nearest, kInfinity) : nearest;
    }
    return nearest;
}

// Where a finite exact result lies against an infinite `nearest`: it overflowed.
template <class F>
int overflow_side(F nearest) {
    return nearest > 0 ? -1 : 1;
}

// An exact zero sum of operands that are not both +0 (x + -x, +0 + -0, -0 + -0) is -0 when
// rounding down, and +0 otherwise unless both are -0 (IEEE 754, 6.3): the host's sum is right
// for every direction but down.
template <class F>
F exact_zero_sum(F nearest, bool first_negative, bool second_negative, Direction d) {
    if (d == Direction::down && (first_negative || second_negative))
        return -F(0);
    return nearest;
}

// Fast2Sum (Dekker): with |x| >= |y|, x + y = s + e exactly, where s is x + y rounded to nearest;
// z = s - x is exact, so nothing overflows on the way (TwoSum's s - z can, beside the largest
// finite value), and gradual underflow leaves it exact.
template <class F>
F sum_error(F x, F y, F s) {
    if (fabs_of(x) < fabs_of(y))
        std::swap(x, y);
    const F z = s - x;
    return y - z;
}

template <class F>
F add_rounded(F a, F b, Direction d) {
    const F s = a + b;
    if (d == Direction::nearest || std::isnan(s))
        return s;
    if (std::isinf(s))
        return step(s, std::isinf(a) || std::isinf(b) ? 0 : overflow_side(s), d);
    const F e = sum_error(a, b, s);
    if (e == 0 && s == 0)
        return exact_zero_sum(s, std::signbit(a), std::signbit(b), d);
    return step(s, compare(e, F(0)), d);
}

template <class F>
F mul_rounded(F a, F b, Direction d) {
    using W = typename Wider<F>::type;
    const F p = a * b;
    if (d == Direction::nearest || std::isnan(p))
        return p;
    if (std::isinf(p))
        return step(p, std::isinf(a) || std::isinf(b) ? 0 : overflow_side(p), d);
    return step(p, compare(W(a) * W(b), W(p)), d);
}

template <class F>
F fma_rounded(F a, F b, F c, Direction d) {
    using W = typename Wider<F>::type;
    const F r = std::fma(a, b, c);
    if (d == Direction::nearest || std::isnan(r))
        return r;
    if (std::isinf(r)) {
        const bool exact = std::isinf(a) || std::isinf(b) || std::isinf(c);
        return step(r, exact ? 0 : overflow_side(r), d);
    }
    // The product exactly, its sum with c as t + e exactly (Fast2Sum in the wider format); t - r is
    // exact there (both are multiples of t's last place, which is finer than r's by more than F's
    // significand), and where it is 0, e says the side.
    const W product = W(a) * W(b);
    const W t = product + W(c);
    const W e = sum_error(product, W(c), t);
    const W difference = t - W(r);
    const int side = difference != 0 ? compare(difference, W(0)) : compare(e, W(0));
    if (side == 0 && r == 0)
        return exact_zero_sum(r, std::signbit(a) != std::signbit(b), std::signbit(c), d);
    return step(r, side, d);
}

template <class F>
F div_rounded(F a, F b, Direction d) {
    using W = typename Wider<F>::type;
    const F q = a / b;
    if (d == Direction::nearest || std::isnan(q))
        return q;
    if (std::isinf(a) || std::isinf(b) || b == 0)
        return q;  // infinite or zero, exactly
    if (std::isinf(q))
        return step(q, overflow_side(q), d);
    // a/b against q: the sign of a - q*b (q*b exact in the wider format), turned by b's sign.
    const int side = compare(W(a), W(q) * W(b)) * (b > 0 ? 1 : -1);
    return step(q, side, d);
}

template <class F>
F sqrt_rounded(F a, Direction d) {
    using W = typename Wider<F>::type;
    const F s = std::sqrt(a);
    if (d == Direction::nearest || std::isnan(s) || std::isinf(s) || s == 0)
        return s;
    return step(s, compare(W(a), W(s) * W(s)), d);
}

template <class F, class I>
F integer_rounded(I x, Direction d) {
    const F r = static_cast<F>(x);
    if (d == Direction::nearest)
        return r;
    // Both exact in binary128: 64 bits of integer, F's significand.
    return step(r, compare(static_cast<Quad>(x), static_cast<Quad>(r)), d);
}

}  // namespace

Direction direction_of(detail::Rounding rounding) {
    switch (rounding) {
        case detail::Rounding::rz:
            return Direction::toward_zero;
        case detail::Rounding::rm:
            return Direction::down;
        case detail::Rounding::rp:
            return Direction::up;
        default:
            return Direction::nearest;
    }
}

namespace directed {

float add(float a, float b, Direction d) {
    return add_rounded(a, b, d);
}
double add(double a, double b, Direction d) {
    return add_rounded(a, b, d);
}
float mul(float a, float b, Direction d) {
    return mul_rounded(a, b, d);
}
double mul(double a, double b, Direction d) {
    return mul_rounded(a, b, d);
}
float fma(float a, float b, float c, Direction d) {
    return fma_rounded(a, b, c, d);
}
double fma(double a, double b, double c, Direction d) {
    return fma_rounded(a, b, c, d);
}
float div(float a, float b, Direction d) {
    return div_rounded(a, b, d);
}
double div(double a, double b, Direction d) {
    return div_rounded(a, b, d);
}
float sqrt(float a, Direction d) {
    return sqrt_rounded(a, d);
}
double sqrt(double a, Direction d) {
    return sqrt_rounded(a, d);
}

float narrow(double x, Direction d) {
    const float f = static_cast<float>(x);
    if (d == Direction::nearest || std::isnan(f))
        return f;
    if (std::isinf(f))
        return step(f, std::isinf(x) ? 0 : overflow_side(f), d);
    return step(f, compare(x, static_cast<double>(f)), d);
}

template <class F>
F from_integer(std::int64_t x, Direction d) {
    return integer_rounded<F>(x, d);
}
template <class F>
F from_integer(std::uint64_t x, Direction d) {
    return integer_rounded<F>(x, d);
}
template float from_integer<float>(std::int64_t, Direction);
template double from_integer<double>(std::int64_t, Direction);
template float from_integer<float>(std::uint64_t, Direction);
template double from_integer<double>(std::uint64_t, Direction);

}  // namespace directed

}  // namespace grader::sim::rounding
