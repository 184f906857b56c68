// The one place that picks the device a grade runs on.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "cuda/driver_api.hpp"
#include "cuda/resources.hpp"
#include "device/cuda_device.hpp"
#include "device/device.hpp"
#include "device/device_server.hpp"
#include "device/sim_device.hpp"
#include "exercise/exercise.hpp"

namespace grader {

DeviceChoice choose_device(const Exercise& exercise, const std::string& requested, int ordinal,
                           std::uint64_t seed, const std::filesystem::path& device_server) {
    DeviceChoice choice;
    choice.arch = exercise.default_arch;
    if (requested != "sim") {
        try {
            const cuda::DeviceInfo gpu = cuda::query_device(ordinal);
            choice.backend = "cuda";
            choice.arch = gpu.arch();
            choice.shared_poison = true;
            const auto own = [&exercise, ordinal, seed]() -> std::unique_ptr<Device> {
                return std::make_unique<CudaDevice>(exercise, ordinal, seed);
            };
            if (device_server.empty()) {
                choice.open = own;
            } else {
                choice.open = [device_server, seed, own]() -> std::unique_ptr<Device> {
                    return open_remote_device(device_server, seed, own);
                };
            }
            return choice;
        } catch (const cuda::DriverUnavailable& error) {
            if (requested == "cuda") {
                choice.backend = "cuda";
                choice.no_gpu_reason = error.what();
                return choice;
            }
        }
    }
    choice.backend = "sim";
    choice.open = [&exercise, seed]() -> std::unique_ptr<Device> {
        return std::make_unique<SimDevice>(exercise, seed);
    };
    return choice;
}

}  // namespace grader
