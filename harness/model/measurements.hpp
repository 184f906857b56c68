#pragma once

// What grading observed, as plain values: produced by the worker process (compile, load, run,
// time), consumed by the checks. Nothing here decides pass or fail.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace grader {

// One #include the vetting refused, or another problem found in the source before NVRTC.
struct SourceProblem {
    int line = 0;
    int column = 0;
    std::string message;
};

struct CompileOutcome {
    bool attempted = false;
    bool ok = false;
    std::string arch;                  // e.g. "sm_90"
    std::vector<std::string> options;  // exactly what NVRTC was given
    std::vector<SourceProblem> vetting_problems;
    std::string log;                   // NVRTC's log, host paths removed
    double seconds = 0.0;
    std::string lowered_name;          // the mangled entry name
    std::string signature;             // demangled, e.g. "probeSharedStride(float const*, ...)"
    std::vector<std::size_t> param_sizes;
    std::string param_source;          // "ptx" or "driver" (cuFuncGetParamInfo)
    int static_shared_bytes = -1;      // from the function's attributes, -1 where not loaded
    int registers = -1;
    std::string abi_problem;           // empty when the signature matches the exercise's ABI
    // Bytes of NVRTC's log left out of `log`, which is bounded (64 KiB) and then ends with a line
    // saying so; 0 when nothing was cut. Added for issue 7 (a warning flood made a 1.6 MB log).
    std::size_t log_cut_bytes = 0;
};

// The first thread that held the wrong value, and how many did.
struct AccumulatorResult {
    bool ran = false;
    bool ok = false;
    double expected = 0.0;             // the same for every thread in the all-ones check
    std::uint64_t threads = 0;
    std::uint64_t bad_threads = 0;
    std::optional<std::uint64_t> first_bad_thread;  // global index
    std::uint32_t first_bad_block = 0;
    std::uint32_t first_bad_thread_in_block = 0;
    double first_bad_value = 0.0;      // may be NaN (poison never overwritten)
    double first_bad_expected = 0.0;
};

struct TimingStats {
    double median_ms = 0.0;            // one launch, from samples of back-to-back launches
    double min_ms = 0.0;
    double max_ms = 0.0;
    double spread = 0.0;               // robust relative spread: 1.4826 * MAD / median
    int samples = 0;
    int launches_per_sample = 1;
    bool modeled = false;              // a simulator's modeled cost, not a time
};

// A kernel at one stride: its correctness runs and its timing.
struct KernelRun {
    std::string kernel;                // "student" or "reference"
    int stride = 0;
    AccumulatorResult ones;            // tile of tile_value: every thread holds the same sum
    AccumulatorResult hidden;          // tile of random small integers, fresh per grade
    std::optional<TimingStats> timing;
    std::optional<double> ratio;       // median over rounds of time(stride) / time(stride 1)
    std::optional<double> ratio_min;
    std::optional<double> ratio_max;
    std::optional<double> counted_degree;  // wavefronts per request, where something counted them
    // Something the checks add to a failing accumulator check's details: on the simulator, the
    // first shared-memory word read before it was written (line, thread, word).
    std::string note;
};

struct Environment {
    std::string backend;               // "cuda" or "sim"
    bool gpu_available = false;
    std::string device_name;
    std::string compute_capability;    // "9.0"
    int sm_count = 0;
    std::string driver_version;        // "13.0"
    std::string nvrtc_version;         // "13.0"
    std::string grader_version;
    std::uint32_t grid_blocks = 0;
    std::uint32_t block_size = 0;
    int blocks_per_sm = 0;
    // How the student's compile was confined by the kernel, e.g. "Landlock ABI 7: the compiler
    // could open no file"; says so where the kernel offers no confinement.
    std::string confinement;
    // What the environment section must say once: a fallback taken, a permission missing.
    std::vector<std::string> notes;
};

// Why grading stopped early, where it did.
struct Interruption {
    std::string kind;     // "fault", "timeout", "memory", "crash", "no_gpu", "unsupported", ...
    std::string stage;    // e.g. "run student stride 8"
    std::string message;
    bool students_fault = true;  // false: the machine or the harness is at fault (ungradable)
};

struct Measurements {
    Environment environment;
    CompileOutcome student;
    CompileOutcome reference;
    std::vector<KernelRun> runs;
    std::vector<int> unnamed_strides;  // drawn for this grade
    std::uint64_t seed = 0;
    int timing_rounds = 0;
    double timing_seconds = 0.0;
    std::optional<Interruption> interruption;
    std::string worker_output;         // what the worker printed (kernel printf), bounded
    bool worker_output_truncated = false;
    double wall_seconds = 0.0;
    // Wall time of each stage as the grader saw it ("compile", "run student stride 8", "time",
    // "wait for device", ...), and the context creation the worker timed beside the compile.
    std::map<std::string, double> stage_seconds;
    double context_seconds = 0.0;

    const KernelRun* run(const std::string& kernel, int stride) const;
    KernelRun* run(const std::string& kernel, int stride);
};

}  // namespace grader
