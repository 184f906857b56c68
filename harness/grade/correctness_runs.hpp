#pragma once

// The correctness runs: each case of the plan with each of its inputs, in the plan's order (the
// exercise's kernels first, so that the oracle's outputs are in their runs' slots before the
// student's arrive). The student's outputs are compared with the oracle's on threads of their own
// while the device runs the next case (a comparison of a million words is milliseconds the device
// would sit idle); each case's run is reported, in order, once its comparisons are in.

#include <cstddef>
#include <deque>
#include <future>
#include <vector>

#include "device/device.hpp"
#include "exercise/exercise.hpp"
#include "grade/plan.hpp"
#include "grade/protocol.hpp"
#include "grade/run_slots.hpp"
#include "grade/stage.hpp"
#include "grade/stages.hpp"
#include "model/measurements.hpp"
#include "model/observations.hpp"

namespace grader {

class CorrectnessRuns {
public:
    CorrectnessRuns(const Exercise& exercise, Device& device, const GradePlan& plan,
                    RunSlots& slots, GradeStages& stages, ProgressSink& sink)
        : exercise_(exercise),
          device_(device),
          plan_(plan),
          slots_(slots),
          stages_(stages),
          sink_(sink) {}

    // Adds one run to `runs` for each case of the plan, in its order. False where a launch
    // failed: the grade is stopped, with what was compared before it reported. Where the device
    // itself fails, what was compared is reported and the exception goes on.
    bool run(std::vector<KernelRun>& runs);

private:
    struct Pending {
        KernelRun run;
        std::vector<std::future<OutputComparison>> outputs;
    };

    void enter(std::size_t index, const Stage& stage);
    // One launch of the case under way; false where it did not complete.
    bool launch(std::size_t run, const Stage& stage, std::vector<KernelRun>& runs);
    // What the launch saw, on the case's run: the simulator's count, its notes and races.
    void keep_observations(const InputSpec& input, const DeviceLaunch& launch);
    // What a later step reads of an exercise kernel's launch, in the run's slot.
    void keep_in_slot(std::size_t run, DeviceLaunch& launch);
    // The student's outputs against the oracle's run with the same input, on a thread.
    void compare_with_oracle(std::size_t index, const InputSpec& input, DeviceLaunch& launch);
    // Reports the cases whose comparisons are in, in order; with `wait`, every one.
    void report(bool wait, std::vector<KernelRun>& runs);
    // Before the grade stops: every case so far, the one under way with what it compared.
    void report_all(std::vector<KernelRun>& runs);

    const Exercise& exercise_;
    Device& device_;
    const GradePlan& plan_;
    RunSlots& slots_;
    GradeStages& stages_;
    ProgressSink& sink_;
    std::size_t case_ = 0;  // the case under way
    Pending current_;
    std::deque<Pending> pending_;
};

}  // namespace grader
