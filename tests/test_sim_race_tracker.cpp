// The race tracker as a unit: one block's shared words, the warps that read and wrote them and the
// barriers between, with no kernel in the loop. test_sim_races.cpp checks the races that whole
// kernels report.

#include <doctest/doctest.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "sim/races.hpp"

using grader::sim::detail::RaceHit;
using grader::sim::detail::RaceKind;
using grader::sim::detail::RaceTracker;

namespace {

constexpr std::uint8_t kWholeWord = 0xf;

std::array<std::byte, 4> word_bytes(std::uint8_t low) {
    return {std::byte{low}, std::byte{0}, std::byte{0}, std::byte{0}};
}

// A whole-word store of `value` over a word that held `before`.
RaceHit store(RaceTracker& races, std::size_t word, std::uint32_t warp, unsigned lane,
              std::uint32_t pc, std::uint8_t before, std::uint8_t value) {
    const auto current = word_bytes(before);
    const auto written = word_bytes(value);
    return races.write(word, warp, lane, pc, kWholeWord, current.data(), written.data());
}

RaceTracker block_of(std::size_t words) {
    RaceTracker races;
    races.start_block(words);
    return races;
}

}  // namespace

TEST_CASE("a read of a word another warp wrote since the last barrier races, naming the writer") {
    RaceTracker races = block_of(8);
    races.start_store();
    CHECK(store(races, 5, 0, 3, 10, 0, 7).kind == RaceKind::none);
    const RaceHit hit = races.read(5, 1, 4, 20);
    CHECK(hit.kind == RaceKind::read_after_write);
    CHECK(hit.pc == 10);
    CHECK(hit.warp == 0);
    CHECK(hit.lane == 3);
    CHECK(races.read(4, 1, 4, 20).kind == RaceKind::none);  // another word
}

TEST_CASE("a completed barrier or a new block separates the accesses") {
    RaceTracker races = block_of(8);
    races.start_store();
    store(races, 2, 0, 0, 10, 0, 1);
    races.barrier();
    CHECK(races.read(2, 1, 0, 20).kind == RaceKind::none);
    races.start_store();
    CHECK(store(races, 2, 2, 0, 30, 1, 2).kind == RaceKind::write_after_read);
    races.start_block(8);
    CHECK(races.read(2, 3, 0, 20).kind == RaceKind::none);
}

TEST_CASE("a warp's own accesses never race with each other") {
    RaceTracker races = block_of(4);
    races.start_store();
    CHECK(store(races, 1, 2, 0, 10, 0, 1).kind == RaceKind::none);
    CHECK(races.read(1, 2, 5, 11).kind == RaceKind::none);
    races.start_store();
    CHECK(store(races, 1, 2, 6, 12, 1, 9).kind == RaceKind::none);
}

TEST_CASE("another warp's write of the same value is told apart: racecheck's INFO hazard") {
    RaceTracker races = block_of(4);
    races.start_store();
    store(races, 0, 1, 7, 10, 0, 1);
    races.start_store();
    const RaceHit same = store(races, 0, 2, 8, 10, 1, 1);  // the word holds 1; 1 is written
    CHECK(same.kind == RaceKind::same_value_write);
    CHECK(same.warp == 1);
    races.start_store();
    CHECK(store(races, 0, 3, 8, 10, 1, 2).kind == RaceKind::write_after_write);  // 2 is not
}

TEST_CASE("a write after another warp's write or read races, naming the earlier access") {
    RaceTracker races = block_of(4);
    races.start_store();
    store(races, 0, 1, 7, 10, 0, 1);
    races.start_store();
    const RaceHit after_write = store(races, 0, 2, 8, 11, 1, 2);
    CHECK(after_write.kind == RaceKind::write_after_write);
    CHECK(after_write.warp == 1);
    CHECK(after_write.lane == 7);
    CHECK(after_write.pc == 10);

    races.barrier();
    races.read(3, 4, 9, 30);
    races.start_store();
    const RaceHit after_read = store(races, 3, 5, 0, 31, 0, 1);
    CHECK(after_read.kind == RaceKind::write_after_read);
    CHECK(after_read.warp == 4);
    CHECK(after_read.lane == 9);
    CHECK(after_read.pc == 30);
}

TEST_CASE("a write by the first of several reading warps names no warp but 'many warps'") {
    RaceTracker races = block_of(4);
    races.read(0, 0, 1, 10);
    races.read(0, 1, 2, 10);
    races.start_store();
    const RaceHit hit = store(races, 0, 0, 1, 11, 0, 1);
    CHECK(hit.kind == RaceKind::write_after_read);
    CHECK(hit.warp == RaceTracker::kManyWarps);
}

TEST_CASE("lanes of one store writing different values to one word race; the same value does not") {
    RaceTracker races = block_of(4);
    races.start_store();
    CHECK(store(races, 2, 0, 4, 10, 0, 1).kind == RaceKind::none);
    CHECK(store(races, 2, 0, 5, 10, 1, 1).kind == RaceKind::none);  // a broadcast write
    const RaceHit hit = store(races, 2, 0, 6, 10, 1, 2);
    CHECK(hit.kind == RaceKind::one_store_two_values);
    CHECK(hit.lane == 4);  // the store's first lane on the word
    // The next store instruction starts afresh.
    races.start_store();
    CHECK(store(races, 2, 0, 7, 12, 2, 3).kind == RaceKind::none);
}

TEST_CASE("lanes of one store writing different bytes of one word do not race") {
    RaceTracker races = block_of(4);
    races.start_store();
    const auto before = word_bytes(0);
    const std::array<std::byte, 4> low = {std::byte{1}, std::byte{0}, std::byte{0}, std::byte{0}};
    const std::array<std::byte, 4> high = {std::byte{1}, std::byte{2}, std::byte{0}, std::byte{0}};
    CHECK(races.write(1, 0, 0, 10, 0x1, before.data(), low.data()).kind == RaceKind::none);
    CHECK(races.write(1, 0, 1, 10, 0x2, low.data(), high.data()).kind == RaceKind::none);
}

TEST_CASE("atomics do not race with each other, but a plain read by another warp does") {
    RaceTracker races = block_of(4);
    races.atomic_write(0, 0, 0, 10);
    races.atomic_write(0, 1, 0, 10);
    const RaceHit hit = races.read(0, 2, 0, 20);
    CHECK(hit.kind == RaceKind::read_after_write);
    CHECK(hit.warp == 1);
}

TEST_CASE("a word settled by two warps' reads is unsettled by a write, a barrier or a new block") {
    RaceTracker races = block_of(8);
    CHECK_FALSE(races.settled(3));
    CHECK(races.read(3, 0, 0, 10).kind == RaceKind::none);
    CHECK_FALSE(races.settled(3));  // one warp's read: another warp's write would race with it
    CHECK(races.read(3, 1, 0, 10).kind == RaceKind::none);
    CHECK(races.settled(3));

    SUBCASE("a write in the same epoch races, and so do the reads after it") {
        races.start_store();
        CHECK(store(races, 3, 2, 0, 20, 0, 1).kind == RaceKind::write_after_read);
        CHECK_FALSE(races.settled(3));
        CHECK(races.read(3, 0, 0, 30).kind == RaceKind::read_after_write);
        CHECK(races.read(3, 1, 0, 30).kind == RaceKind::read_after_write);
        CHECK_FALSE(races.settled(3));
    }
    SUBCASE("an atomic in the same epoch") {
        races.atomic_write(3, 2, 0, 20);
        CHECK_FALSE(races.settled(3));
        CHECK(races.read(3, 0, 0, 30).kind == RaceKind::read_after_write);
    }
    SUBCASE("a barrier") {
        races.barrier();
        CHECK_FALSE(races.settled(3));
    }
    SUBCASE("a new block") {
        races.start_block(8);
        CHECK_FALSE(races.settled(3));
    }
}

TEST_CASE("the block is all settled once two warps have read every word, until a write") {
    RaceTracker races = block_of(2);
    for (const std::uint32_t warp : {0u, 1u}) {
        CHECK_FALSE(races.all_settled());
        races.read(0, warp, 0, 10);
        races.read(0, warp, 1, 10);  // a word read twice is counted once
        races.read(1, warp, 0, 10);
    }
    CHECK(races.all_settled());
    races.read(1, 2, 0, 10);
    CHECK(races.all_settled());
    races.start_store();
    store(races, 1, 2, 0, 20, 0, 1);
    CHECK_FALSE(races.all_settled());
    races.barrier();
    races.read(0, 0, 0, 30);
    races.read(0, 1, 0, 30);
    CHECK_FALSE(races.all_settled());  // word 1 not read since the barrier
    races.read(1, 0, 0, 30);
    races.read(1, 1, 0, 30);
    CHECK(races.all_settled());
}
