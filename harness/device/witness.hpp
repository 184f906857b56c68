#pragma once

// The simulator's witness of the student's kernel beside a grade on a GPU: the same source run on
// the simulator, on the fewest blocks a launch runs there (SimDevice::blocks_for: the first and
// the last of a 1-D grid, 8 of a 2-D one). Its count stands in where the GPU's counters cannot
// count, and is compared with theirs where they can; its races are what no output check on a GPU
// can see (a missing barrier whose output comes out right by the warps' timing).
// tests/test_pipeline.cpp grades through a fake GPU beside the real witness.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compile/compile.hpp"
#include "device/device.hpp"
#include "exercise/exercise.hpp"
#include "model/finding.hpp"
#include "model/measurements.hpp"

namespace grader {

struct SimulatorWitness {
    std::map<int, SharedAccessCounts> counts;  // by stride
    // Shared-memory races and unwritten reads, by stride, each marked as the witness's.
    std::map<int, std::vector<Finding>> findings;
};

// The student's kernel at each of `strides` with the exercise's first input (`words`); nothing
// where the simulator cannot read its PTX, and nothing of a stride where its launch did not
// complete.
SimulatorWitness witness_student(const Exercise& exercise, std::uint64_t seed,
                                 const CompiledKernel& compiled, const InputWords& words,
                                 const std::vector<int>& strides);

// One line for the report where the GPU's count of a launch over `grid_blocks` blocks and the
// witness's differ, saying why (ptxas merging loads, ...); empty where they agree at the grid's
// scale.
std::string count_difference_note(const SharedAccessCounts& hardware, std::uint64_t grid_blocks,
                                  const SharedAccessCounts& witness);

}  // namespace grader
