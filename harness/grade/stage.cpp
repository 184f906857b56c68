#include "grade/stage.hpp"

#include <algorithm>
#include <string_view>

#include "common/kernel_ids.hpp"
#include "common/text.hpp"

namespace grader {

bool Stage::runs_student_code() const {
    switch (kind) {
        case Kind::load:
            // The whole load stage is the student's where it names no kernel of the exercise's.
            return kernel.empty() || kernel == kStudentKernel;
        case Kind::explain:
            return true;
        case Kind::compile:
            // The student's source compiles in a confined child of its own, which answers for
            // whatever that source does to the compiler; the worker's compile stage is ours.
            return false;
        case Kind::run:
        case Kind::time:
        case Kind::count:
            return kernel == kStudentKernel;
        case Kind::answers:
        case Kind::wait_for_device:
            return false;
    }
    return false;
}

std::string to_string(const Stage& stage) {
    switch (stage.kind) {
        case Stage::Kind::answers:
            return "answers";
        case Stage::Kind::compile:
            return "compile";
        case Stage::Kind::wait_for_device:
            return "wait for device";
        case Stage::Kind::load:
            return "load";
        case Stage::Kind::run:
            return "run " + stage.kernel +
                   (stage.stride > 0 ? " stride " + std::to_string(stage.stride) : std::string());
        case Stage::Kind::time:
            return "time";
        case Stage::Kind::count:
            return "count";
        case Stage::Kind::explain:
            return "explain";
    }
    return "unknown";
}

StageLimit student_run_limit(double exercise_ms, const std::string& exercise_kernel,
                             double run_limit_seconds) {
    const double scaled = kHangFactor * exercise_ms / 1000.0;
    const double seconds = std::min(std::max(scaled, kHangFloorSeconds), run_limit_seconds);
    if (seconds >= run_limit_seconds) {
        return StageLimit{run_limit_seconds};
    }
    return StageLimit{seconds, format_number(kHangFactor, 0) + " times " + exercise_kernel + "'s " +
                                   format_number(exercise_ms, 3) +
                                   " ms for the same launches on this device, and at least " +
                                   format_number(kHangFloorSeconds, 0) + " s"};
}

Interruption blame(const Stage& stage, Ending ending, std::string message) {
    Interruption interruption;
    interruption.stage = to_string(stage);
    interruption.message = std::move(message);
    const bool students_code = stage.runs_student_code();
    switch (ending) {
        case Ending::kernel_fault:
            interruption.kind = StopKind::fault;
            interruption.students_fault = students_code;
            break;
        case Ending::launch_refused:
            interruption.kind = StopKind::launch;
            interruption.students_fault = students_code;
            break;
        case Ending::time_limit:
            interruption.kind = StopKind::timeout;
            interruption.students_fault = students_code;
            break;
        case Ending::memory_limit:
            interruption.kind = StopKind::memory;
            interruption.students_fault = students_code;
            break;
        case Ending::worker_crashed:
            interruption.kind = StopKind::crash;
            interruption.students_fault = students_code;
            break;
        case Ending::message_limit:
            // Every student string is bounded before the worker sends it, so only a stage that
            // runs the student's code (a kernel's output, a printf flood) can fill the channel.
            interruption.kind = StopKind::crash;
            interruption.students_fault = students_code;
            break;
        case Ending::unsupported:
            // Where there is no GPU the simulator is the grade: a kernel of the student's that
            // it cannot run is theirs to change (else any wrong kernel could end "ungradable"
            // by reaching such an instruction first); one of the exercise's is the machine's.
            interruption.kind = StopKind::unsupported;
            interruption.students_fault = students_code;
            interruption.message +=
                students_code
                    ? "; the simulator grades here (no GPU): write the kernel without it, "
                      "or ask for a grade on a GPU, which runs it"
                    : "; grade on a GPU";
            break;
        case Ending::harness_error:
            interruption.kind = StopKind::crash;
            interruption.students_fault = false;
            break;
        case Ending::no_gpu:
            interruption.kind = StopKind::no_gpu;
            interruption.students_fault = false;
            break;
    }
    return interruption;
}

}  // namespace grader
