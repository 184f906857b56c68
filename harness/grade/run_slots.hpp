#pragma once

// What each correctness run left that a later step of the grade reads, kept in the run's own slot
// of the plan (the plan numbers every run: slot i is launches.runs[i]'s): the oracle's outputs,
// which the student's compare with, and what the device said of each exercise kernel's launch,
// from which the stages that run the student's kernel get their limits (limits.hpp).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "device/device.hpp"
#include "exercise/exercise.hpp"
#include "grade/limits.hpp"
#include "grade/plan.hpp"
#include "measure/outputs.hpp"

namespace grader {

struct RunSlot {
    std::vector<float> outputs;  // the oracle's: the student's compare with them
    // The oracle's, where the device ran only some blocks of the grid (the simulator).
    std::uint64_t blocks_run = 0;
    std::optional<double> kernel_ms;  // an exercise kernel's, where the device timed it (a GPU)
    // An exercise kernel's most warp instructions in a block, where the device counts them (the
    // simulator): the student's instruction budget there.
    std::uint64_t block_instructions = 0;
};

class RunSlots {
public:
    RunSlots(const Exercise& exercise, const GradePlan& plan, const LaunchGeometry& geometry)
        : exercise_(exercise),
          plan_(plan),
          geometry_(geometry),
          slots_(plan.launches.runs.size()) {}

    RunSlot& operator[](std::size_t run) { return slots_.at(run); }
    // The oracle's run with `input` at the stride of cases[index], where it ran.
    const RunSlot* oracle_run(std::size_t index, const InputSpec& input) const;
    // Where a student's output sits in the buffer, and which of the oracle's it compares with.
    OutputPlacement placement(const RunSlot* oracle) const;

    // The student's runs of cases[index]: a few times what the oracle took for the same
    // launches, where the device timed each of them (a GPU).
    std::optional<Allowance> student_run(std::size_t index) const;
    // Where nothing was timed: the run limit, or on the simulator, whose instruction budget stops
    // the student's kernel the same on every machine, the time the student's runs at `stride`
    // take to spend their budgets at the slowest simulation allowed for, where that is longer.
    double untimed_run_limit(int stride, double run_limit) const;
    // The timing rounds: every row at the exercise's speed, the student's at the oracle's.
    std::optional<Allowance> timing() const;
    // The hardware's count of the student's launches.
    std::optional<Allowance> count() const;

private:
    std::optional<double> kernel_ms(std::optional<std::size_t> index, const InputSpec& input) const;

    const Exercise& exercise_;
    const GradePlan& plan_;
    const LaunchGeometry& geometry_;
    std::vector<RunSlot> slots_;
};

}  // namespace grader
