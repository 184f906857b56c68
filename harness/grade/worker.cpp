#include "grade/worker.hpp"

#include <chrono>

#include "checks/checks.hpp"
#include "common/version.hpp"
#include "compile/compile.hpp"
#include "cuda/driver_api.hpp"
#include "cuda/resources.hpp"

namespace grader {

std::string resolve_backend(const std::string& requested, int device) {
    if (requested != "auto") {
        return requested;
    }
    try {
        cuda::query_device(device);
        return "cuda";
    } catch (const cuda::DriverUnavailable&) {
        return "sim";
    }
}

void run_worker(const Exercise& exercise, const WorkerOptions& options, ProgressSink& sink) {
    const auto began = std::chrono::steady_clock::now();
    Measurements m;
    m.seed = options.seed;
    const std::string backend = resolve_backend(options.backend, options.device);
    m.environment.backend = backend;
    m.environment.grader_version = kGraderVersion;
    m.environment.nvrtc_version = nvrtc_version();
    m.unnamed_strides = options.reference_only ? std::vector<int>{}
                                               : draw_unnamed_strides(exercise, options.seed);

    Submission submission;
    if (!options.reference_only) {
        sink.stage("answers", exercise.limits.compile_seconds);
        submission = load_submission(options.submission_dir, exercise);
        sink.submission(submission);
    }
    if (backend == "sim") {
        run_sim_backend(exercise, options, submission, m, sink);
    } else {
        run_cuda_backend(exercise, options, submission, m, sink);
    }
    m.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    sink.measurements(m);
}

}  // namespace grader
