#pragma once

// The GPU: kernels loaded through the driver API on the device's primary context, launched on a
// stream of the grader's own, timed in interleaved rounds, and counted with the counter it is
// handed (counter_source.hpp).

#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compile/compile.hpp"
#include "cuda/resources.hpp"
#include "device/buffer_layout.hpp"
#include "device/counter_source.hpp"
#include "device/device.hpp"
#include "device/device_lock.hpp"
#include "exercise/exercise.hpp"
#include "model/measurements.hpp"

namespace grader {

// When this GPU last finished timing a grade, where that outlives one grade (a device server's).
// A GPU that finished timing this recently has its clocks up: the next grade's timing skips the
// clock warm-up (the exercise's timing.warmup_ms). In a class the grades follow one another
// within milliseconds; a grade alone, or a server's first grade, warms up.
struct GpuClocks {
    std::optional<std::chrono::steady_clock::time_point> last_timed;
};
inline constexpr std::chrono::milliseconds kClocksStayUp{500};

class CudaDevice final : public Device {
public:
    // Creates the context on GPU `ordinal`. Throws cuda::DriverUnavailable without a GPU. Counts
    // with `counters`; `clocks` is the record of this GPU's timing that outlives the grade, where
    // there is one.
    CudaDevice(const Exercise& exercise, int ordinal, std::uint64_t seed,
               std::shared_ptr<CounterSource> counters, GpuClocks* clocks = nullptr,
               StepTrace trace = {});
    ~CudaDevice() override;

private:
    DeviceCapabilities do_capabilities() const override { return {true, true, false}; }
    double do_open_seconds() const override { return context_seconds_; }

    // This user's lock of this GPU (device_lock.hpp); release() ends the context first.
    std::string do_acquire() override;
    void do_release() override;

    // The kernel that fills shared memory with NaN before an input that asks for it.
    void do_set_shared_poison(const CompiledKernel& poison) override;
    void do_describe(Environment& environment) override;
    LoadResult do_load(const KernelSpec& spec, const CompiledKernel& compiled) override;
    LaunchGeometry do_geometry(const LoadedKernel& sizing_kernel) override;
    void do_put_input(const InputSpec& input, InputWords words) override;
    // Where the plan counts after timing, the counter may open beside the timing.
    void do_follow(const LaunchPlan& plan) override {
        count_follows_ = !plan.counted.empty();
        planned_timed_ = plan.timed.size();
    }
    DeviceLaunch do_run(const LaunchCase& launch, const InputSpec& input,
                        const LaunchGeometry& geometry) override;
    void do_reload(const std::vector<LoadedKernel*>& kernels) override;
    TimingSamples do_time(const std::vector<LaunchCase>& launches, const InputSpec& input,
                          const LaunchGeometry& geometry) override;
    HardwareCounts do_count(const std::vector<LaunchCase>& launches, const InputSpec& input,
                            const LaunchGeometry& geometry) override;

    TimingSamples time_rounds(const std::vector<LaunchCase>& launches, const InputSpec& input,
                              const LaunchGeometry& geometry);
    HardwareCounts count_launches(const std::vector<LaunchCase>& launches, const InputSpec& input,
                                  const LaunchGeometry& geometry);
    // The grade's one allocation (buffer_layout), made where a launch first needs it with every
    // input given so far in its place and room for `timed` timed outputs (at least the plan's);
    // the addresses of an input and of the output in it.
    void lay_out_buffers(std::uint64_t elements, std::uint64_t timed = 0);
    CUdeviceptr input_address(const InputSpec& input, std::uint64_t elements);
    CUdeviceptr output_address(std::uint64_t elements);
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
    std::map<std::string, InputWords> inputs_;  // by input id, as given
    cuda::DeviceBuffer buffers_;                // the inputs and the output (buffer_layout)
    BufferLayout layout_;
    std::uint64_t laid_out_elements_ = 0;
    std::uint64_t planned_timed_ = 0;  // the plan's timed launches: room for their outputs
    std::optional<cuda::Module> poison_module_;
    CUfunction poison_function_ = nullptr;
    int blocks_per_sm_ = 0;
    bool param_info_missing_ = false;  // the driver predates cuFuncGetParamInfo
    LaunchGeometry geometry_;
    DeviceLock lock_;
    std::shared_ptr<CounterSource> counters_;
    GpuClocks* clocks_ = nullptr;
    StepTrace trace_;
    bool count_follows_ = false;
};

}  // namespace grader
