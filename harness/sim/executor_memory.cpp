// The executor's memory: loads, stores and atomics, and what they record (races, uninitialised
// shared reads, bank costs). See executor.hpp.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/wide_vectors.hpp"
#include "sim/banks.hpp"
#include "sim/executor.hpp"
#include "sim/program.hpp"
#include "sim/races.hpp"
#include "sim/sim.hpp"

namespace grader::sim::detail {

namespace {

// Local memory pages are made on first touch, at most this much per launch (the worker's own
// memory): past it the simulator gives up, which is not the kernel's fault.
constexpr std::size_t kMaxLocalTouched = 256ull << 20;
// The modeled clock's costs, CostModel's default units taken as cycles (see ModeledClock).
constexpr std::uint64_t kWavefrontCycles = 20;

std::string hex(std::uint64_t value) {
    char text[32];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
    return text;
}

// atom.add.f32 and red.add.f32 in global memory: "the current implementation ... flushes
// subnormal inputs and results to sign-preserving zero" (PTX ISA, atom); in shared memory (a
// loop of an ordinary add and a compare-and-swap) it keeps them. An H100 left 0x00000000 after
// atomicAdd of 1e-40 to 0.0f in global memory and 0x000116c2 in shared memory (2026-12-06).
float global_atomic_sum(float old, float value) {
    const auto flush = [](float x) {
        return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
    };
    return flush(flush(old) + flush(value));
}

}  // namespace

std::byte* Executor::local_bytes_at(Warp& w, unsigned lane, std::uint32_t pc,
                                    std::uint64_t address) {
    auto& page = w.local_pages.pages[lane * local_pages_per_lane_ + address / kLocalPage];
    if (!page) {
        local_touched_ += kLocalPage;
        if (local_touched_ > kMaxLocalTouched) {
            UnsupportedInstruction u;
            u.opcode = "more than " + std::to_string(kMaxLocalTouched >> 20) +
                       " MiB of local memory in one block";
            u.where = entry_.locations[pc];
            result_->message =
                "the simulator holds at most " + std::to_string(kMaxLocalTouched >> 20) +
                " MiB of local memory per block; the kernel touched more at " + at_text(u.where);
            result_->unsupported = std::move(u);
            throw Stop{LaunchStatus::unsupported};
        }
        // What local memory holds before a thread writes it: the launch's poison word in every
        // word, not zeros.
        page.reset(new std::byte[kLocalPage]);
        std::uint32_t words[kLocalPage / 4];
        std::fill_n(words, kLocalPage / 4, local_poison_);
        std::memcpy(page.get(), words, kLocalPage);
    }
    return page.get() + address % kLocalPage;
}

Executor::Resolved Executor::resolve(Warp& w, unsigned lane, std::uint32_t pc, Space space,
                                     std::uint64_t address, std::size_t size, bool store) {
    Resolved r;
    r.space = space;
    if (space == Space::generic) {
        if (address - shared_window_ < kWindowSize) {
            r.space = Space::shared;
            address -= shared_window_;
        } else if (address - local_window_ < kWindowSize) {
            r.space = Space::local;
            address -= local_window_;
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
            if (store || address >= param_buffer_.size() || size > param_buffer_.size() - address) {
                fault(w, lane, pc, "out_of_bounds",
                      "parameter access at offset " + hex(address) + " is invalid", address);
            }
            r.bytes = param_buffer_.data() + address;
            return r;
        default:
            r.bytes = memory_.find(address, size, memory_hint_);
            if (r.bytes == nullptr) {
                fault(w, lane, pc, "out_of_bounds",
                      std::string(store ? "write" : "read") + " of " + std::to_string(size) +
                          " bytes at global address " + hex(address) + " outside every allocation",
                      address);
            }
            return r;
    }
}

std::uint64_t Executor::load_bytes(const std::byte* bytes, std::size_t size) {
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

void Executor::store_bytes(std::byte* bytes, std::uint64_t v, std::size_t size) {
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

GRADER_WIDE_VECTORS void Executor::memory_access(Warp& w, const Instruction& in,
                                                 std::uint32_t exec) {
    const bool store = in.op == Op::st;
    const std::uint64_t* base = reg(w, in.src[0]);
    const std::size_t element = in.bytes;
    const std::size_t total = element * in.vector;
    const bool sign_extend = !store && is_signed(in.type) && element < 8;
    if (!store && !sign_extend && in.space == Space::shared && in.vector == 1 && element == 4 &&
        exec != 0 && load_shared_words(w, in, exec, base))
        return;
    if (!store && in.space == Space::param && in.vector == 1 && exec != 0) {
        // A parameter, the same address in every lane (a warp's first instructions): read once.
        const std::uint64_t address = base[ctz(exec)] + static_cast<std::uint64_t>(in.offset);
        bool uniform = true;
        for_lanes(exec, [&](unsigned lane) {
            uniform = uniform && base[lane] + static_cast<std::uint64_t>(in.offset) == address;
        });
        if (uniform && address < param_buffer_.size() &&
            element <= param_buffer_.size() - address && (address & (element - 1)) == 0) {
            std::uint64_t v = load_bytes(param_buffer_.data() + address, element);
            if (sign_extend) {
                const unsigned shift = 64 - 8 * static_cast<unsigned>(element);
                v = static_cast<std::uint64_t>(static_cast<std::int64_t>(v << shift) >> shift);
                const unsigned width = entry_.slot_bits[static_cast<std::size_t>(in.dst[0])];
                if (width < 64)
                    v &= (1ull << width) - 1;
            }
            std::uint64_t* value = reg(w, in.dst[0]);
            for_lanes(exec, [&](unsigned lane) { value[lane] = v; });
            return;
        }
    }
    if (!sign_extend && in.vector == 1 && (element == 4 || element == 8) && exec != 0 &&
        (in.space == Space::global || in.space == Space::generic) &&
        global_words(w, in, exec, base, store))
        return;
    if (store && !checked_ && mode_ == Mode::normal && in.space == Space::shared &&
        in.vector == 1 && element == 4 && exec != 0 && store_shared_words(w, in, exec, base))
        return;
    const std::uint64_t misaligned_bits = total - 1;  // element and vector are powers of 2
    std::array<std::uint64_t, 32> shared_offsets{};
    std::uint32_t shared_lanes = 0;
    const bool records = checked_;
    std::array<std::uint64_t, 32> global_sectors;  // each global lane's 32-byte sector
    std::uint32_t global_lanes = 0;
    if (store && records)
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
            if (store && r.space == Space::global &&
                address - options_.input_address < options_.input_bytes)
                result_->wrote_input = true;
            if (r.space == Space::shared) {
                shared_lanes |= 1u << lane;
                shared_offsets[lane] = r.shared_offset;
            } else if (r.space == Space::global) {
                // Aligned to its size, at most 16 bytes: one sector.
                global_lanes |= 1u << lane;
                global_sectors[lane] = address >> 5;
            }
        }
        if (store && !records && mode_ == Mode::recording && ((shared_lanes >> lane) & 1)) {
            // A block recorded that is not checked keeps what it wrote, for the recording alone.
            for (std::size_t word = shared_offsets[lane] / 4;
                 word <= (shared_offsets[lane] + total - 1) / 4; ++word)
                note_written(word);
        }
        if (records && ((shared_lanes >> lane) & 1)) {
            const std::size_t first_word = shared_offsets[lane] / 4;
            const std::size_t last_word = (shared_offsets[lane] + total - 1) / 4;
            if (store) {
                for (std::size_t word = first_word; word <= last_word; ++word)
                    note_written(word);
            } else {
                for (std::size_t word = first_word; word <= last_word; ++word) {
                    const RaceHit hit = races_.read(word, w.index, lane, w.pc);
                    if (hit.kind != RaceKind::none)
                        record_race(w, lane, hit, word * 4);
                }
                if (!result_->uninitialized_shared_read) {
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
                if (records && ((shared_lanes >> lane) & 1)) {
                    track_store(w, lane, shared_offsets[lane] + e * element, value[lane], element);
                }
                if (mode_ == Mode::replaying && ((shared_lanes >> lane) & 1)) {
                    const std::uint64_t at = shared_offsets[lane] + e * element;
                    for (std::uint64_t word = at / 4; word <= (at + element - 1) / 4; ++word)
                        save_shared_word(word);
                }
                if ((global_lanes >> lane) & 1)
                    store_global(bytes + e * element, value[lane], element);  // the low bytes
                else
                    store_bytes(bytes + e * element, value[lane], element);
            } else {
                std::uint64_t v = load_bytes(bytes + e * element, element);
                if (sign_extend) {
                    // To the destination register's width, as PTX defines for ld.s8 etc.
                    const unsigned shift = 64 - 8 * static_cast<unsigned>(element);
                    v = static_cast<std::uint64_t>(static_cast<std::int64_t>(v << shift) >> shift);
                    const unsigned width = entry_.slot_bits[static_cast<std::size_t>(in.dst[e])];
                    if (width < 64)
                        v &= (1ull << width) - 1;
                }
                value[lane] = v;
            }
        }
    });
    if (access_raced_) {
        ++result_->race_count;
        access_raced_ = false;
    }
    if (shared_lanes != 0)
        record_shared(w, in, shared_lanes, shared_offsets, static_cast<std::uint32_t>(total));
    if (records && global_lanes != 0)  // counted in the checked blocks, as shared accesses are
        record_global(store, global_lanes, global_sectors);
}

// One warp-wide request to global memory: the distinct sectors its lanes touched.
void Executor::record_global(bool store, std::uint32_t lanes,
                             const std::array<std::uint64_t, 32>& sectors) {
    std::uint64_t touched[32];
    unsigned n = 0;
    bool ascending = true;
    for_lanes(lanes, [&](unsigned lane) {
        ascending = ascending && (n == 0 || sectors[lane] >= touched[n - 1]);
        touched[n++] = sectors[lane];
    });
    if (!ascending)
        std::sort(touched, touched + n);
    std::uint64_t distinct = 1;
    for (unsigned k = 1; k < n; ++k)
        distinct += touched[k] != touched[k - 1];
    if (store) {
        ++counts_->global_store_requests;
        counts_->global_store_sectors += distinct;
    } else {
        ++counts_->global_load_requests;
        counts_->global_load_sectors += distinct;
    }
}

// The common case of memory_access, on its own: a 32-bit load from .shared whose every lane
// is inside the block's shared memory and aligned. False, having done nothing, otherwise.
GRADER_WIDE_VECTORS bool Executor::load_shared_words(Warp& w, const Instruction& in,
                                                     std::uint32_t exec,
                                                     const std::uint64_t* base) {
    if (shared_bytes_ < 4)
        return false;
    const std::uint64_t last_word_at = shared_bytes_ - 4;
    const auto offset = static_cast<std::uint64_t>(in.offset);
    // Only exec's lanes are written and read.
    std::array<std::uint64_t, 32> offsets;
    // Bit 63 of (last_word_at - address) | address is set where address > last_word_at (both
    // below 2^63, as a shared offset is) or address is at 2^63 or more: a test the compiler
    // vectorises, as it does not a comparison of 64-bit unsigned values.
    std::uint64_t outside = 0;
    std::uint64_t misaligned = 0;
    const auto check = [&](unsigned lane) {
        const std::uint64_t address = base[lane] + offset;
        offsets[lane] = address;
        outside |= (last_word_at - address) | address;
        misaligned |= address;
    };
    if (exec == ~0u) {
        for (unsigned lane = 0; lane < 32; ++lane)
            check(lane);
    } else {
        for_lanes(exec, check);
    }
    if ((outside >> 63) != 0 || (misaligned & 3) != 0)
        return false;
    // Each lane's word; then, for the lanes whose word is not settled for the race tracker or
    // was never written (few after a kernel's first reads), what the tracker and the
    // uninitialised-read note need, in lane order. Once every word of the block has been written
    // (the probe's tile, after its first loop), or the launch's first uninitialised read has been
    // noted, only the race tracker is asked.
    std::uint64_t* value = reg(w, in.dst[0]);
    const std::byte* shared = shared_.data();
    const auto word_at = [&](unsigned lane) -> std::uint64_t {
        std::uint32_t v;
        std::memcpy(&v, shared + offsets[lane], 4);
        return v;
    };
    // The words alone (write_lanes where every lane loads).
    const auto load_words = [&] {
        if (exec == ~0u) {
            write_lanes(value, word_at);
        } else {
            for_lanes(exec, [&](unsigned lane) { value[lane] = word_at(lane); });
        }
    };
    if (!checked_) {
        // Nothing to record: the words, and their cost on the clock.
        load_words();
        record_shared(w, in, exec, offsets, 4);
        return true;
    }
    const std::uint8_t* written = shared_written_.data();
    bool first_unwritten = !result_->uninitialized_shared_read;
    std::uint32_t unsettled = 0;
    const auto load = [&](unsigned lane, auto check_written) -> std::uint64_t {
        const std::size_t word = offsets[lane] / 4;
        bool odd = !races_.settled(word);
        if constexpr (decltype(check_written)::value)
            odd = odd | !written[word];
        unsettled |= static_cast<std::uint32_t>(odd) << lane;
        return word_at(lane);
    };
    const auto load_all = [&](auto check_written) {
        if (exec == ~0u) {
            write_lanes(value, [&](unsigned lane) { return load(lane, check_written); });
        } else {
            for_lanes(exec, [&](unsigned lane) { value[lane] = load(lane, check_written); });
        }
    };
    const bool check_written = first_unwritten && unwritten_words_ != 0;
    if (!check_written && races_.all_settled()) {
        // Nothing to note for any word (the probe's loop once every word has been read by two
        // warps): the words alone.
        load_words();
    } else if (check_written) {
        load_all(std::true_type{});
    } else {
        load_all(std::false_type{});
    }
    for_lanes(unsettled, [&](unsigned lane) {
        const std::size_t word = offsets[lane] / 4;
        const RaceHit hit = races_.read(word, w.index, lane, w.pc);
        if (hit.kind != RaceKind::none)
            record_race(w, lane, hit, word * 4);
        if (first_unwritten && !written[word]) {
            record_uninitialized(w, lane, word * 4);
            first_unwritten = false;
        }
    });
    if (access_raced_) {
        ++result_->race_count;
        access_raced_ = false;
    }
    record_shared(w, in, exec, offsets, 4);
    return true;
}

GRADER_WIDE_VECTORS bool Executor::global_words(Warp& w, const Instruction& in, std::uint32_t exec,
                                                const std::uint64_t* base, bool store) {
    const std::uint64_t size = in.bytes;
    const auto offset = static_cast<std::uint64_t>(in.offset);
    std::array<std::uint64_t, 32> addresses;
    std::uint64_t low = ~0ull;
    std::uint64_t high = 0;
    std::uint64_t misaligned = 0;
    const auto address_of = [&](unsigned lane) {
        const std::uint64_t address = base[lane] + offset;
        addresses[lane] = address;
        low = std::min(low, address);
        high = std::max(high, address);
        misaligned |= address;
    };
    if (exec == ~0u) {
        for (unsigned lane = 0; lane < 32; ++lane)
            address_of(lane);
    } else {
        for_lanes(exec, address_of);
    }
    if ((misaligned & (size - 1)) != 0 || high - low > (1ull << 30))
        return false;
    // A generic address may lie in the shared or the local window: those take the general way.
    if (in.space == Space::generic && high >= shared_window_ && low < local_window_ + kWindowSize)
        return false;
    std::byte* bytes = memory_.find(low, high - low + size, memory_hint_);
    if (bytes == nullptr)
        return false;  // the general way names the lane at fault
    if (store && high + size > options_.input_address &&
        low < options_.input_address + options_.input_bytes)
        result_->wrote_input = true;
    prefetch_next(w.pc, low, high - low + size, bytes, store);
    std::uint64_t* value = reg(w, in.dst[0]);
    const auto loaded = [&](unsigned lane) {
        return load_bytes(bytes + (addresses[lane] - low), size);
    };
    if (store) {
        for_lanes(exec, [&](unsigned lane) {
            store_global(bytes + (addresses[lane] - low), value[lane], size);
        });
    } else if (exec == ~0u) {
        write_lanes(value, loaded);
    } else {
        for_lanes(exec, [&](unsigned lane) { value[lane] = loaded(lane); });
    }
    if (checked_) {  // counted in the checked blocks, as memory_access counts them
        std::array<std::uint64_t, 32> sectors;
        for_lanes(exec, [&](unsigned lane) { sectors[lane] = addresses[lane] >> 5; });
        record_global(store, exec, sectors);
    }
    return true;
}

// A warp's next run of this instruction (the next warp's, most often) reads as far past this
// one as this one past the last: those lines are asked of memory now, while the warp computes.
// A transpose's words are a row of the matrix apart, each a miss in this machine's caches. A
// hint only: nothing is read, and an address past the buffer faults nowhere. A run spanning more
// than a few lines (lanes far apart) is not followed.
void Executor::prefetch_next(std::uint32_t pc, std::uint64_t low, std::uint64_t span,
                             const std::byte* bytes, bool store) {
    const std::uint64_t step = low - last_global_[pc];
    last_global_[pc] = low;
    constexpr std::uint64_t kMostBytes = 512;
    if (step == 0 || span > kMostBytes)
        return;
    const std::uintptr_t next = reinterpret_cast<std::uintptr_t>(bytes) + step;
    for (std::uintptr_t line = next & ~std::uintptr_t{63}; line < next + span; line += 64) {
        if (store)
            __builtin_prefetch(reinterpret_cast<const void*>(line), 1);
        else
            __builtin_prefetch(reinterpret_cast<const void*>(line), 0);
    }
}

GRADER_WIDE_VECTORS bool Executor::store_shared_words(Warp& w, const Instruction& in,
                                                      std::uint32_t exec,
                                                      const std::uint64_t* base) {
    if (shared_bytes_ < 4)
        return false;
    const std::uint64_t last_word_at = shared_bytes_ - 4;
    const auto offset = static_cast<std::uint64_t>(in.offset);
    std::array<std::uint64_t, 32> offsets;
    std::uint64_t outside = 0;
    std::uint64_t misaligned = 0;
    const auto check = [&](unsigned lane) {
        const std::uint64_t address = base[lane] + offset;
        offsets[lane] = address;
        outside |= (last_word_at - address) | address;
        misaligned |= address;
    };
    if (exec == ~0u) {
        for (unsigned lane = 0; lane < 32; ++lane)
            check(lane);
    } else {
        for_lanes(exec, check);
    }
    if ((outside >> 63) != 0 || (misaligned & 3) != 0)
        return false;
    const std::uint64_t* value = reg(w, in.dst[0]);
    std::byte* shared = shared_.data();
    // In lane order: where lanes store to one word, the highest lane's value lands.
    for_lanes(exec, [&](unsigned lane) {
        const auto v = static_cast<std::uint32_t>(value[lane]);
        std::memcpy(shared + offsets[lane], &v, 4);
    });
    record_shared(w, in, exec, offsets, 4);
    return true;
}

// One lane's store of `size` bytes at shared `offset`, before it lands: races with other
// warps, and with other lanes of this store that wrote different bytes there.
void Executor::track_store(const Warp& w, unsigned lane, std::uint64_t offset, std::uint64_t value,
                           std::size_t size) {
    std::byte bytes[8];
    std::memcpy(bytes, &value, 8);  // little-endian: the low `size` bytes are stored
    for (std::uint64_t at = offset; at < offset + size;) {
        const std::size_t word = at / 4;
        const unsigned first = static_cast<unsigned>(at % 4);
        const unsigned n =
            static_cast<unsigned>(std::min<std::uint64_t>(4 - first, offset + size - at));
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

void Executor::atomic(Warp& w, const Instruction& in, std::uint32_t exec) {
    const std::uint64_t* base = reg(w, in.src[0]);
    const std::uint64_t* b = reg(w, in.src[1]);
    const std::uint64_t* c = in.src[2] >= 0 ? reg(w, in.src[2]) : nullptr;
    std::uint64_t* d = reg(w, in.dst[0]);
    // Lanes whose atomic lands in shared memory (atom.shared, red.shared, or a generic address in
    // the shared window): one shared request, costed by the banks as a load is, since the
    // hardware reads the word before it writes it (for a float add, in a load-and-CAS loop).
    std::uint32_t shared_lanes = 0;
    std::array<std::uint64_t, 32> shared_offsets{};
    std::uint32_t element_bytes = 4;
    // Lane order, one lane at a time: a valid serialisation of the warp's atomics.
    dispatch_any(in.type, [&](auto zero) {
        using T = decltype(zero);
        element_bytes = static_cast<std::uint32_t>(std::max<std::size_t>(sizeof(T), 4));
        for_lanes(exec, [&](unsigned lane) {
            const std::uint64_t address = base[lane] + static_cast<std::uint64_t>(in.offset);
            const Resolved r = resolve(w, lane, w.pc, in.space, address, sizeof(T), true);
            if (r.space == Space::global && address - options_.input_address < options_.input_bytes)
                result_->wrote_input = true;
            if (r.space == Space::global && options_.module_globals != nullptr) {
                note_global_atomic<T>(address, r.bytes, in.atom_op);
            }
            if (r.space == Space::shared) {
                shared_lanes |= 1u << lane;
                shared_offsets[lane] = r.shared_offset;
                for (std::size_t word = r.shared_offset / 4;
                     word <= (r.shared_offset + sizeof(T) - 1) / 4; ++word) {
                    if (checked_ || mode_ == Mode::recording)
                        note_written(word);
                    if (checked_)
                        races_.atomic_write(word, w.index, lane, w.pc);
                }
            }
            if (r.space == Space::shared && mode_ == Mode::replaying) {
                for (std::size_t word = r.shared_offset / 4;
                     word <= (r.shared_offset + sizeof(T) - 1) / 4; ++word)
                    save_shared_word(word);
            }
            T old;
            std::memcpy(&old, r.bytes, sizeof(T));
            const T v = as<T>(b[lane]);
            T nv = old;
            if constexpr (std::is_floating_point_v<T>) {
                switch (in.atom_op) {
                    case AtomOp::add:
                        // A NaN as gpu-check's behaviours section 17 shows it: f32 gives the
                        // canonical one in either space, f64 keeps the NaN operand's payload in
                        // either (test_sim_fidelity's atomicNan).
                        if constexpr (std::is_same_v<T, float>) {
                            nv = gpu_nan(r.space == Space::global ? global_atomic_sum(old, v)
                                                                  : old + v);
                        } else {
                            nv = old + v;
                        }
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
                        nv =
                            static_cast<T>(static_cast<U>(static_cast<U>(old) + static_cast<U>(v)));
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
                        nv = static_cast<T>((old == T(0) || static_cast<U>(old) > static_cast<U>(v))
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
            if (r.space == Space::global)
                note_global_write(r.bytes, sizeof(T), true);
            std::memcpy(r.bytes, &nv, sizeof(T));
            d[lane] = bits_of<T>(old);
        });
    });
    if (shared_lanes != 0)
        record_shared(w, in, shared_lanes, shared_offsets, element_bytes);
}

void Executor::record_uninitialized(const Warp& w, unsigned lane, std::uint64_t byte_offset) {
    UninitializedSharedRead u;
    u.where = entry_.locations[w.pc];
    u.thread = thread_of(w, lane);
    u.byte_offset = byte_offset;
    u.word = byte_offset / 4;
    locate_variable(byte_offset, u.variable, u.word_in_variable);
    u.barriers_before = block_barriers_;
    result_->uninitialized_shared_read = std::move(u);
    watched_word_ = byte_offset / 4;
    watched_block_ = block_;
}

void Executor::note_watched_write() {
    if (block_.x != watched_block_.x || block_.y != watched_block_.y ||
        block_.z != watched_block_.z || !result_->uninitialized_shared_read) {
        return;
    }
    result_->uninitialized_shared_read->written_later = true;
    watched_word_ = static_cast<std::size_t>(-1);
}

// The .shared variable holding byte_offset, and the word's index in it.
void Executor::locate_variable(std::uint64_t byte_offset, std::string& name,
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

std::string Executor::lane_text(const ThreadId& t) {
    return "thread " + dim_text(t.thread) + " (warp " + std::to_string(t.warp) + ", lane " +
           std::to_string(t.lane) + ")";
}

// Reports a lane's race once per pair of source lines (record_race counted it for the access).
void Executor::report_race(const Warp& w, unsigned lane, const RaceHit& hit,
                           std::uint64_t byte_offset) {
    if (result_->races.size() >= LaunchResult::kMaxReportedRaces)
        return;
    // One report per pair of source lines: unrolled copies of a loop's access share one.
    const auto line_key = [&](std::uint32_t pc) {
        const SourceLocation& at = entry_.locations[pc];
        return at.line > 0 ? static_cast<std::uint32_t>(at.line)
                           : 0x8000'0000u | static_cast<std::uint32_t>(at.ptx_line);
    };
    const std::array<std::uint32_t, 3> key = {line_key(w.pc), line_key(hit.pc),
                                              static_cast<std::uint32_t>(hit.kind)};
    // Field by field: std::array's == is a call to memcmp, a tenth of a missing barrier's grade
    // (every racing lane of a checked block asks).
    const auto same = [&](const std::array<std::uint32_t, 3>& k) {
        return k[0] == key[0] && k[1] == key[1] && k[2] == key[2];
    };
    if (std::find_if(reported_races_.begin(), reported_races_.end(), same) !=
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
                           location_text(race.where) + ", which " + lane_text(race.other) +
                           " wrote at " + location_text(race.earlier) + unsynchronized;
            break;
        case RaceKind::write_after_read:
            race.kind = SharedRace::Kind::write_after_read;
            race.message =
                lane_text(race.thread) + block + " wrote " + word + " at " +
                location_text(race.where) + ", which " +
                (any_reader ? std::string("other warps") : lane_text(race.other) + " had") +
                " read" + (any_reader ? "" : " at " + location_text(race.earlier)) + unsynchronized;
            break;
        case RaceKind::write_after_write:
            race.kind = SharedRace::Kind::write_after_write;
            race.message = lane_text(race.thread) + block + " wrote " + word + " at " +
                           location_text(race.where) + ", which " + lane_text(race.other) +
                           " also wrote at " + location_text(race.earlier) + unsynchronized;
            break;
        case RaceKind::same_value_write:
            race.kind = SharedRace::Kind::same_value_write;
            race.message = lane_text(race.thread) + block + " wrote " + word + " at " +
                           location_text(race.where) + ", which " + lane_text(race.other) +
                           " also wrote at " + location_text(race.earlier) +
                           ", the same value, with no __syncthreads() between them";
            break;
        case RaceKind::one_store_two_values:
        case RaceKind::none:
            race.kind = SharedRace::Kind::one_store_two_values;
            race.message = "lanes " + std::to_string(race.other.lane) + " and " +
                           std::to_string(race.thread.lane) + " of warp " +
                           std::to_string(w.index) + block + " (threads " +
                           dim_text(race.other.thread) + " and " + dim_text(race.thread.thread) +
                           ") wrote different values to " + word + " in one store at " +
                           location_text(race.where) + ": which one lands is undefined";
            break;
    }
    result_->races.push_back(std::move(race));
}

GRADER_WIDE_VECTORS void Executor::record_shared(Warp& w, const Instruction& in,
                                                 std::uint32_t lanes,
                                                 const std::array<std::uint64_t, 32>& offsets,
                                                 std::uint32_t bytes_per_lane) {
    if (!checked_) {
        if (decoded_ && !clock_observed_)
            return;  // only the warp's clock would move, and nothing reads it
        w.cycles +=
            bank_costs_.cost(lanes, offsets, bytes_per_lane, bank_cost_slot_[w.pc]).wavefronts *
            kWavefrontCycles;
        return;
    }
    std::int32_t& index = shared_stat_index_[w.pc];
    if (index < 0) {
        index = static_cast<std::int32_t>(counts_->shared_accesses.size());
        SharedAccessStats stats;
        stats.instruction_index = w.pc;
        stats.where = entry_.locations[w.pc];
        stats.store = in.op == Op::st;
        stats.bytes_per_lane = bytes_per_lane;
        counts_->shared_accesses.push_back(std::move(stats));
    }
    SharedAccessStats& stats = counts_->shared_accesses[static_cast<std::size_t>(index)];
    const BankCost cost = bank_costs_.cost(lanes, offsets, bytes_per_lane, bank_cost_slot_[w.pc]);
    const std::uint32_t fronts = cost.wavefronts;
    const std::uint32_t ideal = cost.ideal;
    w.cycles += fronts * kWavefrontCycles;
    ++stats.requests;
    stats.wavefronts += fronts;
    stats.ideal_wavefronts += ideal;
    if (stats.store) {
        ++counts_->shared_store_requests;
        counts_->shared_store_wavefronts += fronts;
        counts_->shared_store_ideal_wavefronts += ideal;
    } else {
        ++counts_->shared_load_requests;
        counts_->shared_load_wavefronts += fronts;
        counts_->shared_load_ideal_wavefronts += ideal;
    }
    // The request's conflict degree, against the fewest wavefronts its width allows; compared
    // as fronts / ideal > max_degree without a division for the common, unchanged case.
    if (static_cast<double>(fronts) > stats.max_degree * static_cast<double>(ideal)) {
        stats.max_degree = static_cast<double>(fronts) / static_cast<double>(ideal);
        WarpAccessTable table;
        table.block = block_;
        table.warp = w.index;
        table.degree = bank_cost(lanes, offsets, bytes_per_lane, &table).degree;
        table.wavefronts = fronts;
        stats.representative = table;
    }
}

// ld, st and atom, as opcodes.def's families.
void execute_memory(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    if (in.op == Op::ld && in.space != Space::shared && in.space != Space::param &&
        in.space != Space::constant)
        ++self.outside_reads_;
    self.memory_access(w, in, exec);
}

void execute_atom(Executor& self, Warp& w, const Instruction& in, std::uint32_t exec) {
    if (in.space != Space::shared)
        ++self.outside_reads_;
    self.atomic(w, in, exec);
}

}  // namespace grader::sim::detail
