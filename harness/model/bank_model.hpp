#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
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

// How a warp's 32 lanes lie in a tile narrower than a warp: in rows of lanes_per_row consecutive
// lanes, the rows row_pitch words apart. A warp reading a column of tile[16][17] (lane L at word
// 17 * (L % 16) + L / 16) spans two rows, 16 lanes a row, pitch 17: the two rows' words share a
// bank although 17 is coprime with 32, since the second row starts one word on. Zero where the
// lanes are one arithmetic run (one row, or a column of a tile as wide as the warp), a broadcast,
// or no such rows.
struct WarpRowSpan {
    std::uint32_t lanes_per_row = 0;
    std::uint32_t row_pitch = 0;
};

// The span of one warp-wide 32-bit access: words[L] is lane L's word; only full warps are judged.
inline WarpRowSpan warp_row_span(const std::array<std::uint64_t, 32>& words, std::uint32_t active) {
    if (active != 0xffffffffu) {
        return {};
    }
    const auto step = [&](unsigned a, unsigned b) {
        return static_cast<std::int64_t>(words[b]) - static_cast<std::int64_t>(words[a]);
    };
    // One run over all 32 lanes: one row (or one column) of a tile at least as wide as a warp.
    bool one_run = true;
    for (unsigned lane = 1; lane < 32 && one_run; ++lane) {
        one_run = step(lane - 1, lane) == step(0, 1);
    }
    if (one_run) {
        return {};
    }
    for (const unsigned lanes : {16u, 8u, 4u}) {
        const std::int64_t within = step(0, 1);      // from lane to lane in a row
        const std::int64_t across = step(0, lanes);  // from row to row
        bool fits = within != 0 && across != 0;
        for (unsigned lane = 1; lane < 32 && fits; ++lane) {
            fits = lane % lanes == 0 ? step(lane - lanes, lane) == across
                                     : step(lane - 1, lane) == within;
        }
        if (fits) {
            // The pitch is the larger step: lanes walk a column (within is the pitch) or a row
            // (across is).
            const std::int64_t pitch = std::max(std::abs(within), std::abs(across));
            return {lanes, static_cast<std::uint32_t>(pitch)};
        }
    }
    return {};
}

}  // namespace grader
