// The one place that picks the device a grade runs on.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cuda/resources.hpp"
#include "device/backend.hpp"
#include "device/counter_source.hpp"
#include "device/cuda_device.hpp"
#include "device/device.hpp"
#include "device/fallback_device.hpp"
#include "device/remote_device.hpp"
#include "device/sim_device.hpp"
#include "exercise/exercise.hpp"

namespace grader {

DeviceChoice choose_device(const Exercise& exercise, const std::string& requested, int ordinal,
                           std::uint64_t seed, const std::filesystem::path& device_server,
                           const StepTrace& trace, unsigned sim_threads) {
    DeviceChoice choice;
    choice.arch = exercise.default_arch;
    const ResolvedBackend resolved = resolve_backend(requested, ordinal);
    choice.backend = resolved.backend;
    if (resolved.backend == Backend::cuda) {
        choice.no_gpu_reason = resolved.no_gpu_reason;
        if (!resolved.gpu) {
            return choice;
        }
        choice.arch = resolved.gpu->arch();
        choice.shared_poison = true;
        const auto own = [&exercise, ordinal, seed, trace]() -> std::unique_ptr<Device> {
            return std::make_unique<CudaDevice>(exercise, ordinal, seed,
                                                own_counter(ordinal, trace), nullptr, trace);
        };
        if (device_server.empty()) {
            choice.open = own;
        } else {
            choice.open = [device_server, seed, own]() -> std::unique_ptr<Device> {
                return std::make_unique<FallbackDevice>(open_remote_device(device_server, seed),
                                                        own);
            };
        }
        return choice;
    }
    choice.open = [&exercise, seed, sim_threads]() -> std::unique_ptr<Device> {
        return std::make_unique<SimDevice>(exercise, seed, SimDevice::StudentBlocks::whole_grid,
                                           sim_threads);
    };
    return choice;
}

}  // namespace grader
