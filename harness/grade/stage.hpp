#pragma once

// The stages of a grade, as values: the worker announces each one, the grader times it and, when
// the worker stops inside one, blame() decides whose fault that was.

#include <string>
#include <utility>

#include "exercise/exercise.hpp"
#include "model/measurements.hpp"

namespace grader {

struct Stage {
    enum class Kind {
        answers,          // reading the answers file
        compile,          // NVRTC, for every kernel
        wait_for_device,  // the per-GPU lock of a batch
        load,             // loading the compiled kernels on the device
        run,              // one kernel at one stride, with every input
        time,             // the timing rounds
        count,            // counting shared-memory traffic (hardware counters)
        explain,          // grader explain: the simulator's lane tables
    };
    Stage() = default;
    Stage(Kind stage_kind, std::string stage_kernel = {}, int stage_stride = 0)
        : kind(stage_kind), kernel(std::move(stage_kernel)), stride(stage_stride) {}

    Kind kind = Kind::answers;
    std::string kernel;  // run: the kernel; time and count: "student" where it is among them;
                         // load: the exercise's kernel that failed to load, else empty
    int stride = 0;      // run: the stride (0 without a sweep)

    // Whether code the student wrote runs in this stage, so that what stops it is theirs.
    bool runs_student_code() const;
};

// "run student stride 8", "run copy", "time": how reports and stage timings name a stage.
std::string to_string(const Stage& stage);

// How long a stage may take before the grader stops its worker, and, where that is not the run
// limit itself, why.
struct StageLimit {
    StageLimit(double limit_seconds = 0.0, std::string limit_basis = {})  // NOLINT: a number
        : seconds(limit_seconds), basis(std::move(limit_basis)) {}
    double seconds;
    std::string basis;  // "4 times the reference probe's 4.21 ms for the same launches, ..."
};

// How a stage ended early, as its cause: what the device reported, or how the worker died.
enum class Ending {
    kernel_fault,    // a kernel faulted
    launch_refused,  // a launch asked for more than the device gives
    unsupported,     // the simulator cannot run an instruction
    time_limit,      // the stage's time limit, or the simulator's instruction budget
    memory_limit,    // the worker went over its memory limit
    worker_crashed,  // the worker died of a signal, or exited without a report
    message_limit,   // the worker sent more than its message limit
    harness_error,   // the harness's own failure (a driver call outside any kernel)
    no_gpu,          // a GPU was asked for and none answered
};

// The one table that decides whose fault a stop is: the student's wherever their code ran and
// did this (a fault, a hang, memory, a crash, a launch it asked for, an instruction the simulator
// cannot run where the simulator is the grade), the machine's otherwise; a missing GPU is never
// the student's.
Interruption blame(const Stage& stage, Ending ending, std::string message);

}  // namespace grader
