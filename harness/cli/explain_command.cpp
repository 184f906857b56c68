// `grader explain SUBMISSION`: runs the student's kernel on the PTX simulator and shows, line by
// line and lane by lane, which shared-memory accesses conflict and why. It runs in this process:
// the simulator's instruction budget bounds a kernel that never ends, and a simulated fault is a
// value, not a signal, so no child process is needed.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/locations.hpp"
#include "compile/compile.hpp"
#include "exercise/exercise.hpp"
#include "grade/probe_sources.hpp"
#include "grade/sim_probe.hpp"
#include "sim/sim.hpp"

namespace grader::cli {
namespace {

struct ExplainCommandOptions {
    std::filesystem::path submission;
    std::filesystem::path exercise;
    std::vector<int> strides{3, 8, 16, 32};
    bool reference = false;
    bool stats = false;
};

// "0, 16" or "none": the other active lanes in a lane's bank.
std::string bank_mates_text(const sim::WarpAccessTable& table, std::uint32_t lane) {
    std::string text;
    int count = 0;
    for (std::uint32_t other = 0; other < 32; ++other) {
        if (other != lane && (table.lanes[lane].bank_mates >> other & 1u) != 0) {
            text += (count++ == 0 ? "" : ",") + std::to_string(other);
        }
    }
    if (count == 31) {
        return "all 31 other lanes";
    }
    return count == 0 ? "none" : "lanes " + text;
}

std::string lane_table(const sim::WarpAccessTable& table) {
    std::string out;
    char line[256];
    std::snprintf(line, sizeof line, "      warp %u of block %u: %u wavefronts\n", table.warp,
                  table.block.x, table.wavefronts);
    out += line;
    out += "      lane    word  bank  shares its bank with\n";
    for (std::uint32_t lane = 0; lane < 32; ++lane) {
        const auto& access = table.lanes[lane];
        if (!access.active) {
            std::snprintf(line, sizeof line, "      %4u       -     -  (inactive)\n", lane);
        } else {
            std::snprintf(line, sizeof line, "      %4u  %6llu  %4u  %s\n", lane,
                          static_cast<unsigned long long>(access.word), access.bank,
                          bank_mates_text(table, lane).c_str());
        }
        out += line;
    }
    return out;
}

std::string line_name(const sim::SharedLineStats& line) {
    return (line.file.empty() ? std::string("line ") : line.file + " line ") +
           std::to_string(line.line) + (line.store ? " (store)" : " (load)");
}

int run_explain(const ExplainCommandOptions& options) {
    const Exercise exercise =
        load_exercise(options.exercise.empty() ? default_exercise_dir() : options.exercise);
    const ProbeSources sources =
        load_probe_sources(exercise, options.submission, exercise.default_arch);
    const CompileRequest* request = options.reference ? &sources.reference
                                    : sources.student ? &*sources.student
                                                      : nullptr;
    if (request == nullptr) {
        std::cout << sources.student_missing_reason << "\n";
        return kExitFail;
    }
    const CompiledKernel kernel = compile_kernel(*request);
    if (!kernel.outcome.ok) {
        std::cout << request->source_name << " did not compile for " << exercise.default_arch
                  << ":\n"
                  << kernel.outcome.log << "\n";
        for (const auto& problem : kernel.outcome.vetting_problems) {
            std::cout << to_string(problem, request->source_name) << "\n";
        }
        return kExitFail;
    }
    const std::string abi =
        abi_problem(kernel.outcome.param_sizes, exercise.parameters, exercise.kernel_name);
    if (!abi.empty()) {
        std::cout << abi << "\n";
        return kExitFail;
    }
    const sim::Module module = sim::parse_ptx(kernel.ptx);
    const SimLaunchShape shape = sim_launch_shape(exercise);
    const std::vector<float> ones(exercise.tile_words, exercise.tile_value);
    std::cout << exercise.kernel_name << " from " << request->source_name
              << " on the PTX simulator (" << exercise.default_arch << "), " << shape.grid
              << " blocks of " << shape.block << " threads; bank = (byte address / 4) % "
              << exercise.banks << "\n";

    std::uint64_t warp_instructions = 0;
    std::uint64_t thread_instructions = 0;
    double seconds = 0.0;
    int status = kExitPass;
    for (const int stride : options.strides) {
        const auto began = std::chrono::steady_clock::now();
        const SimProbeRun run =
            run_sim_probe(exercise, module, kernel.outcome.lowered_name, shape, ones, stride,
                          sim::LaunchOptions{}.instruction_budget);
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
        const auto& counts = run.launch.counts;
        warp_instructions += counts.warp_instructions;
        thread_instructions += counts.thread_instructions;
        std::cout << "\nstride " << stride;
        if (counts.shared_load_requests > 0) {
            char degree[64];
            std::snprintf(degree, sizeof degree, ": %.2f shared-load wavefronts per request",
                          static_cast<double>(counts.shared_load_wavefronts) /
                              static_cast<double>(counts.shared_load_requests));
            std::cout << degree;
        }
        std::cout << "\n";
        if (run.launch.status != sim::LaunchStatus::completed) {
            std::cout << "  stopped (" << sim::to_string(run.launch.status)
                      << "): " << run.launch.message << "\n";
            status = kExitFail;
        }
        const auto lines = sim::shared_accesses_by_line(counts);
        // The busiest line is the one the stride's degree is about: it gets its lane table even
        // when it is conflict free, so stride 3's 32 distinct banks can be seen.
        std::uint64_t busiest = 0;
        for (const auto& line : lines) {
            busiest = std::max(busiest, line.requests);
        }
        for (const auto& line : lines) {
            if (!line.representative) {
                continue;
            }
            if (line.max_degree <= 1 && line.requests < busiest) {
                std::cout << "  " << line_name(line) << ": "
                          << sim::describe_banks(*line.representative) << "\n";
                continue;
            }
            char head[200];
            std::snprintf(
                head, sizeof head, "  %s: %s, %.2f wavefronts per request over %llu requests\n",
                line_name(line).c_str(),
                line.max_degree <= 1 ? "conflict free"
                                     : (std::to_string(line.max_degree) + "-way conflict").c_str(),
                line.wavefronts_per_request(), static_cast<unsigned long long>(line.requests));
            std::cout << head << lane_table(*line.representative) << "      "
                      << sim::describe_banks(*line.representative) << "\n";
        }
        if (run.launch.uninitialized_shared_read) {
            const auto& read = *run.launch.uninitialized_shared_read;
            std::cout << "  note: thread " << read.thread.thread.x << " of block "
                      << read.thread.block.x << " read shared word " << read.word << " at "
                      << read.where.file << ":" << read.where.line
                      << " before any thread wrote it\n";
        }
    }
    if (options.stats) {
        char line[256];
        std::snprintf(line, sizeof line,
                      "\nsimulated %llu warp instructions (%llu thread instructions) in %.3f s: "
                      "%.3g warp instructions/s, %.3g thread instructions/s\n",
                      static_cast<unsigned long long>(warp_instructions),
                      static_cast<unsigned long long>(thread_instructions), seconds,
                      seconds > 0 ? static_cast<double>(warp_instructions) / seconds : 0.0,
                      seconds > 0 ? static_cast<double>(thread_instructions) / seconds : 0.0);
        std::cout << line;
    }
    return status;
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
    command->add_option("--exercise", options->exercise, "Exercise folder")
        ->check(CLI::ExistingDirectory);
    command->add_option("--strides", options->strides, "Strides to run, e.g. 3,8,16,32")
        ->delimiter(',')
        ->capture_default_str();
    command->add_flag("--reference", options->reference,
                      "Explain the exercise's reference kernel instead of the submission's");
    command->add_flag("--stats", options->stats,
                      "Also print how many instructions were simulated, and how fast");
    command->callback([options, &run] { run = [options] { return run_explain(*options); }; });
}

}  // namespace grader::cli
