#pragma once

// The hardware's own count of shared-memory traffic, beside the timings and the simulator's count.
//
// CUPTI is loaded at run time (counters/cupti_library.hpp), like the driver, so a machine without
// it still grades. Two of CUDA 13's profiling APIs are used:
//  - the range profiler for totals over one or more launches: shared-memory instructions,
//    wavefronts and bank conflicts, as Nsight Compute names them (scripts/ncu-compare.sh);
//  - the SASS metrics API for per-instruction counts, mapped to source lines through the cubin's
//    line table (NVRTC's -lineinfo), for `grader explain`.
//
// Nothing here throws because the machine cannot count: a missing CUPTI, counters reserved for
// administrators (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, the lesson's ERR_NVGPUCTRPERM), an
// unsupported device, another profiler attached, or a CUPTI failure are values, with one sentence
// for the report's environment section. What is thrown is the harness's own fault (an empty
// launch list) and whatever the caller's launch throws: a student's kernel that faults still
// surfaces as the driver's DriverError, after every profiling session is closed.
//
// Count after timing, never during it: a count replays the launches (one pass, or two with
// InstructionCounter::sass) with the profiler attached, and CUPTI's profiler stays initialised
// in the process while a counter exists: a launch timed while a counter is open can be slower
// than one timed before CUPTI was loaded (the probe's stride 1 by 9%:
// docs/measurements/2026-12-02-h200-cupti-trial.md).

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace grader::counters {

enum class CounterAvailability {
    available,
    not_permitted,       // counters reserved for administrators, or a hypervisor refuses them
    no_cupti,            // libcupti.so.13 (or .12) with the CUDA 13 profiling APIs was not found
    unsupported_device,  // CUPTI's profiler does not support this GPU or configuration
    in_use,              // another profiler (Nsight Compute, Nsight Systems, cuda-gdb) holds CUPTI
    failed,              // CUPTI failed for another reason; the sentence names the call
};

// "available", "not_permitted", ...: the names a report's JSON uses.
std::string_view to_string(CounterAvailability availability);

// Which counter gives the instruction counts. Both count warp-level shared loads and stores;
// the wavefront and bank-conflict counters are the same in both.
enum class InstructionCounter {
    // smsp__inst_executed_op_shared_{ld,st}.sum, the SM's own counters (the instruction column of
    // Nsight Compute's shared-memory table): the shared-memory metrics fit one replay pass, and
    // global memory's sectors take a second.
    hardware,
    // smsp__sass_inst_executed_op_shared_{ld,st}.sum, the metrics scripts/ncu-compare.sh reads:
    // counted by SASS patching, which does not share a pass with the L1 counters: three passes.
    sass,
};

// One launch's (or one range's) shared-memory totals, and global memory's beside them. Metrics,
// loads first (stores: _op_st):
//   instructions    smsp__inst_executed_op_shared_ld.sum (or smsp__sass_..., InstructionCounter)
//   wavefronts      l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum
//   bank conflicts  l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum: the wavefronts
//                   beyond the fewest each access's width allows (Nsight Compute's ideal)
//   global requests smsp__inst_executed_op_global_ld.sum (or smsp__sass_...): one request per
//                   warp-level LDG, as l1tex__t_requests_pipe_lsu_mem_global_op_ld counts them,
//                   from the SM's counters, which share a pass with the shared-memory ones
//   global sectors  l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum (32 bytes each): an L1
//                   counter that does not share a pass with the wavefronts, so a count takes two
//                   passes (three with InstructionCounter::sass)
struct SharedMemoryCounts {
    std::uint64_t load_instructions = 0;
    std::uint64_t load_wavefronts = 0;
    std::uint64_t load_bank_conflicts = 0;
    std::uint64_t store_instructions = 0;
    std::uint64_t store_wavefronts = 0;
    std::uint64_t store_bank_conflicts = 0;
    std::uint64_t global_load_requests = 0;
    std::uint64_t global_load_sectors = 0;
    std::uint64_t global_store_requests = 0;
    std::uint64_t global_store_sectors = 0;

    // The conflict degree: wavefronts over the fewest the widths allow (wavefronts less bank
    // conflicts), 1 conflict free at every width, 32 for 32 lanes of 32 bits in one bank. 0 where
    // there was no such instruction.
    double load_degree() const;
    double store_degree() const;
    bool operator==(const SharedMemoryCounts& other) const;
    bool operator!=(const SharedMemoryCounts& other) const { return !(*this == other); }
};

// One SASS instruction that accessed shared memory, from the SASS metrics API.
struct InstructionCounts {
    std::string function;         // the kernel's name as the cubin has it (mangled)
    std::uint32_t pc_offset = 0;  // bytes from the function's start
    std::string file;             // base name of the source file ("probe.cu"); empty if unmapped
    int line = 0;                 // 0 where the cubin has no line for it
    bool store = false;
    std::uint64_t instructions = 0;  // warp-level executions (smsp__sass_inst_executed_op_shared_*)
    std::uint64_t wavefronts = 0;    // smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared
    std::uint64_t ideal_wavefronts = 0;  // ..._mem_shared_ideal: without bank conflicts
};

// The instructions summed per source line, loads and stores apart.
struct LineCounts {
    std::string file;
    int line = 0;
    bool store = false;
    int sass_instructions = 0;  // distinct SASS instructions at the line (ptxas may merge PTX's)
    std::uint64_t instructions = 0;
    std::uint64_t wavefronts = 0;
    std::uint64_t ideal_wavefronts = 0;
    double degree() const;  // wavefronts over ideal wavefronts, as SharedMemoryCounts::load_degree
};

struct SourceLineCounts {
    std::vector<LineCounts> lines;                // by file, line, loads before stores
    std::vector<InstructionCounts> instructions;  // by function, then pc_offset
    // False where no instruction could be placed on a line (a cubin built without -lineinfo, or
    // not the image that ran): `lines` then has one entry per kind with line 0, the totals.
    bool mapped = false;
    std::string mapping_note;           // why not mapped; empty when mapped
    SharedMemoryCounts totals() const;  // bank conflicts = wavefronts - ideal wavefronts
};

// Loads CUPTI and NVIDIA's metric library (libnvperf_host: most of what open() costs, about half
// a second of CPU), without any call that reaches the GPU or the driver's profiling hooks. Call it
// on another thread while the kernels are timed, so that open() afterwards is quick (that the
// load alone leaves timings as they were is expected, not yet measured). Safe to call more than
// once and from several threads; open() calls it too.
void load_counter_libraries();

template <typename T>
struct CountResult {
    CounterAvailability availability = CounterAvailability::failed;
    std::string reason;  // one sentence; empty when counted
    T value{};
    // Where a count's wall time went, step by step (CUPTI's calls and the launches), in seconds:
    // for the benchmarks' figures.
    std::vector<std::pair<std::string, double>> steps;
    bool counted() const { return availability == CounterAvailability::available; }
};

// Counts on one context of one device. Not thread-safe; the context must be current on the
// calling thread for open() and every count.
class SharedMemoryCounter {
public:
    using Launch = std::function<void()>;

    // Whether open() tries an empty profiling session: a counter opened long before its first
    // count (a device server's) learns there whether the user may count; one opened to count at
    // once learns it from that count, with the same reason, and saves the session.
    enum class Probe { empty_session, at_first_count };

    // Loads CUPTI, checks that the device supports its profiler, builds the metric configuration
    // and (Probe::empty_session) tries one empty profiling session, so that a user without the
    // counters learns it here. device_ordinal is the context's device (CUPTI names devices by
    // ordinal). Never throws for the environment; check available(), and each count's result.
    // CUPTI's profiler stays initialised (its hooks in the driver) until the last counter of the
    // process is destroyed. No profiling session runs outside a count (or a kept session), so
    // that the probe times alike before CUPTI is loaded, with a counter open and with a session
    // kept enabled (test_counters: "once the last counter is gone, the probe times as it did
    // before CUPTI was loaded"). open_steps() says how long its steps took.
    static SharedMemoryCounter open(CUcontext context, int device_ordinal,
                                    InstructionCounter instructions = InstructionCounter::hardware,
                                    Probe probe = Probe::empty_session);

    SharedMemoryCounter(SharedMemoryCounter&&) noexcept;
    SharedMemoryCounter& operator=(SharedMemoryCounter&&) noexcept;
    SharedMemoryCounter(const SharedMemoryCounter&) = delete;
    SharedMemoryCounter& operator=(const SharedMemoryCounter&) = delete;
    ~SharedMemoryCounter();

    CounterAvailability availability() const;
    bool available() const { return availability() == CounterAvailability::available; }
    // Why not, in one sentence fit for a report's environment section; empty when available.
    const std::string& reason() const;
    // "CUPTI /usr/local/cuda/lib64/libcupti.so.13 (chip GH100, 1 replay pass per count)": for
    // the environment section; empty when not available.
    const std::string& description() const;

    // One profiled range around `launch`, which enqueues the launch(es) to count on this context.
    // `launch` is called passes() times (once per replay pass) and must do the same work each
    // time; each call is followed by a context synchronisation inside the range.
    CountResult<SharedMemoryCounts> count(const Launch& launch);
    // One range per launch, all in one profiling session: cheaper than count() per launch.
    // std::invalid_argument for an empty list.
    CountResult<std::vector<SharedMemoryCounts>> count_each(const std::vector<Launch>& launches);
    // Per SASS instruction and per source line, from one call of `launch` with the SASS metrics
    // API. `cubin` is the image the module was loaded from (its line table places instructions);
    // only `function` (the mangled name; empty: every kernel) is kept.
    // The instruction counts here are always the SASS-patched ones.
    CountResult<SourceLineCounts> count_by_line(std::string_view cubin, const std::string& function,
                                                const Launch& launch);

    int passes() const;  // how many times count() and count_each() call each launch

    // How long open()'s steps took, for the benchmarks' timelines: "initialize 0.013 s, device
    // 0.0003 s, ..."; empty where it did not get that far.
    const std::string& open_steps() const;

    // Keeps one profiling session enabled from the next count until keep_session(false) or the
    // counter's end, instead of one per count (a device server counts many grades).
    void keep_session(bool keep);

private:
    struct Impl;
    explicit SharedMemoryCounter(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// One line for a report where the GPU's (SASS) totals and the simulator's (PTX) totals of the
// same source differ, saying why; empty where they agree. The GPU counts every block of the
// launch's grid (grid_blocks); the simulator counts the blocks it ran (simulated_blocks, 0: the
// grid too), so its totals are compared at the grid's scale, as if every block did what those
// did. On sm_90 ptxas can merge neighbouring shared loads into wider ones: fewer instructions,
// whose wavefronts follow the wider access's rule (two 2-way 32-bit loads can become one
// conflict-free LDS.64: docs/counters.md; test_counters' "neighbouring shared loads" case).
std::string difference_note(const SharedMemoryCounts& hardware, std::uint64_t grid_blocks,
                            const SharedMemoryCounts& simulated, std::uint64_t simulated_blocks);

}  // namespace grader::counters
