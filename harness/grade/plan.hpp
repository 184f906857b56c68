#pragma once

// What a grade will launch, decided before anything runs: every case (a kernel at a stride), its
// correctness runs and which of their outputs are read, what is timed (and what of it a device
// serving a class may reuse) and what is counted. The pipeline walks the plan; the device is
// handed its launches (Device::follow). tests/test_pipeline.cpp checks plans for both exercises.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "device/device.hpp"
#include "exercise/exercise.hpp"

namespace grader {

// One row of the grade: a kernel at a stride, with its runs in the plan's launches (none where
// nothing reads them).
struct PlannedCase {
    std::string kernel;
    int stride = 0;
    std::size_t first_run = 0;  // its runs are launches.runs[first_run, first_run + run_count)
    std::size_t run_count = 0;
    // The case its ratio is taken against (an index into cases): the same kernel at the ratio's
    // stride, or the exercise's baseline kernel.
    std::optional<std::size_t> base;
    // The oracle's case at this stride (an index into cases; the case itself for the oracle's),
    // where the oracle runs at it: the student's outputs compare with its, and the student's
    // stages may take a few times what it took.
    std::optional<std::size_t> oracle;
};

struct GradePlan {
    // The exercise's kernels first, in the exercise's order, so that the oracle's outputs are in
    // before the student's arrive; then the student's. Timed in this order.
    std::vector<PlannedCase> cases;
    LaunchPlan launches;  // timed[i] and cases[i] are one case, where anything is timed

    // The run of cases[index] with `input` (an index into launches.runs), where the case runs it.
    std::optional<std::size_t> run_of(std::size_t index, const InputSpec& input) const;
    // The student's cases (indices into cases), in the plan's order: counted[i] is the i-th.
    std::vector<std::size_t> student_cases() const;
};

// The plan for the kernels that loaded (by KernelSpec id; the student's is absent where it did not
// load, or in a sweep), on a device that can do what `device` says, with the grade's strides
// drawn beyond the named ones. A pure function of its arguments.
GradePlan plan_grade(const Exercise& exercise, const std::map<std::string, LoadedKernel*>& loaded,
                     const std::vector<int>& unnamed_strides, const DeviceCapabilities& device,
                     const LaunchGeometry& geometry);

}  // namespace grader
