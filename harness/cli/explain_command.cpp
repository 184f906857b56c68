// `grader explain SUBMISSION`: runs the student's kernel on the PTX simulator and shows, line by
// line and lane by lane, which shared-memory accesses conflict and why. Like a grade it runs in
// the worker, under the exercise's time and memory limits.

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/locations.hpp"
#include "exercise/exercise.hpp"
#include "grade/grade.hpp"
#include "grade/protocol.hpp"
#include "grade/worker_options.hpp"
#include "model/explanation.hpp"
#include "model/measurements.hpp"
#include "report/writers.hpp"
#include "text/text_safety.hpp"

namespace grader::cli {
namespace {

struct ExplainCommandOptions {
    std::filesystem::path submission;
    std::filesystem::path exercise;
    std::vector<int> strides{3, 8, 16, 32};  // ignored by an exercise without strides
    bool reference = false;
    bool stats = false;
};

int run_explain(const ExplainCommandOptions& options) {
    const Exercise exercise =
        load_exercise(options.exercise.empty() ? default_exercise_dir() : options.exercise);
    if (!options.reference) {
        if (const auto other = other_exercise_of(options.submission, exercise.submission_source)) {
            // Part 2's folder explained as Part 1: the command that explains it, not "not found".
            std::cerr << "grader: "
                      << other_exercise_message(options.submission, exercise.submission_source,
                                                *other, "explain")
                      << "\n";
            return kExitUsage;
        }
    }
    GradeOptions grade;
    grade.submission_dir = options.submission;
    grade.backend = "sim";
    grade.worker_executable = current_executable();
    WorkerTask task;
    task.mode = WorkerOptions::Mode::explain;
    task.explain_strides = options.strides;
    task.explain_reference = options.reference;
    const WorkerResult worker = run_worker_process(exercise, grade, 20261202, task);
    const auto& explanation = worker.observations.lane_tables;
    if (!explanation) {
        const auto& stop = worker.observations.measurements.interruption;
        std::cout << (stop ? text::visible(stop->message)
                           : std::string("the explanation could not be made"))
                  << "\n";
        return stop && !stop->students_fault ? kExitInternal : kExitFail;
    }
    std::cout << write_explanation_text(*explanation, options.stats);
    const bool stopped = !explanation->problem.empty() ||
                         std::any_of(explanation->strides.begin(), explanation->strides.end(),
                                     [](const ExplainedStride& s) { return !s.stopped.empty(); });
    return stopped ? kExitFail : kExitPass;
}

}  // namespace

void add_explain_command(CLI::App& app, const GlobalOptions& global, Runner& run) {
    (void)global;
    auto options = std::make_shared<ExplainCommandOptions>();
    CLI::App* command = app.add_subcommand("explain",
                                           "Run the kernel on the PTX simulator and show which "
                                           "shared accesses conflict, lane by lane");
    command->add_option("SUBMISSION", options->submission, "The submission folder")
        ->required()
        ->check(CLI::ExistingDirectory);
    command
        ->add_option("--exercise", options->exercise,
                     "Exercise folder or bundled id, e.g. day15-padding (default: "
                     "day15-bank-conflicts)")
        ->transform(exercise_locator());
    command->add_option("--strides", options->strides, "Strides to run, e.g. 3,8,16,32")
        ->delimiter(',')
        ->capture_default_str();
    command->add_flag("--reference", options->reference,
                      "Explain the exercise's reference kernel instead of the submission's");
    command->add_flag("--stats", options->stats,
                      "Also print how many instructions were simulated, and how fast");
    command->footer(
        "Examples:\n  grader explain my-probe --strides 8,16\n"
        "  grader explain my-transpose --exercise day15-padding");
    command->callback([options, &run] { run = [options] { return run_explain(*options); }; });
}

}  // namespace grader::cli
