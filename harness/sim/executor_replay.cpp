// The work blocks share: where a launch runs blocks it does not check, every block does exactly
// the same until it reads what tells it from the others or what another block may have written.
// The first checked block runs that far alone (recording); each block not checked starts from
// the state it reached, with its own identity in place, and runs on from there (replaying). See
// sim.hpp's execution model and executor.hpp.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/wide_vectors.hpp"
#include "sim/executor.hpp"
#include "sim/program.hpp"
#include "sim/races.hpp"
#include "sim/sim.hpp"

namespace grader::sim::detail {

namespace {

// Shared work shorter than this is not worth keeping: the blocks do it themselves (a transpose
// reads %ctaid at its first instructions; the probe's loop is 100,000 warp instructions).
constexpr std::uint64_t kWorthSharing = 2048;

// What a warp is doing, apart from its registers: saved and restored around a replay.
struct WarpControl {
    std::uint32_t pc, mask, live, blocked, waiting, min_waiting_pc;
    std::array<std::uint32_t, 32> lane_pc;
    std::uint32_t reduction_lanes;
    std::int32_t reduction_slot;
    AtomOp reduction_op;
    std::uint64_t cycles;
    std::vector<std::uint64_t> ready;
};

WarpControl control_of(const Warp& w) {
    return {w.pc,
            w.mask,
            w.live,
            w.blocked,
            w.waiting,
            w.min_waiting_pc,
            w.lane_pc,
            w.reduction_lanes,
            w.reduction_slot,
            w.reduction_op,
            w.cycles,
            w.ready};
}

void restore_control(Warp& w, const WarpControl& c) {
    w.pc = c.pc;
    w.mask = c.mask;
    w.live = c.live;
    w.blocked = c.blocked;
    w.waiting = c.waiting;
    w.min_waiting_pc = c.min_waiting_pc;
    w.lane_pc = c.lane_pc;
    w.reduction_lanes = c.reduction_lanes;
    w.reduction_slot = c.reduction_slot;
    w.reduction_op = c.reduction_op;
    w.cycles = c.cycles;
    w.ready = c.ready;
}

// op(a's count, b's count) for each count a launch sums (its shared accesses' by index, up to
// b's entries): the one list of them that counts_since and add_counts share.
template <class Op>
void each_count(LaunchCounts& a, const LaunchCounts& b, Op op) {
    op(a.blocks_executed, b.blocks_executed);
    op(a.warp_instructions, b.warp_instructions);
    op(a.thread_instructions, b.thread_instructions);
    op(a.shared_load_requests, b.shared_load_requests);
    op(a.shared_load_wavefronts, b.shared_load_wavefronts);
    op(a.shared_load_ideal_wavefronts, b.shared_load_ideal_wavefronts);
    op(a.shared_store_requests, b.shared_store_requests);
    op(a.shared_store_wavefronts, b.shared_store_wavefronts);
    op(a.shared_store_ideal_wavefronts, b.shared_store_ideal_wavefronts);
    op(a.global_load_requests, b.global_load_requests);
    op(a.global_load_sectors, b.global_load_sectors);
    op(a.global_store_requests, b.global_store_requests);
    op(a.global_store_sectors, b.global_store_sectors);
    op(a.printf_calls, b.printf_calls);
    for (std::size_t k = 0; k < b.shared_accesses.size(); ++k) {
        op(a.shared_accesses[k].requests, b.shared_accesses[k].requests);
        op(a.shared_accesses[k].wavefronts, b.shared_accesses[k].wavefronts);
        op(a.shared_accesses[k].ideal_wavefronts, b.shared_accesses[k].ideal_wavefronts);
    }
}

// What the launch's counts gained from `before` to `now` (entries only grow).
LaunchCounts counts_since(const LaunchCounts& now, const LaunchCounts& before) {
    LaunchCounts gained = now;
    each_count(gained, before, [](std::uint64_t& a, std::uint64_t b) { a -= b; });
    return gained;
}

// Adds counts_since's `gained` to `counts`: the same requests again, so that no worst request
// changes (the first with the largest degree stays the first).
void add_counts(LaunchCounts& counts, const LaunchCounts& gained) {
    each_count(counts, gained, [](std::uint64_t& a, std::uint64_t b) { a += b; });
}

}  // namespace

// What begin_replay changed in the shared work, for end_replay to put back.
struct Executor::ReplayStart {
    std::vector<WarpControl> controls;
    std::uint64_t reduction_true = 0;
    std::uint64_t reduction_arrived = 0;
    std::uint64_t block_instructions = 0;
    // The recorded block's identity: its SM, warp slots and clock follow from them
    // (set_identity).
    Dim3 block{};
    std::uint32_t place = 0;
};

Executor::Recorded Executor::recordable(const Warp& w, const Instruction& in, std::uint32_t exec,
                                        bool leftover) const {
    const std::size_t base = static_cast<std::size_t>(w.index) * entry_.slot_count;
    const std::uint8_t* tainted = &tainted_[base];
    const auto is_tainted = [&](std::int32_t slot) { return slot >= 0 && tainted[slot] != 0; };
    if (leftover && is_tainted(in.src[0]))
        return Recorded::parks;  // an address of the block's own
    bool from_identity = leftover || reads_block_identity_[w.pc] != 0;
    for (const std::int32_t slot : in.src)
        from_identity = from_identity || is_tainted(slot);
    // A store's value registers are its dst.
    const bool stores = in.op == Op::st;
    for (const std::int32_t slot : in.dst)
        from_identity = from_identity || (stores && is_tainted(slot));
    if (!stores) {
        const auto writable = [&](std::int32_t slot) {
            if (slot < 0)
                return true;
            // A value the same in every block over one of the block's own: the slot is the
            // same in every block again, where every lane is written.
            if (!from_identity)
                return tainted[slot] == 0 || exec == ~0u;
            // The block's own over lanes a replay may have given captured values: the others
            // would keep those.
            return exec == ~0u || captured_[base + static_cast<std::size_t>(slot)] == 0;
        };
        for (const std::int32_t slot : in.dst) {
            if (!writable(slot))
                return Recorded::parks;
        }
        if (!writable(in.dst2))
            return Recorded::parks;
    }
    // A slice past kMostSliceSteps (a loop without end over a value of the block's own) ends
    // where it is: the others compute the rest themselves.
    if ((from_identity || is_tainted(in.guard)) && slice_.size() >= kMostSliceSteps)
        return Recorded::parks;
    if (!from_identity)
        return Recorded::alike;
    if (!pure_[w.pc] && !leftover)
        return Recorded::parks;  // an address, a stored word, another lane's: the block's own
    std::size_t captures = leftover ? 1 : 0;
    for (const std::int32_t slot : in.src)
        captures += slot >= 0 && !tainted[slot] && !fixed_slot_[slot] ? 1 : 0;
    return capture_pool_.size() + captures * 65 <= kMostCaptureWords ? Recorded::own
                                                                     : Recorded::parks;
}

bool Executor::record_instruction(const Warp& w, const Instruction& in, std::uint32_t exec,
                                  bool leftover, Recorded recorded) {
    const std::size_t base = static_cast<std::size_t>(w.index) * entry_.slot_count;
    std::uint8_t* tainted = &tainted_[base];
    const auto is_tainted = [&](std::int32_t slot) { return slot >= 0 && tainted[slot] != 0; };
    const bool from_identity = recorded == Recorded::own;
    const bool stores = in.op == Op::st;
    // A guard read from the block's identity: the others must run the same lanes here (a
    // replay checks), or they part ways there.
    const bool check = is_tainted(in.guard);
    if (!from_identity) {
        // A value the same in every block over one of the block's own: a replay keeps its own
        // there until the recording's is put back, as after a capture.
        bool untainted = false;
        const auto untaint = [&](std::int32_t slot) {
            if (slot >= 0 && tainted[slot] != 0) {
                tainted[slot] = 0;
                captured_[base + static_cast<std::size_t>(slot)] = 1;
                untainted = true;
            }
        };
        if (!stores) {
            for (const std::int32_t slot : in.dst)
                untaint(slot);
            untaint(in.dst2);
        }
        if (untainted)
            taint_changed(w.index);
        if (check)
            slice_.push_back({w.index, w.pc, w.mask, exec, true, false});
        return !untainted && !check;
    }
    SliceStep step{w.index, w.pc, w.mask, exec, check, true};
    step.first_capture = static_cast<std::uint32_t>(capture_pool_.size());
    if (leftover) {
        // Its result, taken once it has run (record_leftover_result); the words of the lanes
        // that read leftovers, now.
        step.leftover = true;
        step.captures = 1;
        capture_pool_.push_back(static_cast<std::uint32_t>(in.dst[0]));
        capture_pool_.resize(capture_pool_.size() + 32);
        const std::uint64_t* address = &w.regs[static_cast<std::size_t>(in.src[0]) * 32];
        for (unsigned lane = 0; lane < 32; ++lane) {
            const std::uint64_t word = (address[lane] + static_cast<std::uint64_t>(in.offset)) / 4;
            leftover_words_.push_back(static_cast<std::uint16_t>(word));
            if (!shared_written_[word])
                step.leftover_lanes |= 1u << lane;
        }
    } else {
        for (const std::int32_t slot : in.src) {
            if (slot < 0 || tainted[slot] || fixed_slot_[slot])
                continue;
            capture(slot, &w.regs[static_cast<std::size_t>(slot) * 32]);
            captured_[base + static_cast<std::size_t>(slot)] = 1;
            ++step.captures;
        }
    }
    bool tainted_now = false;
    const auto taint = [&](std::int32_t slot) {
        if (slot >= 0 && tainted[slot] == 0) {
            tainted[slot] = 1;
            tainted_now = true;
        }
    };
    for (const std::int32_t slot : in.dst)
        taint(slot);
    taint(in.dst2);
    if (tainted_now)
        taint_changed(w.index);
    slice_.push_back(step);
    return false;
}

void Executor::capture(std::int32_t slot, const std::uint64_t* lanes) {
    std::uint64_t high = 0;
    for (unsigned lane = 0; lane < 32; ++lane)
        high |= lanes[lane] >> 32;
    const std::size_t at = capture_pool_.size();
    if (high == 0) {
        capture_pool_.resize(at + 33);
        capture_pool_[at] = static_cast<std::uint32_t>(slot);
        for (unsigned lane = 0; lane < 32; ++lane)
            capture_pool_[at + 1 + lane] = static_cast<std::uint32_t>(lanes[lane]);
    } else {
        capture_pool_.resize(at + 65);
        capture_pool_[at] = static_cast<std::uint32_t>(slot) | kWideCapture;
        std::memcpy(&capture_pool_[at + 1], lanes, 32 * 8);
    }
}

void Executor::record_leftover_result(const Warp& w, const Instruction& in) {
    // A 32-bit load of every lane, zero-extended: 32 words.
    const std::uint64_t* lanes = &w.regs[static_cast<std::size_t>(in.dst[0]) * 32];
    std::uint32_t* into = &capture_pool_[capture_pool_.size() - 32];
    for (unsigned lane = 0; lane < 32; ++lane)
        into[lane] = static_cast<std::uint32_t>(lanes[lane]);
}

bool Executor::reads_leftovers(const Warp& w, const Instruction& in, std::uint32_t exec) const {
    if (!leftovers_kept_ || in.op != Op::ld || in.space != Space::shared || in.vector != 1 ||
        in.bytes != 4 || shared_bytes_ > (std::size_t{1} << 18) || is_signed(in.type) ||
        in.dst[0] < 0 || in.dst[1] >= 0 || in.dst2 >= 0 || exec != ~0u || unwritten_words_ == 0 ||
        shared_bytes_ < 4)
        return false;
    const std::size_t base = static_cast<std::size_t>(w.index) * entry_.slot_count;
    if (in.guard >= 0 && tainted_[base + static_cast<std::size_t>(in.guard)] != 0)
        return false;
    const std::uint64_t* address = &w.regs[static_cast<std::size_t>(in.src[0]) * 32];
    bool any = false;
    for (unsigned lane = 0; lane < 32; ++lane) {
        const std::uint64_t at = address[lane] + static_cast<std::uint64_t>(in.offset);
        if (at > shared_bytes_ - 4 || at % 4 != 0)
            return false;  // it faults, as any block's would
        any = any || !shared_written_[at / 4];
    }
    return any;
}

bool Executor::same_in_every_block(const Warp& w, const Instruction& in, std::uint32_t exec) const {
    if (in.op != Op::ld && in.op != Op::st && in.op != Op::atom)
        return true;
    // .shared parts ways only at a recorded load of a word the block has not written: none once
    // it has written every word (the probe's loop, after its fill).
    if (in.space == Space::shared &&
        (mode_ != Mode::recording || in.op != Op::ld || unwritten_words_ == 0))
        return true;
    const std::uint64_t* base = &w.regs[static_cast<std::size_t>(in.src[0]) * 32];
    const std::uint64_t size = in.op == Op::atom
                                   ? std::max<std::uint64_t>(type_bits(in.type) / 8, 1)
                                   : static_cast<std::uint64_t>(in.bytes) * in.vector;
    for (std::uint32_t m = exec; m != 0; m &= m - 1) {
        const unsigned lane = ctz(m);
        std::uint64_t address = base[lane] + static_cast<std::uint64_t>(in.offset);
        Space space = in.space;
        if (space == Space::generic) {
            if (address - shared_window_ < kWindowSize) {
                space = Space::shared;
                address -= shared_window_;
            } else if (address - local_window_ < kWindowSize) {
                space = Space::local;
            } else {
                space = Space::global;
            }
        }
        switch (space) {
            case Space::local:
                return false;
            case Space::shared:
                // A word no thread of the block wrote holds what was left there: the block's own.
                // (A replay puts its block's leftovers in place first.)
                if (mode_ == Mode::recording && in.op == Op::ld && address < shared_bytes_) {
                    const std::uint64_t last = std::min<std::uint64_t>((address + size - 1) / 4,
                                                                       shared_written_.size() - 1);
                    for (std::uint64_t word = address / 4; word <= last; ++word) {
                        if (!shared_written_[word])
                            return false;
                    }
                }
                break;
            case Space::global: {
                const bool in_input =
                    address - options_.input_address < options_.input_bytes &&
                    size <= options_.input_address + options_.input_bytes - address;
                if (in.op == Op::atom || (in.op == Op::ld) != in_input)
                    return false;
                break;
            }
            default:
                break;  // parameters and constants: the same for every block
        }
    }
    return true;
}

bool Executor::reads_unwritten(const Warp& w, const Instruction& in, std::uint32_t exec) const {
    const std::uint32_t* written =
        &written_lanes_[static_cast<std::size_t>(w.index) * entry_.slot_count];
    // shfl reads other lanes than its own: any live lane may be asked.
    const std::uint32_t lanes = in.op == Op::shfl ? w.live : exec;
    for (const std::int32_t slot : in.src) {
        if (slot >= 0 && (lanes & ~written[slot]) != 0)
            return true;
    }
    return in.guard >= 0 && (w.mask & ~written[in.guard]) != 0;
}

void Executor::note_destinations(const Warp& w, const Instruction& in, std::uint32_t exec) {
    std::uint32_t* written = &written_lanes_[static_cast<std::size_t>(w.index) * entry_.slot_count];
    for (const std::int32_t slot : in.dst) {
        if (slot >= 0)
            written[slot] |= exec;
    }
    if (in.dst2 >= 0)
        written[in.dst2] |= exec;
}

void Executor::save_destinations(const Warp& w, const Instruction& in) {
    for (const std::int32_t slot : in.dst)
        save_slot(w, slot);
    save_slot(w, in.dst2);
}

void Executor::save_shared_word(std::size_t word) {
    std::uint32_t bits;
    std::memcpy(&bits, &shared_[word * 4], 4);
    saved_words_.emplace_back(word, bits);
}

bool Executor::unpark_readers() {
    if (block_instructions_ == unparked_at_)
        return false;  // the same warps would park at the same loads again
    // From here a warp reads its leftovers where it is: parking there would change the order
    // the block's warps ran in from the first time none could go on, which the block's own run
    // and the blocks not recorded followed.
    leftovers_kept_ = true;
    bool any = false;
    for (Warp& w : warps_) {
        if (!w.parked || w.pc >= entry_.code.size())
            continue;
        const Instruction& in = entry_.code[w.pc];
        if (in.op != Op::ld || (in.space != Space::shared && in.space != Space::generic))
            continue;
        const std::uint32_t runs = in.guard >= 0 ? guard_mask(w, in) : w.mask;
        if (runs == 0 || reads_unwritten(w, in, runs))
            continue;
        // Words still unwritten: the block's own leftovers, which the slice can keep.
        if (same_in_every_block(w, in, runs) ||
            (reads_leftovers(w, in, runs) && recordable(w, in, runs, true) != Recorded::parks)) {
            w.parked = false;
            any = true;
        }
    }
    if (any) {
        unparked_at_ = block_instructions_;
        recorded_after_park_ = 0;
        std::uint64_t running = 0;
        for (const Warp& w : warps_)
            running += (w.live & ~w.blocked) != 0 && !w.parked ? 1 : 0;
        most_after_park_ = kMostAfterPark * running;
    }
    return any;
}

BlockState Executor::copy_of_block() const {
    BlockState copy;
    copy.block = block_;
    copy.checked = checked_;
    copy.place = place_;
    copy.sm = sm_of_block_;
    copy.first_warp_slot = first_warp_slot_;
    copy.start_cycles = block_start_cycles_;
    copy.warps.resize(warps_.size());
    for (std::size_t k = 0; k < warps_.size(); ++k) {
        const Warp& from = warps_[k];
        Warp& to = copy.warps[k];
        to.index = from.index;
        to.regs = from.regs;
        // Recording stops before any local access: no page was made.
        to.local_pages.pages.resize(from.local_pages.pages.size());
        restore_control(to, control_of(from));
    }
    copy.shared = shared_;
    copy.shared_written = shared_written_;
    copy.unwritten_words = unwritten_words_;
    copy.reduction_true = reduction_true_;
    copy.reduction_arrived = reduction_arrived_;
    return copy;
}

bool Executor::record_shared_work(BlockState& state, Dim3 b, bool checked, std::uint32_t place) {
    swap_block(state);
    mode_ = Mode::recording;  // start_block keeps what the block writes to shared memory
    start_block(b, checked, place);
    const LaunchCounts counts_before = decoded_ && checked ? *counts_ : LaunchCounts{};
    const std::uint64_t races_before = result_->race_count;
    const std::uint64_t before = result_->instructions_run;
    // Every lane of the special registers and constants holds what the block is given.
    written_lanes_.assign(warps_.size() * static_cast<std::size_t>(entry_.slot_count), 0);
    for (std::size_t k = 0; k < warps_.size(); ++k) {
        std::uint32_t* written = &written_lanes_[k * static_cast<std::size_t>(entry_.slot_count)];
        std::fill_n(written + entry_.special_base, static_cast<int>(Special::count), ~0u);
        for (const ConstantSlot& c : entry_.constants)
            written[c.slot] = ~0u;
    }
    clear_sharing_flags();
    const std::size_t slots = warps_.size() * static_cast<std::size_t>(entry_.slot_count);
    tainted_.assign(slots, 0);
    captured_.assign(slots, 0);
    fixed_slot_.assign(static_cast<std::size_t>(entry_.slot_count), 0);
    std::fill_n(fixed_slot_.begin() + entry_.special_base, static_cast<int>(Special::count), 1);
    for (const ConstantSlot& c : entry_.constants)
        fixed_slot_[static_cast<std::size_t>(c.slot)] = 1;
    slice_.clear();
    capture_pool_.clear();
    leftover_words_.clear();
    mode_ = Mode::recording;
    stuck_ = false;
    parked_any_ = false;
    recorded_after_park_ = 0;
    unparked_at_ = ~std::uint64_t{0};
    most_after_park_ = kMostAfterPark;
    leftovers_kept_ = false;
    bool ended = false;
    try {
        while (!ended && !stuck_)
            ended = step_block();
    } catch (...) {
        mode_ = Mode::normal;
        swap_block(state);
        throw;
    }
    mode_ = Mode::normal;
    shared_work_instructions_ = result_->instructions_run - before;
    // The loads of leftovers whose words the block wrote after them: the replay computes those
    // lanes' leftovers (the others it finds in its shared memory).
    std::size_t leftover_at = 0;
    for (SliceStep& step : slice_) {
        if (!step.leftover)
            continue;
        for (std::uint32_t m = step.leftover_lanes; m != 0; m &= m - 1) {
            if (shared_written_[leftover_words_[leftover_at + ctz(m)]])
                step.leftover_rewritten = true;
        }
        leftover_at += 32;
    }
    if (ended || shared_work_instructions_ >= kWorthSharing) {
        shared_work_ = copy_of_block();
        ++shared_work_generation_;
        replay_own_instructions_ = 0;  // the first replay runs on the launch's thread, measured
        shared_work_->shared_written = shared_written_;
        shared_work_->checked = false;
        shared_work_written_ = written_lanes_;
        slot_saved_.assign(warps_.size() * static_cast<std::size_t>(entry_.slot_count), 0);
        checked_work_.reset();
        if (keeps_checked_work()) {
            CheckedWork work;
            work.generation = shared_work_generation_;
            work.counts = counts_since(*counts_, counts_before);
            work.race_count = result_->race_count - races_before;
            work.races = races_;
            work.barriers = block_barriers_;
            checked_work_ = std::move(work);
        }
    }
    for (Warp& w : warps_)
        w.parked = false;  // the block itself goes on from here as any block does
    if (!checked_)
        shared_written_.clear();  // it goes on lean
    swap_block(state);
    return ended;
}

void Executor::find_inert() {
    const std::vector<Instruction>& code = entry_.code;
    const std::size_t n = code.size();
    inert_.assign(n, 0);
    for (std::size_t pc = 0; pc < n; ++pc) {
        const Instruction& in = code[pc];
        bool quiet = reads_clock_[pc] == 0;
        switch (in.op) {
            case Op::ld:
                quiet = quiet && (in.space == Space::param || in.space == Space::constant);
                break;
            case Op::st:
                quiet = quiet && in.space == Space::global;
                break;
            case Op::atom:
            case Op::printf_call:
            case Op::nanosleep:
            case Op::trap:
            case Op::unsupported:
                quiet = false;
                break;
            default:
                break;
        }
        inert_[pc] = quiet ? 1 : 0;
    }
    // Inert where the instruction is quiet and so is every one a warp may go to from it: from the
    // end back, again until nothing changes (a loop's branch back).
    for (bool changed = true; changed;) {
        changed = false;
        for (std::size_t pc = n; pc-- > 0;) {
            const Instruction& in = code[pc];
            if (!inert_[pc])
                continue;
            const bool ends = (in.op == Op::exit || in.op == Op::bra) && in.guard < 0;
            const bool next_quiet = ends || (pc + 1 < n && inert_[pc + 1]);
            const bool target_quiet = in.op != Op::bra || (in.target < n && inert_[in.target]);
            if (!next_quiet || !target_quiet) {
                inert_[pc] = 0;
                changed = true;
            }
        }
    }
}

bool Executor::keeps_checked_work() const {
    if (!decoded_ || !checked_ || clock_observed_ || !leftover_words_.empty() ||
        unparked_at_ != ~std::uint64_t{0})
        return false;
    for (const Warp& w : warps_) {
        if (!w.parked)
            continue;
        if (w.blocked != 0 || w.pc >= inert_.size() || !inert_[w.pc])
            return false;
        for (std::uint32_t m = w.waiting; m != 0; m &= m - 1) {
            const std::uint32_t pc = w.lane_pc[ctz(m)];
            if (pc >= inert_.size() || !inert_[pc])
                return false;
        }
    }
    return true;
}

void Executor::continue_from_checked_work(Dim3 b, std::uint32_t place) {
    // Once a block has stored into the input, which the recording read as it was before, a
    // checked block reads it at its own time again.
    if (!shared_work_ || !checked_work_ || checked_work_->generation != shared_work_generation_ ||
        result_->wrote_input)
        return;
    // Where its budget would run out in the shared work, it runs from its start, as it would.
    const std::uint64_t budget = options_.instruction_budget;
    const std::uint64_t block_budget = options_.block_instruction_budget;
    if (result_->instructions_run >= budget ||
        shared_work_instructions_ >= budget - result_->instructions_run ||
        (block_budget != 0 && shared_work_instructions_ >= block_budget))
        return;
    BlockState own;
    swap_block(own);  // its start, as start_block made it
    ReplayStart start;
    const bool same_way = begin_replay(b, place, own.shared.data(), start);
    if (same_way) {
        // Where the recording ended, with its own start in every lane the recording never wrote
        // (its place's leftovers) and its own leftovers in shared memory.
        const std::size_t slots = static_cast<std::size_t>(entry_.slot_count);
        for (std::size_t k = 0; k < warps_.size(); ++k) {
            const Warp& from = warps_[k];
            Warp& to = own.warps[k];
            restore_control(to, control_of(from));
            const std::uint32_t* written = &shared_work_written_[k * slots];
            for (std::size_t slot = 0; slot < slots; ++slot) {
                const std::uint64_t* lanes = &from.regs[slot * 32];
                std::uint64_t* into = &to.regs[slot * 32];
                if (written[slot] == ~0u) {
                    std::copy_n(lanes, 32, into);
                    continue;
                }
                for (std::uint32_t m = written[slot]; m != 0; m &= m - 1)
                    into[ctz(m)] = lanes[ctz(m)];
            }
        }
        own.shared = shared_;
        own.shared_written = shared_written_;
        own.unwritten_words = unwritten_words_;
        own.reduction_true = reduction_true_;
        own.reduction_arrived = reduction_arrived_;
        end_replay(start);
    }
    swap_block(own);
    if (!same_way)
        return;
    races_ = checked_work_->races;
    block_barriers_ = checked_work_->barriers;
    block_instructions_ = shared_work_instructions_;
    result_->instructions_run += shared_work_instructions_;
    result_->race_count += checked_work_->race_count;
    add_counts(*counts_, checked_work_->counts);
    ++result_->blocks_sharing_work;
    result_->instructions_shared += shared_work_instructions_;
    ++started_from_work_;
}

bool Executor::speculation_held() const {
    const std::uint64_t blocks = result_->blocks_run;
    return undo_log_ != nullptr && checked_work_ && !recording_stored_ && !global_atomic_ &&
           !result_->wrote_input && blocks > 1 && started_from_work_ == blocks - 1;
}

GRADER_WIDE_VECTORS bool Executor::compute_slice_again(std::uint64_t linear,
                                                       const std::byte* own_shared) {
    const auto own_leftover = [&](std::size_t word) {
        std::uint32_t bits;
        if (own_shared != nullptr)
            std::memcpy(&bits, own_shared + word * 4, 4);
        else
            bits = leftover_bits(linear, word);
        return bits;
    };
    // The shared words nothing wrote hold what this block's place left there (and the slice's
    // loads of leftovers read them there).
    for (std::size_t word = 0; unwritten_words_ != 0 && word < shared_written_.size(); ++word) {
        if (!shared_written_[word]) {
            save_shared_word(word);
            const std::uint32_t bits = own_leftover(word);
            std::memcpy(&shared_[word * 4], &bits, 4);
        }
    }
    std::size_t leftover_step = 0;
    for (const SliceStep& step : slice_) {
        Warp& w = warps_[step.warp];
        const Instruction& in = entry_.code[step.pc];
        if (step.check) {
            const std::uint64_t* p = &w.regs[static_cast<std::size_t>(in.guard) * 32];
            std::uint32_t runs = 0;
            for (std::uint32_t m = step.mask; m != 0; m &= m - 1) {
                const unsigned lane = ctz(m);
                if ((p[lane] != 0) != in.negate_guard)
                    runs |= 1u << lane;
            }
            if (runs != step.exec)
                return false;
        }
        if (!step.compute)
            continue;
        const std::uint32_t* pool = &capture_pool_[step.first_capture];
        if (step.leftover) {
            // The recorded result, with this block's leftovers where the recorded block read
            // its own: in shared memory, put there above, unless a later store took the word.
            const std::int32_t slot = static_cast<std::int32_t>(*pool);
            save_slot(w, slot);
            std::uint64_t* value = &w.regs[static_cast<std::size_t>(slot) * 32];
            const std::uint16_t* words = &leftover_words_[leftover_step];
            leftover_step += 32;
            const std::uint32_t* recorded_lanes = pool + 1;
            const std::byte* shared = shared_.data();
            // Each lane once (write_lanes): a leftover lane stored over the recorded copy made
            // the next instruction's loads of it wait, half of a half-written tile's replay.
            const std::uint32_t leftover_lanes = step.leftover_lanes;
            write_lanes(value, [&](unsigned lane) -> std::uint64_t {
                if (((leftover_lanes >> lane) & 1) == 0)
                    return recorded_lanes[lane];
                std::uint32_t own;
                std::memcpy(&own, shared + std::size_t{words[lane]} * 4, 4);
                return own;
            });
            if (step.leftover_rewritten) {
                for (std::uint32_t m = step.leftover_lanes; m != 0; m &= m - 1) {
                    const unsigned lane = ctz(m);
                    if (shared_written_[words[lane]])
                        value[lane] = own_leftover(words[lane]);
                }
            }
            continue;
        }
        // Its operands the same in every block, as they were when it ran.
        for (std::uint32_t k = 0; k < step.captures; ++k) {
            const std::int32_t slot = static_cast<std::int32_t>(*pool & ~kWideCapture);
            const bool wide = (*pool & kWideCapture) != 0;
            ++pool;
            save_slot(w, slot);
            std::uint64_t* lanes = &w.regs[static_cast<std::size_t>(slot) * 32];
            if (wide) {
                std::memcpy(lanes, pool, 32 * 8);
                pool += 64;
            } else {
                for (unsigned lane = 0; lane < 32; ++lane)
                    lanes[lane] = pool[lane];
                pool += 32;
            }
        }
        save_destinations(w, in);
        if (decoded_)
            steps_[step.pc].run(*this, w, in, step.exec);
        else if (in.ftz)
            execute_ftz(w, in, step.exec);
        else
            execute(w, in, step.exec);
    }
    return true;
}

bool Executor::begin_replay(Dim3 b, std::uint32_t place, const std::byte* own_shared,
                            ReplayStart& start) {
    swap_block(*shared_work_);
    start.block = block_;
    start.place = place_;
    start.reduction_true = reduction_true_;
    start.reduction_arrived = reduction_arrived_;
    start.block_instructions = block_instructions_;
    const std::uint64_t recorded_start = block_start_cycles_;
    set_identity(b, place);
    start.controls.reserve(warps_.size());
    const auto special = [&](Warp& w, Special s) {
        const std::int32_t slot = entry_.special_base + static_cast<std::int32_t>(s);
        slot_saved_[static_cast<std::size_t>(w.index) * entry_.slot_count +
                    static_cast<std::size_t>(slot)] = 1;
        SavedSlot saved{w.index, slot, {}};
        std::uint64_t* lanes = &w.regs[static_cast<std::size_t>(slot) * 32];
        std::copy_n(lanes, 32, saved.values.begin());
        saved_slots_.push_back(saved);
        return lanes;
    };
    const auto identity = [&](Warp& w, Special s, std::uint64_t value) {
        if (special_read_[static_cast<std::size_t>(s)] != 0)
            std::fill_n(special(w, s), 32, value);
    };
    for (Warp& w : warps_) {
        start.controls.push_back(control_of(w));
        // The block's own identity (where the kernel reads it); its SM's clock runs on from
        // where the recorded block's was.
        identity(w, Special::ctaid_x, b.x);
        identity(w, Special::ctaid_y, b.y);
        identity(w, Special::ctaid_z, b.z);
        identity(w, Special::smid, sm_of_block_);
        identity(w, Special::warpid, first_warp_slot_ + w.index);
        for (const Special clock :
             {Special::clock, Special::clock_hi, Special::clock64, Special::globaltimer,
              Special::globaltimer_lo, Special::globaltimer_hi}) {
            if (special_read_[static_cast<std::size_t>(clock)] != 0)
                special(w, clock);
        }
        w.cycles = w.cycles - recorded_start + block_start_cycles_;
        for (std::uint64_t& ready : w.ready)  // a value not ready yet is as far ahead as it was
            ready = ready > recorded_start ? ready - recorded_start + block_start_cycles_ : 0;
    }
    // What the recorded block computed from its identity and leftovers, computed again from this
    // one's; where its guards let other lanes run than the recorded block's, this block parts
    // ways.
    const std::uint64_t linear = b.x + static_cast<std::uint64_t>(grid_.x) *
                                           (b.y + static_cast<std::uint64_t>(grid_.y) * b.z);
    const bool same_way = compute_slice_again(linear, own_shared);
    if (!same_way) {
        // Nothing of it ran: its registers and shared words back.
        end_replay(start);
        return false;
    }
    // The slots the same in every block where the recording ended hold what it left there: the
    // captured values and the block's own values written over them are undone.
    for (const SavedSlot& saved : saved_slots_) {
        const std::size_t at = static_cast<std::size_t>(saved.warp) * entry_.slot_count +
                               static_cast<std::size_t>(saved.slot);
        if (!fixed_slot_[static_cast<std::size_t>(saved.slot)] && tainted_[at] == 0) {
            std::copy(saved.values.begin(), saved.values.end(),
                      &warps_[saved.warp].regs[static_cast<std::size_t>(saved.slot) * 32]);
        }
    }
    return true;
}

void Executor::end_replay(const ReplayStart& start) {
    mode_ = Mode::normal;
    for (const SavedSlot& saved : saved_slots_) {
        std::copy(saved.values.begin(), saved.values.end(),
                  &warps_[saved.warp].regs[static_cast<std::size_t>(saved.slot) * 32]);
        slot_saved_[static_cast<std::size_t>(saved.warp) * entry_.slot_count +
                    static_cast<std::size_t>(saved.slot)] = 0;
    }
    saved_slots_.clear();
    for (auto it = saved_words_.rbegin(); it != saved_words_.rend(); ++it)
        std::memcpy(&shared_[it->first * 4], &it->second, 4);
    saved_words_.clear();
    for (std::size_t k = 0; k < warps_.size(); ++k)
        restore_control(warps_[k], start.controls[k]);
    reduction_true_ = start.reduction_true;
    reduction_arrived_ = start.reduction_arrived;
    block_instructions_ = start.block_instructions;
    set_identity(start.block, start.place);
    swap_block(*shared_work_);
}

Executor::Replay Executor::replay(Dim3 b, std::uint32_t place) {
    ReplayStart start;
    if (!begin_replay(b, place, nullptr, start))
        return Replay::went_its_way;  // it runs from its start
    written_lanes_ = shared_work_written_;
    clear_sharing_flags();
    // The work it shares counts toward the budget as its own.
    const std::uint64_t instructions_before = result_->instructions_run;
    result_->instructions_run += shared_work_instructions_;
    block_instructions_ = shared_work_instructions_;
    mode_ = Mode::replaying;
    bool ended = false;
    try {
        while (!ended)
            ended = step_block();
    } catch (const PartsWays&) {
        result_->instructions_run = instructions_before;  // it runs again from its start
    } catch (...) {
        end_replay(start);
        throw;
    }
    end_replay(start);
    if (ended) {
        ++result_->blocks_run;
        ++result_->blocks_sharing_work;
        result_->instructions_shared += shared_work_instructions_;
    }
    return ended ? Replay::ended : Replay::parted;
}

void Executor::make_replay_workers(unsigned count) {
    ReplayWorkers& workers = replay_workers_;
    if (workers.generation != shared_work_generation_) {
        workers.executors.clear();
        workers.generation = shared_work_generation_;
    }
    if (workers.executors.size() >= count)
        return;
    // Each worker a copy of this executor, without what a replay does not touch (the places'
    // leftovers, the spare register files), reporting to a result of its own.
    std::vector<BlockState> leftovers;
    std::vector<std::vector<std::uint64_t>> spare;
    std::swap(leftovers, place_leftovers_);
    std::swap(spare, spare_files_);
    try {
        while (workers.executors.size() < count) {
            workers.results.resize(std::max(workers.results.size(), workers.executors.size() + 1));
            auto& result = workers.results[workers.executors.size()];
            if (!result)
                result = std::make_unique<LaunchResult>();
            workers.executors.emplace_back(new Executor(*this));
            workers.executors.back()->result_ = result.get();
            workers.executors.back()->counts_ = &result->counts;
        }
    } catch (...) {
        std::swap(leftovers, place_leftovers_);
        std::swap(spare, spare_files_);
        throw;
    }
    std::swap(leftovers, place_leftovers_);
    std::swap(spare, spare_files_);
}

std::size_t Executor::replay_batch(const std::vector<Dim3>& blocks,
                                   const std::vector<std::uint32_t>& places) {
    struct Replayed {
        Replay outcome = Replay::parted;
        bool threw = false;
        std::uint64_t instructions = 0;  // the shared work's included
        std::vector<LoggedStore> stores;
    };
    const std::size_t n = blocks.size();
    std::vector<Replayed> replayed(n);
    const auto threads =
        static_cast<unsigned>(std::min<std::size_t>(std::max(options_.threads, 1u), n));
    // The batch's logs together hold at most kMostLogged stores (96 MiB; a batch is at most
    // 1,024 blocks), each block's at least kLeastLogged (a Part 2 block stores 1,024 words, a
    // probe block 256).
    constexpr std::size_t kMostLogged = std::size_t{1} << 22;
    constexpr std::size_t kLeastLogged = std::size_t{1} << 12;
    const std::size_t log_limit = std::max(kLeastLogged, kMostLogged / n);
    make_replay_workers(threads);
    const std::uint64_t base = result_->instructions_run;
    std::atomic<std::size_t> next{0};
    // The first block not to be applied: the workers leave the blocks after it.
    std::atomic<std::size_t> first_stop{n};
    const auto work = [&](unsigned t) {
        Executor& worker = *replay_workers_.executors[t];
        for (std::size_t k = next++; k < n && k < first_stop.load(); k = next++) {
            Replayed& r = replayed[k];
            worker.store_log_ = &r.stores;
            worker.store_log_limit_ = log_limit;
            worker.result_->instructions_run = base;
            try {
                r.outcome = worker.replay(blocks[k], places[k]);
                r.instructions = worker.result_->instructions_run - base;
            } catch (...) {
                // A fault, a timeout, a full store log: run() replays it again itself, and
                // ends where it does.
                r.threw = true;
            }
            if (r.threw || r.outcome != Replay::ended) {
                std::size_t stop = first_stop.load();
                while (k < stop && !first_stop.compare_exchange_weak(stop, k)) {
                }
                if (r.threw)
                    return;
            }
        }
    };
    std::vector<std::thread> pool;
    try {
        for (unsigned t = 1; t < threads; ++t)
            pool.emplace_back(work, t);
    } catch (const std::system_error&) {
        // No thread to be had: the threads started and this one replay them all.
    }
    work(0);
    for (std::thread& t : pool)
        t.join();
    const bool threw =
        std::any_of(replayed.begin(), replayed.end(), [](const Replayed& r) { return r.threw; });
    if (threw)
        replay_workers_.executors.clear();  // one may have been left mid-replay
    // In launch order, as replay() would have left them one by one.
    std::size_t applied = 0;
    for (; applied < n; ++applied) {
        const Replayed& r = replayed[applied];
        if (applied >= first_stop.load() || r.threw || r.outcome != Replay::ended ||
            r.instructions > options_.instruction_budget -
                                 std::min(options_.instruction_budget, result_->instructions_run))
            break;  // run() replays it itself: a timeout ends the launch where it ran out
        for (const LoggedStore& store : r.stores)
            store_bytes(store.at, store.value, store.size);
        result_->instructions_run += r.instructions;
        ++result_->blocks_run;
        ++result_->blocks_sharing_work;
        result_->instructions_shared += shared_work_instructions_;
    }
    return applied;
}

}  // namespace grader::sim::detail
