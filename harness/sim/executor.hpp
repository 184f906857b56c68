#pragma once

// The simulator's executor, private to it. One Executor runs one launch; its parts live along the
// seams of the work: executor.cpp schedules (the launch, blocks, warps, barriers, clocks);
// opcodes.def names one function per family of operations, in executor_arithmetic.cpp (integer
// and float arithmetic, and the dispatch), executor_bits.cpp, executor_convert.cpp (moves, setp,
// cvt), executor_warp.cpp (shfl, vote, redux) and executor_memory.cpp, which executes what touches
// memory (loads, stores, atomics) and records what it finds there (races, uninitialised reads,
// bank costs).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "sim/banks.hpp"
#include "sim/program.hpp"
#include "sim/races.hpp"
#include "sim/rounding.hpp"
#include "sim/sim.hpp"

namespace grader::sim::detail {

// The size of the shared and the local window of the generic address space (what cvta.shared
// and cvta.local produce); where they lie is the launch's (ModeledDevice::shared_window).
constexpr std::uint64_t kWindowSize = 1ull << 32;
// Local memory is simulated in pages of this size, made on first touch (see Warp::local_pages).
constexpr std::size_t kLocalPage = 4096;

inline unsigned ctz(std::uint32_t m) {
    return static_cast<unsigned>(__builtin_ctz(m));
}
// Without a popcnt instruction in the target, __builtin_popcount is a call: a whole warp, the
// usual case, is counted without it.
inline unsigned popcount(std::uint32_t m) {
    return m == ~0u ? 32 : static_cast<unsigned>(__builtin_popcount(m));
}

// Two 64-bit lanes of a register, written with one 16-byte store.
using LanePair [[gnu::vector_size(16)]] = std::uint64_t;

// Sets every lane of a register to value_of(lane), two lanes to a store. A register's next
// reader loads it 16 bytes at a time (the full-warp cases are vectorised loops), and a load that
// spans two stores still on their way to the cache waits for both: a gathered register written
// lane by lane stalled the add that read it. value_of(lane + 1) runs before lanes `lane` and
// `lane + 1` are written, so it may read the register's own earlier value there.
template <class F>
inline void write_lanes(std::uint64_t* lanes, F&& value_of) {
    for (unsigned lane = 0; lane < 32; lane += 2) {
        const LanePair pair{value_of(lane), value_of(lane + 1)};
        std::memcpy(lanes + lane, &pair, sizeof pair);
    }
}

template <class F>
inline void for_lanes(std::uint32_t mask, F&& f) {
    if (mask == 0xffffffffu) {
        for (unsigned lane = 0; lane < 32; ++lane)
            f(lane);
    } else {
        for (std::uint32_t m = mask; m != 0; m &= m - 1)
            f(ctz(m));
    }
}

// Register slots hold raw bits, zero-extended from the width last written.
template <class T>
inline T as(std::uint64_t bits) {
    if constexpr (std::is_same_v<T, float>) {
        const auto b = static_cast<std::uint32_t>(bits);
        float f;
        std::memcpy(&f, &b, 4);
        return f;
    } else if constexpr (std::is_same_v<T, double>) {
        double d;
        std::memcpy(&d, &bits, 8);
        return d;
    } else {
        return static_cast<T>(static_cast<std::make_unsigned_t<T>>(bits));
    }
}

template <class T>
inline std::uint64_t bits_of(T value) {
    if constexpr (std::is_same_v<T, float>) {
        std::uint32_t b;
        std::memcpy(&b, &value, 4);
        return b;
    } else if constexpr (std::is_same_v<T, double>) {
        std::uint64_t b;
        std::memcpy(&b, &value, 8);
        return b;
    } else if constexpr (std::is_same_v<T, bool>) {
        return value ? 1 : 0;
    } else {
        return static_cast<std::make_unsigned_t<T>>(value);
    }
}

template <class F>
void dispatch_int(Type t, F&& f) {
    switch (t) {
        case Type::b8:
        case Type::u8:
            f(std::uint8_t{});
            break;
        case Type::s8:
            f(std::int8_t{});
            break;
        case Type::b16:
        case Type::u16:
            f(std::uint16_t{});
            break;
        case Type::s16:
            f(std::int16_t{});
            break;
        case Type::b32:
        case Type::u32:
            f(std::uint32_t{});
            break;
        case Type::s32:
            f(std::int32_t{});
            break;
        case Type::b64:
        case Type::u64:
        case Type::pred:
            f(std::uint64_t{});
            break;
        case Type::s64:
            f(std::int64_t{});
            break;
        default:
            throw std::logic_error("integer type expected");
    }
}

template <class F>
void dispatch_any(Type t, F&& f) {
    if (t == Type::f32) {
        f(float{});
    } else if (t == Type::f64) {
        f(double{});
    } else {
        dispatch_int(t, f);
    }
}

template <class T>
using Unsigned = std::make_unsigned_t<T>;

// What a register keeps of a value `bits` wide: its low bits.
inline std::uint64_t low_bits(unsigned bits) {
    return bits == 64 ? ~0ull : ((1ull << bits) - 1);
}

// A NaN with its quiet bit set, payload and sign kept.
inline float quieted(float x) {
    return as<float>(bits_of(x) | 0x00400000u);
}
inline double quieted(double x) {
    return as<double>(bits_of(x) | 0x0008000000000000ull);
}

// A float result as NVIDIA's units give it, from the host's result `r` and the operation's
// operands, as gpu-check's behaviours section 8 shows on an H100 and an H200: an f32 NaN is the
// canonical one (0x7fffffff) whatever NaN went in; an f64 NaN keeps the first NaN operand's
// payload, quieted, and one the operation made (inf - inf) is 0x7fffffffffffffff. A host's FPU
// picks the NaN operand its own way and makes a negative NaN.
template <class F, class... Operands>
inline F gpu_nan(F r, Operands... operands) {
    if (!std::isnan(r))
        return r;
    if constexpr (std::is_same_v<F, float>) {
        return as<float>(0x7fffffffu);
    } else {
        const std::array<double, sizeof...(Operands)> in_order{static_cast<double>(operands)...};
        for (const double operand : in_order) {
            if (std::isnan(operand))
                return quieted(operand);
        }
        return as<double>(0x7fffffffffffffffull);
    }
}

// A conversion between f32 and f64 of a NaN, as the H200 shows (behaviours section 8): the payload
// carried over (its top 23 bits from f64), quieted, the sign kept; 0x7fc00123 becomes
// 0x7ff8002460000000 and 0x7ff8000000000123 becomes 0x7fc00000.
inline double widened_nan(float x) {
    const std::uint64_t bits = bits_of(x);
    return as<double>(((bits >> 31) << 63) | 0x7ff8000000000000ull | ((bits & 0x007fffffu) << 29));
}
inline float narrowed_nan(double x) {
    const std::uint64_t bits = bits_of(x);
    return as<float>(((bits >> 63) << 31) | 0x7fc00000u | ((bits >> 29) & 0x007fffffu));
}

// .sat on a float result: clamped to [0, 1], NaN to 0.
template <class F>
inline F saturate_unit(F r) {
    return std::isnan(r) ? F(0) : std::min(F(1), std::max(F(0), r));
}

// One lane of add, sub or mul of f32 or f64 (PTX's add/sub/mul.rn/.rz/.rm/.rp[.sat]): rounded as
// `mode` asks, clamped by .sat, its NaN as a GPU gives it. The one definition: the families
// (execute_add_sub, execute_mul_lo) and the decoded engine's full-warp case call it; with a
// constant `mode` of nearest and no .sat it inlines to the host's operation and a select.
enum class FloatBinary { add, sub, mul };
template <FloatBinary Kind, class F>
inline F float_binary(F x, F y, rounding::Direction mode, bool saturate) {
    F r = Kind == FloatBinary::add   ? rounding::add(x, y, mode)
          : Kind == FloatBinary::sub ? rounding::sub(x, y, mode)
                                     : rounding::mul(x, y, mode);
    if (saturate)
        r = saturate_unit(r);
    return gpu_nan(r, x, y);
}

// The poison stream, xorshift64*: what a GPU's registers and local memory hold before anything
// is written is whatever ran there before, not zeros; the grade's seed makes it repeatable.
// Writes the outputs of the `count` steps after `state` (its low bit set first) to words and
// returns the state after them. A long run goes four places of the stream at once (the step is
// linear over GF(2): the state a quarter of the run on is a matrix product), the same words as
// one step at a time.
std::uint64_t poison_stream(std::uint64_t state, std::uint64_t* words, std::size_t count);

// What ends a launch early.
struct Stop {
    LaunchStatus status;
};

// Local memory in pages, made on first touch: a kernel that declares a large local array and
// touches little of it costs little. Index lane * pages per lane + page. A copy (a replay
// worker's copy of the shared work) has its own copy of each page made.
struct LocalPages {
    std::vector<std::unique_ptr<std::byte[]>> pages;
    LocalPages() = default;
    LocalPages(LocalPages&&) noexcept = default;
    LocalPages& operator=(LocalPages&&) noexcept = default;
    LocalPages(const LocalPages& other) { *this = other; }
    LocalPages& operator=(const LocalPages& other) {
        if (this == &other)
            return *this;
        pages.clear();
        pages.resize(other.pages.size());
        for (std::size_t k = 0; k < pages.size(); ++k) {
            if (other.pages[k]) {
                pages[k].reset(new std::byte[kLocalPage]);
                std::memcpy(pages[k].get(), other.pages[k].get(), kLocalPage);
            }
        }
        return *this;
    }
};

struct Warp {
    std::uint32_t index = 0;
    std::vector<std::uint64_t> regs;  // slot * 32 + lane
    LocalPages local_pages;
    std::uint32_t pc = 0;
    std::uint32_t mask = 0;     // lanes executing at pc
    std::uint32_t live = 0;     // lanes that have not exited
    std::uint32_t blocked = 0;  // lanes waiting at a barrier
    std::uint32_t waiting = 0;  // live, unblocked lanes at another pc
    std::uint32_t min_waiting_pc = 0;
    std::array<std::uint32_t, 32> lane_pc{};
    // bar.red: the lanes waiting for the block-wide result, and where it goes.
    std::uint32_t reduction_lanes = 0;
    std::int32_t reduction_slot = kNoSlot;
    AtomOp reduction_op = AtomOp::add;
    std::uint64_t cycles = 0;  // modeled, since the launch's clock start (see ModeledClock)
    // Where a kernel reads a clock: per slot, the modeled cycle its value is ready at, which an
    // instruction reading it waits for (Executor::wait_for_operands). Empty where none reads one.
    std::vector<std::uint64_t> ready;
    // Recording the work blocks share: the warp stopped before an instruction where blocks may
    // part ways, and waits there while the others go on as far as they can.
    bool parked = false;
};

// A warp slice's instruction counts, kept in registers while it runs (the family functions'
// stores to the register file could otherwise alias them) and added to the launch's however the
// slice ends, a fault or a timeout included.
struct SliceTally {
    LaunchResult& result;
    std::uint64_t& block;
    bool checked;
    std::uint64_t warp_instructions = 0;
    std::uint64_t thread_instructions = 0;
    ~SliceTally() {
        result.instructions_run += warp_instructions;
        block += warp_instructions;
        if (checked) {
            result.counts.warp_instructions += warp_instructions;
            result.counts.thread_instructions += thread_instructions;
        }
    }
};

// Where a block has run far past what its kernel's blocks take, its state now and then, to find a
// block that can never end: one whose warps, registers and shared memory come back to what they
// were, while it read nothing from outside the block (Executor::watch_for_loop).
struct LoopWatch {
    Dim3 block{};
    std::uint64_t saved_at = 0;     // the block's warp instructions when the state was saved
    std::uint64_t outside_at = 0;   // Executor::outside_reads_ then
    std::uint64_t looks = 0;        // since the save
    std::uint64_t next_save = 1;    // looks between saves, doubled at each (Brent's method)
    std::uint32_t step_blocks = 0;  // since the last look
    std::vector<std::uint64_t> saved;
};

// A resident block's own state, swapped into the executor while the block takes its turn.
struct BlockState {
    Dim3 block{};
    bool checked = true;
    std::uint32_t place = 0;
    std::uint64_t instructions = 0;  // warp instructions the block ran
    std::uint32_t sm = 0;
    std::uint32_t first_warp_slot = 0;
    std::uint64_t start_cycles = 0;
    // False for a block that has taken its place and not yet had its first turn, where it starts
    // (Executor::run): the rest of its state is start_block's to make.
    bool started = true;
    std::vector<Warp> warps;
    std::vector<std::byte> shared;
    std::vector<std::uint8_t> shared_written;
    std::size_t unwritten_words = 0;
    RaceTracker races;
    std::uint64_t reduction_true = 0;
    std::uint64_t reduction_arrived = 0;
    std::uint32_t barriers = 0;
    LoopWatch loop_watch;
};

class Executor;

// What runs one instruction on the lanes of `exec`: a family below, or a wrapper of one.
using StepHandler = void (*)(Executor&, Warp&, const Instruction&, std::uint32_t);

// One function per family of operations, as opcodes.def names them; friends of the Executor.
#define SIM_OP(op, executor) \
    void executor(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec);
#include "sim/opcodes.def"

class Executor {
public:
    Executor(const Program& program, const Entry& entry, Dim3 grid, Dim3 block,
             const std::vector<std::vector<std::byte>>& params, GlobalMemory& memory,
             const LaunchOptions& options, LaunchResult& result);
    ~Executor();
    Executor& operator=(const Executor&) = delete;
    void run();
    // Writes the module's .global variables to options.module_globals, where given.
    void save_globals();

private:
    // A replay worker (replay_batch): the launch as this executor has it, the shared work
    // included, reporting to its own result.
    Executor(const Executor&) = default;
    const Program& program_;
    const Entry& entry_;
    Dim3 grid_;
    Dim3 block_dim_;
    GlobalMemory& memory_;
    const LaunchOptions& options_;
    LaunchResult* result_;  // a replay worker's own (see ReplayBatch)
    LaunchCounts* counts_;

    std::uint32_t threads_per_block_ = 0;
    std::uint32_t warps_per_block_ = 0;
    std::size_t shared_bytes_ = 0;
    std::vector<std::byte> param_buffer_;
    std::vector<std::uint64_t> symbol_address_;
    std::vector<std::uint64_t> register_image_;
    // Register files of this launch's finished blocks: the next block on a place finds its
    // registers as the last one left them, as on a GPU; a file new to the launch holds the
    // launch's poison (fill_poison). Only the special registers and constants are set.
    std::vector<std::vector<std::uint64_t>> spare_files_;
    // Whether the kernel's threads write every register before they read it
    // (registers_written_before_read): then a finished block's files go to spare_files_, for the
    // next block on any place, as no block can tell them from its place's.
    bool registers_written_before_read_ = false;
    // What the last block on each place left: the next block there starts with its registers,
    // local pages and shared memory (a place's first block: the poison, shared leftovers drawn
    // from the seed).
    std::vector<BlockState> place_leftovers_;
    std::vector<std::uint64_t> register_file();
    std::uint64_t poison_state_ = 0;
    std::uint32_t local_poison_ = 0;  // every word of local memory before a thread writes it
    void fill_poison(std::uint64_t* words, std::size_t count);
    std::vector<std::int32_t> shared_stat_index_;
    std::vector<std::uint8_t> reads_clock_;  // per instruction
    std::uint64_t shared_window_ = 0;        // generic address of shared byte 0
    std::uint64_t local_window_ = 0;         // generic address of local byte 0
    std::uint64_t clock_start_ = 0;          // cycles
    std::uint64_t timer_start_ = 0;          // nanoseconds
    // Where blocks run: `places_` of them at once, each an SM and a run of its warp slots. A
    // launch's blocks take places in a seeded order within each wave; a block that ends leaves
    // its place, its registers and its shared memory to the next.
    std::uint32_t places_ = 0;
    std::uint32_t first_sm_ = 0;            // the SM of place 0
    std::uint32_t place_ = 0;               // the block being run's
    std::uint32_t sm_of_block_ = 0;         // %smid of the block being run
    std::uint32_t first_warp_slot_ = 0;     // %warpid of the block's first warp
    std::uint64_t grid_id_ = 0;             // %gridid
    std::uint64_t block_start_cycles_ = 0;  // where the block's warps start: its SM's clock
    std::size_t local_pages_per_lane_ = 0;
    std::size_t local_touched_ = 0;  // bytes of local pages made, over the launch
    std::vector<std::int32_t> shared_variables_;
    std::vector<std::uint32_t> leftovers_;  // a block's shared memory before it runs

    Dim3 block_{};
    // The block being run is one the launch reports on (LaunchOptions::checked): its counts,
    // races and uninitialised reads are recorded. Another runs alike without the records.
    bool checked_ = true;
    std::uint64_t block_instructions_ = 0;
    std::vector<Warp> warps_;
    std::uint64_t reduction_true_ = 0;  // bar.red: threads whose predicate was true
    std::uint64_t reduction_arrived_ = 0;
    std::vector<std::byte> shared_;
    std::vector<std::uint8_t> shared_written_;  // one flag per 32-bit word
    std::size_t unwritten_words_ = 0;           // its flags still 0
    void note_written(std::size_t word) {
        unwritten_words_ -= shared_written_[word] ^ 1u;
        shared_written_[word] = 1;
        if (word == watched_word_)
            note_watched_write();
    }
    // The word of the launch's first uninitialised shared read, watched in its block until a
    // thread writes it (UninitializedSharedRead::written_later).
    std::size_t watched_word_ = static_cast<std::size_t>(-1);
    Dim3 watched_block_{};
    void note_watched_write();
    RaceTracker races_;
    bool access_raced_ = false;  // the warp-wide access being executed found a race
    // The (line, earlier line, kind) of each race reported, to report each once.
    std::vector<std::array<std::uint32_t, 3>> reported_races_;
    // The (instruction, earlier instruction, kind) record_race settled last: its lines' race is
    // reported, or no more can be. A missing barrier's every racing lane of a checked block asks
    // with the one before's.
    std::array<std::uint32_t, 3> last_race_ = {~0u, ~0u, ~0u};
    std::uint32_t block_barriers_ = 0;  // barriers the current block has completed
    LoopWatch loop_watch_;              // the current block's
    // Reads of what lies outside a block (global, local and generic memory, atomics, printf's
    // format), over the launch: a block that read none between two equal states repeats them.
    std::uint64_t outside_reads_ = 0;
    std::vector<std::uint64_t> loop_scratch_;

    // ---- threads and locations ----

    ThreadId thread_of(const Warp& w, unsigned lane) const {
        return thread_of_index(w.index, lane);
    }

    ThreadId thread_of_index(std::uint32_t warp, unsigned lane) const {
        ThreadId id;
        id.block = block_;
        id.warp = warp;
        id.lane = lane;
        const std::uint32_t t = warp * 32 + lane;
        id.thread.x = t % block_dim_.x;
        id.thread.y = (t / block_dim_.x) % block_dim_.y;
        id.thread.z = t / (block_dim_.x * block_dim_.y);
        return id;
    }

    static std::string thread_text(const ThreadId& t);
    std::string at_text(const SourceLocation& where) const;
    [[noreturn]] void fault(const Warp& w, unsigned lane, std::uint32_t pc, const std::string& kind,
                            const std::string& what, std::uint64_t address);

    std::size_t globals_bytes() const;

    // ---- blocks and warps ----

    // The block being run's state is the executor's; the others wait in their BlockState.
    void swap_block(BlockState& state);
    // The block and its place on the modeled GPU: its SM, its first warp slot, its SM's clock.
    void set_identity(Dim3 b, std::uint32_t place);
    void start_block(Dim3 b, bool checked, std::uint32_t place);
    // Runs the block in the executor to its end.
    void finish_block(BlockState& state);

    // ---- the work blocks share (executor_replay.cpp) ----

    // recording: the first checked block, until it reaches what could tell it from another
    // block; replaying: a block not checked, continuing from the state that block reached.
    enum class Mode : std::uint8_t { normal, recording, replaying };
    // Thrown before an instruction where the block being recorded or replayed may part ways with
    // the others: it has not run.
    struct PartsWays {};
    Mode mode_ = Mode::normal;
    // Recording: no warp can go on without parting ways (or one kept the others from ending).
    bool stuck_ = false;
    bool parked_any_ = false;
    std::uint64_t recorded_after_park_ = 0;  // warp instructions since the first warp parked
    // Recording, once no warp can run: the warps parked at a shared load of words no thread had
    // written, where the others have written them since, go on (as they would have, had they
    // run after them). False where none can, or none has run since the last time.
    bool unpark_readers();
    std::uint64_t unparked_at_ = ~std::uint64_t{0};  // block_instructions_ at the last unpark
    // Recording: loads of leftovers go into the slice (reads_leftovers), from the first time no
    // warp could go on; before, a warp parks at one, as the block's own run always has.
    bool leftovers_kept_ = false;
    // Past this many, the warps still running may be waiting for a parked one.
    static constexpr std::uint64_t kMostAfterPark = 65536;
    // kMostAfterPark, or after warps were unparked, kMostAfterPark for each warp then running:
    // the probe's seven readers run 16,384 warp instructions each after its fill.
    std::uint64_t most_after_park_ = kMostAfterPark;
    std::vector<std::uint8_t> reads_block_identity_;  // per instruction: %ctaid, %smid, %warpid
    // Per special register: some instruction reads it (init_warp and a replay set only those).
    std::array<std::uint8_t, static_cast<std::size_t>(Special::count)> special_read_{};
    std::vector<std::uint8_t> pure_;  // per instruction: it only computes registers from registers
    // Recording: the slots whose value is the block's own (warp * slot_count + slot): computed
    // from its identity or read from a shared word it never wrote (its leftovers); and the
    // computations of such values, in order: a replay runs them again with its own identity and
    // leftovers before it goes on. A computation's operands that are the same in every block are
    // kept with it (captured), as the replay's registers hold their last values, not the ones it
    // read. A block parts ways where such a value reaches an address, a stored word, a branch or
    // anything but a register.
    std::vector<std::uint8_t> tainted_;
    // Recording: the slots where a replay may hold other values than the recorded block did at
    // that point: a capture was taken of it (the replay writes the captured values there), or a
    // value of the block's own was written over by one the same in every block (the replay keeps
    // its own). A computation of the block's own writes only all of such a slot's lanes.
    std::vector<std::uint8_t> captured_;
    // Per slot: a special register or a constant, the same at every step (never captured).
    std::vector<std::uint8_t> fixed_slot_;
    struct SliceStep {
        std::uint32_t warp;
        std::uint32_t pc;
        std::uint32_t mask;  // the warp's lanes at the instruction
        std::uint32_t exec;  // those that ran it
        bool check;          // its guard is the block's: a replay must run the same lanes
        bool compute;        // its result is the block's: a replay computes it again
        // A 32-bit shared load of the whole warp, some of whose lanes read words the block had
        // not written: the replay takes the recorded result (its first capture) with its own
        // leftovers in those lanes (leftover_lanes; their words in leftover_words_).
        bool leftover = false;
        bool leftover_rewritten = false;  // the block wrote one of their words after it
        std::uint32_t leftover_lanes = 0;
        std::uint32_t first_capture = 0;  // where its captures start in capture_pool_
        std::uint32_t captures = 0;
    };
    std::vector<SliceStep> slice_;
    // The captures, one after another: a word of the slot (kWideCapture set where a lane's
    // value needs 64 bits), then its 32 lanes in 32 words, or in 64 where wide. A replay reads
    // them all, each time: in 32 bits, half a probe's slice is 2.5 MB.
    std::vector<std::uint32_t> capture_pool_;
    static constexpr std::uint32_t kWideCapture = 0x8000'0000u;
    // Each leftover step's 32 lanes' words, one after another (shared memory is under 2^18 bytes
    // where the slice keeps leftovers).
    std::vector<std::uint16_t> leftover_words_;
    // Past this many steps (32 MiB), the slice takes no more: the warp parks there.
    static constexpr std::size_t kMostSliceSteps = std::size_t{1} << 20;
    // Past this many words (32 MiB), a computation that needs a capture parts ways instead.
    static constexpr std::size_t kMostCaptureWords = std::size_t{1} << 23;
    void capture(std::int32_t slot, const std::uint64_t* lanes);
    // Recording: whether the block may run the instruction as shared work (parks: the warp
    // parks there), and if so whether what it computes is the same in every block (alike) or
    // the block's own (own: the replay computes it again); `leftover`: it is a load
    // reads_leftovers picked.
    enum class Recorded : std::uint8_t { parks, alike, own };
    Recorded recordable(const Warp& w, const Instruction& in, std::uint32_t exec,
                        bool leftover) const;
    // Recording, just before the instruction runs: the slice's bookkeeping for it (`recorded`:
    // what recordable said); and just after a leftover load ran, its result. record_instruction
    // returns whether the instruction is clean (kClean): alike, nothing of the block's own
    // among its operands or its guard, nothing recorded.
    bool record_instruction(const Warp& w, const Instruction& in, std::uint32_t exec, bool leftover,
                            Recorded recorded);
    void record_leftover_result(const Warp& w, const Instruction& in);
    // Recording: a load reads_leftovers can keep in the slice (a 32-bit shared load of the whole
    // warp, at an address and under a guard the same in every block, reading at least one word
    // the block has not written).
    bool reads_leftovers(const Warp& w, const Instruction& in, std::uint32_t exec) const;
    // What a replayed block's shared word it never wrote holds: start_block's leftovers (or
    // poison) for one word.
    std::uint32_t leftover_bits(std::uint64_t linear_block, std::uint64_t word) const;
    // The recorded block's state where it parted ways (or ended), and the warp instructions it
    // ran to get there.
    std::optional<BlockState> shared_work_;
    std::uint64_t shared_work_instructions_ = 0;
    // Warp instructions the last block replayed on the launch's thread ran past the shared work
    // (0: none yet since the work was recorded). Replays spread over threads only where this is
    // worth a thread, with the steps of the slice it runs again first: copying the executor for
    // each (its shared work's registers, 2 MB for the probe) cost more than a probe block's
    // replay, a few stores past the shared loop.
    std::uint64_t replay_own_instructions_ = 0;
    static constexpr std::uint64_t kReplayWorthAThread = 16384;
    // A replay's undo log: the register slots and shared words it changed, and what they held.
    struct SavedSlot {
        std::uint32_t warp;
        std::int32_t slot;
        std::array<std::uint64_t, 32> values;
    };
    std::vector<SavedSlot> saved_slots_;
    std::vector<std::uint8_t> slot_saved_;  // warp * slot_count + slot
    std::vector<std::pair<std::size_t, std::uint32_t>> saved_words_;
    // Recording and replaying: the lanes of each warp's slots that hold a value the block wrote
    // (or a constant, a special register); a read of any other lane reads the block's own
    // leftovers. warp * slot_count + slot.
    std::vector<std::uint32_t> written_lanes_;
    std::vector<std::uint32_t> shared_work_written_;
    bool reads_unwritten(const Warp& w, const Instruction& in, std::uint32_t exec) const;
    void note_destinations(const Warp& w, const Instruction& in, std::uint32_t exec);

    // Whether the instruction does the same in every block whose state is the same (its
    // addresses, what it reads): false where it reads what tells blocks apart, or reaches what
    // another block may write, or local memory.
    bool same_in_every_block(const Warp& w, const Instruction& in, std::uint32_t exec) const;
    void save_destinations(const Warp& w, const Instruction& in);
    void save_slot(const Warp& w, std::int32_t slot) {
        if (slot < 0)
            return;
        std::uint8_t& saved = slot_saved_[static_cast<std::size_t>(w.index) * entry_.slot_count +
                                          static_cast<std::size_t>(slot)];
        if (saved)
            return;
        saved = 1;
        SavedSlot s{w.index, slot, {}};
        std::copy_n(&w.regs[static_cast<std::size_t>(slot) * 32], 32, s.values.begin());
        saved_slots_.push_back(s);
    }
    void save_shared_word(std::size_t word);
    // Runs the first checked block until it parts ways; keeps its state there where that is
    // worth sharing. Returns whether the block ended.
    bool record_shared_work(BlockState& state, Dim3 b, bool checked, std::uint32_t place);
    // Runs block b (on `place`) from the shared state to its end, undoing its changes to that
    // state after. Where it reached what could tell it apart it is left with nothing of it but
    // global stores that running it again repeats: `parted` where any block would (the others
    // run from their start too), `went_its_way` where its own identity took another way than the
    // recorded block's (the others may still share).
    enum class Replay { ended, parted, went_its_way };
    Replay replay(Dim3 b, std::uint32_t place);
    // The first part of a replay: the shared work (swapped in) takes block b's identity on
    // `place`, its leftovers in the shared words the recording never wrote (own_shared's words
    // where given, else leftover_bits), and the slice computed again from them. False where its
    // guards took other lanes than the recorded block's: then nothing of it is left. Else
    // end_replay puts the shared work back as it was.
    struct ReplayStart;
    bool begin_replay(Dim3 b, std::uint32_t place, const std::byte* own_shared, ReplayStart& start);
    void end_replay(const ReplayStart& start);
    // begin_replay's slice: the block's leftovers (linear: its index) put in the shared words
    // the recording never wrote and each step computed again; false at a guard that lets other
    // lanes run than the recorded block's.
    bool compute_slice_again(std::uint64_t linear, const std::byte* own_shared);

    // A launch of checked blocks alone (the exercise's kernels' sampled blocks), run
    // speculatively (speculate): the first block is recorded alone and the others start from
    // its work, which is what their runs in turns from their start would have reached only
    // where speculation_held(); else launch() puts back every global word it wrote (undo_log_)
    // and runs it again without. What must hold, beside continue_from_checked_work's rules: the
    // recording stored nothing in global memory (the others would not have stored it again at
    // their own time), every other block started from the work, no atomic reached global
    // memory, and nothing was stored into the input (which the others' work read as the
    // recording read it).
public:
    struct UndoWrite {
        std::byte* at;
        std::array<std::byte, 16> bytes;
        std::size_t size;
    };
    void speculate(std::vector<UndoWrite>* undo_log) { undo_log_ = undo_log; }
    bool speculation_held() const;

private:
    std::vector<UndoWrite>* undo_log_ = nullptr;
    bool recording_stored_ = false;        // a global store or atomic while recording
    bool global_atomic_ = false;           // a global atomic anywhere in the launch
    std::uint64_t started_from_work_ = 0;  // checked blocks continue_from_checked_work started
    void note_global_write(std::byte* at, std::size_t size, bool atomic) {
        if (undo_log_ == nullptr)
            return;
        UndoWrite undo{at, {}, size};
        std::memcpy(undo.bytes.data(), at, size);
        undo_log_->push_back(undo);
        recording_stored_ = recording_stored_ || mode_ == Mode::recording;
        global_atomic_ = global_atomic_ || atomic;
    }

    // A checked block from the shared work (the decoded engine): where the recorded block was
    // checked and nothing it did until the recording ended depends on the order its warps ran
    // in past what a block's own run does (see keeps_checked_work), another checked block
    // starts where it ended, with what the recording added to the counts and races added again,
    // and the race tracker and barriers as they were there. Its reports are those of its own
    // run from its start: the shared work's accesses are the same in every block, and what
    // follows runs as any checked block's.
    struct CheckedWork {
        std::uint64_t generation = 0;  // shared_work_generation_ it belongs to
        LaunchCounts counts;           // what the recording added to the launch's
        std::uint64_t race_count = 0;
        RaceTracker races;
        std::uint32_t barriers = 0;
    };
    std::optional<CheckedWork> checked_work_;
    // Per instruction: from there on a warp reads no memory but parameters and constants,
    // touches no shared memory, makes no atomic, no printf and reads no clock (bar.sync, votes
    // and shuffles among its own warps, global stores and arithmetic only). A warp parked at
    // such an instruction changes nothing the block's other warps read by waiting there.
    std::vector<std::uint8_t> inert_;
    void find_inert();
    // Whether the recording just ended keeps a CheckedWork: the recorded block checked, no
    // clock read, no warp unparked, and every warp parked at an inert instruction.
    bool keeps_checked_work() const;
    // Block b (started by start_block, the executor's) goes on from the shared work where it can;
    // where its identity takes it another way, it stays at its start.
    void continue_from_checked_work(Dim3 b, std::uint32_t place);
    // Replays blocks[k] on places[k] (the order in which run() would replay them one by one) on
    // up to options_.threads threads, each from its own copy of the shared work, and applies
    // what they did in that order: their global stores, instructions and blocks run. Stops
    // before the first that did not end, or that ran past the launch's budget counted in
    // order, or threw (a fault, a timeout): run() replays that one itself, as it would have.
    // Returns how many, from the first, it applied. A replay reads global memory only in the
    // input, which no replay writes, and none runs alongside a resident block: what one does
    // cannot reach another's.
    std::size_t replay_batch(const std::vector<Dim3>& blocks,
                             const std::vector<std::uint32_t>& places);
    // A replay worker's global stores, kept to be applied in launch order (store_log_).
    struct LoggedStore {
        std::byte* at;
        std::uint64_t value;
        std::uint8_t size;
    };
    std::vector<LoggedStore>* store_log_ = nullptr;
    // A log past this many stores ends the worker's replay (StoreLogFull): run() replays that
    // block itself, storing directly. A block that stores without end (a store in an endless
    // loop) logged 24 bytes a lane-store up to its budget: 4.2 GB for hostile/infinite_loop.
    std::size_t store_log_limit_ = 0;
    struct StoreLogFull {};
    void store_global(std::byte* at, std::uint64_t value, std::size_t size) {
        note_global_write(at, size, false);
        if (store_log_ == nullptr)
            return store_bytes(at, value, size);
        if (store_log_->size() >= store_log_limit_)
            throw StoreLogFull{};
        store_log_->push_back({at, value, static_cast<std::uint8_t>(size)});
    }
    std::size_t memory_hint_ = 0;  // GlobalMemory::find's, this executor's own
    // Each global instruction's lowest address when it last ran (prefetch_next).
    std::vector<std::uint64_t> last_global_;
    // The workers of replay_batch, each a copy of this executor made after the shared work was
    // recorded (`generation`: shared_work_generation_ then), kept for the launch's next batches
    // (a copy holds the shared work's registers: megabytes for the probe). A copy of the
    // executor (a worker) has none.
    struct ReplayWorkers {
        std::vector<std::unique_ptr<Executor>> executors;
        std::vector<std::unique_ptr<LaunchResult>> results;
        std::uint64_t generation = 0;
        ReplayWorkers() = default;
        ReplayWorkers(const ReplayWorkers&) {}
        ReplayWorkers& operator=(const ReplayWorkers&) = delete;
    };
    ReplayWorkers replay_workers_;
    std::uint64_t shared_work_generation_ = 0;  // how many times shared_work_ was recorded
    void make_replay_workers(unsigned count);
    BlockState copy_of_block() const;
    // One turn of the block: each warp that can run runs one slice, or a barrier every live
    // thread waits at completes. True when every thread of the block has exited.
    bool step_block();
    // Past kWatchLoopsFrom warp instructions of its block, now and then: ends the launch as out of
    // budget where the block has come back to a state it was in (the same warps at the same
    // places, registers, shared memory) having read nothing from outside it since, so that it
    // can never end.
    void watch_for_loop();
    static constexpr std::uint64_t kWatchLoopsFrom = std::uint64_t{1} << 20;  // ten probe blocks
    static constexpr std::uint32_t kStepBlocksPerLook = 4;
    void block_snapshot(std::vector<std::uint64_t>& into) const;
    bool is_clock_slot(std::int32_t slot) const;
    void update_clocks(Warp& w);
    // The modeled clock's step for one warp instruction: an issue cycle, and where a clock is
    // read, the wait for the instruction's operands (ModeledClock's latencies).
    static constexpr std::uint64_t kIssueCycles = 1;
    void issue(Warp& w, const Instruction& in) {
        w.cycles += kIssueCycles;
        if (clock_observed_)
            wait_for_operands(w, in);
    }
    void wait_for_operands(Warp& w, const Instruction& in);
    // A block that polls another's progress gives the others their turn after a few polls, as
    // a GPU runs them at once: true once this turn has had kPollsPerTurn of them, which ends
    // the warp's slice and the block's turn (the resident blocks' loop resets the count).
    static constexpr std::uint32_t kPollsPerTurn = 16;
    std::uint32_t polls_this_turn_ = 0;
    bool note_poll(const Instruction& in) {
        return in.polls && ++polls_this_turn_ >= kPollsPerTurn;
    }
    void init_warp(Warp& w);
    static void reschedule(Warp& w);
    static void advance(Warp& w) {
        ++w.pc;
        if (w.waiting != 0 && w.pc >= w.min_waiting_pc)
            reschedule(w);
    }
    // The lanes of w.mask whose guard holds.
    static std::uint32_t guard_mask(const Warp& w, const Instruction& in) {
        const std::uint64_t* p = &w.regs[static_cast<std::size_t>(in.guard) * 32];
        std::uint32_t holds = 0;
        for (unsigned lane = 0; lane < 32; ++lane)
            holds |= static_cast<std::uint32_t>(p[lane] != 0) << lane;
        return (in.negate_guard ? ~holds : holds) & w.mask;
    }
    // One slice of the warp, by the launch's engine.
    void run_warp(Warp& w);
    // Engine::reference: the executor the decoded engine replaced, instruction by instruction.
    void run_warp_reference(Warp& w);

    // ---- the decoded engine (executor_dispatch.cpp) ----

    // What each instruction is, resolved once per launch: the function that runs it (its family
    // of opcodes.def, or the .ftz wrapper), or the scheduling it takes (branches, exits,
    // barriers), so that a slice runs without looking an operation up.
    using Handler = StepHandler;
    enum class StepKind : std::uint8_t { compute, bra, exit, bar, bar_red, trap, unsupported };
    struct Step {
        Handler run = nullptr;
        StepKind kind = StepKind::compute;
        bool reads_clock = false;
        bool memory = false;  // ld, st, atom: where blocks sharing work may part ways
    };
    std::vector<Step> steps_;
    bool decoded_ = true;  // options_.engine is Engine::decoded
    // Some instruction reads a clock. Where none does, a warp's modeled cycles are never seen:
    // the blocks not checked skip the bank costs that only move their clocks.
    bool clock_observed_ = false;
    // Some instruction reads a printf's result (execute_printf gives it only then: a kernel that
    // prints at every step and never reads the result pays nothing for it).
    bool printf_result_read_ = false;
    // Recording and replaying, per warp and instruction: kChecked once every slot the
    // instruction reads or writes holds a value the block wrote in each of the warp's lanes
    // (written_lanes_ only grows, so it stays so: neither the check for unwritten reads nor the
    // note of its destinations can change anything again); kSaved once a replay's undo log holds
    // each slot it writes. Cleared where written_lanes_ and the log start again. Recording,
    // kClean once record_instruction found nothing of the block's own among its operands and
    // nothing to record: so it stays until a slot of the warp turns the block's own or back
    // (taint_changed), and the decoded engine does not ask again.
    static constexpr std::uint8_t kChecked = 1;
    static constexpr std::uint8_t kSaved = 2;
    static constexpr std::uint8_t kClean = 4;
    std::vector<std::uint8_t> sharing_flags_;
    void taint_changed(std::uint32_t warp) {
        std::uint8_t* flags = &sharing_flags_[warp * entry_.code.size()];
        for (std::size_t pc = 0; pc < entry_.code.size(); ++pc)
            flags[pc] &= static_cast<std::uint8_t>(~kClean);
    }
    void clear_sharing_flags() { sharing_flags_.assign(warps_.size() * entry_.code.size(), 0); }
    std::uint32_t lanes_of(const Warp& w) const {
        const std::uint32_t first = w.index * 32;
        return threads_per_block_ - first >= 32 ? ~0u : (1u << (threads_per_block_ - first)) - 1;
    }
    // Whether every slot `in` reads or writes is written in all of the warp's lanes.
    bool slots_written(const Warp& w, const Instruction& in) const;
    void save_written_slots(const Warp& w, const Instruction& in);
    void decode_steps();
    static void ftz_step(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec);
    // The full-warp case of the instruction's family where executor_fast.cpp has one, else null.
    static StepHandler full_warp_step(const Instruction& in);
    static void shared_load_step(Executor& self, Warp& w, const Instruction& in,
                                 std::uint32_t exec);
    // A branch, exit, barrier, trap or unsupported instruction: true where the slice ends.
    bool control(Warp& w, const Instruction& in, std::uint32_t exec);
    // The launch's or the block's budget ran out at the warp's instruction.
    [[noreturn]] void out_of_budget(const Warp& w, bool block_bound, std::uint64_t block_budget);
    void run_warp_decoded(Warp& w);

    // ---- arithmetic ----

    std::uint64_t* reg(Warp& w, std::int32_t slot) {
        return &w.regs[static_cast<std::size_t>(slot) * 32];
    }

    // The instruction's destination and its k-th source, lane by lane (nullptr where none).
    std::uint64_t* dst(Warp& w, const Instruction& in) {
        return in.dst[0] >= 0 ? reg(w, in.dst[0]) : nullptr;
    }
    const std::uint64_t* src(Warp& w, const Instruction& in, int k) {
        return in.src[k] >= 0 ? reg(w, in.src[k]) : nullptr;
    }
    // The destination and the first `Sources` sources at once, as the family functions read them
    // (o.d[lane], o.a[lane], ...); sources beyond `Sources` are nullptr.
    struct Operands {
        std::uint64_t* d;
        const std::uint64_t* a;
        const std::uint64_t* b;
        const std::uint64_t* c;
    };
    template <int Sources>
    Operands operands(Warp& w, const Instruction& in) {
        static_assert(Sources >= 1 && Sources <= 3, "a family reads one to three sources");
        return {dst(w, in), src(w, in, 0), Sources >= 2 ? src(w, in, 1) : nullptr,
                Sources >= 3 ? src(w, in, 2) : nullptr};
    }

    // Runs the instruction's family (opcodes.def) on the lanes of `exec`.
    void execute(Warp& w, const Instruction& in, std::uint32_t exec);
    void execute_ftz(Warp& w, const Instruction& in, std::uint32_t exec);
#define SIM_OP(op, executor) \
    friend void executor(Executor&, Warp&, const Instruction&, std::uint32_t);
#include "sim/opcodes.def"

    // ---- memory ----

    // Aligned accesses of at most 16 bytes never cross a page.
    std::byte* local_bytes_at(Warp& w, unsigned lane, std::uint32_t pc, std::uint64_t address);

    struct Resolved {
        std::byte* bytes = nullptr;
        Space space = Space::global;
        std::uint64_t shared_offset = 0;
    };
    Resolved resolve(Warp& w, unsigned lane, std::uint32_t pc, Space space, std::uint64_t address,
                     std::size_t size, bool store);
    static std::uint64_t load_bytes(const std::byte* bytes, std::size_t size);
    static void store_bytes(std::byte* bytes, std::uint64_t v, std::size_t size);
    void memory_access(Warp& w, const Instruction& in, std::uint32_t exec);
    bool load_shared_words(Warp& w, const Instruction& in, std::uint32_t exec,
                           const std::uint64_t* base);
    // The common cases, warp-wide: a global load or store whose lanes lie in one allocation,
    // aligned; a shared store of a block that records nothing. False, having done nothing,
    // otherwise.
    bool global_words(Warp& w, const Instruction& in, std::uint32_t exec, const std::uint64_t* base,
                      bool store);
    void prefetch_next(std::uint32_t pc, std::uint64_t low, std::uint64_t span,
                       const std::byte* bytes, bool store);
    bool store_shared_words(Warp& w, const Instruction& in, std::uint32_t exec,
                            const std::uint64_t* base);
    void track_store(const Warp& w, unsigned lane, std::uint64_t offset, std::uint64_t value,
                     std::size_t size);
    void atomic(Warp& w, const Instruction& in, std::uint32_t exec);
    // A global word an atomic touched, with its value before the launch's first atomic on it,
    // for save_globals' carrying over of the blocks not run.
    struct GlobalAtomic {
        std::uint64_t first_value = 0;
        std::uint8_t bytes = 0;
        bool additive = true;  // only integer add/inc touched it
    };
    std::map<std::uint64_t, GlobalAtomic> global_atomics_;
    template <class T>
    void note_global_atomic(std::uint64_t address, const std::byte* bytes, AtomOp op) {
        const bool additive =
            std::is_integral_v<T> && sizeof(T) >= 4 && (op == AtomOp::add || op == AtomOp::inc);
        const auto [it, fresh] = global_atomics_.try_emplace(address);
        if (fresh) {
            T old;
            std::memcpy(&old, bytes, sizeof(T));
            it->second.first_value = bits_of<T>(old);
            it->second.bytes = static_cast<std::uint8_t>(sizeof(T));
        }
        it->second.additive = it->second.additive && additive &&
                              it->second.bytes == static_cast<std::uint8_t>(sizeof(T));
    }
    void record_uninitialized(const Warp& w, unsigned lane, std::uint64_t byte_offset);
    void locate_variable(std::uint64_t byte_offset, std::string& name,
                         std::uint64_t& word_in_variable) const;
    static std::string lane_text(const ThreadId& t);
    // A lane's race: counted for the access, and reported once per pair of lines (report_race).
    // Inline up to the memo: a missing barrier's every racing lane of a checked block comes
    // here, and the report's frame cost more than the check.
    void record_race(const Warp& w, unsigned lane, const RaceHit& hit, std::uint64_t byte_offset) {
        // Two writes of one value race only in name (racecheck's INFO): not counted among the
        // accesses that raced.
        access_raced_ = access_raced_ || hit.kind != RaceKind::same_value_write;
        const auto kind = static_cast<std::uint32_t>(hit.kind);
        if (last_race_[0] == w.pc && last_race_[1] == hit.pc && last_race_[2] == kind)
            return;
        last_race_ = {w.pc, hit.pc, kind};  // each way out of report_race settles it
        report_race(w, lane, hit, byte_offset);
    }
    void report_race(const Warp& w, unsigned lane, const RaceHit& hit, std::uint64_t byte_offset);

    // ---- bank accounting (the rule itself is in banks.cpp) ----

    BankCostCache bank_costs_;
    std::vector<std::uint32_t> bank_cost_slot_;  // per instruction: where its last request was

    // A warp-wide global access's distinct sectors, counted in a checked block.
    void record_global(bool store, std::uint32_t lanes,
                       const std::array<std::uint64_t, 32>& sectors);
    // A warp-wide shared access's cost on the warp's clock, and in a checked block its counts.
    void record_shared(Warp& w, const Instruction& in, std::uint32_t lanes,
                       const std::array<std::uint64_t, 32>& offsets, std::uint32_t bytes_per_lane);
};

}  // namespace grader::sim::detail
