#pragma once

// The PTX simulator as a device: kernels parsed from NVRTC's PTX, a few blocks of each launch run
// on the CPU (drawn from the whole grid by the grade's seed), shared-memory traffic counted as the
// hardware counts it, and modeled costs in place of times where the exercise allows.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "compile/compile.hpp"
#include "device/buffer_layout.hpp"
#include "device/device.hpp"
#include "device/sim_budget.hpp"
#include "exercise/exercise.hpp"
#include "model/measurements.hpp"
#include "model/observations.hpp"
#include "sim/sim.hpp"

namespace grader {

// The grade's buffers as the simulator keeps them across launches, as a GPU grade keeps its device
// allocation: one allocation laid out as buffer_layout() says (tens of MB zero-filled and faulted
// in per launch were most of a Part 2 grade's time), each input written into it once, as the GPU
// path copies it once (a kernel that writes into its input finds what it wrote at the next
// launch, there as here), the output poisoned before every launch.
struct SimBuffers {
    std::optional<sim::GlobalMemory> memory;
    BufferLayout layout;
    std::uint64_t base = 0;  // the allocation's address
    std::uint64_t output_elements = 0;
    std::vector<const float*> written;  // per input: the words written into its place, or null
};

class SimDevice final : public Device {
public:
    // Which blocks the student's kernel runs: the whole grid (a grade on the simulator), or the
    // sample of blocks_for alone (the simulator's witness of counts and races beside a GPU's
    // grade, which needs no outputs).
    enum class StudentBlocks { whole_grid, sample };
    // The student's whole grid runs on up to `threads` threads (sim::LaunchOptions::threads).
    SimDevice(const Exercise& exercise, std::uint64_t seed,
              StudentBlocks student_blocks = StudentBlocks::whole_grid, unsigned threads = 1);

    // The blocks a launch with `input` at `stride` looks at closely, simulated_blocks(input) of
    // them but never fewer than the edges: the grid's first and last blocks (for a 2-D grid its
    // corners and a block on each edge), then blocks drawn from the whole grid by the seed, per
    // input and stride. The exercise's kernels run these blocks alone; the student's kernel runs
    // every block of the grid, these checked (counts, races, unwritten shared reads), and its
    // outputs are compared with the oracle's wherever the oracle's run of them wrote.
    std::vector<sim::Dim3> blocks_for(const InputSpec& input, const LaunchGeometry& geometry,
                                      int stride) const;
    // The exercise's blocks per launch for `input`.
    std::uint64_t simulated_blocks(const InputSpec& input) const;

private:
    DeviceCapabilities do_capabilities() const override {
        return {false, exercise_.simulator.modeled_timing, true};
    }
    void do_describe(Environment& environment) override;
    LoadResult do_load(const KernelSpec& spec, const CompiledKernel& compiled) override;
    LaunchGeometry do_geometry(const LoadedKernel&) override;
    void do_put_input(const InputSpec& input, InputWords words) override;
    DeviceLaunch do_run(const LaunchCase& launch, const InputSpec& input,
                        const LaunchGeometry& geometry) override;
    // Each kernel's .global variables start again from their initialisers.
    void do_reload(const std::vector<LoadedKernel*>& kernels) override;
    // The runs' modeled costs, where the exercise lets them stand in for times.
    TimingSamples do_time(const std::vector<LaunchCase>& launches, const InputSpec& input,
                          const LaunchGeometry&) override;

    const Exercise& exercise_;
    std::uint64_t seed_;
    StudentBlocks student_blocks_;
    unsigned threads_ = 1;
    LaunchGeometry geometry_;
    // Warp instructions per block of the harness kernels' runs, by input and stride: the
    // student's budget.
    std::map<std::pair<std::string, int>, std::uint64_t> harness_instructions_;
    SimBuffers buffers_;
    std::uint64_t launches_ = 0;                // this device's, for %gridid
    std::map<std::string, InputWords> inputs_;  // by input id
    // Each kernel's .global variables between launches, as a loaded module keeps them on a GPU.
    std::map<const LoadedKernel*, std::vector<std::byte>> globals_;
    // Modeled cost of each kernel and stride, from its run with each input.
    std::map<std::tuple<std::string, int, std::string>, double> modeled_cost_;
};

// One kernel alone on the simulator, outside any grade's device, from its PTX, with the launch the
// simulator gives a grade: `grader explain` runs it lane by lane, and a grade on a GPU runs the
// student's as the simulator's witness of the same source. The one way either is made.
class SimulatedKernel {
public:
    // Null where the simulator cannot read the kernel's PTX, with `problem` saying why.
    static std::unique_ptr<SimulatedKernel> load(const Exercise& exercise, std::uint64_t seed,
                                                 const KernelSpec& spec,
                                                 const CompiledKernel& compiled,
                                                 std::string& problem);

    const LaunchGeometry& geometry() const { return geometry_; }
    const sim::Module& module() const;
    const std::string& entry() const;
    // The blocks a grade's launch with `input` at `stride` runs (SimDevice::blocks_for).
    std::vector<sim::Dim3> blocks_for(const InputSpec& input, int stride) const {
        return device_.blocks_for(input, geometry_, stride);
    }
    // A launch as a grade's simulator runs it, on the blocks of blocks_for alone, the student's
    // kernel too (StudentBlocks::sample: a witness and an explanation need no outputs).
    DeviceLaunch run(const InputSpec& input, InputWords words, int stride);

private:
    SimulatedKernel(const Exercise& exercise, std::uint64_t seed)
        : device_(exercise, seed, SimDevice::StudentBlocks::sample) {}
    SimDevice device_;
    std::unique_ptr<LoadedKernel> kernel_;
    LaunchGeometry geometry_;
};

// How simulate() runs one launch, beyond the kernel, its input and its stride.
struct SimLaunchSettings {
    std::vector<sim::Dim3> blocks;   // the blocks to run; empty: the whole grid
    std::vector<sim::Dim3> checked;  // those the result reports on; empty: every block run
    std::uint64_t budget = sim::LaunchOptions{}.instruction_budget;
    std::uint64_t block_budget = 0;  // sim::LaunchOptions::block_instruction_budget
    std::uint64_t clock_seed = 0;    // the grade's seed (sim::LaunchOptions::clock_seed)
    std::uint64_t grid_id = 0;       // %gridid; 0: the seed's first
    bool poison_shared = false;
    std::uint32_t registers_per_thread =
        0;                        // ptxas's count (LoadedKernel::registers); 0: not known
    std::size_t input_index = 0;  // the launch's input: its place in the exercise's inputs
    std::vector<std::byte>* module_globals = nullptr;  // kept across launches where given
    SimBuffers* buffers = nullptr;  // kept across launches where given, else made for this one
    sim::Engine engine = sim::Engine::decoded;  // the reference engine, for tests comparing the two
    unsigned threads = 1;                       // sim::LaunchOptions::threads
};

// One launch of a kernel on the simulator with the exercise's ABI, on the GPU the simulator models
// for the exercise's architecture: what `grader explain` and the simulator device share.
// input_words are the words of input settings.input_index, written into its place the first time.
// outputs: where given, the output buffer is poisoned before the launch and copied there after it;
// else nobody reads it.
sim::LaunchResult simulate(const Exercise& exercise, const sim::Module& module,
                           const std::string& entry, const LaunchGeometry& geometry,
                           const std::vector<float>& input_words, int stride,
                           const SimLaunchSettings& settings, std::vector<float>* outputs);

// Makes the grade's allocation in `buffers` where it has none for `elements` output elements yet,
// and writes input `index`'s words into their place where other words (or none) are there.
void place_input(SimBuffers& buffers, const Exercise& exercise, std::uint64_t elements,
                 std::uint64_t seed, std::size_t index, const std::vector<float>& words);

// One source line's shared accesses as the simulator counted them, as grades and `grader
// explain` keep them.
SharedLineCounts line_counts_of(const sim::SharedLineStats& stats);

}  // namespace grader
