// `grader __launch`: compiles one kernel file with NVRTC and launches it once, on the GPU (for
// Nsight Compute to count) or on the PTX simulator (--sim, printing the simulator's counts under
// Nsight Compute's metric names: shared memory's instructions, wavefronts and bank conflicts,
// global memory's requests and sectors). scripts/ncu-compare.sh puts the two side by side. Not
// for students: hidden from --help.
//
// Arguments follow the kernel's parameters in order (--arg, repeatable):
//   buf=BYTES   a buffer of BYTES bytes filled with 1.0f
//   u32=V, i32=V, u64=V   a value
//   threads     the number of threads launched, 8 bytes (the probe's n)
//   stride      the --stride value, 4 bytes
// Without --arg the exercise's ABI is used: the tile, the outputs, the thread count, the stride.

#include <cuda.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "cli/locations.hpp"
#include "common/text.hpp"
#include "compile/compile.hpp"
#include "cuda/driver_api.hpp"
#include "cuda/resources.hpp"
#include "exercise/exercise.hpp"
#include "grade/sources.hpp"
#include "model/measurements.hpp"
#include "sim/sim.hpp"

namespace grader::cli {
namespace {

struct LaunchCommandOptions {
    std::filesystem::path kernel;
    std::string name;
    std::filesystem::path exercise;
    int stride = 1;
    std::vector<std::uint32_t> grid{0};
    std::vector<std::uint32_t> block{0};
    std::vector<std::string> args;
    bool sim = false;
    std::uint32_t sim_blocks = 1;
    int device = 0;
};

struct Argument {
    enum class Kind { buffer, value };
    Kind kind = Kind::value;
    std::size_t bytes = 0;  // the buffer's size, or the value's
    std::uint64_t value = 0;
};

std::uint64_t parse_count(const std::string& text, const std::string& what) {
    try {
        std::size_t used = 0;
        const long long value = std::stoll(text, &used, 0);
        if (used == text.size()) {
            return static_cast<std::uint64_t>(value);
        }
    } catch (const std::exception&) {
    }
    throw CLI::ValidationError("--arg", "'" + text + "' is not a number in " + what);
}

std::vector<Argument> parse_arguments(const LaunchCommandOptions& options, const Exercise& exercise,
                                      std::uint64_t threads) {
    std::vector<std::string> specs = options.args;
    if (specs.empty()) {
        for (const auto& parameter : exercise.parameters) {
            switch (parameter.role) {
                case ParameterRole::input:
                    specs.push_back("buf=" + std::to_string(exercise.buffers.input_words * 4));
                    break;
                case ParameterRole::output:
                    specs.push_back("buf=" + std::to_string(threads * 4));
                    break;
                case ParameterRole::count:
                    specs.push_back("threads");
                    break;
                case ParameterRole::constant:
                    specs.push_back((parameter.size_bytes == 8 ? "u64=" : "i32=") +
                                    std::to_string(parameter.value));
                    break;
                case ParameterRole::stride:
                    specs.push_back("stride");
                    break;
            }
        }
    }
    std::vector<Argument> arguments;
    for (const auto& spec : specs) {
        const auto equals = spec.find('=');
        const std::string kind = spec.substr(0, equals);
        const std::string value = equals == std::string::npos ? "" : spec.substr(equals + 1);
        if (kind == "buf") {
            arguments.push_back({Argument::Kind::buffer, parse_count(value, spec), 0});
        } else if (kind == "u32" || kind == "i32") {
            arguments.push_back({Argument::Kind::value, 4, parse_count(value, spec)});
        } else if (kind == "u64") {
            arguments.push_back({Argument::Kind::value, 8, parse_count(value, spec)});
        } else if (kind == "threads") {
            arguments.push_back({Argument::Kind::value, 8, threads});
        } else if (kind == "stride") {
            arguments.push_back(
                {Argument::Kind::value, 4,
                 static_cast<std::uint64_t>(static_cast<std::int64_t>(options.stride))});
        } else {
            throw CLI::ValidationError("--arg", "unknown argument kind '" + spec +
                                                    "' (buf=BYTES, u32=V, i32=V, u64=V, threads, "
                                                    "stride)");
        }
    }
    return arguments;
}

sim::Dim3 dim_of(const std::vector<std::uint32_t>& values) {
    sim::Dim3 d;
    d.x = values.size() > 0 ? values[0] : 1;
    d.y = values.size() > 1 ? values[1] : 1;
    d.z = values.size() > 2 ? values[2] : 1;
    return d;
}

std::vector<float> ones_of(std::size_t bytes) {
    return std::vector<float>(bytes / 4, 1.0f);
}

int launch_on_simulator(const LaunchCommandOptions& options, const CompiledKernel& kernel,
                        const std::vector<Argument>& arguments, sim::Dim3 grid, sim::Dim3 block) {
    const sim::Module module = sim::parse_ptx(kernel.ptx);
    sim::GlobalMemory memory;
    std::vector<std::vector<std::byte>> params;
    for (const auto& argument : arguments) {
        std::uint64_t value = argument.value;
        std::size_t bytes = argument.bytes;
        if (argument.kind == Argument::Kind::buffer) {
            value = memory.allocate(argument.bytes);
            const auto ones = ones_of(argument.bytes);
            memory.write(value, ones.data(), ones.size() * 4);
            bytes = 8;
        }
        std::vector<std::byte> raw(bytes);
        std::memcpy(raw.data(), &value, std::min<std::size_t>(bytes, 8));
        params.push_back(std::move(raw));
    }
    const std::uint64_t total_blocks = std::uint64_t{grid.x} * grid.y * grid.z;
    const std::uint64_t simulated = options.sim_blocks == 0
                                        ? total_blocks
                                        : std::min<std::uint64_t>(options.sim_blocks, total_blocks);
    sim::LaunchOptions launch_options;
    launch_options.blocks = sim::first_blocks(grid, simulated);
    launch_options.instruction_budget = 200'000'000;
    const sim::LaunchResult result = sim::launch(module, kernel.outcome.lowered_name, grid, block,
                                                 params, memory, launch_options);
    if (result.status != sim::LaunchStatus::completed) {
        std::cerr << "grader: the simulated launch stopped (" << sim::to_string(result.status)
                  << "): " << result.message << "\n";
        return kExitFail;
    }
    // The blocks are alike (the probe's are identical), so counts scale with the block count.
    const double scale = static_cast<double>(total_blocks) / static_cast<double>(simulated);
    const auto& c = result.counts;
    const auto scaled = [scale](std::uint64_t value) {
        return static_cast<unsigned long long>(static_cast<double>(value) * scale + 0.5);
    };
    std::printf("blocks_simulated,%llu\nblocks_in_grid,%llu\n",
                static_cast<unsigned long long>(simulated),
                static_cast<unsigned long long>(total_blocks));
    std::printf("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,%llu\n",
                scaled(c.shared_load_wavefronts));
    std::printf("smsp__sass_inst_executed_op_shared_ld.sum,%llu\n", scaled(c.shared_load_requests));
    std::printf("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,%llu\n",
                scaled(c.shared_store_wavefronts));
    std::printf("smsp__sass_inst_executed_op_shared_st.sum,%llu\n",
                scaled(c.shared_store_requests));
    // Nsight Compute's conflicts: the wavefronts beyond the fewest each access's width allows.
    std::printf("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,%llu\n",
                scaled(c.shared_load_wavefronts - c.shared_load_ideal_wavefronts));
    std::printf("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,%llu\n",
                scaled(c.shared_store_wavefronts - c.shared_store_ideal_wavefronts));
    // A warp-level request is one instruction: the grader's counter reads the SM's instruction
    // counts, which share a replay pass with the shared-memory metrics.
    std::printf("smsp__inst_executed_op_global_ld.sum,%llu\n", scaled(c.global_load_requests));
    std::printf("smsp__inst_executed_op_global_st.sum,%llu\n", scaled(c.global_store_requests));
    std::printf("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,%llu\n",
                scaled(c.global_load_requests));
    std::printf("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,%llu\n",
                scaled(c.global_load_sectors));
    std::printf("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,%llu\n",
                scaled(c.global_store_requests));
    std::printf("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,%llu\n",
                scaled(c.global_store_sectors));
    std::printf("sim_warp_instructions,%llu\n", scaled(c.warp_instructions));
    return kExitPass;
}

int launch_on_gpu(const LaunchCommandOptions& options, const CompiledKernel& kernel,
                  const std::vector<Argument>& arguments, sim::Dim3 grid, sim::Dim3 block) {
    cuda::PrimaryContext context(options.device);
    const cuda::Module module(kernel.cubin);
    const CUfunction function = module.function(kernel.outcome.lowered_name);
    std::vector<cuda::DeviceBuffer> buffers;
    std::vector<std::uint64_t> storage(arguments.size());
    std::vector<void*> pointers;
    for (std::size_t i = 0; i < arguments.size(); ++i) {
        if (arguments[i].kind == Argument::Kind::buffer) {
            buffers.emplace_back(arguments[i].bytes);
            const auto ones = ones_of(arguments[i].bytes);
            buffers.back().upload(ones.data(), ones.size() * 4);
            storage[i] = static_cast<std::uint64_t>(buffers.back().get());
        } else {
            storage[i] = arguments[i].value;  // little-endian: the low bytes are the value
        }
        pointers.push_back(&storage[i]);
    }
    GRADER_DRIVER_CALL(cuCtxSynchronize());  // the uploads land before the launch
    cuda::Stream stream;
    GRADER_DRIVER_CALL(cuLaunchKernel(function, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                      0, stream.get(), pointers.data(), nullptr));
    stream.synchronize();
    std::printf("launched %s: grid %u,%u,%u block %u,%u,%u stride %d\n", options.name.c_str(),
                grid.x, grid.y, grid.z, block.x, block.y, block.z, options.stride);
    return kExitPass;
}

int run_launch(const LaunchCommandOptions& options) {
    const Exercise exercise =
        load_exercise(options.exercise.empty() ? default_exercise_dir() : options.exercise);
    std::string arch = exercise.default_arch;
    if (!options.sim) {
        arch = cuda::query_device(options.device).arch();
    }
    CompileRequest request;
    request.source = read_harness_file(options.kernel);
    request.source_name = options.kernel.filename().string();
    request.kernel_name = options.name;
    request.arch = arch;
    request.options = exercise.compile_options;
    for (const auto& header : exercise.headers) {
        request.headers.push_back({header.include_name, read_harness_file(header.path)});
    }
    request.vet = false;
    const CompiledKernel kernel = compile_kernel(request);
    if (!kernel.outcome.ok) {
        std::cerr << kernel.outcome.log << "\n";
        return kExitFail;
    }
    const sim::Dim3 block =
        dim_of(options.block[0] == 0
                   ? std::vector<std::uint32_t>{exercise.launch.block.x, exercise.launch.block.y,
                                                exercise.launch.block.z}
                   : options.block);
    const sim::Dim3 grid =
        dim_of(options.grid[0] == 0 ? std::vector<std::uint32_t>{2} : options.grid);
    const std::uint64_t threads =
        std::uint64_t{grid.x} * grid.y * grid.z * block.x * block.y * block.z;
    const std::vector<Argument> arguments = parse_arguments(options, exercise, threads);
    if (arguments.size() != kernel.outcome.param_sizes.size()) {
        std::cerr << "grader: " << options.name << " has " << kernel.outcome.param_sizes.size()
                  << " parameters; " << arguments.size() << " --arg given\n";
        return kExitUsage;
    }
    return options.sim ? launch_on_simulator(options, kernel, arguments, grid, block)
                       : launch_on_gpu(options, kernel, arguments, grid, block);
}

}  // namespace

void add_launch_command(CLI::App& app, Runner& run) {
    auto options = std::make_shared<LaunchCommandOptions>();
    CLI::App* command = app.add_subcommand("__launch", "");
    command->group("");  // hidden from --help
    command->add_option("--kernel", options->kernel)->required()->check(CLI::ExistingFile);
    command->add_option("--name", options->name)->required();
    command->add_option("--exercise", options->exercise)->check(CLI::ExistingDirectory);
    command->add_option("--stride", options->stride);
    command->add_option("--grid", options->grid)->delimiter(',');
    command->add_option("--block", options->block)->delimiter(',');
    command->add_option("--arg", options->args);
    command->add_flag("--sim", options->sim);
    command->add_option("--sim-blocks", options->sim_blocks,
                        "Blocks to simulate (0: all); the counts are scaled to the grid");
    command->add_option("--device", options->device);
    command->callback([options, &run] { run = [options] { return run_launch(*options); }; });
}

}  // namespace grader::cli
