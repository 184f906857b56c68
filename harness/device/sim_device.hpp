#pragma once

// The PTX simulator as a device: kernels parsed from NVRTC's PTX, a few blocks of each launch run
// on the CPU (drawn from the whole grid by the grade's seed), shared-memory traffic counted as the
// hardware counts it, and modeled costs in place of times where the exercise allows.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "compile/compile.hpp"
#include "device/device.hpp"
#include "exercise/exercise.hpp"
#include "model/measurements.hpp"
#include "sim/sim.hpp"

namespace grader {

// The student's kernel may issue this many times the oracle's warp instructions for the same
// input and stride before it is taken to have hung; never less than kSimMinimumBudget.
inline constexpr std::uint64_t kSimBudgetFactor = 20;
inline constexpr std::uint64_t kSimMinimumBudget = 2'000'000;

// The input and output buffers a device keeps across launches, as a GPU grade keeps its device
// buffers: allocated once (tens of MB zero-filled and faulted in per launch were most of a Part 2
// grade's time), the input rewritten and the output poisoned before every launch.
struct SimBuffers {
    std::optional<sim::GlobalMemory> memory;
    std::uint64_t input = 0;
    std::uint64_t output = 0;
    std::size_t input_bytes = 0;
    std::size_t output_elements = 0;
};

class SimDevice final : public Device {
public:
    SimDevice(const Exercise& exercise, std::uint64_t seed);

    void describe(Environment& environment) const override;
    LoadResult load(const KernelSpec& spec, const CompiledKernel& compiled) override;
    LaunchGeometry geometry(const LoadedKernel& sizing_kernel) override;
    DeviceLaunch run(const LoadedKernel& kernel, const InputSpec& input,
                     const std::vector<float>& input_words, int stride,
                     const LaunchGeometry& geometry) override;
    bool times() const override { return exercise_.simulator.modeled_timing; }
    bool counts_as_it_runs() const override { return true; }
    // Each kernel's .global variables start again from their initialisers.
    void reload(const std::vector<LoadedKernel*>& kernels) override;
    TimingSamples time(const std::vector<TimedCase>& launches, const InputSpec& input,
                       const std::vector<float>& input_words,
                       const LaunchGeometry& geometry) override;

    // The blocks a launch with `input` at `stride` runs, simulated_blocks(input) of them but
    // never fewer than the edges: the grid's first and last blocks (for a 2-D grid its corners
    // and a block on each edge), then blocks drawn from the whole grid by the seed, per input and
    // stride; the same for every kernel, so the student's outputs compare with the oracle's.
    std::vector<sim::Dim3> blocks_for(const InputSpec& input, const LaunchGeometry& geometry,
                                      int stride) const;
    // The exercise's blocks per launch for `input`.
    std::uint64_t simulated_blocks(const InputSpec& input) const;

private:
    const Exercise& exercise_;
    std::uint64_t seed_;
    LaunchGeometry geometry_;
    // Warp instructions of the harness kernels' runs, by input and stride: the student's budget.
    std::map<std::pair<std::string, int>, std::uint64_t> harness_instructions_;
    SimBuffers buffers_;
    // Modeled cost of each kernel and stride, from its run with each input.
    std::map<std::tuple<std::string, int, std::string>, double> modeled_cost_;
};

// One launch of a kernel on the simulator with the exercise's ABI: what `grader explain` and the
// simulator device share. blocks empty: the whole grid. buffers: kept across launches where
// given, else made for this launch.
sim::LaunchResult simulate(const Exercise& exercise, const sim::Module& module,
                           const std::string& entry, const LaunchGeometry& geometry,
                           const std::vector<float>& input_words, int stride,
                           const std::vector<sim::Dim3>& blocks, std::uint64_t budget,
                           std::vector<float>* outputs, std::uint64_t clock_seed = 0,
                           bool poison_shared = false,
                           std::vector<std::byte>* module_globals = nullptr,
                           SimBuffers* buffers = nullptr);

}  // namespace grader
