#include "device/sim_device.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "common/kernel_ids.hpp"
#include "measure/outputs.hpp"

namespace grader {
namespace {

class SimKernel final : public LoadedKernel {
public:
    sim::Module module;
    std::string entry;
    // Its .global variables between launches, as a loaded module keeps them on a GPU.
    mutable std::vector<std::byte> globals;
};

const SimKernel& sim_kernel(const LoadedKernel& kernel) {
    return static_cast<const SimKernel&>(kernel);
}

std::string uninitialized_read_note(int stride, const sim::UninitializedSharedRead& read) {
    // Threads and blocks as (x, y, z) where either has more than one dimension; a variable's word
    // by its index in the variable's words (tile[32][33] has no tile[33]).
    const bool flat = read.thread.thread.y == 0 && read.thread.thread.z == 0 &&
                      read.thread.block.y == 0 && read.thread.block.z == 0;
    std::string note =
        (stride > 0 ? "stride " + std::to_string(stride) + ": " : std::string()) + "thread " +
        (flat ? std::to_string(read.thread.thread.x) : sim::dim_text(read.thread.thread)) +
        " of block " +
        (flat ? std::to_string(read.thread.block.x) : sim::dim_text(read.thread.block)) +
        " read shared word " + std::to_string(read.word);
    if (!read.variable.empty()) {
        note += " (word " + std::to_string(read.word_in_variable) + " of " +
                sim::shared_variable_name(read.variable) + ")";
    }
    return note + " at " + sim::location_text(read.where) +
           " before any thread of its block wrote it (shared memory holds whatever was left there)";
}

// The first races the launch saw, and how many accesses raced in all where that is more.
std::vector<std::string> race_lines(const sim::LaunchResult& result) {
    constexpr std::size_t kShown = 3;
    std::vector<std::string> lines;
    for (std::size_t k = 0; k < result.races.size() && k < kShown; ++k) {
        lines.push_back(result.races[k].message);
    }
    if (result.race_count > lines.size()) {
        lines.push_back(std::to_string(result.race_count) +
                        " warp-wide shared-memory accesses raced in all");
    }
    return lines;
}

std::string compute_capability_of(const std::string& arch) {
    // "sm_75" -> "7.5", "sm_100" -> "10.0"
    const std::string digits = arch.substr(arch.find('_') + 1);
    if (digits.size() < 2) {
        return digits;
    }
    return digits.substr(0, digits.size() - 1) + "." + digits.substr(digits.size() - 1);
}

// The launch's shared accesses per source line: the worst SharedAccessCounts::kMaxLines of them
// (a kernel's lines are few; a generated one's could be thousands), in source order.
std::vector<SharedLineCounts> line_counts(const sim::LaunchCounts& counts) {
    std::vector<SharedLineCounts> lines;
    for (const sim::SharedLineStats& stats : sim::shared_accesses_by_line(counts)) {
        lines.push_back(line_counts_of(stats));
    }
    if (lines.size() > SharedAccessCounts::kMaxLines) {
        std::stable_sort(lines.begin(), lines.end(),
                         [](const auto& a, const auto& b) { return a.degree > b.degree; });
        lines.resize(SharedAccessCounts::kMaxLines);
        std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) {
            return std::tie(a.file, a.line, a.store) < std::tie(b.file, b.line, b.store);
        });
    }
    return lines;
}

SharedAccessCounts shared_counts(const sim::LaunchCounts& counts) {
    SharedAccessCounts shared;
    shared.load_requests = counts.shared_load_requests;
    shared.load_wavefronts = counts.shared_load_wavefronts;
    shared.load_ideal_wavefronts = counts.shared_load_ideal_wavefronts;
    shared.store_requests = counts.shared_store_requests;
    shared.store_wavefronts = counts.shared_store_wavefronts;
    shared.store_ideal_wavefronts = counts.shared_store_ideal_wavefronts;
    shared.global_load_requests = counts.global_load_requests;
    shared.global_load_sectors = counts.global_load_sectors;
    shared.global_store_requests = counts.global_store_requests;
    shared.global_store_sectors = counts.global_store_sectors;
    shared.blocks = counts.blocks_executed;
    shared.lines = line_counts(counts);
    return shared;
}

DeviceLaunch::End end_of(const sim::LaunchResult& result) {
    switch (result.status) {
        case sim::LaunchStatus::completed:
            return DeviceLaunch::End::completed;
        case sim::LaunchStatus::budget_exceeded:
            return DeviceLaunch::End::timeout;
        case sim::LaunchStatus::unsupported:
            return DeviceLaunch::End::unsupported;
        case sim::LaunchStatus::fault:
            return result.fault && result.fault->kind == "launch" ? DeviceLaunch::End::refused
                                                                  : DeviceLaunch::End::fault;
    }
    return DeviceLaunch::End::fault;
}

std::string stop_message(const sim::LaunchResult& result, std::uint64_t budget,
                         std::uint64_t block_budget) {
    switch (result.status) {
        case sim::LaunchStatus::budget_exceeded:
            return (result.over_block_budget
                        ? "block " + sim::dim_text(*result.over_block_budget) +
                              " did not finish within the simulator's instruction budget of " +
                              std::to_string(block_budget) + " warp instructions for one block"
                        : "it did not finish within the simulator's instruction budget of " +
                              std::to_string(budget) + " warp instructions") +
                   (result.last_location ? ", at " + sim::location_text(*result.last_location)
                                         : "");
        case sim::LaunchStatus::unsupported: {
            const auto& u = *result.unsupported;
            return "the simulator does not support " + u.opcode + " (at " +
                   sim::location_text(u.where) + ")";
        }
        case sim::LaunchStatus::fault:
        case sim::LaunchStatus::completed:
            break;
    }
    return result.message;
}

sim::Dim3 block_at(const Dim3Spec& grid, std::uint64_t linear) {
    const std::uint64_t xy = std::uint64_t{grid.x} * grid.y;
    return sim::Dim3{static_cast<std::uint32_t>(linear % grid.x),
                     static_cast<std::uint32_t>((linear % xy) / grid.x),
                     static_cast<std::uint32_t>(linear / xy)};
}

}  // namespace

SharedLineCounts line_counts_of(const sim::SharedLineStats& stats) {
    SharedLineCounts line;
    line.file = stats.file;
    line.line = stats.line;
    line.store = stats.store;
    line.bytes_per_lane = stats.bytes_per_lane;
    line.requests = stats.requests;
    line.wavefronts = stats.wavefronts;
    line.ideal_wavefronts = stats.ideal_wavefronts;
    line.degree = stats.degree;
    return line;
}

sim::LaunchResult simulate(const Exercise& exercise, const sim::Module& module,
                           const std::string& entry, const LaunchGeometry& geometry,
                           const std::vector<float>& input_words, int stride,
                           const SimLaunchSettings& settings, std::vector<float>* outputs) {
    SimBuffers own;
    SimBuffers& b = settings.buffers != nullptr ? *settings.buffers : own;
    const std::uint64_t clock_seed = settings.clock_seed;
    const std::uint64_t elements = output_elements(exercise, geometry);
    const std::size_t input_bytes = input_words.size() * sizeof(float);
    if (!b.memory || b.output_elements != elements) {
        b.memory.emplace(clock_seed);
        b.inputs.clear();
        b.output = 0;
        b.output_elements = elements;
    }
    sim::GlobalMemory& memory = *b.memory;
    SimBuffers::Input& in = b.inputs[input_words.data()];
    if (in.bytes != input_bytes || in.address == 0) {
        in.address = memory.allocate(input_bytes);
        in.bytes = input_bytes;
        in.intact = false;
    }
    if (b.output == 0) {
        b.output = memory.allocate(elements * sizeof(float));
    }
    const std::uint64_t input = in.address;
    const std::uint64_t output = b.output;
    if (!in.intact) {
        memory.write(input, input_words.data(), input_bytes);
        in.intact = true;
    }
    if (elements > 0 && outputs != nullptr) {
        auto* words =
            reinterpret_cast<std::uint32_t*>(memory.find(output, elements * sizeof(float)));
        std::fill_n(words, elements, kOutputPoison);
    }
    // What the launch allocates (the module's variables) goes when it ends.
    const std::uint64_t mark = memory.mark();
    sim::LaunchOptions options;
    options.instruction_budget = settings.budget;
    options.block_instruction_budget = settings.block_budget;
    options.blocks = settings.blocks;
    options.checked = settings.checked;
    options.input_address = input;
    options.input_bytes = input_bytes;
    options.clock_seed = clock_seed;
    options.gpu = sim::GpuModel::for_arch(exercise.default_arch);
    options.grid_id = settings.grid_id;
    options.poison_shared = settings.poison_shared;
    options.module_globals = settings.module_globals;
    options.engine = settings.engine;
    options.threads = settings.threads;
    const auto arguments = kernel_arguments(exercise, input, output, elements, stride);
    sim::LaunchResult result =
        sim::launch(module, entry, sim::Dim3{geometry.grid.x, geometry.grid.y, geometry.grid.z},
                    sim::Dim3{geometry.block.x, geometry.block.y, geometry.block.z}, arguments,
                    memory, options);
    if (result.wrote_input) {
        in.intact = false;  // the next launch gets its input again
    }
    if (outputs != nullptr && result.status == sim::LaunchStatus::completed) {
        // Copied once, not zero-filled first (64 MiB for a Part 2 launch).
        const auto* words =
            reinterpret_cast<const float*>(memory.find(output, elements * sizeof(float)));
        outputs->assign(words, words + elements);
    }
    memory.release_from(mark);
    return result;
}

SimDevice::SimDevice(const Exercise& exercise, std::uint64_t seed, StudentBlocks student_blocks,
                     unsigned threads)
    : exercise_(exercise), seed_(seed), student_blocks_(student_blocks), threads_(threads) {}

void SimDevice::describe(Environment& environment) const {
    environment.gpu_available = false;
    environment.device_name =
        "the PTX simulator (" + std::to_string(exercise_.banks) + " banks of shared memory)";
    environment.compute_capability = compute_capability_of(exercise_.default_arch);
    environment.grid_blocks = static_cast<std::uint32_t>(geometry_.grid.count());
    environment.block_size = static_cast<std::uint32_t>(geometry_.block.count());
    // How much of the grid the outputs were checked on.
    const std::uint64_t total = geometry_.grid.count();
    if (total == 0 || exercise_.inputs.empty()) {
        return;
    }
    std::string per_input;
    std::uint64_t most = 0;
    for (const InputSpec& input : exercise_.inputs) {
        const std::uint64_t n = blocks_for(input, geometry_, 0).size();
        most = std::max(most, n);
        per_input += std::string(per_input.empty() ? "" : " and ") + std::to_string(n) +
                     " with input " + input.id;
    }
    char share[32];
    std::snprintf(share, sizeof share, "%.2g%%",
                  100.0 * static_cast<double>(most) / static_cast<double>(total));
    environment.notes.push_back(
        "the simulator ran every one of the grid's " + std::to_string(total) +
        " blocks of your kernel in each launch, and checked " + per_input + " of them closely (" +
        share + " of the grid at most: counts, races, unwritten shared reads, and the values " +
        "compared with the exercise's own kernel there): the first and last blocks" +
        (geometry_.grid.y > 1 ? ", the corners and a block on each edge" : "") +
        " always, the others drawn by the seed for each input and stride");
}

LoadResult SimDevice::load(const KernelSpec& spec, const CompiledKernel& compiled) {
    LoadResult result;
    auto kernel = std::make_unique<SimKernel>();
    kernel->id = spec.id;
    try {
        kernel->module = sim::parse_ptx(compiled.ptx);
    } catch (const sim::ParseError& error) {
        result.problem = "the simulator cannot read the PTX (PTX line " +
                         std::to_string(error.line()) + ": " + error.message() + ")";
        result.unsupported = true;
        return result;
    }
    kernel->entry = compiled.outcome.lowered_name;
    if (const auto entry = kernel->module.entry(kernel->entry)) {
        kernel->param_sizes = entry->param_sizes;
        kernel->param_source = "ptx";
        kernel->static_shared_bytes = static_cast<int>(entry->static_shared_bytes);
    }
    result.kernel = std::move(kernel);
    return result;
}

LaunchGeometry SimDevice::geometry(const LoadedKernel& sizing_kernel) {
    (void)sizing_kernel;
    geometry_.block = exercise_.launch.block;
    geometry_.grid = exercise_.launch.grid_from_occupancy
                         ? Dim3Spec{exercise_.launch.simulated_grid_blocks, 1, 1}
                         : exercise_.launch.grid;
    return geometry_;
}

std::vector<sim::Dim3> SimDevice::blocks_for(const InputSpec& input, const LaunchGeometry& geometry,
                                             int stride) const {
    const Dim3Spec& grid = geometry.grid;
    const std::uint64_t total = grid.count();
    const auto linear = [&](std::uint64_t x, std::uint64_t y, std::uint64_t z) {
        return x + grid.x * (y + std::uint64_t{grid.y} * z);
    };
    // The blocks a boundary slip shows in, always: the first and the last, and for a 2-D grid the
    // four corners, so that the last thread, the last block, the first row and the last column
    // are checked at every seed.
    std::set<std::uint64_t> chosen{0, total - 1};
    if (grid.y > 1 || grid.z > 1) {
        chosen.insert(linear(grid.x - 1, 0, 0));
        chosen.insert(linear(0, grid.y - 1, 0));
        chosen.insert(linear(grid.x - 1, grid.y - 1, 0));
    }
    // The others by the grade's seed, per input and per stride, so that a kernel that behaves
    // only in some blocks cannot know which ones run: one on each edge of a 2-D grid (a slip in
    // the middle of the last row), then from the whole grid.
    std::uint64_t salt = 0;
    for (const char c : input.id) {
        salt = salt * 131 + static_cast<unsigned char>(c);
    }
    std::mt19937_64 rng(seed_ ^ 0xb10c5ULL ^ (salt << 7) ^
                        (static_cast<std::uint64_t>(static_cast<std::uint32_t>(stride)) << 40));
    const auto draw = [&](std::uint64_t below) {
        return std::uniform_int_distribution<std::uint64_t>(0, below - 1)(rng);
    };
    if (grid.y > 1) {
        chosen.insert(linear(draw(grid.x), 0, 0));
        chosen.insert(linear(draw(grid.x), grid.y - 1, 0));
        chosen.insert(linear(0, draw(grid.y), 0));
        chosen.insert(linear(grid.x - 1, draw(grid.y), 0));
    }
    // As many blocks at every stride, whatever the draws hit (modeled costs compare by stride):
    // simulated_blocks(input), never fewer than the edges.
    const std::uint64_t edges = grid.y > 1 ? 8 : (grid.z > 1 ? 5 : 2);
    const std::uint64_t wanted =
        std::min<std::uint64_t>(total, std::max(edges, simulated_blocks(input)));
    while (chosen.size() < wanted) {
        chosen.insert(draw(total));
    }
    std::vector<sim::Dim3> blocks;
    for (const std::uint64_t index : chosen) {
        blocks.push_back(block_at(grid, index));
    }
    return blocks;
}

std::uint64_t SimDevice::simulated_blocks(const InputSpec& input) const {
    return input.simulated_blocks.value_or(exercise_.launch.simulated_blocks);
}

void SimDevice::put_input(const InputSpec& input, InputWords words) {
    inputs_.insert_or_assign(input.id, std::move(words));
}

DeviceLaunch SimDevice::run(const LaunchCase& launch, const InputSpec& input,
                            const LaunchGeometry& geometry) {
    const LoadedKernel& kernel = *launch.kernel;
    const SimKernel& loaded = sim_kernel(kernel);
    const int stride = launch.stride;
    const auto words = inputs_.find(input.id);
    if (words == inputs_.end()) {
        throw std::runtime_error("input '" + input.id + "' was launched with before it was given");
    }
    const bool student =
        kernel.id == kStudentKernel && student_blocks_ == StudentBlocks::whole_grid;
    const auto key = std::make_pair(input.id, stride);
    const std::vector<sim::Dim3> sample = blocks_for(input, geometry, stride);
    // The student's kernel runs every block of the grid, as a GPU runs it: whichever block
    // computes an element, and whether any does, shows in its outputs. The exercise's kernels
    // are trusted: their sampled blocks say what belongs where they wrote.
    const std::vector<sim::Dim3> blocks = student ? std::vector<sim::Dim3>{} : sample;
    std::uint64_t budget = sim::LaunchOptions{}.instruction_budget;
    if (kernel.id == kStudentKernel) {
        const auto harness = harness_instructions_.find(key);
        budget = sim_student_budget(harness == harness_instructions_.end() ? 0 : harness->second,
                                    student ? geometry.grid.count() : sample.size());
    }
    DeviceLaunch ran;
    SimLaunchSettings settings;
    settings.blocks = blocks;
    settings.checked = sample;
    settings.budget = budget;
    // A block that never ends is found in a share of the grid's budget: a GPU's grade waits for
    // a launch at least a second, which a block of the probe passes long before (a probe block
    // is about 100,000 warp instructions; this is 400 times that).
    settings.block_budget = student ? budget / 8 : 0;
    settings.threads = student ? threads_ : 1;
    settings.clock_seed = seed_;
    // A GPU numbers its launches: the grade's first from the seed, one more for each.
    settings.grid_id = sim::ModeledDevice::grid_id(seed_) + launches_++;
    settings.poison_shared = input.poison_shared;
    settings.module_globals = &loaded.globals;
    settings.buffers = &buffers_;
    const sim::LaunchResult result =
        simulate(exercise_, loaded.module, loaded.entry, geometry, *words->second, stride, settings,
                 launch.outputs_read ? &ran.outputs : nullptr);
    ran.end = end_of(result);
    ran.counts = shared_counts(result.counts);
    ran.blocks_run = student ? 0 : result.blocks_run;
    if (ran.end != DeviceLaunch::End::completed) {
        ran.message = stop_message(result, budget, settings.block_budget);
        return ran;
    }
    if (kernel.id != kStudentKernel) {
        ran.block_instructions =
            result.instructions_run / std::max<std::uint64_t>(1, result.blocks_run);
        auto& instructions = harness_instructions_[key];
        instructions = std::max(instructions, ran.block_instructions);
    }
    modeled_cost_[{kernel.id, stride, input.id}] = sim::modeled_cost(result.counts);
    if (result.uninitialized_shared_read) {
        ran.notes.push_back(uninitialized_read_note(stride, *result.uninitialized_shared_read));
    }
    ran.races = race_lines(result);
    return ran;
}

void SimDevice::reload(const std::vector<LoadedKernel*>& kernels) {
    for (LoadedKernel* kernel : kernels) {
        static_cast<SimKernel*>(kernel)->globals.clear();
    }
}

TimingSamples SimDevice::time(const std::vector<LaunchCase>& launches, const InputSpec& input,
                              const LaunchGeometry& geometry) {
    (void)geometry;
    // The runs were counted as they ran; their modeled costs stand in for one round of times.
    TimingSamples samples;
    samples.modeled = true;
    samples.rounds = 1;
    for (const LaunchCase& c : launches) {
        const auto cost = modeled_cost_.find({c.kernel->id, c.stride, input.id});
        samples.per_round_ms.push_back(cost == modeled_cost_.end()
                                           ? std::vector<double>{}
                                           : std::vector<double>{cost->second});
        samples.launches_per_sample.push_back(1);
    }
    return samples;
}

std::unique_ptr<SimulatedKernel> SimulatedKernel::load(const Exercise& exercise, std::uint64_t seed,
                                                       const KernelSpec& spec,
                                                       const CompiledKernel& compiled,
                                                       std::string& problem) {
    std::unique_ptr<SimulatedKernel> simulated(new SimulatedKernel(exercise, seed));
    LoadResult loaded = simulated->device_.load(spec, compiled);
    if (!loaded.kernel) {
        problem = loaded.problem;
        return nullptr;
    }
    simulated->kernel_ = std::move(loaded.kernel);
    simulated->geometry_ = simulated->device_.geometry(*simulated->kernel_);
    return simulated;
}

const sim::Module& SimulatedKernel::module() const {
    return sim_kernel(*kernel_).module;
}

const std::string& SimulatedKernel::entry() const {
    return sim_kernel(*kernel_).entry;
}

DeviceLaunch SimulatedKernel::run(const InputSpec& input, InputWords words, int stride) {
    device_.put_input(input, std::move(words));
    return device_.run(LaunchCase{kernel_.get(), stride, false, false}, input, geometry_);
}

}  // namespace grader
