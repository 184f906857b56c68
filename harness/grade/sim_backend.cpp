// The simulator backend: the same compile, ABI check and accumulator checks as the GPU path, run
// on the PTX simulator, with modeled costs in place of times. It needs no GPU, so a student (or
// CI) can grade anywhere; the modeled cost is not a time, only its ratios between strides of one
// kernel mean something.

#include <algorithm>
#include <cstring>
#include <future>
#include <optional>

#include "checks/checks.hpp"
#include "compile/compile.hpp"
#include "grade/probe_sources.hpp"
#include "grade/sim_probe.hpp"
#include "grade/worker.hpp"
#include "measure/accumulator.hpp"
#include "sim/sim.hpp"

namespace grader {
namespace {

// A loaded probe kernel on the simulator.
struct SimProbe {
    std::string kernel;  // "student" or "reference"
    sim::Module module;
    std::string entry;
};

std::string stage_name(const std::string& kernel, int stride) {
    return "run " + kernel + " stride " + std::to_string(stride);
}

std::string location_text(const sim::SourceLocation& where) {
    if (where.line > 0) {
        return (where.file.empty() ? std::string("the kernel") : where.file) + ":" +
               std::to_string(where.line);
    }
    return "PTX line " + std::to_string(where.ptx_line);
}

// Why a launch that did not complete stopped, as the report's interruption.
Interruption interruption_for(const Exercise& exercise, const std::string& kernel, int stride,
                              const sim::LaunchResult& result, std::uint64_t budget) {
    const bool students = kernel == "student";
    const std::string who = exercise.kernel_name + " (" + kernel + ")";
    const std::string stage = stage_name(kernel, stride);
    switch (result.status) {
        case sim::LaunchStatus::budget_exceeded:
            return Interruption{
                "timeout", stage,
                who + " did not finish within the simulator's instruction budget of " +
                    std::to_string(budget) + " warp instructions at stride " +
                    std::to_string(stride) +
                    (result.last_location ? ", at " + location_text(*result.last_location) : "") +
                    "; it was stopped",
                students};
        case sim::LaunchStatus::unsupported: {
            const auto& u = *result.unsupported;
            return Interruption{
                "unsupported", stage,
                "the simulator does not support " + u.opcode + " (" +
                    (u.where.file.empty() ? exercise.submission_source : u.where.file) + " line " +
                    std::to_string(u.where.line) + ", in " + who + "); grade on a GPU",
                false};
        }
        case sim::LaunchStatus::fault:
        case sim::LaunchStatus::completed:
            break;
    }
    return Interruption{"fault", stage,
                        who + " failed at stride " + std::to_string(stride) + ": " + result.message,
                        students};
}

// "tile" from "_ZZ17probeSharedStridePKfPfmiE4tile": a function-local __shared__ array's name.
std::string variable_name(const std::string& mangled) {
    const auto end = mangled.rfind('E');
    if (mangled.rfind("_ZZ", 0) != 0 || end == std::string::npos) {
        return mangled;
    }
    std::size_t at = end + 1;
    while (at < mangled.size() && mangled[at] >= '0' && mangled[at] <= '9') {
        ++at;
    }
    return at < mangled.size() ? mangled.substr(at) : mangled;
}

std::string uninitialized_read_note(int stride, const sim::UninitializedSharedRead& read) {
    std::string note = "stride " + std::to_string(stride) + ": thread " +
                       std::to_string(read.thread.thread.x) + " of block " +
                       std::to_string(read.thread.block.x) + " read shared word " +
                       std::to_string(read.word);
    if (!read.variable.empty()) {
        note += " (" + variable_name(read.variable) + "[" + std::to_string(read.word_in_variable) +
                "])";
    }
    return note + " at " + location_text(read.where) +
           " before any thread of its block wrote it (the simulator's shared memory starts as NaN)";
}

std::string compute_capability_of(const std::string& arch) {
    // "sm_75" -> "7.5", "sm_100" -> "10.0"
    const std::string digits = arch.substr(arch.find('_') + 1);
    if (digits.size() < 2) {
        return digits;
    }
    return digits.substr(0, digits.size() - 1) + "." + digits.substr(digits.size() - 1);
}

}  // namespace

void run_sim_backend(const Exercise& exercise, const WorkerOptions& options,
                     const Submission& submission, Measurements& m, ProgressSink& sink) {
    (void)submission;
    const double run_limit = options.run_seconds_override > 0 ? options.run_seconds_override
                                                              : exercise.limits.run_seconds;
    const std::string arch = exercise.default_arch;

    sink.stage("compile", exercise.limits.compile_seconds);
    ProbeSources sources = load_probe_sources(
        exercise, options.reference_only ? std::filesystem::path{} : options.submission_dir, arch);
    auto reference_future =
        std::async(std::launch::async, [&] { return compile_kernel(sources.reference); });
    std::future<CompiledKernel> student_future;
    if (!options.reference_only && sources.student) {
        student_future =
            std::async(std::launch::async, [&] { return compile_kernel(*sources.student); });
    }
    const CompiledKernel reference = reference_future.get();
    m.reference = reference.outcome;
    CompiledKernel student;
    if (!options.reference_only) {
        student = finish_student_compile(student_future, sources, exercise);
        m.student = student.outcome;
    }

    const SimLaunchShape shape = sim_launch_shape(exercise);
    m.environment.gpu_available = false;
    m.environment.device_name = "a GPU with 32 banks of shared memory";
    m.environment.compute_capability = compute_capability_of(arch);
    m.environment.grid_blocks = shape.grid;
    m.environment.block_size = shape.block;
    if (!reference.outcome.ok) {
        sink.measurements(m);
        return;  // the checks report the machine as unfit
    }

    sink.stage("load", run_limit);
    std::vector<SimProbe> probes;
    probes.push_back({"reference", sim::parse_ptx(reference.ptx), reference.outcome.lowered_name});
    if (!options.reference_only && student.outcome.ok && student.outcome.abi_problem.empty()) {
        try {
            SimProbe probe{"student", sim::parse_ptx(student.ptx), student.outcome.lowered_name};
            if (const auto entry = probe.module.entry(probe.entry)) {
                m.student.static_shared_bytes = static_cast<int>(entry->static_shared_bytes);
            }
            probes.push_back(std::move(probe));
        } catch (const sim::ParseError& error) {
            m.interruption = Interruption{"unsupported", "load",
                                          "the simulator cannot read the student's PTX (PTX line " +
                                              std::to_string(error.line()) + ": " +
                                              error.message() + "); grade on a GPU",
                                          false};
            sink.measurements(m);
            return;
        }
    }
    sink.measurements(m);

    const std::vector<float> ones(exercise.tile_words, exercise.tile_value);
    const std::vector<float> hidden =
        hidden_tile(exercise.tile_words, exercise.hidden_max_value, m.seed);
    const auto strides_of = [&](const std::string& kernel) {
        return kernel == "student" ? student_strides_to_run(exercise, m.unnamed_strides)
                                   : reference_strides_to_run(exercise, m.unnamed_strides);
    };

    std::uint64_t reference_instructions = 0;  // stride 1, for the student's budget
    for (const auto& probe : probes) {
        const std::uint64_t budget =
            probe.kernel == "student"
                ? std::max<std::uint64_t>(kSimBudgetFactor * reference_instructions,
                                          kSimMinimumBudget)
                : sim::LaunchOptions{}.instruction_budget;
        for (const int stride : strides_of(probe.kernel)) {
            sink.stage(stage_name(probe.kernel, stride), run_limit);
            KernelRun run;
            run.kernel = probe.kernel;
            run.stride = stride;
            bool stopped = false;
            for (const bool is_hidden : {false, true}) {
                const std::vector<float>& tile = is_hidden ? hidden : ones;
                // The all-ones run covers the whole grid (a kernel that ignores blockIdx leaves
                // block 1 unwritten); the hidden input needs one block, which halves its cost.
                const std::uint32_t blocks = is_hidden ? 1 : 0;
                SimProbeRun result = run_sim_probe(exercise, probe.module, probe.entry, shape,
                                                   tile, stride, budget, blocks);
                if (blocks > 0) {
                    result.outputs.resize(std::size_t{blocks} * shape.block);
                }
                if (result.launch.status != sim::LaunchStatus::completed) {
                    m.interruption =
                        interruption_for(exercise, probe.kernel, stride, result.launch, budget);
                    stopped = true;
                    break;
                }
                const auto expected =
                    expected_sums(tile, exercise.block_size, stride, exercise.reads_per_thread);
                AccumulatorResult& accumulator = is_hidden ? run.hidden : run.ones;
                accumulator = compare_outputs(result.outputs, expected, exercise.block_size);
                if (result.launch.uninitialized_shared_read && run.note.empty()) {
                    run.note =
                        uninitialized_read_note(stride, *result.launch.uninitialized_shared_read);
                }
                if (!is_hidden) {
                    // The all-ones launch is the one a GPU would time.
                    const auto& counts = result.launch.counts;
                    TimingStats cost;
                    cost.modeled = true;
                    cost.median_ms = cost.min_ms = cost.max_ms = sim::modeled_cost(counts);
                    cost.samples = 1;
                    run.timing = cost;
                    if (counts.shared_load_requests > 0) {
                        run.counted_degree = static_cast<double>(counts.shared_load_wavefronts) /
                                             static_cast<double>(counts.shared_load_requests);
                    }
                    if (probe.kernel == "reference" && stride == 1) {
                        reference_instructions = counts.warp_instructions;
                    }
                }
            }
            if (stopped) {
                sink.measurements(m);
                return;
            }
            m.runs.push_back(run);
            sink.measurements(m);
        }
    }

    for (auto& run : m.runs) {
        const KernelRun* base = m.run(run.kernel, 1);
        if (base != nullptr && base->timing && run.timing && base->timing->median_ms > 0) {
            run.ratio = run.timing->median_ms / base->timing->median_ms;
            run.ratio_min = run.ratio;
            run.ratio_max = run.ratio;
        }
    }
    m.timing_rounds = 1;
    sink.measurements(m);
}

SimLaunchShape sim_launch_shape(const Exercise& exercise) {
    return SimLaunchShape{kSimGridBlocks, exercise.block_size};
}

SimProbeRun run_sim_probe(const Exercise& exercise, const sim::Module& module,
                          const std::string& entry, const SimLaunchShape& shape,
                          const std::vector<float>& tile, int stride, std::uint64_t budget,
                          std::uint32_t blocks_to_run) {
    sim::GlobalMemory memory;
    const std::uint64_t threads = std::uint64_t{shape.grid} * shape.block;
    const std::uint64_t input = memory.allocate(tile.size() * sizeof(float));
    memory.write(input, tile.data(), tile.size() * sizeof(float));
    const std::uint64_t output = memory.allocate(threads * sizeof(float));
    const std::vector<std::uint32_t> poison(threads, kSimOutputPoison);
    memory.write(output, poison.data(), poison.size() * sizeof(std::uint32_t));

    // Parameters from the exercise's roles, as the GPU path assembles them.
    std::vector<std::vector<std::byte>> params;
    for (const auto& parameter : exercise.parameters) {
        std::uint64_t value = 0;
        switch (parameter.role) {
            case ParameterRole::input:
                value = input;
                break;
            case ParameterRole::output:
                value = output;
                break;
            case ParameterRole::count:
                value = threads;
                break;
            case ParameterRole::stride:
                value = static_cast<std::uint64_t>(static_cast<std::int64_t>(stride));
                break;
        }
        std::vector<std::byte> bytes(parameter.size_bytes);
        std::memcpy(bytes.data(), &value, std::min<std::size_t>(bytes.size(), sizeof value));
        params.push_back(std::move(bytes));
    }

    sim::LaunchOptions launch_options;
    launch_options.instruction_budget = budget;
    if (blocks_to_run > 0 && blocks_to_run < shape.grid) {
        launch_options.blocks = sim::first_blocks(sim::Dim3{shape.grid, 1, 1}, blocks_to_run);
    }
    SimProbeRun run;
    run.launch = sim::launch(module, entry, sim::Dim3{shape.grid, 1, 1},
                             sim::Dim3{shape.block, 1, 1}, params, memory, launch_options);
    if (run.launch.status == sim::LaunchStatus::completed) {
        run.outputs.resize(threads);
        memory.read(output, run.outputs.data(), threads * sizeof(float));
    }
    return run;
}

}  // namespace grader
