#pragma once

#include <cstdint>
#include <numeric>

namespace grader {

// Shared memory has 32 banks of 32-bit words on every architecture this course targets
// (compute capability 5.x and newer): word w lives in bank w mod 32.
inline constexpr unsigned kBanks = 32;

// Lane L of a warp reading word L * stride lands in bank (L * stride) mod banks. Two lanes share
// a bank every banks / gcd(stride, banks) lanes, so each occupied bank is asked for gcd(stride,
// banks) distinct words: that is the number of serialized requests, the conflict degree.
constexpr unsigned conflict_degree(std::int64_t stride, unsigned banks = kBanks) {
    const std::int64_t magnitude = stride < 0 ? -stride : stride;
    if (magnitude == 0) {
        return 1;  // every lane reads the same word: a broadcast, one request
    }
    return static_cast<unsigned>(std::gcd(magnitude, static_cast<std::int64_t>(banks)));
}

static_assert(conflict_degree(1) == 1);
static_assert(conflict_degree(2) == 2);
static_assert(conflict_degree(3) == 1);
static_assert(conflict_degree(8) == 8);
static_assert(conflict_degree(16) == 16);
static_assert(conflict_degree(32) == 32);
static_assert(conflict_degree(33) == 1);
static_assert(conflict_degree(64) == 32);

}  // namespace grader
