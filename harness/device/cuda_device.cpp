#include "device/cuda_device.hpp"

#include <cxxabi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include "common/kernel_ids.hpp"
#include "counters/counters.hpp"
#include "cuda/driver_api.hpp"
#include "device/device_server.hpp"
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

// The GPU's counter, learning at its first count whether this user may count.
counters::SharedMemoryCounter open_counter(CUcontext context, int ordinal) {
    return counters::SharedMemoryCounter::open(
        context, ordinal, counters::InstructionCounter::hardware,
        counters::SharedMemoryCounter::Probe::at_first_count);
}

// open_counter() on a thread of its own, once CUPTI's `libraries` are loaded, with `context`
// made current there: beside what does not need it (a grade's timing, a server's first grade).
std::future<counters::SharedMemoryCounter> open_counter_beside(std::future<void> libraries,
                                                               CUcontext context, int ordinal) {
    return std::async(std::launch::async,
                      [libraries = std::move(libraries), context, ordinal]() mutable {
                          libraries.get();
                          cuda::driver().cuCtxSetCurrent(context);
                          return open_counter(context, ordinal);
                      });
}

}  // namespace

CudaDevice::CudaDevice(const Exercise& exercise, int ordinal, std::uint64_t seed,
                       GpuServerState* server)
    : exercise_(exercise), seed_(seed), info_(cuda::query_device(ordinal)), server_(server) {
    const auto began = std::chrono::steady_clock::now();
    context_.emplace(ordinal);
    stream_.emplace();
    if (server_ == nullptr) {
        // CUPTI's libraries take about 0.15 s to load on the H200's host (libnvperf_host is
        // 32 MB): on a thread of their own, beside the compile and the correctness runs. The
        // counter opens around the timing (time()), and counts after it (count_launches).
        counter_libraries_ = std::async(std::launch::async, [this] {
            const auto loading = std::chrono::steady_clock::now();
            counters::load_counter_libraries();
            libraries_seconds_ =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - loading).count();
        });
    }
    context_seconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
}

CudaDevice::~CudaDevice() {
    if (counter_libraries_.valid()) {
        counter_libraries_.wait();
    }
    if (lock_.held()) {
        release();
    }
}

std::string CudaDevice::acquire() {
    lock_ = DeviceLock(gpu_lock_folder(), gpu_lock_name(info_.pci_bus_id), gpu_lock_wait());
    return info_.pci_bus_id;
}

void CudaDevice::release() {
    const auto began = std::chrono::steady_clock::now();
    if (own_counter_.valid()) {
        // A grade stopped before its count: the counter goes before the context. It never
        // throws for the environment; nothing else of it matters now.
        try {
            (void)own_counter_.get();
        } catch (const std::exception&) {
        }
    }
    // What lives in the context goes before the context, and the context before the lock: the
    // next grade must find the GPU as this one found it.
    poison_module_.reset();
    poison_function_ = nullptr;
    inputs_.clear();
    output_ = cuda::DeviceBuffer();
    stream_.reset();
    context_.reset();
    lock_ = DeviceLock();
    if (std::getenv("GRADER_TRACE_STEPS") != nullptr) {
        std::cerr << "grader: release: the context and the lock released in "
                  << std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count()
                  << " s\n";
    }
}

void CudaDevice::set_shared_poison(const CompiledKernel& poison) {
    if (!poison.outcome.ok) {
        return;
    }
    poison_module_.emplace(poison.cubin);
    poison_function_ = poison_module_->function(poison.outcome.lowered_name);
    GRADER_DRIVER_CALL(cuFuncSetAttribute(poison_function_,
                                          CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          info_.max_shared_per_block_optin));
}

void CudaDevice::describe(Environment& environment) const {
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

LoadResult CudaDevice::load(const KernelSpec& spec, const CompiledKernel& compiled) {
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

LaunchGeometry CudaDevice::geometry(const LoadedKernel& sizing_kernel) {
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

const cuda::DeviceBuffer& CudaDevice::input_buffer(const InputSpec& input,
                                                   const std::vector<float>& words) {
    auto found = inputs_.find(input.id);
    if (found == inputs_.end()) {
        cuda::DeviceBuffer buffer(words.size() * sizeof(float));
        buffer.upload(words.data(), words.size() * sizeof(float));
        // A synchronous copy from pageable memory may return before its DMA lands, on the legacy
        // stream that ours does not wait for: finish it before any launch.
        GRADER_DRIVER_CALL(cuCtxSynchronize());
        found = inputs_.emplace(input.id, std::move(buffer)).first;
    }
    return found->second;
}

cuda::DeviceBuffer& CudaDevice::output_buffer(std::uint64_t elements) {
    if (output_.bytes() < elements * sizeof(float)) {
        output_ = cuda::DeviceBuffer(elements * sizeof(float));
    }
    return output_;
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

DeviceLaunch CudaDevice::run(const LoadedKernel& kernel, const InputSpec& input,
                             const std::vector<float>& input_words, int stride,
                             const LaunchGeometry& geometry) {
    const std::uint64_t elements = output_elements(exercise_, geometry);
    DeviceLaunch launch;
    try {
        const cuda::DeviceBuffer& in = input_buffer(input, input_words);
        cuda::DeviceBuffer& out = output_buffer(elements);
        out.fill_words(kOutputPoison, stream_->get());
        if (input.poison_shared) {
            poison_shared_memory();
        }
        cuda::Event began;
        cuda::Event ended;
        began.record(*stream_);
        enqueue(kernel, in.get(), out.get(), elements, stride, geometry, stream_->get());
        ended.record(*stream_);
        stream_->synchronize();
        launch.kernel_ms = static_cast<double>(cuda::elapsed_ms(began, ended));
        launch.outputs.resize(elements);
        out.download(launch.outputs.data(), elements * sizeof(float));
    } catch (const cuda::DriverError& error) {
        return failed_launch(error);
    }
    return launch;
}

TimingSamples CudaDevice::time(const std::vector<TimedCase>& launches, const InputSpec& input,
                               const std::vector<float>& input_words,
                               const LaunchGeometry& geometry) {
    const bool counts_follow =
        std::any_of(launches.begin(), launches.end(),
                    [](const TimedCase& c) { return c.kernel->id == kStudentKernel; });
    if (server_ == nullptr && !own_counter_.valid() && counter_libraries_.valid() &&
        counts_follow) {
        // The grade's own counter opens on a thread beside the timing (0.17 s on the H200: the
        // profiler's initialization, then 0.15 s in CUPTI's first calls). No profiling session
        // runs while the timing does, as in a device server, whose profiler is initialised for
        // its life. On the H200 (run 27) a Part 1 grade took 0.955 s this way where opening
        // before the timing took 1.093 s, with the same ratio spreads (0.36% and 0.40% over 20
        // grades) and no verdict flipped.
        own_counter_ =
            open_counter_beside(std::move(counter_libraries_), context_->get(), info_.ordinal);
    }
    try {
        return time_rounds(launches, input, input_words, geometry);
    } catch (const cuda::DriverError& error) {
        const DeviceLaunch failed = failed_launch(error);
        TimingSamples samples;
        samples.end = failed.end;
        samples.message = failed.message;
        return samples;
    }
}

TimingSamples CudaDevice::time_rounds(const std::vector<TimedCase>& launches,
                                      const InputSpec& input, const std::vector<float>& input_words,
                                      const LaunchGeometry& geometry) {
    const std::uint64_t elements = output_elements(exercise_, geometry);
    const CUdeviceptr in = input_buffer(input, input_words).get();
    // Each launch writes a buffer of its own, so that what the timed launches computed can be
    // checked afterwards: a kernel cannot be right when checked and wrong when timed.
    std::vector<cuda::DeviceBuffer> outputs;
    for (std::size_t i = 0; i < launches.size(); ++i) {
        outputs.emplace_back(elements * sizeof(float));
        outputs.back().fill_words(kOutputPoison, stream_->get());
    }
    std::vector<TimedLaunch> timed;
    for (std::size_t i = 0; i < launches.size(); ++i) {
        const TimedCase c = launches[i];
        const CUdeviceptr out = outputs[i].get();
        timed.push_back({c.kernel->id + " stride " + std::to_string(c.stride),
                         [this, c, in, out, elements, &geometry](CUstream stream) {
                             enqueue(*c.kernel, in, out, elements, c.stride, geometry, stream);
                         }});
    }
    TimingSpec spec = exercise_.timing;
    if (server_ != nullptr && server_->last_timed &&
        std::chrono::steady_clock::now() - *server_->last_timed < kClocksStayUp) {
        spec.warmup_ms = 0.0;
    }
    const InterleavedTiming timing = time_interleaved(timed, spec, seed_, *stream_);
    if (server_ != nullptr) {
        server_->last_timed = std::chrono::steady_clock::now();
    }
    TimingSamples samples;
    for (std::size_t i = 0; i < timing.rows.size(); ++i) {
        samples.per_round_ms.push_back(timing.rows[i].per_launch_ms);
        samples.launches_per_sample.push_back(timing.rows[i].launches_per_sample);
        std::vector<float> last(elements);
        outputs[i].download(last.data(), elements * sizeof(float));
        samples.final_outputs.push_back(std::move(last));
    }
    samples.rounds = timing.rounds;
    samples.seconds = timing.seconds;
    return samples;
}

void CudaDevice::reload(const std::vector<LoadedKernel*>& kernels) {
    for (LoadedKernel* loaded : kernels) {
        auto& kernel = static_cast<CudaKernel&>(*loaded);
        kernel.module = cuda::Module(kernel.image);
        kernel.function = kernel.module.function(kernel.lowered_name);
    }
}

HardwareCounts CudaDevice::count(const std::vector<TimedCase>& launches, const InputSpec& input,
                                 const std::vector<float>& input_words,
                                 const LaunchGeometry& geometry) {
    try {
        return count_launches(launches, input, input_words, geometry);
    } catch (const cuda::DriverError& error) {
        const DeviceLaunch failed = failed_launch(error);
        HardwareCounts counts;
        counts.reason = failed.message;
        counts.end = failed.end;
        counts.message = failed.message;
        return counts;
    }
}

HardwareCounts CudaDevice::count_launches(const std::vector<TimedCase>& launches,
                                          const InputSpec& input,
                                          const std::vector<float>& input_words,
                                          const LaunchGeometry& geometry) {
    HardwareCounts result;
    // A grade's own counter (opened beside the timing) is gone before anything is timed again.
    std::optional<counters::SharedMemoryCounter> own;
    counters::SharedMemoryCounter* const served = server_ != nullptr ? server_->counter() : nullptr;
    if (server_ != nullptr && served == nullptr) {
        result.reason = server_->why_not;
        return result;
    }
    // GRADER_TRACE_STEPS=1: where a grade's count goes, on standard error (for the benchmarks).
    const bool trace = std::getenv("GRADER_TRACE_STEPS") != nullptr;
    const auto now = [] { return std::chrono::steady_clock::now(); };
    const auto since = [&](std::chrono::steady_clock::time_point from) {
        return std::chrono::duration<double>(now() - from).count();
    };
    auto step = now();
    if (served == nullptr) {
        if (counter_libraries_.valid()) {
            counter_libraries_.get();
        }
        const double waited = since(step);
        step = now();
        if (own_counter_.valid()) {
            own.emplace(own_counter_.get());  // opened beside the timing
        } else {
            // It counts at once: a user without the counters learns it from that count.
            own.emplace(open_counter(context_->get(), info_.ordinal));
        }
        if (trace) {
            std::cerr << "grader: count: CUPTI's libraries loaded in " << libraries_seconds_
                      << " s (waited " << waited << " s for them), the counter ready in "
                      << since(step) << " s\n";
        }
        step = now();
    }
    counters::SharedMemoryCounter& counter = served != nullptr ? *served : *own;
    if (!counter.available()) {
        result.reason = counter.reason();
        return result;
    }
    const std::uint64_t elements = output_elements(exercise_, geometry);
    const CUdeviceptr in = input_buffer(input, input_words).get();
    const CUdeviceptr out = output_buffer(elements).get();
    std::vector<counters::SharedMemoryCounter::Launch> counted;
    for (const TimedCase& c : launches) {
        counted.push_back([this, c, in, out, elements, &geometry] {
            enqueue(*c.kernel, in, out, elements, c.stride, geometry, stream_->get());
        });
    }
    const auto counts = counter.count_each(counted);
    const std::string description = counter.description();
    if (trace) {  // the counter is not used again
        std::cerr << "grader: count: " << counted.size() << " launches counted in " << since(step)
                  << " s\n";
        step = now();
        own.reset();
        std::cerr << "grader: count: the counter closed in " << since(step) << " s\n";
    }
    if (!counts.counted()) {
        result.reason = counts.reason;
        return result;
    }
    result.counted = true;
    result.description = description;
    for (const auto& hardware : counts.value) {
        result.counts.push_back(access_counts(hardware));
    }
    return result;
}

counters::SharedMemoryCounter* GpuServerState::counter() {
    if (!opened && opening.valid()) {
        // The open took 0.17 s on the H200, begun when the server started. One that is not done
        // within kCounterOpenWait, or fails, leaves this count to the simulator's witness (the
        // next count waits again, where the open is still under way): never the grade's failure,
        // nor one the stage's deadline could blame on the student's launches.
        if (opening.wait_for(kCounterOpenWait) != std::future_status::ready) {
            why_not = "CUPTI's counter had not opened within " +
                      std::to_string(kCounterOpenWait.count()) +
                      " s of the count in this GPU's device server";
            return nullptr;
        }
        try {
            opened.emplace(opening.get());
        } catch (const std::exception& error) {
            why_not = std::string("CUPTI's counter failed to open in this GPU's device server: ") +
                      error.what();
            return nullptr;
        }
        // One profiling session for every count of the server's life: starting a session's
        // first pass took 0.15 s on an H200, a later pass in the same session 1.5 ms.
        opened->keep_session(true);
    }
    return opened ? &*opened : nullptr;
}

void serve_gpu(const Exercise& exercise, int ordinal, const std::filesystem::path& socket,
               const std::function<void()>& ready, const SessionEnded& ended) {
    // A server that starts again after a fault keeps the other grades waiting: it listens as soon
    // as its context is made (0.12 s), while CUPTI's libraries load (0.15 s) and its counter
    // opens (0.17 s) on a thread beside it and beside its first grade's requests, as a grade's
    // own counter opens beside its timing. The first count learns whether this user may count.
    // On the H200 (run 27) a server's four starts took 1.1 s to listening, where 1.7 s opening
    // first.
    std::future<void> libraries =
        std::async(std::launch::async, [] { counters::load_counter_libraries(); });
    const cuda::PrimaryContext context(ordinal);  // kept: every session retains this one
    GpuServerState state;
    state.opening = open_counter_beside(std::move(libraries), context.get(), ordinal);
    const int listening = listen_on(socket);
    ready();
    const std::string stopped = serve_device_sessions(
        listening, exercise,
        [&](std::uint64_t seed) {
            return std::make_unique<CudaDevice>(exercise, ordinal, seed, &state);
        },
        ended);
    ::close(listening);
    std::filesystem::remove(socket);
    // The context may be lost (a kernel faulted): no teardown of the profiler or the context on
    // it, the process's end frees both.
    std::cerr << "grader __device-server: stopped: " << stopped << std::endl;
    ::_exit(0);
}

}  // namespace grader
