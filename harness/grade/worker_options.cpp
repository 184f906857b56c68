#include "grade/worker_options.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "common/text.hpp"

namespace grader {

std::vector<std::string> worker_arguments(const WorkerOptions& options) {
    std::vector<std::string> argv = {
        WorkerFlags::command,
        WorkerFlags::exercise,
        options.exercise_dir.string(),
        WorkerFlags::device,
        std::to_string(options.device),
        WorkerFlags::seed,
        std::to_string(options.seed),
        WorkerFlags::backend,
        options.backend,
        WorkerFlags::run_timeout,
        format_number(options.run_seconds_override, 3),
        WorkerFlags::sim_threads,
        std::to_string(std::max(options.sim_threads, 1u)),
    };
    if (!options.submission_dir.empty()) {
        argv.insert(argv.end(), {WorkerFlags::submission, options.submission_dir.string()});
    }
    if (!options.device_server.empty()) {
        argv.insert(argv.end(), {WorkerFlags::device_server, options.device_server.string()});
    }
    switch (options.mode) {
        case WorkerOptions::Mode::grade:
            break;
        case WorkerOptions::Mode::reference_only:
            argv.emplace_back(WorkerFlags::reference_only);
            break;
        case WorkerOptions::Mode::explain:
            argv.emplace_back(WorkerFlags::explain);
            break;
    }
    if (!options.explain_strides.empty()) {
        std::string list;
        for (const int stride : options.explain_strides) {
            list += (list.empty() ? "" : ",") + std::to_string(stride);
        }
        argv.insert(argv.end(), {WorkerFlags::explain_strides, list});
    }
    if (options.explain_reference) {
        argv.emplace_back(WorkerFlags::explain_reference);
    }
    return argv;
}

}  // namespace grader
