#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "exercise/exercise.hpp"

namespace grader {

// Where a grade's inputs and its output lie in the one allocation each device makes for them, the
// same on a GPU and on the simulator, so that nothing a kernel can read of its pointers (their
// distance, their order, what lies past an input's end) tells one from the other: every input of
// the exercise in its order, then the output, each at a multiple of kBufferAlignment from the
// allocation's start (cuMemAlloc's own alignment), then, on a GPU, the timed launches' outputs
// (one each, so that each can be checked), the whole rounded up to cuMemAlloc's 2 MiB granules
// and zero-filled before the inputs are copied in. The inputs' and the output's places do not
// depend on how many launches are timed. Before issue 42 each device made a buffer per input and
// one per output, and CUDA's allocator placed them otherwise than the simulator modeled
// (buffer_order_sniffing failed on the H200 and the H100).
inline constexpr std::uint64_t kBufferAlignment = 256;
inline constexpr std::uint64_t kBufferGranule = 2ull << 20;
struct BufferLayout {
    std::vector<std::uint64_t> inputs;  // each input's offset, in the exercise's order
    std::uint64_t input_bytes = 0;      // each input's size
    std::uint64_t output = 0;           // the output's offset
    std::uint64_t output_stride = 0;    // from one output to the next (the timed launches')
    std::uint64_t timed_outputs = 0;    // how many timed launches' outputs follow the output
    std::uint64_t bytes = 0;            // the allocation's size
    // Timed launch i's output.
    std::uint64_t timed_output(std::uint64_t i) const { return output + (i + 1) * output_stride; }
};
BufferLayout buffer_layout(const Exercise& exercise, std::uint64_t output_elements,
                           std::uint64_t timed_outputs = 0);
// The place of `input` (by its id) in exercise.inputs; std::invalid_argument where it has none.
std::size_t input_index(const Exercise& exercise, const InputSpec& input);

}  // namespace grader
