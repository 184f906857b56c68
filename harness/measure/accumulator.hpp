#pragma once

// The accumulator checks' arithmetic, on the host: what every thread must hold, and the first
// thread that did not.

#include <cstdint>
#include <vector>

#include "model/measurements.hpp"

namespace grader {

// The probe's thread with in-block index tid reads words (tid * stride + k) mod tile_words for
// k < reads. Returns, for each tid < block_size, the exact sum of those words of `tile` (in
// double: with small integers the float sum on the GPU is exact too). Strides wrap the way the
// kernel's unsigned arithmetic does, which mod a power of two is plain modular arithmetic.
std::vector<double> expected_sums(const std::vector<float>& tile, std::uint32_t block_size,
                                  int stride, std::uint32_t reads);

// Compares every output with expected[t % block_size], exactly (a NaN never matches).
AccumulatorResult compare_outputs(const std::vector<float>& outputs,
                                  const std::vector<double>& expected_by_tid,
                                  std::uint32_t block_size);

// A tile of random integers 0..max_value from the seed: the hidden input.
std::vector<float> hidden_tile(std::uint32_t words, int max_value, std::uint64_t seed);

}  // namespace grader
