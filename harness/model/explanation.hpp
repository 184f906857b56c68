#pragma once

// What `grader explain` found, as a plain value: for each stride, every shared-memory line of the
// kernel with its counted degree and, for the busiest access, one warp's lanes with their word,
// bank and bank-mates. A writer in report/ turns it into text.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/measurements.hpp"

namespace grader {

struct ExplainedLane {
    bool active = false;
    std::uint64_t word = 0;
    std::uint32_t bank = 0;
    std::uint32_t bank_mates = 0;  // bit mask of the other active lanes in the same bank
};

struct ExplainedWarp {
    std::uint32_t block = 0;  // linear block index
    std::uint32_t warp = 0;
    std::uint32_t wavefronts = 0;
    std::uint32_t ideal_wavefronts = 0;  // the fewest the access's width allows
    std::uint32_t bytes_per_lane = 4;    // each lane's word is the first of bytes_per_lane / 4
    std::vector<ExplainedLane> lanes;    // 32
    std::string banks;                   // "16 lanes in each of 2 banks: 16-way"
    std::string rule;                    // the width's rule, in one sentence
};

struct ExplainedLine {
    SharedLineCounts counts;  // as a grade keeps them
    double max_degree = 0;    // the worst of one request
    std::optional<ExplainedWarp> representative;
    // The hardware's own count for the same source line, where counters were permitted.
    std::optional<std::uint64_t> hardware_instructions;
    std::optional<std::uint64_t> hardware_wavefronts;
};

struct ExplainedStride {
    int stride = 0;
    // Shared loads' wavefronts over the fewest their widths allow, over every load of the launch.
    std::optional<double> load_degree;
    std::string stopped;  // why the launch did not complete; empty when it did
    std::string note;     // the first shared word read before it was written
    std::vector<ExplainedLine> lines;
};

struct Explanation {
    std::string kernel_name;
    std::string source_name;
    std::string arch;
    std::uint64_t grid_blocks = 0;
    std::uint64_t block_threads = 0;
    unsigned banks = 32;
    std::string problem;  // why nothing was explained: the compile log, the ABI, a missing file
    std::vector<ExplainedStride> strides;
    std::string hardware_note;  // where the hardware's counts came from, or why there are none
    std::uint64_t warp_instructions = 0;
    std::uint64_t thread_instructions = 0;
    double simulated_seconds = 0.0;
};

}  // namespace grader
