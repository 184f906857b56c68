// The simulator's directed rounding (sim/rounding.hpp) against the host's own: the same operation
// computed with fesetround's mode (this file is built with -frounding-math, so the compiler
// neither folds nor moves the reference across the mode changes). Operands are dense samples of
// every kind of float: random bits, operands of nearby exponents (sums that cancel or round),
// few-bit significands (exact results and ties), subnormals and the edges of the range.

#include <doctest/doctest.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <ios>
#include <limits>
#include <random>
#include <string>
#include <type_traits>

#include "sim/rounding.hpp"

namespace rounding = grader::sim::rounding;
using rounding::Direction;

namespace {

constexpr Direction kDirections[] = {Direction::nearest, Direction::toward_zero, Direction::down,
                                     Direction::up};

int host_mode(Direction d) {
    switch (d) {
        case Direction::toward_zero:
            return FE_TOWARDZERO;
        case Direction::down:
            return FE_DOWNWARD;
        case Direction::up:
            return FE_UPWARD;
        case Direction::nearest:
            break;
    }
    return FE_TONEAREST;
}

std::string name_of(Direction d) {
    switch (d) {
        case Direction::toward_zero:
            return "rz";
        case Direction::down:
            return "rm";
        case Direction::up:
            return "rp";
        case Direction::nearest:
            break;
    }
    return "rn";
}

// The host computes f under the direction's mode; the mode is back to nearest afterwards.
template <class F>
auto in_mode(Direction d, F&& f) {
    std::fesetround(host_mode(d));
    const auto result = f();
    std::fesetround(FE_TONEAREST);
    return result;
}

template <class F>
using Bits = std::conditional_t<sizeof(F) == 4, std::uint32_t, std::uint64_t>;

template <class F>
Bits<F> bits(F f) {
    Bits<F> b;
    std::memcpy(&b, &f, sizeof f);
    return b;
}

template <class F>
F from_bits(Bits<F> b) {
    F f;
    std::memcpy(&f, &b, sizeof f);
    return f;
}

// The same result: the same bits, or NaN both (the executor makes NaNs canonical).
template <class F>
bool same(F a, F b) {
    return (std::isnan(a) && std::isnan(b)) || bits(a) == bits(b);
}

template <class F>
struct Sampler {
    static constexpr int kSignificand = std::numeric_limits<F>::digits - 1;  // stored bits
    static constexpr int kExponentBits = sizeof(F) * 8 - 1 - kSignificand;
    static constexpr Bits<F> kMaxExponent = (Bits<F>{1} << kExponentBits) - 1;
    std::mt19937_64 rng;

    explicit Sampler(std::uint64_t seed) : rng(seed) {}

    Bits<F> draw(Bits<F> below) { return static_cast<Bits<F>>(rng() % below); }

    F make(bool negative, Bits<F> exponent, Bits<F> significand) {
        const Bits<F> sign = negative ? Bits<F>{1} << (sizeof(F) * 8 - 1) : 0;
        return from_bits<F>(sign | (exponent << kSignificand) |
                            (significand & ((Bits<F>{1} << kSignificand) - 1)));
    }

    Bits<F> significand() {
        switch (rng() % 4) {
            case 0:  // a few bits: exact results and ties
                return static_cast<Bits<F>>(rng() & rng() & rng()) >> (rng() % kSignificand);
            case 1:  // all ones at the bottom: carries
                return static_cast<Bits<F>>(rng() | ((Bits<F>{1} << (rng() % kSignificand)) - 1));
            default:
                return static_cast<Bits<F>>(rng());
        }
    }

    // Any float; where `near` is given, often one within a few binades of it.
    F any(const F* near = nullptr) {
        const bool negative = rng() % 2 != 0;
        switch (rng() % 8) {
            case 0:  // random bits: NaNs and infinities included
                return from_bits<F>(static_cast<Bits<F>>(rng()));
            case 1:  // subnormal or zero
                return make(negative, 0, significand());
            case 2:  // the top of the range
                return make(negative, kMaxExponent - 1 - draw(3), significand());
            case 3:  // the bottom of the normal range
                return make(negative, 1 + draw(3), significand());
            default:
                break;
        }
        if (near != nullptr && std::isfinite(*near)) {
            const auto e = static_cast<long long>((bits(*near) >> kSignificand) & kMaxExponent);
            const long long spread = static_cast<long long>(kSignificand) + 3;
            long long exponent = e + static_cast<long long>(rng() % (2 * spread + 1)) - spread;
            exponent = std::max(0LL, std::min<long long>(exponent, kMaxExponent - 1));
            return make(negative, static_cast<Bits<F>>(exponent), significand());
        }
        return make(negative, draw(kMaxExponent), significand());
    }
};

template <class F, class Ours, class Host>
void check_binary(const char* what, int samples, Ours ours, Host host) {
    Sampler<F> sample(bits(static_cast<F>(samples)) ^ std::hash<std::string>{}(what));
    int mismatches = 0;
    for (int k = 0; k < samples && mismatches < 5; ++k) {
        const F a = sample.any();
        const F b = sample.any(&a);
        for (const Direction d : kDirections) {
            volatile F va = a, vb = b;
            const F want = in_mode(d, [&] { return host(va, vb); });
            const F got = ours(a, b, d);
            if (!same(got, want)) {
                ++mismatches;
                FAIL_CHECK(std::string(what)
                           << "." << name_of(d) << "(" << std::hexfloat << a << ", " << b
                           << "): " << got << ", the host's " << want);
            }
        }
    }
    CHECK_MESSAGE(mismatches == 0, what);
}

}  // namespace

TEST_CASE("f32 and f64 add, sub, mul and div round to the bit in every direction, as the host") {
    constexpr int kSamples = 150'000;
    check_binary<float>(
        "add.f32", kSamples, [](float a, float b, Direction d) { return rounding::add(a, b, d); },
        [](float a, float b) { return a + b; });
    check_binary<float>(
        "sub.f32", kSamples, [](float a, float b, Direction d) { return rounding::sub(a, b, d); },
        [](float a, float b) { return a - b; });
    check_binary<float>(
        "mul.f32", kSamples, [](float a, float b, Direction d) { return rounding::mul(a, b, d); },
        [](float a, float b) { return a * b; });
    check_binary<float>(
        "div.f32", kSamples, [](float a, float b, Direction d) { return rounding::div(a, b, d); },
        [](float a, float b) { return a / b; });
    check_binary<double>(
        "add.f64", kSamples, [](double a, double b, Direction d) { return rounding::add(a, b, d); },
        [](double a, double b) { return a + b; });
    check_binary<double>(
        "mul.f64", kSamples, [](double a, double b, Direction d) { return rounding::mul(a, b, d); },
        [](double a, double b) { return a * b; });
    check_binary<double>(
        "div.f64", kSamples, [](double a, double b, Direction d) { return rounding::div(a, b, d); },
        [](double a, double b) { return a / b; });
}

TEST_CASE("fma rounds once, to the bit in every direction, as the host's fma") {
    constexpr int kSamples = 150'000;
    const auto check = [](auto zero, const char* what) {
        using F = decltype(zero);
        Sampler<F> sample(0xf3a + sizeof(F));
        int mismatches = 0;
        for (int k = 0; k < kSamples && mismatches < 5; ++k) {
            const F a = sample.any();
            const F b = sample.any(&a);
            // c near the product, so that the sum cancels or rounds at the product's last place.
            const F product = a * b;
            const F c = sample.any(&product);
            for (const Direction d : kDirections) {
                volatile F va = a, vb = b, vc = c;
                const F want = in_mode(d, [&] { return std::fma(va, vb, vc); });
                const F got = rounding::fma(a, b, c, d);
                if (!same(got, want)) {
                    ++mismatches;
                    FAIL_CHECK(std::string(what)
                               << "." << name_of(d) << "(" << std::hexfloat << a << ", " << b
                               << ", " << c << "): " << got << ", the host's " << want);
                }
            }
        }
        CHECK_MESSAGE(mismatches == 0, what);
    };
    check(0.0f, "fma.f32");
    check(0.0, "fma.f64");
}

TEST_CASE("sqrt and the conversions to f32 round to the bit in every direction, as the host") {
    constexpr int kSamples = 200'000;
    Sampler<float> floats(17);
    Sampler<double> doubles(18);
    std::mt19937_64 rng(19);
    int mismatches = 0;
    const auto report = [&](const char* what, Direction d, auto in, auto got, auto want) {
        if (!same(got, want)) {
            ++mismatches;
            FAIL_CHECK(std::string(what) << "." << name_of(d) << "(" << std::hexfloat << in
                                         << "): " << got << ", the host's " << want);
        }
    };
    for (int k = 0; k < kSamples && mismatches < 5; ++k) {
        const float f = std::fabs(floats.any());
        const double x = std::fabs(doubles.any());
        // Doubles near floats' last places: cvt.f32.f64's ties and near-ties.
        const double near_float =
            static_cast<double>(floats.any()) *
            (1.0 + std::ldexp(static_cast<double>(static_cast<int>(rng() % 5) - 2),
                              -24 - static_cast<int>(rng() % 30)));
        // Integers of every length, so that some need rounding.
        const auto length = static_cast<int>(rng() % 64);
        const std::uint64_t u = rng() >> (63 - length);
        const auto s = static_cast<std::int64_t>(rng() % 2 != 0 ? ~u : u);
        for (const Direction d : kDirections) {
            volatile float vf = f;
            volatile double vx = x, vn = near_float;
            volatile std::uint64_t vu = u;
            volatile std::int64_t vs = s;
            report("sqrt.f32", d, f, rounding::sqrt(f, d),
                   in_mode(d, [&] { return std::sqrt(vf); }));
            report("sqrt.f64", d, x, rounding::sqrt(x, d),
                   in_mode(d, [&] { return std::sqrt(vx); }));
            report("cvt.f32.f64", d, near_float, rounding::narrow(near_float, d),
                   in_mode(d, [&] { return static_cast<float>(vn); }));
            report("cvt.f32.f64", d, x, rounding::narrow(x, d),
                   in_mode(d, [&] { return static_cast<float>(vx); }));
            report("cvt.f32.u64", d, u, rounding::from_integer<float>(u, d),
                   in_mode(d, [&] { return static_cast<float>(vu); }));
            report("cvt.f64.u64", d, u, rounding::from_integer<double>(u, d),
                   in_mode(d, [&] { return static_cast<double>(vu); }));
            report("cvt.f32.s64", d, s, rounding::from_integer<float>(s, d),
                   in_mode(d, [&] { return static_cast<float>(vs); }));
            report("cvt.f64.s64", d, s, rounding::from_integer<double>(s, d),
                   in_mode(d, [&] { return static_cast<double>(vs); }));
            const auto s32 = static_cast<std::int32_t>(s);
            volatile std::int32_t vs32 = s32;
            report("cvt.f32.s32", d, s32, rounding::from_integer<float>(std::int64_t{s32}, d),
                   in_mode(d, [&] { return static_cast<float>(vs32); }));
        }
    }
    CHECK(mismatches == 0);
}

TEST_CASE("the cases the issue names, and the edges of the range, in each direction") {
    // __fadd_ru(2, 1e-10): 2 plus one ulp (0x40000001), as on an H100; rounded to nearest, 2.
    CHECK(bits(rounding::add(2.0f, 1e-10f, Direction::up)) == 0x40000001u);
    CHECK(bits(rounding::add(2.0f, 1e-10f, Direction::nearest)) == 0x40000000u);
    // __double2float_rz(2 + 0.75 ulp of float): 2 (0x40000000), as on an H100; nearest rounds up.
    const double above_two = 2.0 + 0.75 * std::ldexp(1.0, -22);
    CHECK(bits(rounding::narrow(above_two, Direction::toward_zero)) == 0x40000000u);
    CHECK(bits(rounding::narrow(above_two, Direction::nearest)) == 0x40000001u);
    // Overflow: the largest finite value toward zero, infinity away from it.
    constexpr float kMax = std::numeric_limits<float>::max();
    CHECK(rounding::mul(kMax, 2.0f, Direction::toward_zero) == kMax);
    CHECK(rounding::mul(kMax, 2.0f, Direction::down) == kMax);
    CHECK(std::isinf(rounding::mul(kMax, 2.0f, Direction::up)));
    CHECK(rounding::mul(-kMax, 2.0f, Direction::up) == -kMax);
    CHECK(rounding::add(kMax, kMax, Direction::toward_zero) == kMax);
    CHECK(rounding::narrow(1e300, Direction::toward_zero) == kMax);
    // Underflow: the smallest subnormal away from zero, zero toward it.
    constexpr float kTiny = std::numeric_limits<float>::denorm_min();
    CHECK(rounding::mul(1e-30f, 1e-30f, Direction::up) == kTiny);
    CHECK(bits(rounding::mul(1e-30f, 1e-30f, Direction::down)) == 0u);
    CHECK(bits(rounding::mul(-1e-30f, 1e-30f, Direction::down)) == bits(-kTiny));
    // x - x is -0 rounding down, +0 otherwise.
    CHECK(bits(rounding::sub(1.5f, 1.5f, Direction::down)) == 0x80000000u);
    CHECK(bits(rounding::sub(1.5f, 1.5f, Direction::up)) == 0u);
    CHECK(bits(rounding::fma(2.0f, 3.0f, -6.0f, Direction::down)) == 0x80000000u);
    // Integers past float's 24 bits.
    CHECK(rounding::from_integer<float>(std::int64_t{16777217}, Direction::up) == 16777218.0f);
    CHECK(rounding::from_integer<float>(std::int64_t{16777217}, Direction::nearest) == 16777216.0f);
    CHECK(rounding::from_integer<float>(std::int64_t{-16777217}, Direction::toward_zero) ==
          -16777216.0f);
    CHECK(rounding::from_integer<float>(~std::uint64_t{0}, Direction::toward_zero) ==
          std::nextafter(18446744073709551616.0f, 0.0f));
}
