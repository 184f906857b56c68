// The decoded engine against the reference engine it replaced (sim::Engine), on every kernel the
// fixtures hold: each fixture submission of both exercises (tests/fixtures/submissions, padding,
// sim_fidelity, hostile) and each corpus kernel, launched as a simulator grade launches a
// student's kernel (the whole grid, the checked sample, the budgets, the seed's poison and
// clocks, the module's variables kept between launches) with each input, at a conflicted stride.
// Whatever a kernel or a grade can observe must be the same: the outputs bit for bit, how the
// launch ended and its message, faults, races, unwritten shared reads, every count, the
// instructions run, the module's variables after it.

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compile/compile.hpp"
#include "compile/cubin.hpp"
#include "device/device.hpp"
#include "device/sim_device.hpp"
#include "exercise/exercise.hpp"
#include "fixture_expectations.hpp"
#include "measure/outputs.hpp"
#include "model/measurements.hpp"
#include "sim/sim.hpp"
#include "test_paths.hpp"

using namespace grader;
namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

struct Run {
    sim::LaunchResult result;
    std::vector<float> outputs;
    std::vector<std::byte> globals;
};

std::string location(const std::optional<sim::SourceLocation>& where) {
    return where ? sim::location_text(*where) + " " + where->instruction : "none";
}

// The first difference between two runs that anything could observe, or "".
std::string difference(const Run& a, const Run& b) {
    const sim::LaunchResult& x = a.result;
    const sim::LaunchResult& y = b.result;
    std::ostringstream why;
    const auto differs = [&](const char* what, const auto& p, const auto& q) {
        if (!(p == q) && why.str().empty())
            why << what << " differs";
    };
    differs("status", x.status, y.status);
    differs("message", x.message, y.message);
    differs("fault", x.fault.has_value(), y.fault.has_value());
    if (x.fault && y.fault) {
        differs("fault message", x.fault->message, y.fault->message);
        differs("fault address", x.fault->address, y.fault->address);
    }
    differs("unsupported", x.unsupported.has_value(), y.unsupported.has_value());
    differs("uninitialised read", x.uninitialized_shared_read.has_value(),
            y.uninitialized_shared_read.has_value());
    if (x.uninitialized_shared_read && y.uninitialized_shared_read) {
        differs("uninitialised read's word", x.uninitialized_shared_read->word,
                y.uninitialized_shared_read->word);
        differs("uninitialised read's barriers before",
                x.uninitialized_shared_read->barriers_before,
                y.uninitialized_shared_read->barriers_before);
        differs("uninitialised read written later", x.uninitialized_shared_read->written_later,
                y.uninitialized_shared_read->written_later);
        differs("uninitialised read's place", location(x.uninitialized_shared_read->where),
                location(y.uninitialized_shared_read->where));
        differs("uninitialised read's thread",
                sim::dim_text(x.uninitialized_shared_read->thread.thread) +
                    sim::dim_text(x.uninitialized_shared_read->thread.block),
                sim::dim_text(y.uninitialized_shared_read->thread.thread) +
                    sim::dim_text(y.uninitialized_shared_read->thread.block));
    }
    differs("race count", x.race_count, y.race_count);
    differs("races reported", x.races.size(), y.races.size());
    for (std::size_t k = 0; k < x.races.size() && k < y.races.size(); ++k)
        differs("race message", x.races[k].message, y.races[k].message);
    differs("last location", location(x.last_location), location(y.last_location));
    differs("block over budget", x.over_block_budget.has_value(), y.over_block_budget.has_value());
    differs("blocks run", x.blocks_run, y.blocks_run);
    differs("instructions run", x.instructions_run, y.instructions_run);
    differs("input written", x.wrote_input, y.wrote_input);
    const sim::LaunchCounts& c = x.counts;
    const sim::LaunchCounts& d = y.counts;
    differs("blocks executed", c.blocks_executed, d.blocks_executed);
    differs("warp instructions", c.warp_instructions, d.warp_instructions);
    differs("thread instructions", c.thread_instructions, d.thread_instructions);
    differs("shared load requests", c.shared_load_requests, d.shared_load_requests);
    differs("shared load wavefronts", c.shared_load_wavefronts, d.shared_load_wavefronts);
    differs("shared load ideal", c.shared_load_ideal_wavefronts, d.shared_load_ideal_wavefronts);
    differs("shared store requests", c.shared_store_requests, d.shared_store_requests);
    differs("shared store wavefronts", c.shared_store_wavefronts, d.shared_store_wavefronts);
    differs("shared store ideal", c.shared_store_ideal_wavefronts, d.shared_store_ideal_wavefronts);
    differs("global load requests", c.global_load_requests, d.global_load_requests);
    differs("global load sectors", c.global_load_sectors, d.global_load_sectors);
    differs("global store requests", c.global_store_requests, d.global_store_requests);
    differs("global store sectors", c.global_store_sectors, d.global_store_sectors);
    differs("printf calls", c.printf_calls, d.printf_calls);
    differs("shared accesses", c.shared_accesses.size(), d.shared_accesses.size());
    for (std::size_t k = 0; k < c.shared_accesses.size() && k < d.shared_accesses.size(); ++k) {
        const sim::SharedAccessStats& s = c.shared_accesses[k];
        const sim::SharedAccessStats& t = d.shared_accesses[k];
        differs("an access's instruction", s.instruction_index, t.instruction_index);
        differs("an access's requests", s.requests, t.requests);
        differs("an access's wavefronts", s.wavefronts, t.wavefronts);
        differs("an access's ideal wavefronts", s.ideal_wavefronts, t.ideal_wavefronts);
        differs("an access's worst degree", s.max_degree, t.max_degree);
        differs("an access's worst request", s.representative.has_value(),
                t.representative.has_value());
        if (s.representative && t.representative) {
            differs("the worst request's block", sim::dim_text(s.representative->block),
                    sim::dim_text(t.representative->block));
            differs("the worst request's warp", s.representative->warp, t.representative->warp);
        }
    }
    differs("outputs", a.outputs.size(), b.outputs.size());
    if (why.str().empty() && a.outputs.size() == b.outputs.size() &&
        std::memcmp(a.outputs.data(), b.outputs.data(), a.outputs.size() * sizeof(float)) != 0) {
        why << "outputs differ";
    }
    differs("the module's variables", a.globals, b.globals);
    return why.str();
}

struct Kernel {
    std::string name;  // for the messages: "submissions/correct"
    fs::path source;
    fs::path exercise;
};

// The fixture kernels of a group of tests/fixtures (submissions, padding, sim_fidelity,
// hostile): each folder's kernel source, which the launch below compiles as a grade does. A
// fixture whose grade fails compile_abi never reaches an engine: it is left out, so that this
// test does not run a compile bomb (hostile/macro_bomb) in NVRTC without the confined compile's
// deadline.
std::vector<Kernel> fixture_kernels(const char* group) {
    std::vector<Kernel> kernels;
    for (const fs::path& folder : testing::fixture_folders(group)) {
        const YAML::Node expected = YAML::LoadFile((folder / "expected.yaml").string());
        const auto failed = testing::strings(expected["failed_checks"]);
        if (std::find(failed.begin(), failed.end(), "compile_abi") != failed.end())
            continue;
        const fs::path exercise = testing::exercise_dir(expected);
        for (const char* file : {"probe.cu", "transpose.cu"}) {
            if (fs::is_regular_file(folder / file) && !fs::is_symlink(folder / file)) {
                kernels.push_back({std::string(group) + "/" + folder.filename().string(),
                                   folder / file, exercise});
            }
        }
    }
    return kernels;
}

// The corpus's kernels (tests/fixtures/corpus) of both exercises.
std::vector<Kernel> corpus_kernels() {
    std::vector<Kernel> kernels;
    const fs::path corpus = fs::path(GRADER_FIXTURES_DIR) / "corpus";
    for (const char* exercise : {"day15-bank-conflicts", "day15-padding"}) {
        std::vector<fs::path> folders;
        for (const auto& entry : fs::directory_iterator(corpus / exercise))
            folders.push_back(entry.path());
        std::sort(folders.begin(), folders.end());
        for (const fs::path& folder : folders) {
            for (const char* file : {"probe.cu", "transpose.cu"}) {
                if (fs::is_regular_file(folder / file)) {
                    kernels.push_back(
                        {std::string("corpus/") + exercise + "/" + folder.filename().string(),
                         folder / file, fs::path(GRADER_SOURCE_DIR) / "exercises" / exercise});
                }
            }
        }
    }
    return kernels;
}

// A kernel that never ends is stopped at the same instruction by both engines, or the test
// fails: a grid's budget of one and a half probe grids (16.7 M instructions; the longest fixture
// that ends, pointer_chase_missing_barrier, 19.1 M), a block's of twenty probe blocks.
constexpr std::uint64_t kBudget = 24'000'000;
constexpr std::uint64_t kBlockBudget = 2'000'000;
// A kernel that ran this long, or to its budget, is compared at its first input only.
constexpr std::uint64_t kLongKernel = 20'000'000;
// Part 2's grid (16,384 blocks, each independent of the others, run in waves of the modeled
// GPU's resident blocks) is compared on its first blocks in launch order, past the first wave
// (a block starts where another ended), and the checked ones wherever they are: a grid this
// large took 2 to 5 s a launch on each engine, a whole minute a kernel.
constexpr std::uint64_t kMostBlocks = 512;

std::vector<sim::Dim3> blocks_compared(const LaunchGeometry& geometry,
                                       const std::vector<sim::Dim3>& checked) {
    const Dim3Spec& grid = geometry.grid;
    if (grid.count() <= kMostBlocks)
        return {};  // the whole grid
    const auto linear = [&](const sim::Dim3& b) {
        return b.x + std::uint64_t{grid.x} * (b.y + std::uint64_t{grid.y} * b.z);
    };
    std::set<std::uint64_t> chosen;
    for (std::uint64_t k = 0; k < kMostBlocks; ++k)
        chosen.insert(k);
    for (const sim::Dim3& b : checked)
        chosen.insert(linear(b));
    std::vector<sim::Dim3> blocks;
    for (const std::uint64_t k : chosen) {
        blocks.push_back(sim::Dim3{static_cast<std::uint32_t>(k % grid.x),
                                   static_cast<std::uint32_t>(k / grid.x % grid.y),
                                   static_cast<std::uint32_t>(k / grid.x / grid.y)});
    }
    return blocks;
}

// Launches of the checked blocks alone whose blocks shared the first one's work (the decoded
// engine's speculation held), in the last compare_engines: a comparison where it never holds
// compares two runs of one path.
std::size_t g_alone_shared = 0;

// Launches each kernel on both engines and checks they agree; returns how many it launched.
std::size_t compare_engines(const std::vector<Kernel>& all) {
    g_alone_shared = 0;
    std::size_t launches = 0;
    std::size_t kernels = 0;
    for (const Kernel& kernel : all) {
        CAPTURE(kernel.name);
        const Exercise exercise = load_exercise(kernel.exercise);
        CompileRequest request;
        request.source = read_all(kernel.source);
        request.source_name = kernel.source.filename().string();
        request.kernel_name = exercise.kernel_name;
        request.arch = exercise.default_arch;
        request.options = exercise.compile_options;
        for (const auto& header : exercise.headers)
            request.headers.push_back({header.include_name, read_all(header.path)});
        const CompiledKernel compiled = compile_kernel(request);  // vetted, as a student's
        if (!compiled.outcome.ok)
            continue;  // nothing to launch: the grade stops at its compile
        sim::Module module;
        try {
            module = sim::parse_ptx(compiled.ptx);
        } catch (const sim::ParseError&) {
            continue;  // the grade stops where it loads the kernel
        }
        const auto entry = module.entry(compiled.outcome.lowered_name);
        std::vector<std::size_t> abi;
        for (const KernelParameter& parameter : exercise.parameters)
            abi.push_back(parameter.size_bytes);
        if (!entry || entry->param_sizes != abi)
            continue;  // the grade stops at the ABI check
        ++kernels;
        const auto began = std::chrono::steady_clock::now();
        constexpr std::uint64_t kSeed = 20261202;
        SimDevice device(exercise, kSeed);
        const LaunchGeometry geometry = device.geometry(LoadedKernel{});
        // A conflicted stride where the exercise has strides (the bank rule's costs, the
        // races and the clocks all move with it).
        const std::vector<int> strides =
            exercise.has_sweep() ? std::vector<int>{16} : std::vector<int>{0};
        const auto registers = cubin_registers(compiled.cubin, compiled.outcome.lowered_name);
        std::vector<std::byte> globals[5];
        std::uint64_t grid_id = sim::ModeledDevice::grid_id(kSeed);
        bool long_kernel = false;
        for (const InputSpec& input : exercise.inputs) {
            if (long_kernel)
                break;  // compared once: its other inputs take it down the same road
            const std::vector<float> words = make_input(input, exercise.buffers.input_words, kSeed);
            for (const int stride : strides) {
                CAPTURE(input.id);
                CAPTURE(stride);
                const std::vector<sim::Dim3> checked = device.blocks_for(input, geometry, stride);
                // The reference engine; the decoded one on the caller's thread; the decoded one
                // with its replays spread over three threads. Then the checked blocks alone, as
                // the exercise's kernels and `grader explain` run them: the reference engine,
                // and the decoded one, whose second and later checked blocks start from the
                // first one's recorded work where that is the same as their own run.
                Run runs[5];
                for (int k = 0; k < 5; ++k) {
                    SimLaunchSettings settings;
                    settings.blocks = k < 3 ? blocks_compared(geometry, checked) : checked;
                    settings.checked = checked;
                    settings.budget = kBudget;
                    settings.block_budget = kBlockBudget;
                    settings.clock_seed = kSeed;
                    settings.grid_id = grid_id;
                    settings.poison_shared = input.poison_shared;
                    settings.registers_per_thread =
                        static_cast<std::uint32_t>(std::max(registers.value_or(0), 0));
                    settings.module_globals = &globals[k];
                    settings.engine =
                        k == 0 || k == 3 ? sim::Engine::reference : sim::Engine::decoded;
                    settings.threads = k == 2 ? 3 : 1;
                    runs[k].result = simulate(exercise, module, compiled.outcome.lowered_name,
                                              geometry, words, stride, settings, &runs[k].outputs);
                    runs[k].globals = globals[k];
                }
                ++grid_id;
                ++launches;
                g_alone_shared += runs[4].result.blocks_sharing_work > 0 ? 1 : 0;
                for (int k : {1, 2, 4}) {
                    const std::string why = difference(runs[k == 4 ? 3 : 0], runs[k]);
                    const std::string how = k == 1   ? "one thread"
                                            : k == 2 ? "3 threads"
                                                     : "the checked blocks alone";
                    CHECK_MESSAGE(why.empty(), kernel.name << " with input " << input.id
                                                           << " at stride " << stride << ", " << how
                                                           << ": " << why);
                }
                const sim::LaunchResult& reference = runs[0].result;
                long_kernel = long_kernel ||
                              reference.status == sim::LaunchStatus::budget_exceeded ||
                              reference.instructions_run > kLongKernel;
            }
        }
        std::cout << kernel.name << ": the same in "
                  << std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count()
                  << " s" << (long_kernel ? " (long: its first input only)" : "") << std::endl;
    }
    std::cout << "figure: " << kernels << " kernels, " << launches
              << " launches compared between the engines; in " << g_alone_shared
              << " of them the checked blocks alone shared the first one's work" << std::endl;
    return kernels;
}

}  // namespace

// One test case a group, each its own ctest entry (tests/CMakeLists.txt's APART): the reference
// engine takes minutes over them all.
TEST_CASE("the engines agree on every submission fixture") {
    CHECK(compare_engines(fixture_kernels("submissions")) >= 10);
    // The probe's checked blocks share the loop (correct, the wrong strides...), the racing
    // ones do not: both ways are compared.
    CHECK(g_alone_shared >= 5);
}

TEST_SUITE("padding") {
    TEST_CASE("the engines agree on every Part 2 fixture") {
        CHECK(compare_engines(fixture_kernels("padding")) >= 5);
    }
}

TEST_SUITE("fidelity") {
    TEST_CASE("the engines agree on every fidelity fixture") {
        CHECK(compare_engines(fixture_kernels("sim_fidelity")) >= 30);
    }
}

TEST_SUITE("hostile") {
    TEST_CASE("the engines agree on every hostile fixture that launches") {
        CHECK(compare_engines(fixture_kernels("hostile")) >= 1);
    }
}

TEST_SUITE("corpus") {
    TEST_CASE("the engines agree on every corpus kernel") {
        CHECK(compare_engines(corpus_kernels()) >= 25);
    }
}
