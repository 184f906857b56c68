#include "isolation/child.hpp"

#include <bits/types/idtype_t.h>
#include <bits/types/siginfo_t.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <utility>

// Notes for callers:
// - The parent only reads from its pipes, so SIGPIPE cannot reach it from here; the library
//   never changes signal dispositions. (The CLI ignores SIGPIPE for its own output.)
// - PR_SET_PDEATHSIG fires when the *thread* that forked exits. run_child blocks in that thread
//   until the child is reaped, so this only matters if the whole grader dies, which is the point.
// - A grandchild that leaves the process group (setsid) escapes the group kill; only a cgroup
//   could catch it. Its hold on the pipes is bounded by a short drain grace period.

namespace grader {

const char* to_string(ChildResult::End end) {
    switch (end) {
        case ChildResult::End::exited:
            return "exited";
        case ChildResult::End::signaled:
            return "signaled";
        case ChildResult::End::timed_out:
            return "timed_out";
        case ChildResult::End::memory_exceeded:
            return "memory_exceeded";
        case ChildResult::End::message_overflow:
            return "message_overflow";
        case ChildResult::End::spawn_failed:
            return "spawn_failed";
        case ChildResult::End::cancelled:
            return "cancelled";
    }
    return "unknown";
}

namespace {

using Clock = std::chrono::steady_clock;

constexpr int message_fd = 3;
constexpr int exec_error_fd = 4;     // close-on-exec: closed by a successful execv
constexpr int first_private_fd = 5;  // fds are moved above the targets before dup2
constexpr auto memory_sample_period = std::chrono::milliseconds(50);
// How long to keep reading after the child has gone, for a process that escaped the group and
// still holds the pipes.
constexpr auto drain_grace = std::chrono::milliseconds(500);

// What the child reports through the exec-error pipe when a step before execv fails.
enum class SpawnStep : int { pipes, dev_null, dup, parent_died, rlimit, chdir, exec, input };

struct SpawnFailure {
    int step;
    int error_number;
};

const char* describe(SpawnStep step) {
    switch (step) {
        case SpawnStep::pipes:
            return "moving the pipes";
        case SpawnStep::dev_null:
            return "opening /dev/null";
        case SpawnStep::dup:
            return "dup2";
        case SpawnStep::parent_died:
            return "parent exited before exec";
        case SpawnStep::rlimit:
            return "setrlimit";
        case SpawnStep::chdir:
            return "chdir";
        case SpawnStep::exec:
            return "execv";
        case SpawnStep::input:
            return "moving the input socket";
    }
    return "spawning";
}

std::string errno_text(int error_number) {
    return std::system_category().message(error_number);
}

Clock::duration to_duration(double seconds) {
    // Caps "no practical limit" values so time arithmetic cannot overflow.
    const double capped = std::isfinite(seconds) ? std::min(seconds, 1e9) : 1e9;
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(capped));
}

double seconds_between(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Fd& operator=(Fd&& other) noexcept {
        if (this != &other) {
            reset();
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() { reset(); }

    int get() const { return fd_; }
    bool open() const { return fd_ >= 0; }
    void reset() {
        if (fd_ >= 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }

private:
    int fd_ = -1;
};

struct Pipe {
    Fd read_end;
    Fd write_end;
};

// O_CLOEXEC so that a child forked concurrently by another thread does not carry these pipes
// past its exec and hold our read ends open.
bool make_pipe(Pipe& pipe, int& error_number) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        error_number = errno;
        return false;
    }
    pipe.read_end = Fd(fds[0]);
    pipe.write_end = Fd(fds[1]);
    return true;
}

// Everything the child needs, prepared before fork: between fork and exec in a threaded
// process only async-signal-safe calls are allowed, so no allocation happens there.
struct ChildSetup {
    std::vector<char*> argv;
    const char* working_directory = nullptr;
    pid_t parent_pid = 0;
    int output_fd = -1;
    int message_fd = -1;
    int error_fd = -1;
    int input_fd = -1;  // the child's end of the input socket; -1: stdin is /dev/null
    rlimit core_limit{};
    rlimit file_size_limit{};
    rlimit open_files_limit{};
    int highest_fd = 1024;  // for the close loop when close_range is missing
};

rlimit clamped_limit(int resource, rlim_t wanted) {
    rlimit current{};
    if (::getrlimit(resource, &current) != 0) {
        return rlimit{wanted, wanted};
    }
    // An unprivileged process can lower its hard limit but not raise it.
    const rlim_t value =
        current.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, current.rlim_max);
    return rlimit{value, value};
}

[[noreturn]] void fail_in_child(int error_fd, SpawnStep step, int error_number) {
    const SpawnFailure failure{static_cast<int>(step), error_number};
    ssize_t written;
    do {
        written = ::write(error_fd, &failure, sizeof failure);
    } while (written < 0 && errno == EINTR);
    ::_exit(127);
}

void close_from(int first_fd, int highest_fd) {
#ifdef SYS_close_range
    if (::syscall(SYS_close_range, static_cast<unsigned>(first_fd), ~0U, 0U) == 0) {
        return;
    }
#endif
    for (int fd = first_fd; fd <= highest_fd; ++fd) {
        ::close(fd);
    }
}

// Runs in the forked child: async-signal-safe calls only.
[[noreturn]] void become_child(const ChildSetup& setup) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);

    // Move the fds we keep above the target numbers first, so no dup2 below overwrites a source.
    const int error_fd = ::fcntl(setup.error_fd, F_DUPFD_CLOEXEC, first_private_fd);
    if (error_fd < 0) {
        fail_in_child(setup.error_fd, SpawnStep::pipes, errno);
    }
    if (::getppid() != setup.parent_pid) {
        // The grader died between fork and prctl; the death signal would never come.
        fail_in_child(error_fd, SpawnStep::parent_died, 0);
    }
    const int output_fd = ::fcntl(setup.output_fd, F_DUPFD_CLOEXEC, first_private_fd);
    const int messages = ::fcntl(setup.message_fd, F_DUPFD_CLOEXEC, first_private_fd);
    if (output_fd < 0 || messages < 0) {
        fail_in_child(error_fd, SpawnStep::pipes, errno);
    }
    int input = -1;
    if (setup.input_fd >= 0) {
        input = ::fcntl(setup.input_fd, F_DUPFD_CLOEXEC, first_private_fd);
        if (input < 0) {
            fail_in_child(error_fd, SpawnStep::input, errno);
        }
    } else {
        const int dev_null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (dev_null < 0) {
            fail_in_child(error_fd, SpawnStep::dev_null, errno);
        }
        input = ::fcntl(dev_null, F_DUPFD_CLOEXEC, first_private_fd);
        if (input < 0) {
            fail_in_child(error_fd, SpawnStep::pipes, errno);
        }
    }
    // dup2 clears close-on-exec on 0..3; fd 4 keeps it so a successful exec closes it.
    if (::dup2(input, STDIN_FILENO) < 0 || ::dup2(output_fd, STDOUT_FILENO) < 0 ||
        ::dup2(output_fd, STDERR_FILENO) < 0 || ::dup2(messages, message_fd) < 0 ||
        ::dup3(error_fd, exec_error_fd, O_CLOEXEC) < 0) {
        fail_in_child(error_fd, SpawnStep::dup, errno);
    }
    close_from(first_private_fd, setup.highest_fd);

    // Ignored signals and the blocked mask survive exec; the student's program starts clean,
    // so writing past RLIMIT_FSIZE raises SIGXFSZ and a closed pipe raises SIGPIPE.
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
        ::sigaction(signal_number, &default_action, nullptr);
    }
    sigset_t nothing_blocked;
    sigemptyset(&nothing_blocked);
    ::sigprocmask(SIG_SETMASK, &nothing_blocked, nullptr);

    if (::setrlimit(RLIMIT_CORE, &setup.core_limit) != 0 ||
        ::setrlimit(RLIMIT_FSIZE, &setup.file_size_limit) != 0 ||
        ::setrlimit(RLIMIT_NOFILE, &setup.open_files_limit) != 0) {
        fail_in_child(exec_error_fd, SpawnStep::rlimit, errno);
    }
    if (setup.working_directory != nullptr && ::chdir(setup.working_directory) != 0) {
        fail_in_child(exec_error_fd, SpawnStep::chdir, errno);
    }
    ::execv(setup.argv[0], setup.argv.data());
    fail_in_child(exec_error_fd, SpawnStep::exec, errno);
}

// Kills and reaps the child if run_child leaves early (an exception from on_message), so no
// child outlives the call.
class ChildProcess {
public:
    explicit ChildProcess(pid_t pid) : pid_(pid) {}
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;
    ~ChildProcess() {
        if (!reaped_) {
            kill_group();
            wait_status();
        }
    }

    pid_t pid() const { return pid_; }

    // Kills the child and everything left in its process group. Safe until reaped: the
    // unreaped child (even a zombie) keeps its pid, so the group id cannot be reused.
    void kill_group() const {
        ::kill(-pid_, SIGKILL);
        ::kill(pid_, SIGKILL);
    }

    // True once the child has exited, without reaping it.
    bool has_exited() const {
        siginfo_t info{};
        int result;
        do {
            result = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
        } while (result < 0 && errno == EINTR);
        return result == 0 && info.si_pid == pid_;
    }

    int wait_status() {
        int status = 0;
        pid_t result;
        do {
            result = ::waitpid(pid_, &status, 0);
        } while (result < 0 && errno == EINTR);
        reaped_ = true;
        return status;
    }

private:
    pid_t pid_;
    bool reaped_ = false;
};

std::size_t parse_unsigned(const char* text, const char* end, const char** after) {
    std::size_t value = 0;
    while (text < end && *text == ' ') {
        ++text;
    }
    while (text < end && *text >= '0' && *text <= '9') {
        value = value * 10 + static_cast<std::size_t>(*text - '0');
        ++text;
    }
    *after = text;
    return value;
}

// Reads pgrp and rss (pages) from /proc/<pid>/stat. The command name may hold spaces and
// parentheses, so fields are counted after the last ')'.
bool read_group_and_rss(const char* pid_text, long& group, std::size_t& rss_pages) {
    char path[sizeof(dirent::d_name) + 16];
    std::snprintf(path, sizeof path, "/proc/%s/stat", pid_text);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    std::array<char, 1024> buffer{};
    const ssize_t length = ::read(fd, buffer.data(), buffer.size() - 1);
    ::close(fd);
    if (length <= 0) {
        return false;
    }
    const char* const end = buffer.data() + length;
    const char* field = nullptr;
    for (const char* p = buffer.data(); p < end; ++p) {
        if (*p == ')') {
            field = p;
        }
    }
    if (field == nullptr) {
        return false;
    }
    // After ") ": state(3) ppid(4) pgrp(5) ... rss(24).
    int field_number = 2;
    const char* p = field + 1;
    group = -1;
    while (p < end && field_number < 24) {
        while (p < end && *p == ' ') {
            ++p;
        }
        ++field_number;
        if (field_number == 5 || field_number == 24) {
            const char* after = p;
            const std::size_t value = parse_unsigned(p, end, &after);
            if (field_number == 5) {
                group = static_cast<long>(value);
            } else {
                rss_pages = value;
                return group >= 0;
            }
            p = after;
        }
        while (p < end && *p != ' ') {
            ++p;
        }
    }
    return false;
}

// Resident memory of every process in the child's group (the child and what it forked).
std::size_t group_resident_bytes(pid_t group_id, std::size_t page_size) {
    std::size_t pages = 0;
    DIR* proc = ::opendir("/proc");
    if (proc == nullptr) {
        return 0;
    }
    while (const dirent* entry = ::readdir(proc)) {
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9') {
            continue;
        }
        long group = -1;
        std::size_t rss_pages = 0;
        if (read_group_and_rss(entry->d_name, group, rss_pages) && group == group_id) {
            pages += rss_pages;
        }
    }
    ::closedir(proc);
    return pages * page_size;
}

ChildResult spawn_failure(std::string error, double limit_seconds) {
    ChildResult result;
    result.end = ChildResult::End::spawn_failed;
    result.error = std::move(error);
    result.limit_seconds = limit_seconds;
    return result;
}

// Watches a started child until it ends: its output and messages read as they come, its input
// written as it reads it, its time and memory held to the limits, the group killed at a limit.
class Supervision {
public:
    Supervision(ChildProcess& child, pid_t pid, const ChildLimits& limits,
                const std::function<double(const std::string& line)>& on_message,
                Clock::time_point start, Fd& output, Fd& messages, Fd& input_writer,
                const std::optional<std::string>& input, std::size_t page_size)
        : child_(child),
          pid_(pid),
          limits_(limits),
          on_message_(on_message),
          start_(start),
          output_(output),
          messages_(messages),
          input_writer_(input_writer),
          input_(input),
          page_size_(page_size),
          deadline_(start + to_duration(limits.seconds)),
          next_memory_sample_(start + memory_sample_period) {
        result_.limit_seconds = limits.seconds;
    }

    ChildResult run() {
        while (true) {
            Clock::time_point now = Clock::now();
            if (!exited_ && child_.has_exited()) {
                exited_ = true;
                exited_at_ = now;
                result_.seconds = seconds_between(start_, now);
                // Grandchildren left behind die with the group; then the pipes reach EOF.
                child_.kill_group();
                input_writer_.reset();
            }
            const bool pipes_open = output_.open() || messages_.open();
            if (exited_ && (!pipes_open || now - exited_at_ >= drain_grace)) {
                break;
            }
            if (!exited_ && !killed_) {
                if (limits_.cancel != nullptr && limits_.cancel->load()) {
                    kill_for(ChildResult::End::cancelled);
                } else if (now >= deadline_) {
                    kill_for(ChildResult::End::timed_out);
                } else if (now >= next_memory_sample_) {
                    const std::size_t resident = group_resident_bytes(pid_, page_size_);
                    result_.peak_memory_bytes = std::max(result_.peak_memory_bytes, resident);
                    if (resident > limits_.memory_bytes) {
                        kill_for(ChildResult::End::memory_exceeded);
                    }
                    next_memory_sample_ = now + memory_sample_period;
                }
            }

            // Child exit is not an fd event, so poll wakes at least every sample period; with the
            // pipes closed it only waits for the exit, so it checks more often.
            Clock::duration wait = pipes_open ? Clock::duration(memory_sample_period)
                                              : Clock::duration(std::chrono::milliseconds(5));
            if (!exited_ && !killed_) {
                wait = std::min(wait, std::max(Clock::duration::zero(), deadline_ - now));
                wait = std::min(wait, std::max(Clock::duration::zero(), next_memory_sample_ - now));
            }
            const int wait_ms =
                static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(wait).count());

            std::array<pollfd, 3> fds{};
            nfds_t count = 0;
            Fd* polled[3] = {nullptr, nullptr, nullptr};
            for (Fd* fd : {&output_, &messages_, &input_writer_}) {
                if (fd->open()) {
                    fds[count].fd = fd->get();
                    fds[count].events = fd == &input_writer_ ? POLLOUT : POLLIN;
                    polled[count] = fd;
                    ++count;
                }
            }
            const int ready = ::poll(fds.data(), count, wait_ms);
            if (ready < 0) {
                if (errno == EINTR) {
                    continue;
                }
                throw std::system_error(errno, std::system_category(), "run_child: poll");
            }
            for (nfds_t index = 0; index < count; ++index) {
                if (fds[index].revents == 0) {
                    continue;
                }
                Fd& fd = *polled[index];
                if (&fd == &input_writer_) {
                    send_input();
                    continue;
                }
                const ssize_t length = ::read(fd.get(), buffer_.data(), buffer_.size());
                if (length > 0) {
                    const auto size = static_cast<std::size_t>(length);
                    if (&fd == &output_) {
                        take_output(buffer_.data(), size);
                    } else {
                        take_messages(buffer_.data(), size);
                    }
                } else if (length == 0 || (errno != EINTR && errno != EAGAIN)) {
                    fd.reset();  // EOF: every writer (child and grandchildren) has closed it
                }
            }
        }

        const int status = child_.wait_status();
        if (!killed_) {
            if (WIFSIGNALED(status)) {
                result_.end = ChildResult::End::signaled;
                result_.signal = WTERMSIG(status);
            } else {
                result_.end = ChildResult::End::exited;
                result_.exit_code = WEXITSTATUS(status);
            }
        } else if (WIFSIGNALED(status)) {
            result_.signal = WTERMSIG(status);
        }
        return result_;
    }

private:
    void kill_for(ChildResult::End reason) {
        result_.end = reason;
        killed_ = true;
        child_.kill_group();
    }

    void take_output(const char* data, std::size_t length) {
        result_.output_total_bytes += length;
        const std::size_t room =
            limits_.output_bytes - std::min(limits_.output_bytes, result_.output.size());
        result_.output.append(data, std::min(room, length));
        if (length > room) {
            result_.output_truncated = true;
        }
    }

    void take_messages(const char* data, std::size_t length) {
        if (killed_) {
            return;  // the end is decided; what is still buffered no longer matters
        }
        message_total_ += length;
        if (message_total_ > limits_.message_bytes) {
            kill_for(ChildResult::End::message_overflow);
            return;
        }
        partial_line_.append(data, length);
        std::size_t line_start = 0;
        for (std::size_t newline = partial_line_.find('\n'); newline != std::string::npos;
             newline = partial_line_.find('\n', line_start)) {
            const std::string line = partial_line_.substr(line_start, newline - line_start);
            line_start = newline + 1;
            if (!on_message_) {
                continue;
            }
            const double next_stage_seconds = on_message_(line);
            if (next_stage_seconds > 0 && !exited_) {
                deadline_ = Clock::now() + to_duration(next_stage_seconds);
                result_.limit_seconds = next_stage_seconds;
            }
        }
        partial_line_.erase(0, line_start);
    }

    // Writes what the child's stdin takes now.
    void send_input() {
        const ssize_t sent = ::send(input_writer_.get(), input_->data() + input_sent_,
                                    input_->size() - input_sent_, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent > 0) {
            input_sent_ += static_cast<std::size_t>(sent);
        }
        // Done, or the child stopped reading (EPIPE, ECONNRESET): either way stdin ends here.
        if (input_sent_ == input_->size() ||
            (sent < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
            input_writer_.reset();
        }
    }

    ChildProcess& child_;
    const pid_t pid_;
    const ChildLimits& limits_;
    const std::function<double(const std::string& line)>& on_message_;
    const Clock::time_point start_;
    Fd& output_;
    Fd& messages_;
    Fd& input_writer_;
    const std::optional<std::string>& input_;
    const std::size_t page_size_;
    ChildResult result_;
    Clock::time_point deadline_;
    Clock::time_point next_memory_sample_;
    Clock::time_point exited_at_{};
    bool exited_ = false;
    bool killed_ = false;  // by us, for the reason in result_.end
    std::size_t message_total_ = 0;
    std::size_t input_sent_ = 0;
    std::string partial_line_;
    std::array<char, 64 * 1024> buffer_{};
};

// What the forked child does before exec: its arguments, folder, descriptors and limits. Every
// pointer in it points into `argv` and `working_directory`.
ChildSetup child_setup(const std::vector<std::string>& argv, const std::string& working_directory,
                       const ChildLimits& limits) {
    ChildSetup setup;
    for (const std::string& argument : argv) {
        setup.argv.push_back(const_cast<char*>(argument.c_str()));
    }
    setup.argv.push_back(nullptr);
    setup.working_directory = working_directory.empty() ? nullptr : working_directory.c_str();
    setup.parent_pid = ::getpid();
    setup.core_limit = rlimit{0, 0};
    setup.file_size_limit = clamped_limit(RLIMIT_FSIZE, static_cast<rlim_t>(limits.file_bytes));
    setup.open_files_limit =
        clamped_limit(RLIMIT_NOFILE, static_cast<rlim_t>(std::max(limits.open_files, 0)));
    rlimit current_files{};
    if (::getrlimit(RLIMIT_NOFILE, &current_files) == 0 &&
        current_files.rlim_cur != RLIM_INFINITY) {
        setup.highest_fd = static_cast<int>(std::min<rlim_t>(current_files.rlim_cur, 1 << 20));
    }
    return setup;
}

// The exec-error pipe reaches EOF at a successful exec, or carries the reason it failed: then,
// that reason, the child reaped.
std::optional<std::string> exec_failure(Fd& exec_error, ChildProcess& child,
                                        const std::string& program,
                                        const std::string& working_directory) {
    SpawnFailure failure{};
    std::size_t received = 0;
    while (received < sizeof failure) {
        const ssize_t length =
            ::read(exec_error.get(), reinterpret_cast<char*>(&failure) + received,
                   sizeof failure - received);
        if (length < 0 && errno == EINTR) {
            continue;
        }
        if (length <= 0) {
            break;
        }
        received += static_cast<std::size_t>(length);
    }
    exec_error.reset();
    if (received != sizeof failure) {
        return std::nullopt;
    }
    child.wait_status();
    const auto step = static_cast<SpawnStep>(failure.step);
    std::string error = std::string(describe(step)) + " for " + program;
    if (step == SpawnStep::chdir) {
        error += " into " + working_directory;
    }
    if (failure.error_number != 0) {
        error += ": " + errno_text(failure.error_number);
    }
    return error;
}

}  // namespace

ChildResult run_child(const std::vector<std::string>& argv, const ChildLimits& limits,
                      const std::function<double(const std::string& line)>& on_message,
                      const std::string& working_directory,
                      const std::optional<std::string>& input) {
    if (argv.empty()) {
        throw std::invalid_argument("run_child: argv is empty");
    }
    const std::string& program = argv.front();

    Pipe output;
    Pipe messages;
    Pipe exec_error;
    int error_number = 0;
    if (!make_pipe(output, error_number) || !make_pipe(messages, error_number) ||
        !make_pipe(exec_error, error_number)) {
        return spawn_failure("pipe2 for " + program + ": " + errno_text(error_number),
                             limits.seconds);
    }
    // A socket rather than a pipe: send(MSG_NOSIGNAL) to a child that closed its stdin fails with
    // EPIPE instead of raising SIGPIPE in the grader.
    Fd input_writer;
    Fd input_reader;
    if (input) {
        int sockets[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
            return spawn_failure("socketpair for " + program + "'s input: " + errno_text(errno),
                                 limits.seconds);
        }
        input_writer = Fd(sockets[0]);
        input_reader = Fd(sockets[1]);
        ::shutdown(input_writer.get(), SHUT_RD);
        ::shutdown(input_reader.get(), SHUT_WR);
    }

    ChildSetup setup = child_setup(argv, working_directory, limits);
    setup.output_fd = output.write_end.get();
    setup.message_fd = messages.write_end.get();
    setup.error_fd = exec_error.write_end.get();
    setup.input_fd = input_reader.get();
    const long page_size_value = ::sysconf(_SC_PAGESIZE);
    const std::size_t page_size =
        page_size_value > 0 ? static_cast<std::size_t>(page_size_value) : 4096;

    const Clock::time_point start = Clock::now();
    const pid_t pid = ::fork();
    if (pid < 0) {
        return spawn_failure("fork for " + program + ": " + errno_text(errno), limits.seconds);
    }
    if (pid == 0) {
        become_child(setup);
    }
    ChildProcess child(pid);
    // Also set here so that a kill of the group cannot race the child's own setpgid. Fails
    // harmlessly with EACCES once the child has exec'd (by then it has set it itself).
    ::setpgid(pid, pid);
    output.write_end.reset();
    messages.write_end.reset();
    exec_error.write_end.reset();
    input_reader.reset();
    if (std::optional<std::string> error =
            exec_failure(exec_error.read_end, child, program, working_directory)) {
        return spawn_failure(std::move(*error), limits.seconds);
    }

    for (Fd* fd : {&output.read_end, &messages.read_end, &input_writer}) {
        if (fd->open()) {
            ::fcntl(fd->get(), F_SETFL, ::fcntl(fd->get(), F_GETFL) | O_NONBLOCK);
        }
    }
    if (input && input->empty()) {
        input_writer.reset();
    }
    return Supervision(child, pid, limits, on_message, start, output.read_end, messages.read_end,
                       input_writer, input, page_size)
        .run();
}

}  // namespace grader
