#pragma once

// The timing rounds: every case of the plan timed against the others on the device, its timing and
// its ratio to its base paired round by round; and the student's timed launches' outputs checked
// as the correctness runs' were, on threads of their own while the device goes on to the count.

#include <cstddef>
#include <future>
#include <utility>
#include <vector>

#include "device/device.hpp"
#include "exercise/exercise.hpp"
#include "grade/plan.hpp"
#include "grade/protocol.hpp"
#include "grade/run_slots.hpp"
#include "grade/stages.hpp"
#include "model/measurements.hpp"
#include "model/observations.hpp"

namespace grader {

class TimingRounds {
public:
    // Times the plan's timed launches where it has any, and every case ran (runs[i] is cases[i]'s):
    // each run's timing and ratio, the rounds' figures and notes, the timed outputs' checks
    // started. False where a kernel failed in the rounds: the grade is stopped.
    bool time(Device& device, const GradePlan& plan, const RunSlots& slots, GradeStages& stages,
              std::vector<KernelRun>& runs, Environment& environment, GradeFigures& figures,
              ProgressSink& sink);
    // The timed launches' checks, each added to its run and reported once it is in.
    void collect_checks(std::vector<KernelRun>& runs, ProgressSink& sink);

private:
    // Each case's timing, and its ratio to its base, paired round by round.
    static void record_timings(const TimingSamples& samples, const GradePlan& plan,
                               std::vector<KernelRun>& runs);
    void check_outputs(TimingSamples& samples, const GradePlan& plan, const RunSlots& slots,
                       const std::vector<KernelRun>& runs);

    // The timed launches' checks, by index in the runs, while they run.
    std::vector<std::pair<std::size_t, std::future<OutputComparison>>> checks_;
};

}  // namespace grader
