#pragma once

// The grading pipeline, written once over the device interface (device/device.hpp): compile
// every kernel beside the device's start, take the device, load, plan every launch (plan.hpp),
// run every case, time, count, give the device back, then what needs only the CPU (the
// simulator's witness of the student's kernel). run_worker() calls it with choose_device()'s
// choice; the tests, with a scripted fake.

#include <filesystem>

#include "device/device.hpp"
#include "exercise/exercise.hpp"
#include "grade/protocol.hpp"
#include "grade/worker_options.hpp"

namespace grader {

struct PipelineHooks {
    // The grader's own executable, which compiles the student's source in a confined child
    // ("grader __compile"); empty: the running one.
    std::filesystem::path grader_executable;
};

// Grades as run_worker() does on the device `choice` opens. Throws only for the harness's own
// faults outside any kernel.
void run_pipeline(const Exercise& exercise, const WorkerOptions& options, ProgressSink& sink,
                  const DeviceChoice& choice, const PipelineHooks& hooks = {});

}  // namespace grader
