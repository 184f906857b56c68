// What a kernel can observe on the simulator is something a GPU could show (issue 17, section 3):
// %warpid and %nwarpid, shared memory's initial contents, .ftz, a module's __device__ globals
// across launches, blocks running side by side; and shared atomics are shared requests with
// their bank cost (section 2).

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "sim/sim.hpp"
#include "sim_kernels.hpp"

using grader::testing::compile_to_ptx;
using grader::testing::sim_fixture;
namespace sim = grader::sim;

namespace {

const sim::Module& module() {
    static const sim::Module m =
        sim::parse_ptx(compile_to_ptx(sim_fixture("observes_the_device.cu"), "observes.cu"));
    return m;
}

template <class T>
std::vector<T> read_back(const sim::GlobalMemory& memory, std::uint64_t address, std::size_t n) {
    std::vector<T> values(n);
    memory.read(address, values.data(), n * sizeof(T));
    return values;
}

float float_of(std::uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

std::uint32_t bits_of(float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}

struct WarpAndShared {
    std::vector<std::uint32_t> values;  // per thread: warpid, nwarpid, unwritten shared word
};

WarpAndShared read_warp_and_shared(std::uint64_t seed, bool poison, std::uint32_t blocks,
                                   std::uint32_t threads) {
    sim::GlobalMemory memory(seed);
    const std::size_t n = std::size_t{blocks} * threads * 3;
    const std::uint64_t out = memory.allocate(n * 4);
    sim::LaunchOptions options;
    options.clock_seed = seed;
    options.poison_shared = poison;
    const auto result = sim::launch(module(), "readsWarpAndShared", {blocks, 1, 1}, {threads, 1, 1},
                                    {sim::param_bytes(out)}, memory, options);
    REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
    return {read_back<std::uint32_t>(memory, out, n)};
}

}  // namespace

TEST_CASE("a block's %smid and %warpid are its place on a T4; %nwarpid and %nsmid the T4's") {
    // The probe's grid: 160 blocks of 256, four to each of a T4's 40 SMs, all resident at once.
    constexpr std::uint32_t kBlocks = 160, kThreads = 256, kWarps = kThreads / 32;
    std::set<std::uint32_t> first_sms;
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
        CAPTURE(seed);
        const auto got = read_warp_and_shared(seed, false, kBlocks, kThreads);
        sim::GlobalMemory memory(seed);
        const std::uint64_t out = memory.allocate(std::size_t{kBlocks} * kThreads * 2 * 4);
        sim::LaunchOptions options;
        options.clock_seed = seed;
        const auto result = sim::launch(module(), "readsPlace", {kBlocks, 1, 1}, {kThreads, 1, 1},
                                        {sim::param_bytes(out)}, memory, options);
        REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
        const auto place =
            read_back<std::uint32_t>(memory, out, std::size_t{kBlocks} * kThreads * 2);
        std::set<std::pair<std::uint32_t, std::uint32_t>> places;
        std::set<std::uint32_t> slots;
        for (std::uint32_t b = 0; b < kBlocks; ++b) {
            CAPTURE(b);
            const std::uint32_t sm = place[std::size_t{b} * kThreads * 2];
            const std::uint32_t first_slot = place[std::size_t{b} * kThreads * 2 + 1];
            CHECK(sm < 40);
            CHECK(first_slot % kWarps == 0);
            CHECK(first_slot + kWarps <= 32);
            places.insert({sm, first_slot});
            slots.insert(first_slot);
            for (std::uint32_t t = 0; t < kThreads; ++t) {
                const std::size_t at = (std::size_t{b} * kThreads + t) * 2;
                if (place[at] != sm || place[at + 1] != first_slot + t / 32)
                    FAIL("thread " << t << " of block " << b << " reads %warpid " << place[at + 1]);
                if (got.values[(std::size_t{b} * kThreads + t) * 3 + 1] != 32)
                    FAIL("%nwarpid reads " << got.values[(std::size_t{b} * kThreads + t) * 3 + 1]);
            }
        }
        CHECK(places.size() == kBlocks);  // no two resident blocks share an SM's warp slots
        CHECK(slots == std::set<std::uint32_t>{0, 8, 16, 24});
        first_sms.insert(place[0]);
    }
    CHECK(first_sms.size() > 1);  // where the grid starts varies with the seed
}

TEST_CASE("shared memory starts with leftovers that differ by block and by seed, or the poison") {
    const auto one = read_warp_and_shared(1, false, 2, 32);
    const auto again = read_warp_and_shared(1, false, 2, 32);
    const auto other = read_warp_and_shared(2, false, 2, 32);
    CHECK(one.values == again.values);  // the same seed, the same leftovers
    std::set<std::uint32_t> block0, block1, other0;
    for (std::uint32_t lane = 0; lane < 32; ++lane) {
        block0.insert(one.values[lane * 3 + 2]);
        block1.insert(one.values[(32 + lane) * 3 + 2]);
        other0.insert(other.values[lane * 3 + 2]);
    }
    CHECK(block0.size() > 16);  // no one fill pattern
    CHECK(block0 != block1);
    CHECK(block0 != other0);
    // Where the harness poisons shared memory (as the GPU path does for the hidden input): a
    // quiet NaN in every word, and not one NaN everywhere, so that no kernel can tell the
    // poisoned run by two unwritten words being equal.
    const auto poisoned = read_warp_and_shared(1, true, 2, 32);
    std::set<std::uint32_t> poison_words;
    for (std::uint32_t t = 0; t < 64; ++t) {
        const std::uint32_t bits = poisoned.values[t * 3 + 2];
        CHECK((bits & 0x7fc00000u) == 0x7fc00000u);
        poison_words.insert(bits);
    }
    CHECK(poison_words.size() > 32);
}

TEST_CASE(".ftz flushes subnormal f32 inputs and results to zero of their sign; without it, kept") {
    for (const std::uint32_t sign : {0u, 0x80000000u}) {
        CAPTURE(sign);
        sim::GlobalMemory memory;
        const std::uint32_t subnormal = sign | 0x00000100u;
        const std::uint32_t least_normal = sign | 0x00800000u;
        const std::vector<float> input = {float_of(subnormal), float_of(least_normal)};
        const std::uint64_t in = memory.allocate(8);
        memory.write(in, input.data(), 8);
        const std::uint64_t out = memory.allocate(6 * 4);
        const auto result = sim::launch(module(), "ftzOps", {1, 1, 1}, {1, 1, 1},
                                        {sim::param_bytes(in), sim::param_bytes(out)}, memory, {});
        REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
        const auto got = read_back<float>(memory, out, 6);
        CHECK(bits_of(got[0]) == sign);         // mul.ftz: the input flushed
        CHECK(bits_of(got[1]) == subnormal);    // mul: kept
        CHECK(bits_of(got[2]) == sign);         // mul.ftz: a subnormal result flushed
        CHECK(bits_of(got[3]) == subnormal);    // the register itself keeps its value
        CHECK(bits_of(got[4]) == (sign | 0u));  // add.ftz x + -0: flushed, sign of x
        CHECK(got[5] == 0.0f);                  // setp.ne.ftz: the flushed input equals 0
    }
}

TEST_CASE("a module's __device__ counter persists across launches, and counts the blocks not run") {
    constexpr std::uint32_t kGrid = 160;
    const std::vector<sim::Dim3> drawn = {{0, 0, 0}, {77, 0, 0}, {159, 0, 0}};
    std::vector<std::byte> globals;
    std::vector<std::uint32_t> first, second;
    for (int launch = 0; launch < 2; ++launch) {
        sim::GlobalMemory memory(launch + 1);
        const std::uint64_t out = memory.allocate(kGrid * 4);
        sim::LaunchOptions options;
        options.blocks = drawn;
        options.module_globals = &globals;
        const auto result = sim::launch(module(), "bumpsCounter", {kGrid, 1, 1}, {32, 1, 1},
                                        {sim::param_bytes(out)}, memory, options);
        REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
        const auto tickets = read_back<std::uint32_t>(memory, out, kGrid);
        auto& into = launch == 0 ? first : second;
        for (const auto& b : drawn)
            into.push_back(tickets[b.x]);
    }
    std::sort(first.begin(), first.end());
    std::sort(second.begin(), second.end());
    CHECK(first == std::vector<std::uint32_t>{0, 1, 2});
    // After a launch of the whole grid a GPU's counter reads 160: so does the simulator's.
    CHECK(second == std::vector<std::uint32_t>{160, 161, 162});

    // Without a place to keep them, every launch starts from the initialisers.
    sim::GlobalMemory memory;
    const std::uint64_t out = memory.allocate(kGrid * 4);
    sim::LaunchOptions options;
    options.blocks = drawn;
    const auto result = sim::launch(module(), "bumpsCounter", {kGrid, 1, 1}, {32, 1, 1},
                                    {sim::param_bytes(out)}, memory, options);
    REQUIRE(result.status == sim::LaunchStatus::completed);
    CHECK(read_back<std::uint32_t>(memory, out, kGrid)[159] < 3);
}

TEST_CASE("blocks run side by side: a block waiting for another to arrive after it sees one") {
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
        CAPTURE(seed);
        sim::GlobalMemory memory(seed);
        const std::uint64_t out = memory.allocate(3 * 4);
        sim::LaunchOptions options;
        options.clock_seed = seed;
        const auto result = sim::launch(module(), "waitsForAnotherBlock", {3, 1, 1}, {64, 1, 1},
                                        {sim::param_bytes(out)}, memory, options);
        REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
        const auto seen = read_back<std::uint32_t>(memory, out, 3);
        // Every block but the last to arrive sees a later one, as on a GPU.
        CHECK(seen[0] + seen[1] + seen[2] == 2);
    }
}

TEST_CASE("a shared atomic is a shared request with its bank cost: a column is 32-way") {
    sim::GlobalMemory memory;
    const std::uint64_t out = memory.allocate(32 * 4);
    const auto result = sim::launch(module(), "atomicColumnRead", {1, 1, 1}, {32, 1, 1},
                                    {sim::param_bytes(out)}, memory, {});
    REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
    const auto sums = read_back<float>(memory, out, 32);
    CHECK(sums[1] == static_cast<float>(32 * 32 + (0 + 31) * 32 / 2));  // row 1: 32..63
    CHECK(result.counts.shared_load_requests == 32);
    CHECK(result.counts.shared_load_wavefronts == 32 * 32);
    CHECK(result.counts.shared_store_requests == 32);
    CHECK(result.counts.shared_store_wavefronts == 32);
}
