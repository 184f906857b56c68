// The wavefront rule as a unit: one warp's shared access (a byte offset per active lane and a
// width) to its conflict degree and wavefronts, with no compiler in the loop.

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <numeric>

#include "sim/banks.hpp"
#include "sim/sim.hpp"

namespace sim = grader::sim;

namespace {

constexpr std::uint32_t kAllLanes = 0xffffffffu;

// Lane L at element L * stride of `bytes`-wide elements.
std::array<std::uint64_t, 32> strided(std::uint64_t stride, std::uint32_t bytes) {
    std::array<std::uint64_t, 32> offsets{};
    for (std::uint64_t lane = 0; lane < 32; ++lane)
        offsets[lane] = lane * stride * bytes;
    return offsets;
}

}  // namespace

TEST_CASE("a 32-bit access at stride s costs gcd(s, 32) wavefronts") {
    for (const std::uint64_t stride : {1, 2, 3, 4, 8, 16, 32, 33, 64, 65}) {
        CAPTURE(stride);
        const auto cost = sim::bank_cost(kAllLanes, strided(stride, 4), 4);
        const auto expected = static_cast<std::uint32_t>(std::gcd<std::uint64_t>(stride, 32));
        CHECK(cost.degree == expected);
        CHECK(cost.wavefronts == expected);
        CHECK(cost.ideal == 1);
    }
}

TEST_CASE("lanes reading one word are one broadcast, not a conflict") {
    const auto cost = sim::bank_cost(kAllLanes, strided(0, 4), 4);
    CHECK(cost.degree == 1);
    CHECK(cost.wavefronts == 1);

    SUBCASE("two lanes per word, as in the course's tx * 2 % 32 demo") {
        std::array<std::uint64_t, 32> offsets{};
        for (unsigned lane = 0; lane < 32; ++lane)
            offsets[lane] = (lane * 2 % 32) * 4;
        sim::WarpAccessTable table;
        const auto demo = sim::bank_cost(kAllLanes, offsets, 4, &table);
        CHECK(demo.degree == 1);
        CHECK(table.lanes[0].bank_mates == ((1u << 0) | (1u << 16)));
        CHECK(table.lanes[3].word == 6);
    }
}

TEST_CASE("the lane table names each lane's word, bank and the distinct words in its bank") {
    sim::WarpAccessTable table;
    const auto cost = sim::bank_cost(kAllLanes, strided(32, 4), 4, &table);
    CHECK(cost.degree == 32);
    CHECK(table.lanes[5].word == 5 * 32);
    CHECK(table.lanes[5].bank == 0);
    CHECK(table.lanes[5].bank_mates == kAllLanes);
    CHECK(table.lanes[5].distinct_words_in_bank == 32);
    CHECK(sim::bank_cost(0x0000ffffu, strided(1, 4), 4).degree == 1);
}

TEST_CASE("64- and 128-bit accesses move 2 and 4 wavefronts of data when conflict free") {
    SUBCASE("float2 at stride 1: two half-warp phases") {
        const auto cost = sim::bank_cost(kAllLanes, strided(1, 8), 8);
        CHECK(cost.degree == 2);  // 64 words over 32 banks
        CHECK(cost.ideal == 2);
        CHECK(cost.wavefronts == 2);
    }
    SUBCASE("float4 at stride 1: four quarter-warp phases") {
        const auto cost = sim::bank_cost(kAllLanes, strided(1, 16), 16);
        CHECK(cost.ideal == 4);
        CHECK(cost.wavefronts == 4);
    }
    SUBCASE("float2 at stride 16 elements: every lane's two words in banks 0 and 1") {
        const auto cost = sim::bank_cost(kAllLanes, strided(16, 8), 8);
        CHECK(cost.degree == 32);
        CHECK(cost.wavefronts == 32);
    }
    SUBCASE("a broadcast float2 is one wavefront, a broadcast float4 two") {
        CHECK(sim::bank_cost(kAllLanes, strided(0, 8), 8).wavefronts == 1);
        CHECK(sim::bank_cost(kAllLanes, strided(0, 16), 16).wavefronts == 2);
    }
    SUBCASE("float4 with lane pairs sharing an address halves the data bound") {
        std::array<std::uint64_t, 32> offsets{};
        for (unsigned lane = 0; lane < 32; ++lane)
            offsets[lane] = (lane / 2) * 16;
        CHECK(sim::bank_cost(kAllLanes, offsets, 16).wavefronts == 2);
    }
}

TEST_CASE("a partially active warp counts only its active lanes") {
    // 8 lanes of float4 move 128 bytes: one wavefront.
    CHECK(sim::bank_cost(0x000000ffu, strided(1, 16), 16).wavefronts == 1);
    // Lanes 0 and 1 at stride 32: two words in bank 0.
    CHECK(sim::bank_cost(0x00000003u, strided(32, 4), 4).degree == 2);
}

TEST_CASE("distinct words in a bank are counted alike however far apart they lie") {
    // Lane pairs share a word and the words of one bank are 32 rows of 32 words apart: within
    // 8 KiB (64 rows) and far beyond it, as a tile's words and a large buffer's are.
    for (const std::uint64_t rows_apart : {1, 2, 63, 64, 65, 1000}) {
        CAPTURE(rows_apart);
        std::array<std::uint64_t, 32> offsets{};
        for (unsigned lane = 0; lane < 32; ++lane)
            offsets[lane] = (lane / 2) * rows_apart * 32 * 4;
        const auto cost = sim::bank_cost(kAllLanes, offsets, 4);
        CHECK(cost.degree == 16);
        CHECK(cost.wavefronts == 16);
    }
}

TEST_CASE("the cache of bank costs gives bank_cost's counts for every shape, moved or not") {
    // Shapes as loops ask for them (a stride, lanes wrapping around a tile), moved by any number
    // of words and asked again; the whole warp, then some of its lanes at the same addresses.
    sim::BankCostCache cache;
    std::uint64_t draw = 12345;
    const auto next = [&](std::uint64_t below) {
        draw = draw * 6364136223846793005ull + 1442695040888963407ull;
        return (draw >> 33) % below;
    };
    for (int round = 0; round < 4000; ++round) {
        const std::uint32_t bytes = std::array<std::uint32_t, 5>{1, 2, 4, 8, 16}[next(5)];
        const std::uint64_t stride = next(70);
        const std::uint64_t tile_words = std::uint64_t{1} << (6 + next(7));
        const std::uint64_t start = next(4096);
        std::array<std::uint64_t, 32> offsets{};
        const std::uint64_t elements = tile_words * 4 / bytes;
        for (unsigned lane = 0; lane < 32; ++lane)
            offsets[lane] = ((start + lane * stride) % elements) * bytes;
        const auto some = static_cast<std::uint32_t>(next(1ull << 32));
        for (const std::uint32_t lanes : {kAllLanes, some}) {
            CAPTURE(bytes);
            CAPTURE(stride);
            CAPTURE(lanes);
            const auto expected = sim::bank_cost(lanes, offsets, bytes);
            const auto cached = cache.cost(lanes, offsets, bytes);
            CHECK(cached.degree == expected.degree);
            CHECK(cached.ideal == expected.ideal);
            CHECK(cached.wavefronts == expected.wavefronts);
        }
    }
}
