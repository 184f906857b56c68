#include "grade/grade.hpp"

#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

#include "checks/checks.hpp"
#include "common/clock.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "grade/protocol.hpp"
#include "grade/stage.hpp"
#include "grade/worker_options.hpp"
#include "isolation/child.hpp"
#include "model/explanation.hpp"
#include "model/json.hpp"
#include "model/measurements.hpp"
#include "report/diagnosis_text.hpp"

namespace grader {
namespace {

// An empty private folder for the worker to run in: relative paths in a student's source (which
// vetting refuses anyway) would find nothing there.
class ScratchDirectory {
public:
    ScratchDirectory() {
        std::string pattern = (std::filesystem::temp_directory_path() / "grader-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) {
            throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
        }
        path_ = pattern;
    }
    ~ScratchDirectory() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    ScratchDirectory(const ScratchDirectory&) = delete;
    ScratchDirectory& operator=(const ScratchDirectory&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

std::string signal_name(int signal) {
    const char* description = ::strsignal(signal);
    return "signal " + std::to_string(signal) +
           (description ? std::string(" (") + description + ")" : "");
}

// What the worker's end means for the grade, given the stage it was in: blame() decides whose
// fault it is.
std::optional<Interruption> interruption_from(const ChildResult& child,
                                              const std::optional<Stage>& stage,
                                              const StageLimit& limit) {
    const Stage where_stage = stage.value_or(Stage{Stage::Kind::answers});
    const std::string where =
        stage ? "at stage '" + to_string(*stage) + "'" : std::string("before it started");
    switch (child.end) {
        case ChildResult::End::exited:
            if (child.exit_code == 0) {
                return std::nullopt;
            }
            return blame(where_stage, Ending::worker_crashed,
                         "the grader's worker stopped with exit code " +
                             std::to_string(child.exit_code) + " " + where);
        case ChildResult::End::signaled:
            return blame(
                where_stage, Ending::worker_crashed,
                "the grader's worker was ended by " + signal_name(child.signal) + " " + where);
        case ChildResult::End::timed_out:
            return blame(where_stage, Ending::time_limit,
                         std::string(where_stage.kind == Stage::Kind::compile ? "the compile"
                                                                              : "the kernel") +
                             " did not finish within the time limit of " +
                             format_number(limit.seconds, 1) + " s " + where +
                             (limit.basis.empty() ? std::string() : " (" + limit.basis + ")") +
                             "; it was stopped");
        case ChildResult::End::memory_exceeded:
            return blame(where_stage, Ending::memory_limit,
                         "the grader's worker went over its memory limit (" +
                             std::to_string(child.peak_memory_bytes >> 20) + " MiB) " + where +
                             "; it was stopped");
        case ChildResult::End::message_overflow:
            return blame(where_stage, Ending::message_limit,
                         "the grader's worker sent more than its message limit " + where);
        case ChildResult::End::spawn_failed:
            throw std::runtime_error("could not start the grader's worker: " + child.error);
        case ChildResult::End::cancelled:
            throw GradeCancelled("the grade was cancelled " + where);
    }
    return std::nullopt;
}

// A file of the folder itself, never what a link names: lstat only, nothing is opened.
bool holds_file(const std::filesystem::path& folder, const std::string& name) {
    std::error_code error;
    return std::filesystem::symlink_status(folder / name, error).type() !=
           std::filesystem::file_type::not_found;
}

std::string plain_or_quoted(const std::string& path) {
    const bool plain = path.find_first_not_of(
                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                           "0123456789/._-") == std::string::npos;
    return plain ? path : "'" + path + "'";
}

// Which files the exercise asks for the folder lacks, and where the folder shows why, the cause:
// another exercise's kernel file, nothing at all, or the files one folder down.
std::optional<FolderProblem> folder_problem_of(const Exercise& exercise,
                                               const GradeOptions& options, Report& report) {
    const std::filesystem::path& folder = options.submission_dir;
    const bool source = holds_file(folder, exercise.submission_source);
    const bool answers = holds_file(folder, exercise.submission_answers);
    if (!source) {
        report.missing_files.push_back(exercise.submission_source);
    }
    if (!answers) {
        report.missing_files.push_back(exercise.submission_answers);
    }
    // A file there under another name: "Probe.cu", "probe.cu.txt", "submission.yml".
    std::vector<std::pair<std::string, std::string>> misnamed;  // (as found, as asked)
    for (const std::string& name : report.missing_files) {
        if (const auto meant = meant_file(folder, name)) {
            misnamed.emplace_back(*meant, name);
        }
    }
    if (!misnamed.empty()) {
        return FolderProblem{FolderProblem::Kind::misnamed_file, misnamed.front().first,
                             misnamed_files_text(misnamed)};
    }
    if (source) {
        return std::nullopt;
    }
    const std::string& shown = report.submission;  // the writers escape it
    for (const auto& [id, other_source] : options.other_exercise_sources) {
        if (other_source != exercise.submission_source && holds_file(folder, other_source)) {
            return FolderProblem{
                FolderProblem::Kind::other_exercise, id,
                "this folder holds " + other_source + ", the kernel file of exercise " + id +
                    ", and no " + exercise.submission_source + ": it is another exercise's work; " +
                    "grade it with: grader grade " + plain_or_quoted(shown) + " --exercise " + id};
        }
    }
    if (answers) {
        return std::nullopt;
    }
    std::error_code error;
    std::vector<std::string> entries;
    std::vector<std::string> holding;  // inner folders with the kernel file
    for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || name[0] == '.') {
            continue;  // .DS_Store and the like are not work
        }
        entries.push_back(name);
        if (std::filesystem::is_directory(entry.symlink_status(error)) &&
            holds_file(entry.path(), exercise.submission_source)) {
            holding.push_back(name);
        }
    }
    if (error) {
        return std::nullopt;
    }
    const std::string files = exercise.submission_source + " and " + exercise.submission_answers;
    if (entries.empty()) {
        return FolderProblem{FolderProblem::Kind::empty, "",
                             "the folder is empty: hand in " + files + " in it"};
    }
    if (!holding.empty()) {
        std::sort(holding.begin(), holding.end());
        const std::string& inner = holding.front();
        return FolderProblem{FolderProblem::Kind::one_folder_down, holding.front(),
                             "the files are one folder down, in " + inner + "/: hand in " + files +
                                 " themselves, not the folder that holds them (or grade it: "
                                 "grader grade " +
                                 plain_or_quoted(shown + "/" + inner) + ")"};
    }
    return std::nullopt;
}

}  // namespace

std::filesystem::path current_executable() {
    std::error_code error;
    auto path = std::filesystem::read_symlink("/proc/self/exe", error);
    if (error) {
        throw std::system_error(error, "cannot find the running executable");
    }
    return path;
}

namespace {

std::vector<std::string> worker_command_line(const Exercise& exercise, const GradeOptions& options,
                                             std::uint64_t seed, const WorkerTask& task) {
    WorkerOptions worker;
    worker.mode = task.mode;
    worker.exercise_dir = exercise.directory;
    if (!options.submission_dir.empty()) {
        worker.submission_dir = std::filesystem::absolute(options.submission_dir);
    }
    worker.device = options.device;
    worker.seed = seed;
    worker.backend = options.backend;
    worker.device_server = options.device_server;
    worker.run_seconds_override = options.run_seconds_override > 0 ? options.run_seconds_override
                                                                   : exercise.limits.run_seconds;
    worker.explain_strides = task.explain_strides;
    worker.explain_reference = task.explain_reference;
    worker.sim_threads = std::max(options.sim_threads, 1u);
    std::vector<std::string> argv = {options.worker_executable.string()};
    for (std::string& argument : worker_arguments(worker)) {
        argv.push_back(std::move(argument));
    }
    return argv;
}

// The worker's messages, passed on to what was observed: a stage message starts a stage (and its
// clock, the stage before adding to the result's stage_seconds), and is told to on_stage; every
// other message is an observation.
class StageClock final : public ProgressSink {
public:
    StageClock(WorkerResult& result, const GradeOptions& grade)
        : result_(result), seen_(result.observations), grade_(grade) {}

    // The stage under way ends now.
    void close_stage() {
        const auto now = std::chrono::steady_clock::now();
        if (seen_.current_stage) {
            result_.stage_seconds[to_string(*seen_.current_stage)] +=
                std::chrono::duration<double>(now - began_).count();
        }
        began_ = now;
    }

    void stage(const Stage& stage, const StageLimit& limit) override {
        close_stage();
        seen_.stage(stage, limit);
        if (grade_.on_stage) {
            grade_.on_stage(to_string(stage));
        }
    }
    void submission(const Submission& v) override { seen_.submission(v); }
    void environment(const Environment& v) override { seen_.environment(v); }
    void compiled(const std::string& k, const CompileOutcome& v) override { seen_.compiled(k, v); }
    void loaded(const std::string& k, const LoadFacts& v) override { seen_.loaded(k, v); }
    void run(const KernelRun& v) override { seen_.run(v); }
    void measured(const GradeFigures& v) override { seen_.measured(v); }
    void interruption(const Interruption& v) override { seen_.interruption(v); }
    void explanation(const Explanation& v) override { seen_.explanation(v); }

private:
    WorkerResult& result_;
    Observations& seen_;
    const GradeOptions& grade_;
    std::chrono::steady_clock::time_point began_ = std::chrono::steady_clock::now();
};

// What the worker's end adds to what it reported: how long it held the GPU, how it stopped where
// it did not say so itself (in the stage it was in, with that stage's limit), and its output.
void settle(Observations& seen, const ChildResult& child, const StageLimit& stage_limit,
            const std::string& protocol_problem) {
    Environment& environment = seen.measurements.environment;
    if (environment.gpu_held_from > 0.0 && environment.gpu_held_until == 0.0) {
        // The worker was stopped while it held the GPU (a kernel past its limit, a crash): it
        // held it until it was gone, which is now.
        environment.gpu_held_until = unix_seconds();
    }
    Measurements& m = seen.measurements;
    if (!m.interruption) {
        m.interruption = interruption_from(child, seen.current_stage, stage_limit);
    }
    if (!m.interruption && !protocol_problem.empty()) {
        m.interruption = blame(seen.current_stage.value_or(Stage{}), Ending::harness_error,
                               "the grader's worker could not be understood: " + protocol_problem);
    }
    m.worker_output = child.output;
    m.worker_output_truncated = child.output_truncated;
    if (child.output_truncated) {
        m.worker_output += "\n[... " +
                           std::to_string(child.output_total_bytes - child.output.size()) +
                           " more bytes not kept]";
    }
}

}  // namespace

WorkerResult run_worker_process(const Exercise& exercise, const GradeOptions& options,
                                std::uint64_t seed, const WorkerTask& task) {
    const std::vector<std::string> argv = worker_command_line(exercise, options, seed, task);
    ChildLimits limits;
    limits.seconds = exercise.limits.compile_seconds;
    limits.output_bytes = exercise.limits.output_bytes;
    limits.memory_bytes = exercise.limits.memory_bytes;
    limits.cancel = options.cancel;

    WorkerResult result;
    Observations& seen = result.observations;
    StageLimit stage_limit{limits.seconds};
    StageClock clock(result, options);
    std::string protocol_problem;
    const auto on_message = [&](const std::string& line) -> double {
        try {
            const double limit = dispatch_message(line, clock);
            if (limit > 0) {
                stage_limit = seen.current_limit;
            }
            return limit;
        } catch (const std::invalid_argument& error) {
            protocol_problem = error.what();
            return 0.0;
        }
    };

    std::optional<ScratchDirectory> scratch;
    try {
        scratch.emplace();
    } catch (const std::system_error& error) {
        // The machine's to fix (a read-only root without a writable /tmp, a TMPDIR that is not a
        // folder): an ungradable grade that says what to do, not an internal error.
        seen.measurements.interruption =
            blame(Stage{}, Ending::harness_error,
                  std::string("the grader cannot make its work folder: ") + error.what() +
                      ". Give it a writable temporary folder (TMPDIR; in Docker, --tmpfs /tmp)");
        return result;
    }
    const ChildResult child = run_child(argv, limits, on_message, scratch->path().string());
    if (child.end == ChildResult::End::cancelled) {
        throw GradeCancelled("the grade was cancelled");
    }
    clock.close_stage();
    settle(seen, child, stage_limit, protocol_problem);
    return result;
}

Report grade_submission(const Exercise& exercise, const GradeOptions& options) {
    const auto began = std::chrono::steady_clock::now();
    const std::uint64_t seed = options.seed ? *options.seed : std::random_device{}();
    WorkerTask task;
    if (options.submission_dir.empty()) {
        task.mode = WorkerOptions::Mode::reference_only;
    }
    WorkerResult worker = run_worker_process(exercise, options, seed, task);
    Measurements& m = worker.observations.measurements;
    m.stage_seconds = worker.stage_seconds;
    m.seed = seed;
    if (m.environment.backend.empty()) {
        m.environment.backend = options.backend;
    }
    if (!m.interruption && m.wall_seconds == 0.0) {
        m.interruption =
            blame(worker.observations.current_stage.value_or(Stage{}), Ending::worker_crashed,
                  "the grader's worker ended without reporting");
    }

    Submission answers;
    if (worker.observations.answers) {
        answers = *worker.observations.answers;
    } else {
        answers.directory = options.submission_dir;
        answers.unread_reason =
            "the answers file was not read: " +
            (m.interruption ? m.interruption->message : std::string("the worker stopped"));
    }
    Report report = evaluate(exercise, answers, m,
                             options.submission_label.empty() ? options.submission_dir.string()
                                                              : options.submission_label);
    if (!options.submission_dir.empty()) {
        report.folder_problem = folder_problem_of(exercise, options, report);
        diagnose(exercise, report);  // what the folder holds may be the root cause
    }
    report.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    return report;
}

}  // namespace grader
