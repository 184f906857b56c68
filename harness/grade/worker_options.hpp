#pragma once

// What the worker (worker.hpp) is asked to do: `grader __worker`'s options, and their flags,
// spelled here once: cli/worker_command.cpp binds them, worker_arguments writes them.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "device/device.hpp"

namespace grader {

struct WorkerOptions {
    enum class Mode {
        grade,           // the student's kernel beside the exercise's own
        reference_only,  // the sweep: the exercise's kernels alone
        explain,         // the student's kernel on the simulator, lane by lane
    };
    Mode mode = Mode::grade;
    std::filesystem::path exercise_dir;
    std::filesystem::path submission_dir;  // empty with reference_only
    int device = 0;
    std::uint64_t seed = 0;
    std::string backend = "auto";         // "auto" (cuda with a GPU, else sim), "cuda", "sim"
    std::filesystem::path device_server;  // the GPU's device server's socket, where one serves
    double run_seconds_override = 0.0;    // > 0 replaces the exercise's run limit
    unsigned sim_threads = 1;             // GradeOptions::sim_threads
    std::vector<int> explain_strides;     // explain: the strides to run
    bool explain_reference = false;       // explain the exercise's oracle instead
    StepTrace trace;                      // where the device's steps are told; empty: nowhere
};

// What a worker is asked beyond a grade's options (grade.hpp's run_worker_process).
struct WorkerTask {
    WorkerOptions::Mode mode = WorkerOptions::Mode::grade;
    std::vector<int> explain_strides;  // explain: the strides to run; empty: the exercise's
    bool explain_reference = false;    // explain the exercise's oracle instead
};

// The worker's subcommand and flags: the one table both of its ends read.
struct WorkerFlags {
    static constexpr const char* command = "__worker";
    static constexpr const char* exercise = "--exercise";
    static constexpr const char* submission = "--submission";
    static constexpr const char* device = "--device";
    static constexpr const char* seed = "--seed";
    static constexpr const char* backend = "--backend";
    static constexpr const char* device_server = "--device-server";
    static constexpr const char* run_timeout = "--run-timeout";
    static constexpr const char* sim_threads = "--sim-threads";
    static constexpr const char* reference_only = "--reference-only";  // Mode::reference_only
    static constexpr const char* explain = "--explain";                // Mode::explain
    static constexpr const char* explain_strides = "--explain-strides";
    static constexpr const char* explain_reference = "--explain-reference";
};

// The arguments after the executable that ask a worker for `options` (its trace aside): the
// subcommand, then each flag whose value differs from none (a submission, a device server, the
// explained strides only where given).
std::vector<std::string> worker_arguments(const WorkerOptions& options);

}  // namespace grader
