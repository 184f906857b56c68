#pragma once

// One launch of a probe kernel on the PTX simulator, as the simulator backend, `grader explain`
// and `grader __launch --sim` make it: the exercise's ABI, a tile, a stride, a small grid.

#include <cstdint>
#include <string>
#include <vector>

#include "exercise/exercise.hpp"
#include "sim/sim.hpp"

namespace grader {

// Two blocks: enough to see that a kernel indexes by block, few enough to simulate in
// milliseconds. The probe's blocks are identical, so counts scale with the number of blocks.
inline constexpr std::uint32_t kSimGridBlocks = 2;
// The student's kernel may issue this many times the reference's warp instructions at stride 1
// before it is taken to have hung; never less than kSimMinimumBudget.
inline constexpr std::uint64_t kSimBudgetFactor = 20;
inline constexpr std::uint64_t kSimMinimumBudget = 2'000'000;
inline constexpr std::uint32_t kSimOutputPoison = 0x7fc0dead;  // a quiet NaN: "never written"

struct SimLaunchShape {
    std::uint32_t grid = 0;
    std::uint32_t block = 0;
};

SimLaunchShape sim_launch_shape(const Exercise& exercise);

struct SimProbeRun {
    sim::LaunchResult launch;
    std::vector<float> outputs;  // every thread's output; empty unless the launch completed
};

// Launches `entry` with the exercise's parameters on a fresh global memory holding `tile`.
// blocks_to_run > 0 executes only the first that many blocks (the others keep the poison).
// Throws std::invalid_argument for the harness's faults (see sim::launch).
SimProbeRun run_sim_probe(const Exercise& exercise, const sim::Module& module,
                          const std::string& entry, const SimLaunchShape& shape,
                          const std::vector<float>& tile, int stride, std::uint64_t budget,
                          std::uint32_t blocks_to_run = 0);

}  // namespace grader
