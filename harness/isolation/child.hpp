#pragma once

// Runs a program in a child process under limits: the way untrusted work (NVRTC on a student's
// source, a student's kernel) is kept from hanging, flooding or crashing the grader.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace grader {

struct ChildLimits {
    // Wall-clock limit; the on_message callback may move the deadline (a new stage starts its own
    // clock) by returning a new limit in seconds, or a value <= 0 to keep the current one.
    double seconds = 30.0;
    std::size_t output_bytes = 64 * 1024;             // kept of stdout+stderr; the rest is drained
    std::size_t message_bytes = 16u << 20;            // total kept from the message channel
    std::size_t memory_bytes = std::size_t{4} << 30;  // resident set; killed when above
    std::size_t file_bytes = 64u << 20;               // RLIMIT_FSIZE
    int open_files = 256;                             // RLIMIT_NOFILE
    // Where given and set (by another thread), the child's group is killed within a tenth of a
    // second and the result is End::cancelled: a service that stops does not wait for a grade.
    const std::atomic<bool>* cancel = nullptr;
};

struct ChildResult {
    enum class End {
        exited,
        signaled,
        timed_out,
        memory_exceeded,
        message_overflow,
        spawn_failed,
        cancelled,
    };
    End end = End::exited;
    int exit_code = -1;  // for exited
    int signal = 0;      // for signaled
    double seconds = 0.0;
    double limit_seconds = 0.0;  // the limit in force when it ended
    std::size_t peak_memory_bytes = 0;
    std::string output;  // stdout and stderr interleaved, at most output_bytes
    bool output_truncated = false;
    std::size_t output_total_bytes = 0;
    std::string error;  // for spawn_failed
};

const char* to_string(ChildResult::End end);

// Starts argv[0] with argv in its own process group, stdin from /dev/null (or, where input is
// given, a stream that carries input and then ends), core dumps off, the
// rlimits above, and PR_SET_PDEATHSIG so it dies with the grader. The child writes messages, one
// per line, to file descriptor 3; each complete line is passed to on_message as it arrives.
// The whole process group is killed with SIGKILL on timeout, memory or message overflow.
// working_directory, if not empty, is the child's current directory.
// input, where given, is written to the child's stdin while its output is read (so neither side
// can block the other), then stdin is closed; a child that stops reading early loses the rest,
// and the grader gets no SIGPIPE for it (stdin is a socket written with MSG_NOSIGNAL).
// A last message without its newline is not passed on (the child may have died mid-write).
// Not starting (pipe, fork, chdir, execv failing) is End::spawn_failed with the reason in error.
// Safe to call from several threads at once; it changes no signal disposition (the parent only
// reads its pipes, so SIGPIPE cannot arise here). An exception from on_message propagates after
// the child's group is killed and reaped.
ChildResult run_child(const std::vector<std::string>& argv, const ChildLimits& limits,
                      const std::function<double(const std::string& line)>& on_message,
                      const std::string& working_directory = {},
                      const std::optional<std::string>& input = std::nullopt);

}  // namespace grader
