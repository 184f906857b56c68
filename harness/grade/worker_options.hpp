#pragma once

// What the worker (worker.hpp) is asked to do: `grader __worker`'s options.

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

}  // namespace grader
