#include "device/backend.hpp"

#include "cuda/driver_api.hpp"

namespace grader {

std::string_view to_string(Backend backend) {
    return backend == Backend::cuda ? "cuda" : "sim";
}

ResolvedBackend resolve_backend(const std::string& requested, int ordinal) {
    ResolvedBackend resolved;
    if (requested == "sim") {
        return resolved;
    }
    try {
        resolved.gpu = cuda::query_device(ordinal);
        resolved.backend = Backend::cuda;
    } catch (const cuda::DriverUnavailable& error) {
        if (requested == "cuda") {
            resolved.backend = Backend::cuda;
            resolved.no_gpu_reason = error.what();
        }
    }
    return resolved;
}

}  // namespace grader
