// `grader sweep`: the lesson's Part 1 table from the reference probe, to calibrate a machine.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <random>
#include <spdlog/spdlog.h>

#include "checks/checks.hpp"
#include "cli/commands.hpp"
#include "cli/locations.hpp"
#include "common/text.hpp"
#include "cuda/driver_api.hpp"
#include "exercise/exercise.hpp"
#include "grade/worker.hpp"
#include "model/bank_model.hpp"
#include "model/json.hpp"

namespace grader::cli {
namespace {

struct SweepCommandOptions {
    std::filesystem::path exercise;
    int device = 0;
    std::string format = "text";
    std::optional<std::uint64_t> seed;
    std::string backend = "auto";
};

class CollectingSink final : public ProgressSink {
public:
    void stage(const std::string& name, double) override { spdlog::debug("stage: {}", name); }
    void submission(const Submission&) override {}
    void measurements(const Measurements& value) override { last = value; }
    Measurements last;
};

std::string sweep_table(const Exercise& exercise, const Measurements& m) {
    std::string out;
    char line[160];
    const bool simulated = m.environment.backend == "sim";
    if (simulated) {
        out += "Backend: PTX simulator for compute capability " +
               m.environment.compute_capability + ", NVRTC " + m.environment.nvrtc_version +
               "; times are modeled costs, not milliseconds\n";
    } else {
        out += "GPU: " + m.environment.device_name + " (compute capability " +
               m.environment.compute_capability + "), driver " + m.environment.driver_version +
               ", NVRTC " + m.environment.nvrtc_version + "\n";
    }
    if (simulated) {
        std::snprintf(line, sizeof line, "Grid: %u blocks of %u threads, simulated\n\n",
                      m.environment.grid_blocks, m.environment.block_size);
    } else {
        std::snprintf(line, sizeof line, "Grid: %u blocks of %u threads (%d per SM)\n\n",
                      m.environment.grid_blocks, m.environment.block_size,
                      m.environment.blocks_per_sm);
    }
    out += line;
    std::snprintf(line, sizeof line, "Part 1: %u shared words per block, %u reads per thread\n",
                  exercise.tile_words, exercise.reads_per_thread);
    out += line;
    if (simulated) {
        out += "  stride     degree   modeled cost  vs stride 1   counted degree   accumulator\n";
        out += "  ------     ------   ------------  -----------   --------------   -----------\n";
    } else {
        out += "  stride     degree    time (ms)  vs stride 1    spread   accumulator\n";
        out += "  ------     ------   ----------  -----------   -------   -----------\n";
    }
    for (const auto& run : m.runs) {
        const double ratio = run.stride == 1 ? 1.0 : run.ratio.value_or(0.0);
        const char* accumulator = run.ones.ok && run.hidden.ok ? "ok" : "WRONG";
        if (simulated) {
            std::snprintf(line, sizeof line, "  %6d     %6u   %12.0f  %11.2f   %14.2f   %s\n",
                          run.stride, conflict_degree(run.stride, exercise.banks),
                          run.timing ? run.timing->median_ms : 0.0, ratio,
                          run.counted_degree.value_or(0.0), accumulator);
        } else {
            std::snprintf(line, sizeof line, "  %6d     %6u   %10.4f  %11.2f   %6.2f%%   %s\n",
                          run.stride, conflict_degree(run.stride, exercise.banks),
                          run.timing ? run.timing->median_ms : 0.0, ratio,
                          run.timing ? run.timing->spread * 100.0 : 0.0, accumulator);
        }
        out += line;
    }
    out += "\nCalibration (the reference must show the model before this machine grades):\n";
    const auto ratio_of = ratios_of(m, "reference");
    for (const auto& rule : exercise.calibration) {
        const RuleOutcome outcome = evaluate_rule(rule, ratio_of);
        out += std::string("  ") + (!outcome.evaluated ? "[ -- ] " : outcome.passed ? "[ ok ] " : "[FAIL] ") +
               rule.description + (outcome.detail.empty() ? "" : ": " + outcome.detail) + "\n";
    }
    if (m.environment.backend != "sim") {
        std::snprintf(line, sizeof line, "\n%d timing rounds in %.3f s, seed %llu\n",
                      m.timing_rounds, m.timing_seconds, static_cast<unsigned long long>(m.seed));
        out += line;
    }
    return out;
}

int run_sweep(const SweepCommandOptions& options, const GlobalOptions& global) {
    const Exercise exercise =
        load_exercise(options.exercise.empty() ? default_exercise_dir() : options.exercise);
    WorkerOptions worker;
    worker.exercise_dir = exercise.directory;
    worker.device = options.device;
    worker.seed = options.seed ? *options.seed : std::random_device{}();
    worker.reference_only = true;
    worker.backend = options.backend;
    CollectingSink sink;
    run_worker(exercise, worker, sink);
    const Measurements& m = sink.last;
    if (m.interruption) {
        spdlog::error("{}", m.interruption->message);
        return kExitUngradable;
    }
    if (!global.quiet) {
        if (options.format == "json") {
            std::cout << nlohmann::json(m).dump(2) << "\n";
        } else {
            std::cout << sweep_table(exercise, m);
        }
    }
    const auto ratio_of = ratios_of(m, "reference");
    const bool calibrated =
        std::all_of(exercise.calibration.begin(), exercise.calibration.end(),
                    [&](const OrderingRule& rule) { return evaluate_rule(rule, ratio_of).passed; });
    return calibrated ? kExitPass : kExitUngradable;
}

}  // namespace

void add_sweep_command(CLI::App& app, const GlobalOptions& global, Runner& run) {
    auto options = std::make_shared<SweepCommandOptions>();
    CLI::App* command = app.add_subcommand(
        "sweep", "Time the reference probe at every stride (the lesson's Part 1 table)");
    command->add_option("--exercise", options->exercise, "Exercise folder")
        ->check(CLI::ExistingDirectory);
    command->add_option("--device", options->device, "GPU index")->capture_default_str();
    command->add_option("--format", options->format, "text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    command->add_option("--seed", options->seed, "Seed for the timing order");
    command->add_option("--backend", options->backend,
                        "auto (a GPU where there is one, else the PTX simulator), cuda or sim")
        ->check(CLI::IsMember({"auto", "cuda", "sim"}))
        ->capture_default_str();
    command->callback([options, &global, &run] {
        run = [options, &global] { return run_sweep(*options, global); };
    });
}

}  // namespace grader::cli
