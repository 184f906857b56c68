#include "measure/outputs.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>

namespace grader {
namespace {

std::uint32_t bits_of(float value) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

}  // namespace

std::vector<float> make_input(const InputSpec& input, std::uint64_t words, std::uint64_t seed) {
    std::vector<float> values(words, static_cast<float>(input.value));
    switch (input.fill) {
        case InputSpec::Fill::constant:
            break;
        case InputSpec::Fill::random_integers: {
            std::mt19937_64 rng(seed ^ 0x41dde11ULL);
            std::uniform_int_distribution<std::int64_t> value(
                0, static_cast<std::int64_t>(input.value));
            for (auto& word : values) {
                word = static_cast<float>(value(rng));
            }
            break;
        }
        case InputSpec::Fill::random_floats: {
            // Finite and distinct enough that any misplaced element shows: the bits of a random
            // 24-bit integer scaled into [-1000, 1000).
            std::mt19937_64 rng(seed ^ 0xf10a75ULL);
            std::uniform_int_distribution<std::int32_t> value(-(1 << 23), (1 << 23) - 1);
            for (auto& word : values) {
                word = static_cast<float>(value(rng)) / 8388.608f;
            }
            break;
        }
    }
    return values;
}

OutputComparison compare_outputs(const std::string& input, const std::vector<float>& outputs,
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
    const std::size_t count = std::min(outputs.size(), expected.size());
    for (std::size_t e = 0; e < count; ++e) {
        const float value = outputs[e];
        const float wanted = expected[e];
        const bool value_written = bits_of(value) != kOutputPoison;
        const bool wanted_written = bits_of(wanted) != kOutputPoison;
        if (!wanted_written && (value_written || !oracle_sampled)) {
            continue;  // outside what the oracle's run covers, or nothing either wrote
        }
        ++result.elements;
        if (wanted_written && !expected_seen) {
            result.expected = wanted;
            expected_seen = true;
        }
        if (value == wanted && value_written && wanted_written) {
            continue;
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
    }
    result.ok = result.elements > 0 && result.bad_elements == 0;
    return result;
}

}  // namespace grader
