// `grader batch CLASS --output DIR`: grades every submission folder of a class and writes the
// reports, the gradebook, the summary and the class page.

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "batch/batch.hpp"
#include "batch/shard.hpp"
#include "cli/commands.hpp"
#include "cli/locations.hpp"
#include "cli/option_checks.hpp"
#include "common/text.hpp"
#include "cuda/resources.hpp"
#include "device/backend.hpp"
#include "exercise/exercise.hpp"
#include "grade/grade.hpp"
#include "model/report.hpp"
#include "report/class_outputs.hpp"
#include "text/text_safety.hpp"

namespace grader::cli {
namespace {

// The exercise an earlier batch wrote its class outputs for in this folder, if one did (an empty
// class's outputs name none).
std::optional<std::string> earlier_exercise(const std::filesystem::path& output) {
    return run_exercise_id(output, {});
}

struct BatchCommandOptions {
    std::filesystem::path submissions;
    std::filesystem::path output;
    std::filesystem::path exercise;
    int jobs = 0;
    double timeout = 0.0;
    std::vector<int> devices;
    bool resume = false;
    bool own_contexts = false;
    std::vector<std::string> only;
    std::string backend = "auto";
    std::string shard;  // "I/N", empty: the whole class
    std::string prairielearn_qid;
};

// The first SIGINT or SIGTERM asks the batch to stop; a second one ends the process at once.
// The signals are blocked in every thread and taken by one watcher thread with sigwait, so no
// handler runs inside a grade and no system call of the pool sees EINTR.
std::atomic<bool> stop_requested{false};
std::atomic<int> stop_signal{0};

void watch_stop_signals() {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // inherited by the pool's threads
    std::thread([signals] {
        for (;;) {
            int signal_number = 0;
            if (::sigwait(&signals, &signal_number) != 0) {
                continue;
            }
            if (stop_signal.exchange(signal_number) != 0) {
                std::_Exit(128 + signal_number);
            }
            stop_requested.store(true);
        }
    }).detach();
}

std::string format_duration(double seconds) {
    const long total = std::lround(seconds);
    if (total < 60) {
        return std::to_string(total) + "s";
    }
    if (total < 3600) {
        return std::to_string((total + 30) / 60) + "m";
    }
    const long minutes = (total + 30) / 60;
    char text[32];
    std::snprintf(text, sizeof text, "%ldh%02ld", minutes / 60, minutes % 60);
    return text;
}

double per_minute(const BatchStatus& status) {
    return status.elapsed_seconds > 0 ? status.graded * 60.0 / status.elapsed_seconds : 0.0;
}

// What was skipped in the class folder, a line per reason: a Mac's zip leaves a __MACOSX and a
// "._" twin of every file, which are said once, not once each.
std::vector<std::string> skipped_lines(const std::vector<SkippedEntry>& skipped) {
    std::vector<std::pair<std::string, std::vector<std::string>>> by_reason;
    for (const auto& entry : skipped) {
        auto reason = std::find_if(by_reason.begin(), by_reason.end(),
                                   [&](const auto& group) { return group.first == entry.reason; });
        if (reason == by_reason.end()) {
            by_reason.push_back({entry.reason, {}});
            reason = std::prev(by_reason.end());
        }
        reason->second.push_back("'" + text::visible_line(entry.name) + "'");
    }
    constexpr std::size_t kNamesShown = 3;
    std::vector<std::string> lines;
    for (const auto& [reason, names] : by_reason) {
        std::string named;
        for (std::size_t i = 0; i < names.size() && i < kNamesShown; ++i) {
            named += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
        }
        if (names.size() > kNamesShown) {
            named += " and " + std::to_string(names.size() - kNamesShown) + " more";
        }
        lines.push_back("skipped " + named + " in the class folder: " + reason);
    }
    return lines;
}

// One log line: whatever a submission made its folder name or its compiler say (an #error text
// with terminal escapes, a newline that would forge a second line) is shown, never obeyed.
std::string describe_graded(const GradedSubmission& graded) {
    std::string line = "graded " + text::visible_line(graded.student) + ": " +
                       to_string(graded.verdict) + " " + format_number(graded.score, 2) + "/" +
                       format_number(graded.max_score, 2) + " (" +
                       format_number(graded.wall_seconds, 2) + " s)";
    if (graded.verdict != Verdict::pass && !graded.reason.empty()) {
        line += ": " + text::shorten(text::visible_line(graded.reason), 160);
    }
    return line;
}

// What the batch says at once, on standard error, whatever the progress shown.
class NoticedProgress : public BatchProgress {
public:
    void notice(const std::string& line) override {
        std::fprintf(stderr, "batch: %s\n", text::visible_line(line).c_str());
        std::fflush(stderr);
    }
};

// Not a terminal: one plain line per finished submission, for a log file or CI.
class LogProgress : public NoticedProgress {
public:
    void batch_started(const BatchStatus& status) override {
        std::string devices;
        for (const int device : status.devices) {
            devices += (devices.empty() ? "" : ",") + std::to_string(device);
        }
        const std::string where = status.backend == "sim" ? "the PTX simulator" : "GPU " + devices;
        std::fprintf(stderr, "batch: %zu to grade, %zu kept from an earlier run; %d jobs on %s\n",
                     status.total - status.kept, status.kept, status.jobs, where.c_str());
        std::fflush(stderr);
    }
    void submission_started(const std::string& student, const BatchStatus&) override {
        spdlog::debug("grading {}", text::visible_line(student));
    }
    void submission_finished(const GradedSubmission& graded, const BatchStatus&) override {
        std::fprintf(stderr, "%s\n", describe_graded(graded).c_str());
        std::fflush(stderr);
    }
};

// A terminal: one line, rewritten in place.
class TerminalProgress : public NoticedProgress {
public:
    void batch_started(const BatchStatus& status) override { draw(status); }
    void submission_started(const std::string&, const BatchStatus& status) override {
        draw(status);
    }
    void notice(const std::string& line) override {
        std::fprintf(stderr, "\r\033[K");
        NoticedProgress::notice(line);
    }
    void submission_finished(const GradedSubmission& graded, const BatchStatus& status) override {
        if (graded.harness_error) {
            std::fprintf(stderr, "\r\033[K%s\n", describe_graded(graded).c_str());
        }
        draw(status);
    }
    void finish() {
        if (drawn_) {
            std::fprintf(stderr, "\r\033[K");
            std::fflush(stderr);
        }
    }

private:
    void draw(const BatchStatus& status) {
        std::string line =
            "[" + std::to_string(status.done) + "/" + std::to_string(status.total) + "]";
        const double rate = per_minute(status);
        if (status.graded > 0 && rate > 0) {
            line += " " + format_number(rate, 1) + "/min  ~" +
                    format_duration((status.total - status.done) * 60.0 / rate) + " left";
        }
        if (status.failed > 0) {
            line += "  " + std::to_string(status.failed) + " failed";
        }
        if (status.ungradable > 0) {
            line += "  " + std::to_string(status.ungradable) + " ungradable";
        }
        if (!status.in_flight.empty()) {
            line += "  grading";
            for (const auto& student : status.in_flight) {
                line += " " + text::visible_line(student);
            }
        }
        std::fprintf(stderr, "\r%s\033[K", text::shorten(line, terminal_width() - 1).c_str());
        std::fflush(stderr);
        drawn_ = true;
    }

    static std::size_t terminal_width() {
        winsize size{};
        if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 20) {
            return size.ws_col;
        }
        return 80;
    }

    bool drawn_ = false;
};

class SilentProgress : public NoticedProgress {};

// What the class as a whole asks the instructor to know: an unconfined compile, entries of the
// class folder that are no submission, an empty class.
void warn_about_class(const BatchResult& result, const BatchCommandOptions& options) {
    // Each said once for the class, not once per student.
    if (!result.unconfined_compile.empty()) {
        // Inside a container, "grade in a container" is no advice: what is missing is the host
        // kernel's Landlock or the container's leave to use it.
        std::error_code no_file;
        const bool in_container = std::filesystem::exists("/.dockerenv", no_file) ||
                                  std::filesystem::exists("/run/.containerenv", no_file);
        spdlog::warn(
            "the students' code was compiled without confinement on this machine ({}): a "
            "submission's compile could read any file this user can{}",
            text::visible_line(result.unconfined_compile),
            in_container ? " in this container; the host's kernel needs Landlock (Linux 5.13 or "
                           "later) and the container's seccomp profile must allow the landlock_* "
                           "calls (Docker's default does from 20.10.18; docs/docker.md)"
                         : "; grade in a container or on a kernel with Landlock");
    }
    for (const std::string& line : skipped_lines(result.skipped)) {
        spdlog::warn("{}", line);
    }
    if (result.entries.empty() && result.abandoned.empty() && result.not_started.empty()) {
        spdlog::warn(
            "{} holds no submission folder: the class outputs are empty (a class folder "
            "has one sub-folder per student, each with the exercise's files)",
            text::visible_line(options.submissions.string()));
    }
}

// The run in a few lines on standard output: counts, flags, the files written.
void print_summary(const BatchResult& result) {
    const BatchStatus& status = result.status;
    std::printf(
        "%zu submissions graded in %s s (%s/min), %zu kept: %zu pass, %zu fail, "
        "%zu ungradable\n",
        status.graded, format_number(result.wall_seconds, 1).c_str(),
        format_number(per_minute(status), 1).c_str(), status.kept, status.passed, status.failed,
        status.ungradable);
    if (result.harness_errors > 0) {
        std::printf("%zu of them could not be graded by the harness: see their reports\n",
                    result.harness_errors);
    }
    for (const auto& line : result.device_servers) {
        std::printf("%s\n", line.c_str());
    }
    if (result.flagged > 0) {
        std::printf(
            "%zu submissions to look at twice (a shared or missing student id, a copied or "
            "missing sentence, copied measurements): see the flags in the gradebook and the "
            "class page\n",
            result.flagged);
    }
    for (const auto& file : result.class_outputs) {
        std::printf("wrote %s\n", text::visible_line(file.string()).c_str());
    }
    std::fflush(stdout);
}

int run_batch_command(const BatchCommandOptions& options, const GlobalOptions& global) {
    const std::string output_shown = text::visible_line(options.output.string());
    std::error_code unreadable;  // a name the system refuses is check_output_folder's to say
    if (std::filesystem::exists(options.output, unreadable) &&
        !std::filesystem::is_directory(options.output, unreadable)) {
        spdlog::error("--output {} exists and is not a folder", output_shown);
        return kExitUsage;
    }
    try {
        check_output_folder(options.submissions, options.output);
    } catch (const BatchError& error) {
        spdlog::error("{}", text::visible_line(error.what()));
        return kExitUsage;
    }
    std::optional<Shard> shard;
    if (!options.shard.empty()) {
        std::string why;
        shard = parse_shard(options.shard, why);
        if (!shard) {
            spdlog::error("{}", text::visible_line(why));
            return kExitUsage;
        }
        // A cluster's task must never grade on the simulator because its GPU went missing.
        if (options.backend == "auto") {
            spdlog::error(
                "--shard needs --backend cuda or --backend sim: a task of a job array says which "
                "it grades on, so that a node without its GPU is never silently simulated");
            return kExitUsage;
        }
        const ResolvedBackend cuda =
            options.backend == "cuda" ? resolve_backend("cuda", 0) : ResolvedBackend{};
        if (options.backend == "cuda" && !cuda.gpu) {
            const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
            spdlog::error(
                "ungradable: this task sees no GPU ({}) and --backend cuda asked for one; "
                "nothing was graded, and running the task again where the scheduler gives it a "
                "GPU (sbatch --gres=gpu:1) grades its share. Not the students' fault",
                visible != nullptr ? "CUDA_VISIBLE_DEVICES=" + text::visible_line(visible)
                                   : text::visible_line(cuda.no_gpu_reason));
            return kExitUngradable;
        }
    }
    // A shard's task started again (a requeue) finishes what it began: it is always a resume.
    if (!shard && !options.resume && options.only.empty() && output_has_reports(options.output)) {
        spdlog::error(
            "{} already holds reports from an earlier batch: add --resume to finish it "
            "(keeping the reports there), or choose another --output folder",
            output_shown);
        return kExitUsage;
    }
    // A run already in --output graded its exercise: resuming it grades the same one.
    const std::optional<std::string> earlier = earlier_exercise(options.output);
    std::string why;
    const auto exercise_dir = exercise_for_run(options.exercise, earlier, output_shown, why);
    if (!exercise_dir) {
        spdlog::error("{}", why);
        return kExitUsage;
    }
    Exercise exercise = load_exercise(*exercise_dir);
    if (earlier && options.exercise.empty() &&
        *earlier != load_exercise(default_exercise_dir()).id) {
        std::fprintf(stderr, "batch: %s graded exercise %s: resumed as that exercise\n",
                     output_shown.c_str(), text::visible_line(*earlier).c_str());
    }
    // Left to choose, the class's own work names its exercise: Part 2's folders graded as Part
    // 1 would be every student's zero for a missing probe.cu.
    if (options.exercise.empty() && !earlier) {
        if (const auto other = other_exercise_of_class(options.submissions, exercise)) {
            if (const auto folder = find_exercise(other->id)) {
                std::fprintf(stderr,
                             "batch: no folder of %s holds %s and %zu hold exercise %s's %s: "
                             "graded as exercise %s (--exercise chooses another)\n",
                             text::visible_line(options.submissions.string()).c_str(),
                             exercise.submission_source.c_str(), other->folders,
                             text::visible_line(other->id).c_str(),
                             load_exercise(*folder).submission_source.c_str(),
                             text::visible_line(other->id).c_str());
                exercise = load_exercise(*folder);
            }
        }
    }

    BatchOptions batch;
    batch.submissions_dir = options.submissions;
    batch.output_dir = options.output;
    batch.jobs = options.jobs;
    batch.devices = options.devices;
    batch.run_seconds_override = options.timeout;
    batch.backend = options.backend;
    batch.worker_executable = current_executable();
    batch.other_exercise_sources = other_exercise_sources(exercise);
    batch.resume = options.resume;
    batch.device_server = !options.own_contexts;
    batch.only = options.only;
    batch.prairielearn_qid = options.prairielearn_qid;
    batch.stop = &stop_requested;
    batch.shard = shard;

    LogProgress log;
    TerminalProgress terminal;
    SilentProgress silent;
    const bool on_terminal = ::isatty(STDERR_FILENO) == 1;
    BatchProgress& progress = global.quiet  ? static_cast<BatchProgress&>(silent)
                              : on_terminal ? static_cast<BatchProgress&>(terminal)
                                            : static_cast<BatchProgress&>(log);

    watch_stop_signals();
    BatchResult result;
    try {
        result = run_batch(exercise, batch, progress);
    } catch (const BatchError& error) {
        terminal.finish();
        spdlog::error("{}", text::visible_line(error.what()));
        return kExitUsage;
    }
    if (on_terminal && !global.quiet) {
        terminal.finish();
    }
    warn_about_class(result, options);
    const BatchStatus& status = result.status;
    if (!global.quiet) {
        print_summary(result);
    }
    if (stop_requested.load()) {
        spdlog::error(
            "interrupted: {} graded, {} stopped while grading, {} not started; run the "
            "same command with --resume to finish",
            status.graded, result.abandoned.size(), result.not_started.size());
        spdlog::default_logger()->flush();
        std::fflush(stdout);
        std::fflush(stderr);
        // Grades in flight still run on detached threads; ending here, without running static
        // destructors under them, is what kills their workers (PR_SET_PDEATHSIG).
        std::_Exit(128 + stop_signal.load());
    }
    // A scheduler acts on the exit status: 0 once every submission has a pass or fail, whatever
    // they are; 3 where the machine or the harness kept one from being graded.
    if (status.ungradable > 0) {
        spdlog::error(
            "{} of {} submissions are ungradable: this machine or the grader, not the student, "
            "kept them from a grade (their reports say why); run the same command again where "
            "that is fixed{}",
            status.ungradable, status.total,
            shard ? " (it keeps this shard's pass and fail reports and grades the rest)"
                  : " (--only FOLDER grades one again)");
        return kExitUngradable;
    }
    return kExitPass;
}

}  // namespace

void add_batch_command(CLI::App& app, const GlobalOptions& global, Runner& run) {
    auto options = std::make_shared<BatchCommandOptions>();
    CLI::App* command = app.add_subcommand(
        "batch", "Grade every submission folder of a class; write each report and the gradebook");
    command
        ->add_option("SUBMISSIONS_DIR", options->submissions,
                     "The class folder: one sub-folder per submission, named for the student")
        ->required()
        ->check(CLI::ExistingDirectory);
    command
        ->add_option("-o,--output", options->output,
                     "Folder for OUTPUT/<student>/report.* and the class outputs")
        ->required();
    command
        ->add_option("--exercise", options->exercise,
                     "Exercise folder holding exercise.yaml, or a bundled exercise's id such as "
                     "day15-padding (default: an earlier run's in --output, else the one whose "
                     "files the class's folders hold, else day15-bank-conflicts)")
        ->transform(exercise_locator());
    command
        ->add_option("-j,--jobs", options->jobs,
                     "Submissions graded at once (default: on GPUs, 4 per GPU within half the "
                     "CPU cores; with --own-contexts or on the simulator, GPUs + 1; at least 2)")
        ->check(at_least_one("jobs"));
    command
        ->add_option("--timeout", options->timeout,
                     "Seconds a kernel stage may run before it is stopped (default: the "
                     "exercise's limit; on a GPU the student's stages stop sooner, at 4 times "
                     "the reference's time and a 1.5 s margin for the grade)")
        ->check(positive_seconds());
    command
        ->add_option("--devices", options->devices,
                     "GPU indices to use, e.g. 0,1 (default: every visible GPU)")
        ->delimiter(',')
        ->check(non_negative_index("a GPU index"));
    command
        ->add_option("--backend", options->backend,
                     "auto (cuda where a GPU is visible, else the PTX simulator, chosen once "
                     "for the whole class), cuda or sim")
        ->check(CLI::IsMember({"auto", "cuda", "sim"}))
        ->capture_default_str();
    command->add_flag("--own-contexts", options->own_contexts,
                      "On GPUs, let every grade open the GPU and its counters itself, as "
                      "`grader grade` does, instead of one device server per GPU for the class");
    command->add_flag("--resume", options->resume,
                      "Keep the reports an earlier, interrupted batch wrote into --output and "
                      "grade the rest");
    command->add_option("--only", options->only,
                        "Grade only these students (folder names), even when resuming; the "
                        "class outputs still cover every report in --output");
    command->add_option("--shard", options->shard,
                        "I/N: grade only this task's share of the class (task I of N, counted "
                        "from 0), for a job array; write the manifest `grader merge` reads");
    command->add_option("--prairielearn-qid", options->prairielearn_qid,
                        "The question id for prairielearn-scores.csv (default: the exercise's id)");
    command->footer(
        "Example:\n  grader batch submissions/ -o class-report --exercise day15-padding\n"
        "writes class-report/<student>/report.*, and the class page and gradebook.");
    command->callback([options, &global, &run] {
        run = [options, &global] { return run_batch_command(*options, global); };
    });
}

}  // namespace grader::cli
