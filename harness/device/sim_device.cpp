#include "device/sim_device.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "common/kernel_ids.hpp"
#include "compile/cubin.hpp"
#include "device/buffer_layout.hpp"
#include "device/sim_budget.hpp"
#include "measure/outputs.hpp"
#include "model/bank_model.hpp"
#include "model/finding.hpp"

namespace grader {
namespace {

class SimKernel final : public LoadedKernel {
public:
    sim::Module module;
    std::string entry;
};

const SimKernel& sim_kernel(const LoadedKernel& kernel) {
    return static_cast<const SimKernel&>(kernel);
}

FindingPlace place_of(const sim::SourceLocation& where) {
    FindingPlace place;
    place.file = where.file;
    place.line = where.line;
    place.column = where.column;
    place.ptx_line = where.line > 0 ? 0 : where.ptx_line;
    return place;
}

FindingThread thread_of(const sim::ThreadId& id) {
    FindingThread thread;
    thread.block = {id.block.x, id.block.y, id.block.z};
    thread.thread = {id.thread.x, id.thread.y, id.thread.z};
    thread.warp = id.warp;
    thread.lane = id.lane;
    thread.any_warp = id.warp == sim::SharedRace::kAnyOtherWarp;
    return thread;
}

SharedWord word_of(std::uint64_t word, const std::string& variable,
                   std::uint64_t word_in_variable) {
    // The PTX's name, which a student's asm can make as long as it likes: bounded as the
    // simulator bounds a .loc's file.
    return SharedWord{word,
                      sim::shared_variable_name(variable).substr(0, sim::kMaxLocationFileBytes),
                      word_in_variable};
}

FindingKind race_kind(sim::SharedRace::Kind kind) {
    switch (kind) {
        case sim::SharedRace::Kind::read_after_write:
            return FindingKind::race_read_after_write;
        case sim::SharedRace::Kind::write_after_read:
            return FindingKind::race_write_after_read;
        case sim::SharedRace::Kind::write_after_write:
            return FindingKind::race_write_after_write;
        case sim::SharedRace::Kind::same_value_write:
            return FindingKind::race_same_value;
        case sim::SharedRace::Kind::one_store_two_values:
            return FindingKind::race_one_store_two_values;
    }
    return FindingKind::race_write_after_write;
}

// The shared store of the launch nearest before `read` in its source file (the last one of the
// file where none comes before it); nullopt where the launch stored nothing there.
std::optional<sim::SourceLocation> fill_before(const sim::LaunchCounts& counts,
                                               const sim::SourceLocation& read) {
    std::optional<sim::SourceLocation> before;
    std::optional<sim::SourceLocation> any;
    for (const sim::SharedAccessStats& access : counts.shared_accesses) {
        if (!access.store || access.where.file != read.file || access.where.line <= 0) {
            continue;
        }
        const auto at = std::make_pair(access.where.line, access.where.column);
        if (at < std::make_pair(read.line, read.column) &&
            (!before || at > std::make_pair(before->line, before->column))) {
            before = access.where;
        }
        if (!any || at > std::make_pair(any->line, any->column)) {
            any = access.where;
        }
    }
    return before ? before : any;
}

// What the launch saw of shared memory, as findings: its first races (each pair of lines once),
// how many accesses raced in all where that is more, and the first word read before any thread
// of its block wrote it. Kept whether or not the launch ran to its end: a fault can be the
// consequence of a read that raced.
std::vector<Finding> shared_findings(const sim::LaunchResult& result, int stride) {
    constexpr std::size_t kShown = 3;
    std::vector<Finding> findings;
    std::size_t shown = 0;
    for (const sim::SharedRace& race : result.races) {
        Finding finding;
        finding.kind = race_kind(race.kind);
        if (finding.kind != FindingKind::race_same_value && shown++ >= kShown) {
            continue;
        }
        finding.strides = {stride};
        finding.lines = {place_of(race.where)};
        if (race.kind != sim::SharedRace::Kind::one_store_two_values) {
            finding.lines.push_back(place_of(race.earlier));
        }
        finding.threads = {thread_of(race.thread), thread_of(race.other)};
        finding.word = word_of(race.word, race.variable, race.word_in_variable);
        findings.push_back(std::move(finding));
    }
    if (result.race_count > shown) {
        Finding counted;
        counted.kind = FindingKind::races_counted;
        counted.strides = {stride};
        counted.count = result.race_count;
        findings.push_back(std::move(counted));
    }
    if (const auto& read = result.uninitialized_shared_read) {
        Finding finding;
        finding.kind = FindingKind::unwritten_shared_read;
        finding.strides = {stride};
        finding.lines = {place_of(read->where)};
        finding.threads = {thread_of(read->thread)};
        finding.word = word_of(read->word, read->variable, read->word_in_variable);
        finding.count = read->barriers_before;
        // The launch stopped (a fault) in the read's own block before it ended: whether a
        // thread would have written the word after the read, it could not show. A read racing a
        // fill is why the simulator faults where a GPU reads stale words (a pointer chase that
        // follows an unwritten link), so the fill is named as when the write was seen.
        const bool stopped_in_its_block =
            result.fault && result.fault->thread.block == read->thread.block;
        if (read->barriers_before == 0 && (read->written_later || stopped_in_its_block)) {
            // No barrier yet, and a thread of the block wrote the word afterwards: the store
            // nearest before the read in the source is the fill the read did not wait for. A
            // word the block never wrote (a spare array read for what it holds) is no fill's.
            if (const auto fill = fill_before(result.counts, read->where)) {
                finding.lines.push_back(place_of(*fill));
            }
        }
        findings.push_back(std::move(finding));
    }
    return findings;
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
            if (result.loops_after && result.over_block_budget) {
                return "block " + sim::dim_text(*result.over_block_budget) +
                       " can never finish: after " + std::to_string(*result.loops_after) +
                       " warp instructions it came back to a state it had been in, reading "
                       "nothing from outside the block in between, so the simulator stopped it "
                       "before its instruction budget of " +
                       std::to_string(block_budget) + " warp instructions for one block" +
                       (result.last_location ? ", at " + sim::location_text(*result.last_location)
                                             : "");
            }
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
    if (stats.representative && stats.representative->bytes_per_lane == 4) {
        // The lanes' words of the line's worst request: a tile narrower than a warp shows here.
        std::array<std::uint64_t, 32> words{};
        std::uint32_t active = 0;
        for (std::size_t lane = 0; lane < 32; ++lane) {
            const sim::LaneAccess& access = stats.representative->lanes[lane];
            words[lane] = access.word;
            active |= access.active ? 1u << lane : 0u;
        }
        const WarpRowSpan span = warp_row_span(words, active);
        line.lanes_per_row = span.lanes_per_row;
        line.row_pitch = span.row_pitch;
    }
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
    place_input(b, exercise, elements, clock_seed, settings.input_index, input_words);
    sim::GlobalMemory& memory = *b.memory;
    const std::uint64_t input = b.base + b.layout.inputs.at(settings.input_index);
    const std::size_t input_bytes = input_words.size() * sizeof(float);
    const std::uint64_t output = b.base + b.layout.output;
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
    options.registers_per_thread = settings.registers_per_thread;
    options.engine = settings.engine;
    options.threads = settings.threads;
    const auto arguments = kernel_arguments(exercise, input, output, elements, stride);
    sim::LaunchResult result =
        sim::launch(module, entry, sim::Dim3{geometry.grid.x, geometry.grid.y, geometry.grid.z},
                    sim::Dim3{geometry.block.x, geometry.block.y, geometry.block.z}, arguments,
                    memory, options);
    if (outputs != nullptr && result.status == sim::LaunchStatus::completed) {
        // Copied once, not zero-filled first (64 MiB for a Part 2 launch).
        const auto* words =
            reinterpret_cast<const float*>(memory.find(output, elements * sizeof(float)));
        outputs->assign(words, words + elements);
    }
    memory.release_from(mark);
    return result;
}

void place_input(SimBuffers& buffers, const Exercise& exercise, std::uint64_t elements,
                 std::uint64_t seed, std::size_t index, const std::vector<float>& words) {
    if (!buffers.memory || buffers.output_elements != elements) {
        buffers.memory.emplace(seed);
        buffers.layout = buffer_layout(exercise, elements);
        buffers.base =
            buffers.memory->allocate(buffers.layout.bytes, sim::GlobalMemory::Pages::huge);
        buffers.output_elements = elements;
        buffers.written.assign(exercise.inputs.size(), nullptr);
    }
    if (index >= buffers.written.size() ||
        words.size() * sizeof(float) > buffers.layout.input_bytes) {
        throw std::invalid_argument("input " + std::to_string(index) + " of " +
                                    std::to_string(words.size()) +
                                    " words does not fit the exercise's buffers");
    }
    if (buffers.written[index] != words.data()) {
        buffers.memory->write(buffers.base + buffers.layout.inputs[index], words.data(),
                              words.size() * sizeof(float));
        buffers.written[index] = words.data();
    }
}

SimDevice::SimDevice(const Exercise& exercise, std::uint64_t seed, StudentBlocks student_blocks,
                     unsigned threads)
    : exercise_(exercise), seed_(seed), student_blocks_(student_blocks), threads_(threads) {}

void SimDevice::do_describe(Environment& environment) {
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

LoadResult SimDevice::do_load(const KernelSpec& spec, const CompiledKernel& compiled) {
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
    // ptxas's count, from the cubin NVRTC made beside the PTX for the modeled GPU: with the
    // block's threads and shared memory it decides how many blocks an SM holds at once.
    kernel->registers = cubin_registers(compiled.cubin, kernel->entry).value_or(-1);
    globals_.erase(kernel.get());  // a kernel unloaded before may have had this address
    result.kernel = std::move(kernel);
    return result;
}

LaunchGeometry SimDevice::do_geometry(const LoadedKernel&) {
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

void SimDevice::do_put_input(const InputSpec& input, InputWords words) {
    inputs_.insert_or_assign(input.id, std::move(words));
}

DeviceLaunch SimDevice::do_run(const LaunchCase& launch, const InputSpec& input,
                               const LaunchGeometry& geometry) {
    const LoadedKernel& kernel = *launch.kernel;
    const SimKernel& loaded = sim_kernel(kernel);
    const int stride = launch.stride;
    const InputWords& words = inputs_.at(input.id);  // given before (Device::run)
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
    settings.module_globals = &globals_[&kernel];
    settings.registers_per_thread = static_cast<std::uint32_t>(std::max(kernel.registers, 0));
    settings.buffers = &buffers_;
    settings.input_index = input_index(exercise_, input);
    // Every input given so far in its place, as the GPU path copies them all before its first
    // launch: what lies past one input's end is the next one's words there as here.
    const std::uint64_t elements = output_elements(exercise_, geometry);
    for (std::size_t i = 0; i < exercise_.inputs.size(); ++i) {
        const auto given = inputs_.find(exercise_.inputs[i].id);
        if (given != inputs_.end()) {
            place_input(buffers_, exercise_, elements, seed_, i, *given->second);
        }
    }
    const sim::LaunchResult result =
        simulate(exercise_, loaded.module, loaded.entry, geometry, *words, stride, settings,
                 launch.outputs_read ? &ran.outputs : nullptr);
    ran.end = end_of(result);
    ran.counts = shared_counts(result.counts);
    ran.blocks_run = student ? 0 : result.blocks_run;
    ran.findings = shared_findings(result, stride);
    if (ran.end != DeviceLaunch::End::completed) {
        ran.message = stop_message(result, budget, settings.block_budget);
        // Where it stopped, typed: the fault's place and kind, or where the budget ran out.
        const std::optional<sim::SourceLocation> at =
            result.fault         ? std::optional<sim::SourceLocation>(result.fault->where)
            : result.unsupported ? std::optional<sim::SourceLocation>(result.unsupported->where)
                                 : result.last_location;
        if (at) {
            Finding stopped;
            stopped.kind = FindingKind::kernel_stopped;
            stopped.strides = {stride};
            stopped.lines = {place_of(*at)};
            stopped.names = {result.fault         ? result.fault->kind
                             : result.unsupported ? std::string("unsupported")
                                                  : std::string("timeout")};
            ran.findings.push_back(std::move(stopped));
        }
        return ran;
    }
    if (kernel.id != kStudentKernel) {
        ran.block_instructions =
            result.instructions_run / std::max<std::uint64_t>(1, result.blocks_run);
        auto& instructions = harness_instructions_[key];
        instructions = std::max(instructions, ran.block_instructions);
    }
    modeled_cost_[{kernel.id, stride, input.id}] = sim::modeled_cost(result.counts);
    return ran;
}

void SimDevice::do_reload(const std::vector<LoadedKernel*>& kernels) {
    for (const LoadedKernel* kernel : kernels) {
        globals_.erase(kernel);
    }
}

TimingSamples SimDevice::do_time(const std::vector<LaunchCase>& launches, const InputSpec& input,
                                 const LaunchGeometry&) {
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
