#include "measure/accumulator.hpp"

#include <cmath>
#include <random>

namespace grader {

std::vector<double> expected_sums(const std::vector<float>& tile, std::uint32_t block_size,
                                  int stride, std::uint32_t reads) {
    const std::uint64_t words = tile.size();
    std::vector<double> sums(block_size, 0.0);
    if (words == 0) {
        return sums;
    }
    // Prefix sums over the tile make each thread's circular window O(1).
    std::vector<double> prefix(words + 1, 0.0);
    for (std::uint64_t w = 0; w < words; ++w) {
        prefix[w + 1] = prefix[w] + static_cast<double>(tile[w]);
    }
    const double whole = prefix[words];
    const auto window = [&](std::uint64_t start, std::uint64_t length) {
        double sum = whole * static_cast<double>(length / words);
        length %= words;
        const std::uint64_t end = start + length;
        if (end <= words) {
            sum += prefix[end] - prefix[start];
        } else {
            sum += (whole - prefix[start]) + prefix[end - words];
        }
        return sum;
    };
    for (std::uint32_t tid = 0; tid < block_size; ++tid) {
        // The kernel computes tid * (unsigned)stride in 32 bits; the wrap keeps the low bits.
        const std::uint32_t base =
            static_cast<std::uint32_t>(tid) * static_cast<std::uint32_t>(stride);
        sums[tid] = window(base % words, reads);
    }
    return sums;
}

AccumulatorResult compare_outputs(const std::vector<float>& outputs,
                                  const std::vector<double>& expected_by_tid,
                                  std::uint32_t block_size) {
    AccumulatorResult result;
    result.ran = true;
    result.threads = outputs.size();
    result.expected = expected_by_tid.empty() ? 0.0 : expected_by_tid.front();
    for (std::uint64_t t = 0; t < outputs.size(); ++t) {
        const double expected = expected_by_tid[t % block_size];
        const double value = outputs[t];
        if (value == expected) {
            continue;
        }
        if (!result.first_bad_thread) {
            result.first_bad_thread = t;
            result.first_bad_block = static_cast<std::uint32_t>(t / block_size);
            result.first_bad_thread_in_block = static_cast<std::uint32_t>(t % block_size);
            result.first_bad_value = value;
            result.first_bad_expected = expected;
        }
        ++result.bad_threads;
    }
    result.ok = result.bad_threads == 0;
    return result;
}

std::vector<float> hidden_tile(std::uint32_t words, int max_value, std::uint64_t seed) {
    std::mt19937_64 rng(seed ^ 0x41dde11ULL);
    std::uniform_int_distribution<int> value(0, max_value);
    std::vector<float> tile(words);
    for (auto& word : tile) {
        word = static_cast<float>(value(rng));
    }
    return tile;
}

}  // namespace grader
