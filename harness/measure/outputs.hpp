#pragma once

// The correctness runs' arithmetic, on the host: the inputs a grade fills its buffer with, and the
// comparison of a kernel's outputs with the oracle's. Nothing here knows what a kernel computes:
// the oracle (the exercise's trusted kernel, run the same way) says what each element must be.

#include <cstdint>
#include <string>
#include <vector>

#include "exercise/exercise.hpp"
#include "model/measurements.hpp"
#include "model/observations.hpp"

namespace grader {

// What every output element holds before a launch: a quiet NaN whose payload reads "never
// written". A kernel that leaves an element alone leaves this pattern.
inline constexpr std::uint32_t kOutputPoison = 0x7fc0dead;

// The words of an input buffer, filled by its rule; the random fills are drawn from the seed, so
// a grade can be repeated.
std::vector<float> make_input(const InputSpec& input, std::uint64_t words, std::uint64_t seed);

// Where the output's elements lie, for naming the first wrong one, and how much of the grid the
// oracle's outputs cover.
struct OutputPlacement {
    OutputLayout layout;
    std::uint64_t threads_per_block = 0;  // per-thread layout: element t is thread t of the grid
    // Where the oracle ran only some blocks of the grid (the simulator), how many, of how many:
    // its outputs hold poison elsewhere, which then says nothing of what belongs there. 0: the
    // oracle ran the whole grid.
    std::uint64_t oracle_blocks = 0;
    std::uint64_t grid_blocks = 0;
};

// Compares a kernel's outputs, from a run of the whole grid, with the oracle's, element by
// element: where the oracle wrote, the same value (0.0 equals -0.0); and every element the oracle
// writes, or may write where it ran only some blocks, written by some block of the kernel (an
// element left unwritten still holds the poison). Where the kernel wrote an element that the
// oracle's run did not reach, nothing is compared: the oracle's sample decides where values are
// checked, whichever of the kernel's blocks computed them. Both vectors have the same length.
OutputComparison compare_outputs(const std::string& input, const std::vector<float>& outputs,
                                 const std::vector<float>& expected,
                                 const OutputPlacement& placement);

}  // namespace grader
