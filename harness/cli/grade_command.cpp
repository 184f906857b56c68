// `grader grade SUBMISSION`: grades one submission folder and writes its report.

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checks/checks.hpp"
#include "cli/commands.hpp"
#include "cli/locations.hpp"
#include "cli/option_checks.hpp"
#include "common/cores.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "exercise/exercise.hpp"
#include "grade/grade.hpp"
#include "model/report.hpp"
#include "report/writers.hpp"
#include "text/text_safety.hpp"

namespace grader::cli {
namespace {

struct GradeCommandOptions {
    std::filesystem::path submission;
    std::filesystem::path exercise;
    std::string format = to_string(Format::text);
    std::filesystem::path output;
    int device = 0;
    std::optional<std::uint64_t> seed;
    double timeout = 0.0;
    std::string backend = "auto";
    unsigned sim_threads = 0;  // 0: every core
};

int run_grade(const GradeCommandOptions& options, const GlobalOptions& global) {
    const auto format = parse_format(options.format);
    if (!format) {
        spdlog::error("unknown format '{}'", options.format);
        return kExitUsage;
    }
    if (!options.output.empty()) {
        // A report that cannot be written is the caller's to fix (a usage error), said before
        // the grade rather than as an internal error after it.
        const auto folder = std::filesystem::absolute(options.output).parent_path();
        if (::access(folder.c_str(), W_OK | X_OK) != 0) {
            spdlog::error(
                "--output {}: its folder cannot be written by this user (uid {}): {}: choose a "
                "folder it may write to (in Docker: --user with the folder owner's uid:gid)",
                text::visible_line(options.output.string()), ::getuid(), std::strerror(errno));
            return kExitUsage;
        }
    }
    const Exercise exercise =
        load_exercise(options.exercise.empty() ? default_exercise_dir() : options.exercise);
    if (const auto other = other_exercise_of(options.submission, exercise.submission_source)) {
        // The folder holds another exercise's kernel file: say which, with the command for it.
        spdlog::warn("{}", other_exercise_message(options.submission, exercise.submission_source,
                                                  *other, "grade"));
    }

    GradeOptions grade;
    grade.submission_dir = options.submission;
    grade.submission_label = options.submission.string();
    grade.device = options.device;
    grade.seed = options.seed;
    grade.backend = options.backend;
    grade.run_seconds_override = options.timeout;
    // A grade that runs alone runs the simulator's blocks on every core it is given.
    grade.sim_threads = options.sim_threads > 0 ? options.sim_threads : usable_cores();
    grade.worker_executable = current_executable();
    grade.other_exercise_sources = other_exercise_sources(exercise);
    grade.on_stage = [](const std::string& stage) { spdlog::debug("stage: {}", stage); };
    spdlog::debug("grading {} against {}", text::visible_line(options.submission.string()),
                  text::visible_line(exercise.file.string()));

    const Report report = grade_submission(exercise, grade);

    ReportOptions written;
    written.text.verbose = global.verbose;
    written.prairielearn.compile_error_gradable = exercise.prairielearn.compile_error_gradable;
    written.prairielearn.missing_file_gradable = exercise.prairielearn.missing_file_gradable;
    if (!options.output.empty()) {
        written.text.color = false;
        write_file_atomically(options.output, write_report(report, *format, written));
        if (!global.quiet) {
            written.text.color = use_color(STDOUT_FILENO);
            std::cout << write_report(report, Format::text, written) << std::flush;
            spdlog::info("report written to {}", text::visible_line(options.output.string()));
        }
    } else if (!global.quiet) {
        written.text.color = *format == Format::text && use_color(STDOUT_FILENO);
        std::cout << write_report(report, *format, written) << std::flush;
    }
    return exit_code(report.verdict);
}

}  // namespace

void add_grade_command(CLI::App& app, const GlobalOptions& global, Runner& run) {
    auto options = std::make_shared<GradeCommandOptions>();
    CLI::App* command =
        app.add_subcommand("grade", "Grade one submission folder (probe.cu and submission.yaml)");
    command->add_option("SUBMISSION", options->submission, "The submission folder")
        ->required()
        ->check(CLI::ExistingDirectory);
    command
        ->add_option("--exercise", options->exercise,
                     "Exercise folder holding exercise.yaml, or a bundled exercise's id such "
                     "as day15-padding (default: day15-bank-conflicts)")
        ->transform(exercise_locator());
    command->add_option("--format", options->format, names_or(file_format_names()))
        ->check(CLI::IsMember(file_format_names()))
        ->capture_default_str();
    command->add_option("-o,--output", options->output,
                        "Write the report to FILE (also on compile failure or when ungradable)");
    command->add_option("--device", options->device, "GPU index")
        ->check(non_negative_index("a GPU index"))
        ->capture_default_str();
    command->add_option("--seed", options->seed,
                        "Seed for the hidden input, the unnamed strides and the timing order "
                        "(default: random; the report records it)");
    command->footer(
        "Examples:\n  grader grade student/example\n"
        "  grader grade my-part2 --exercise day15-padding --format json -o r.json");
    command
        ->add_option("--timeout", options->timeout,
                     "Seconds a kernel stage may run before it is stopped (default: the "
                     "exercise's limit; on a GPU the student's stages stop sooner, at 4 times "
                     "the reference's time and a 1.5 s margin for the grade)")
        ->check(positive_seconds());
    command
        ->add_option("--backend", options->backend,
                     "auto (a GPU where there is one, else the PTX simulator), cuda or sim")
        ->check(CLI::IsMember({"auto", "cuda", "sim"}))
        ->capture_default_str();
    command->add_option("--sim-threads", options->sim_threads,
                        "Threads the simulator may run the student's blocks on (default: every "
                        "core)");
    command->callback([options, &global, &run] {
        run = [options, &global] { return run_grade(*options, global); };
    });
}

}  // namespace grader::cli
