#include "grade/explain.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/kernel_ids.hpp"
#include "compile/compile.hpp"
#include "device/device.hpp"
#include "device/sim_device.hpp"
#include "grade/grade.hpp"
#include "grade/sources.hpp"
#include "grade/stage.hpp"
#include "measure/outputs.hpp"
#include "model/explanation.hpp"
#include "model/measurements.hpp"
#include "model/observations.hpp"
#include "sim/sim.hpp"

namespace grader {
namespace {

ExplainedWarp explained_warp(const sim::WarpAccessTable& table) {
    ExplainedWarp warp;
    warp.block = table.block.x;
    warp.warp = table.warp;
    warp.wavefronts = table.wavefronts;
    warp.ideal_wavefronts = table.ideal_wavefronts;
    warp.bytes_per_lane = table.bytes_per_lane;
    warp.rule = sim::width_rule(table.bytes_per_lane);
    for (const auto& lane : table.lanes) {
        warp.lanes.push_back({lane.active, lane.word, lane.bank, lane.bank_mates});
    }
    warp.banks = sim::describe_banks(table);
    return warp;
}

}  // namespace

void explain_kernel(const Exercise& exercise, const WorkerOptions& options, ProgressSink& sink) {
    sink.stage({Stage::Kind::explain}, exercise.limits.compile_seconds);
    Explanation explanation;
    explanation.kernel_name = exercise.kernel_name;
    explanation.arch = exercise.default_arch;
    explanation.banks = exercise.banks;
    const KernelSources sources = load_kernel_sources(
        exercise, options.explain_reference ? std::filesystem::path{} : options.submission_dir,
        exercise.default_arch);
    const std::string kernel_id =
        options.explain_reference ? exercise.oracle()->id : std::string(kStudentKernel);
    const auto request = sources.requests.find(kernel_id);
    if (request == sources.requests.end()) {
        explanation.problem = sources.student_missing_reason;
        sink.explanation(explanation);
        return;
    }
    explanation.source_name = request->second.source_name;
    explanation.kernel_name = request->second.kernel_name;
    UntrustedCompileOptions compile_options;
    compile_options.grader_executable = current_executable();
    compile_options.seconds = exercise.limits.compile_seconds;
    compile_options.memory_bytes = exercise.limits.memory_bytes;
    const CompiledKernel kernel = options.explain_reference
                                      ? compile_kernel(request->second)
                                      : compile_untrusted(request->second, compile_options);
    if (!kernel.outcome.ok) {
        explanation.problem = request->second.source_name + " did not compile for " +
                              exercise.default_arch + ":\n" + kernel.outcome.log;
        sink.explanation(explanation);
        return;
    }
    const std::string abi =
        abi_problem(kernel.outcome.param_sizes, exercise.parameters, exercise.kernel_name);
    if (!abi.empty()) {
        explanation.problem = abi;
        sink.explanation(explanation);
        return;
    }
    std::string unreadable;
    const std::unique_ptr<SimulatedKernel> simulated = SimulatedKernel::load(
        exercise, options.seed, exercise.kernel(kernel_id), kernel, unreadable);
    if (!simulated) {
        explanation.problem = unreadable;
        sink.explanation(explanation);
        return;
    }
    const LaunchGeometry& geometry = simulated->geometry();
    explanation.grid_blocks = geometry.grid.count();
    explanation.block_threads = geometry.block.count();
    const InputSpec& input = exercise.inputs.front();
    const std::vector<float> words = make_input(input, exercise.buffers.input_words, options.seed);
    std::vector<int> strides = options.explain_strides;
    if (!exercise.has_sweep() || strides.empty()) {
        strides = exercise.has_sweep() ? exercise.student_strides : std::vector<int>{0};
    }
    for (const int stride : strides) {
        const auto began = std::chrono::steady_clock::now();
        SimLaunchSettings settings;
        settings.blocks = simulated->blocks_for(input, stride);
        const sim::LaunchResult result = simulate(exercise, simulated->module(), simulated->entry(),
                                                  geometry, words, stride, settings, nullptr);
        explanation.simulated_seconds +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
        explanation.warp_instructions += result.counts.warp_instructions;
        explanation.thread_instructions += result.counts.thread_instructions;
        ExplainedStride explained;
        explained.stride = stride;
        if (result.counts.shared_load_ideal_wavefronts > 0) {
            explained.load_degree = static_cast<double>(result.counts.shared_load_wavefronts) /
                                    static_cast<double>(result.counts.shared_load_ideal_wavefronts);
        }
        if (result.status != sim::LaunchStatus::completed) {
            explained.stopped = std::string(sim::to_string(result.status)) + ": " + result.message;
        }
        if (result.uninitialized_shared_read) {
            const auto& read = *result.uninitialized_shared_read;
            explained.note = "thread " + std::to_string(read.thread.thread.x) + " of block " +
                             std::to_string(read.thread.block.x) + " read shared word " +
                             std::to_string(read.word) + " at " + read.where.file + ":" +
                             std::to_string(read.where.line) + " before any thread wrote it";
        }
        for (const auto& line : sim::shared_accesses_by_line(result.counts)) {
            ExplainedLine explained_line;
            explained_line.counts = line_counts_of(line);
            explained_line.max_degree = line.max_degree;
            if (line.representative) {
                explained_line.representative = explained_warp(*line.representative);
            }
            explained.lines.push_back(std::move(explained_line));
        }
        explanation.strides.push_back(std::move(explained));
    }
    sink.explanation(explanation);
}

}  // namespace grader
