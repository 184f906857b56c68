#pragma once

// The PTX simulator as a device: kernels parsed from NVRTC's PTX, a few blocks of each launch run
// on the CPU (drawn from the whole grid by the grade's seed), shared-memory traffic counted as the
// hardware counts it, and modeled costs in place of times where the exercise allows.

#include <map>

#include "device/device.hpp"
#include "sim/sim.hpp"

namespace grader {

// The student's kernel may issue this many times the oracle's warp instructions for the same
// input and stride before it is taken to have hung; never less than kSimMinimumBudget.
inline constexpr std::uint64_t kSimBudgetFactor = 20;
inline constexpr std::uint64_t kSimMinimumBudget = 2'000'000;

class SimDevice final : public Device {
public:
    SimDevice(const Exercise& exercise, std::uint64_t seed);

    std::string arch() const override { return exercise_.default_arch; }
    void describe(Environment& environment) const override;
    LoadResult load(const KernelSpec& spec, const CompiledKernel& compiled) override;
    LaunchGeometry geometry(const LoadedKernel& sizing_kernel) override;
    DeviceLaunch run(const LoadedKernel& kernel, const InputSpec& input,
                     const std::vector<float>& input_words, int stride,
                     const LaunchGeometry& geometry) override;
    bool times() const override { return exercise_.simulator.modeled_timing; }
    // Each kernel's .global variables start again from their initialisers.
    void reload(const std::vector<LoadedKernel*>& kernels) override;
    TimingSamples time(const std::vector<TimedCase>& launches, const InputSpec& input,
                       const std::vector<float>& input_words,
                       const LaunchGeometry& geometry) override;

    // The blocks a launch with `input` at `stride` runs: the grid's first and last blocks (for a
    // 2-D grid its corners and a block on each edge) and simulated_draws(input) more drawn from
    // the grid by the seed, per input and stride; the same for every kernel, so the student's
    // outputs compare with the oracle's.
    std::vector<sim::Dim3> blocks_for(const InputSpec& input, const LaunchGeometry& geometry,
                                      int stride) const;
    // How many blocks blocks_for draws from the whole grid, beyond the edges.
    std::uint64_t simulated_draws(const InputSpec& input) const;

private:
    const Exercise& exercise_;
    std::uint64_t seed_;
    LaunchGeometry geometry_;
    // Warp instructions of the harness kernels' runs, by input and stride: the student's budget.
    std::map<std::pair<std::string, int>, std::uint64_t> harness_instructions_;
    // Modeled cost of each kernel and stride, from its run with each input.
    std::map<std::tuple<std::string, int, std::string>, double> modeled_cost_;
};

// One launch of a kernel on the simulator with the exercise's ABI: what `grader explain` and the
// simulator device share. blocks empty: the whole grid.
sim::LaunchResult simulate(const Exercise& exercise, const sim::Module& module,
                           const std::string& entry, const LaunchGeometry& geometry,
                           const std::vector<float>& input_words, int stride,
                           const std::vector<sim::Dim3>& blocks, std::uint64_t budget,
                           std::vector<float>* outputs, std::uint64_t clock_seed = 0,
                           bool poison_shared = false,
                           std::vector<std::byte>* module_globals = nullptr);

}  // namespace grader
