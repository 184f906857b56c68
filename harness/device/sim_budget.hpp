#pragma once

// The student's instruction budget on the simulator, which stops a kernel that does not end the
// same on every machine, and the slowest simulation the wall clock allows for behind it: what the
// simulator device stops a launch at (sim_device.hpp) and what a grade's run stage may take there
// (grade/run_slots.hpp).

#include <algorithm>
#include <cstdint>

namespace grader {

// The student's kernel may issue this many times the oracle's warp instructions per block for the
// same input and stride, over the grid's blocks, before it is taken to have hung; never less than
// kSimMinimumBudget.
inline constexpr std::uint64_t kSimBudgetFactor = 20;
inline constexpr std::uint64_t kSimMinimumBudget = 2'000'000;

// A block of the student's may always issue this many warp instructions (a block of Part 1's
// probe issues about 100,000): where the exercise's block is small (Part 2's transpose, about 470),
// 20 times it is not a hang but a kernel that does more, such as a loop of 1,000 broadcast reads
// (tests/fixtures/padding/diluted_column_read), which a GPU runs in microseconds.
inline constexpr std::uint64_t kSimMinimumBlockBudget = 100'000;

// The student's instruction budget for a launch of `blocks` blocks, where the exercise's kernels
// issued `per_block` warp instructions a block for the same input and stride.
inline std::uint64_t sim_student_budget(std::uint64_t per_block, std::uint64_t blocks) {
    return std::max<std::uint64_t>(
        std::max(kSimBudgetFactor * per_block, kSimMinimumBlockBudget) * blocks, kSimMinimumBudget);
}

// The slowest simulation the grader allows for: a quarter of the 4.3 to 5.7 million warp
// instructions a second the simulator ran on one core (docs/measurements/2026-12-02-sim-bench.txt).
// On the simulator the instruction budget stops a student's kernel, the same on every machine;
// the wall clock only backs it up, at this rate (a launch within its budget ends within the
// stage's limit on any machine at least this fast).
inline constexpr double kSimSlowestWarpInstructionsPerSecond = 1e6;

}  // namespace grader
