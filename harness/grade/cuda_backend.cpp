#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <utility>
#include <array>
#include <chrono>
#include <cstring>
#include <future>
#include <optional>

#include "checks/checks.hpp"
#include "common/version.hpp"
#include "compile/compile.hpp"
#include "cuda/driver_api.hpp"
#include "cuda/resources.hpp"
#include "grade/probe_sources.hpp"
#include "grade/worker.hpp"
#include "measure/accumulator.hpp"
#include "measure/interleaved_timing.hpp"
#include "model/bank_model.hpp"

namespace grader {
namespace {

constexpr unsigned int kOutputPoison = 0x7fc0dead;  // a quiet NaN: "never written"

// A loaded probe kernel and what it needs to be launched through the exercise's ABI.
struct LoadedProbe {
    std::string kernel;  // "student" or "reference"
    cuda::Module module;
    CUfunction function = nullptr;
};

// Kernel parameters assembled from the exercise's roles, so another exercise with another
// parameter order needs no new C++.
class ProbeArguments {
public:
    ProbeArguments(const Exercise& exercise, CUdeviceptr input, CUdeviceptr output,
                   std::uint64_t count, int stride) {
        storage_.resize(exercise.parameters.size());
        for (std::size_t i = 0; i < exercise.parameters.size(); ++i) {
            const auto& parameter = exercise.parameters[i];
            auto& slot = storage_[i];
            switch (parameter.role) {
                case ParameterRole::input: store(slot, static_cast<std::uint64_t>(input), 8); break;
                case ParameterRole::output: store(slot, static_cast<std::uint64_t>(output), 8); break;
                case ParameterRole::count: store(slot, count, parameter.size_bytes); break;
                case ParameterRole::stride:
                    store(slot, static_cast<std::uint64_t>(static_cast<std::int64_t>(stride)),
                          parameter.size_bytes);
                    break;
            }
        }
        for (auto& slot : storage_) {
            pointers_.push_back(slot.data());
        }
    }
    void** get() { return pointers_.data(); }

private:
    static void store(std::array<unsigned char, 8>& slot, std::uint64_t value, std::size_t bytes) {
        // Little-endian: the low `bytes` bytes of value are the parameter.
        std::memcpy(slot.data(), &value, std::min<std::size_t>(bytes, 8));
    }
    std::vector<std::array<unsigned char, 8>> storage_;
    std::vector<void*> pointers_;
};

struct LaunchShape {
    unsigned int grid = 0;
    unsigned int block = 0;
    std::uint64_t threads() const { return std::uint64_t{grid} * block; }
};

void launch_probe(const Exercise& exercise, CUfunction function, const LaunchShape& shape,
                  CUdeviceptr input, CUdeviceptr output, int stride, CUstream stream) {
    ProbeArguments arguments(exercise, input, output, shape.threads(), stride);
    GRADER_DRIVER_CALL(cuLaunchKernel(function, shape.grid, 1, 1, shape.block, 1, 1, 0, stream,
                                      arguments.get(), nullptr));
}

std::string version_text(int version) {
    return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

// Reads the parameter sizes the driver reports for a loaded kernel.
std::vector<std::size_t> driver_param_sizes(CUfunction function) {
    std::vector<std::size_t> sizes;
    for (std::size_t index = 0; index < 256; ++index) {
        std::size_t offset = 0;
        std::size_t size = 0;
        if (cuda::driver().cuFuncGetParamInfo(function, index, &offset, &size) != CUDA_SUCCESS) {
            break;  // CUDA_ERROR_INVALID_VALUE past the last parameter
        }
        sizes.push_back(size);
    }
    return sizes;
}

int function_attribute(CUfunction function, CUfunction_attribute attribute) {
    int value = -1;
    cuda::driver().cuFuncGetAttribute(&value, attribute, function);
    return value;
}

// An exclusive flock() on a file, held until destruction or the process's end.
class DeviceLock {
public:
    DeviceLock() = default;
    explicit DeviceLock(const std::filesystem::path& path)
        : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
        if (fd_ < 0) {
            throw std::runtime_error("cannot open the device lock " + path.string());
        }
        while (::flock(fd_, LOCK_EX) != 0) {
            if (errno != EINTR) {
                throw std::runtime_error("cannot lock " + path.string());
            }
        }
    }
    ~DeviceLock() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    DeviceLock(DeviceLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    DeviceLock& operator=(DeviceLock&& other) noexcept {
        if (this != &other) {
            if (fd_ >= 0) {
                ::close(fd_);
            }
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
    DeviceLock(const DeviceLock&) = delete;
    DeviceLock& operator=(const DeviceLock&) = delete;

private:
    int fd_ = -1;
};

std::string stage_name(const std::string& kernel, int stride) {
    return "run " + kernel + " stride " + std::to_string(stride);
}

}  // namespace

void run_cuda_backend(const Exercise& exercise, const WorkerOptions& options,
                      const Submission& submission, Measurements& m, ProgressSink& sink) {
    (void)submission;
    const double run_limit =
        options.run_seconds_override > 0 ? options.run_seconds_override : exercise.limits.run_seconds;

    std::optional<cuda::DeviceInfo> device;
    std::string no_gpu_reason;
    try {
        device = cuda::query_device(options.device);
    } catch (const cuda::DriverUnavailable& error) {
        no_gpu_reason = error.what();
    }
    const std::string arch = device ? device->arch() : exercise.default_arch;

    sink.stage("compile", exercise.limits.compile_seconds);
    ProbeSources sources = load_probe_sources(
        exercise, options.reference_only ? std::filesystem::path{} : options.submission_dir, arch);
    // The compiles run beside the context creation: both take a good part of a second.
    auto reference_future =
        std::async(std::launch::async, [&] { return compile_kernel(sources.reference); });
    std::future<CompiledKernel> poison_future;
    if (device && sources.shared_poison) {
        poison_future =
            std::async(std::launch::async, [&] { return compile_kernel(*sources.shared_poison); });
    }
    std::future<CompiledKernel> student_future;
    if (!options.reference_only && sources.student) {
        student_future =
            std::async(std::launch::async, [&] { return compile_kernel(*sources.student); });
    }
    std::optional<cuda::PrimaryContext> context;
    if (device) {
        const auto context_began = std::chrono::steady_clock::now();
        context.emplace(options.device);
        m.context_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - context_began).count();
    }
    const CompiledKernel reference = reference_future.get();
    m.reference = reference.outcome;
    CompiledKernel student;
    if (!options.reference_only) {
        student = finish_student_compile(student_future, sources, exercise);
        m.student = student.outcome;
    }
    std::optional<CompiledKernel> poison;
    if (poison_future.valid()) {
        poison = poison_future.get();
    }

    if (!device) {
        m.environment.gpu_available = false;
        m.interruption = Interruption{
            "no_gpu", "compile",
            "no GPU: " + no_gpu_reason +
                ". A GPU is needed for timing; the answers file, the include vetting, the compile "
                "for " + arch + " and the signature check ran without one.",
            false};
        sink.measurements(m);
        return;
    }
    m.environment.gpu_available = true;
    m.environment.device_name = device->name;
    m.environment.compute_capability =
        std::to_string(device->major) + "." + std::to_string(device->minor);
    m.environment.sm_count = device->sm_count;
    m.environment.driver_version = version_text(device->driver_version);
    if (!reference.outcome.ok) {
        sink.measurements(m);
        return;  // the checks report the machine as unfit
    }

    DeviceLock device_lock;
    if (!options.device_lock.empty()) {
        sink.stage("wait for device", 7 * 24 * 3600.0);
        device_lock = DeviceLock(options.device_lock);
    }
    sink.stage("load", run_limit);
    std::vector<LoadedProbe> probes;
    {
        LoadedProbe probe{"reference", cuda::Module(reference.cubin), nullptr};
        probe.function = probe.module.function(reference.outcome.lowered_name);
        probes.push_back(std::move(probe));
    }
    const bool student_loadable = !options.reference_only && student.outcome.ok &&
                                  student.outcome.abi_problem.empty();
    if (student_loadable) {
        try {
            LoadedProbe probe{"student", cuda::Module(student.cubin), nullptr};
            probe.function = probe.module.function(student.outcome.lowered_name);
            m.student.param_sizes = driver_param_sizes(probe.function);
            m.student.param_source = "driver";
            m.student.static_shared_bytes =
                function_attribute(probe.function, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
            m.student.registers = function_attribute(probe.function, CU_FUNC_ATTRIBUTE_NUM_REGS);
            m.student.abi_problem = abi_problem(m.student.param_sizes, exercise.parameters);
            if (m.student.abi_problem.empty()) {
                probes.push_back(std::move(probe));
            }
        } catch (const cuda::DriverError& error) {
            m.student.abi_problem = "the compiled kernel could not be loaded on " + device->name +
                                    ": " + cuda::describe(error.status());
        }
    }

    // Fill the GPU: as many blocks per SM as the occupancy API allows for the reference, on
    // every SM, so each launch is several waves of real work and launch overhead is noise.
    int blocks_per_sm = 0;
    GRADER_DRIVER_CALL(cuOccupancyMaxActiveBlocksPerMultiprocessor(
        &blocks_per_sm, probes.front().function, static_cast<int>(exercise.block_size), 0));
    blocks_per_sm = std::max(blocks_per_sm, 1);
    const LaunchShape shape{static_cast<unsigned int>(blocks_per_sm * device->sm_count),
                            exercise.block_size};
    m.environment.blocks_per_sm = blocks_per_sm;
    m.environment.grid_blocks = shape.grid;
    m.environment.block_size = shape.block;
    sink.measurements(m);

    cuda::Stream stream;
    const std::vector<float> ones(exercise.tile_words, exercise.tile_value);
    const std::vector<float> hidden = hidden_tile(exercise.tile_words, exercise.hidden_max_value,
                                                  m.seed);
    cuda::DeviceBuffer ones_input(ones.size() * sizeof(float));
    ones_input.upload(ones.data(), ones.size() * sizeof(float));
    cuda::DeviceBuffer hidden_input(hidden.size() * sizeof(float));
    hidden_input.upload(hidden.data(), hidden.size() * sizeof(float));
    // A synchronous copy from pageable memory may return before its DMA lands, on the legacy
    // stream that ours does not wait for: finish the uploads before any launch.
    GRADER_DRIVER_CALL(cuCtxSynchronize());
    cuda::DeviceBuffer output(shape.threads() * sizeof(float));
    std::vector<float> host_output(shape.threads());

    std::optional<cuda::Module> poison_module;
    CUfunction poison_function = nullptr;
    if (poison && poison->outcome.ok) {
        poison_module.emplace(poison->cubin);
        poison_function = poison_module->function(poison->outcome.lowered_name);
        GRADER_DRIVER_CALL(cuFuncSetAttribute(poison_function,
                                              CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                              device->max_shared_per_block_optin));
    }

    const auto strides_of = [&](const std::string& kernel) {
        return kernel == "student" ? student_strides_to_run(exercise, m.unnamed_strides)
                                   : reference_strides_to_run(exercise, m.unnamed_strides);
    };

    const auto run_once = [&](CUfunction function, const cuda::DeviceBuffer& input, int stride,
                              const std::vector<double>& expected) {
        output.fill_words(kOutputPoison, stream.get());
        launch_probe(exercise, function, shape, input.get(), output.get(), stride, stream.get());
        stream.synchronize();
        output.download(host_output.data(), host_output.size() * sizeof(float));
        return compare_outputs(host_output, expected, exercise.block_size);
    };

    // Correctness first, kernel by kernel and stride by stride, each its own stage so a hang or a
    // fault is reported with the stride it happened at.
    std::string current_stage;
    std::string current_kernel;
    try {
        for (const auto& probe : probes) {
            current_kernel = probe.kernel;
            for (const int stride : strides_of(probe.kernel)) {
                current_stage = stage_name(probe.kernel, stride);
                sink.stage(current_stage, run_limit);
                KernelRun run;
                run.kernel = probe.kernel;
                run.stride = stride;
                run.ones = run_once(probe.function, ones_input, stride,
                                    expected_sums(ones, exercise.block_size, stride,
                                                  exercise.reads_per_thread));
                if (poison_function != nullptr) {
                    const unsigned int words =
                        static_cast<unsigned int>(device->max_shared_per_block_optin / 4);
                    void* arguments[] = {const_cast<unsigned int*>(&words)};
                    GRADER_DRIVER_CALL(cuLaunchKernel(
                        poison_function, static_cast<unsigned int>(device->sm_count * 2), 1, 1,
                        1024, 1, 1, static_cast<unsigned int>(device->max_shared_per_block_optin),
                        stream.get(), arguments, nullptr));
                }
                run.hidden = run_once(probe.function, hidden_input, stride,
                                      expected_sums(hidden, exercise.block_size, stride,
                                                    exercise.reads_per_thread));
                m.runs.push_back(run);
                sink.measurements(m);
            }
        }

        current_stage = "time";
        current_kernel = probes.size() > 1 ? "student" : "reference";
        sink.stage(current_stage, run_limit);
        std::vector<TimedLaunch> launches;
        std::vector<KernelRun*> rows;
        for (const auto& probe : probes) {
            for (const int stride : strides_of(probe.kernel)) {
                const CUfunction function = probe.function;
                launches.push_back({probe.kernel + " stride " + std::to_string(stride),
                                    [&, function, stride](CUstream s) {
                                        launch_probe(exercise, function, shape, ones_input.get(),
                                                     output.get(), stride, s);
                                    }});
                rows.push_back(m.run(probe.kernel, stride));
            }
        }
        const InterleavedTiming timing = time_interleaved(launches, exercise.timing, m.seed, stream);
        for (std::size_t i = 0; i < rows.size(); ++i) {
            rows[i]->timing = summarize(timing.rows[i].per_launch_ms,
                                        timing.rows[i].launches_per_sample);
        }
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const KernelRun* base = m.run(rows[i]->kernel, 1);
            const auto base_index = static_cast<std::size_t>(
                std::find(rows.begin(), rows.end(), base) - rows.begin());
            if (base_index >= rows.size()) {
                continue;
            }
            if (const auto ratio = paired_ratio(timing.rows[i].per_launch_ms,
                                                timing.rows[base_index].per_launch_ms)) {
                rows[i]->ratio = ratio->median;
                rows[i]->ratio_min = ratio->min;
                rows[i]->ratio_max = ratio->max;
            }
        }
        m.timing_rounds = timing.rounds;
        m.timing_seconds = timing.seconds;
        sink.measurements(m);
    } catch (const cuda::DriverError& error) {
        // Errors surface at the next synchronisation; inside a stage that runs the student's
        // kernel they are its fault, whatever the status (a launch the ABI allows but its
        // resources do not is the student's too).
        const bool students = current_kernel == "student";
        m.interruption = Interruption{
            cuda::is_kernel_fault(error.status()) ? "fault" : "launch",
            current_stage,
            exercise.kernel_name + " (" + current_kernel + ") failed at " +
                (current_stage == "time" ? std::string("the timing rounds")
                                         : "stride " + current_stage.substr(
                                                           current_stage.rfind(' ') + 1)) +
                ": " + cuda::describe(error.status()),
            students};
        sink.measurements(m);
    }
}

}  // namespace grader
