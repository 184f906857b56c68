// Executes a decoded entry warp by warp. See sim.hpp for the execution model.

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "sim/banks.hpp"
#include "sim/program.hpp"
#include "sim/races.hpp"
#include "sim/sim.hpp"

namespace grader::sim {

namespace {

using namespace detail;

// Generic addresses of the shared and local windows (what cvta.shared/cvta.local produce). Global
// allocations start at 0x10'0000'0000 and stay far below them.
constexpr std::uint64_t kSharedWindow = 0x0000'7000'0000'0000ull;
constexpr std::uint64_t kLocalWindow = 0x0000'7100'0000'0000ull;
constexpr std::uint64_t kWindowSize = 1ull << 32;
// What the GPU path poisons shared memory with before the hidden-input run.
constexpr std::uint32_t kSharedPoison = 0x7fc00badu;
constexpr std::size_t kMaxSharedBytes = 227 * 1024;  // sm_90's per-block limit
// What a GPU refuses to launch without an opt-in the harness never makes: more static shared
// memory per block than 48 KiB (ptxas and the driver refuse it), more local memory per thread than
// 512 KiB (sm_70 and later; cuLaunchKernel says CUDA_ERROR_INVALID_VALUE or "too many resources
// requested for launch").
constexpr std::size_t kMaxStaticSharedBytes = 48 * 1024;
constexpr std::size_t kMaxLocalBytesPerThread = 512 * 1024;
// Local memory is simulated in pages made on first touch, at most this much per launch (the
// worker's own memory): past it the simulator gives up, which is not the kernel's fault.
constexpr std::size_t kLocalPage = 4096;
constexpr std::size_t kMaxLocalTouched = 256ull << 20;
// The modeled clock's costs, CostModel's default units taken as cycles (see ModeledClock).
constexpr std::uint64_t kIssueCycles = 1;
constexpr std::uint64_t kWavefrontCycles = 20;

std::uint64_t unix_ns() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
}

std::string hex(std::uint64_t value) {
    char text[32];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
    return text;
}

std::string dim_text(Dim3 d) {
    return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) +
           ")";
}

unsigned ctz(std::uint32_t m) {
    return static_cast<unsigned>(__builtin_ctz(m));
}
unsigned popcount(std::uint32_t m) {
    return static_cast<unsigned>(__builtin_popcount(m));
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

template <class T>
struct Wider;
template <>
struct Wider<std::uint8_t> {
    using type = std::uint16_t;
};
template <>
struct Wider<std::int8_t> {
    using type = std::int16_t;
};
template <>
struct Wider<std::uint16_t> {
    using type = std::uint32_t;
};
template <>
struct Wider<std::int16_t> {
    using type = std::int32_t;
};
template <>
struct Wider<std::uint32_t> {
    using type = std::uint64_t;
};
template <>
struct Wider<std::int32_t> {
    using type = std::int64_t;
};
__extension__ typedef unsigned __int128 UInt128;  // GCC and Clang: mul.hi of 64 bits
__extension__ typedef __int128 Int128;
template <>
struct Wider<std::uint64_t> {
    using type = UInt128;
};
template <>
struct Wider<std::int64_t> {
    using type = Int128;
};

template <class T>
T mul_high(T a, T b) {
    using W = typename Wider<T>::type;
    return static_cast<T>((static_cast<W>(a) * static_cast<W>(b)) >> (8 * sizeof(T)));
}

// What ends a launch early.
struct Stop {
    LaunchStatus status;
};

struct Warp {
    std::uint32_t index = 0;
    std::vector<std::uint64_t> regs;  // slot * 32 + lane
    // Local memory in pages, made on first touch: a kernel that declares a large local array and
    // touches little of it costs little. Index lane * pages per lane + page.
    std::vector<std::unique_ptr<std::byte[]>> local_pages;
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
};

class Executor {
public:
    Executor(const Program& program, const Entry& entry, Dim3 grid, Dim3 block,
             const std::vector<std::vector<std::byte>>& params, GlobalMemory& memory,
             const LaunchOptions& options, LaunchResult& result)
        : program_(program),
          entry_(entry),
          grid_(grid),
          block_dim_(block),
          memory_(memory),
          options_(options),
          result_(result),
          counts_(result.counts) {
        threads_per_block_ = block.x * block.y * block.z;
        warps_per_block_ = (threads_per_block_ + 31) / 32;
        shared_bytes_ = entry.dynamic_shared_offset + options.dynamic_shared_bytes;
        if (options.dynamic_shared_bytes == 0)
            shared_bytes_ = entry.static_shared_bytes;
        // Parameters, laid out as the PTX declares them.
        param_buffer_.assign(entry.param_bytes, std::byte{0});
        for (std::size_t k = 0; k < entry.params.size(); ++k) {
            const Symbol& p = program.symbols[static_cast<std::size_t>(entry.params[k])];
            std::memcpy(param_buffer_.data() + p.offset, params[k].data(), p.size);
        }
        // Symbol addresses: global variables get fresh allocations for this launch.
        symbol_address_.assign(program.symbols.size(), 0);
        for (std::size_t s = 0; s < program.symbols.size(); ++s) {
            const Symbol& sym = program.symbols[s];
            if (sym.space == Space::global || sym.space == Space::constant) {
                symbol_address_[s] = memory.allocate(sym.size);
                if (!sym.init.empty())
                    memory.write(symbol_address_[s], sym.init.data(), sym.init.size());
            } else {
                symbol_address_[s] = sym.offset;
            }
        }
        register_image_.assign(static_cast<std::size_t>(entry.slot_count) * 32, 0);
        for (const ConstantSlot& c : entry.constants) {
            const std::uint64_t value =
                c.value + (c.symbol >= 0 ? symbol_address_[static_cast<std::size_t>(c.symbol)] : 0);
            std::fill_n(register_image_.begin() + static_cast<std::ptrdiff_t>(c.slot) * 32, 32,
                        value);
        }
        shared_stat_index_.assign(entry.code.size(), -1);
        // Instructions that read a clock: the clock's slots are brought up to date before them.
        reads_clock_.assign(entry.code.size(), 0);
        for (std::size_t pc = 0; pc < entry.code.size(); ++pc) {
            for (const std::int32_t slot : entry.code[pc].src) {
                reads_clock_[pc] |= static_cast<std::uint8_t>(is_clock_slot(slot));
            }
        }
        local_pages_per_lane_ = (entry.local_bytes + kLocalPage - 1) / kLocalPage;
        clock_start_ = ModeledClock::start_cycles(options.clock_seed);
        timer_start_ = ModeledClock::start_nanoseconds(
            options.clock_seed, options.timer_epoch_ns != 0 ? options.timer_epoch_ns : unix_ns());
        sm_count_ = ModeledDevice::sm_count(options.clock_seed);
        grid_id_ = ModeledDevice::grid_id(options.clock_seed);
        // Names of shared variables, for the uninitialised-read report.
        for (const auto s : entry.shared_symbols)
            shared_variables_.push_back(s);
    }

    void run() {
        const std::vector<Dim3> blocks =
            options_.blocks.empty()
                ? first_blocks(grid_, static_cast<std::uint64_t>(grid_.x) * grid_.y * grid_.z)
                : options_.blocks;
        warps_.resize(warps_per_block_);
        for (std::uint32_t w = 0; w < warps_per_block_; ++w) {
            warps_[w].index = w;
            warps_[w].local_pages.resize(local_pages_per_lane_ * 32);
        }
        for (const Dim3& b : blocks) {
            if (b.x >= grid_.x || b.y >= grid_.y || b.z >= grid_.z) {
                throw std::invalid_argument("block " + dim_text(b) + " is outside the grid " +
                                            dim_text(grid_));
            }
            run_block(b);
            ++counts_.blocks_executed;
        }
    }

private:
    const Program& program_;
    const Entry& entry_;
    Dim3 grid_;
    Dim3 block_dim_;
    GlobalMemory& memory_;
    const LaunchOptions& options_;
    LaunchResult& result_;
    LaunchCounts& counts_;

    std::uint32_t threads_per_block_ = 0;
    std::uint32_t warps_per_block_ = 0;
    std::size_t shared_bytes_ = 0;
    std::vector<std::byte> param_buffer_;
    std::vector<std::uint64_t> symbol_address_;
    std::vector<std::uint64_t> register_image_;
    std::vector<std::int32_t> shared_stat_index_;
    std::vector<std::uint8_t> reads_clock_;  // per instruction
    std::uint64_t clock_start_ = 0;          // cycles
    std::uint64_t timer_start_ = 0;          // nanoseconds
    std::uint32_t sm_count_ = 0;             // %nsmid
    std::uint32_t sm_of_block_ = 0;          // %smid of the block being run
    std::uint64_t grid_id_ = 0;              // %gridid
    std::uint64_t block_start_cycles_ = 0;   // where the next block's warps start
    std::size_t local_pages_per_lane_ = 0;
    std::size_t local_touched_ = 0;          // bytes of local pages made, over the launch
    std::vector<std::int32_t> shared_variables_;

    Dim3 block_{};
    std::vector<Warp> warps_;
    std::uint64_t reduction_true_ = 0;  // bar.red: threads whose predicate was true
    std::uint64_t reduction_arrived_ = 0;
    std::vector<std::byte> shared_;
    std::vector<std::uint8_t> shared_written_;  // one flag per 32-bit word
    RaceTracker races_;
    bool access_raced_ = false;  // the warp-wide access being executed found a race
    // The (line, earlier line, kind) of each race reported, to report each once.
    std::vector<std::array<std::uint32_t, 3>> reported_races_;

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

    static std::string thread_text(const ThreadId& t) {
        return "thread " + dim_text(t.thread) + " of block " + dim_text(t.block);
    }

    std::string at_text(const SourceLocation& where) const {
        std::string text;
        if (where.line > 0) {
            text = (where.file.empty() ? std::string("line ") : where.file + " line ") +
                   std::to_string(where.line);
        } else {
            text = "PTX line " + std::to_string(where.ptx_line);
        }
        return text + " (" + where.instruction + ")";
    }

    [[noreturn]] void fault(const Warp& w, unsigned lane, std::uint32_t pc, const std::string& kind,
                            const std::string& what, std::uint64_t address) {
        Fault f;
        f.kind = kind;
        f.where = entry_.locations[pc];
        f.thread = thread_of(w, lane);
        f.address = address;
        f.message = what + " at " + at_text(f.where) + ", " + thread_text(f.thread);
        result_.message = f.message;
        result_.fault = std::move(f);
        throw Stop{LaunchStatus::fault};
    }

    // ---- blocks and warps ----

    void run_block(Dim3 b) {
        block_ = b;
        sm_of_block_ = ModeledDevice::sm_of_block(
            options_.clock_seed,
            b.x + static_cast<std::uint64_t>(grid_.x) * (b.y + static_cast<std::uint64_t>(grid_.y) * b.z));
        shared_.resize((shared_bytes_ + 3) / 4 * 4);  // whole words, for the race tracker
        for (std::size_t k = 0; k + 4 <= shared_bytes_; k += 4)
            std::memcpy(&shared_[k], &kSharedPoison, 4);
        shared_written_.assign((shared_bytes_ + 3) / 4, 0);
        races_.start_block((shared_bytes_ + 3) / 4);
        for (const Warp& w : warps_)
            block_start_cycles_ = std::max(block_start_cycles_, w.cycles);
        reduction_true_ = 0;
        reduction_arrived_ = 0;
        for (Warp& w : warps_)
            init_warp(w);

        while (true) {
            bool ran = false;
            for (Warp& w : warps_) {
                if ((w.live & ~w.blocked) != 0) {
                    run_warp(w);
                    ran = true;
                }
            }
            if (ran)
                continue;
            bool any_live = false;
            for (Warp& w : warps_)
                any_live = any_live || w.live != 0;
            if (!any_live)
                return;
            // Every thread that has not exited waits at a barrier: it completes.
            for (Warp& w : warps_) {
                if (w.reduction_lanes != 0) {
                    std::uint64_t value = reduction_true_;
                    if (w.reduction_op == AtomOp::and_)
                        value = reduction_true_ == reduction_arrived_;
                    if (w.reduction_op == AtomOp::or_)
                        value = reduction_true_ != 0;
                    std::uint64_t* d = reg(w, w.reduction_slot);
                    for (std::uint32_t m = w.reduction_lanes; m != 0; m &= m - 1)
                        d[ctz(m)] = value;
                    w.reduction_lanes = 0;
                }
            }
            reduction_true_ = 0;
            reduction_arrived_ = 0;
            races_.barrier();
            // The warps waited for the last one to arrive.
            std::uint64_t arrived = 0;
            for (const Warp& w : warps_)
                arrived = std::max(arrived, w.cycles);
            for (Warp& w : warps_) {
                w.cycles = arrived;
                w.blocked = 0;
                w.mask = 0;
                reschedule(w);
            }
        }
    }

    bool is_clock_slot(std::int32_t slot) const {
        const std::int32_t s = slot - entry_.special_base;
        return s == static_cast<std::int32_t>(Special::clock) ||
               s == static_cast<std::int32_t>(Special::clock64) ||
               s == static_cast<std::int32_t>(Special::globaltimer) ||
               s == static_cast<std::int32_t>(Special::globaltimer_lo) ||
               s == static_cast<std::int32_t>(Special::globaltimer_hi);
    }

    void update_clocks(Warp& w) {
        const std::uint64_t clock = clock_start_ + w.cycles;
        const std::uint64_t timer =
            timer_start_ + static_cast<std::uint64_t>(static_cast<double>(w.cycles) /
                                                      ModeledClock::kGigahertz);
        const auto set = [&](Special s, std::uint64_t value) {
            std::fill_n(&w.regs[static_cast<std::size_t>(entry_.special_base +
                                                         static_cast<int>(s)) *
                                32],
                        32, value);
        };
        set(Special::clock, clock & 0xffffffffull);
        set(Special::clock64, clock);
        set(Special::globaltimer, timer);
        set(Special::globaltimer_lo, timer & 0xffffffffull);
        set(Special::globaltimer_hi, timer >> 32);
    }

    // Aligned accesses of at most 16 bytes never cross a page.
    std::byte* local_bytes_at(Warp& w, unsigned lane, std::uint32_t pc, std::uint64_t address) {
        auto& page = w.local_pages[lane * local_pages_per_lane_ + address / kLocalPage];
        if (!page) {
            local_touched_ += kLocalPage;
            if (local_touched_ > kMaxLocalTouched) {
                UnsupportedInstruction u;
                u.opcode = "more than " + std::to_string(kMaxLocalTouched >> 20) +
                           " MiB of local memory in one block";
                u.where = entry_.locations[pc];
                result_.message = "the simulator holds at most " +
                                  std::to_string(kMaxLocalTouched >> 20) +
                                  " MiB of local memory per block; the kernel touched more at " +
                                  at_text(u.where);
                result_.unsupported = std::move(u);
                throw Stop{LaunchStatus::unsupported};
            }
            page = std::make_unique<std::byte[]>(kLocalPage);  // zero-filled
        }
        return page.get() + address % kLocalPage;
    }

    void init_warp(Warp& w) {
        w.regs = register_image_;
        const std::uint32_t first = w.index * 32;
        const std::uint32_t lanes = std::min<std::uint32_t>(32, threads_per_block_ - first);
        w.live = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1);
        w.blocked = 0;
        w.mask = w.live;
        w.pc = 0;
        w.waiting = 0;
        w.lane_pc.fill(0);
        w.reduction_lanes = 0;
        w.cycles = block_start_cycles_;
        for (auto& page : w.local_pages) {
            if (page)
                std::memset(page.get(), 0, kLocalPage);  // each block's threads start from zeros
        }
        const std::uint64_t specials[] = {
            0,        0,        0,        block_dim_.x, block_dim_.y, block_dim_.z,
            block_.x, block_.y, block_.z, grid_.x,      grid_.y,      grid_.z};
        for (unsigned lane = 0; lane < 32; ++lane) {
            const ThreadId id = thread_of(w, lane);
            auto set = [&](Special s, std::uint64_t value) {
                w.regs[static_cast<std::size_t>(entry_.special_base + static_cast<int>(s)) * 32 +
                       lane] = value;
            };
            for (int s = 3; s < 12; ++s)
                set(static_cast<Special>(s), specials[s]);
            set(Special::tid_x, id.thread.x);
            set(Special::tid_y, id.thread.y);
            set(Special::tid_z, id.thread.z);
            set(Special::laneid, lane);
            set(Special::warpid, w.index);
            set(Special::nwarpid, warps_per_block_);
            set(Special::smid, sm_of_block_);
            set(Special::nsmid, sm_count_);
            set(Special::gridid, grid_id_);
            set(Special::lanemask_eq, 1u << lane);
            set(Special::lanemask_lt, (1u << lane) - 1);
            set(Special::lanemask_le, lane == 31 ? 0xffffffffu : (2u << lane) - 1);
            set(Special::lanemask_gt, lane == 31 ? 0u : ~((2u << lane) - 1));
            set(Special::lanemask_ge, ~((1u << lane) - 1));
            set(Special::dynamic_smem_size, options_.dynamic_shared_bytes);
            set(Special::total_smem_size, shared_bytes_);
        }
    }

    // Min-PC scheduling: run the lanes with the lowest pc among those that can run.
    static void reschedule(Warp& w) {
        for (std::uint32_t m = w.mask; m != 0; m &= m - 1)
            w.lane_pc[ctz(m)] = w.pc;
        const std::uint32_t candidates = w.live & ~w.blocked;
        w.mask = 0;
        w.waiting = 0;
        if (candidates == 0)
            return;
        std::uint32_t lowest = std::numeric_limits<std::uint32_t>::max();
        for (std::uint32_t m = candidates; m != 0; m &= m - 1)
            lowest = std::min(lowest, w.lane_pc[ctz(m)]);
        std::uint32_t second = std::numeric_limits<std::uint32_t>::max();
        for (std::uint32_t m = candidates; m != 0; m &= m - 1) {
            const unsigned lane = ctz(m);
            if (w.lane_pc[lane] == lowest) {
                w.mask |= 1u << lane;
            } else {
                w.waiting |= 1u << lane;
                second = std::min(second, w.lane_pc[lane]);
            }
        }
        w.pc = lowest;
        w.min_waiting_pc = second;
    }

    static void advance(Warp& w) {
        ++w.pc;
        if (w.waiting != 0 && w.pc >= w.min_waiting_pc)
            reschedule(w);
    }

    std::uint32_t guard_mask(const Warp& w, const Instruction& in) const {
        const std::uint64_t* p = &w.regs[static_cast<std::size_t>(in.guard) * 32];
        std::uint32_t result = 0;
        for (std::uint32_t m = w.mask; m != 0; m &= m - 1) {
            const unsigned lane = ctz(m);
            if ((p[lane] != 0) != in.negate_guard)
                result |= 1u << lane;
        }
        return result;
    }

    void run_warp(Warp& w) {
        if (w.mask == 0)
            reschedule(w);
        const Instruction* code = entry_.code.data();
        const std::uint32_t code_size = static_cast<std::uint32_t>(entry_.code.size());
        for (std::uint32_t n = 0; n < options_.warp_slice && w.mask != 0; ++n) {
            if (w.pc >= code_size) {
                fault(w, ctz(w.mask), code_size - 1, "launch",
                      "execution ran past the end of the kernel", 0);
            }
            const Instruction& in = code[w.pc];
            if (++counts_.warp_instructions > options_.instruction_budget) {
                counts_.warp_instructions = options_.instruction_budget;
                result_.last_location = entry_.locations[w.pc];
                result_.message =
                    "timed out: the instruction budget of " +
                    std::to_string(options_.instruction_budget) + " warp instructions ran out at " +
                    at_text(entry_.locations[w.pc]) + ", " + thread_text(thread_of(w, ctz(w.mask)));
                throw Stop{LaunchStatus::budget_exceeded};
            }
            const std::uint32_t exec = in.guard >= 0 ? guard_mask(w, in) : w.mask;
            counts_.thread_instructions += popcount(exec);
            w.cycles += kIssueCycles;
            switch (in.op) {
                case Op::bra: {
                    if (exec == w.mask) {
                        w.pc = in.target;
                        if (w.waiting != 0 && w.pc >= w.min_waiting_pc)
                            reschedule(w);
                    } else if (exec == 0) {
                        advance(w);
                    } else {
                        for (std::uint32_t m = exec; m != 0; m &= m - 1)
                            w.lane_pc[ctz(m)] = in.target;
                        for (std::uint32_t m = w.mask & ~exec; m != 0; m &= m - 1)
                            w.lane_pc[ctz(m)] = w.pc + 1;
                        w.mask = 0;
                        reschedule(w);
                    }
                    break;
                }
                case Op::exit: {
                    w.live &= ~exec;
                    w.mask &= ~exec;
                    if (w.mask != 0) {
                        advance(w);
                    } else {
                        reschedule(w);
                    }
                    break;
                }
                case Op::bar_red: {
                    const std::uint64_t* p = reg(w, in.src[1]);
                    for (std::uint32_t m = exec; m != 0; m &= m - 1) {
                        const unsigned lane = ctz(m);
                        if ((p[lane] != 0) != in.negate_c)
                            ++reduction_true_;
                        ++reduction_arrived_;
                    }
                    w.reduction_lanes |= exec;
                    w.reduction_slot = in.dst[0];
                    w.reduction_op = in.atom_op;
                    [[fallthrough]];
                }
                case Op::bar: {
                    for (std::uint32_t m = exec; m != 0; m &= m - 1)
                        w.lane_pc[ctz(m)] = w.pc + 1;
                    w.blocked |= exec;
                    w.mask &= ~exec;
                    if (w.mask != 0) {
                        advance(w);
                    } else {
                        reschedule(w);
                    }
                    if (exec != 0)
                        return;  // let the other warps reach the barrier
                    break;
                }
                case Op::trap: {
                    if (exec != 0)
                        fault(w, ctz(exec), w.pc, "trap", "the kernel executed trap", 0);
                    advance(w);
                    break;
                }
                case Op::unsupported: {
                    if (exec != 0) {
                        UnsupportedInstruction u;
                        u.opcode = entry_.opcodes[w.pc];
                        u.where = entry_.locations[w.pc];
                        result_.message = "the simulator does not implement " + u.opcode +
                                          ", reached at " + at_text(u.where);
                        result_.unsupported = std::move(u);
                        throw Stop{LaunchStatus::unsupported};
                    }
                    advance(w);
                    break;
                }
                default:
                    if (exec != 0) {
                        if (reads_clock_[w.pc])
                            update_clocks(w);
                        execute(w, in, exec);
                    }
                    advance(w);
                    break;
            }
        }
    }

    // ---- arithmetic ----

    std::uint64_t* reg(Warp& w, std::int32_t slot) {
        return &w.regs[static_cast<std::size_t>(slot) * 32];
    }

    void execute(Warp& w, const Instruction& in, std::uint32_t exec) {
        std::uint64_t* d = in.dst[0] >= 0 ? reg(w, in.dst[0]) : nullptr;
        const std::uint64_t* a = in.src[0] >= 0 ? reg(w, in.src[0]) : nullptr;
        const std::uint64_t* b = in.src[1] >= 0 ? reg(w, in.src[1]) : nullptr;
        const std::uint64_t* c = in.src[2] >= 0 ? reg(w, in.src[2]) : nullptr;
        switch (in.op) {
            case Op::nop:
                return;
            case Op::printf_call:
                counts_.printf_calls += popcount(exec);
                return;
            case Op::nanosleep: {
                // The warp sleeps as long as its longest-sleeping lane asks (nanoseconds).
                std::uint64_t longest = 0;
                for_lanes(exec, [&](unsigned l) {
                    longest = std::max<std::uint64_t>(longest, static_cast<std::uint32_t>(a[l]));
                });
                w.cycles += static_cast<std::uint64_t>(static_cast<double>(longest) *
                                                       ModeledClock::kGigahertz);
                return;
            }
            case Op::mov:
                if (in.type == Type::pred) {
                    for_lanes(exec, [&](unsigned l) { d[l] = a[l] != 0; });
                } else {
                    const unsigned bits = type_bits(in.type);
                    const std::uint64_t keep = bits == 64 ? ~0ull : ((1ull << bits) - 1);
                    for_lanes(exec, [&](unsigned l) { d[l] = a[l] & keep; });
                }
                return;
            case Op::mov_pack: {
                const unsigned part = type_bits(in.type) / in.vector;
                const std::uint64_t keep = part == 64 ? ~0ull : ((1ull << part) - 1);
                for_lanes(exec, [&](unsigned l) {
                    std::uint64_t v = 0;
                    for (unsigned e = 0; e < in.vector; ++e)
                        v |= (reg(w, in.src[e])[l] & keep) << (e * part);
                    d[l] = v;
                });
                return;
            }
            case Op::mov_unpack: {
                const unsigned part = type_bits(in.type) / in.vector;
                const std::uint64_t keep = part == 64 ? ~0ull : ((1ull << part) - 1);
                for_lanes(exec, [&](unsigned l) {
                    const std::uint64_t v = a[l];
                    for (unsigned e = 0; e < in.vector; ++e)
                        reg(w, in.dst[e])[l] = (v >> (e * part)) & keep;
                });
                return;
            }
            case Op::add:
            case Op::sub:
                dispatch_any(in.type, [&](auto zero) {
                    using T = decltype(zero);
                    const bool add = in.op == Op::add;
                    if constexpr (std::is_floating_point_v<T>) {
                        for_lanes(exec, [&](unsigned l) {
                            T r = add ? as<T>(a[l]) + as<T>(b[l]) : as<T>(a[l]) - as<T>(b[l]);
                            if (in.saturate)
                                r = std::isnan(r) ? T(0) : std::min(T(1), std::max(T(0), r));
                            d[l] = bits_of<T>(r);
                        });
                    } else if (in.saturate && std::is_same_v<T, std::int32_t>) {
                        for_lanes(exec, [&](unsigned l) {
                            const std::int64_t x = as<std::int32_t>(a[l]),
                                               y = as<std::int32_t>(b[l]);
                            std::int64_t r = add ? x + y : x - y;
                            r = std::min<std::int64_t>(INT32_MAX,
                                                       std::max<std::int64_t>(INT32_MIN, r));
                            d[l] = bits_of<std::int32_t>(static_cast<std::int32_t>(r));
                        });
                    } else {
                        using U = Unsigned<T>;
                        for_lanes(exec, [&](unsigned l) {
                            const U x = as<U>(a[l]), y = as<U>(b[l]);
                            d[l] = bits_of<U>(static_cast<U>(add ? x + y : x - y));
                        });
                    }
                });
                return;
            case Op::mul_lo:
                dispatch_any(in.type, [&](auto zero) {
                    using T = decltype(zero);
                    if constexpr (std::is_floating_point_v<T>) {
                        for_lanes(exec, [&](unsigned l) {
                            T r = as<T>(a[l]) * as<T>(b[l]);
                            if (in.saturate)
                                r = std::isnan(r) ? T(0) : std::min(T(1), std::max(T(0), r));
                            d[l] = bits_of<T>(r);
                        });
                    } else {
                        using U = Unsigned<T>;
                        using W = std::conditional_t<(sizeof(U) < 4), std::uint32_t, U>;
                        for_lanes(exec, [&](unsigned l) {
                            d[l] = bits_of<U>(static_cast<U>(static_cast<W>(as<U>(a[l])) *
                                                             static_cast<W>(as<U>(b[l]))));
                        });
                    }
                });
                return;
            case Op::mul_hi:
                dispatch_int(in.type, [&](auto zero) {
                    using T = decltype(zero);
                    for_lanes(exec, [&](unsigned l) {
                        d[l] = bits_of<T>(mul_high<T>(as<T>(a[l]), as<T>(b[l])));
                    });
                });
                return;
            case Op::mul_wide:
                dispatch_int(in.type, [&](auto zero) {
                    using T = decltype(zero);
                    if constexpr (sizeof(T) <= 2) {
                        using W = typename Wider<T>::type;
                        for_lanes(exec, [&](unsigned l) {
                            d[l] = bits_of<W>(static_cast<W>(static_cast<W>(as<T>(a[l])) *
                                                             static_cast<W>(as<T>(b[l]))));
                        });
                    } else if constexpr (sizeof(T) == 4) {
                        using W = typename Wider<T>::type;
                        for_lanes(exec, [&](unsigned l) {
                            d[l] = bits_of<W>(static_cast<W>(static_cast<W>(as<T>(a[l])) *
                                                             static_cast<W>(as<T>(b[l]))));
                        });
                    }
                });
                return;
            case Op::mad_lo:
            case Op::mad_hi:
                dispatch_int(in.type, [&](auto zero) {
                    using T = decltype(zero);
                    using U = Unsigned<T>;
                    using W = std::conditional_t<(sizeof(U) < 4), std::uint32_t, U>;
                    const bool high = in.op == Op::mad_hi;
                    for_lanes(exec, [&](unsigned l) {
                        const U product =
                            high ? static_cast<U>(mul_high<T>(as<T>(a[l]), as<T>(b[l])))
                                 : static_cast<U>(static_cast<W>(as<U>(a[l])) *
                                                  static_cast<W>(as<U>(b[l])));
                        if (in.saturate && std::is_same_v<T, std::int32_t>) {
                            const std::int64_t r =
                                static_cast<std::int64_t>(static_cast<T>(product)) +
                                static_cast<std::int64_t>(as<T>(c[l]));
                            d[l] = bits_of<std::int32_t>(
                                static_cast<std::int32_t>(std::min<std::int64_t>(
                                    INT32_MAX, std::max<std::int64_t>(INT32_MIN, r))));
                        } else {
                            d[l] = bits_of<U>(static_cast<U>(static_cast<W>(product) +
                                                             static_cast<W>(as<U>(c[l]))));
                        }
                    });
                });
                return;
            case Op::mad_wide:
                dispatch_int(in.type, [&](auto zero) {
                    using T = decltype(zero);
                    if constexpr (sizeof(T) == 2 || sizeof(T) == 4) {
                        using W = typename Wider<T>::type;
                        using UW = Unsigned<W>;
                        for_lanes(exec, [&](unsigned l) {
                            const UW product = static_cast<UW>(static_cast<W>(as<T>(a[l])) *
                                                               static_cast<W>(as<T>(b[l])));
                            d[l] = bits_of<UW>(static_cast<UW>(product + as<UW>(c[l])));
                        });
                    }
                });
                return;
            case Op::fma:
                if (in.type == Type::f32) {
                    for_lanes(exec, [&](unsigned l) {
                        float r = std::fma(as<float>(a[l]), as<float>(b[l]), as<float>(c[l]));
                        if (in.saturate)
                            r = std::isnan(r) ? 0.0f : std::min(1.0f, std::max(0.0f, r));
                        d[l] = bits_of<float>(r);
                    });
                } else {
                    for_lanes(exec, [&](unsigned l) {
                        d[l] = bits_of<double>(
                            std::fma(as<double>(a[l]), as<double>(b[l]), as<double>(c[l])));
                    });
                }
                return;
            case Op::div:
            case Op::rem:
                dispatch_any(in.type, [&](auto zero) {
                    using T = decltype(zero);
                    const bool quotient = in.op == Op::div;
                    if constexpr (std::is_floating_point_v<T>) {
                        for_lanes(exec, [&](unsigned l) {
                            const T x = as<T>(a[l]), y = as<T>(b[l]);
                            d[l] = bits_of<T>(quotient ? x / y : std::fmod(x, y));
                        });
                    } else {
                        for_lanes(exec, [&](unsigned l) {
                            const T x = as<T>(a[l]), y = as<T>(b[l]);
                            T r;
                            if (y == 0) {
                                r = quotient ? static_cast<T>(~Unsigned<T>(0))
                                             : x;  // as the GPU: no trap
                            } else if (std::is_signed_v<T> && y == T(-1)) {
                                r = quotient ? static_cast<T>(Unsigned<T>(0) -
                                                              static_cast<Unsigned<T>>(x))
                                             : T(0);
                            } else {
                                r = quotient ? static_cast<T>(x / y) : static_cast<T>(x % y);
                            }
                            d[l] = bits_of<T>(r);
                        });
                    }
                });
                return;
            case Op::min:
            case Op::max:
                dispatch_any(in.type, [&](auto zero) {
                    using T = decltype(zero);
                    const bool lowest = in.op == Op::min;
                    for_lanes(exec, [&](unsigned l) {
                        const T x = as<T>(a[l]), y = as<T>(b[l]);
                        if constexpr (std::is_floating_point_v<T>) {
                            d[l] = bits_of<T>(lowest ? std::fmin(x, y) : std::fmax(x, y));
                        } else {
                            d[l] = bits_of<T>(lowest ? std::min(x, y) : std::max(x, y));
                        }
                    });
                });
                return;
            case Op::neg:
            case Op::abs:
                dispatch_any(in.type, [&](auto zero) {
                    using T = decltype(zero);
                    const bool negate = in.op == Op::neg;
                    for_lanes(exec, [&](unsigned l) {
                        const T x = as<T>(a[l]);
                        if constexpr (std::is_floating_point_v<T>) {
                            d[l] = bits_of<T>(negate ? -x : std::fabs(x));
                        } else {
                            using U = Unsigned<T>;
                            const U minus = static_cast<U>(U(0) - static_cast<U>(x));
                            d[l] = bits_of<U>(negate || x < T(0) ? minus : static_cast<U>(x));
                        }
                    });
                });
                return;
            case Op::and_:
            case Op::or_:
            case Op::xor_: {
                const unsigned bits = in.type == Type::pred ? 1 : type_bits(in.type);
                const std::uint64_t keep = bits == 64 ? ~0ull : ((1ull << bits) - 1);
                if (in.op == Op::and_) {
                    for_lanes(exec, [&](unsigned l) { d[l] = (a[l] & b[l]) & keep; });
                } else if (in.op == Op::or_) {
                    for_lanes(exec, [&](unsigned l) { d[l] = (a[l] | b[l]) & keep; });
                } else {
                    for_lanes(exec, [&](unsigned l) { d[l] = (a[l] ^ b[l]) & keep; });
                }
                return;
            }
            case Op::not_:
            case Op::cnot: {
                const unsigned bits = in.type == Type::pred ? 1 : type_bits(in.type);
                const std::uint64_t keep = bits == 64 ? ~0ull : ((1ull << bits) - 1);
                if (in.op == Op::not_) {
                    for_lanes(exec, [&](unsigned l) { d[l] = ~a[l] & keep; });
                } else {
                    for_lanes(exec, [&](unsigned l) { d[l] = (a[l] & keep) == 0 ? 1 : 0; });
                }
                return;
            }
            case Op::shl:
            case Op::shr:
                dispatch_int(in.type, [&](auto zero) {
                    using T = decltype(zero);
                    using U = Unsigned<T>;
                    constexpr unsigned width = 8 * sizeof(T);
                    const bool left = in.op == Op::shl;
                    for_lanes(exec, [&](unsigned l) {
                        const auto amount = static_cast<std::uint32_t>(b[l]);
                        const T x = as<T>(a[l]);
                        T r;
                        if (left) {
                            r = amount >= width
                                    ? T(0)
                                    : static_cast<T>(static_cast<U>(static_cast<U>(x) << amount));
                        } else if (std::is_signed_v<T>) {
                            r = amount >= width ? (x < T(0) ? T(-1) : T(0))
                                                : static_cast<T>(x >> amount);
                        } else {
                            r = amount >= width ? T(0)
                                                : static_cast<T>(static_cast<U>(x) >> amount);
                        }
                        d[l] = bits_of<T>(r);
                    });
                });
                return;
            case Op::popc:
            case Op::clz:
            case Op::brev: {
                const bool wide = type_bits(in.type) == 64;
                for_lanes(exec, [&](unsigned l) {
                    const std::uint64_t x = wide ? a[l] : static_cast<std::uint32_t>(a[l]);
                    if (in.op == Op::popc) {
                        d[l] = static_cast<std::uint64_t>(__builtin_popcountll(x));
                    } else if (in.op == Op::clz) {
                        d[l] =
                            x == 0
                                ? (wide ? 64 : 32)
                                : static_cast<std::uint64_t>(__builtin_clzll(x) - (wide ? 0 : 32));
                    } else {
                        std::uint64_t r = 0;
                        const unsigned n = wide ? 64 : 32;
                        for (unsigned k = 0; k < n; ++k)
                            r |= ((x >> k) & 1) << (n - 1 - k);
                        d[l] = r;
                    }
                });
                return;
            }
            case Op::bfe:
                dispatch_int(in.type, [&](auto zero) {
                    using T = decltype(zero);
                    using U = Unsigned<T>;
                    constexpr unsigned width = 8 * sizeof(T);
                    for_lanes(exec, [&](unsigned l) {
                        const unsigned pos = static_cast<std::uint8_t>(b[l]);
                        const unsigned len = static_cast<std::uint8_t>(c[l]);
                        const U x = as<U>(a[l]);
                        const unsigned msb_index = std::min(pos + len, width) - (len == 0 ? 0 : 1);
                        const bool sign = std::is_signed_v<T> && len != 0 &&
                                          ((x >> std::min(msb_index, width - 1)) & 1);
                        U r = 0;
                        for (unsigned k = 0; k < width; ++k) {
                            const bool bit =
                                (k < len && pos + k < width) ? ((x >> (pos + k)) & 1) : sign;
                            if (bit)
                                r = static_cast<U>(r | (U(1) << k));
                        }
                        d[l] = bits_of<U>(r);
                    });
                });
                return;
            case Op::bfi:
                dispatch_int(in.type, [&](auto zero) {
                    using U = Unsigned<decltype(zero)>;
                    constexpr unsigned width = 8 * sizeof(U);
                    const std::uint64_t* e = reg(w, in.src[3]);
                    for_lanes(exec, [&](unsigned l) {
                        const unsigned pos = static_cast<std::uint8_t>(c[l]);
                        const unsigned len = static_cast<std::uint8_t>(e[l]);
                        U r = as<U>(b[l]);
                        const U f = as<U>(a[l]);
                        for (unsigned k = 0; k < len && pos + k < width; ++k) {
                            const U bit = U(1) << (pos + k);
                            r = static_cast<U>(((f >> k) & 1) ? (r | bit) : (r & ~bit));
                        }
                        d[l] = bits_of<U>(r);
                    });
                });
                return;
            case Op::prmt:
                for_lanes(exec, [&](unsigned l) {
                    const std::uint64_t bytes =
                        (static_cast<std::uint64_t>(static_cast<std::uint32_t>(b[l])) << 32) |
                        static_cast<std::uint32_t>(a[l]);
                    const auto selector = static_cast<std::uint32_t>(c[l]);
                    std::uint32_t r = 0;
                    for (unsigned k = 0; k < 4; ++k) {
                        const unsigned s = (selector >> (4 * k)) & 0xf;
                        std::uint32_t byte =
                            static_cast<std::uint32_t>((bytes >> (8 * (s & 7))) & 0xff);
                        if (s & 8)
                            byte = (byte & 0x80) ? 0xff : 0;  // sign replicate
                        r |= byte << (8 * k);
                    }
                    d[l] = r;
                });
                return;
            case Op::bfind:
                dispatch_int(in.type, [&](auto zero) {
                    using T = decltype(zero);
                    using U = Unsigned<T>;
                    constexpr unsigned width = 8 * sizeof(T);
                    for_lanes(exec, [&](unsigned l) {
                        U x = as<U>(a[l]);
                        if (std::is_signed_v<T> && (x >> (width - 1)) != 0)
                            x = static_cast<U>(~x);
                        std::uint32_t r = 0xffffffffu;
                        for (unsigned k = width; k-- > 0;) {
                            if ((x >> k) & 1) {
                                r = in.shift == ShiftMode::left_clamp ? width - 1 - k : k;
                                break;
                            }
                        }
                        d[l] = r;
                    });
                });
                return;
            case Op::shf:
                for_lanes(exec, [&](unsigned l) {
                    const std::uint64_t pair =
                        (static_cast<std::uint64_t>(static_cast<std::uint32_t>(b[l])) << 32) |
                        static_cast<std::uint32_t>(a[l]);
                    const auto amount = static_cast<std::uint32_t>(c[l]);
                    const bool clamp =
                        in.shift == ShiftMode::left_clamp || in.shift == ShiftMode::right_clamp;
                    const std::uint32_t n =
                        clamp ? std::min<std::uint32_t>(amount, 32) : (amount & 31);
                    const bool left =
                        in.shift == ShiftMode::left_wrap || in.shift == ShiftMode::left_clamp;
                    d[l] = left ? static_cast<std::uint32_t>((pair << n) >> 32)
                                : static_cast<std::uint32_t>(pair >> n);
                });
                return;
            case Op::sad:
                dispatch_int(in.type, [&](auto zero) {
                    using T = decltype(zero);
                    using U = Unsigned<T>;
                    for_lanes(exec, [&](unsigned l) {
                        const T x = as<T>(a[l]), y = as<T>(b[l]);
                        const U diff = x > y
                                           ? static_cast<U>(static_cast<U>(x) - static_cast<U>(y))
                                           : static_cast<U>(static_cast<U>(y) - static_cast<U>(x));
                        d[l] = bits_of<U>(static_cast<U>(diff + as<U>(c[l])));
                    });
                });
                return;
            case Op::copysign:
                // PTX: the sign of a, the magnitude of b.
                if (in.type == Type::f32) {
                    for_lanes(exec, [&](unsigned l) {
                        d[l] = bits_of<float>(std::copysign(as<float>(b[l]), as<float>(a[l])));
                    });
                } else {
                    for_lanes(exec, [&](unsigned l) {
                        d[l] = bits_of<double>(std::copysign(as<double>(b[l]), as<double>(a[l])));
                    });
                }
                return;
            case Op::redux:
                dispatch_int(in.type, [&](auto zero) {
                    using T = decltype(zero);
                    using U = Unsigned<T>;
                    bool first = true;
                    T r{};
                    for_lanes(exec, [&](unsigned l) {
                        const T x = as<T>(a[l]);
                        if (first) {
                            r = x;
                            first = false;
                            return;
                        }
                        switch (in.atom_op) {
                            case AtomOp::add:
                                r = static_cast<T>(
                                    static_cast<U>(static_cast<U>(r) + static_cast<U>(x)));
                                break;
                            case AtomOp::min:
                                r = std::min(r, x);
                                break;
                            case AtomOp::max:
                                r = std::max(r, x);
                                break;
                            case AtomOp::and_:
                                r = static_cast<T>(r & x);
                                break;
                            case AtomOp::or_:
                                r = static_cast<T>(r | x);
                                break;
                            default:
                                r = static_cast<T>(r ^ x);
                                break;
                        }
                    });
                    for_lanes(exec, [&](unsigned l) { d[l] = bits_of<T>(r); });
                });
                return;
            case Op::setp:
                setp(w, in, exec);
                return;
            case Op::selp: {
                const unsigned bits = type_bits(in.type);
                const std::uint64_t keep = bits == 64 ? ~0ull : ((1ull << bits) - 1);
                for_lanes(exec, [&](unsigned l) { d[l] = (c[l] != 0 ? a[l] : b[l]) & keep; });
                return;
            }
            case Op::cvt:
                cvt(in, exec, d, a);
                return;
            case Op::cvta_to_generic:
            case Op::cvta_from_generic: {
                std::uint64_t window = 0;
                if (in.space == Space::shared)
                    window = kSharedWindow;
                if (in.space == Space::local)
                    window = kLocalWindow;
                const unsigned bits = type_bits(in.type);
                const std::uint64_t keep = bits == 64 ? ~0ull : ((1ull << bits) - 1);
                if (in.op == Op::cvta_to_generic) {
                    for_lanes(exec, [&](unsigned l) { d[l] = (a[l] + window) & keep; });
                } else {
                    for_lanes(exec, [&](unsigned l) { d[l] = (a[l] - window) & keep; });
                }
                return;
            }
            case Op::rcp:
            case Op::sqrt:
            case Op::rsqrt:
            case Op::ex2:
            case Op::lg2:
            case Op::sin:
            case Op::cos:
                dispatch_any(in.type, [&](auto zero) {
                    using T = decltype(zero);
                    if constexpr (std::is_floating_point_v<T>) {
                        for_lanes(exec, [&](unsigned l) {
                            const T x = as<T>(a[l]);
                            T r = x;
                            switch (in.op) {
                                case Op::rcp:
                                    r = T(1) / x;
                                    break;
                                case Op::sqrt:
                                    r = std::sqrt(x);
                                    break;
                                case Op::rsqrt:
                                    r = T(1) / std::sqrt(x);
                                    break;
                                case Op::ex2:
                                    r = std::exp2(x);
                                    break;
                                case Op::lg2:
                                    r = std::log2(x);
                                    break;
                                case Op::sin:
                                    r = std::sin(x);
                                    break;
                                default:
                                    r = std::cos(x);
                                    break;
                            }
                            d[l] = bits_of<T>(r);
                        });
                    }
                });
                return;
            case Op::ld:
            case Op::st:
                memory_access(w, in, exec);
                return;
            case Op::atom:
                atomic(w, in, exec);
                return;
            case Op::shfl: {
                std::array<std::uint64_t, 32> source;
                for (unsigned l = 0; l < 32; ++l)
                    source[l] = a[l];
                // The membermask (src[3]) is not checked: the executing lanes take part.
                std::uint64_t* p = in.dst2 >= 0 ? reg(w, in.dst2) : nullptr;
                for_lanes(exec, [&](unsigned lane) {
                    const auto bval = static_cast<std::uint32_t>(b[lane]) & 31;
                    const auto cword = static_cast<std::uint32_t>(c[lane]);
                    const std::uint32_t cval = cword & 31;
                    const std::uint32_t segmask = (cword >> 8) & 31;
                    const std::uint32_t max_lane = (lane & segmask) | (cval & ~segmask);
                    const std::uint32_t min_lane = lane & segmask;
                    int j = static_cast<int>(lane);
                    bool pval = false;
                    switch (in.shuffle) {
                        case ShuffleMode::up:
                            j = static_cast<int>(lane) - static_cast<int>(bval);
                            pval = j >= static_cast<int>(max_lane);
                            break;
                        case ShuffleMode::down:
                            j = static_cast<int>(lane + bval);
                            pval = j <= static_cast<int>(max_lane);
                            break;
                        case ShuffleMode::bfly:
                            j = static_cast<int>(lane ^ bval);
                            pval = j <= static_cast<int>(max_lane);
                            break;
                        case ShuffleMode::idx:
                            j = static_cast<int>(min_lane | (bval & ~segmask));
                            pval = j <= static_cast<int>(max_lane);
                            break;
                    }
                    if (!pval)
                        j = static_cast<int>(lane);
                    d[lane] = static_cast<std::uint32_t>(source[static_cast<unsigned>(j) & 31]);
                    if (p != nullptr)
                        p[lane] = pval ? 1 : 0;
                });
                return;
            }
            case Op::vote_ballot:
            case Op::vote_all:
            case Op::vote_any:
            case Op::vote_uni: {
                std::uint32_t ballot = 0;
                for_lanes(exec, [&](unsigned l) {
                    if ((a[l] != 0) != in.negate_c)
                        ballot |= 1u << l;
                });
                std::uint64_t value = ballot;
                if (in.op == Op::vote_all)
                    value = ballot == exec;
                if (in.op == Op::vote_any)
                    value = ballot != 0;
                if (in.op == Op::vote_uni)
                    value = ballot == 0 || ballot == exec;
                for_lanes(exec, [&](unsigned l) { d[l] = value; });
                return;
            }
            case Op::activemask:
                for_lanes(exec, [&](unsigned l) { d[l] = w.mask; });
                return;
            default:
                throw std::logic_error("instruction without an executor");
        }
    }

    void setp(Warp& w, const Instruction& in, std::uint32_t exec) {
        std::uint64_t* p = reg(w, in.dst[0]);
        std::uint64_t* q = in.dst2 >= 0 ? reg(w, in.dst2) : nullptr;
        const std::uint64_t* a = reg(w, in.src[0]);
        const std::uint64_t* b = reg(w, in.src[1]);
        const std::uint64_t* c = in.src[2] >= 0 ? reg(w, in.src[2]) : nullptr;
        dispatch_any(in.type, [&](auto zero) {
            using T = decltype(zero);
            for_lanes(exec, [&](unsigned l) {
                const T x = as<T>(a[l]), y = as<T>(b[l]);
                bool t = false;
                if constexpr (std::is_floating_point_v<T>) {
                    const bool unordered = std::isnan(x) || std::isnan(y);
                    switch (in.compare) {
                        case Compare::eq:
                            t = !unordered && x == y;
                            break;
                        case Compare::ne:
                            t = !unordered && x != y;
                            break;
                        case Compare::lt:
                            t = !unordered && x < y;
                            break;
                        case Compare::le:
                            t = !unordered && x <= y;
                            break;
                        case Compare::gt:
                            t = !unordered && x > y;
                            break;
                        case Compare::ge:
                            t = !unordered && x >= y;
                            break;
                        case Compare::equ:
                            t = unordered || x == y;
                            break;
                        case Compare::neu:
                            t = unordered || x != y;
                            break;
                        case Compare::ltu:
                            t = unordered || x < y;
                            break;
                        case Compare::leu:
                            t = unordered || x <= y;
                            break;
                        case Compare::gtu:
                            t = unordered || x > y;
                            break;
                        case Compare::geu:
                            t = unordered || x >= y;
                            break;
                        case Compare::num:
                            t = !unordered;
                            break;
                        case Compare::nan:
                            t = unordered;
                            break;
                        default:
                            t = false;
                            break;
                    }
                } else {
                    using U = Unsigned<T>;
                    const U ux = static_cast<U>(x), uy = static_cast<U>(y);
                    switch (in.compare) {
                        case Compare::eq:
                            t = x == y;
                            break;
                        case Compare::ne:
                            t = x != y;
                            break;
                        case Compare::lt:
                            t = x < y;
                            break;
                        case Compare::le:
                            t = x <= y;
                            break;
                        case Compare::gt:
                            t = x > y;
                            break;
                        case Compare::ge:
                            t = x >= y;
                            break;
                        case Compare::lo:
                            t = ux < uy;
                            break;
                        case Compare::ls:
                            t = ux <= uy;
                            break;
                        case Compare::hi:
                            t = ux > uy;
                            break;
                        case Compare::hs:
                            t = ux >= uy;
                            break;
                        default:
                            t = false;
                            break;
                    }
                }
                bool first = t, second = !t;
                if (c != nullptr) {
                    const bool cv = (c[l] != 0) != in.negate_c;
                    switch (in.bool_op) {
                        case BoolOp::and_:
                            first = first && cv;
                            second = second && cv;
                            break;
                        case BoolOp::or_:
                            first = first || cv;
                            second = second || cv;
                            break;
                        case BoolOp::xor_:
                            first = first != cv;
                            second = second != cv;
                            break;
                        case BoolOp::none:
                            break;
                    }
                }
                p[l] = first ? 1 : 0;
                if (q != nullptr)
                    q[l] = second ? 1 : 0;
            });
        });
    }

    template <class F>
    static F round_float(F x, Rounding r) {
        switch (r) {
            case Rounding::rni:
                return std::nearbyint(x);
            case Rounding::rzi:
                return std::trunc(x);
            case Rounding::rmi:
                return std::floor(x);
            case Rounding::rpi:
                return std::ceil(x);
            default:
                return x;
        }
    }

    // Conversions: float to integer rounds as asked (rzi when none), saturates, NaN gives 0.
    // Float rounding modes other than round-to-nearest for float results (.rz/.rm/.rp) are
    // computed as round-to-nearest.
    void cvt(const Instruction& in, std::uint32_t exec, std::uint64_t* d, const std::uint64_t* a) {
        const Type to = in.type;
        const Type from = in.source_type;
        dispatch_any(from, [&](auto source_zero) {
            using S = decltype(source_zero);
            dispatch_any(to, [&](auto target_zero) {
                using D = decltype(target_zero);
                for_lanes(exec, [&](unsigned l) {
                    const S x = as<S>(a[l]);
                    D r{};
                    if constexpr (std::is_floating_point_v<D>) {
                        if constexpr (std::is_floating_point_v<S>) {
                            r = round_float(static_cast<D>(x), in.rounding);
                            if (sizeof(D) < sizeof(S))
                                r = static_cast<D>(round_float(x, in.rounding));
                        } else {
                            r = static_cast<D>(x);
                        }
                        if (in.saturate)
                            r = std::isnan(r) ? D(0) : std::min(D(1), std::max(D(0), r));
                    } else if constexpr (std::is_floating_point_v<S>) {
                        const Rounding mode =
                            in.rounding == Rounding::none ? Rounding::rzi : in.rounding;
                        const long double v = round_float(static_cast<long double>(x), mode);
                        if (std::isnan(v)) {
                            r = D(0);
                        } else if (v <= static_cast<long double>(std::numeric_limits<D>::min())) {
                            r = std::numeric_limits<D>::min();
                        } else if (v >= static_cast<long double>(std::numeric_limits<D>::max())) {
                            r = std::numeric_limits<D>::max();
                        } else {
                            r = static_cast<D>(v);
                        }
                    } else {
                        if (in.saturate) {
                            // Clamp the source value to the destination's range.
                            const bool negative = std::is_signed_v<S> && x < S(0);
                            if (negative) {
                                r = std::is_signed_v<D> && static_cast<std::int64_t>(x) >=
                                                               static_cast<std::int64_t>(
                                                                   std::numeric_limits<D>::min())
                                        ? static_cast<D>(x)
                                        : std::numeric_limits<D>::min();
                            } else {
                                r = static_cast<std::uint64_t>(x) <=
                                            static_cast<std::uint64_t>(
                                                std::numeric_limits<D>::max())
                                        ? static_cast<D>(x)
                                        : std::numeric_limits<D>::max();
                            }
                        } else {
                            // Sign or zero extension by the source type, truncation to the
                            // destination's width.
                            r = static_cast<D>(static_cast<Unsigned<D>>(
                                std::is_signed_v<S>
                                    ? static_cast<std::uint64_t>(static_cast<std::int64_t>(x))
                                    : static_cast<std::uint64_t>(x)));
                        }
                    }
                    d[l] = bits_of<D>(r);
                });
            });
        });
    }

    // ---- memory ----

    struct Resolved {
        std::byte* bytes = nullptr;
        Space space = Space::global;
        std::uint64_t shared_offset = 0;
    };

    Resolved resolve(Warp& w, unsigned lane, std::uint32_t pc, Space space, std::uint64_t address,
                     std::size_t size, bool store) {
        Resolved r;
        r.space = space;
        if (space == Space::generic) {
            if (address - kSharedWindow < kWindowSize) {
                r.space = Space::shared;
                address -= kSharedWindow;
            } else if (address - kLocalWindow < kWindowSize) {
                r.space = Space::local;
                address -= kLocalWindow;
            } else {
                r.space = Space::global;
            }
        }
        if (size > 1 && address % size != 0) {
            fault(w, lane, pc, "misaligned",
                  "misaligned " + std::to_string(size) + "-byte access to address " + hex(address),
                  address);
        }
        switch (r.space) {
            case Space::shared:
                if (address >= shared_bytes_ || size > shared_bytes_ - address) {
                    fault(w, lane, pc, "out_of_bounds",
                          "shared memory access at offset " + hex(address) +
                              " is outside the block's " + std::to_string(shared_bytes_) +
                              " bytes of shared memory",
                          address);
                }
                r.shared_offset = address;
                r.bytes = shared_.data() + address;
                return r;
            case Space::local:
                if (address >= entry_.local_bytes || size > entry_.local_bytes - address) {
                    fault(w, lane, pc, "out_of_bounds",
                          "local memory access at offset " + hex(address) +
                              " is outside the thread's " + std::to_string(entry_.local_bytes) +
                              " bytes of local memory",
                          address);
                }
                r.bytes = local_bytes_at(w, lane, pc, address);
                return r;
            case Space::param:
                if (store || address >= param_buffer_.size() ||
                    size > param_buffer_.size() - address) {
                    fault(w, lane, pc, "out_of_bounds",
                          "parameter access at offset " + hex(address) + " is invalid", address);
                }
                r.bytes = param_buffer_.data() + address;
                return r;
            default:
                r.bytes = memory_.find(address, size);
                if (r.bytes == nullptr) {
                    fault(w, lane, pc, "out_of_bounds",
                          std::string(store ? "write" : "read") + " of " + std::to_string(size) +
                              " bytes at global address " + hex(address) +
                              " outside every allocation",
                          address);
                }
                return r;
        }
    }

    static std::uint64_t load_bytes(const std::byte* bytes, std::size_t size) {
        switch (size) {
            case 1: {
                std::uint8_t v;
                std::memcpy(&v, bytes, 1);
                return v;
            }
            case 2: {
                std::uint16_t v;
                std::memcpy(&v, bytes, 2);
                return v;
            }
            case 4: {
                std::uint32_t v;
                std::memcpy(&v, bytes, 4);
                return v;
            }
            default: {
                std::uint64_t v;
                std::memcpy(&v, bytes, 8);
                return v;
            }
        }
    }

    static void store_bytes(std::byte* bytes, std::uint64_t v, std::size_t size) {
        switch (size) {
            case 1: {
                const auto x = static_cast<std::uint8_t>(v);
                std::memcpy(bytes, &x, 1);
                return;
            }
            case 2: {
                const auto x = static_cast<std::uint16_t>(v);
                std::memcpy(bytes, &x, 2);
                return;
            }
            case 4: {
                const auto x = static_cast<std::uint32_t>(v);
                std::memcpy(bytes, &x, 4);
                return;
            }
            default:
                std::memcpy(bytes, &v, 8);
                return;
        }
    }

    void memory_access(Warp& w, const Instruction& in, std::uint32_t exec) {
        const bool store = in.op == Op::st;
        const std::uint64_t* base = reg(w, in.src[0]);
        const std::size_t element = in.bytes;
        const std::size_t total = element * in.vector;
        const bool sign_extend = !store && is_signed(in.type) && element < 8;
        if (!store && !sign_extend && in.space == Space::shared && in.vector == 1 &&
            element == 4 && exec != 0 && load_shared_words(w, in, exec, base))
            return;
        const std::uint64_t misaligned_bits = total - 1;  // element and vector are powers of 2
        std::array<std::uint64_t, 32> shared_offsets{};
        std::uint32_t shared_lanes = 0;
        if (store)
            races_.start_store();
        for_lanes(exec, [&](unsigned lane) {
            const std::uint64_t address = base[lane] + static_cast<std::uint64_t>(in.offset);
            std::byte* bytes = nullptr;
            if (in.space == Space::shared && address < shared_bytes_ &&
                total <= shared_bytes_ - address && (address & misaligned_bits) == 0) {
                bytes = shared_.data() + address;  // the common case, checked inline
                shared_lanes |= 1u << lane;
                shared_offsets[lane] = address;
            } else {
                const Resolved r = resolve(w, lane, w.pc, in.space, address, total, store);
                bytes = r.bytes;
                if (r.space == Space::shared) {
                    shared_lanes |= 1u << lane;
                    shared_offsets[lane] = r.shared_offset;
                }
            }
            if ((shared_lanes >> lane) & 1) {
                const std::size_t first_word = shared_offsets[lane] / 4;
                const std::size_t last_word = (shared_offsets[lane] + total - 1) / 4;
                if (store) {
                    for (std::size_t word = first_word; word <= last_word; ++word)
                        shared_written_[word] = 1;
                } else {
                    for (std::size_t word = first_word; word <= last_word; ++word) {
                        const RaceHit hit = races_.read(word, w.index, lane, w.pc);
                        if (hit.kind != RaceKind::none)
                            record_race(w, lane, hit, word * 4);
                    }
                    if (!result_.uninitialized_shared_read) {
                        for (std::size_t word = first_word; word <= last_word; ++word) {
                            if (!shared_written_[word]) {
                                record_uninitialized(w, lane, word * 4);
                                break;
                            }
                        }
                    }
                }
            }
            for (unsigned e = 0; e < in.vector; ++e) {
                std::uint64_t* value = reg(w, in.dst[e]);
                if (store) {
                    if ((shared_lanes >> lane) & 1) {
                        track_store(w, lane, shared_offsets[lane] + e * element, value[lane],
                                    element);
                    }
                    store_bytes(bytes + e * element, value[lane], element);  // the low bytes
                } else {
                    std::uint64_t v = load_bytes(bytes + e * element, element);
                    if (sign_extend) {
                        // To the destination register's width, as PTX defines for ld.s8 etc.
                        const unsigned shift = 64 - 8 * static_cast<unsigned>(element);
                        v = static_cast<std::uint64_t>(static_cast<std::int64_t>(v << shift) >>
                                                       shift);
                        const unsigned width =
                            entry_.slot_bits[static_cast<std::size_t>(in.dst[e])];
                        if (width < 64)
                            v &= (1ull << width) - 1;
                    }
                    value[lane] = v;
                }
            }
        });
        if (access_raced_) {
            ++result_.race_count;
            access_raced_ = false;
        }
        if (shared_lanes != 0)
            record_shared(w, in, shared_lanes, shared_offsets, static_cast<std::uint32_t>(total));
    }

    // The common case of memory_access, on its own: a 32-bit load from .shared whose every lane
    // is inside the block's shared memory and aligned. False, having done nothing, otherwise.
    bool load_shared_words(Warp& w, const Instruction& in, std::uint32_t exec,
                           const std::uint64_t* base) {
        std::uint32_t outside = 0;
        for_lanes(exec, [&](unsigned lane) {
            const std::uint64_t address = base[lane] + static_cast<std::uint64_t>(in.offset);
            outside |= static_cast<std::uint32_t>(address >= shared_bytes_ ||
                                                  4 > shared_bytes_ - address || (address & 3));
        });
        if (outside != 0)
            return false;
        std::array<std::uint64_t, 32> offsets{};
        std::uint64_t* value = reg(w, in.dst[0]);
        for_lanes(exec, [&](unsigned lane) {
            const std::uint64_t address = base[lane] + static_cast<std::uint64_t>(in.offset);
            const std::size_t word = address / 4;
            offsets[lane] = address;
            const RaceHit hit = races_.read(word, w.index, lane, w.pc);
            if (hit.kind != RaceKind::none)
                record_race(w, lane, hit, word * 4);
            if (!shared_written_[word] && !result_.uninitialized_shared_read)
                record_uninitialized(w, lane, word * 4);
            std::uint32_t v;
            std::memcpy(&v, shared_.data() + address, 4);
            value[lane] = v;
        });
        if (access_raced_) {
            ++result_.race_count;
            access_raced_ = false;
        }
        record_shared(w, in, exec, offsets, 4);
        return true;
    }

    // One lane's store of `size` bytes at shared `offset`, before it lands: races with other
    // warps, and with other lanes of this store that wrote different bytes there.
    void track_store(const Warp& w, unsigned lane, std::uint64_t offset, std::uint64_t value,
                     std::size_t size) {
        std::byte bytes[8];
        std::memcpy(bytes, &value, 8);  // little-endian: the low `size` bytes are stored
        for (std::uint64_t at = offset; at < offset + size;) {
            const std::size_t word = at / 4;
            const unsigned first = static_cast<unsigned>(at % 4);
            const unsigned n = static_cast<unsigned>(std::min<std::uint64_t>(4 - first,
                                                                             offset + size - at));
            std::byte* current = shared_.data() + word * 4;
            std::byte next[4];
            std::memcpy(next, current, 4);
            std::memcpy(next + first, bytes + (at - offset), n);
            const auto mask = static_cast<std::uint8_t>(((1u << n) - 1) << first);
            const RaceHit hit = races_.write(word, w.index, lane, w.pc, mask, current, next);
            if (hit.kind != RaceKind::none)
                record_race(w, lane, hit, at);
            at += n;
        }
    }

    void atomic(Warp& w, const Instruction& in, std::uint32_t exec) {
        const std::uint64_t* base = reg(w, in.src[0]);
        const std::uint64_t* b = reg(w, in.src[1]);
        const std::uint64_t* c = in.src[2] >= 0 ? reg(w, in.src[2]) : nullptr;
        std::uint64_t* d = reg(w, in.dst[0]);
        // Lane order, one lane at a time: a valid serialisation of the warp's atomics.
        dispatch_any(in.type, [&](auto zero) {
            using T = decltype(zero);
            for_lanes(exec, [&](unsigned lane) {
                const std::uint64_t address = base[lane] + static_cast<std::uint64_t>(in.offset);
                const Resolved r = resolve(w, lane, w.pc, in.space, address, sizeof(T), true);
                if (r.space == Space::shared) {
                    for (std::size_t word = r.shared_offset / 4;
                         word <= (r.shared_offset + sizeof(T) - 1) / 4; ++word) {
                        shared_written_[word] = 1;
                        races_.atomic_write(word, w.index, lane, w.pc);
                    }
                }
                T old;
                std::memcpy(&old, r.bytes, sizeof(T));
                const T v = as<T>(b[lane]);
                T nv = old;
                if constexpr (std::is_floating_point_v<T>) {
                    switch (in.atom_op) {
                        case AtomOp::add:
                            nv = old + v;
                            break;
                        case AtomOp::min:
                            nv = std::fmin(old, v);
                            break;
                        case AtomOp::max:
                            nv = std::fmax(old, v);
                            break;
                        case AtomOp::exch:
                            nv = v;
                            break;
                        default:
                            break;
                    }
                } else {
                    using U = Unsigned<T>;
                    switch (in.atom_op) {
                        case AtomOp::add:
                            nv = static_cast<T>(
                                static_cast<U>(static_cast<U>(old) + static_cast<U>(v)));
                            break;
                        case AtomOp::min:
                            nv = std::min(old, v);
                            break;
                        case AtomOp::max:
                            nv = std::max(old, v);
                            break;
                        case AtomOp::inc:
                            nv = static_cast<T>(static_cast<U>(old) >= static_cast<U>(v)
                                                    ? U(0)
                                                    : static_cast<U>(old) + 1);
                            break;
                        case AtomOp::dec:
                            nv = static_cast<T>(
                                (old == T(0) || static_cast<U>(old) > static_cast<U>(v))
                                    ? static_cast<U>(v)
                                    : static_cast<U>(old) - 1);
                            break;
                        case AtomOp::exch:
                            nv = v;
                            break;
                        case AtomOp::cas:
                            nv = old == v ? as<T>(c[lane]) : old;
                            break;
                        case AtomOp::and_:
                            nv = static_cast<T>(old & v);
                            break;
                        case AtomOp::or_:
                            nv = static_cast<T>(old | v);
                            break;
                        case AtomOp::xor_:
                            nv = static_cast<T>(old ^ v);
                            break;
                    }
                }
                std::memcpy(r.bytes, &nv, sizeof(T));
                d[lane] = bits_of<T>(old);
            });
        });
    }

    void record_uninitialized(const Warp& w, unsigned lane, std::uint64_t byte_offset) {
        UninitializedSharedRead u;
        u.where = entry_.locations[w.pc];
        u.thread = thread_of(w, lane);
        u.byte_offset = byte_offset;
        u.word = byte_offset / 4;
        locate_variable(byte_offset, u.variable, u.word_in_variable);
        result_.uninitialized_shared_read = std::move(u);
    }

    // The .shared variable holding byte_offset, and the word's index in it.
    void locate_variable(std::uint64_t byte_offset, std::string& name,
                         std::uint64_t& word_in_variable) const {
        for (const auto s : shared_variables_) {
            const Symbol& sym = program_.symbols[static_cast<std::size_t>(s)];
            const std::size_t size = sym.dynamic_shared ? options_.dynamic_shared_bytes : sym.size;
            if (byte_offset >= sym.offset && byte_offset < sym.offset + size) {
                name = sym.name;
                word_in_variable = (byte_offset - sym.offset) / 4;
                return;
            }
        }
    }

    static std::string short_at(const SourceLocation& where) {
        if (where.line > 0)
            return (where.file.empty() ? std::string("line ") : where.file + ":") +
                   std::to_string(where.line);
        return "PTX line " + std::to_string(where.ptx_line);
    }

    static std::string lane_text(const ThreadId& t) {
        return "thread " + dim_text(t.thread) + " (warp " + std::to_string(t.warp) + ", lane " +
               std::to_string(t.lane) + ")";
    }

    // Counts the race for this warp-wide access and reports it once per pair of instructions.
    void record_race(const Warp& w, unsigned lane, const RaceHit& hit, std::uint64_t byte_offset) {
        access_raced_ = true;
        if (result_.races.size() >= LaunchResult::kMaxReportedRaces)
            return;
        // One report per pair of source lines: unrolled copies of a loop's access share one.
        const auto line_key = [&](std::uint32_t pc) {
            const SourceLocation& at = entry_.locations[pc];
            return at.line > 0 ? static_cast<std::uint32_t>(at.line)
                               : 0x8000'0000u | static_cast<std::uint32_t>(at.ptx_line);
        };
        const std::array<std::uint32_t, 3> key = {line_key(w.pc), line_key(hit.pc),
                                                   static_cast<std::uint32_t>(hit.kind)};
        if (std::find(reported_races_.begin(), reported_races_.end(), key) !=
            reported_races_.end()) {
            return;
        }
        reported_races_.push_back(key);
        SharedRace race;
        race.where = entry_.locations[w.pc];
        race.earlier = entry_.locations[hit.pc];
        race.thread = thread_of(w, lane);
        race.byte_offset = byte_offset;
        race.word = byte_offset / 4;
        locate_variable(byte_offset, race.variable, race.word_in_variable);
        const bool any_reader = hit.warp == RaceTracker::kManyWarps;
        if (any_reader) {
            race.other.block = block_;
            race.other.warp = SharedRace::kAnyOtherWarp;
        } else {
            race.other = thread_of_index(hit.warp, hit.lane);
        }
        std::string word = "shared word " + std::to_string(race.word);
        if (!race.variable.empty()) {
            word += " (word " + std::to_string(race.word_in_variable) + " of " +
                    shared_variable_name(race.variable) + ")";
        }
        const std::string block = " of block " + dim_text(block_);
        const std::string unsynchronized = " with no __syncthreads() between them";
        switch (hit.kind) {
            case RaceKind::read_after_write:
                race.kind = SharedRace::Kind::read_after_write;
                race.message = lane_text(race.thread) + block + " read " + word + " at " +
                               short_at(race.where) + ", which " + lane_text(race.other) +
                               " wrote at " + short_at(race.earlier) + unsynchronized;
                break;
            case RaceKind::write_after_read:
                race.kind = SharedRace::Kind::write_after_read;
                race.message = lane_text(race.thread) + block + " wrote " + word + " at " +
                               short_at(race.where) + ", which " +
                               (any_reader ? std::string("other warps")
                                           : lane_text(race.other) + " had") +
                               " read" + (any_reader ? "" : " at " + short_at(race.earlier)) +
                               unsynchronized;
                break;
            case RaceKind::write_after_write:
                race.kind = SharedRace::Kind::write_after_write;
                race.message = lane_text(race.thread) + block + " wrote " + word + " at " +
                               short_at(race.where) + ", which " + lane_text(race.other) +
                               " also wrote at " + short_at(race.earlier) + unsynchronized;
                break;
            case RaceKind::one_store_two_values:
            case RaceKind::none:
                race.kind = SharedRace::Kind::one_store_two_values;
                race.message = "lanes " + std::to_string(race.other.lane) + " and " +
                               std::to_string(race.thread.lane) + " of warp " +
                               std::to_string(w.index) + block + " (threads " +
                               dim_text(race.other.thread) + " and " +
                               dim_text(race.thread.thread) + ") wrote different values to " +
                               word + " in one store at " + short_at(race.where) +
                               ": which one lands is undefined";
                break;
        }
        result_.races.push_back(std::move(race));
    }

    // ---- bank accounting (the rule itself is in banks.cpp) ----

    void record_shared(Warp& w, const Instruction& in, std::uint32_t lanes,
                       const std::array<std::uint64_t, 32>& offsets, std::uint32_t bytes_per_lane) {
        std::int32_t& index = shared_stat_index_[w.pc];
        if (index < 0) {
            index = static_cast<std::int32_t>(counts_.shared_accesses.size());
            SharedAccessStats stats;
            stats.instruction_index = w.pc;
            stats.where = entry_.locations[w.pc];
            stats.store = in.op == Op::st;
            stats.bytes_per_lane = bytes_per_lane;
            counts_.shared_accesses.push_back(std::move(stats));
        }
        SharedAccessStats& stats = counts_.shared_accesses[static_cast<std::size_t>(index)];
        const BankCost cost = bank_cost(lanes, offsets, bytes_per_lane);
        const std::uint32_t fronts = cost.wavefronts;
        const std::uint32_t ideal = cost.ideal;
        const std::uint32_t degree = cost.degree;
        w.cycles += fronts * kWavefrontCycles;
        ++stats.requests;
        stats.wavefronts += fronts;
        stats.ideal_wavefronts += ideal;
        if (stats.store) {
            ++counts_.shared_store_requests;
            counts_.shared_store_wavefronts += fronts;
            counts_.shared_store_ideal_wavefronts += ideal;
        } else {
            ++counts_.shared_load_requests;
            counts_.shared_load_wavefronts += fronts;
            counts_.shared_load_ideal_wavefronts += ideal;
        }
        if (degree > stats.max_degree) {
            stats.max_degree = degree;
            WarpAccessTable table;
            table.block = block_;
            table.warp = w.index;
            table.degree = bank_cost(lanes, offsets, bytes_per_lane, &table).degree;
            table.wavefronts = fronts;
            stats.representative = table;
        }
    }
};

}  // namespace

std::vector<Dim3> first_blocks(Dim3 grid, std::uint64_t count) {
    std::vector<Dim3> blocks;
    const std::uint64_t total = static_cast<std::uint64_t>(grid.x) * grid.y * grid.z;
    count = std::min(count, total);
    blocks.reserve(static_cast<std::size_t>(count));
    for (std::uint64_t k = 0; k < count; ++k) {
        Dim3 b;
        b.x = static_cast<std::uint32_t>(k % grid.x);
        b.y = static_cast<std::uint32_t>((k / grid.x) % grid.y);
        b.z = static_cast<std::uint32_t>(k / (static_cast<std::uint64_t>(grid.x) * grid.y));
        blocks.push_back(b);
    }
    return blocks;
}

std::string_view to_string(LaunchStatus status) {
    switch (status) {
        case LaunchStatus::completed:
            return "completed";
        case LaunchStatus::fault:
            return "fault";
        case LaunchStatus::budget_exceeded:
            return "budget_exceeded";
        case LaunchStatus::unsupported:
            return "unsupported";
    }
    return "unknown";
}

LaunchResult launch(const Module& module, std::string_view entry_name, Dim3 grid, Dim3 block,
                    const std::vector<std::vector<std::byte>>& params, GlobalMemory& memory,
                    const LaunchOptions& options) {
    const detail::Program* program = module.program();
    if (program == nullptr)
        throw std::invalid_argument("launch of an empty module");
    const auto info = module.entry(entry_name);
    if (!info)
        throw std::invalid_argument("the module has no entry " + std::string(entry_name));
    const detail::Entry* entry = nullptr;
    for (const auto& e : program->entries) {
        if (e.name == info->name)
            entry = &e;
    }
    if (params.size() != entry->params.size()) {
        throw std::invalid_argument(info->name + " takes " + std::to_string(entry->params.size()) +
                                    " parameters; " + std::to_string(params.size()) +
                                    " were given");
    }
    for (std::size_t k = 0; k < params.size(); ++k) {
        const std::size_t size = program->symbols[static_cast<std::size_t>(entry->params[k])].size;
        if (params[k].size() != size) {
            throw std::invalid_argument(info->name + " parameter " + std::to_string(k) + " is " +
                                        std::to_string(size) + " bytes; " +
                                        std::to_string(params[k].size()) + " were given");
        }
    }
    const std::uint64_t threads = static_cast<std::uint64_t>(block.x) * block.y * block.z;
    if (threads == 0 || threads > 1024 || block.z > 64 || grid.x == 0 || grid.y == 0 ||
        grid.z == 0) {
        throw std::invalid_argument("invalid launch configuration: grid " + dim_text(grid) +
                                    ", block " + dim_text(block));
    }
    LaunchResult result;
    // Refused before anything is allocated for the launch, as the GPU refuses it.
    const auto refuse = [&](const std::string& why) {
        Fault f;
        f.kind = "launch";
        f.message = "too many resources requested for launch: " + why;
        result.status = LaunchStatus::fault;
        result.message = f.message;
        result.fault = std::move(f);
        return result;
    };
    const std::size_t shared = entry->dynamic_shared_offset + options.dynamic_shared_bytes;
    if (entry->static_shared_bytes > kMaxStaticSharedBytes) {
        return refuse("the kernel declares " + std::to_string(entry->static_shared_bytes) +
                      " bytes of static __shared__ memory per block; a GPU allows " +
                      std::to_string(kMaxStaticSharedBytes) + " (48 KiB)");
    }
    if (shared > kMaxSharedBytes) {
        return refuse("the kernel needs " + std::to_string(shared) +
                      " bytes of shared memory per block; the limit is " +
                      std::to_string(kMaxSharedBytes));
    }
    if (entry->local_bytes > kMaxLocalBytesPerThread) {
        return refuse("the kernel declares " + std::to_string(entry->local_bytes) +
                      " bytes of local memory per thread; a GPU allows " +
                      std::to_string(kMaxLocalBytesPerThread) + " (512 KiB)");
    }
    try {
        Executor executor(*program, *entry, grid, block, params, memory, options, result);
        executor.run();
        result.status = LaunchStatus::completed;
    } catch (const Stop& stop) {
        result.status = stop.status;
    }
    return result;
}

}  // namespace grader::sim
