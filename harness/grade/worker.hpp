#pragma once

// The worker: the part of a grade that compiles and runs the submission's code. It runs in a
// child process (grade.hpp starts it) so that a kernel that hangs, faults or floods the output
// costs only that process; it reports through a ProgressSink as it goes.

#include <cstdint>
#include <filesystem>
#include <string>

#include "exercise/exercise.hpp"
#include "grade/protocol.hpp"

namespace grader {

struct WorkerOptions {
    std::filesystem::path exercise_dir;
    std::filesystem::path submission_dir;  // empty with reference_only
    int device = 0;
    std::uint64_t seed = 0;
    std::string backend = "auto";          // "auto" (cuda with a GPU, else sim), "cuda", "sim"
    bool reference_only = false;           // the sweep: the reference kernel alone
    double run_seconds_override = 0.0;     // > 0 replaces the exercise's run limit
    // A file to flock() before the GPU work, so batch workers that share a GPU compile side by
    // side but time one at a time. The lock goes with the process, however it ends.
    std::filesystem::path device_lock;
};

// Everything the worker does, reported through sink. Throws only for the harness's own faults
// (an unreadable exercise file, a driver call that fails outside any kernel).
void run_worker(const Exercise& exercise, const WorkerOptions& options, ProgressSink& sink);

// The GPU backend: compile for the device, load, check the ABI, run the accumulator checks and
// time every row. Fills `m` and reports snapshots through sink.
void run_cuda_backend(const Exercise& exercise, const WorkerOptions& options,
                      const Submission& submission, Measurements& m, ProgressSink& sink);

// The simulator backend: the same compiles, ABI check and accumulator checks on the PTX
// simulator, with modeled costs in place of times and counted conflict degrees. Fills `m` and
// reports snapshots through sink.
void run_sim_backend(const Exercise& exercise, const WorkerOptions& options,
                     const Submission& submission, Measurements& m, ProgressSink& sink);

// "cuda" or "sim" for a requested backend: "auto" is cuda where a GPU driver and device answer.
std::string resolve_backend(const std::string& requested, int device);

}  // namespace grader
