// The plain values of counters.hpp: degrees, totals, and the note for a PTX/SASS difference.

#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "counters/counters.hpp"

namespace grader::counters {
namespace {

double ratio(std::uint64_t numerator, std::uint64_t denominator) {
    return denominator == 0 ? 0.0
                            : static_cast<double>(numerator) / static_cast<double>(denominator);
}

// "17,301,504"
std::string grouped(std::uint64_t value) {
    std::string digits = std::to_string(value);
    for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3) {
        digits.insert(static_cast<std::size_t>(at), ",");
    }
    return digits;
}

std::string pair_text(std::uint64_t instructions, std::uint64_t wavefronts) {
    return grouped(instructions) + " instructions in " + grouped(wavefronts) + " wavefronts";
}

// `value` of `blocks` blocks, at the scale of `grid` blocks.
std::uint64_t at_grid_scale(std::uint64_t value, std::uint64_t blocks, std::uint64_t grid) {
    if (blocks == 0 || blocks == grid) {
        return value;
    }
    return static_cast<std::uint64_t>(std::llround(
        static_cast<double>(value) * static_cast<double>(grid) / static_cast<double>(blocks)));
}

// The note for one kind of access (`kind` is "load" or "store"), empty where both agree: the
// simulator's count, of `simulated_blocks` of the grid, compared at the grid's scale.
std::string kind_note(const char* kind, std::uint64_t gpu_instructions,
                      std::uint64_t gpu_wavefronts, std::uint64_t ptx_instructions,
                      std::uint64_t ptx_wavefronts, std::uint64_t grid_blocks,
                      std::uint64_t simulated_blocks) {
    const std::uint64_t scaled_instructions =
        at_grid_scale(ptx_instructions, simulated_blocks, grid_blocks);
    const std::uint64_t scaled_wavefronts =
        at_grid_scale(ptx_wavefronts, simulated_blocks, grid_blocks);
    if (gpu_instructions == scaled_instructions && gpu_wavefronts == scaled_wavefronts) {
        return {};
    }
    const bool scaled = simulated_blocks != 0 && simulated_blocks != grid_blocks;
    const std::string counts =
        "the GPU counted " + pair_text(gpu_instructions, gpu_wavefronts) + " of shared " + kind +
        "s over the grid's " + grouped(grid_blocks) + " blocks where the simulator counted " +
        (scaled ? pair_text(ptx_instructions, ptx_wavefronts) + " in the PTX of " +
                      grouped(simulated_blocks) + " of them, " +
                      pair_text(scaled_instructions, scaled_wavefronts) + " at the grid's scale"
                : pair_text(ptx_instructions, ptx_wavefronts) + " in the PTX");
    if (gpu_instructions < scaled_instructions && gpu_wavefronts == scaled_wavefronts) {
        return counts +
               ": ptxas merged neighbouring accesses into wider ones, so there are fewer "
               "instructions for the same wavefronts and no access's degree changed";
    }
    if (gpu_instructions < scaled_instructions) {
        return counts +
               ": ptxas merged neighbouring accesses into wider ones (two 32-bit loads into one "
               "64-bit load, say), whose wavefronts follow the wider access's rule, or the "
               "blocks the simulator ran do more than the others; compare degrees line by line, "
               "not totals";
    }
    if (gpu_instructions > scaled_instructions) {
        return counts +
               ": ptxas split or repeated some of the PTX's shared accesses, or the blocks the "
               "simulator ran do less than the others";
    }
    return counts +
           ": the same instructions, but the GPU served them in other wavefronts than "
           "the simulator's bank model";
}

}  // namespace

double SharedMemoryCounts::load_degree() const {
    return load_bank_conflicts < load_wavefronts
               ? ratio(load_wavefronts, load_wavefronts - load_bank_conflicts)
               : 0.0;
}
double SharedMemoryCounts::store_degree() const {
    return store_bank_conflicts < store_wavefronts
               ? ratio(store_wavefronts, store_wavefronts - store_bank_conflicts)
               : 0.0;
}

bool SharedMemoryCounts::operator==(const SharedMemoryCounts& other) const {
    return load_instructions == other.load_instructions &&
           load_wavefronts == other.load_wavefronts &&
           load_bank_conflicts == other.load_bank_conflicts &&
           store_instructions == other.store_instructions &&
           store_wavefronts == other.store_wavefronts &&
           store_bank_conflicts == other.store_bank_conflicts &&
           global_load_requests == other.global_load_requests &&
           global_load_sectors == other.global_load_sectors &&
           global_store_requests == other.global_store_requests &&
           global_store_sectors == other.global_store_sectors;
}

double LineCounts::degree() const {
    return ratio(wavefronts, ideal_wavefronts);
}

SharedMemoryCounts SourceLineCounts::totals() const {
    SharedMemoryCounts totals;
    for (const LineCounts& line : lines) {
        const std::uint64_t conflicts =
            line.wavefronts > line.ideal_wavefronts ? line.wavefronts - line.ideal_wavefronts : 0;
        if (line.store) {
            totals.store_instructions += line.instructions;
            totals.store_wavefronts += line.wavefronts;
            totals.store_bank_conflicts += conflicts;
        } else {
            totals.load_instructions += line.instructions;
            totals.load_wavefronts += line.wavefronts;
            totals.load_bank_conflicts += conflicts;
        }
    }
    return totals;
}

std::string difference_note(const SharedMemoryCounts& hardware, std::uint64_t grid_blocks,
                            const SharedMemoryCounts& simulated, std::uint64_t simulated_blocks) {
    const std::string loads = kind_note("load", hardware.load_instructions,
                                        hardware.load_wavefronts, simulated.load_instructions,
                                        simulated.load_wavefronts, grid_blocks, simulated_blocks);
    const std::string stores = kind_note("store", hardware.store_instructions,
                                         hardware.store_wavefronts, simulated.store_instructions,
                                         simulated.store_wavefronts, grid_blocks, simulated_blocks);
    if (loads.empty() && stores.empty()) {
        return {};
    }
    std::string note = loads.empty() ? stores : stores.empty() ? loads : loads + "; " + stores;
    note[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(note[0])));
    return note + ".";
}

}  // namespace grader::counters
