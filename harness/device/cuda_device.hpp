#pragma once

// The GPU: kernels loaded through the driver API on the device's primary context, launched on a
// stream of the grader's own, timed in interleaved rounds.

#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compile/compile.hpp"
#include "counters/counters.hpp"
#include "cuda/resources.hpp"
#include "device/device.hpp"
#include "device/device_lock.hpp"
#include "device/device_server.hpp"
#include "exercise/exercise.hpp"
#include "model/measurements.hpp"

namespace grader {

// What a device server keeps for each session's device: its counter, open on the same primary
// context for the server's life, and when its GPU last finished timing a grade.
struct GpuServerState {
    // The counter, opening on a thread of its own while the server answers its first grade.
    std::future<counters::SharedMemoryCounter> opening;
    std::optional<counters::SharedMemoryCounter> opened;
    std::string why_not;  // where it could not be had
    std::optional<std::chrono::steady_clock::time_point> last_timed;

    // The open counter, waited for at the first count (at most kCounterOpenWait); null where it
    // could not be had, with why_not saying why.
    counters::SharedMemoryCounter* counter();
};
inline constexpr std::chrono::seconds kCounterOpenWait{2};

// A GPU that finished timing a grade this recently has its clocks up: the next grade's timing
// skips the clock warm-up (the exercise's timing.warmup_ms). In a class the GPU's sessions
// follow one another within milliseconds; a grade alone, or a server's first grade, warms up.
inline constexpr std::chrono::milliseconds kClocksStayUp{500};

class CudaDevice final : public Device {
public:
    // Creates the context on GPU `ordinal` and starts loading CUPTI's libraries beside it. Throws
    // cuda::DriverUnavailable without a GPU. Where `server` is given (a device server's session),
    // count() uses the server's counter and time() its record of the GPU's clocks; otherwise
    // count() opens a counter of its own after the timing.
    CudaDevice(const Exercise& exercise, int ordinal, std::uint64_t seed,
               GpuServerState* server = nullptr);
    ~CudaDevice() override;

    // The kernel that fills shared memory with NaN before an input that asks for it.
    void set_shared_poison(const CompiledKernel& poison) override;
    bool locks() const override { return true; }
    double open_seconds() const override { return context_seconds_; }
    const std::string& pci_bus_id() const { return info_.pci_bus_id; }

    // This user's lock of this GPU (device_lock.hpp); release() ends the context first.
    std::string acquire() override;
    void release() override;
    bool held() const override { return lock_.held(); }

    void describe(Environment& environment) const override;
    LoadResult load(const KernelSpec& spec, const CompiledKernel& compiled) override;
    LaunchGeometry geometry(const LoadedKernel& sizing_kernel) override;
    DeviceLaunch run(const LoadedKernel& kernel, const InputSpec& input,
                     const std::vector<float>& input_words, int stride,
                     const LaunchGeometry& geometry) override;
    bool times() const override { return true; }
    TimingSamples time(const std::vector<TimedCase>& launches, const InputSpec& input,
                       const std::vector<float>& input_words,
                       const LaunchGeometry& geometry) override;
    void reload(const std::vector<LoadedKernel*>& kernels) override;
    HardwareCounts count(const std::vector<TimedCase>& launches, const InputSpec& input,
                         const std::vector<float>& input_words,
                         const LaunchGeometry& geometry) override;

private:
    TimingSamples time_rounds(const std::vector<TimedCase>& launches, const InputSpec& input,
                              const std::vector<float>& input_words,
                              const LaunchGeometry& geometry);
    HardwareCounts count_launches(const std::vector<TimedCase>& launches, const InputSpec& input,
                                  const std::vector<float>& input_words,
                                  const LaunchGeometry& geometry);
    const cuda::DeviceBuffer& input_buffer(const InputSpec& input, const std::vector<float>& words);
    cuda::DeviceBuffer& output_buffer(std::uint64_t elements);
    void enqueue(const LoadedKernel& kernel, CUdeviceptr input, CUdeviceptr output,
                 std::uint64_t elements, int stride, const LaunchGeometry& geometry,
                 CUstream stream) const;
    void poison_shared_memory();

    const Exercise& exercise_;
    std::uint64_t seed_;
    cuda::DeviceInfo info_;
    double context_seconds_ = 0.0;
    std::optional<cuda::PrimaryContext> context_;
    std::optional<cuda::Stream> stream_;
    std::map<std::string, cuda::DeviceBuffer> inputs_;  // by input id, uploaded once
    cuda::DeviceBuffer output_;
    std::optional<cuda::Module> poison_module_;
    CUfunction poison_function_ = nullptr;
    int blocks_per_sm_ = 0;
    bool param_info_missing_ = false;  // the driver predates cuFuncGetParamInfo
    LaunchGeometry geometry_;
    DeviceLock lock_;
    GpuServerState* server_ = nullptr;     // a device server's session: the server's
    std::future<void> counter_libraries_;  // without one: loading CUPTI
    double libraries_seconds_ = 0.0;       // how long that took
    // Without one: the grade's own counter, opening beside the timing.
    std::future<counters::SharedMemoryCounter> own_counter_;
};

// `grader __device-server`: GPU `ordinal`'s context and counter, opened once (the counter on a
// thread beside the first sessions), then the sessions of device_server.hpp on `socket` until one
// ends with a fault, or it is asked to stop. `ready` is called once the socket listens, `ended`
// after each session. Says why it stopped on standard error, then ends the process without tearing
// the profiler or the context down (a kernel's fault may have lost the context).
[[noreturn]] void serve_gpu(const Exercise& exercise, int ordinal,
                            const std::filesystem::path& socket, const std::function<void()>& ready,
                            const SessionEnded& ended);

}  // namespace grader
