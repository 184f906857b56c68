#pragma once

// What grading observed, as plain values: produced by the worker process (compile, load, run,
// time), consumed by the checks. Nothing here decides pass or fail.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/finding.hpp"
#include "model/observations.hpp"

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
    std::string log;  // NVRTC's log, host paths removed
    double seconds = 0.0;
    std::string lowered_name;  // the mangled entry name
    std::string signature;     // demangled, e.g. "probeSharedStride(float const*, ...)"
    std::vector<std::size_t> param_sizes;
    std::string param_source;      // "ptx" or "driver" (cuFuncGetParamInfo)
    int static_shared_bytes = -1;  // from the function's attributes, -1 where not loaded
    int registers = -1;
    std::string abi_problem;  // empty when the signature matches the exercise's ABI
    // Bytes of NVRTC's log left out of `log`, which is bounded (64 KiB) and then ends with a line
    // saying so; 0 when nothing was cut. Added for issue 7 (a warning flood made a 1.6 MB log).
    std::size_t log_cut_bytes = 0;
    // Reads of the GPU's clocks (%clock, %clock64, %globaltimer) and nanosleep in the kernel's
    // PTX, each with where: a kernel that reads them can pace its own timings.
    std::vector<std::string> clock_reads;
    // The kernel file was not in the submission folder (log says which, and what to hand in).
    bool source_missing = false;
};

// What a device counted of one launch's memory traffic: shared memory's requests and wavefronts,
// and global memory's requests and 32-byte sectors beside them (the transpose's lesson is about
// coalescing too).
struct SharedAccessCounts {
    std::uint64_t load_requests = 0;  // warp-level shared load instructions
    std::uint64_t load_wavefronts = 0;
    // The fewest wavefronts the loads' widths allow: one per request of 32-bit lanes, two of
    // 64-bit, four of 128-bit. The GPU's counters give wavefronts less bank conflicts. 0 in counts
    // written before it was counted.
    std::uint64_t load_ideal_wavefronts = 0;
    std::uint64_t store_requests = 0;
    std::uint64_t store_wavefronts = 0;
    std::uint64_t store_ideal_wavefronts = 0;
    std::uint64_t global_load_requests = 0;
    std::uint64_t global_load_sectors = 0;
    std::uint64_t global_store_requests = 0;
    std::uint64_t global_store_sectors = 0;
    // The blocks the count covers where they are not the launch's grid: the simulator's, which
    // runs some of them (a grade's witness of the student's kernel, 2 of a 1-D grid, 8 of a 2-D
    // one); 0 for every block of the grid.
    std::uint64_t blocks = 0;
    // Per source line, where the simulator counted (a GPU's counters give launch totals): the
    // worst lines, at most kMaxLines, in source order.
    std::vector<SharedLineCounts> lines;
    static constexpr std::size_t kMaxLines = 32;

    // The conflict degree over every load (store): wavefronts over the fewest the widths allow,
    // 1 conflict free at every width (wavefronts per request where the fewest was not counted);
    // nullopt without requests.
    std::optional<double> load_degree() const;
    std::optional<double> store_degree() const;
    // 32-byte sectors per global request: 4 for 32 lanes reading consecutive 32-bit words, 32
    // for 32 lanes a row apart; nullopt without requests.
    std::optional<double> global_load_sectors_per_request() const;
    std::optional<double> global_store_sectors_per_request() const;
    // The line with the largest degree (the first of them), of the loads alone where asked;
    // nullptr without lines.
    const SharedLineCounts* worst_line(bool loads_only = false) const;
    // The larger of the loads' and the stores' degrees; nullopt without shared requests.
    std::optional<double> launch_degree() const;
    // Whether these launch totals (a GPU's, of every block of a grid of grid_blocks) confirm
    // `witness`, the simulator's count of the same source on witness.blocks of them: the same
    // shared loads and stores at the grid's scale (ptxas kept the PTX's accesses as they are), and
    // degrees within kWitnessTolerance of the witness's (the GPU's counters find a few per cent
    // more wavefronts than a conflict-free transpose needs). The witness's lines are then the
    // launch's too.
    bool confirms(const SharedAccessCounts& witness, std::uint64_t grid_blocks) const;
    static constexpr double kWitnessTolerance = 0.15;
};

struct TimingStats {
    double median_ms = 0.0;  // one launch, from samples of back-to-back launches
    double min_ms = 0.0;
    double max_ms = 0.0;
    double spread = 0.0;  // robust relative spread: 1.4826 * MAD / median
    int samples = 0;
    int launches_per_sample = 1;
    bool modeled = false;  // a simulator's modeled cost, not a time
};

// A kernel at one stride (or once, without a sweep): its runs with each input and its timing.
struct KernelRun {
    std::string kernel;                     // a KernelSpec id: "student", "reference", "copy", ...
    int stride = 0;                         // 0 where the exercise has no sweep
    std::vector<OutputComparison> outputs;  // one per input, in the exercise's order
    std::optional<TimingStats> timing;
    std::optional<double> ratio;  // median over rounds of time / time of the ratio's base
    std::optional<double> ratio_min;
    std::optional<double> ratio_max;
    std::optional<SharedAccessCounts> counts;  // what was counted, where something counted it
    std::string count_source;                  // "simulator" (PTX-level) or "hardware" (SASS-level)
    // Where the GPU counted: the simulator's count of the same source (some of the grid's blocks,
    // witness->blocks), whose lines say where a conflict is.
    std::optional<SharedAccessCounts> witness;
    // Where both counted and their totals differ, why, in one line (ptxas merged loads).
    std::string count_note;
    // What the simulator saw of the student's kernel, as findings (model/findings.def): the
    // shared-memory races (a word one warp wrote and another read with no barrier between,
    // lanes of one store writing different values to one word), which fail the kernel's outputs
    // even where the values came out right, and the first word read before any thread wrote it.
    // On a GPU, the simulator's of the same source (witness set). Kept where the launch stopped.
    std::vector<Finding> findings;

    const OutputComparison* output(const std::string& input) const;
};

// The conflict degree a run's shared accesses are judged by (the counted_degree check, the
// report's counted degree): the worst source line's where the lines are the launch's own (the
// simulator counted, or a GPU's totals confirm the simulator's witness), so that no other access
// dilutes a conflicted one; else the launch's totals (launch_degree). grid_blocks is the GPU's
// grid, for the witness's scale. loads_only: the loads' lines and totals alone (a check about
// loads: its witness line is a load's, never the fill's store).
struct JudgedDegree {
    std::optional<double> degree;            // nullopt: no shared request was counted
    const SharedLineCounts* line = nullptr;  // the worst line, where judged by line
    bool confirmed_witness = false;          // on a GPU: judged by the witness's lines
};
JudgedDegree judged_degree(const KernelRun& run, std::uint64_t grid_blocks,
                           bool loads_only = false);

struct Environment {
    std::string backend;  // "cuda" or "sim"
    bool gpu_available = false;
    std::string device_name;
    std::string compute_capability;  // "9.0"
    int sm_count = 0;
    std::string driver_version;  // "13.0"
    std::string nvrtc_version;   // "13.0"
    std::string grader_version;
    std::uint32_t grid_blocks = 0;
    std::uint32_t block_size = 0;
    int blocks_per_sm = 0;
    // How the student's compile was confined by the kernel, e.g. "Landlock ABI 7: the compiler
    // could open no file"; says so where the kernel offers no confinement.
    std::string confinement;
    // The GPU the grade held, by PCI bus id, and when (Unix seconds): from taking the machine-wide
    // lock of that GPU before the first load to letting it go after the last count; 0 where no GPU
    // was held. Two grades' windows on one GPU never overlap.
    std::string gpu_bus_id;
    double gpu_held_from = 0.0;
    double gpu_held_until = 0.0;
    // What the environment section must say once: a fallback taken, a permission missing.
    std::vector<std::string> notes;
};

// How grading stopped early. Whose fault it was is decided in one table (blame(), grade/stage.hpp).
enum class StopKind {
    fault,        // a kernel faulted (illegal address, trap)
    timeout,      // a stage ran past its time limit (or the simulator's instruction budget)
    memory,       // the worker went over its memory limit
    launch,       // a launch was refused (resources the kernel asks for)
    unsupported,  // the simulator cannot run an instruction the kernel uses
    no_gpu,       // a GPU was asked for and there is none
    crash,        // the worker died or could not report
};
std::string_view to_string(StopKind kind);
StopKind stop_kind_from_string(std::string_view text);  // crash for anything unknown

// Why grading stopped early, where it did.
struct Interruption {
    StopKind kind = StopKind::crash;
    std::string stage;  // e.g. "run student stride 8"
    std::string message;
    bool students_fault = true;  // false: the machine or the harness is at fault (ungradable)
};

struct Measurements {
    Environment environment;
    CompileOutcome student;
    std::map<std::string, CompileOutcome> references;  // the exercise's kernels, by id
    std::vector<KernelRun> runs;
    std::vector<int> unnamed_strides;  // drawn for this grade
    std::uint64_t seed = 0;
    int timing_rounds = 0;
    double timing_seconds = 0.0;
    std::optional<Interruption> interruption;
    std::string worker_output;  // what the worker printed (kernel printf), bounded
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
