#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "device/device.hpp"
#include "exercise/exercise.hpp"

namespace grader {

std::vector<std::vector<std::byte>> kernel_arguments(const Exercise& exercise,
                                                     std::uint64_t input_address,
                                                     std::uint64_t output_address,
                                                     std::uint64_t output_elements, int stride) {
    std::vector<std::vector<std::byte>> arguments;
    for (const KernelParameter& parameter : exercise.parameters) {
        std::uint64_t value = 0;
        switch (parameter.role) {
            case ParameterRole::input:
                value = input_address;
                break;
            case ParameterRole::output:
                value = output_address;
                break;
            case ParameterRole::count:
                value = output_elements;
                break;
            case ParameterRole::stride:
                value = static_cast<std::uint64_t>(static_cast<std::int64_t>(stride));
                break;
            case ParameterRole::constant:
                value = static_cast<std::uint64_t>(parameter.value);
                break;
        }
        // Little-endian: the low size_bytes bytes of value are the parameter.
        std::vector<std::byte> bytes(parameter.size_bytes);
        std::memcpy(bytes.data(), &value, std::min<std::size_t>(bytes.size(), sizeof value));
        arguments.push_back(std::move(bytes));
    }
    return arguments;
}

std::uint64_t output_elements(const Exercise& exercise, const LaunchGeometry& geometry) {
    const OutputLayout& layout = exercise.buffers.output;
    return layout.kind == OutputLayout::Kind::matrix ? layout.rows * layout.columns
                                                     : geometry.threads();
}

}  // namespace grader
