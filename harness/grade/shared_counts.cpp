#include "grade/shared_counts.hpp"

#include <cxxabi.h>

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "common/kernel_ids.hpp"
#include "grade/launches.hpp"
#include "grade/stage.hpp"
#include "model/finding.hpp"

namespace grader {

void SharedCounts::start_witness(const Exercise& exercise, std::uint64_t seed,
                                 const CompiledKernel& student, const InputWords& words,
                                 const GradePlan& plan) {
    std::vector<int> strides;
    for (const std::size_t index : plan.student_cases()) {
        strides.push_back(plan.cases[index].stride);
    }
    witness_ = std::async(std::launch::async, [&exercise, seed, &student, words, strides] {
        return witness_student(exercise, seed, student, words, strides);
    });
}

std::optional<HardwareCounts> SharedCounts::count(Device& device, const GradePlan& plan,
                                                  const RunSlots& slots, GradeStages& stages) {
    const std::vector<LaunchCase>& counted = plan.launches.counted;
    if (counted.empty()) {
        return std::nullopt;
    }
    const Stage stage{Stage::Kind::count, std::string(kStudentKernel)};
    stages.enter_students(stage, slots.count(), stages.run_limit());
    device.reload(plan.launches.reloaded);
    HardwareCounts hardware =
        device.count(counted, *plan.launches.timing_input, plan.launches.geometry);
    if (hardware.end != DeviceLaunch::End::completed) {
        stages.stop(stage, ending_of(hardware.end),
                    "a kernel failed while its shared accesses were counted: " + hardware.message);
        return std::nullopt;
    }
    return hardware;
}

void SharedCounts::merge(const HardwareCounts& hardware, std::uint64_t grid_blocks,
                         std::vector<KernelRun>& runs, Environment& environment,
                         ProgressSink& sink) {
    std::vector<KernelRun*> counted;
    for (KernelRun& run : runs) {
        if (run.kernel == kStudentKernel) {
            counted.push_back(&run);
        }
    }
    const SimulatorWitness witness = witness_.valid() ? witness_.get() : SimulatorWitness{};
    for (KernelRun* run : counted) {
        const auto found = witness.findings.find(run->stride);
        if (found == witness.findings.end()) {
            continue;
        }
        run->findings.insert(run->findings.end(), found->second.begin(), found->second.end());
        sink.run(*run);
    }
    if (!hardware.counted) {
        environment.notes.push_back(
            "The GPU's own counters could not count here (" + hardware.reason +
            "): the counted degrees are the simulator's, of the same source (PTX-level).");
    } else {
        environment.notes.push_back("Counted degrees are the GPU's own (" + hardware.description +
                                    ").");
    }
    for (std::size_t i = 0; i < counted.size(); ++i) {
        KernelRun& run = *counted[i];
        const auto sim = witness.counts.find(run.stride);
        if (hardware.counted) {
            run.counts = hardware.counts[i];
            run.count_source = "hardware";
            if (sim != witness.counts.end()) {
                // The GPU counted every block of the grid; the simulator, the blocks it ran,
                // compared at the grid's scale. Its lines say where a conflict is, which the
                // GPU's launch totals cannot.
                run.count_note =
                    count_difference_note(hardware.counts[i], grid_blocks, sim->second);
                run.witness = sim->second;
            }
        } else if (sim != witness.counts.end()) {
            run.counts = sim->second;
            run.count_source = "simulator";
        }
        sink.run(run);
    }
    sink.environment(environment);
}

void SharedCounts::wait() {
    if (witness_.valid()) {
        witness_.wait();
    }
}

}  // namespace grader
