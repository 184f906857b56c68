#pragma once

// The wavefront rule for one warp-wide shared-memory access, documented (and checked against
// Nsight Compute) at SharedAccessStats in sim.hpp: the cost of a request is the larger of
//  - the bank bound: the most DISTINCT 32-bit words any one bank (word % 32) is asked for, lanes
//    asking for one word sharing a broadcast;
//  - the data bound: the bytes the access moves at 128 bytes per wavefront, halved when lane
//    pairs (lane^1 or lane^2) share addresses, which is how 64/128-bit accesses of uniform
//    addresses pack into the hardware's half- and quarter-warp phases.

#include <array>
#include <cstdint>

#include "sim/sim.hpp"

namespace grader::sim {

struct BankCost {
    std::uint32_t degree = 0;      // the bank bound
    std::uint32_t ideal = 0;       // the data bound: what Nsight counts as ideal wavefronts
    std::uint32_t wavefronts = 0;  // max(degree, ideal)
};

// `lanes`: a bit per active lane; `offsets`: each active lane's byte offset in the block's shared
// memory (aligned to bytes_per_lane); bytes_per_lane: 1, 2, 4, 8 or 16. Where `table` is given,
// its lanes get each active lane's word, bank and bank mates (block, warp and the totals are the
// caller's to fill).
BankCost bank_cost(std::uint32_t lanes, const std::array<std::uint64_t, 32>& offsets,
                   std::uint32_t bytes_per_lane, WarpAccessTable* table = nullptr);

}  // namespace grader::sim
