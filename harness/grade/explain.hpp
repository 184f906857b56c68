#pragma once

// `grader explain`: the student's kernel (or the exercise's oracle) on the simulator, stride by
// stride, with every shared-memory line's counted degree and one warp's lanes. Runs in the worker,
// under the same limits and confinement as a grade.

#include "exercise/exercise.hpp"
#include "grade/protocol.hpp"
#include "grade/worker_options.hpp"

namespace grader {

void explain_kernel(const Exercise& exercise, const WorkerOptions& options, ProgressSink& sink);

}  // namespace grader
