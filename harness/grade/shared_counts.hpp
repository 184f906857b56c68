#pragma once

// The student's shared-memory traffic counted where the device does not count as it runs (a GPU):
// the hardware's own count after timing, and beside it the simulator's witness of the same source
// (device/witness.hpp), made on the CPU while the GPU times. Where the device counts as it runs
// (the simulator), the correctness runs' counts stand and nothing here runs.

#include <cstdint>
#include <future>
#include <optional>
#include <vector>

#include "compile/compile.hpp"
#include "device/device.hpp"
#include "device/witness.hpp"
#include "exercise/exercise.hpp"
#include "grade/plan.hpp"
#include "grade/protocol.hpp"
#include "grade/run_slots.hpp"
#include "grade/stages.hpp"
#include "model/measurements.hpp"

namespace grader {

class SharedCounts {
public:
    // The witness of the student's kernel at each of its strides, on a thread: `student` and
    // `words` are read until wait().
    void start_witness(const Exercise& exercise, std::uint64_t seed, const CompiledKernel& student,
                       const InputWords& words, const GradePlan& plan);
    // The hardware's count of the plan's counted launches, after timing. Nothing where nothing
    // is counted, or where a kernel failed while counted (the grade is then stopped).
    std::optional<HardwareCounts> count(Device& device, const GradePlan& plan,
                                        const RunSlots& slots, GradeStages& stages);
    // Outside the device's lock: the hardware's counts on the student's runs (runs[i] is the
    // plan's cases[i]), with the witness's races, and its count where the counters could not
    // count; what counted, in the environment's notes.
    void merge(const HardwareCounts& hardware, std::uint64_t grid_blocks,
               std::vector<KernelRun>& runs, Environment& environment, ProgressSink& sink);
    // The witness has stopped reading what it was given.
    void wait();

private:
    std::future<SimulatorWitness> witness_;
};

}  // namespace grader
