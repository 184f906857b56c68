#pragma once

// The worker: the part of a grade that compiles and runs code. It runs in a child process
// (grade.hpp starts it) so that a kernel that hangs, faults or floods the output costs only that
// process; it reports through a ProgressSink as it goes.

#include "exercise/exercise.hpp"
#include "grade/protocol.hpp"
#include "grade/worker_options.hpp"

namespace grader {

// Everything the worker does, reported through sink: a grade (pipeline.hpp) on the device
// choose_device() picks, or `grader explain`'s lane tables (explain.hpp). Throws only for the
// harness's own faults (an unreadable exercise kernel, a driver call that fails outside any
// kernel).
void run_worker(const Exercise& exercise, const WorkerOptions& options, ProgressSink& sink);

}  // namespace grader
