#pragma once

// Grading one submission: the worker runs in a child process under the exercise's limits, and
// whatever it observed before it finished, faulted, hung or was killed becomes the report.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "exercise/exercise.hpp"
#include "grade/protocol.hpp"
#include "grade/worker_options.hpp"
#include "model/report.hpp"

namespace grader {

struct GradeOptions {
    std::filesystem::path submission_dir;
    std::string submission_label;  // how the report names it (the path as given)
    int device = 0;
    std::optional<std::uint64_t> seed;  // drawn at random when absent, and reported
    std::string backend = "auto";       // "auto", "cuda" or "sim"
    // The socket of the GPU's device server (device/device_server.hpp), where `grader batch`
    // runs one: the grade's GPU work goes through it. Empty: the grade opens the GPU itself.
    std::filesystem::path device_server;
    // Cores the simulator may run the grade's blocks on (sim::LaunchOptions::threads): a grade
    // that runs alone is given the machine's, one of a batch its share.
    unsigned sim_threads = 1;
    double run_seconds_override = 0.0;        // > 0 replaces the exercise's run limit
    std::filesystem::path worker_executable;  // the grader itself, started as "grader __worker"
    std::function<void(const std::string& stage)> on_stage;  // progress, for --verbose
    // The other exercises a student might have meant, by id, with their kernel file
    // ("day15-padding" -> "transpose.cu"): a folder holding one of those files and not this
    // exercise's is named as another exercise's work, with the command that grades it.
    std::map<std::string, std::string> other_exercise_sources;
    // Where given and set by another thread, the worker is stopped at once and the grade throws
    // GradeCancelled (a service that stops queues the grade again instead of waiting for it).
    const std::atomic<bool>* cancel = nullptr;
};

// A grade stopped midway through GradeOptions::cancel: no one's fault, and no report.
class GradeCancelled : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Never throws for the submission's faults. Throws for the harness's own (the worker could not be
// started at all), and GradeCancelled where it was cancelled.
Report grade_submission(const Exercise& exercise, const GradeOptions& options);

// What a worker process observed, however it ended, and where its wall time went.
struct WorkerResult {
    Observations observations;
    std::map<std::string, double> stage_seconds;
};

// Runs `grader __worker` under the exercise's limits for `task` (a grade, the exercise's kernels
// alone, an explanation); an empty submission_dir passes none. Every command that runs code goes
// through here, so all of them get the same limits and isolation.
WorkerResult run_worker_process(const Exercise& exercise, const GradeOptions& options,
                                std::uint64_t seed, const WorkerTask& task = {});

// The running executable's path, to start workers from.
std::filesystem::path current_executable();

}  // namespace grader
