// The plain values of counters.hpp: degrees, totals, and the note for a PTX/SASS difference.

#include <cctype>
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

// The note for one kind of access (`kind` is "load" or "store"), empty where both agree.
std::string kind_note(const char* kind, std::uint64_t gpu_instructions,
                      std::uint64_t gpu_wavefronts, std::uint64_t ptx_instructions,
                      std::uint64_t ptx_wavefronts) {
    if (gpu_instructions == ptx_instructions && gpu_wavefronts == ptx_wavefronts) {
        return {};
    }
    const std::string counts = "the GPU counted " + pair_text(gpu_instructions, gpu_wavefronts) +
                               " of shared " + kind + "s where the simulator counted " +
                               pair_text(ptx_instructions, ptx_wavefronts) + " in the PTX";
    if (gpu_instructions < ptx_instructions && gpu_wavefronts == ptx_wavefronts) {
        return counts +
               ": ptxas merged neighbouring accesses into wider ones, so there are fewer "
               "instructions for the same wavefronts and no access's degree changed";
    }
    if (gpu_instructions < ptx_instructions) {
        return counts +
               ": ptxas merged neighbouring accesses into wider ones (two 32-bit loads into one "
               "64-bit load, say), whose wavefronts follow the wider access's rule, so compare "
               "degrees line by line, not totals";
    }
    if (gpu_instructions > ptx_instructions) {
        return counts + ": ptxas split or repeated some of the PTX's shared accesses";
    }
    return counts +
           ": the same instructions, but the GPU served them in other wavefronts than "
           "the simulator's bank model";
}

}  // namespace

double SharedMemoryCounts::load_degree() const {
    return ratio(load_wavefronts, load_instructions);
}
double SharedMemoryCounts::store_degree() const {
    return ratio(store_wavefronts, store_instructions);
}

bool SharedMemoryCounts::operator==(const SharedMemoryCounts& other) const {
    return load_instructions == other.load_instructions &&
           load_wavefronts == other.load_wavefronts &&
           load_bank_conflicts == other.load_bank_conflicts &&
           store_instructions == other.store_instructions &&
           store_wavefronts == other.store_wavefronts &&
           store_bank_conflicts == other.store_bank_conflicts;
}

double LineCounts::degree() const {
    return ratio(wavefronts, instructions);
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

std::string difference_note(const SharedMemoryCounts& hardware,
                            const SharedMemoryCounts& simulated) {
    const std::string loads =
        kind_note("load", hardware.load_instructions, hardware.load_wavefronts,
                  simulated.load_instructions, simulated.load_wavefronts);
    const std::string stores =
        kind_note("store", hardware.store_instructions, hardware.store_wavefronts,
                  simulated.store_instructions, simulated.store_wavefronts);
    if (loads.empty() && stores.empty()) {
        return {};
    }
    std::string note = loads.empty() ? stores : stores.empty() ? loads : loads + "; " + stores;
    note[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(note[0])));
    return note + ".";
}

}  // namespace grader::counters
