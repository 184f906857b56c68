#include "device/buffer_layout.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace grader {

BufferLayout buffer_layout(const Exercise& exercise, std::uint64_t output_elements,
                           std::uint64_t timed_outputs) {
    const auto aligned = [](std::uint64_t bytes, std::uint64_t unit) {
        return (bytes + unit - 1) / unit * unit;
    };
    BufferLayout layout;
    layout.input_bytes = exercise.buffers.input_words * sizeof(float);
    std::uint64_t next = 0;
    for (std::size_t i = 0; i < exercise.inputs.size(); ++i) {
        layout.inputs.push_back(next);
        next += aligned(layout.input_bytes, kBufferAlignment);
    }
    layout.output = next;
    layout.output_stride = aligned(output_elements * sizeof(float), kBufferAlignment);
    layout.timed_outputs = timed_outputs;
    const std::uint64_t end = layout.output + (1 + timed_outputs) * layout.output_stride;
    layout.bytes = aligned(std::max<std::uint64_t>(end, 1), kBufferGranule);
    return layout;
}

std::size_t input_index(const Exercise& exercise, const InputSpec& input) {
    for (std::size_t i = 0; i < exercise.inputs.size(); ++i) {
        if (exercise.inputs[i].id == input.id) {
            return i;
        }
    }
    throw std::invalid_argument("input '" + input.id + "' is not one of the exercise's");
}

}  // namespace grader
