#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "isolation/child.hpp"
#include "isolation/confine.hpp"

// The misbehaving children are this test binary itself, run again as
// `test_isolation --play-child <mode> [argument]`: no extra executables to build or find.
// The mode is picked before doctest's main runs, from a static initializer.

namespace {

constexpr const char* play_child_flag = "--play-child";

std::vector<std::string> own_command_line() {
    std::ifstream file("/proc/self/cmdline", std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(file)),
                           std::istreambuf_iterator<char>());
    std::vector<std::string> arguments;
    std::string current;
    for (const char c : text) {
        if (c == '\0') {
            arguments.push_back(current);
            current.clear();
        } else {
            current += c;
        }
    }
    return arguments;
}

void write_all(int fd, const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t written = ::write(fd, text.data() + done, text.size() - done);
        if (written <= 0) {
            return;
        }
        done += static_cast<std::size_t>(written);
    }
}

void sleep_seconds(double seconds) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

[[noreturn]] void sleep_forever() {
    while (true) {
        ::pause();
    }
}

// Forks a sleeper in the same process group and tells the parent its pid on fd 3.
void leave_grandchild() {
    const pid_t grandchild = ::fork();
    if (grandchild == 0) {
        sleep_forever();
    }
    write_all(3, "grandchild " + std::to_string(grandchild) + "\n");
}

bool fd_is_open(int fd) {
    return ::fcntl(fd, F_GETFD) != -1;
}

int play_child(const std::string& mode, const std::string& argument) {
    if (mode == "exit_with") {
        write_all(1, "to stdout\n");
        write_all(2, "to stderr\n");
        return std::atoi(argument.c_str());
    }
    if (mode == "split_messages") {
        write_all(3, "first line\nhel");
        sleep_seconds(0.05);
        write_all(3, "lo\nwor");
        sleep_seconds(0.05);
        write_all(3, "ld\nunfinished");
        return 0;
    }
    if (mode == "second_stage") {
        sleep_seconds(0.3);
        write_all(3, "stage two\n");
        sleep_seconds(0.5);
        return 0;
    }
    if (mode == "hang_with_grandchild") {
        leave_grandchild();
        sleep_forever();
    }
    if (mode == "exit_leaving_grandchild") {
        leave_grandchild();
        return 0;
    }
    if (mode == "print_forever") {
        const std::string chunk(4096, 'x');
        while (true) {
            write_all(1, chunk);
        }
    }
    if (mode == "print_bytes") {
        write_all(1, std::string(std::strtoul(argument.c_str(), nullptr, 10), 'y'));
        return 0;
    }
    if (mode == "allocate_forever") {
        constexpr std::size_t chunk = 16u << 20;
        for (int i = 0; i < 256; ++i) {
            auto* block = static_cast<char*>(std::malloc(chunk));
            std::memset(block, 1, chunk);  // touch it, so it is resident
        }
        sleep_forever();
    }
    if (mode == "segfault") {
        ::raise(SIGSEGV);
        return 0;
    }
    if (mode == "check_fds") {
        // 0-3 are the child's; 4 (exec error pipe) and the parent's leaked fd must be closed.
        char byte;
        const bool stdin_empty = ::read(0, &byte, 1) == 0;
        const int leaked = std::atoi(argument.c_str());
        const std::string report = std::string("stdin_empty=") + (stdin_empty ? "1" : "0") +
                                   " fd3=" + (fd_is_open(3) ? "1" : "0") +
                                   " fd4=" + (fd_is_open(4) ? "1" : "0") +
                                   " leaked=" + (fd_is_open(leaked) ? "1" : "0") + "\n";
        write_all(1, report);
        return 0;
    }
    if (mode == "write_big_file") {
        const int fd = ::open("big.bin", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const std::string chunk(64 * 1024, 'z');
        for (int i = 0; i < 1024; ++i) {
            if (::write(fd, chunk.data(), chunk.size()) < 0) {
                return errno == EFBIG ? 3 : 4;
            }
        }
        return 0;
    }
    if (mode == "message_without_newline") {
        write_all(3, std::string(4096, 'm'));
        sleep_forever();
    }
    if (mode == "echo_stdin") {
        char buffer[4096];
        ssize_t length;
        while ((length = ::read(0, buffer, sizeof buffer)) > 0) {
            write_all(1, std::string(buffer, static_cast<std::size_t>(length)));
        }
        return 0;
    }
    if (mode == "ignore_stdin") {
        ::close(0);
        return 5;
    }
    if (mode == "confine_landlock" || mode == "confine_empty_root" || mode == "confine_both") {
        // argument: a file that exists. Reports what the confined process could still do.
        grader::ConfineOptions options;
        options.landlock = mode != "confine_empty_root";
        options.empty_root = mode != "confine_landlock";
        const grader::Confinement confinement = grader::confine_to_no_files(options);
        const int fd = ::open(argument.c_str(), O_RDONLY | O_CLOEXEC);
        const int open_error = fd < 0 ? errno : 0;
        struct stat info {};
        const bool stat_sees_it = ::stat(argument.c_str(), &info) == 0;
        const int root = ::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        write_all(3, "landlock=" + std::to_string(confinement.landlock_abi) + " empty_root=" +
                         (confinement.empty_root ? "1" : "0") + " opened=" + (fd >= 0 ? "1" : "0") +
                         " open_error=" + std::to_string(open_error) +
                         " stat_sees_it=" + (stat_sees_it ? "1" : "0") +
                         " root_opened=" + (root >= 0 ? "1" : "0") + "\n");
        write_all(3, "description " + confinement.description + "\n");
        return 0;
    }
    return 99;
}

const bool played_child = [] {
    const std::vector<std::string> arguments = own_command_line();
    if (arguments.size() >= 3 && arguments[1] == play_child_flag) {
        std::_Exit(play_child(arguments[2], arguments.size() >= 4 ? arguments[3] : ""));
    }
    return false;
}();

std::string own_executable() {
    std::vector<char> path(4096);
    const ssize_t length = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
    REQUIRE(length > 0);
    return std::string(path.data(), static_cast<std::size_t>(length));
}

std::vector<std::string> child_command(const std::string& mode, const std::string& argument = {}) {
    std::vector<std::string> argv = {own_executable(), play_child_flag, mode};
    if (!argument.empty()) {
        argv.push_back(argument);
    }
    return argv;
}

grader::ChildLimits short_limits() {
    grader::ChildLimits limits;
    limits.seconds = 0.5;
    return limits;
}

const auto ignore_messages = [](const std::string&) { return 0.0; };

pid_t grandchild_from(const std::vector<std::string>& lines) {
    for (const std::string& line : lines) {
        if (line.rfind("grandchild ", 0) == 0) {
            return static_cast<pid_t>(std::stol(line.substr(11)));
        }
    }
    return 0;
}

// Gone, or a zombie waiting for init to reap it: either way it no longer runs.
bool process_gone_within(pid_t pid, double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    do {
        std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
        std::string text;
        if (!stat || !std::getline(stat, text)) {
            return true;
        }
        const std::size_t paren = text.rfind(')');
        if (paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z') {
            return true;
        }
        sleep_seconds(0.01);
    } while (std::chrono::steady_clock::now() < until);
    return false;
}

}  // namespace

TEST_CASE("a child that exits reports its exit code and its interleaved output") {
    const grader::ChildResult result =
        grader::run_child(child_command("exit_with", "7"), short_limits(), ignore_messages);
    CHECK(result.end == grader::ChildResult::End::exited);
    CHECK(result.exit_code == 7);
    CHECK(result.output == "to stdout\nto stderr\n");
    CHECK_FALSE(result.output_truncated);
    CHECK(result.seconds < 0.5);
    CHECK(std::string(grader::to_string(result.end)) == "exited");
}

TEST_CASE("messages arrive as whole lines in order, even when split across writes") {
    std::vector<std::string> lines;
    const grader::ChildResult result = grader::run_child(
        child_command("split_messages"), short_limits(), [&](const std::string& line) {
            lines.push_back(line);
            return 0.0;
        });
    CHECK(result.end == grader::ChildResult::End::exited);
    CHECK(result.exit_code == 0);
    // The last, unterminated piece is not a message.
    CHECK(lines == std::vector<std::string>{"first line", "hello", "world"});
}

TEST_CASE("a stage message gives the child a new deadline") {
    SUBCASE("extended: the child finishes its second stage") {
        const grader::ChildResult result = grader::run_child(
            child_command("second_stage"), short_limits(),
            [](const std::string& line) { return line == "stage two" ? 1.5 : 0.0; });
        CHECK(result.end == grader::ChildResult::End::exited);
        CHECK(result.limit_seconds == doctest::Approx(1.5));
        CHECK(result.seconds > 0.5);
    }
    SUBCASE("not extended: the first limit still holds") {
        const grader::ChildResult result =
            grader::run_child(child_command("second_stage"), short_limits(), ignore_messages);
        CHECK(result.end == grader::ChildResult::End::timed_out);
        CHECK(result.limit_seconds == doctest::Approx(0.5));
    }
}

TEST_CASE("a hung child and its grandchild are killed at the deadline") {
    std::vector<std::string> lines;
    const auto started = std::chrono::steady_clock::now();
    const grader::ChildResult result = grader::run_child(
        child_command("hang_with_grandchild"), short_limits(), [&](const std::string& line) {
            lines.push_back(line);
            return 0.0;
        });
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    CHECK(result.end == grader::ChildResult::End::timed_out);
    CHECK(std::string(grader::to_string(result.end)) == "timed_out");
    CHECK(result.seconds >= 0.5);
    CHECK(elapsed < 1.2);
    const pid_t grandchild = grandchild_from(lines);
    REQUIRE(grandchild > 0);
    CHECK(process_gone_within(grandchild, 1.0));
}

TEST_CASE("a grandchild left behind by a child that exited is killed, and is not waited for") {
    std::vector<std::string> lines;
    const grader::ChildResult result = grader::run_child(
        child_command("exit_leaving_grandchild"), short_limits(), [&](const std::string& line) {
            lines.push_back(line);
            return 0.0;
        });
    CHECK(result.end == grader::ChildResult::End::exited);
    CHECK(result.exit_code == 0);
    CHECK(result.seconds < 0.4);
    const pid_t grandchild = grandchild_from(lines);
    REQUIRE(grandchild > 0);
    CHECK(process_gone_within(grandchild, 1.0));
}

TEST_CASE("output past the limit is counted but not kept") {
    grader::ChildLimits limits = short_limits();
    limits.output_bytes = 1000;
    SUBCASE("a child that prints a known amount") {
        const grader::ChildResult result =
            grader::run_child(child_command("print_bytes", "300000"), limits, ignore_messages);
        CHECK(result.end == grader::ChildResult::End::exited);
        CHECK(result.output == std::string(1000, 'y'));
        CHECK(result.output_truncated);
        CHECK(result.output_total_bytes == 300000);
    }
    SUBCASE("a child that prints without end is drained until its deadline") {
        const grader::ChildResult result =
            grader::run_child(child_command("print_forever"), limits, ignore_messages);
        CHECK(result.end == grader::ChildResult::End::timed_out);
        CHECK(result.output.size() == 1000);
        CHECK(result.output_truncated);
        CHECK(result.output_total_bytes > 100000);
        CHECK(result.seconds < 1.2);
    }
}

TEST_CASE("a child that grows past the memory limit is killed") {
    grader::ChildLimits limits;
    limits.seconds = 5.0;
    limits.memory_bytes = 64u << 20;
    const grader::ChildResult result =
        grader::run_child(child_command("allocate_forever"), limits, ignore_messages);
    CHECK(result.end == grader::ChildResult::End::memory_exceeded);
    CHECK(result.peak_memory_bytes > limits.memory_bytes);
}

TEST_CASE("a child killed by a signal reports the signal") {
    const grader::ChildResult result =
        grader::run_child(child_command("segfault"), short_limits(), ignore_messages);
    CHECK(result.end == grader::ChildResult::End::signaled);
    CHECK(result.signal == SIGSEGV);
}

TEST_CASE("a program that cannot be started is a spawn failure with the reason") {
    SUBCASE("missing executable") {
        const grader::ChildResult result =
            grader::run_child({"/nonexistent/grader-child"}, short_limits(), ignore_messages);
        CHECK(result.end == grader::ChildResult::End::spawn_failed);
        CHECK(result.error.find("/nonexistent/grader-child") != std::string::npos);
        CHECK(result.error.find("No such file or directory") != std::string::npos);
    }
    SUBCASE("missing working directory") {
        const grader::ChildResult result =
            grader::run_child(child_command("exit_with", "0"), short_limits(), ignore_messages,
                              "/nonexistent/workdir");
        CHECK(result.end == grader::ChildResult::End::spawn_failed);
        CHECK(result.error.find("chdir") != std::string::npos);
        CHECK(result.error.find("/nonexistent/workdir") != std::string::npos);
    }
}

TEST_CASE("the child sees only stdin from /dev/null, output, and the message channel") {
    // Opened without O_CLOEXEC, and moved above the fds the child keeps: only the child's own
    // cleanup keeps it out.
    const int opened = ::open("/proc/self/exe", O_RDONLY);
    REQUIRE(opened >= 0);
    const int leaked = ::fcntl(opened, F_DUPFD, 10);
    ::close(opened);
    REQUIRE(leaked >= 10);
    const grader::ChildResult result = grader::run_child(
        child_command("check_fds", std::to_string(leaked)), short_limits(), ignore_messages);
    ::close(leaked);
    CHECK(result.end == grader::ChildResult::End::exited);
    CHECK(result.output == "stdin_empty=1 fd3=1 fd4=0 leaked=0\n");
}

TEST_CASE("a child cannot write a file larger than the file limit") {
    char directory_template[] = "/tmp/grader-isolation-XXXXXX";
    const char* directory = ::mkdtemp(directory_template);
    REQUIRE(directory != nullptr);
    grader::ChildLimits limits = short_limits();
    limits.seconds = 5.0;
    limits.file_bytes = 1u << 20;
    const grader::ChildResult result =
        grader::run_child(child_command("write_big_file"), limits, ignore_messages, directory);
    const bool stopped_by_signal =
        result.end == grader::ChildResult::End::signaled && result.signal == SIGXFSZ;
    const bool stopped_by_error =
        result.end == grader::ChildResult::End::exited && result.exit_code == 3;
    CHECK((stopped_by_signal || stopped_by_error));
    const std::string file = std::string(directory) + "/big.bin";
    struct stat info {};
    REQUIRE(::stat(file.c_str(), &info) == 0);
    CHECK(info.st_size <= static_cast<off_t>(limits.file_bytes));
    ::unlink(file.c_str());
    ::rmdir(directory);
}

TEST_CASE("a message channel flooded past its limit ends the child") {
    grader::ChildLimits limits = short_limits();
    limits.seconds = 5.0;
    limits.message_bytes = 1024;
    const grader::ChildResult result =
        grader::run_child(child_command("message_without_newline"), limits, ignore_messages);
    CHECK(result.end == grader::ChildResult::End::message_overflow);
    CHECK(result.seconds < 1.0);
}

TEST_CASE("children run from several threads at once keep their results apart") {
    constexpr int thread_count = 4;
    std::vector<grader::ChildResult> results(thread_count);
    std::vector<std::vector<std::string>> lines(thread_count);
    std::vector<std::thread> threads;
    for (int index = 0; index < thread_count; ++index) {
        threads.emplace_back([&, index] {
            const auto argv = index % 2 == 0 ? child_command("exit_with", std::to_string(index))
                                             : child_command("split_messages");
            results[index] = grader::run_child(argv, short_limits(), [&](const std::string& line) {
                lines[index].push_back(line);
                return 0.0;
            });
        });
    }
    for (std::thread& thread : threads) {
        thread.join();
    }
    for (int index = 0; index < thread_count; ++index) {
        CAPTURE(index);
        CHECK(results[index].end == grader::ChildResult::End::exited);
        if (index % 2 == 0) {
            CHECK(results[index].exit_code == index);
            CHECK(results[index].output == "to stdout\nto stderr\n");
            CHECK(lines[index].empty());
        } else {
            CHECK(results[index].exit_code == 0);
            CHECK(lines[index] == std::vector<std::string>{"first line", "hello", "world"});
        }
    }
}

TEST_CASE("input given to a child reaches its stdin whole, and then stdin ends") {
    // Larger than a socket's buffer: it is written while the child's output is read.
    std::string input;
    for (int i = 0; input.size() < (3u << 20); ++i) {
        input += "line " + std::to_string(i) + "\n";
    }
    grader::ChildLimits limits = short_limits();
    limits.seconds = 10.0;
    limits.output_bytes = input.size() + 1;
    const grader::ChildResult result =
        grader::run_child(child_command("echo_stdin"), limits, ignore_messages, {}, input);
    CHECK(result.end == grader::ChildResult::End::exited);
    CHECK(result.exit_code == 0);
    CHECK(result.output.size() == input.size());
    CHECK(result.output == input);
}

TEST_CASE("a child that never reads its input costs the grader no SIGPIPE") {
    const std::string input(8u << 20, 'i');
    const grader::ChildResult result = grader::run_child(
        child_command("ignore_stdin"), short_limits(), ignore_messages, {}, input);
    CHECK(result.end == grader::ChildResult::End::exited);
    CHECK(result.exit_code == 5);
}

namespace {

struct ConfinedView {
    std::string facts;
    std::string description;
};

ConfinedView run_confined(const std::string& mode, const std::string& existing_file) {
    ConfinedView view;
    grader::ChildLimits limits = short_limits();
    limits.seconds = 5.0;
    const grader::ChildResult result =
        grader::run_child(child_command(mode, existing_file), limits, [&](const std::string& line) {
            if (line.rfind("description ", 0) == 0) {
                view.description = line.substr(12);
            } else {
                view.facts = line;
            }
            return 0.0;
        });
    CHECK(result.end == grader::ChildResult::End::exited);
    return view;
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a confined process can open no file, and says how it was confined") {
    char directory_template[] = "/tmp/grader-confine-XXXXXX";
    const char* directory = ::mkdtemp(directory_template);
    REQUIRE(directory != nullptr);
    const std::string file = std::string(directory) + "/secret.txt";
    std::ofstream(file) << "secret";
    const grader::ConfinementSupport& support = grader::confinement_support();
    MESSAGE("this kernel: Landlock ABI " << support.landlock_abi << ", user namespaces "
                                         << std::string(support.user_namespaces ? "yes" : "no"));

    SUBCASE("Landlock alone: nothing opens, though stat still sees the file") {
        const ConfinedView view = run_confined("confine_landlock", file);
        if (support.landlock_abi == 0) {
            MESSAGE("SKIPPED: this kernel offers no Landlock");
            CHECK(has(view.facts, "landlock=0"));
            CHECK(has(view.description, "no confinement"));
            return;
        }
        CHECK(view.facts == "landlock=" + std::to_string(support.landlock_abi) +
                                " empty_root=0 opened=0 open_error=" + std::to_string(EACCES) +
                                " stat_sees_it=1 root_opened=0");
        CHECK(view.description.rfind("Landlock ABI " + std::to_string(support.landlock_abi) +
                                         ": the student's compile could open no file",
                                     0) == 0);
    }
    SUBCASE("an empty root alone: no host path exists any more") {
        const ConfinedView view = run_confined("confine_empty_root", file);
        if (!support.user_namespaces) {
            MESSAGE("SKIPPED: this kernel offers no unprivileged user namespaces");
            CHECK(has(view.facts, "empty_root=0"));
            return;
        }
        CHECK(view.facts == "landlock=0 empty_root=1 opened=0 open_error=" +
                                std::to_string(ENOENT) + " stat_sees_it=0 root_opened=1");
        CHECK(has(view.description, "an empty mount namespace"));
    }
    SUBCASE("both, as the compile child uses them") {
        const ConfinedView view = run_confined("confine_both", file);
        if (!support.confines()) {
            MESSAGE("SKIPPED: this kernel offers neither Landlock nor user namespaces");
            CHECK(has(view.description, "no confinement"));
            CHECK_FALSE(grader::confinement_warning(support).empty());
            return;
        }
        CHECK(has(view.facts, "opened=0"));
        if (support.user_namespaces) {
            CHECK(has(view.facts, "stat_sees_it=0"));
        }
        CHECK(grader::confinement_warning(support).empty());
    }
    ::unlink(file.c_str());
    ::rmdir(directory);
}
