#include "device/witness.hpp"

#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "common/kernel_ids.hpp"
#include "counters/counters.hpp"
#include "device/sim_device.hpp"

namespace grader {
namespace {

// The shared counts as the counters' note compares them.
counters::SharedMemoryCounts as_counter_counts(const SharedAccessCounts& counts) {
    counters::SharedMemoryCounts converted;
    converted.load_instructions = counts.load_requests;
    converted.load_wavefronts = counts.load_wavefronts;
    converted.store_instructions = counts.store_requests;
    converted.store_wavefronts = counts.store_wavefronts;
    return converted;
}

}  // namespace

SimulatorWitness witness_student(const Exercise& exercise, std::uint64_t seed,
                                 const CompiledKernel& compiled, const InputWords& words,
                                 const std::vector<int>& strides) {
    SimulatorWitness witness;
    std::string unreadable;
    const std::unique_ptr<SimulatedKernel> simulated = SimulatedKernel::load(
        exercise, seed, exercise.kernel(std::string(kStudentKernel)), compiled, unreadable);
    if (!simulated) {
        return witness;
    }
    InputSpec input = exercise.inputs.front();
    input.simulated_blocks = 1;
    for (const int stride : strides) {
        DeviceLaunch launch = simulated->run(input, words, stride);
        // What it saw before a stop too: a read racing a fill is why the simulator may fault
        // where a GPU reads stale words.
        for (Finding& finding : launch.findings) {
            finding.witness = true;
            witness.findings[stride].push_back(std::move(finding));
        }
        if (launch.end != DeviceLaunch::End::completed) {
            continue;
        }
        if (launch.counts) {
            witness.counts[stride] = *launch.counts;
        }
    }
    return witness;
}

std::string count_difference_note(const SharedAccessCounts& hardware, std::uint64_t grid_blocks,
                                  const SharedAccessCounts& witness) {
    return counters::difference_note(as_counter_counts(hardware), grid_blocks,
                                     as_counter_counts(witness), witness.blocks);
}

}  // namespace grader
