#pragma once

// A PTX simulator that grades without a GPU: it runs NVRTC's PTX for the probe and kernels like
// it, warp by warp, and counts what the hardware counters would count for shared memory (requests,
// wavefronts, bank conflicts), so the harness can run the same checks it runs on a GPU.
//
// Execution model: a block's threads are grouped into warps of 32 lanes (x fastest, as on the
// GPU). A warp executes one decoded instruction for all of its active lanes at a time (SIMT).
// Divergent lanes keep their own program counter and the warp always runs the lanes with the
// lowest one ("min-PC" scheduling); for the structured code NVRTC emits this reconverges where the
// hardware does, after the if/else and after the loop. bar.sync waits per thread: it completes
// when every thread of the block that has not exited has arrived. Warps take turns in slices, so a
// warp spinning on a flag another warp sets does not starve it. Blocks are resident together (up
// to 16 at a time) and take turns in an order drawn from the seed, so a block spinning on a global
// flag another block sets sees it set; each block's shared memory starts with what earlier blocks
// left there (or the harness's poison), its %warpid is its warps' slots on the modeled SM, and
// the module's .global variables persist across launches where the caller keeps them.
//
// A launch may run the whole grid and look closely at a few blocks (LaunchOptions::checked). Its
// blocks do exactly the same work until one reads what tells it from the others (%ctaid, %smid,
// %warpid, a clock, a shared word it never wrote) or what another may have written (global
// memory beyond the input buffer, an atomic): the first checked block runs that far alone, and
// every block not checked starts from the state it reached, with its own identity in place,
// rather than doing the same work again. What the recorded block computed from its identity or
// read of its leftovers (and computed from those) in registers, each block computes again from
// its own. Nothing a kernel can observe tells the two apart: a block that then reaches global
// memory another block may write, or local memory, runs again from its start as any block
// does.
//
// What the student gets wrong is a value in LaunchResult (fault, timeout, unsupported
// instruction); exceptions are only for the harness's own faults (malformed PTX, wrong parameter
// sizes, a bad address passed to GlobalMemory).

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace grader::sim {

// The PTX was not PTX this parser understands as well-formed. The harness produced it with NVRTC,
// so this is the harness's fault, not the student's.
class ParseError : public std::runtime_error {
public:
    ParseError(int line, std::string message);
    int line() const { return line_; }  // 1-based line in the PTX text
    const std::string& message() const { return message_; }

private:
    int line_;
    std::string message_;
};

struct Dim3 {
    std::uint32_t x = 1;
    std::uint32_t y = 1;
    std::uint32_t z = 1;
};
inline bool operator==(Dim3 a, Dim3 b) {
    return a.x == b.x && a.y == b.y && a.z == b.z;
}

// "(x, y, z)", as the simulator's messages name threads and blocks.
inline std::string dim_text(Dim3 d) {
    return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) +
           ")";
}

namespace detail {
struct Program;
}

struct EntryInfo {
    std::string name;                      // as in the PTX (mangled)
    std::vector<std::size_t> param_sizes;  // bytes, in order
    std::size_t static_shared_bytes = 0;   // .shared variables, demoted ones included
    std::size_t local_bytes_per_thread = 0;
    std::size_t instructions = 0;
};

// Decoded once by parse_ptx; launch executes the decoded form (no text is looked at at run time).
class Module {
public:
    Module() = default;
    std::vector<EntryInfo> entries() const;
    // An entry by its PTX name, or by its unmangled C++ name where that is unambiguous
    // ("probeSharedStride" finds "_Z17probeSharedStridePKfPfmi").
    std::optional<EntryInfo> entry(std::string_view name) const;

    const detail::Program* program() const { return program_.get(); }

private:
    friend Module parse_ptx(std::string_view ptx);
    std::shared_ptr<const detail::Program> program_;
};

// Throws ParseError for malformed PTX. An instruction the simulator cannot execute is not an
// error here: it is decoded as "unsupported" and ends a launch that reaches it.
Module parse_ptx(std::string_view ptx);

// The device's global memory, as the kernel sees it. Allocations are zero-filled and placed as
// cuMemAlloc places them: each starts on a 2 MiB granule and maps whole granules, the next on
// the following one, so an access a little past a buffer's end lands in its granule and one past
// the granules faults, as on a GPU.
class GlobalMemory {
public:
    GlobalMemory();
    // Allocations from ModeledDevice::first_global_address(seed) on.
    explicit GlobalMemory(std::uint64_t seed);
    ~GlobalMemory();
    GlobalMemory(GlobalMemory&&) noexcept;
    GlobalMemory& operator=(GlobalMemory&&) noexcept;
    GlobalMemory(const GlobalMemory&) = delete;
    GlobalMemory& operator=(const GlobalMemory&) = delete;

    // How an allocation's pages are backed. `huge` is for a buffer its caller fills whole (the
    // exercise's inputs, and its output poisoned before each launch): 2 MiB pages where the
    // system gives them, so that a launch that walks 64 MiB of it (Part 2's transpose) misses
    // the TLB far less. A kernel's own variables, and a buffer of fewer than 16 MiB, keep small
    // pages: a huge page is cleared whole on its first touch.
    enum class Pages { small, huge };
    std::uint64_t allocate(std::size_t bytes, Pages pages = Pages::small);
    // Throw std::out_of_range when [address, address + bytes) is not inside one allocation.
    void write(std::uint64_t address, const void* source, std::size_t bytes);
    void read(std::uint64_t address, void* destination, std::size_t bytes) const;

    // The bytes at [address, address + bytes) when they lie inside one allocation, else nullptr.
    std::byte* find(std::uint64_t address, std::size_t bytes) {
        return find(address, bytes, last_hit_);
    }
    // The same, starting from and keeping the caller's guess of the allocation (`hint`): threads
    // that find at once (a launch's replay workers) each keep their own.
    std::byte* find(std::uint64_t address, std::size_t bytes, std::size_t& hint) const;

    // Where the next allocation goes; release_from(mark) frees every allocation made since, so a
    // caller that keeps its buffers across launches does not keep each launch's globals too.
    std::uint64_t mark() const { return next_address_; }
    void release_from(std::uint64_t mark);

private:
    struct Allocation;
    std::vector<std::unique_ptr<Allocation>> allocations_;  // sorted by address
    std::uint64_t next_address_;
    mutable std::size_t last_hit_ = 0;  // accesses come in runs on one buffer
};

// The GPU the simulator stands in for: a real GPU of the architecture the kernels are compiled
// for (a Tesla T4, the course's Colab GPU, for sm_75), so that what a kernel reads of the machine
// is one GPU's and agrees with __CUDA_ARCH__ and with the grid the harness sizes from it (the
// probe's 160 blocks are a T4's 40 SMs holding 4 blocks of 256 each): %nsmid and %nwarpid, each
// block's %smid and %warpid, and how many blocks run at once.
struct GpuModel {
    std::string_view name = "Tesla T4";
    std::uint32_t sm_count = 40;       // %nsmid
    std::uint32_t warps_per_sm = 32;   // %nwarpid: the warps one SM holds at once
    std::uint32_t blocks_per_sm = 16;  // the most blocks one SM holds at once
    std::uint32_t shared_per_sm = 64 * 1024;
    // A block's shared memory comes in units of this many bytes (the PTX ISA's allocation unit,
    // which %total_smem_size counts in, and NVIDIA's occupancy calculator's: 256 on sm_7x, 128
    // on sm_8x and sm_9x); its accesses fault outside the allocation, not outside what it
    // declared (an H100 read 4 bytes past a 16,388-byte block without a fault, 2026-12-06).
    std::uint32_t shared_unit = 256;
    // The register file (cuda_occupancy.h, every architecture here): 64K 32-bit registers per SM
    // in 4 partitions, given to warps in units of 256; a block may have 64K.
    static constexpr std::uint32_t kRegistersPerSm = 64 * 1024;
    static constexpr std::uint32_t kRegisterPartitions = 4;
    static constexpr std::uint32_t kRegisterUnit = 256;
    // The model for "sm_75" and the like: the newest architecture of the table not newer.
    static GpuModel for_arch(std::string_view arch);
    // The bytes of shared memory a block that declares `shared_bytes` is given: whole units.
    std::size_t shared_allocation(std::size_t shared_bytes) const;
    // Blocks of `threads` threads, `shared_bytes` of shared memory and `registers` registers per
    // thread (ptxas's count, as cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS) reads it; 0: not
    // known, not counted) that one SM holds at once, as the occupancy calculator counts them.
    // 0 where one block does not fit its registers (a GPU refuses the launch); else at least 1.
    std::uint32_t resident_per_sm(std::uint32_t threads, std::size_t shared_bytes,
                                  std::uint32_t registers = 0) const;
};

// Which executor runs a launch. `decoded`: each instruction's operation resolved once per launch
// to the function that runs it, the bookkeeping of shared work kept only where it can change a
// decision, and the blocks that replay shared work spread over LaunchOptions::threads.
// `reference`: the executor it replaced, one instruction at a time, kept while
// tests/test_sim_engine.cpp compares the two on every fixture. Both run the same operations
// (opcodes.def's families): only scheduling and bookkeeping differ, never what a kernel observes.
enum class Engine : std::uint8_t { decoded, reference };

struct LaunchOptions {
    // Warp instructions over the whole launch (every executed block); past it the launch ends
    // with LaunchStatus::budget_exceeded ("timed out"). The probe takes about 105,000 per block.
    std::uint64_t instruction_budget = 20'000'000;
    // Warp instructions any one block may run before the launch ends the same way; 0: no bound
    // but the launch's. A launch of the whole grid sets it, so that a block that never ends is
    // found in its own budget, not in the grid's.
    std::uint64_t block_instruction_budget = 0;
    // The blocks to execute, in this order, as 0-based indices (write {x, 0, 0}: Dim3 defaults to
    // 1, for sizes); empty means every block of the grid. Blocks not executed leave their outputs
    // untouched. first_blocks() builds the common "first N blocks" list.
    std::vector<Dim3> blocks;
    // The blocks whose work the launch reports, among those run: their instructions and shared
    // accesses make LaunchResult::counts, their races and uninitialised shared reads its
    // reports. The others run alike (what they store lands, what they execute counts toward the
    // instruction budget, their clocks advance by the same costs) and report nothing, so that a
    // grade can run the whole grid and look closely at a few blocks. Empty: every block run.
    std::vector<Dim3> checked;
    // The kernel's input buffer, which its blocks only read. Blocks whose reads of global memory
    // stay in it cannot see what other blocks do: such blocks share the work they do alike up
    // to the first thing that could tell one from another (see the execution model above).
    // Empty: no such buffer, and every block does all its work itself.
    std::uint64_t input_address = 0;
    std::uint64_t input_bytes = 0;
    std::uint32_t dynamic_shared_bytes = 0;
    // Registers per thread, as ptxas gave the kernel (0: not known): with the threads and the
    // shared memory, how many blocks an SM holds at once (GpuModel::resident_per_sm).
    std::uint32_t registers_per_thread = 0;
    // Instructions a warp runs before the next warp of its block gets a turn.
    std::uint32_t warp_slice = 2048;
    Engine engine = Engine::decoded;
    // Threads that may run blocks of the launch at once (Engine::decoded): the blocks that
    // replay the work blocks share, which nothing another block does can reach, run on up to this
    // many threads, their global stores landing in launch order; 1: all on the caller's.
    unsigned threads = 1;
    // Where %clock64 and %globaltimer start (see ModeledClock), which SM the first block lands
    // on, in what order blocks start, the poison of unwritten registers and local memory: the
    // grade's seed, so that a kernel cannot count on a value, and the same seed gives the same
    // values.
    std::uint64_t clock_seed = 0;
    GpuModel gpu;
    // What %gridid reads: the launch's number among the device's launches, as a GPU counts them
    // (the caller counts); 0: ModeledDevice::grid_id(clock_seed), the first of them.
    std::uint64_t grid_id = 0;
    // The module's .global variables as the previous launch left them, in declaration order,
    // concatenated: read at the start of the launch (empty: their initialisers) and written back
    // when it completes, so that they persist across launches of one loaded module as they do
    // on a GPU. Null: every launch starts from the initialisers.
    std::vector<std::byte>* module_globals = nullptr;
    // Shared memory starts with quiet NaNs whose payloads differ word by word where the harness
    // poisons it (as the GPU path does, reference/poison_shared_memory.cu); otherwise with what
    // earlier blocks left there. Both are drawn from clock_seed per block
    // (ModeledDevice::leftover_shared_word).
    bool poison_shared = false;
    // The Unix time in nanoseconds that %globaltimer reads near the launch's start, as a GPU's
    // does (its timer follows the host's clock); 0: this machine's clock when the launch starts.
    std::uint64_t timer_epoch_ns = 0;
};

// What the clocks read on the simulator. Each warp keeps a cycle count: a start drawn from
// LaunchOptions::clock_seed (large and nonzero, like an SM that has been up for a while), plus
// the modeled cost of what the warp issued (CostModel's units taken as cycles: 1 per warp
// instruction, 20 per shared-memory wavefront), plus nanosleep's argument in cycles. A barrier
// brings the block's warps to the latest of their counts; a block starts at its SM's count (the
// SMs' clocks are not in step; resident blocks start together). %clock is the count's low 32
// bits, %clock_hi its high 32; %globaltimer counts nanoseconds at 1.5 GHz from a seeded start, in
// steps of kTimerStepNs.
struct ModeledClock {
    static constexpr double kGigahertz = 1.5;
    // %globaltimer moves in steps of this many nanoseconds, as a GPU's does rather than by one
    // (to measure: scripts/gpu-check.sh's behaviours section prints the H200's steps).
    static constexpr std::uint64_t kTimerStepNs = 32;
    static std::uint64_t start_cycles(std::uint64_t seed);
    // The cycles a nanosleep of `ns` takes: capped at 1 ms ("the maximum sleep duration is
    // approximately 1 millisecond", the CUDA C++ Programming Guide), then between 1 and 1.25
    // times it, drawn from the seed and `draw` (the PTX ISA gives a sleep as about the delay, in
    // [0, 2t]), so that no exact duration gives the simulator away.
    static std::uint64_t sleep_cycles(std::uint64_t seed, std::uint64_t ns, std::uint64_t draw);
    // Within a millisecond before epoch_ns, by the seed.
    static std::uint64_t start_nanoseconds(std::uint64_t seed, std::uint64_t epoch_ns);
    // Cycles from an instruction's issue until its result can be read, seen only by a kernel
    // that reads a clock: about 4 for dependent arithmetic (a dependent FFMA's on sm_70 and
    // later), about 30 for a shared load and an L1 hit's latency for any other load or atomic
    // (a GPU's L2 and DRAM take hundreds: not modeled). To measure: gpu-check's redteam section.
    static constexpr std::uint64_t kArithmeticCycles = 4;
    static constexpr std::uint64_t kSharedLoadCycles = 30;
    static constexpr std::uint64_t kLoadCycles = 36;
};

// What the simulator says of the GPU it stands in for (GpuModel says the rest), drawn from the
// grade's seed where a GPU's own values vary, so that no constant gives it away: a block's place
// (its SM and its warps' slots, see Executor), %gridid's first launch number, and where global
// buffers lie (CUDA's allocations on Linux: 0x7fXX'XXXX'XXXX, 2 MiB aligned).
struct ModeledDevice {
    // What a block finds in its shared memory at the start: what earlier blocks left there,
    // different in every block and every grade.
    static std::uint32_t leftover_shared_word(std::uint64_t seed, std::uint64_t linear_block,
                                              std::uint64_t word);
    // Words 0..count-1 of the same, at once.
    static void leftover_shared_words(std::uint64_t seed, std::uint64_t linear_block,
                                      std::uint32_t* words, std::size_t count);
    static std::uint64_t grid_id(std::uint64_t seed);
    static std::uint64_t first_global_address(std::uint64_t seed);
    // The generic address of shared memory's byte 0 (4 GiB aligned, below the global buffers);
    // local memory's window follows it.
    static std::uint64_t shared_window(std::uint64_t seed);
};

// The first `count` blocks of `grid` in launch order (x fastest).
std::vector<Dim3> first_blocks(Dim3 grid, std::uint64_t count);

enum class LaunchStatus {
    completed,
    fault,            // out-of-bounds or misaligned access, trap, bad launch
    budget_exceeded,  // the instruction budget ran out: the kernel is taken to have timed out
    unsupported,      // an instruction the simulator does not implement was reached
};

std::string_view to_string(LaunchStatus status);

// Where an instruction came from: the CUDA source line (from the nearest preceding .loc) and the
// PTX line and text. Both texts are the PTX's, which a student's asm can write: they are cut to
// these bounds (ending in "...") when parsed.
constexpr std::size_t kMaxLocationFileBytes = 120;
constexpr std::size_t kMaxLocationInstructionBytes = 200;
struct SourceLocation {
    std::string file;  // base name of the .file entry, e.g. "probe.cu"; empty if none
    int line = 0;      // 0 when the PTX has no .loc before the instruction
    int column = 0;
    int ptx_line = 0;
    std::string instruction;  // the PTX instruction's text, e.g. "ld.shared.f32 %f5, [%rd14]"
};

// "probe.cu:25:9" (FILE:LINE:COLUMN; FILE:LINE where the .loc gives no column); "line 25" where
// the PTX names no file for it; "PTX line 67" where it has no .loc.
std::string location_text(const SourceLocation& where);

struct ThreadId {
    Dim3 block;
    Dim3 thread;
    std::uint32_t warp = 0;  // within the block
    std::uint32_t lane = 0;
};

struct Fault {
    std::string kind;     // "out_of_bounds", "misaligned", "trap", "launch"
    std::string message;  // one sentence naming the space, address, line and thread
    SourceLocation where;
    ThreadId thread;
    std::uint64_t address = 0;
};

struct UnsupportedInstruction {
    std::string opcode;  // e.g. "shfl.sync.idx.b32" or "call.uni"
    SourceLocation where;
};

// A shared-memory load of a 32-bit word that no thread of the block had written. On a GPU it
// returns whatever was left there; so it does on the simulator (LaunchOptions::poison_shared).
struct UninitializedSharedRead {
    SourceLocation where;
    ThreadId thread;
    std::uint64_t byte_offset = 0;  // in the block's shared memory
    std::uint64_t word = 0;         // byte_offset / 4
    std::string variable;           // the .shared variable that holds the word, if known
    std::uint64_t word_in_variable = 0;
    // Barriers the block had completed before the read: none, and the word a store of the
    // kernel writes later is a missing barrier rather than a tile never written.
    std::uint32_t barriers_before = 0;
    // A thread of the block wrote the word after the read, before the block ended or the launch
    // stopped: a fill the read did not wait for. Without it the word was never written by the
    // block (a tile left half-written, or a spare array read for what it holds).
    bool written_later = false;
};

// A shared-memory race: two warps touched a word, at least one writing, with no barrier of the
// block completed between them; or lanes of one store wrote different values to one word. A GPU
// gives such a kernel whatever order its warps happen to run in, so the output may come out right
// on one run and wrong on the next: the harness fails it either way.
struct SharedRace {
    enum class Kind {
        read_after_write,      // read a word another warp had written
        write_after_read,      // wrote a word another warp had read
        write_after_write,     // wrote a word another warp had written
        one_store_two_values,  // lanes of one store, different values, one word
        same_value_write,      // wrote a word another warp had written, the same value
    };
    Kind kind = Kind::read_after_write;
    // One sentence naming the lines, the word (variable[index] where known) and the lanes.
    std::string message;
    SourceLocation where;    // the later access, the one that found the race
    SourceLocation earlier;  // the other warp's access (for one_store_two_values, the same store)
    ThreadId thread;         // the later access's lane
    // The other warp's lane, or the store's other lane. Where several warps had read the word and
    // none is known by name, warp is kAnyOtherWarp.
    ThreadId other;
    std::uint64_t byte_offset = 0;  // in the block's shared memory
    std::uint64_t word = 0;         // byte_offset / 4
    std::string variable;           // the .shared variable that holds the word, if known
    std::uint64_t word_in_variable = 0;

    static constexpr std::uint32_t kAnyOtherWarp = 0xffff;
};

// "tile" from "_ZZ17probeSharedStridePKfPfmiE4tile": a function-local __shared__ array's name as
// the student wrote it; any other name unchanged.
std::string shared_variable_name(const std::string& mangled);

// One lane of one warp-wide shared-memory access.
struct LaneAccess {
    bool active = false;
    std::uint64_t byte_offset = 0;  // in the block's shared memory
    std::uint64_t word = 0;         // byte_offset / 4 (the first word, for 64/128-bit accesses)
    std::uint32_t bank = 0;         // word % 32 (the first word's bank, for 64/128-bit accesses)
    std::uint32_t bank_mates = 0;   // bit mask: active lanes whose first word is in the same bank
    std::uint32_t distinct_words_in_bank = 0;  // over the warp, in this lane's bank
};

// A representative warp-wide access: the first request of an instruction with its largest degree.
struct WarpAccessTable {
    Dim3 block;
    std::uint32_t warp = 0;
    std::uint32_t degree = 0;  // the bank bound: most distinct words asked of one bank
    std::uint32_t wavefronts = 0;
    // The fewest wavefronts the access's width allows (the data bound): 1 for 32 lanes of 32 bits,
    // 2 of 64 bits, 4 of 128 bits.
    std::uint32_t ideal_wavefronts = 0;
    std::uint32_t bytes_per_lane = 4;
    std::array<LaneAccess, 32> lanes{};

    // Wavefronts over the fewest the width allows: 1 conflict free at every width.
    double conflict_degree() const;
};

// How many lanes of a warp one wavefront serves at most for an access `bytes_per_lane` wide (32
// for 8-, 16- and 32-bit accesses, 16 for 64-bit, 8 for 128-bit: 128 bytes per wavefront), and
// the rule in one sentence for a lane table.
std::uint32_t lanes_per_wavefront(std::uint32_t bytes_per_lane);
std::string width_rule(std::uint32_t bytes_per_lane);

// "32 lanes in 32 distinct banks, conflict free", "16 lanes in each of 2 banks: 16-way",
// "32 lanes read one word: a broadcast" - what `grader explain` prints under the lane table.
std::string describe_banks(const WarpAccessTable& table);

// Counts for one shared-memory ld/st instruction of the PTX, over every executed block.
//
// The rule, checked against Nsight Compute on an H200 (sm_90, 2026-12-02):
// l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld per smsp__sass_inst_executed_op_shared_ld
// matched it for LDS.32 at strides 1..65 (the probe: gcd(stride, 32)), for LDS.64 at element
// strides 0 (broadcast), 1, 2, 3, 4, 8, 16, 32, 2 and 16 lanes sharing an address, and for LDS.128
// at strides 0, 1, 2, 3, 4, 8 and 2, 4, 8 lanes sharing. One request (a warp-level execution with
// at least one active lane) costs the larger of two bounds:
//  - the bank bound: bank = (byte address / 4) % 32; the most DISTINCT 32-bit words any one bank
//    is asked for, over the whole warp (lanes asking for the same word share one broadcast);
//  - the data bound: the bytes the access moves at 128 bytes per wavefront (a 32-bit access of
//    32 lanes is 1, 64-bit is 2, 128-bit is 4), halved (at least 1) when every active lane has the
//    same address as lane^1, or every one as lane^2: the packing NVIDIA describes for uniform
//    64/128-bit addresses. A broadcast LDS.64 is 1 wavefront, a broadcast LDS.128 is 2.
// The data bound is what Nsight counts as ideal: conflicts = wavefronts - ideal_wavefronts, which
// for 32-bit accesses is wavefronts - requests (l1tex__data_bank_conflicts_pipe_lsu_mem_shared).
// Assumed, not measured: stores follow the loads' rule; a partially active warp's data bound
// counts only its active lanes; 8- and 16-bit accesses are 32-bit word accesses (lanes asking for
// bytes of one word share it, as the hardware's byte-masked word accesses do).
//
// The conflict degree of an access is its wavefronts over the fewest its width allows (the ideal
// wavefronts): 1 conflict free at every width, gcd(stride, 32) for the probe's 32-bit loads, and
// never the 4 a conflict-free 128-bit access moves its 512 bytes in. It is what Nsight Compute
// reports as wavefronts over (wavefronts - l1tex__data_bank_conflicts_pipe_lsu_mem_shared).
struct SharedAccessStats {
    std::size_t instruction_index = 0;  // in the entry's decoded instruction array
    SourceLocation where;
    bool store = false;
    std::uint32_t bytes_per_lane = 4;  // 1, 2, 4, 8 or 16 (vector accesses included)
    std::uint64_t requests = 0;        // warp-level executions with at least one active lane
    std::uint64_t wavefronts = 0;
    std::uint64_t ideal_wavefronts = 0;
    double max_degree = 0;                          // the largest conflict degree of one request
    std::optional<WarpAccessTable> representative;  // the first request with max_degree

    std::uint64_t conflicts() const { return wavefronts - ideal_wavefronts; }
    double wavefronts_per_request() const;
    double conflict_degree() const;  // wavefronts over ideal wavefronts, over every request
};

// The same counts summed per CUDA source line (file and line), loads and stores apart. A line is
// judged by its worst instruction: its conflict degree is the largest of its instructions', so
// that neither other instructions of the line nor other lines dilute a conflicted access.
struct SharedLineStats {
    std::string file;
    int line = 0;
    bool store = false;
    std::uint32_t bytes_per_lane = 0;  // the widest of the line's accesses
    std::uint64_t requests = 0;
    std::uint64_t wavefronts = 0;
    std::uint64_t ideal_wavefronts = 0;
    double degree = 0;      // the largest conflict_degree() of the line's instructions
    double max_degree = 0;  // the largest of one request
    std::optional<WarpAccessTable> representative;  // of the request with max_degree
    std::uint64_t conflicts() const { return wavefronts - ideal_wavefronts; }
    double wavefronts_per_request() const;
};

// Counts over the launch's checked blocks (LaunchOptions::checked), those it reports on.
struct LaunchCounts {
    std::uint64_t blocks_executed = 0;      // checked blocks that ran to the end
    std::uint64_t warp_instructions = 0;    // issued, including fully predicated-off ones
    std::uint64_t thread_instructions = 0;  // sum over warp instructions of the executing lanes
    std::uint64_t shared_load_requests = 0;
    std::uint64_t shared_load_wavefronts = 0;
    std::uint64_t shared_load_ideal_wavefronts = 0;
    std::uint64_t shared_store_requests = 0;
    std::uint64_t shared_store_wavefronts = 0;
    std::uint64_t shared_store_ideal_wavefronts = 0;
    // Global memory: warp-level ld/st requests that reached it (ld.global, and generic addresses
    // in a global buffer; not atomics) and the distinct 32-byte sectors each request touched, as
    // l1tex__t_requests_pipe_lsu_mem_global_op_ld/st and l1tex__t_sectors_... count them: 4
    // sectors per request for 32 lanes reading consecutive 32-bit words, 32 for lanes a row apart.
    std::uint64_t global_load_requests = 0;
    std::uint64_t global_load_sectors = 0;
    std::uint64_t global_store_requests = 0;
    std::uint64_t global_store_sectors = 0;
    std::uint64_t printf_calls = 0;  // thread-level printf calls; the simulator drops their output
    std::vector<SharedAccessStats> shared_accesses;  // one per ld/st instruction that executed
};

std::vector<SharedLineStats> shared_accesses_by_line(const LaunchCounts& counts);

struct LaunchResult {
    LaunchStatus status = LaunchStatus::completed;
    std::string message;  // one sentence for the report; empty when completed
    std::optional<Fault> fault;
    std::optional<UnsupportedInstruction> unsupported;
    std::optional<UninitializedSharedRead> uninitialized_shared_read;  // the first one
    // The first race of each pair of source lines, at most kMaxReportedRaces; race_count
    // counts every warp-wide access that raced, reported or not.
    std::vector<SharedRace> races;
    std::uint64_t race_count = 0;
    static constexpr std::size_t kMaxReportedRaces = 8;
    std::optional<SourceLocation> last_location;  // budget_exceeded: where the warp was
    std::optional<Dim3> over_block_budget;  // budget_exceeded: the block, where its own ran out
    // budget_exceeded before any budget ran out: over_block_budget's block came back to a state
    // it had been in, reading nothing from outside it since, after this many warp instructions of
    // its own; it can never end (as a GPU's grade, it stops at the time limit).
    std::optional<std::uint64_t> loops_after;
    LaunchCounts counts;                 // up to where the launch ended
    std::uint64_t blocks_run = 0;        // every block that ran to the end
    std::uint64_t instructions_run = 0;  // warp instructions of every block run
    bool wrote_input = false;            // a store or atomic landed in LaunchOptions' input buffer
    // Blocks that started from the work another had done alike, checked ones included (a
    // matter of speed alone).
    std::uint64_t blocks_sharing_work = 0;
    // The warp instructions those blocks did not run themselves: the shared work's, each.
    std::uint64_t instructions_shared = 0;
};

// Runs `entry` over the blocks options.blocks selects. params holds each kernel parameter's raw
// bytes in order; their number and sizes must match the entry (std::invalid_argument otherwise,
// as for an unknown entry or a block of more than 1024 threads: the harness's fault).
LaunchResult launch(const Module& module, std::string_view entry, Dim3 grid, Dim3 block,
                    const std::vector<std::vector<std::byte>>& params, GlobalMemory& memory,
                    const LaunchOptions& options);

// Raw parameter bytes of a trivially copyable value, for launch's params.
template <typename T>
std::vector<std::byte> param_bytes(const T& value) {
    const auto* first = reinterpret_cast<const std::byte*>(&value);
    return std::vector<std::byte>(first, first + sizeof(T));
}

// The modeled cost of a launch, for the timing checks on the simulator:
//
//   core   = instruction_cost * warp_instructions
//          + shared_wavefront_cost * (shared load wavefronts + shared store wavefronts)
//   memory = global_sector_cost * (global load sectors + global store sectors)
//   cost   = max(core, memory)
//
// Each issued warp instruction costs one unit; each shared-memory wavefront costs
// shared_wavefront_cost units, because the shared pipe, not instruction issue, is what a
// conflicted kernel waits on. The default 20 is fitted to the H200 measurement of the reference
// probe: its time grows by about 0.77 of the stride-1 time per extra degree of conflict. The probe
// issues about 6.3 warp instructions per shared load, so with k = 20 the modeled growth per degree
// is k / (k + 6.3) = 0.76 (stride 32 models at 24.5x stride 1; the H200 measured 24.6x).
//
// Global memory is a pipe of its own that a GPU overlaps with the rest (other warps issue while
// one waits on a sector), so a launch costs what its slower side costs: a copy or a padded
// transpose waits on its sectors, the probe on its shared loads. global_sector_cost is fitted to
// the H200's transposes at n = 4096 (248% of the copy's time for tile[32][32], 110% for
// tile[32][33]: docs/measurements/2026-12-03-h200.md): a block of the copy moves 256 sectors, and
// the 32 x 32 tile's core is 472 instructions and 1,056 wavefronts, 21,592 units, 241% of 256 x 35.
// A padded tile's core (1,752) stays under its sectors, so it models at the copy's cost. The
// probe's 288 sectors a block are 2% of its core at stride 1, so its modeled ratios are what
// they were without global memory. Only ratios between launches of one grade are meaningful; the
// number is not a time.
struct CostModel {
    double instruction_cost = 1.0;
    double shared_wavefront_cost = 20.0;
    double global_sector_cost = 35.0;
};
double modeled_cost(const LaunchCounts& counts, const CostModel& model = {});

}  // namespace grader::sim
