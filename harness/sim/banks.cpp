#include "sim/banks.hpp"

#include <algorithm>

namespace grader::sim {

namespace {

unsigned ctz(std::uint32_t m) {
    return static_cast<unsigned>(__builtin_ctz(m));
}
unsigned popcount(std::uint32_t m) {
    return static_cast<unsigned>(__builtin_popcount(m));
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
    for (std::uint32_t m = lanes; m != 0; m &= m - 1) {
        const std::uint64_t first = offsets[ctz(m)] / 4;
        for (unsigned k = 0; k < words_per_lane; ++k) {
            const std::uint64_t word = first + k;
            const std::uint32_t bit = 1u << (word & 31);
            clash = clash || (banks_seen & bit) != 0;
            banks_seen |= bit;
            words[n++] = word;
        }
    }
    std::uint8_t count[32] = {};
    if (!clash) {
        for (unsigned k = 0; k < n; ++k)
            count[words[k] & 31] = 1;
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
    std::uint32_t bank_bound = 0;
    for (unsigned bank = 0; bank < 32; ++bank)
        bank_bound = std::max<std::uint32_t>(bank_bound, count[bank]);

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
        for (std::uint32_t m = lanes; m != 0; m &= m - 1) {
            LaneAccess& access = table->lanes[ctz(m)];
            for (std::uint32_t other = lanes; other != 0; other &= other - 1) {
                if (table->lanes[ctz(other)].bank == access.bank)
                    access.bank_mates |= 1u << ctz(other);
            }
        }
    }
    BankCost cost;
    cost.degree = bank_bound;
    cost.ideal = data_bound;
    cost.wavefronts = std::max(bank_bound, data_bound);
    return cost;
}

}  // namespace grader::sim
