#pragma once

// What a grade needs from the thing that runs kernels: load a compiled kernel, run it once with an
// input, time a set of launches against each other, count shared-memory traffic. The GPU
// (cuda_device.hpp) and the PTX simulator (sim_device.hpp) are the two devices; a device server's
// proxy (remote_device.hpp) stands for the GPU, and decorators add the local fallback
// (fallback_device.hpp) and the class's cache (class_cache.hpp). The grading algorithm
// (grade/pipeline.hpp) is written once over this interface (tests/test_pipeline.cpp grades
// through a scripted fake, directly and through a server), and choose_device() is the one place
// that picks a device.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "compile/compile.hpp"
#include "device/backend.hpp"
#include "exercise/exercise.hpp"
#include "model/finding.hpp"
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
inline bool operator==(const LaunchGeometry& a, const LaunchGeometry& b) {
    const auto same = [](const Dim3Spec& x, const Dim3Spec& y) {
        return x.x == y.x && x.y == y.y && x.z == y.z;
    };
    return same(a.grid, b.grid) && same(a.block, b.block);
}

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
    // What the device saw of shared memory (the simulator): races, which fail the output check
    // even where the values came out right, and the first unwritten read; also where the launch
    // stopped, whose stop they may explain.
    std::vector<Finding> findings;
    // The launch's own time on the device (between two events around it), where the device
    // measures one (a GPU): what a student's launch of the same case may take is measured
    // against the exercise's (grade/limits.hpp).
    std::optional<double> kernel_ms;
    // The warp instructions a block of an exercise's kernel issued, where the device counts them
    // (the simulator): the student's instruction budget is made of them (sim_student_budget).
    std::uint64_t block_instructions = 0;
};

// A kernel at a stride, as the grade asks the device to launch it.
struct LaunchCase {
    const LoadedKernel* kernel = nullptr;
    int stride = 0;
    // Whether anything reads what the launch writes: where nothing does, the device need not
    // copy its output back (Part 2's are 64 MB a launch).
    bool outputs_read = true;
    // time(): an exercise kernel's launch that no student launch is paired with, whose samples
    // a device serving a whole class may take from the class's first measurement
    // (device/class_cache.hpp). A device of one grade times it every time.
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
    // What each timed launch left in its own output buffer, where the device keeps it (the GPU)
    // and the launch's outputs are read: the timed launches are checked as the correctness runs
    // are. Empty for a reused launch, and for one whose outputs nothing reads.
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

// A grade's input words, made once (Part 2's are 64 MB) and shared by whoever reads them.
using InputWords = std::shared_ptr<const std::vector<float>>;

// One correctness run of the plan: a launch with one of the exercise's inputs, its output
// poisoned first.
struct PlannedRun {
    LaunchCase launch;
    const InputSpec* input = nullptr;
};

// Every launch of a grade after its kernels are loaded and its inputs given, in the order the
// grade asks for them (grade/plan.hpp makes it): the correctness runs, then (each after a reload
// of every kernel) the timing rounds and the hardware's count, both with the timing input.
struct LaunchPlan {
    LaunchGeometry geometry;
    std::vector<PlannedRun> runs;
    std::vector<LoadedKernel*> reloaded;  // what reload() gets before timing and before counting
    const InputSpec* timing_input = nullptr;
    std::vector<LaunchCase> timed;    // empty: nothing is timed
    std::vector<LaunchCase> counted;  // empty: nothing is counted after timing
};

// What a device does beyond load and run, as one value.
struct DeviceCapabilities {
    // The hardware is shared machine-wide (the GPU's lock): acquire() before the first load,
    // release() after the last launch.
    bool locks = false;
    // time() measures (a GPU), or models (the simulator, where the exercise lets its model stand
    // in for time); false: nothing is timed.
    bool times = false;
    // run() counts shared-memory traffic itself (the simulator): count() has nothing to add, and
    // no simulator witness is needed beside it.
    bool counts_as_it_runs = false;
};

// The calls a grade makes are plain functions, each over a protected hook that a device
// overrides (as nvbench's printer_base: print_x() calls do_print_x()), so that what every device
// owes around a call is written once (device.cpp): acquire() and release() in pairs, an input
// given before any launch with it, a kernel in every launch, as many timing rows and counts as
// launches asked for (tests/test_device.cpp). A decorator (FallbackDevice, ClassCache) overrides
// the hooks and calls the device it wraps through these same calls.
class Device {
public:
    virtual ~Device() = default;

    DeviceCapabilities capabilities() const { return do_capabilities(); }
    // The environment section: the device, its driver, the launch it chose.
    void describe(Environment& environment) { do_describe(environment); }
    // Where the grade's stage timings name the device's start ("context creation ...").
    double open_seconds() const { return do_open_seconds(); }

    // The machine-wide exclusive use of the hardware, where capabilities().locks: acquire()
    // before the first load, release() after the last launch, which unloads what is left on the
    // device first, the inputs too. acquire() returns the bus id of what was locked, for the
    // environment section, and throws DeviceUnavailable where the device cannot be had
    // (fallback_device.hpp); a second acquire() before release() is a std::logic_error.
    // release() ends what the last acquire() that returned began, and does nothing where none
    // did: held() says which.
    std::string acquire();
    void release();
    bool held() const { return held_; }

    // The kernel that fills shared memory with NaN before an input that asks for it, compiled
    // beside the exercise's kernels where the choice asked for it (DeviceChoice::shared_poison).
    void set_shared_poison(const CompiledKernel& poison) { do_set_shared_poison(poison); }

    LoadResult load(const KernelSpec& spec, const CompiledKernel& compiled) {
        return do_load(spec, compiled);
    }
    // The launch every kernel of the grade gets, sized once (from the oracle, where the
    // occupancy decides it) so that outputs compare element by element.
    LaunchGeometry geometry(const LoadedKernel& sizing_kernel) {
        return do_geometry(sizing_kernel);
    }

    // An input's words, given once before any launch with `input`: later calls name the input.
    void put_input(const InputSpec& input, InputWords words);

    // The grade's launches from here on (grade/plan.hpp): the calls of run(), reload(), time()
    // and count() that follow are the plan's, in its order, until the grade stops. A device may
    // start each before it is asked for (a device server's does); elsewhere nothing happens.
    void follow(const LaunchPlan& plan);

    // Runs the launch once with `input`, its output poisoned first. Never throws for what the
    // kernel did: a fault, a hang the device stops or a refused launch is the launch's `end`.
    DeviceLaunch run(const LaunchCase& launch, const InputSpec& input,
                     const LaunchGeometry& geometry);

    // Fresh module state (device globals) for every loaded kernel, so that a kernel that counts
    // its own launches cannot tell the phases apart: correctness runs, timing, counting.
    void reload(const std::vector<LoadedKernel*>& kernels);

    // Times the launches against each other with `input`, where capabilities().times. Never
    // throws for what a kernel did: a fault or a refused launch is the samples' `end`.
    TimingSamples time(const std::vector<LaunchCase>& launches, const InputSpec& input,
                       const LaunchGeometry& geometry);

    // The hardware's own count of each launch's shared-memory traffic, after timing (counting
    // replays the launches with a profiler attached). A device that counts as it runs
    // (capabilities().counts_as_it_runs: the simulator) has none to add. Never throws for what a
    // kernel did: a fault is the counts' `end`.
    HardwareCounts count(const std::vector<LaunchCase>& launches, const InputSpec& input,
                         const LaunchGeometry& geometry);

protected:
    // What each device does for the call of the same name, after its checks. Those with a body
    // here are what a device may leave out: it neither locks, nor opens slowly, nor poisons
    // shared memory, nor runs ahead of the plan, nor keeps module state, nor counts.
    virtual DeviceCapabilities do_capabilities() const = 0;
    virtual void do_describe(Environment& environment) = 0;
    virtual double do_open_seconds() const { return 0.0; }
    virtual std::string do_acquire() { return {}; }
    virtual void do_release() {}
    virtual void do_set_shared_poison(const CompiledKernel&) {}
    virtual LoadResult do_load(const KernelSpec& spec, const CompiledKernel& compiled) = 0;
    virtual LaunchGeometry do_geometry(const LoadedKernel& sizing_kernel) = 0;
    virtual void do_put_input(const InputSpec& input, InputWords words) = 0;
    virtual void do_follow(const LaunchPlan&) {}
    virtual DeviceLaunch do_run(const LaunchCase& launch, const InputSpec& input,
                                const LaunchGeometry& geometry) = 0;
    virtual void do_reload(const std::vector<LoadedKernel*>&) {}
    virtual TimingSamples do_time(const std::vector<LaunchCase>& launches, const InputSpec& input,
                                  const LaunchGeometry& geometry) = 0;
    virtual HardwareCounts do_count(const std::vector<LaunchCase>&, const InputSpec&,
                                    const LaunchGeometry&);

private:
    // Throws where a launch with `input` names no kernel or comes before the input's words.
    void check_launch(const LaunchCase& launch, const InputSpec& input) const;

    bool held_ = false;            // acquire() returned, and release() has not come yet
    std::set<std::string> given_;  // the ids of the inputs put_input() gave
};

// acquire() where the device cannot be had (a device server that does not answer): the grade may
// open another (FallbackDevice), and says why with the message.
class DeviceUnavailable : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The device a grade runs on, on the backend resolve_backend() gave, and how to open it.
struct DeviceChoice {
    Backend backend = Backend::sim;
    std::string arch;            // what to compile for: the GPU's, or the exercise's default
    std::string no_gpu_reason;   // "cuda" asked for and no GPU answered: why (open is then empty)
    bool shared_poison = false;  // the device wants the shared-memory poison kernel compiled
    // Opens the device (a GPU's context takes a while: called beside the compile).
    std::function<std::unique_ptr<Device>()> open;
};

// Where a device says how long its steps took (GRADER_TRACE_STEPS=1, for the benchmarks'
// timelines): the command line prints them; the library never does. Empty: nowhere.
using StepTrace = std::function<void(const std::string& step)>;

// `requested` is "auto", "cuda" or "sim". Where `device_server` names the socket of the GPU's
// device server (device_server.hpp, started by `grader batch`), a GPU grade goes through it, or,
// where no server answers, opens the GPU itself (fallback_device.hpp). The simulator runs blocks
// on up to `sim_threads` threads (sim::LaunchOptions::threads).
DeviceChoice choose_device(const Exercise& exercise, const std::string& requested, int ordinal,
                           std::uint64_t seed, const std::filesystem::path& device_server = {},
                           const StepTrace& trace = {}, unsigned sim_threads = 1);

// The kernel's parameters in the exercise's order, assembled from their roles: 8 bytes each, the
// low `size_bytes` of them meaningful (little-endian).
std::vector<std::vector<std::byte>> kernel_arguments(const Exercise& exercise,
                                                     std::uint64_t input_address,
                                                     std::uint64_t output_address,
                                                     std::uint64_t output_elements, int stride);

// Output elements of a launch: one per thread, or the exercise's matrix.
std::uint64_t output_elements(const Exercise& exercise, const LaunchGeometry& geometry);

}  // namespace grader
