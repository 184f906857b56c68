// The wavefront rule as a unit: one warp's shared access (a byte offset per active lane and a
// width) to its conflict degree and wavefronts, with no compiler in the loop.

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <numeric>

#include "sim/banks.hpp"

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
