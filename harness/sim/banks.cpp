#include "sim/banks.hpp"

#include <algorithm>
#include <memory>

#include "common/wide_vectors.hpp"

namespace grader::sim {

namespace {

unsigned ctz(std::uint32_t m) {
    return static_cast<unsigned>(__builtin_ctz(m));
}
// Without a popcnt instruction in the target, __builtin_popcount is a call: a whole warp, the
// usual case, is counted without it.
unsigned popcount(std::uint32_t m) {
    return m == ~0u ? 32 : static_cast<unsigned>(__builtin_popcount(m));
}

}  // namespace

BankCost bank_cost(std::uint32_t lanes, const std::array<std::uint64_t, 32>& offsets,
                   std::uint32_t bytes_per_lane, WarpAccessTable* table) {
    const unsigned words_per_lane = std::max<std::uint32_t>(1, bytes_per_lane / 4);
    // The words asked for; a clash of banks is rare, so check for one first.
    std::uint64_t words[128];
    unsigned n = 0;
    std::uint32_t banks_seen = 0;
    bool clash = false;
    std::uint64_t lowest = ~0ull;
    std::uint64_t highest = 0;
    const auto note = [&](std::uint64_t word) {
        const std::uint32_t bit = 1u << (word & 31);
        clash = clash || (banks_seen & bit) != 0;
        banks_seen |= bit;
        lowest = std::min(lowest, word);
        highest = std::max(highest, word);
        words[n++] = word;
    };
    if (words_per_lane == 1) {
        for (std::uint32_t m = lanes; m != 0; m &= m - 1)
            note(offsets[ctz(m)] / 4);
    } else {
        for (std::uint32_t m = lanes; m != 0; m &= m - 1) {
            const std::uint64_t first = offsets[ctz(m)] / 4;
            for (unsigned k = 0; k < words_per_lane; ++k)
                note(first + k);
        }
    }
    std::uint8_t count[32] = {};
    std::uint32_t bank_bound = n > 0 ? 1 : 0;
    if (!clash) {
        for (unsigned k = 0; k < n; ++k)
            count[words[k] & 31] = 1;
    } else {
        if ((highest >> 5) - (lowest >> 5) < 64) {
            // Distinct words per bank: one bit per row of 32 words, rows counted from the lowest
            // asked for (every access within 8 KiB: the tiles of the course's kernels).
            std::uint64_t rows[32] = {};
            const std::uint64_t first_row = lowest >> 5;
            for (unsigned k = 0; k < n; ++k) {
                const unsigned bank = static_cast<unsigned>(words[k] & 31);
                const std::uint64_t bit = 1ull << ((words[k] >> 5) - first_row);
                count[bank] = static_cast<std::uint8_t>(count[bank] + ((rows[bank] & bit) == 0));
                rows[bank] |= bit;
            }
        } else {
            // Distinct words per bank: sort (lanes usually ask in order), skip repeats.
            for (unsigned k = 1; k < n; ++k) {
                const std::uint64_t word = words[k];
                unsigned j = k;
                while (j > 0 && words[j - 1] > word) {
                    words[j] = words[j - 1];
                    --j;
                }
                words[j] = word;
            }
            for (unsigned k = 0; k < n; ++k) {
                if (k == 0 || words[k] != words[k - 1])
                    ++count[words[k] & 31];
            }
        }
        for (unsigned bank = 0; bank < 32; ++bank)
            bank_bound = std::max<std::uint32_t>(bank_bound, count[bank]);
    }

    const std::uint32_t returned = popcount(lanes) * std::max<std::uint32_t>(bytes_per_lane, 4);
    std::uint32_t data_bound = std::max<std::uint32_t>(1, (returned + 127) / 128);
    if (bytes_per_lane > 4 && data_bound > 1) {
        auto paired = [&](unsigned distance) {
            for (std::uint32_t m = lanes; m != 0; m &= m - 1) {
                const unsigned lane = ctz(m);
                const unsigned partner = lane ^ distance;
                if (((lanes >> partner) & 1) && offsets[partner] != offsets[lane])
                    return false;
            }
            return true;
        };
        if (paired(1) || paired(2))
            data_bound = std::max<std::uint32_t>(1, data_bound / 2);
    }
    if (table != nullptr) {
        for (std::uint32_t m = lanes; m != 0; m &= m - 1) {
            const unsigned lane = ctz(m);
            LaneAccess& access = table->lanes[lane];
            access.active = true;
            access.byte_offset = offsets[lane];
            access.word = offsets[lane] / 4;
            access.bank = static_cast<std::uint32_t>(access.word & 31);
            access.distinct_words_in_bank = count[access.bank];
        }
        // A lane's bank mates: the lanes served in the same wavefront at the fewest (the whole
        // warp for 32-bit accesses, its half for 64-bit, its quarter for 128-bit) whose words
        // share one of its banks.
        const unsigned group = lanes_per_wavefront(bytes_per_lane);
        for (std::uint32_t m = lanes; m != 0; m &= m - 1) {
            const unsigned lane = ctz(m);
            LaneAccess& access = table->lanes[lane];
            for (std::uint32_t other = lanes; other != 0; other &= other - 1) {
                const unsigned mate = ctz(other);
                if (mate / group != lane / group)
                    continue;
                const std::uint32_t apart = (table->lanes[mate].bank - access.bank) & 31;
                if (apart < words_per_lane || 32 - apart < words_per_lane)
                    access.bank_mates |= 1u << mate;
            }
        }
        table->bytes_per_lane = bytes_per_lane;
        table->ideal_wavefronts = data_bound;
    }
    BankCost cost;
    cost.degree = bank_bound;
    cost.ideal = data_bound;
    cost.wavefronts = std::max(bank_bound, data_bound);
    return cost;
}

BankCostCache::BankCostCache() : slots_(kSlots) {}

// A loop the compiler vectorises (std::array's == is a call to memcmp).
bool BankCostCache::Shape::same(const Shape& other) const {
    std::uint32_t differ = (lanes ^ other.lanes) | (bytes_per_lane ^ other.bytes_per_lane);
    for (unsigned lane = 0; lane < 32; ++lane)
        differ |= words[lane] ^ other.words[lane];
    return differ == 0;
}

BankCost BankCostCache::cost(std::uint32_t lanes, const std::array<std::uint64_t, 32>& offsets,
                             std::uint32_t bytes_per_lane) {
    std::uint32_t slot = 0;
    return cost(lanes, offsets, bytes_per_lane, slot);
}

GRADER_WIDE_VECTORS BankCost BankCostCache::cost(std::uint32_t lanes,
                                                 const std::array<std::uint64_t, 32>& offsets,
                                                 std::uint32_t bytes_per_lane,
                                                 std::uint32_t& last_slot) {
    if (lanes == 0)
        return bank_cost(lanes, offsets, bytes_per_lane);
    // Filled lane by lane, not zero-initialised first: the compiler's memset of it cost as much
    // as the rest of the lookup.
    Shape shape;
    shape.lanes = lanes;
    shape.bytes_per_lane = bytes_per_lane;
    const std::uint64_t first = offsets[ctz(lanes)] / 4;
    // Words past 2^32 would alias in 32-bit differences: such a request is costed afresh.
    std::uint64_t high = 0;
    if (lanes == ~0u) {
        for (unsigned lane = 0; lane < 32; ++lane) {
            const std::uint64_t word = offsets[lane] / 4;
            high |= word;
            shape.words[lane] = static_cast<std::uint32_t>(word - first);
        }
    } else {
        for (unsigned lane = 0; lane < 32; ++lane) {
            std::uint64_t word = first;
            if ((lanes >> lane) & 1)
                word = offsets[lane] / 4;
            high |= word;
            shape.words[lane] = static_cast<std::uint32_t>(word - first);
        }
    }
    if ((high >> 32) != 0)
        return bank_cost(lanes, offsets, bytes_per_lane);
    if (slots_[last_slot].shape.same(shape))
        return slots_[last_slot].cost;
    std::uint32_t hash = lanes * 0x9e3779b1u ^ bytes_per_lane;
    for (unsigned lane = 0; lane < 32; ++lane)
        hash += shape.words[lane] * (0x85ebca6bu + 2 * lane);
    hash ^= hash >> 15;
    hash *= 0x2c1b3c6du;
    hash ^= hash >> 13;
    last_slot = hash & (kSlots - 1);
    Slot& slot = slots_[last_slot];
    if (!slot.shape.same(shape)) {
        slot.shape = shape;
        slot.cost = bank_cost(lanes, offsets, bytes_per_lane);
    }
    return slot.cost;
}

}  // namespace grader::sim
