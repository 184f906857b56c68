#pragma once

// What a grade needs from the thing that runs kernels: load a compiled kernel, run it once with an
// input, time a set of launches against each other, count shared-memory traffic. The GPU and the
// PTX simulator are the two implementations; the grading algorithm (grade/pipeline.hpp) is
// written once over this interface, and choose_device() is the one place that picks one.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compile/compile.hpp"
#include "exercise/exercise.hpp"
#include "model/measurements.hpp"

namespace grader {

// A kernel loaded on a device, with what the device says about it.
class LoadedKernel {
public:
    virtual ~LoadedKernel() = default;
    std::string id;                        // the KernelSpec id
    std::vector<std::size_t> param_sizes;  // as the device reports them; empty where it cannot
    std::string param_source;              // "driver", or "ptx" where the device read the PTX
    int static_shared_bytes = -1;
    int registers = -1;
};

struct LoadResult {
    std::unique_ptr<LoadedKernel> kernel;  // null where the device refused the image
    std::string problem;                   // then, why: "too many resources requested ..."
    bool unsupported = false;              // the device cannot run it: not the kernel's fault
};

struct LaunchGeometry {
    Dim3Spec grid;
    Dim3Spec block;
    std::uint64_t threads() const { return grid.count() * block.count(); }
};

// How one launch ended, as the checks and the fault table need it: never an exception for what
// the kernel did.
struct DeviceLaunch {
    enum class End {
        completed,
        fault,        // out of bounds, misaligned, trap, an illegal instruction
        timeout,      // the simulator's instruction budget ran out
        refused,      // the launch asked for more than a GPU gives (resources, memory)
        unsupported,  // the simulator cannot run an instruction the kernel uses
    };
    End end = End::completed;
    std::string message;         // why it did not complete, naming where
    std::vector<float> outputs;  // the output buffer after the launch
    // Where the device ran only some blocks of the grid (the simulator, for the exercise's
    // kernels), how many: the outputs hold what they wrote and the poison elsewhere. 0: every
    // block ran.
    std::uint64_t blocks_run = 0;
    std::optional<SharedAccessCounts> counts;  // where the device counts as it runs
    std::vector<std::string> notes;            // what the device saw: unwritten reads
    // Shared-memory races the device saw, one sentence each (line, word, lanes), bounded: they
    // fail the output check even where the values came out right.
    std::vector<std::string> races;
    // The launch's own time on the device (between two events around it), where the device
    // measures one (a GPU): what a student's launch of the same case may take is measured
    // against the exercise's (stage.hpp, student_run_limit).
    std::optional<double> kernel_ms;
};

// One launch to time: a kernel at a stride, with the timing input.
struct TimedCase {
    const LoadedKernel* kernel = nullptr;
    int stride = 0;
    // An exercise kernel's launch that no student launch is paired with: where the device serves
    // a whole class (device/device_server.hpp), its samples may come from the class's first
    // measurement instead of being taken again. A device of one grade times it every time.
    bool reusable = false;
};

// Samples per launch, in rounds: per_round_ms[i][r] is launch i's time in round r, so ratios can
// be paired by round.
struct TimingSamples {
    std::vector<std::vector<double>> per_round_ms;
    std::vector<int> launches_per_sample;
    int rounds = 0;
    double seconds = 0.0;
    bool modeled = false;  // the simulator's modeled cost, not a time
    // For the environment section: where some launches' samples were reused, and from when.
    std::vector<std::string> notes;
    // What each timed launch left in its own output buffer, where the device keeps it (the GPU):
    // the timed launches are checked as the correctness runs are. Empty for a reused launch.
    std::vector<std::vector<float>> final_outputs;
    // How the rounds ended, as run() reports a launch: a kernel that faulted or a launch the
    // device refused stops them, with the message naming why.
    DeviceLaunch::End end = DeviceLaunch::End::completed;
    std::string message;
};

// The hardware's count of each launch's shared-memory traffic, or why there is none.
struct HardwareCounts {
    bool counted = false;
    std::string reason;       // why not, for the environment section
    std::string description;  // what counted, e.g. "CUPTI ... (chip GH100, 1 replay pass)"
    std::vector<SharedAccessCounts> counts;  // one per launch, when counted
    // How the counted launches ended, as run() reports a launch (a fault stops the counting).
    DeviceLaunch::End end = DeviceLaunch::End::completed;
    std::string message;
};

class Device {
public:
    virtual ~Device() = default;

    // The environment section: the device, its driver, the launch it chose.
    virtual void describe(Environment& environment) const = 0;

    virtual LoadResult load(const KernelSpec& spec, const CompiledKernel& compiled) = 0;
    // The launch every kernel of the grade gets, sized once (from the oracle, where the
    // occupancy decides it) so that outputs compare element by element.
    virtual LaunchGeometry geometry(const LoadedKernel& sizing_kernel) = 0;

    // Runs `kernel` once with `input` at `stride`, its output poisoned first. `budget_of` is the
    // kernel the simulator measures the student's instruction budget against (may be null).
    virtual DeviceLaunch run(const LoadedKernel& kernel, const InputSpec& input,
                             const std::vector<float>& input_words, int stride,
                             const LaunchGeometry& geometry) = 0;
    // A run() asked for ahead, which the device may start before it is asked for (a device
    // server runs it while the grade reads the run before). Each queued call is then made with
    // the same arguments, in the order queued; any other call first waits out what was queued
    // and drops it. Where the device starts nothing early, nothing happens.
    virtual void queue_run(const LoadedKernel& /*kernel*/, const InputSpec& /*input*/,
                           const std::vector<float>& /*input_words*/, int /*stride*/,
                           const LaunchGeometry& /*geometry*/) {}

    // Whether time() measures (a GPU) or models (the simulator: only where the exercise lets its
    // model stand in for time).
    virtual bool times() const = 0;
    // Times the launches against each other with the timing input. Never throws for what a
    // kernel did: a fault or a refused launch is the samples' `end`.
    virtual TimingSamples time(const std::vector<TimedCase>& launches, const InputSpec& input,
                               const std::vector<float>& input_words,
                               const LaunchGeometry& geometry) = 0;

    // Fresh module state (device globals) for every loaded kernel, so that a kernel that counts
    // its own launches cannot tell the phases apart: correctness runs, timing, counting.
    virtual void reload(const std::vector<LoadedKernel*>& kernels) { (void)kernels; }

    // reload(kernels) and then count(...) asked for ahead, as queue_run() asks for a run: a
    // device server starts them while the grade reads the timing.
    virtual void queue_count(const std::vector<LoadedKernel*>& /*kernels*/,
                             const std::vector<TimedCase>& /*launches*/, const InputSpec& /*input*/,
                             const std::vector<float>& /*input_words*/,
                             const LaunchGeometry& /*geometry*/) {}

    // The hardware's own count of each launch's shared-memory traffic, after timing (counting
    // replays the launches with a profiler attached). The simulator counts as it runs: none here.
    // Never throws for what a kernel did: a fault is the counts' `end`.
    virtual HardwareCounts count(const std::vector<TimedCase>& launches, const InputSpec& input,
                                 const std::vector<float>& input_words,
                                 const LaunchGeometry& geometry) {
        (void)launches;
        (void)input;
        (void)input_words;
        (void)geometry;
        HardwareCounts none;
        none.reason = "the simulator counts as it runs";
        return none;
    }

    // The machine-wide exclusive use of the hardware (the GPU's lock, shared by every grade on
    // the machine): acquire() before the first load, release() after the last launch, which
    // unloads what is left on the device first. The simulator shares nothing: no lock.
    // `bus_id` names what was locked, for the environment section ("" where nothing was).
    virtual bool locks() const { return false; }
    virtual std::string acquire() { return {}; }
    virtual void release() {}
    virtual bool held() const { return false; }

    // The kernel that fills shared memory with NaN before an input that asks for it, compiled
    // beside the exercise's kernels where the choice asked for it (DeviceChoice::shared_poison).
    virtual void set_shared_poison(const CompiledKernel& poison) { (void)poison; }

    // Whether run() counts shared-memory traffic itself (the simulator): then count() has nothing
    // to add and no simulator witness is needed beside it.
    virtual bool counts_as_it_runs() const { return false; }

    // Where the grade's stage timings name the device's start ("context creation ...").
    virtual double open_seconds() const { return 0.0; }
};

// The backend a grade runs on, chosen in one place: "cuda" where a GPU answers (or was asked
// for), "sim" otherwise; and how to open it.
struct DeviceChoice {
    std::string backend;         // "cuda" or "sim"
    std::string arch;            // what to compile for: the GPU's, or the exercise's default
    std::string no_gpu_reason;   // "cuda" asked for and no GPU answered: why (open is then empty)
    bool shared_poison = false;  // the device wants the shared-memory poison kernel compiled
    // Opens the device (a GPU's context takes a while: called beside the compile).
    std::function<std::unique_ptr<Device>()> open;
};

// `requested` is "auto", "cuda" or "sim". Where `device_server` names the socket of the GPU's
// device server (device_server.hpp, started by `grader batch`), a GPU grade goes through it.
DeviceChoice choose_device(const Exercise& exercise, const std::string& requested, int ordinal,
                           std::uint64_t seed, const std::filesystem::path& device_server = {});

// The kernel's parameters in the exercise's order, assembled from their roles: 8 bytes each, the
// low `size_bytes` of them meaningful (little-endian).
std::vector<std::vector<std::byte>> kernel_arguments(const Exercise& exercise,
                                                     std::uint64_t input_address,
                                                     std::uint64_t output_address,
                                                     std::uint64_t output_elements, int stride);

// Output elements of a launch: one per thread, or the exercise's matrix.
std::uint64_t output_elements(const Exercise& exercise, const LaunchGeometry& geometry);

}  // namespace grader
