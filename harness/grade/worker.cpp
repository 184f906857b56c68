#include "grade/worker.hpp"

#include "device/device.hpp"
#include "grade/explain.hpp"
#include "grade/pipeline.hpp"

namespace grader {

void run_worker(const Exercise& exercise, const WorkerOptions& options, ProgressSink& sink) {
    if (options.mode == WorkerOptions::Mode::explain) {
        explain_kernel(exercise, options, sink);
        return;
    }
    run_pipeline(exercise, options, sink,
                 choose_device(exercise, options.backend, options.device, options.seed,
                               options.device_server, options.trace, options.sim_threads));
}

}  // namespace grader
