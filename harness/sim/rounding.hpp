#pragma once

// Float arithmetic and conversions rounded as PTX's .rn, .rz, .rm and .rp ask (the CUDA
// intrinsics __fadd_rz, __fmul_ru, __fmaf_rd, __double2float_rz, __int2float_ru and the like),
// to the bit. The host computes each operation rounded to nearest; where the mode is directed,
// the exact result's side of that one is found without rounding (an error-free transform, or the
// operation carried out exactly in a wider format), and the result moves by at most one ulp.
// tests/test_sim_rounding.cpp checks every operation against the host's own directed rounding
// (fesetround), over dense samples of operands. NaNs come back as the host made them (the
// executor makes them canonical); subnormals are kept (.ftz is the executor's).

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "sim/program.hpp"

namespace grader::sim::rounding {

enum class Direction { nearest, toward_zero, down, up };

// PTX's .rn/.rz/.rm/.rp (and none, which is .rn) as a direction. The integer roundings (.rni
// and the like) are not directions of a float result: nearest.
Direction direction_of(detail::Rounding rounding);

// The directed cases, out of line; the functions below round to nearest inline, as the
// executor's hot loops do nearly always.
namespace directed {
float add(float a, float b, Direction d);
double add(double a, double b, Direction d);
float mul(float a, float b, Direction d);
double mul(double a, double b, Direction d);
float fma(float a, float b, float c, Direction d);
double fma(double a, double b, double c, Direction d);
float div(float a, float b, Direction d);
double div(double a, double b, Direction d);
float sqrt(float a, Direction d);
double sqrt(double a, Direction d);
float narrow(double x, Direction d);
template <class F>
F from_integer(std::int64_t x, Direction d);
template <class F>
F from_integer(std::uint64_t x, Direction d);
}  // namespace directed

template <class F>
F add(F a, F b, Direction d) {
    return d == Direction::nearest ? a + b : directed::add(a, b, d);
}
template <class F>
F sub(F a, F b, Direction d) {
    return d == Direction::nearest ? a - b : directed::add(a, -b, d);
}
template <class F>
F mul(F a, F b, Direction d) {
    return d == Direction::nearest ? a * b : directed::mul(a, b, d);
}
template <class F>
F fma(F a, F b, F c, Direction d) {
    return d == Direction::nearest ? std::fma(a, b, c) : directed::fma(a, b, c, d);
}
template <class F>
F div(F a, F b, Direction d) {
    return d == Direction::nearest ? a / b : directed::div(a, b, d);
}
template <class F>
F sqrt(F a, Direction d) {
    return d == Direction::nearest ? std::sqrt(a) : directed::sqrt(a, d);
}
// cvt.f32.f64.
inline float narrow(double x, Direction d) {
    return d == Direction::nearest ? static_cast<float>(x) : directed::narrow(x, d);
}
// cvt.f32.s32 and the like: an integer (any width, signed or not) rounded to F, float or double.
template <class F, class I>
F from_integer(I x, Direction d) {
    if (d == Direction::nearest)
        return static_cast<F>(x);
    if constexpr (std::is_signed_v<I>)
        return directed::from_integer<F>(static_cast<std::int64_t>(x), d);
    else
        return directed::from_integer<F>(static_cast<std::uint64_t>(x), d);
}

}  // namespace grader::sim::rounding
