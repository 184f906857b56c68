#include "measure/outputs.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>

#include "common/wide_vectors.hpp"

namespace grader {
namespace {

std::uint32_t bits_of(float value) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

// std::mt19937_64's words, a state (312 of them) at a time, without a branch per word: the same
// words in the same order as std::mt19937_64(seed) gives them (tests/test_measure.cpp compares
// them). libstdc++'s engine branches on each word's low bit in its twist; a Part 2 input is
// 16.7 million words, about a tenth of the grade.
class MersenneTwister64 {
public:
    static constexpr std::size_t kWords = 312;

    explicit MersenneTwister64(std::uint64_t seed) {
        state_[0] = seed;
        for (std::size_t i = 1; i < kWords; ++i) {
            state_[i] = 6364136223846793005ull * (state_[i - 1] ^ (state_[i - 1] >> 62)) + i;
        }
    }

    // The next kWords words of the stream, tempered.
    const std::array<std::uint64_t, kWords>& next() {
        constexpr std::size_t kShift = 156;  // m
        const auto twist = [&](std::size_t k, std::size_t next, std::size_t far) {
            const std::uint64_t y = (state_[k] & kUpper) | (state_[next] & ~kUpper);
            state_[k] = state_[far] ^ (y >> 1) ^ (kMatrix & (0 - (y & 1)));
        };
        for (std::size_t k = 0; k < kWords - kShift; ++k)
            twist(k, k + 1, k + kShift);
        for (std::size_t k = kWords - kShift; k < kWords - 1; ++k)
            twist(k, k + 1, k + kShift - kWords);
        twist(kWords - 1, 0, kShift - 1);
        for (std::size_t k = 0; k < kWords; ++k) {
            std::uint64_t z = state_[k];
            z ^= (z >> 29) & 0x5555555555555555ull;
            z ^= (z << 17) & 0x71d67fffeda60000ull;
            z ^= (z << 37) & 0xfff7eee000000000ull;
            z ^= z >> 43;
            out_[k] = z;
        }
        return out_;
    }

private:
    static constexpr std::uint64_t kUpper = ~std::uint64_t{0} << 31;
    static constexpr std::uint64_t kMatrix = 0xb5026f5aa96619e9ull;
    std::array<std::uint64_t, kWords> state_{};
    std::array<std::uint64_t, kWords> out_{};
};

}  // namespace

GRADER_WIDE_VECTORS std::vector<float> make_input(const InputSpec& input, std::uint64_t words,
                                                  std::uint64_t seed) {
    // Each word written once: a Part 2 input is 64 MiB, whose first touch is most of its cost.
    std::vector<float> values;
    switch (input.fill) {
        case InputSpec::Fill::constant:
            values.assign(words, static_cast<float>(input.value));
            break;
        case InputSpec::Fill::random_integers: {
            std::mt19937_64 rng(seed ^ 0x41dde11ULL);
            std::uniform_int_distribution<std::int64_t> value(
                0, static_cast<std::int64_t>(input.value));
            values.reserve(words);
            for (std::uint64_t i = 0; i < words; ++i) {
                values.push_back(static_cast<float>(value(rng)));
            }
            break;
        }
        case InputSpec::Fill::random_floats: {
            // Finite and distinct enough that any misplaced element shows: the bits of a random
            // 24-bit integer scaled into [-1000, 1000). The integer is what
            // std::uniform_int_distribution<std::int32_t>(-2^23, 2^23 - 1) draws from
            // std::mt19937_64: for a range of 2^24 from 64-bit words, libstdc++ (Lemire's
            // method, GCC 11 on) takes each word's top 24 bits and never draws again.
            MersenneTwister64 rng(seed ^ 0xf10a75ULL);
            values.reserve(words);
            std::array<float, MersenneTwister64::kWords> scaled;
            while (values.size() < words) {
                const auto& block = rng.next();
                const std::size_t n =
                    std::min<std::uint64_t>(MersenneTwister64::kWords, words - values.size());
                for (std::size_t k = 0; k < n; ++k) {
                    const auto drawn = static_cast<std::int32_t>(block[k] >> 40) - (1 << 23);
                    scaled[k] = static_cast<float>(drawn) / 8388.608f;
                }
                values.insert(values.end(), scaled.begin(), scaled.begin() + n);
            }
            break;
        }
    }
    return values;
}

GRADER_WIDE_VECTORS OutputComparison compare_outputs(const std::string& input,
                                                     const std::vector<float>& outputs,
                                                     const std::vector<float>& expected,
                                                     const OutputPlacement& placement) {
    OutputComparison result;
    result.input = input;
    result.ran = true;
    result.matrix = placement.layout.kind == OutputLayout::Kind::matrix;
    result.compared_blocks = placement.oracle_blocks;
    result.grid_blocks = placement.grid_blocks;
    // Where the oracle ran every block, an element it left unwritten is none the exercise
    // expects; where it ran a few, the poison beyond them says nothing.
    const bool oracle_sampled = placement.oracle_blocks > 0;
    bool expected_seen = false;
    const auto compare = [&](std::size_t e) {
        const float value = outputs[e];
        const float wanted = expected[e];
        const bool value_written = bits_of(value) != kOutputPoison;
        const bool wanted_written = bits_of(wanted) != kOutputPoison;
        if (!wanted_written && (value_written || !oracle_sampled)) {
            return;  // outside what the oracle's run covers, or nothing either wrote
        }
        ++result.elements;
        if (wanted_written && !expected_seen) {
            result.expected = wanted;
            expected_seen = true;
        }
        if (value == wanted && value_written && wanted_written) {
            return;
        }
        result.unwritten += value_written ? 0 : 1;
        if (!result.first_bad) {
            result.first_bad = e;
            if (result.matrix && placement.layout.columns > 0) {
                result.first_bad_row = e / placement.layout.columns;
                result.first_bad_column = e % placement.layout.columns;
            } else if (placement.threads_per_block > 0) {
                result.first_bad_block = e / placement.threads_per_block;
                result.first_bad_thread_in_block =
                    static_cast<std::uint32_t>(e % placement.threads_per_block);
            }
            result.first_bad_value = value;
            result.first_bad_wrote_nan = value_written && std::isnan(value);
            result.first_bad_unwritten = !value_written;
            result.first_bad_expected = wanted_written ? static_cast<double>(wanted) : std::nan("");
        }
        ++result.bad_elements;
    };
    // Most stretches of a run's outputs are either written and equal to the oracle's, whose
    // elements compare() only counts, or written where the oracle wrote nothing (on the
    // simulator, whose oracle ran a few blocks), which compare() passes over. Such a stretch is
    // found by a loop the compiler vectorises (no branch, integer flags) and taken whole. A Part
    // 2 run's 16.7 million elements took 27 ms one by one, 5 ms so.
    constexpr std::size_t kStretch = 1024;
    const std::size_t count = std::min(outputs.size(), expected.size());
    const float* values = outputs.data();
    const float* wanted = expected.data();
    for (std::size_t from = 0; from < count; from += kStretch) {
        const std::size_t to = std::min(count, from + kStretch);
        std::uint32_t not_agreeing = 0;
        std::uint32_t not_outside = 0;
        for (std::size_t e = from; e < to; ++e) {
            const auto value_unwritten =
                static_cast<std::uint32_t>(bits_of(values[e]) == kOutputPoison);
            const auto wanted_written =
                static_cast<std::uint32_t>(bits_of(wanted[e]) != kOutputPoison);
            not_agreeing |= static_cast<std::uint32_t>(values[e] != wanted[e]) | value_unwritten |
                            (wanted_written ^ 1u);
            not_outside |= value_unwritten | wanted_written;
        }
        if (not_agreeing == 0) {
            if (!expected_seen) {
                result.expected = wanted[from];
                expected_seen = true;
            }
            result.elements += to - from;
        } else if (not_outside != 0) {
            for (std::size_t e = from; e < to; ++e)
                compare(e);
        }
    }
    result.ok = result.elements > 0 && result.bad_elements == 0;
    return result;
}

}  // namespace grader
