#pragma once

// Where a grade runs, as a type: the GPU, or the PTX simulator. Resolved in one place, with one
// probe (the driver's answer for the GPU the grade would use), by `grader grade`'s worker and by
// `grader batch` alike, so that a class is graded where a grade alone would be.

#include <optional>
#include <string>
#include <string_view>

#include "cuda/resources.hpp"

namespace grader {

enum class Backend { cuda, sim };

// "cuda", "sim": how reports and gradebooks name them.
std::string_view to_string(Backend backend);

struct ResolvedBackend {
    Backend backend = Backend::sim;
    std::optional<cuda::DeviceInfo> gpu;  // with Backend::cuda, where GPU `ordinal` answered
    std::string no_gpu_reason;            // with Backend::cuda where it did not: why
};

// `requested` is "cuda" or "sim", which it resolves to, or "auto": the GPU where GPU `ordinal`
// answers, else the simulator.
ResolvedBackend resolve_backend(const std::string& requested, int ordinal);

}  // namespace grader
