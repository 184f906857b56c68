#include "device/cuda_device.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "counters/counters.hpp"
#include "cuda/driver_api.hpp"
#include "device/buffer_layout.hpp"
#include "measure/interleaved_timing.hpp"
#include "measure/outputs.hpp"

namespace grader {
namespace {

class CudaKernel final : public LoadedKernel {
public:
    std::string image;  // the cubin, to load again with fresh globals
    std::string lowered_name;
    cuda::Module module;
    CUfunction function = nullptr;
};

// The counters' launch totals as a grade keeps them. The fewest wavefronts the accesses' widths
// allow are the wavefronts less Nsight Compute's bank conflicts (its ideal wavefronts): a
// conflict-free 128-bit store counts 4 wavefronts per request and 0 conflicts. (0, counted as
// not known, where the conflicts leave none: the degree is then wavefronts per request.)
SharedAccessCounts access_counts(const counters::SharedMemoryCounts& hardware) {
    const auto ideal = [](std::uint64_t wavefronts, std::uint64_t conflicts) {
        return wavefronts > conflicts ? wavefronts - conflicts : std::uint64_t{0};
    };
    SharedAccessCounts counts;
    counts.load_requests = hardware.load_instructions;
    counts.load_wavefronts = hardware.load_wavefronts;
    counts.load_ideal_wavefronts = ideal(hardware.load_wavefronts, hardware.load_bank_conflicts);
    counts.store_requests = hardware.store_instructions;
    counts.store_wavefronts = hardware.store_wavefronts;
    counts.store_ideal_wavefronts = ideal(hardware.store_wavefronts, hardware.store_bank_conflicts);
    counts.global_load_requests = hardware.global_load_requests;
    counts.global_load_sectors = hardware.global_load_sectors;
    counts.global_store_requests = hardware.global_store_requests;
    counts.global_store_sectors = hardware.global_store_sectors;
    return counts;
}

std::string version_text(int version) {
    return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

int function_attribute(CUfunction function, CUfunction_attribute attribute) {
    int value = -1;
    cuda::driver().cuFuncGetAttribute(&value, attribute, function);
    return value;
}

// What a driver error during a launch means for the launch: a fault of the kernel (it poisons the
// context), or a launch the device refused.
DeviceLaunch failed_launch(const cuda::DriverError& error) {
    DeviceLaunch launch;
    launch.end = cuda::is_kernel_fault(error.status()) ? DeviceLaunch::End::fault
                                                       : DeviceLaunch::End::refused;
    launch.message = cuda::describe(error.status());
    return launch;
}

const CudaKernel& cuda_kernel(const LoadedKernel& kernel) {
    return static_cast<const CudaKernel&>(kernel);
}

}  // namespace

CudaDevice::CudaDevice(const Exercise& exercise, int ordinal, std::uint64_t seed,
                       std::shared_ptr<CounterSource> counters, GpuClocks* clocks, StepTrace trace)
    : exercise_(exercise),
      seed_(seed),
      info_(cuda::query_device(ordinal)),
      counters_(std::move(counters)),
      clocks_(clocks),
      trace_(std::move(trace)) {
    const auto began = std::chrono::steady_clock::now();
    context_.emplace(ordinal);
    stream_.emplace();
    context_seconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
}

CudaDevice::~CudaDevice() {
    if (held()) {
        release();
    }
}

std::string CudaDevice::do_acquire() {
    lock_ = DeviceLock(gpu_lock_folder(), gpu_lock_name(info_.pci_bus_id), gpu_lock_wait());
    return info_.pci_bus_id;
}

void CudaDevice::do_release() {
    const auto began = std::chrono::steady_clock::now();
    // The counter, then what lives in the context, go before the context, and the context before
    // the lock: the next grade must find the GPU as this one found it.
    counters_->close();
    poison_module_.reset();
    poison_function_ = nullptr;
    inputs_.clear();
    buffers_ = cuda::DeviceBuffer();
    stream_.reset();
    context_.reset();
    lock_ = DeviceLock();
    if (trace_) {
        trace_(
            "release: the context and the lock released in " +
            std::to_string(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count()) +
            " s");
    }
}

void CudaDevice::do_set_shared_poison(const CompiledKernel& poison) {
    if (!poison.outcome.ok) {
        return;
    }
    poison_module_.emplace(poison.cubin);
    poison_function_ = poison_module_->function(poison.outcome.lowered_name);
    GRADER_DRIVER_CALL(cuFuncSetAttribute(poison_function_,
                                          CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          info_.max_shared_per_block_optin));
}

void CudaDevice::do_describe(Environment& environment) {
    environment.gpu_available = true;
    environment.device_name = info_.name;
    environment.compute_capability =
        std::to_string(info_.major) + "." + std::to_string(info_.minor);
    environment.sm_count = info_.sm_count;
    environment.driver_version = version_text(info_.driver_version);
    environment.blocks_per_sm = blocks_per_sm_;
    environment.grid_blocks = static_cast<std::uint32_t>(geometry_.grid.count());
    environment.block_size = static_cast<std::uint32_t>(geometry_.block.count());
    if (param_info_missing_) {
        environment.notes.push_back(
            "cuFuncGetParamInfo needs a CUDA 12.4 driver and this one supports CUDA " +
            version_text(info_.driver_version) +
            ": the kernel's parameters were checked against the PTX's parameter list instead");
    }
}

LoadResult CudaDevice::do_load(const KernelSpec& spec, const CompiledKernel& compiled) {
    LoadResult result;
    try {
        auto kernel = std::make_unique<CudaKernel>();
        kernel->id = spec.id;
        kernel->image = compiled.cubin;
        kernel->lowered_name = compiled.outcome.lowered_name;
        kernel->module = cuda::Module(compiled.cubin);
        kernel->function = kernel->module.function(compiled.outcome.lowered_name);
        if (const auto sizes = cuda::kernel_param_sizes(kernel->function)) {
            kernel->param_sizes = *sizes;
            kernel->param_source = "driver";
        } else {
            param_info_missing_ = true;  // the PTX's parameter list stands
        }
        kernel->static_shared_bytes =
            function_attribute(kernel->function, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
        kernel->registers = function_attribute(kernel->function, CU_FUNC_ATTRIBUTE_NUM_REGS);
        result.kernel = std::move(kernel);
    } catch (const cuda::DriverError& error) {
        result.problem = "the compiled kernel could not be loaded on " + info_.name + ": " +
                         cuda::describe(error.status());
    }
    return result;
}

LaunchGeometry CudaDevice::do_geometry(const LoadedKernel& sizing_kernel) {
    geometry_.block = exercise_.launch.block;
    // How many blocks an SM holds at once: the report says it for either kind of grid.
    GRADER_DRIVER_CALL(cuOccupancyMaxActiveBlocksPerMultiprocessor(
        &blocks_per_sm_, cuda_kernel(sizing_kernel).function,
        static_cast<int>(geometry_.block.count()), 0));
    blocks_per_sm_ = std::max(blocks_per_sm_, 1);
    if (exercise_.launch.grid_from_occupancy) {
        // As many blocks per SM as the occupancy API allows, on every SM, so each launch is
        // several waves of real work and launch overhead is noise.
        geometry_.grid =
            Dim3Spec{static_cast<std::uint32_t>(blocks_per_sm_ * info_.sm_count), 1, 1};
    } else {
        geometry_.grid = exercise_.launch.grid;
    }
    return geometry_;
}

void CudaDevice::do_put_input(const InputSpec& input, InputWords words) {
    if (words->size() > exercise_.buffers.input_words) {
        throw std::runtime_error("input '" + input.id + "' has " + std::to_string(words->size()) +
                                 " words; the exercise's input buffers hold " +
                                 std::to_string(exercise_.buffers.input_words));
    }
    inputs_.insert_or_assign(input.id, std::move(words));
    buffers_ = cuda::DeviceBuffer();  // laid out again, with this input, at the next launch
}

void CudaDevice::lay_out_buffers(std::uint64_t elements, std::uint64_t timed) {
    timed = std::max(timed, planned_timed_);
    if (buffers_.get() != 0 && laid_out_elements_ == elements && layout_.timed_outputs >= timed) {
        return;
    }
    layout_ = buffer_layout(exercise_, elements, timed);
    buffers_ = cuda::DeviceBuffer();
    buffers_ = cuda::DeviceBuffer(layout_.bytes);
    laid_out_elements_ = elements;
    // Zeroed first (on our stream, finished before the copies on the legacy one), as the
    // simulator's allocation is: what lies between and after the buffers reads the same there.
    buffers_.fill_words(0, stream_->get());
    stream_->synchronize();
    for (std::size_t i = 0; i < exercise_.inputs.size(); ++i) {
        const auto given = inputs_.find(exercise_.inputs[i].id);
        if (given != inputs_.end()) {
            buffers_.upload(given->second->data(), given->second->size() * sizeof(float),
                            layout_.inputs[i]);
        }
    }
    // A synchronous copy from pageable memory may return before its DMA lands, on the legacy
    // stream that ours does not wait for: finish it before any launch.
    GRADER_DRIVER_CALL(cuCtxSynchronize());
}

CUdeviceptr CudaDevice::input_address(const InputSpec& input, std::uint64_t elements) {
    lay_out_buffers(elements);
    return buffers_.get() + layout_.inputs[input_index(exercise_, input)];
}

CUdeviceptr CudaDevice::output_address(std::uint64_t elements) {
    lay_out_buffers(elements);
    return buffers_.get() + layout_.output;
}

void CudaDevice::enqueue(const LoadedKernel& kernel, CUdeviceptr input, CUdeviceptr output,
                         std::uint64_t elements, int stride, const LaunchGeometry& geometry,
                         CUstream stream) const {
    auto arguments = kernel_arguments(exercise_, input, output, elements, stride);
    std::vector<void*> pointers;
    for (auto& argument : arguments) {
        pointers.push_back(argument.data());
    }
    GRADER_DRIVER_CALL(cuLaunchKernel(
        cuda_kernel(kernel).function, geometry.grid.x, geometry.grid.y, geometry.grid.z,
        geometry.block.x, geometry.block.y, geometry.block.z, 0, stream, pointers.data(), nullptr));
}

void CudaDevice::poison_shared_memory() {
    if (poison_function_ == nullptr) {
        return;
    }
    // Every SM, twice over, with the largest allocation a block may have: whatever a kernel
    // leaves unwritten in its tile afterwards reads NaN, a different one word by word.
    const auto words = static_cast<unsigned int>(info_.max_shared_per_block_optin / 4);
    const auto seed = static_cast<unsigned int>(seed_ ^ (seed_ >> 32));
    void* arguments[] = {const_cast<unsigned int*>(&words), const_cast<unsigned int*>(&seed)};
    GRADER_DRIVER_CALL(
        cuLaunchKernel(poison_function_, static_cast<unsigned int>(info_.sm_count * 2), 1, 1, 1024,
                       1, 1, static_cast<unsigned int>(info_.max_shared_per_block_optin),
                       stream_->get(), arguments, nullptr));
}

DeviceLaunch CudaDevice::do_run(const LaunchCase& launch, const InputSpec& input,
                                const LaunchGeometry& geometry) {
    const std::uint64_t elements = output_elements(exercise_, geometry);
    DeviceLaunch ran;
    try {
        const CUdeviceptr in = input_address(input, elements);
        const CUdeviceptr out = output_address(elements);
        buffers_.fill_words(kOutputPoison, stream_->get(), layout_.output,
                            elements * sizeof(float));
        if (input.poison_shared) {
            poison_shared_memory();
        }
        cuda::Event began;
        cuda::Event ended;
        began.record(*stream_);
        enqueue(*launch.kernel, in, out, elements, launch.stride, geometry, stream_->get());
        ended.record(*stream_);
        stream_->synchronize();
        ran.kernel_ms = static_cast<double>(cuda::elapsed_ms(began, ended));
        if (launch.outputs_read) {
            ran.outputs.resize(elements);
            buffers_.download(ran.outputs.data(), elements * sizeof(float), layout_.output);
        }
    } catch (const cuda::DriverError& error) {
        return failed_launch(error);
    }
    return ran;
}

TimingSamples CudaDevice::do_time(const std::vector<LaunchCase>& launches, const InputSpec& input,
                                  const LaunchGeometry& geometry) {
    if (count_follows_) {
        // No profiling session runs while the counter opens: the timing is as it would be
        // without a counter (counters.hpp).
        counters_->timing_begins(context_->get());
    }
    try {
        return time_rounds(launches, input, geometry);
    } catch (const cuda::DriverError& error) {
        const DeviceLaunch failed = failed_launch(error);
        TimingSamples samples;
        samples.end = failed.end;
        samples.message = failed.message;
        return samples;
    }
}

TimingSamples CudaDevice::time_rounds(const std::vector<LaunchCase>& launches,
                                      const InputSpec& input, const LaunchGeometry& geometry) {
    const std::uint64_t elements = output_elements(exercise_, geometry);
    // Each launch writes an output of its own, after the grade's (buffer_layout), so that what the
    // timed launches computed can be checked afterwards: a kernel cannot be right when checked
    // and wrong when timed.
    lay_out_buffers(elements, launches.size());
    const CUdeviceptr in = input_address(input, elements);
    for (std::size_t i = 0; i < launches.size(); ++i) {
        buffers_.fill_words(kOutputPoison, stream_->get(), layout_.timed_output(i),
                            elements * sizeof(float));
    }
    std::vector<TimedLaunch> timed;
    for (std::size_t i = 0; i < launches.size(); ++i) {
        const LaunchCase c = launches[i];
        const CUdeviceptr out = buffers_.get() + layout_.timed_output(i);
        timed.push_back({c.kernel->id + " stride " + std::to_string(c.stride),
                         [this, c, in, out, elements, &geometry](CUstream stream) {
                             enqueue(*c.kernel, in, out, elements, c.stride, geometry, stream);
                         }});
    }
    TimingSpec spec = exercise_.timing;
    const auto now = [] { return std::chrono::steady_clock::now(); };
    if (clocks_ != nullptr && clocks_->last_timed && now() - *clocks_->last_timed < kClocksStayUp) {
        spec.warmup_ms = 0.0;
    }
    const InterleavedTiming timing = time_interleaved(timed, spec, seed_, *stream_);
    if (clocks_ != nullptr) {
        clocks_->last_timed = now();
    }
    TimingSamples samples;
    for (std::size_t i = 0; i < timing.rows.size(); ++i) {
        samples.per_round_ms.push_back(timing.rows[i].per_launch_ms);
        samples.launches_per_sample.push_back(timing.rows[i].launches_per_sample);
        std::vector<float> last;
        if (launches[i].outputs_read) {
            last.resize(elements);
            buffers_.download(last.data(), elements * sizeof(float), layout_.timed_output(i));
        }
        samples.final_outputs.push_back(std::move(last));
    }
    samples.rounds = timing.rounds;
    samples.seconds = timing.seconds;
    return samples;
}

void CudaDevice::do_reload(const std::vector<LoadedKernel*>& kernels) {
    for (LoadedKernel* loaded : kernels) {
        auto& kernel = static_cast<CudaKernel&>(*loaded);
        kernel.module = cuda::Module(kernel.image);
        kernel.function = kernel.module.function(kernel.lowered_name);
    }
}

HardwareCounts CudaDevice::do_count(const std::vector<LaunchCase>& launches, const InputSpec& input,
                                    const LaunchGeometry& geometry) {
    HardwareCounts counts;
    try {
        counts = count_launches(launches, input, geometry);
    } catch (const cuda::DriverError& error) {
        const DeviceLaunch failed = failed_launch(error);
        counts.reason = failed.message;
        counts.end = failed.end;
        counts.message = failed.message;
    }
    // Nothing is timed after a count: the grade's own counter goes now (a server's stays).
    counters_->close();
    return counts;
}

HardwareCounts CudaDevice::count_launches(const std::vector<LaunchCase>& launches,
                                          const InputSpec& input, const LaunchGeometry& geometry) {
    HardwareCounts result;
    counters::SharedMemoryCounter* const counter = counters_->counter(context_->get());
    if (counter == nullptr) {
        result.reason = counters_->why_not();
        return result;
    }
    if (!counter->available()) {
        result.reason = counter->reason();
        return result;
    }
    const std::uint64_t elements = output_elements(exercise_, geometry);
    const CUdeviceptr in = input_address(input, elements);
    const CUdeviceptr out = output_address(elements);
    std::vector<counters::SharedMemoryCounter::Launch> counted;
    for (const LaunchCase& c : launches) {
        counted.push_back([this, c, in, out, elements, &geometry] {
            enqueue(*c.kernel, in, out, elements, c.stride, geometry, stream_->get());
        });
    }
    const auto counting = std::chrono::steady_clock::now();
    const auto counts = counter->count_each(counted);
    if (trace_) {
        trace_("count: " + std::to_string(counted.size()) + " launches counted in " +
               std::to_string(
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - counting)
                       .count()) +
               " s");
    }
    if (!counts.counted()) {
        result.reason = counts.reason;
        return result;
    }
    result.counted = true;
    result.description = counter->description();
    for (const auto& hardware : counts.value) {
        result.counts.push_back(access_counts(hardware));
    }
    return result;
}

}  // namespace grader
