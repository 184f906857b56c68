#pragma once

// Shared-memory race tracking for one block, private to the executor. Per 32-bit word it keeps the
// last writer and the last reader (warp, lane, instruction) with the barrier epoch of each access:
// an access by one warp to a word another warp wrote (or read, for a write) in the same epoch, with
// no bar.sync completed between them, is a race. A warp's own accesses never race with each
// other here: the executor runs a warp's lanes in lockstep.
//
// Separately, lanes of ONE store instruction that write different values to the same bytes race
// (the course's tx * 2 % 32 demo); lanes writing the same value are a benign broadcast write.
//
// Epochs and store stamps are counters over the whole launch, so a new block or barrier costs
// one increment, not a pass over the words.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace grader::sim::detail {

enum class RaceKind : std::uint8_t {
    none,
    read_after_write,   // read a word another warp wrote
    write_after_read,   // wrote a word another warp read
    write_after_write,  // wrote a word another warp wrote
    one_store_two_values,
    // Wrote a word another warp wrote, the same value: whichever lands last, the word is the
    // same (racecheck's INFO: "no impact on program execution").
    same_value_write,
};

// The earlier access a race was found against.
struct RaceHit {
    RaceKind kind = RaceKind::none;
    std::uint32_t pc = 0;
    std::uint16_t warp = 0;
    std::uint8_t lane = 0;
};

class RaceTracker {
public:
    static constexpr std::uint16_t kManyWarps = 0xffff;

    // A new block with `words` 32-bit words of shared memory.
    void start_block(std::size_t words) {
        if (words_.size() != words) {
            words_.assign(words, WordState{});
            where_.assign(words, WordSource{});
            settled_.assign(words, 0);
        }
        next_epoch();
    }
    // A barrier of the block completed.
    void barrier() { next_epoch(); }
    // A store instruction is about to write, lane by lane.
    void start_store() {
        if (++store_stamp_ == 0) {
            for (WordSource& s : where_)
                s.store_stamp = 0;
            store_stamp_ = 1;
        }
    }

    // True when read() of `word` would find no race and change nothing, whichever warp reads it:
    // more than one warp has read it in this epoch and none has written it. A warp-wide load whose
    // every word is settled skips read() (the probe's loop, after its first two warps).
    bool settled(std::size_t word) const { return settled_[word] == epoch_; }
    // Every word of the block settled: a load need not look at any.
    bool all_settled() const { return settled_words_ == settled_.size(); }

    RaceHit read(std::size_t word, std::uint32_t warp, unsigned lane, std::uint32_t pc) {
        WordState& s = words_[word];
        RaceHit hit;
        if (s.write_epoch == epoch_ && s.writer != warp) {
            hit =
                RaceHit{RaceKind::read_after_write, where_[word].write_pc, s.writer, s.writer_lane};
        }
        if (s.read_epoch != epoch_) {
            s.read_epoch = epoch_;
            s.reader = static_cast<std::uint16_t>(warp);
            s.reader_lane = static_cast<std::uint8_t>(lane);
            s.many_readers = false;
            where_[word].read_pc = pc;
        } else if (s.reader != warp && !s.many_readers) {
            // Keep the first reader: it is the one a later write by another warp names.
            s.many_readers = true;
        }
        if (s.many_readers && s.write_epoch != epoch_ && settled_[word] != epoch_) {
            settled_[word] = epoch_;
            ++settled_words_;
        }
        return hit;
    }

    // A plain store's bytes [first_byte, first_byte + size) of `word`, where `current` holds the
    // word's bytes before this lane writes and `value` the bytes it writes (same layout).
    RaceHit write(std::size_t word, std::uint32_t warp, unsigned lane, std::uint32_t pc,
                  std::uint8_t byte_mask, const std::byte* current, const std::byte* value) {
        WordState& s = words_[word];
        WordSource& source = where_[word];
        RaceHit hit;
        if (source.store_stamp == store_stamp_ && (s.store_bytes & byte_mask) != 0) {
            const std::uint8_t overlap = s.store_bytes & byte_mask;
            for (unsigned b = 0; b < 4; ++b) {
                if (((overlap >> b) & 1) && current[b] != value[b]) {
                    hit = RaceHit{RaceKind::one_store_two_values, pc,
                                  static_cast<std::uint16_t>(warp), source.store_lane};
                    break;
                }
            }
        }
        if (source.store_stamp != store_stamp_) {
            source.store_stamp = store_stamp_;
            s.store_bytes = 0;
            source.store_lane = static_cast<std::uint8_t>(lane);
        }
        s.store_bytes |= byte_mask;
        if (hit.kind == RaceKind::none) {
            hit = check_write(word, warp);
            if (hit.kind == RaceKind::write_after_write && same_bytes(byte_mask, current, value))
                hit.kind = RaceKind::same_value_write;
        }
        note_write(word, warp, lane, pc);
        return hit;
    }

    // An atomic's write: atomics do not race with each other, but a plain access by another warp
    // in the same epoch races with them.
    void atomic_write(std::size_t word, std::uint32_t warp, unsigned lane, std::uint32_t pc) {
        note_write(word, warp, lane, pc);
    }

private:
    // What every access looks at, 16 bytes a word; where the accesses were is apart (WordSource)
    // and looked at only when reporting, so the loads' pass stays in cache.
    struct WordState {
        std::uint32_t write_epoch = 0;  // 0: not in any epoch
        std::uint32_t read_epoch = 0;
        std::uint16_t writer = 0;
        std::uint16_t reader = 0;
        std::uint8_t writer_lane = 0;
        std::uint8_t reader_lane = 0;
        std::uint8_t store_bytes = 0;  // the bytes the current store stamp wrote
        bool many_readers = false;     // more than one warp read it in read_epoch
    };
    struct WordSource {
        std::uint32_t write_pc = 0;
        std::uint32_t read_pc = 0;
        std::uint32_t store_stamp = 0;
        std::uint8_t store_lane = 0;
    };

    static bool same_bytes(std::uint8_t byte_mask, const std::byte* current,
                           const std::byte* value) {
        for (unsigned b = 0; b < 4; ++b) {
            if (((byte_mask >> b) & 1) && current[b] != value[b])
                return false;
        }
        return true;
    }

    RaceHit check_write(std::size_t word, std::uint32_t warp) const {
        const WordState& s = words_[word];
        if (s.write_epoch == epoch_ && s.writer != warp) {
            return RaceHit{RaceKind::write_after_write, where_[word].write_pc, s.writer,
                           s.writer_lane};
        }
        if (s.read_epoch == epoch_ && (s.reader != warp || s.many_readers)) {
            // Several warps read it: name the first reader where it is another warp, else
            // kManyWarps ("another warp"), whose lane and pc are not kept.
            return RaceHit{RaceKind::write_after_read, where_[word].read_pc,
                           s.reader != warp ? s.reader : kManyWarps, s.reader_lane};
        }
        return {};
    }

    void note_write(std::size_t word, std::uint32_t warp, unsigned lane, std::uint32_t pc) {
        WordState& s = words_[word];
        s.write_epoch = epoch_;
        settled_words_ -= settled_[word] == epoch_;
        settled_[word] = 0;
        s.writer = static_cast<std::uint16_t>(warp);
        s.writer_lane = static_cast<std::uint8_t>(lane);
        where_[word].write_pc = pc;
    }

    void next_epoch() {
        settled_words_ = 0;
        if (++epoch_ == 0) {
            for (WordState& s : words_) {
                s.write_epoch = 0;
                s.read_epoch = 0;
            }
            std::fill(settled_.begin(), settled_.end(), 0);
            epoch_ = 1;
        }
    }

    std::vector<WordState> words_;
    std::vector<WordSource> where_;
    std::vector<std::uint32_t> settled_;  // the epoch in which the word became settled, or 0
    std::size_t settled_words_ = 0;       // words settled in this epoch
    std::uint32_t epoch_ = 0;
    std::uint32_t store_stamp_ = 0;
};

}  // namespace grader::sim::detail
