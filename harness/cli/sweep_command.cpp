// `grader sweep`: the lesson's Part 1 table from the reference probe, to calibrate a machine.

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>

#include "checks/checks.hpp"
#include "cli/commands.hpp"
#include "cli/locations.hpp"
#include "cli/option_checks.hpp"
#include "exercise/exercise.hpp"
#include "grade/grade.hpp"
#include "grade/protocol.hpp"
#include "grade/worker_options.hpp"
#include "model/json.hpp"
#include "model/measurements.hpp"
#include "model/sweep.hpp"
#include "report/writers.hpp"
#include "text/text_safety.hpp"

namespace grader::cli {
namespace {

struct SweepCommandOptions {
    std::filesystem::path exercise;
    int device = 0;
    std::string format = "text";
    std::optional<std::uint64_t> seed;
    std::string backend = "auto";
};

int run_sweep(const SweepCommandOptions& options, const GlobalOptions& global) {
    const Exercise exercise =
        load_exercise(options.exercise.empty() ? default_exercise_dir() : options.exercise);
    GradeOptions grade;
    grade.device = options.device;
    grade.backend = options.backend;
    grade.worker_executable = current_executable();
    grade.on_stage = [](const std::string& stage) { spdlog::debug("stage: {}", stage); };
    const std::uint64_t seed = options.seed ? *options.seed : std::random_device{}();
    WorkerTask task;
    task.mode = WorkerOptions::Mode::reference_only;
    WorkerResult worker = run_worker_process(exercise, grade, seed, task);
    worker.observations.measurements.seed = seed;
    const Sweep sweep = summarize_sweep(exercise, worker.observations.measurements);
    if (!global.quiet) {
        if (options.format == "json") {
            std::cout << text::json_text(nlohmann::json(sweep), 2) << "\n";
        } else {
            std::cout << write_sweep_text(sweep);
        }
    }
    if (sweep.interruption) {
        spdlog::error("{}", text::visible(sweep.interruption->message));
    }
    if (sweep.interruption) {
        return kExitUngradable;
    }
    if (!sweep.calibrated() && !exercise.calibration_decides) {
        // As a grade does: where the exercise's calibration does not decide (Part 2), timing
        // that shows no conflict only sets the timing checks aside; the counted degree decides.
        spdlog::warn(
            "the calibration rules do not hold (or nothing was timed) here: grades on "
            "this machine set the checks that need timing aside, and the counted "
            "degree decides");
        return kExitPass;
    }
    return sweep.calibrated() ? kExitPass : kExitUngradable;
}

}  // namespace

void add_sweep_command(CLI::App& app, const GlobalOptions& global, Runner& run) {
    auto options = std::make_shared<SweepCommandOptions>();
    CLI::App* command = app.add_subcommand(
        "sweep", "Time the reference probe at every stride (the lesson's Part 1 table)");
    command
        ->add_option("--exercise", options->exercise,
                     "Exercise folder or bundled id, e.g. day15-padding (default: "
                     "day15-bank-conflicts)")
        ->transform(exercise_locator());
    command->add_option("--device", options->device, "GPU index")
        ->check(non_negative_index("a GPU index"))
        ->capture_default_str();
    command->add_option("--format", options->format, "text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    command->add_option("--seed", options->seed, "Seed for the timing order (default: random)");
    command
        ->add_option("--backend", options->backend,
                     "auto (a GPU where there is one, else the PTX simulator), cuda or sim")
        ->check(CLI::IsMember({"auto", "cuda", "sim"}))
        ->capture_default_str();
    command->footer("Example:\n  grader sweep --backend sim --format json");
    command->callback([options, &global, &run] {
        run = [options, &global] { return run_sweep(*options, global); };
    });
}

}  // namespace grader::cli
