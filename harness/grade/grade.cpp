#include "grade/grade.hpp"

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <system_error>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "checks/checks.hpp"
#include "common/text.hpp"
#include "grade/protocol.hpp"
#include "isolation/child.hpp"
#include "model/json.hpp"

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
    return "signal " + std::to_string(signal) + (description ? std::string(" (") + description + ")" : "");
}

// What the worker's end means for the grade, given the stage it was in.
std::optional<Interruption> interruption_from(const ChildResult& child, const std::string& stage,
                                              double limit_seconds) {
    const bool students = stage_runs_student_code(stage);
    const std::string where = stage.empty() ? "before it started" : "at stage '" + stage + "'";
    switch (child.end) {
        case ChildResult::End::exited:
            if (child.exit_code == 0) {
                return std::nullopt;
            }
            return Interruption{"crash", stage,
                                "the grader's worker stopped with exit code " +
                                    std::to_string(child.exit_code) + " " + where +
                                    (child.output.empty() ? "" : ": " + child.output.substr(0, 500)),
                                false};
        case ChildResult::End::signaled:
            return Interruption{"crash", stage,
                                "the grader's worker was ended by " + signal_name(child.signal) +
                                    " " + where,
                                false};
        case ChildResult::End::timed_out:
            return Interruption{
                "timeout", stage,
                std::string(stage == "compile" ? "the compile" : "the kernel") +
                    " did not finish within the time limit of " + format_number(limit_seconds, 1) +
                    " s " + where + "; it was stopped",
                students};
        case ChildResult::End::memory_exceeded:
            return Interruption{"memory", stage,
                                "the grader's worker went over its memory limit (" +
                                    std::to_string(child.peak_memory_bytes >> 20) + " MiB) " +
                                    where + "; it was stopped",
                                students};
        case ChildResult::End::message_overflow:
            return Interruption{"crash", stage,
                                "the grader's worker sent more than its message limit " + where,
                                false};
        case ChildResult::End::spawn_failed:
            throw std::runtime_error("could not start the grader's worker: " + child.error);
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

Report grade_submission(const Exercise& exercise, const GradeOptions& options) {
    const auto began = std::chrono::steady_clock::now();
    const std::uint64_t seed = options.seed ? *options.seed : std::random_device{}();
    const double run_limit =
        options.run_seconds_override > 0 ? options.run_seconds_override : exercise.limits.run_seconds;

    std::vector<std::string> argv = {
        options.worker_executable.string(),
        "__worker",
        "--exercise", exercise.directory.string(),
        "--submission", std::filesystem::absolute(options.submission_dir).string(),
        "--device", std::to_string(options.device),
        "--seed", std::to_string(seed),
        "--backend", options.backend,
        "--run-timeout", format_number(run_limit, 3),
    };
    if (!options.device_lock.empty()) {
        argv.insert(argv.end(), {"--device-lock", options.device_lock.string()});
    }

    ChildLimits limits;
    limits.seconds = exercise.limits.compile_seconds;
    limits.output_bytes = exercise.limits.output_bytes;
    limits.memory_bytes = exercise.limits.memory_bytes;

    std::optional<Submission> submission;
    std::optional<Measurements> measurements;
    std::string stage;
    double stage_limit = limits.seconds;
    std::map<std::string, double> stage_seconds;
    auto stage_began = std::chrono::steady_clock::now();
    const auto close_stage = [&] {
        const auto now = std::chrono::steady_clock::now();
        if (!stage.empty()) {
            stage_seconds[stage] += std::chrono::duration<double>(now - stage_began).count();
        }
        stage_began = now;
    };
    std::string protocol_problem;
    const auto on_message = [&](const std::string& line) -> double {
        const auto message = nlohmann::json::parse(line, nullptr, false);
        if (message.is_discarded() || !message.is_object()) {
            protocol_problem = "the worker sent a line that is not JSON";
            return 0.0;
        }
        try {
            const std::string type = message.value("type", "");
            if (type == "stage") {
                close_stage();
                stage = message.value("stage", "");
                stage_limit = message.value("limit_seconds", limits.seconds);
                if (options.on_stage) {
                    options.on_stage(stage);
                }
                return stage_limit;
            }
            if (type == "submission") {
                submission = message.at("value").get<Submission>();
            } else if (type == "measurements") {
                measurements = message.at("value").get<Measurements>();
            }
        } catch (const nlohmann::json::exception& error) {
            protocol_problem = std::string("the worker sent a malformed message: ") + error.what();
        }
        return 0.0;
    };

    ScratchDirectory scratch;
    const ChildResult child = run_child(argv, limits, on_message, scratch.path().string());

    close_stage();
    Measurements m = measurements.value_or(Measurements{});
    m.stage_seconds = stage_seconds;
    m.seed = seed;
    if (m.environment.backend.empty()) {
        m.environment.backend = options.backend;
    }
    if (!m.interruption) {
        m.interruption = interruption_from(child, stage, stage_limit);
    }
    if (!m.interruption && !measurements) {
        m.interruption = Interruption{"crash", stage,
                                      "the grader's worker ended without reporting" +
                                          (protocol_problem.empty() ? "" : ": " + protocol_problem),
                                      false};
    }
    m.worker_output = child.output;
    m.worker_output_truncated = child.output_truncated;
    if (child.output_truncated) {
        m.worker_output += "\n[... " + std::to_string(child.output_total_bytes - child.output.size()) +
                           " more bytes not kept]";
    }

    Submission answers;
    if (submission) {
        answers = *submission;
    } else {
        answers.directory = options.submission_dir;
        answers.problems.push_back(
            {SourceLocation{exercise.submission_answers, 0, 0}, "",
             "the answers file was not read: " +
                 (m.interruption ? m.interruption->message : std::string("the worker stopped"))});
    }
    Report report = evaluate(exercise, answers, m,
                             options.submission_label.empty() ? options.submission_dir.string()
                                                              : options.submission_label);
    report.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    return report;
}

}  // namespace grader
