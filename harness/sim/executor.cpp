// Executes a decoded entry warp by warp. See sim.hpp for the execution model.

#include "sim/executor.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "common/wide_vectors.hpp"
#include "sim/sim.hpp"

namespace grader::sim {

namespace detail {

namespace {

// What the GPU path poisons shared memory with before the hidden-input run: a quiet NaN, its
// payload (the low 22 bits) differing word by word (reference/poison_shared_memory.cu).
constexpr std::uint32_t kQuietNan = 0x7fc00000u;
constexpr std::uint32_t kNanPayload = 0x003fffffu;
std::uint32_t poisoned(std::uint32_t leftover) {
    return kQuietNan | (leftover & kNanPayload);
}
// Register files of finished blocks' warps, kept for the next block of this thread's launches: a
// probe block's registers are megabytes, and fresh memory for every block, faulted in page by
// page, cost as much as running the block.
thread_local std::vector<std::vector<std::uint64_t>> spare_registers;
constexpr std::size_t kSpareRegisterFiles = 16 * 32;

// xorshift64*'s step and output.
std::uint64_t poison_step(std::uint64_t x) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    return x;
}
constexpr std::uint64_t kPoisonMultiplier = 0x2545f4914f6cdd1dull;

// A linear map of 64-bit states over GF(2): column i is the image of bit i alone.
using StateMap = std::array<std::uint64_t, 64>;

std::uint64_t image(const StateMap& map, std::uint64_t x) {
    std::uint64_t result = 0;
    for (; x != 0; x &= x - 1)
        result ^= map[static_cast<std::size_t>(__builtin_ctzll(x))];
    return result;
}

// `outer` after `inner`.
StateMap compose(const StateMap& outer, const StateMap& inner) {
    StateMap result;
    for (std::size_t bit = 0; bit < 64; ++bit)
        result[bit] = image(outer, inner[bit]);
    return result;
}

// `steps` steps of the poison stream as one map; the last few asked for are kept (a launch asks
// for one, a quarter of its register file, block after block).
StateMap poison_steps(std::uint64_t steps) {
    thread_local std::vector<std::pair<std::uint64_t, StateMap>> known;
    for (const auto& [n, map] : known) {
        if (n == steps)
            return map;
    }
    StateMap power;
    StateMap result;
    for (std::size_t bit = 0; bit < 64; ++bit) {
        power[bit] = poison_step(std::uint64_t{1} << bit);
        result[bit] = std::uint64_t{1} << bit;
    }
    for (std::uint64_t n = steps; n != 0; n >>= 1) {
        if ((n & 1) != 0)
            result = compose(power, result);
        if (n > 1)
            power = compose(power, power);
    }
    constexpr std::size_t kKept = 8;
    if (known.size() == kKept)
        known.erase(known.begin());
    known.emplace_back(steps, result);
    return known.back().second;
}

// Runs shorter than this go one step at a time: four places at once first take the quarter's
// map to three states (a few hundred steps' work), and find the map once for each length (tens
// of thousands). A launch's register files are each far longer.
constexpr std::size_t kFourPlacesFrom = 1024;

// Whether a kernel uses a printf's result: NVRTC loads it from the call's result scratch after
// every call, into a register nothing may read.
bool printf_result_used(const std::vector<Instruction>& code) {
    std::vector<std::int32_t> results, loaded;
    for (const Instruction& in : code) {
        if (in.op == Op::printf_call && in.src[1] != kNoSlot)
            results.push_back(in.src[1]);
    }
    for (const Instruction& in : code) {
        if (in.op == Op::ld && std::count(results.begin(), results.end(), in.src[0]) != 0)
            loaded.insert(loaded.end(), std::begin(in.dst), std::end(in.dst));
    }
    const auto is_loaded = [&](std::int32_t slot) {
        return slot != kNoSlot && std::count(loaded.begin(), loaded.end(), slot) != 0;
    };
    return std::any_of(code.begin(), code.end(), [&](const Instruction& in) {
        return std::any_of(std::begin(in.src), std::end(in.src), is_loaded) ||
               is_loaded(in.guard) ||
               (in.op == Op::st && std::any_of(std::begin(in.dst), std::end(in.dst), is_loaded));
    });
}

// Whether every register a thread reads it has written itself before, whichever way it takes
// through the kernel: then no thread reads what its registers held when its block started (what
// the last block on the place left), and a block may start with any register file. A must-write
// analysis over the branches, a thread at a time: a guarded instruction writes nothing for sure.
// Special registers and constants are given to every block. A shuffle reads another lane's
// register, which that lane may never have written: a kernel with one is taken to read them.
bool registers_written_before_read(const Entry& entry) {
    const std::vector<Instruction>& code = entry.code;
    const std::size_t n = code.size();
    const auto slots = static_cast<std::size_t>(entry.slot_count);
    const std::size_t words = (slots + 63) / 64;
    // A kernel whose look would take more than a few milliseconds (a large one, or branches
    // that make the passes below many) is taken to read them.
    constexpr std::size_t kMostWork = std::size_t{1} << 24;
    if (n == 0 || slots == 0 || n > kMostWork / words)
        return false;
    std::size_t work = 0;
    const auto set = [](std::uint64_t* bits, std::int32_t slot) {
        if (slot >= 0)
            bits[static_cast<std::size_t>(slot) / 64] |= 1ull << (slot % 64);
    };
    const auto has = [](const std::uint64_t* bits, std::int32_t slot) {
        return slot < 0 || ((bits[static_cast<std::size_t>(slot) / 64] >> (slot % 64)) & 1) != 0;
    };
    // written[pc]: the slots written on every way to pc (all of them where no way reaches it).
    std::vector<std::uint64_t> written(n * words, ~0ull);
    std::fill_n(written.begin(), words, 0);
    for (int s = 0; s < static_cast<int>(Special::count); ++s)
        set(&written[0], entry.special_base + s);
    for (const ConstantSlot& c : entry.constants)
        set(&written[0], c.slot);
    std::vector<std::uint64_t> out(words);
    for (bool changed = true; changed;) {
        changed = false;
        work += n * words;
        if (work > kMostWork)
            return false;
        for (std::size_t pc = 0; pc < n; ++pc) {
            const Instruction& in = code[pc];
            std::copy_n(&written[pc * words], words, out.begin());
            const bool writes = in.guard < 0 && in.op != Op::st && in.op != Op::printf_call &&
                                in.op != Op::nop && in.op != Op::unsupported;
            if (writes) {
                for (const std::int32_t slot : in.dst)
                    set(out.data(), slot);
                set(out.data(), in.dst2);
            }
            const auto flow = [&](std::size_t to) {
                for (std::size_t k = 0; k < words; ++k) {
                    std::uint64_t& at = written[to * words + k];
                    const std::uint64_t meet = at & out[k];
                    changed = changed || meet != at;
                    at = meet;
                }
            };
            const bool ends =
                (in.op == Op::exit || in.op == Op::bra || in.op == Op::trap) && in.guard < 0;
            if (!ends && pc + 1 < n)
                flow(pc + 1);
            if (in.op == Op::bra && in.target < n)
                flow(in.target);
        }
    }
    for (std::size_t pc = 0; pc < n; ++pc) {
        const Instruction& in = code[pc];
        if (in.op == Op::shfl)
            return false;
        const std::uint64_t* before = &written[pc * words];
        bool reads_written = has(before, in.guard);
        for (const std::int32_t slot : in.src)
            reads_written = reads_written && has(before, slot);
        if (in.op == Op::st) {
            for (const std::int32_t slot : in.dst)
                reads_written = reads_written && has(before, slot);
        }
        if (!reads_written)
            return false;
    }
    return true;
}

std::uint64_t unix_ns() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
}

}  // namespace

Executor::Executor(const Program& program, const Entry& entry, Dim3 grid, Dim3 block,
                   const std::vector<std::vector<std::byte>>& params, GlobalMemory& memory,
                   const LaunchOptions& options, LaunchResult& result)
    : program_(program),
      entry_(entry),
      grid_(grid),
      block_dim_(block),
      memory_(memory),
      options_(options),
      result_(&result),
      counts_(&result.counts) {
    threads_per_block_ = block.x * block.y * block.z;
    warps_per_block_ = (threads_per_block_ + 31) / 32;
    shared_bytes_ = entry.dynamic_shared_offset + options.dynamic_shared_bytes;
    if (options.dynamic_shared_bytes == 0)
        shared_bytes_ = entry.static_shared_bytes;
    // What the block is given: whole allocation units, as a GPU gives it (GpuModel::shared_unit).
    shared_bytes_ = options.gpu.shared_allocation(shared_bytes_);
    // Parameters, laid out as the PTX declares them.
    param_buffer_.assign(entry.param_bytes, std::byte{0});
    for (std::size_t k = 0; k < entry.params.size(); ++k) {
        const Symbol& p = program.symbols[static_cast<std::size_t>(entry.params[k])];
        std::memcpy(param_buffer_.data() + p.offset, params[k].data(), p.size);
    }
    // Symbol addresses: global variables get fresh allocations for this launch, holding what
    // the module's previous launch left in them where the caller keeps that.
    symbol_address_.assign(program.symbols.size(), 0);
    const std::vector<std::byte>* kept =
        options.module_globals != nullptr && options.module_globals->size() == globals_bytes()
            ? options.module_globals
            : nullptr;
    std::size_t kept_at = 0;
    for (std::size_t s = 0; s < program.symbols.size(); ++s) {
        const Symbol& sym = program.symbols[s];
        if (sym.space == Space::global || sym.space == Space::constant) {
            symbol_address_[s] = memory.allocate(sym.size);
            if (sym.space == Space::global && kept != nullptr) {
                memory.write(symbol_address_[s], kept->data() + kept_at, sym.size);
                kept_at += sym.size;
            } else if (!sym.init.empty()) {
                memory.write(symbol_address_[s], sym.init.data(), sym.init.size());
            }
        } else {
            symbol_address_[s] = sym.offset;
        }
    }
    register_image_.assign(static_cast<std::size_t>(entry.slot_count) * 32, 0);
    for (const ConstantSlot& c : entry.constants) {
        const std::uint64_t value =
            c.value + (c.symbol >= 0 ? symbol_address_[static_cast<std::size_t>(c.symbol)] : 0);
        std::fill_n(register_image_.begin() + static_cast<std::ptrdiff_t>(c.slot) * 32, 32, value);
    }
    shared_stat_index_.assign(entry.code.size(), -1);
    bank_cost_slot_.assign(entry.code.size(), 0);
    last_global_.assign(entry.code.size(), 0);
    // Instructions that read a clock: the clock's slots are brought up to date before them.
    // Those that read what tells one block from another (a clock among it).
    reads_clock_.assign(entry.code.size(), 0);
    reads_block_identity_.assign(entry.code.size(), 0);
    const auto identity = [&](std::int32_t slot) {
        const std::int32_t s = slot - entry.special_base;
        for (const Special special : {Special::ctaid_x, Special::ctaid_y, Special::ctaid_z,
                                      Special::smid, Special::warpid}) {
            if (s == static_cast<std::int32_t>(special))
                return true;
        }
        return is_clock_slot(slot);
    };
    pure_.assign(entry.code.size(), 0);
    clock_observed_ = false;
    printf_result_read_ = printf_result_used(entry.code);
    special_read_.fill(0);
    const auto note_special = [&](std::int32_t slot) {
        const std::int32_t s = slot - entry.special_base;
        if (slot >= 0 && s >= 0 && s < static_cast<std::int32_t>(Special::count))
            special_read_[static_cast<std::size_t>(s)] = 1;
    };
    for (std::size_t pc = 0; pc < entry.code.size(); ++pc) {
        const Instruction& in = entry.code[pc];
        for_each_slot(in, note_special);
        for (const std::int32_t slot : in.src) {
            reads_clock_[pc] |= static_cast<std::uint8_t>(is_clock_slot(slot));
            reads_block_identity_[pc] |= static_cast<std::uint8_t>(identity(slot));
        }
        clock_observed_ = clock_observed_ || reads_clock_[pc] != 0;
        reads_block_identity_[pc] |= static_cast<std::uint8_t>(in.guard >= 0 && identity(in.guard));
        switch (in.op) {
            case Op::ld:
            case Op::st:
            case Op::atom:
            case Op::shfl:
            case Op::vote_ballot:
            case Op::vote_all:
            case Op::vote_any:
            case Op::vote_uni:
            case Op::activemask:
            case Op::redux:
            case Op::bra:
            case Op::exit:
            case Op::bar:
            case Op::bar_red:
            case Op::trap:
            case Op::printf_call:
            case Op::nanosleep:
            case Op::unsupported:
                break;
            default:
                pure_[pc] = !reads_clock_[pc];
                break;
        }
    }
    local_pages_per_lane_ = (entry.local_bytes + kLocalPage - 1) / kLocalPage;
    poison_state_ = options.clock_seed * 0x9e3779b97f4a7c15ull ^ 0x706f69736f6eull;
    // An H200's unwritten local memory read one word everywhere (gpu-check's `behaviours`: one
    // value in every thread and word, 0xfffdc0, what ran there before): one word per launch here,
    // drawn from the seed, never 0.
    std::uint64_t drawn = 0;
    fill_poison(&drawn, 1);
    local_poison_ = static_cast<std::uint32_t>(drawn >> 32) | 0x40u;
    shared_window_ = ModeledDevice::shared_window(options.clock_seed);
    local_window_ = shared_window_ + kWindowSize;
    clock_start_ = ModeledClock::start_cycles(options.clock_seed);
    timer_start_ = ModeledClock::start_nanoseconds(
        options.clock_seed, options.timer_epoch_ns != 0 ? options.timer_epoch_ns : unix_ns());
    grid_id_ = options.grid_id != 0 ? options.grid_id : ModeledDevice::grid_id(options.clock_seed);
    first_sm_ = static_cast<std::uint32_t>((options.clock_seed * 0x9e3779b97f4a7c15ull >> 40) %
                                           options.gpu.sm_count);
    // Names of shared variables, for the uninitialised-read report.
    for (const auto s : entry.shared_symbols)
        shared_variables_.push_back(s);
    decoded_ = options.engine == Engine::decoded;
    decode_steps();
    find_inert();
    registers_written_before_read_ = registers_written_before_read(entry);
}

Executor::~Executor() {
    // (A place whose block's files went to spare_files_ keeps none.)
    const auto keep = [](std::vector<std::uint64_t>& file) {
        if (spare_registers.size() < kSpareRegisterFiles && file.capacity() != 0)
            spare_registers.push_back(std::move(file));
    };
    for (auto& file : spare_files_)
        keep(file);
    for (BlockState& state : place_leftovers_) {
        for (Warp& w : state.warps)
            keep(w.regs);
    }
}

void Executor::fill_poison(std::uint64_t* words, std::size_t count) {
    poison_state_ = poison_stream(poison_state_, words, count);
}

std::vector<std::uint64_t> Executor::register_file() {
    std::vector<std::uint64_t> file;
    if (!spare_files_.empty()) {
        file = std::move(spare_files_.back());
        spare_files_.pop_back();
        return file;  // what the last block on the place left
    }
    if (!spare_registers.empty()) {
        file = std::move(spare_registers.back());
        spare_registers.pop_back();
    }
    file.resize(register_image_.size());
    // The registers hold the poison, where a thread may read one it has not written; the
    // constants (which nothing writes: a file of this launch keeps them) are set once; the
    // special registers are set for every block (init_warp).
    if (!registers_written_before_read_)
        fill_poison(file.data(), file.size());
    for (const ConstantSlot& c : entry_.constants) {
        const auto at = static_cast<std::ptrdiff_t>(c.slot) * 32;
        std::copy_n(register_image_.begin() + at, 32, file.begin() + at);
    }
    return file;
}

void Executor::run() {
    const std::vector<Dim3> blocks =
        options_.blocks.empty()
            ? first_blocks(grid_, static_cast<std::uint64_t>(grid_.x) * grid_.y * grid_.z)
            : options_.blocks;
    const auto linear = [&](const Dim3& b) {
        return b.x + static_cast<std::uint64_t>(grid_.x) *
                         (b.y + static_cast<std::uint64_t>(grid_.y) * b.z);
    };
    for (const Dim3& b : blocks) {
        if (b.x >= grid_.x || b.y >= grid_.y || b.z >= grid_.z) {
            throw std::invalid_argument("block " + dim_text(b) + " is outside the grid " +
                                        dim_text(grid_));
        }
    }
    std::vector<std::uint64_t> checked;
    for (const Dim3& b : options_.checked)
        checked.push_back(linear(b));
    std::sort(checked.begin(), checked.end());
    const auto is_checked = [&](const Dim3& b) {
        return options_.checked.empty() ||
               std::binary_search(checked.begin(), checked.end(), linear(b));
    };
    // The blocks are resident together, as many at a time as the modeled GPU's SMs hold (the
    // probe's whole grid on a T4): they take turns (each warp of a block one slice a turn), so
    // that a block waiting on a global flag sees another block set it. They start in an order
    // drawn from the seed within each wave of that many, as a GPU's do (an H200 started the 160
    // blocks of one wave in no order, and a grid of 16384 within about a wave of their places).
    const std::uint32_t per_sm = options_.gpu.resident_per_sm(threads_per_block_, shared_bytes_,
                                                              options_.registers_per_thread);
    places_ = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(blocks.size(), std::uint64_t{per_sm} * options_.gpu.sm_count));
    places_ = std::max<std::uint32_t>(places_, 1);
    place_leftovers_.resize(places_);
    std::vector<std::size_t> order(blocks.size());
    for (std::size_t k = 0; k < order.size(); ++k)
        order[k] = k;
    std::uint64_t draw = options_.clock_seed ^ 0x6f72646572ull;
    for (std::size_t wave = 0; wave < order.size(); wave += places_) {
        const std::size_t size = std::min<std::size_t>(places_, order.size() - wave);
        for (std::size_t k = size; k > 1; --k) {
            draw = draw * 6364136223846793005ull + 1442695040888963407ull;
            std::swap(order[wave + k - 1], order[wave + (draw >> 33) % k]);
        }
    }
    // Free places, the lowest last (taken first).
    std::vector<std::uint32_t> free_places(places_);
    for (std::uint32_t p = 0; p < places_; ++p)
        free_places[p] = places_ - 1 - p;
    const auto take_place = [&] {
        const std::uint32_t p = free_places.back();
        free_places.pop_back();
        return p;
    };
    // Turns of this many slices per warp: long enough that a block's registers stay in this
    // machine's caches for its turn (a turn of one slice ran the probe at half the speed), short
    // enough that a block spinning on a flag gives the others their turn well within its wait.
    constexpr int kSlicesPerTurn = 8;
    std::vector<BlockState> resident;
    std::size_t next = 0;
    // Where the launch runs blocks it does not check, the first checked block runs alone as far
    // as every block does the same (nothing has started that it could see), and the blocks not
    // checked start from there.
    // A checked block starts first: the one recorded, where blocks share work. One inside the
    // grid rather than on its edge, where there is one: its way is the one most blocks take (a
    // kernel that leaves out its last block would have the others part ways from a last one).
    const auto inside = [&](const Dim3& b) {
        const auto within = [](std::uint32_t v, std::uint32_t n) {
            return n == 1 || (v > 0 && v + 1 < n);
        };
        return within(b.x, grid_.x) && within(b.y, grid_.y) && within(b.z, grid_.z);
    };
    auto first_checked = std::find_if(order.begin(), order.end(), [&](std::size_t k) {
        return is_checked(blocks[k]) && inside(blocks[k]);
    });
    if (first_checked == order.end()) {
        first_checked = std::find_if(order.begin(), order.end(),
                                     [&](std::size_t k) { return is_checked(blocks[k]); });
    }
    if (first_checked != order.end())
        std::rotate(order.begin(), first_checked, first_checked + 1);
    // Blocks share work where some are not checked: the recorded block runs alone first, and
    // its warps wait where blocks may part ways, which a launch of checked blocks alone (run in
    // turns, as the exercise's kernels and `grader explain` run them) would show.
    const bool shares_work =
        !options_.checked.empty() && options_.input_bytes > 0 &&
        (undo_log_ != nullptr ||
         std::any_of(blocks.begin(), blocks.end(), [&](const Dim3& b) { return !is_checked(b); }));
    if (shares_work) {
        if (first_checked != order.end()) {
            BlockState state;
            const Dim3& b = blocks[order[next++]];
            if (record_shared_work(state, b, is_checked(b), take_place())) {
                free_places.push_back(state.place);
                finish_block(state);
            } else {
                resident.push_back(std::move(state));
            }
        }
    }
    std::vector<std::uint32_t> replayed_places;
    // Blocks in a row that went another way than the recorded one: past two, the recorded block
    // is taken to be the odd one out, and the next is recorded instead (a few times at most).
    int other_way = 0;
    int recordings_left = shares_work ? 3 : 0;
    // Replays spread over threads in batches of this many, doubled while every block of a batch
    // replays to its end (started small: a batch past a block that goes its own way is redone).
    std::size_t batch_size = options_.threads;
    while (next < order.size() || !resident.empty()) {
        while (!free_places.empty() && next < order.size()) {
            if (shared_work_ && decoded_ && options_.threads > 1 &&
                replay_own_instructions_ + slice_.size() >= kReplayWorthAThread) {
                // The blocks from here that replay, each on the place it would take.
                std::vector<Dim3> batch;
                std::vector<std::uint32_t> places;
                for (std::size_t k = next;
                     k < order.size() && batch.size() < batch_size &&
                     places.size() < free_places.size() && !is_checked(blocks[order[k]]);
                     ++k) {
                    batch.push_back(blocks[order[k]]);
                    places.push_back(free_places[free_places.size() - 1 - places.size()]);
                }
                const std::size_t applied = batch.size() > 1 ? replay_batch(batch, places) : 0;
                for (std::size_t k = 0; k < applied; ++k)
                    replayed_places.push_back(take_place());
                next += applied;
                if (applied > 0)
                    other_way = 0;
                batch_size = applied == batch.size() && applied > 1
                                 ? std::min<std::size_t>(batch_size * 2, 1024)
                                 : options_.threads;
                if (applied > 0 && applied == batch.size())
                    continue;
                // The block the batch stopped at, or the one alone: replayed here, as below.
            }
            const Dim3& b = blocks[order[next++]];
            const std::uint32_t place = take_place();
            if (shared_work_ && !is_checked(b)) {
                // It runs at once, to its end, on its place, which the next block of the wave
                // does not take (as a resident block's).
                const std::uint64_t before_replay = result_->instructions_run;
                const Replay replayed = replay(b, place);
                if (replayed == Replay::ended) {
                    replay_own_instructions_ = result_->instructions_run - before_replay -
                                               std::min(shared_work_instructions_,
                                                        result_->instructions_run - before_replay);
                    other_way = 0;
                    replayed_places.push_back(place);
                    continue;
                }
                // b runs from its start; where any block would have parted ways, so do the rest.
                if (replayed == Replay::parted)
                    shared_work_.reset();
                if (replayed == Replay::went_its_way && ++other_way > 2 && recordings_left > 0) {
                    --recordings_left;
                    other_way = 0;
                    shared_work_.reset();
                    BlockState state;
                    if (record_shared_work(state, b, false, place)) {
                        free_places.push_back(state.place);
                        finish_block(state);
                    } else {
                        resident.push_back(std::move(state));
                    }
                    continue;
                }
            }
            resident.emplace_back();
            const bool from_work = shared_work_ && is_checked(b);
            if (from_work || !registers_written_before_read_) {
                swap_block(resident.back());
                start_block(b, is_checked(b), place);
                if (from_work)
                    continue_from_checked_work(b, place);
                swap_block(resident.back());
            } else {
                // Started at its first turn, with the register files the last block to end left
                // (registers_written_before_read_), still in this machine's caches. Nothing else
                // its start reads changes before then: its place's leftovers are its own once it
                // takes the place, and a start reads no memory.
                BlockState& state = resident.back();
                state.block = b;
                state.checked = is_checked(b);
                state.place = place;
                state.started = false;
            }
        }
        free_places.insert(free_places.end(), replayed_places.rbegin(), replayed_places.rend());
        replayed_places.clear();
        for (std::size_t k = 0; k < resident.size();) {
            const bool starts = !resident[k].started;
            resident[k].started = true;
            swap_block(resident[k]);
            if (starts)
                start_block(block_, checked_, place_);
            bool done = false;
            polls_this_turn_ = 0;
            for (int turn = 0; turn < kSlicesPerTurn && !done && polls_this_turn_ < kPollsPerTurn;
                 ++turn)
                done = step_block();
            swap_block(resident[k]);
            if (done) {
                free_places.push_back(resident[k].place);
                finish_block(resident[k]);
                resident.erase(resident.begin() + static_cast<std::ptrdiff_t>(k));
            } else {
                ++k;
            }
        }
    }
}

void Executor::finish_block(BlockState& state) {
    ++result_->blocks_run;
    counts_->blocks_executed += state.checked ? 1 : 0;
    // Its place keeps what it left, for the next block there.
    const auto spare = [&](std::vector<Warp>& warps) {
        for (Warp& w : warps) {
            if (!w.regs.empty())  // a place whose last block's files went on keeps none
                spare_files_.push_back(std::move(w.regs));
        }
    };
    BlockState& left = place_leftovers_[state.place];
    spare(left.warps);
    if (registers_written_before_read_) {
        // No thread reads what its registers held when its block started: the next block to
        // start, on any place, takes these while they are in this machine's caches (a Part 2
        // launch's 160 places held 18 MB of them, each file out of the caches at its turn).
        spare(state.warps);
    }
    left = std::move(state);
}

void Executor::swap_block(BlockState& state) {
    std::swap(block_, state.block);
    std::swap(checked_, state.checked);
    std::swap(place_, state.place);
    std::swap(block_instructions_, state.instructions);
    std::swap(sm_of_block_, state.sm);
    std::swap(first_warp_slot_, state.first_warp_slot);
    std::swap(block_start_cycles_, state.start_cycles);
    std::swap(warps_, state.warps);
    std::swap(shared_, state.shared);
    std::swap(shared_written_, state.shared_written);
    std::swap(unwritten_words_, state.unwritten_words);
    std::swap(races_, state.races);
    std::swap(reduction_true_, state.reduction_true);
    std::swap(reduction_arrived_, state.reduction_arrived);
    std::swap(block_barriers_, state.barriers);
    std::swap(loop_watch_, state.loop_watch);
}

std::size_t Executor::globals_bytes() const {
    std::size_t bytes = 0;
    for (const Symbol& sym : program_.symbols) {
        if (sym.space == Space::global)
            bytes += sym.size;
    }
    return bytes;
}

void Executor::save_globals() {
    if (options_.module_globals == nullptr)
        return;
    std::vector<std::byte> bytes(globals_bytes());
    // The blocks not run would have made the same atomic additions as those run: a global word
    // only atomics added to (a counter every block bumps) reads after the launch as it would
    // after the whole grid, as it does on a GPU.
    const std::uint64_t total = static_cast<std::uint64_t>(grid_.x) * grid_.y * grid_.z;
    const std::uint64_t executed = result_->blocks_run;
    std::size_t at = 0;
    for (std::size_t s = 0; s < program_.symbols.size(); ++s) {
        const Symbol& sym = program_.symbols[s];
        if (sym.space != Space::global)
            continue;
        const std::uint64_t start = symbol_address_[s];
        memory_.read(start, bytes.data() + at, sym.size);
        if (executed > 0 && executed < total) {
            for (auto it = global_atomics_.lower_bound(start);
                 it != global_atomics_.end() && it->first < start + sym.size; ++it) {
                const GlobalAtomic& a = it->second;
                if (!a.additive || it->first + a.bytes > start + sym.size)
                    continue;
                std::byte* word = bytes.data() + at + (it->first - start);
                std::uint64_t now = 0;
                std::memcpy(&now, word, a.bytes);
                const std::uint64_t mask = a.bytes == 8 ? ~0ull : 0xffffffffull;
                const std::uint64_t delta = (now - a.first_value) & mask;
                const std::uint64_t carried =
                    a.first_value + delta / executed * total + delta % executed * total / executed;
                std::memcpy(word, &carried, a.bytes);
            }
        }
        at += sym.size;
    }
    *options_.module_globals = std::move(bytes);
}

std::string Executor::thread_text(const ThreadId& t) {
    return "thread " + dim_text(t.thread) + " of block " + dim_text(t.block);
}

std::string Executor::at_text(const SourceLocation& where) const {
    return location_text(where) + " (" + where.instruction + ")";
}

void Executor::fault(const Warp& w, unsigned lane, std::uint32_t pc, const std::string& kind,
                     const std::string& what, std::uint64_t address) {
    Fault f;
    f.kind = kind;
    f.where = entry_.locations[pc];
    f.thread = thread_of(w, lane);
    f.address = address;
    f.message = what + " at " + at_text(f.where) + ", " + thread_text(f.thread);
    result_->message = f.message;
    result_->fault = std::move(f);
    throw Stop{LaunchStatus::fault};
}

void Executor::set_identity(Dim3 b, std::uint32_t place) {
    block_ = b;
    place_ = place;
    // The places of one wave spread over the SMs first, then fill each SM's warp slots, as a GPU
    // hands out a launch's first blocks (an H200 put blocks 0, 1, 2 on SMs 128, 129, 130, each
    // at warp slot 0).
    const std::uint32_t sms = options_.gpu.sm_count;
    sm_of_block_ = (first_sm_ + place) % sms;
    first_warp_slot_ = place / sms * warps_per_block_;
    // Resident blocks start together, each on its SM's clock (SMs' clocks are not in step).
    block_start_cycles_ =
        ((sm_of_block_ + 1) * 0x9e3779b97f4a7c15ull ^ options_.clock_seed) % (1ull << 24);
}

void Executor::start_block(Dim3 b, bool checked, std::uint32_t place) {
    set_identity(b, place);
    checked_ = checked;
    block_instructions_ = 0;
    const std::uint64_t linear = b.x + static_cast<std::uint64_t>(grid_.x) *
                                           (b.y + static_cast<std::uint64_t>(grid_.y) * b.z);
    // What the last block on the place left: its registers, local pages and shared memory.
    BlockState& left = place_leftovers_[place];
    const bool place_used =
        !left.warps.empty() && left.shared.size() == (shared_bytes_ + 3) / 4 * 4;
    if (place_used) {
        std::swap(warps_, left.warps);
        std::swap(shared_, left.shared);
    }
    left.warps.clear();
    warps_.resize(warps_per_block_);
    for (std::uint32_t w = 0; w < warps_per_block_; ++w) {
        if (warps_[w].regs.size() != register_image_.size())
            warps_[w].regs = register_file();
        warps_[w].index = w;
        warps_[w].local_pages.pages.resize(local_pages_per_lane_ * 32);
    }
    if (!place_used) {
        shared_.resize((shared_bytes_ + 3) / 4 * 4);  // whole words, for the race tracker
        // A place's first block finds what the harness poisoned shared memory with, or what
        // earlier kernels left there, drawn from the seed.
        const std::size_t words = shared_bytes_ / 4;
        leftovers_.resize(words);
        ModeledDevice::leftover_shared_words(options_.clock_seed, linear, leftovers_.data(), words);
        if (options_.poison_shared) {
            for (std::uint32_t& word : leftovers_)
                word = poisoned(word);
        }
        std::memcpy(shared_.data(), leftovers_.data(), words * 4);
    }
    // What a checked block records of its shared memory (a block that is not checked reads and
    // writes it alike, without the records).
    shared_written_.assign(checked_ || mode_ == Mode::recording ? (shared_bytes_ + 3) / 4 : 0, 0);
    unwritten_words_ = shared_written_.size();
    if (checked_)
        races_.start_block((shared_bytes_ + 3) / 4);
    reduction_true_ = 0;
    reduction_arrived_ = 0;
    block_barriers_ = 0;
    for (Warp& w : warps_)
        init_warp(w);
}

std::uint32_t Executor::leftover_bits(std::uint64_t linear_block, std::uint64_t word) const {
    const std::uint32_t leftover =
        ModeledDevice::leftover_shared_word(options_.clock_seed, linear_block, word);
    return options_.poison_shared ? poisoned(leftover) : leftover;
}

bool Executor::step_block() {
    bool ran = false;
    bool parked = false;
    for (Warp& w : warps_) {
        parked = parked || w.parked;
        if ((w.live & ~w.blocked) != 0 && !w.parked) {
            run_warp(w);
            ran = true;
        }
    }
    if (ran) {
        // A parked warp waits on the recording, not on the kernel: the block has not stopped.
        if (block_instructions_ >= kWatchLoopsFrom && !parked)
            watch_for_loop();
        return false;
    }
    bool any_live = false;
    for (Warp& w : warps_)
        any_live = any_live || w.live != 0;
    if (!any_live)
        return true;
    if (parked) {
        if (mode_ == Mode::recording && unpark_readers())
            return false;
        // A parked warp has not reached the barrier the others wait at.
        stuck_ = true;
        return false;
    }
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
    if (checked_)
        races_.barrier();
    ++block_barriers_;
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
    return false;
}

void Executor::block_snapshot(std::vector<std::uint64_t>& into) const {
    into.clear();
    // Everything a block's next instructions depend on, but what it reads from outside (counted
    // in outside_reads_) and its modeled cycles, which it sees only through a clock register.
    for (const Warp& w : warps_) {
        into.insert(
            into.end(),
            {w.pc, w.mask, w.live, w.blocked, w.waiting, w.min_waiting_pc, w.reduction_lanes,
             static_cast<std::uint64_t>(static_cast<std::uint32_t>(w.reduction_slot)),
             static_cast<std::uint64_t>(w.reduction_op), w.parked ? 1u : 0u});
        into.insert(into.end(), w.lane_pc.begin(), w.lane_pc.end());
        into.insert(into.end(), w.regs.begin(), w.regs.end());
    }
    into.push_back(reduction_true_);
    into.push_back(reduction_arrived_);
    // A vector's bytes, in whole words.
    const auto bytes = [&](const auto& v) {
        const std::size_t n = v.size() * sizeof(v[0]);
        const std::size_t from = into.size();
        into.resize(from + (n + 7) / 8, 0);
        if (n != 0)
            std::memcpy(&into[from], v.data(), n);
    };
    bytes(shared_);
    // Recording the work blocks share decides from what it has seen (which may still grow).
    into.push_back(static_cast<std::uint64_t>(mode_));
    if (mode_ != Mode::normal) {
        into.insert(into.end(),
                    {stuck_ ? 1u : 0u, parked_any_ ? 1u : 0u, recorded_after_park_, slice_.size()});
        bytes(tainted_);
        bytes(captured_);
        bytes(written_lanes_);
        bytes(sharing_flags_);
    }
}

void Executor::watch_for_loop() {
    LoopWatch& watch = loop_watch_;
    if (++watch.step_blocks < kStepBlocksPerLook)
        return;
    watch.step_blocks = 0;
    block_snapshot(loop_scratch_);
    // Two states of a block that differ mostly differ early (a pc, a loop counter): compared
    // whole, without a hash to compute over every word first.
    const bool same_watch = watch.block == block_ && watch.saved_at < block_instructions_ &&
                            watch.outside_at == outside_reads_ && !watch.saved.empty();
    if (same_watch && watch.saved == loop_scratch_) {
        const Warp* at = &warps_.front();
        for (const Warp& w : warps_) {
            if ((w.live & ~w.blocked) != 0) {
                at = &w;
                break;
            }
        }
        const SourceLocation& where =
            entry_.locations[std::min<std::size_t>(at->pc, entry_.code.size() - 1)];
        result_->last_location = where;
        result_->over_block_budget = block_;
        result_->loops_after = block_instructions_;
        result_->message = "timed out: block " + dim_text(block_) +
                           " can never end: it came back to a state it had been in at " +
                           at_text(where) + ", having read nothing from outside it since";
        throw Stop{LaunchStatus::budget_exceeded};
    }
    if (!same_watch) {
        watch.next_save = 1;
        watch.looks = watch.next_save;  // save now
    }
    if (++watch.looks >= watch.next_save) {
        watch.block = block_;
        watch.saved_at = block_instructions_;
        watch.outside_at = outside_reads_;
        watch.saved = loop_scratch_;
        watch.looks = 0;
        watch.next_save *= 2;
    }
}

bool Executor::is_clock_slot(std::int32_t slot) const {
    const std::int32_t s = slot - entry_.special_base;
    return s == static_cast<std::int32_t>(Special::clock) ||
           s == static_cast<std::int32_t>(Special::clock64) ||
           s == static_cast<std::int32_t>(Special::clock_hi) ||
           s == static_cast<std::int32_t>(Special::globaltimer) ||
           s == static_cast<std::int32_t>(Special::globaltimer_lo) ||
           s == static_cast<std::int32_t>(Special::globaltimer_hi);
}

void Executor::update_clocks(Warp& w) {
    const std::uint64_t clock = clock_start_ + w.cycles;
    // %globaltimer is one clock for the whole GPU: the SM's own offset is not in it.
    const auto since_start = static_cast<double>(w.cycles - block_start_cycles_);
    const std::uint64_t timer =
        (timer_start_ + static_cast<std::uint64_t>(since_start / ModeledClock::kGigahertz)) /
        ModeledClock::kTimerStepNs * ModeledClock::kTimerStepNs;
    const auto set = [&](Special s, std::uint64_t value) {
        std::fill_n(
            &w.regs[static_cast<std::size_t>(entry_.special_base + static_cast<int>(s)) * 32], 32,
            value);
    };
    set(Special::clock, clock & 0xffffffffull);
    set(Special::clock_hi, clock >> 32);
    set(Special::clock64, clock);
    set(Special::globaltimer, timer);
    set(Special::globaltimer_lo, timer & 0xffffffffull);
    set(Special::globaltimer_hi, timer >> 32);
}

// An instruction issues once every value it reads is ready (a store's values are in dst[]), and
// its results are ready its latency later: a chain of dependent instructions takes their
// latencies, as on a GPU, where independent ones issue a cycle apart.
void Executor::wait_for_operands(Warp& w, const Instruction& in) {
    std::uint64_t at = w.cycles;
    const auto wait = [&](std::int32_t slot) {
        if (slot >= 0)
            at = std::max(at, w.ready[static_cast<std::size_t>(slot)]);
    };
    for (const std::int32_t slot : in.src)
        wait(slot);
    wait(in.guard);
    if (in.op == Op::st) {
        for (const std::int32_t slot : in.dst)
            wait(slot);
    }
    w.cycles = at;
    if (in.op == Op::st)
        return;
    const std::uint64_t latency = in.op != Op::ld && in.op != Op::atom
                                      ? ModeledClock::kArithmeticCycles
                                  : in.space == Space::shared ? ModeledClock::kSharedLoadCycles
                                                              : ModeledClock::kLoadCycles;
    for (const std::int32_t slot : in.dst) {
        if (slot >= 0)
            w.ready[static_cast<std::size_t>(slot)] = at + latency;
    }
    if (in.dst2 >= 0)
        w.ready[static_cast<std::size_t>(in.dst2)] = at + latency;
}

GRADER_WIDE_VECTORS void Executor::init_warp(Warp& w) {
    // The special registers; the registers proper keep what they held, the constants are there.
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
    if (clock_observed_)
        w.ready.assign(static_cast<std::size_t>(entry_.slot_count), 0);
    w.parked = false;
    // Slot by slot, each the 32 lanes' run of words (a Part 2 grade starts 131,072 warps).
    const auto lanes_of = [&](Special s) {
        return &w.regs[static_cast<std::size_t>(entry_.special_base + static_cast<int>(s)) * 32];
    };
    // Only those the kernel reads: no instruction writes a special register, so one nothing
    // reads is never seen (a Part 2 grade starts 131,072 warps).
    const auto read = [&](Special s) { return special_read_[static_cast<std::size_t>(s)] != 0; };
    const auto same = [&](Special s, std::uint64_t value) {
        if (read(s))
            std::fill_n(lanes_of(s), 32, value);
    };
    const std::uint64_t specials[] = {
        0,        0,        0,        block_dim_.x, block_dim_.y, block_dim_.z,
        block_.x, block_.y, block_.z, grid_.x,      grid_.y,      grid_.z};
    for (int s = 3; s < 12; ++s)
        same(static_cast<Special>(s), specials[s]);
    same(Special::warpid, first_warp_slot_ + w.index);
    same(Special::nwarpid, options_.gpu.warps_per_sm);
    same(Special::smid, sm_of_block_);
    same(Special::nsmid, options_.gpu.sm_count);
    same(Special::gridid, grid_id_);
    same(Special::dynamic_smem_size, options_.dynamic_shared_bytes);
    same(Special::total_smem_size, shared_bytes_);
    if (read(Special::tid_x) || read(Special::tid_y) || read(Special::tid_z)) {
        std::uint64_t* tid_x = lanes_of(Special::tid_x);
        std::uint64_t* tid_y = lanes_of(Special::tid_y);
        std::uint64_t* tid_z = lanes_of(Special::tid_z);
        // thread_of's divisions for the first lane; each next lane is one more in x, carried
        // into y and z (four divisions a lane were most of starting a warp).
        const Dim3 first_thread = thread_of(w, 0).thread;
        std::uint32_t x = first_thread.x;
        std::uint32_t y = first_thread.y;
        std::uint32_t z = first_thread.z;
        for (unsigned lane = 0; lane < 32; ++lane) {
            tid_x[lane] = x;
            tid_y[lane] = y;
            tid_z[lane] = z;
            if (++x == block_dim_.x) {
                x = 0;
                if (++y == block_dim_.y) {
                    y = 0;
                    ++z;
                }
            }
        }
    }
    const auto per_lane = [&](Special s, auto value) {
        if (!read(s))
            return;
        std::uint64_t* into = lanes_of(s);
        for (unsigned lane = 0; lane < 32; ++lane)
            into[lane] = value(lane);
    };
    per_lane(Special::laneid, [](unsigned lane) { return std::uint64_t{lane}; });
    per_lane(Special::lanemask_eq, [](unsigned lane) { return std::uint64_t{1u << lane}; });
    per_lane(Special::lanemask_lt, [](unsigned lane) { return std::uint64_t{(1u << lane) - 1}; });
    per_lane(Special::lanemask_le, [](unsigned lane) {
        return std::uint64_t{lane == 31 ? 0xffffffffu : (2u << lane) - 1};
    });
    per_lane(Special::lanemask_gt,
             [](unsigned lane) { return std::uint64_t{lane == 31 ? 0u : ~((2u << lane) - 1)}; });
    per_lane(Special::lanemask_ge,
             [](unsigned lane) { return std::uint64_t{~((1u << lane) - 1)}; });
}

// Min-PC scheduling: run the lanes with the lowest pc among those that can run.
void Executor::reschedule(Warp& w) {
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

void Executor::run_warp_reference(Warp& w) {
    if (w.mask == 0)
        reschedule(w);
    const Instruction* code = entry_.code.data();
    const std::uint32_t code_size = static_cast<std::uint32_t>(entry_.code.size());
    SliceTally tally{*result_, block_instructions_, checked_};
    std::uint64_t budget_left = options_.instruction_budget -
                                std::min(options_.instruction_budget, result_->instructions_run);
    const std::uint64_t block_budget = options_.block_instruction_budget;
    const bool block_bound =
        block_budget != 0 &&
        block_budget - std::min(block_budget, block_instructions_) < budget_left;
    if (block_bound)
        budget_left = block_budget - std::min(block_budget, block_instructions_);
    const std::uint32_t slice = options_.warp_slice;
    for (std::uint32_t n = 0; n < slice && w.mask != 0; ++n) {
        if (w.pc >= code_size) {
            fault(w, ctz(w.mask), code_size - 1, "launch",
                  "execution ran past the end of the kernel", 0);
        }
        const Instruction& in = code[w.pc];
        bool leftover = false;
        if (mode_ != Mode::normal) {
            const std::uint32_t runs = in.guard >= 0 ? guard_mask(w, in) : w.mask;
            const bool recording = mode_ == Mode::recording;
            leftover = recording && reads_leftovers(w, in, runs);
            // A guard read from the block's identity parts ways even where no lane runs.
            const Recorded recorded =
                recording ? recordable(w, in, runs, leftover) : Recorded::alike;
            if (recorded == Recorded::parks ||
                (runs != 0 && ((!leftover && !same_in_every_block(w, in, runs)) ||
                               reads_unwritten(w, in, runs)))) {
                if (mode_ == Mode::replaying)
                    throw PartsWays{};
                w.parked = true;  // the others go on as far as they can without it
                parked_any_ = true;
                return;
            }
            note_destinations(w, in, runs);
            if (mode_ == Mode::replaying) {
                save_destinations(w, in);
            } else if (parked_any_ && ++recorded_after_park_ > most_after_park_) {
                stuck_ = true;  // the others may be waiting for it: record no further
                w.parked = true;
                return;
            }
            if (recording)
                record_instruction(w, in, runs, leftover, recorded);
        }
        if (++tally.warp_instructions > budget_left) {
            tally.warp_instructions = budget_left;
            result_->last_location = entry_.locations[w.pc];
            if (block_bound)
                result_->over_block_budget = block_;
            result_->message =
                "timed out: " +
                (block_bound
                     ? "block " + dim_text(block_) + "'s instruction budget of " +
                           std::to_string(block_budget)
                     : "the instruction budget of " + std::to_string(options_.instruction_budget)) +
                " warp instructions ran out at " + at_text(entry_.locations[w.pc]) + ", " +
                thread_text(thread_of(w, ctz(w.mask)));
            throw Stop{LaunchStatus::budget_exceeded};
        }
        const std::uint32_t exec = in.guard >= 0 ? guard_mask(w, in) : w.mask;
        tally.thread_instructions += popcount(exec);
        issue(w, in);
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
                    result_->message = "the simulator does not implement " + u.opcode +
                                       ", reached at " + at_text(u.where);
                    result_->unsupported = std::move(u);
                    throw Stop{LaunchStatus::unsupported};
                }
                advance(w);
                break;
            }
            default:
                if (exec != 0) {
                    if (reads_clock_[w.pc])
                        update_clocks(w);
                    if (in.ftz)
                        execute_ftz(w, in, exec);
                    else
                        execute(w, in, exec);
                }
                if (leftover)
                    record_leftover_result(w, in);
                advance(w);
                if (note_poll(in))
                    return;
                break;
        }
    }
}

}  // namespace detail

namespace {

using namespace detail;

constexpr std::size_t kMaxSharedBytes = 227 * 1024;  // sm_90's per-block limit
// What a GPU refuses to launch without an opt-in the harness never makes: more static shared
// memory per block than 48 KiB (ptxas and the driver refuse it), more local memory per thread than
// 512 KiB (sm_70 and later; cuLaunchKernel says CUDA_ERROR_INVALID_VALUE or "too many resources
// requested for launch").
constexpr std::size_t kMaxStaticSharedBytes = 48 * 1024;
constexpr std::size_t kMaxLocalBytesPerThread = 512 * 1024;

// A launch of two or more blocks, every one checked (the exercise's kernels, `grader explain`),
// with an input the blocks may share their reads of: the decoded engine runs it speculatively.
bool speculative(const LaunchOptions& options) {
    if (options.engine != Engine::decoded || options.blocks.size() < 2 ||
        options.input_bytes == 0 || options.checked.size() < options.blocks.size())
        return false;
    const auto key = [](const Dim3& b) { return std::make_tuple(b.x, b.y, b.z); };
    std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> checked;
    for (const Dim3& b : options.checked)
        checked.push_back(key(b));
    std::sort(checked.begin(), checked.end());
    return std::all_of(options.blocks.begin(), options.blocks.end(), [&](const Dim3& b) {
        return std::binary_search(checked.begin(), checked.end(), key(b));
    });
}

// The first checked block's work shared with the others (Executor::speculate): the launch's
// result where that is what their own runs would have done (Executor::speculation_held); else
// nothing, every global word it wrote put back and its allocations released.
std::optional<LaunchResult> launch_speculatively(const Program& program, const Entry& entry,
                                                 Dim3 grid, Dim3 block,
                                                 const std::vector<std::vector<std::byte>>& params,
                                                 GlobalMemory& memory,
                                                 const LaunchOptions& options) {
    const std::uint64_t mark = memory.mark();
    std::vector<Executor::UndoWrite> undo;
    LaunchResult trial;
    try {
        Executor executor(program, entry, grid, block, params, memory, options, trial);
        executor.speculate(&undo);
        executor.run();
        if (executor.speculation_held()) {
            executor.save_globals();
            trial.status = LaunchStatus::completed;
            return trial;
        }
    } catch (const Stop&) {
        // Again without: where it stops and why, as its blocks' runs in turns show it.
    }
    for (auto it = undo.rbegin(); it != undo.rend(); ++it)
        std::memcpy(it->at, it->bytes.data(), it->size);
    memory.release_from(mark);
    return std::nullopt;
}

}  // namespace

namespace detail {

std::uint64_t poison_stream(std::uint64_t state, std::uint64_t* words, std::size_t count) {
    std::uint64_t x = state | 1;
    if (count < kFourPlacesFrom || count % 4 != 0) {
        for (std::size_t k = 0; k < count; ++k) {
            x = poison_step(x);
            words[k] = x * kPoisonMultiplier;
        }
        return x;
    }
    // Four runs of a quarter each, from the stream's state at each quarter's start: four
    // independent chains of shifts, where one step at a time waits on the last.
    const std::size_t quarter = count / 4;
    const StateMap jump = poison_steps(quarter);
    std::uint64_t a = x;
    std::uint64_t b = image(jump, a);
    std::uint64_t c = image(jump, b);
    std::uint64_t d = image(jump, c);
    for (std::size_t k = 0; k < quarter; ++k) {
        a = poison_step(a);
        b = poison_step(b);
        c = poison_step(c);
        d = poison_step(d);
        words[k] = a * kPoisonMultiplier;
        words[quarter + k] = b * kPoisonMultiplier;
        words[2 * quarter + k] = c * kPoisonMultiplier;
        words[3 * quarter + k] = d * kPoisonMultiplier;
    }
    return d;
}

}  // namespace detail

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

std::string location_text(const SourceLocation& where) {
    if (where.line <= 0) {
        return "PTX line " + std::to_string(where.ptx_line);
    }
    if (where.file.empty()) {
        return "line " + std::to_string(where.line);
    }
    // FILE:LINE:COLUMN, the form of the grader's other locations (and of compilers), which
    // editors and notebooks turn into links.
    return where.file + ":" + std::to_string(where.line) +
           (where.column > 0 ? ":" + std::to_string(where.column) : std::string());
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
    if (entry->max_threads != 0 && threads > entry->max_threads) {
        return refuse("the kernel's launch bounds (__launch_bounds__, .maxntid) allow " +
                      std::to_string(entry->max_threads) + " threads a block; this launch has " +
                      std::to_string(threads));
    }
    const auto& required = entry->required_block;
    if (required[0] != 0 &&
        (required[0] != block.x || required[1] != block.y || required[2] != block.z)) {
        return refuse("the kernel requires blocks of (" + std::to_string(required[0]) + ", " +
                      std::to_string(required[1]) + ", " + std::to_string(required[2]) +
                      ") threads (.reqntid); this launch's are " + dim_text(block));
    }
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
    if (options.gpu.resident_per_sm(static_cast<std::uint32_t>(threads), shared,
                                    options.registers_per_thread) == 0) {
        return refuse("the kernel uses " + std::to_string(options.registers_per_thread) +
                      " registers per thread; a block of " + std::to_string(threads) +
                      " threads of it needs more than the " +
                      std::to_string(GpuModel::kRegistersPerSm) + " a block may have");
    }
    if (entry->local_bytes > kMaxLocalBytesPerThread) {
        return refuse("the kernel declares " + std::to_string(entry->local_bytes) +
                      " bytes of local memory per thread; a GPU allows " +
                      std::to_string(kMaxLocalBytesPerThread) + " (512 KiB)");
    }
    if (speculative(options)) {
        if (auto held =
                launch_speculatively(*program, *entry, grid, block, params, memory, options))
            return std::move(*held);
    }
    try {
        Executor executor(*program, *entry, grid, block, params, memory, options, result);
        executor.run();
        executor.save_globals();
        result.status = LaunchStatus::completed;
    } catch (const Stop& stop) {
        result.status = stop.status;
    }
    return result;
}

}  // namespace grader::sim
