#pragma once

// The wavefront rule for one warp-wide shared-memory access, documented (and checked against
// Nsight Compute) at SharedAccessStats in sim.hpp: the cost of a request is the larger of
//  - the bank bound: the most DISTINCT 32-bit words any one bank (word % 32) is asked for, lanes
//    asking for one word sharing a broadcast;
//  - the data bound: the bytes the access moves at 128 bytes per wavefront, halved when lane
//    pairs (lane^1 or lane^2) share addresses, which is how 64/128-bit accesses of uniform
//    addresses pack into the hardware's half- and quarter-warp phases.

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

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

// bank_cost of the requests a launch repeats, remembered. A request's cost depends only on its
// lanes, its width and where its words lie relative to one another: moving every word by one
// amount moves each bank's words to another bank together, which changes no count. A loop's
// access at stride s has few such shapes (the probe's: one per lane a tile's wrap-around begins
// at), whatever its base address, warp or block; the cache holds them by that shape.
class BankCostCache {
public:
    BankCostCache();
    BankCost cost(std::uint32_t lanes, const std::array<std::uint64_t, 32>& offsets,
                  std::uint32_t bytes_per_lane);
    // The same, looking first where the caller's previous request was found (an instruction's
    // requests mostly repeat its previous shape) and updating that.
    BankCost cost(std::uint32_t lanes, const std::array<std::uint64_t, 32>& offsets,
                  std::uint32_t bytes_per_lane, std::uint32_t& last_slot);

private:
    struct Shape {
        std::uint32_t lanes = 0;
        std::uint32_t bytes_per_lane = 0;  // 0: empty
        // Each active lane's word less the first's; 0 for the others. Not initialised here: a
        // lookup fills it lane by lane.
        std::array<std::uint32_t, 32> words;
        bool same(const Shape& other) const;
    };
    struct Slot {
        Shape shape;
        BankCost cost;
    };
    static constexpr std::size_t kSlots = 512;  // a power of two
    std::vector<Slot> slots_;
};

}  // namespace grader::sim
