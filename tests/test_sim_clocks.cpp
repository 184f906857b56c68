// The simulator's clocks: %clock, %clock64 and %globaltimer start large and nonzero, from the
// grade's seed, advance with what the warp issues, and nanosleep moves them on by its argument.

#include <doctest/doctest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "sim/sim.hpp"
#include "sim_kernels.hpp"
#include "test_paths.hpp"

namespace sim = grader::sim;
using namespace grader::testing;

namespace {

constexpr std::uint32_t kThreads = 64;  // two warps
constexpr std::uint32_t kBlocks = 2;
constexpr std::uint32_t kSleepNs = 2000;
constexpr std::uint64_t kEpoch = 1'780'000'000'000'000'000ull;  // a Unix time in 2026, in ns

std::vector<std::uint64_t> read_clocks(std::uint64_t seed, std::uint32_t sleep_ns = kSleepNs) {
    const sim::Module module =
        sim::parse_ptx(compile_to_ptx(sim_fixture("reads_clocks.cu"), "clocks.cu"));
    sim::GlobalMemory memory;
    const std::size_t count = kThreads * kBlocks * 8;
    const std::uint64_t clocks = memory.allocate(count * sizeof(std::uint64_t));
    sim::LaunchOptions options;
    options.clock_seed = seed;
    options.timer_epoch_ns = kEpoch;
    const auto result =
        sim::launch(module, "readsClocks", {kBlocks, 1, 1}, {kThreads, 1, 1},
                    {sim::param_bytes(clocks), sim::param_bytes(sleep_ns)}, memory, options);
    REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
    std::vector<std::uint64_t> values(count);
    memory.read(clocks, values.data(), count * sizeof(std::uint64_t));
    return values;
}

}  // namespace

TEST_CASE("a nanosleep is about its delay, not exactly it, and 1 ms at most") {
    // sim_fidelity/nanosleep_exact_sniffing and nanosleep_beyond_limit_sniffing tell a sleep of
    // exactly 1.5 cycles a nanosecond, and one past CUDA's 1 ms limit.
    std::set<std::uint64_t> slept;
    for (const std::uint64_t seed : {1, 2, 3}) {
        const auto values = read_clocks(seed);
        for (std::uint32_t t = 0; t < kThreads * kBlocks; t += 32) {
            slept.insert(values[t * 8 + 2] - values[t * 8 + 1]);
        }
    }
    CHECK(slept.size() > 4);                         // warps and seeds sleep differently
    const auto capped = read_clocks(7, 10'000'000);  // 10 ms asked
    const std::uint64_t cycles = capped[2] - capped[1];
    CHECK(cycles >= 1'500'000);         // 1 ms at 1.5 GHz
    CHECK(cycles < 1'875'000 + 1'000);  // and a quarter more at most
}

TEST_CASE("a chain of dependent instructions takes their latencies; an independent one does not") {
    // sim_fidelity/fma_latency_sniffing and load_latency_sniffing once told the simulator by a
    // clock that moved one cycle an instruction.
    const sim::Module module =
        sim::parse_ptx(compile_to_ptx(sim_fixture("times_latencies.cu"), "latencies.cu"));
    sim::GlobalMemory memory;
    const float in[2] = {1.0f, 2.0f};
    const std::uint64_t input = memory.allocate(sizeof in);
    memory.write(input, in, sizeof in);
    const std::uint64_t out = memory.allocate(3 * sizeof(std::int64_t));
    const auto result = sim::launch(module, "timesLatencies", {1, 1, 1}, {32, 1, 1},
                                    {sim::param_bytes(input), sim::param_bytes(out)}, memory, {});
    REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
    std::int64_t cycles[3] = {};
    memory.read(out, cycles, sizeof cycles);
    CAPTURE(cycles[0]);
    CAPTURE(cycles[1]);
    CAPTURE(cycles[2]);
    CHECK(cycles[0] >= 64 * static_cast<std::int64_t>(sim::ModeledClock::kArithmeticCycles));
    CHECK(cycles[1] < 8);  // issued, not waited for
    CHECK(cycles[2] >= static_cast<std::int64_t>(sim::ModeledClock::kLoadCycles));
}

TEST_CASE("clock64 and globaltimer are large, nonzero, and never stand still") {
    const auto values = read_clocks(42);
    for (std::uint32_t t = 0; t < kThreads * kBlocks; ++t) {
        CAPTURE(t);
        const std::uint64_t* c = &values[t * 8];
        const std::uint64_t first = c[0], second = c[1], after_sleep = c[2];
        const std::uint64_t timer = c[3], timer_after = c[4];
        CHECK(first > (1ull << 32));  // a GPU that has been up for a while
        CHECK(second > first);
        // nanosleep(2000) at 1.5 GHz is 3000 cycles, and up to a quarter more by the seed
        // (ModeledClock::sleep_cycles).
        CHECK(after_sleep - second >= 3000);
        CHECK(after_sleep - second < 3750 + 100);
        // Nanoseconds since 1970, as a GPU's: within a millisecond before the launch's epoch.
        CHECK(timer <= kEpoch);
        CHECK(kEpoch - timer < 1'000'000);
        CHECK(timer_after - timer + sim::ModeledClock::kTimerStepNs >= kSleepNs);
        CHECK(timer_after - timer < kSleepNs * 5 / 4 + 100);
        // It moves in a GPU's steps, not by one.
        CHECK(timer % sim::ModeledClock::kTimerStepNs == 0);
        CHECK(timer_after % sim::ModeledClock::kTimerStepNs == 0);
        // %clock is clock64's low half, read a little later.
        CHECK(c[5] <= 0xffffffffull);
        CHECK(c[5] != 0);
        CHECK(static_cast<std::uint32_t>(c[5] - static_cast<std::uint32_t>(after_sleep)) > 0);
        CHECK(static_cast<std::uint32_t>(c[5] - static_cast<std::uint32_t>(after_sleep)) < 1000);
        // globaltimer_lo and _hi are the two halves of a later globaltimer.
        const std::uint64_t halves = (c[7] << 32) | c[6];
        CHECK(halves >= timer_after);
        CHECK(halves - timer_after < 1000);
    }
}

TEST_CASE("the clocks' start comes from the grade's seed") {
    const auto one = read_clocks(1);
    const auto again = read_clocks(1);
    const auto other = read_clocks(2);
    CHECK(one == again);
    CHECK(one[0] != other[0]);
    CHECK(one[3] != other[3]);
}

TEST_CASE("a kernel that skips its work when the clock reads 0 or stands still does the work") {
    const sim::Module module = sim::parse_ptx(
        compile_to_ptx(sim_fixture("copies_unless_clock_stands_still.cu"), "gate.cu"));
    constexpr unsigned n = 256;
    std::vector<float> input(n);
    for (unsigned k = 0; k < n; ++k)
        input[k] = static_cast<float>(k);
    sim::GlobalMemory memory;
    const std::uint64_t in = upload(memory, input);
    const std::uint64_t out = upload(memory, std::vector<float>(n, -1.0f));
    const auto result =
        sim::launch(module, "copiesUnlessClockStandsStill", {2, 1, 1}, {128, 1, 1},
                    {sim::param_bytes(in), sim::param_bytes(out), sim::param_bytes(n)}, memory, {});
    REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
    const auto values = read_floats(memory, out, n);
    for (unsigned k = 0; k < n; ++k) {
        if (values[k] != 2.0f * input[k])
            FAIL("out[" << k << "] is " << values[k]);
    }
}

TEST_CASE("without an epoch given, globaltimer reads this machine's clock, as a GPU's does") {
    const sim::Module module =
        sim::parse_ptx(compile_to_ptx(sim_fixture("reads_clocks.cu"), "clocks.cu"));
    sim::GlobalMemory memory;
    const std::uint64_t clocks = memory.allocate(32 * 8 * sizeof(std::uint64_t));
    const auto now =
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count());
    const auto result =
        sim::launch(module, "readsClocks", {1, 1, 1}, {32, 1, 1},
                    {sim::param_bytes(clocks), sim::param_bytes(kSleepNs)}, memory, {});
    REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
    std::uint64_t timer = 0;
    memory.read(clocks + 3 * sizeof(std::uint64_t), &timer, sizeof timer);
    CHECK(timer + 10'000'000 > now);  // within 10 ms of the host's clock
    CHECK(timer < now + 10'000'000'000ull);
}

TEST_CASE(
    "the SM count is the modeled GPU's; the blocks' SMs, the grid id and the buffers' addresses "
    "come from the seed") {
    const sim::Module module =
        sim::parse_ptx(compile_to_ptx(sim_fixture("reads_device_identity.cu"), "identity.cu"));
    std::set<std::uint64_t> sm_counts, grids, addresses;
    for (std::uint64_t seed = 1; seed <= 24; ++seed) {
        CAPTURE(seed);
        sim::GlobalMemory memory(seed);
        constexpr std::uint32_t kThreads = 32, kBlocksRun = 4;
        const std::uint64_t identity = memory.allocate(kThreads * kBlocksRun * 4 * 8);
        sim::LaunchOptions options;
        options.clock_seed = seed;
        const auto result =
            sim::launch(module, "readsDeviceIdentity", {kBlocksRun, 1, 1}, {kThreads, 1, 1},
                        {sim::param_bytes(identity)}, memory, options);
        REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
        std::vector<std::uint64_t> values(kThreads * kBlocksRun * 4);
        memory.read(identity, values.data(), values.size() * 8);
        std::set<std::uint64_t> sms;
        for (std::uint32_t t = 0; t < kThreads * kBlocksRun; ++t) {
            const std::uint64_t* v = &values[t * 4];
            CHECK(v[0] == 40);  // a T4's, the GPU of sm_75
            CHECK(v[1] < v[0]);
            CHECK(v[2] >= 1);
            CHECK(v[3] == identity);
            sms.insert(v[1]);
        }
        CHECK((identity >> 40) == 0x7fu);  // where CUDA's allocations lie on Linux
        CHECK((identity % (2u << 20)) == 0u);
        sm_counts.insert(values[0]);
        grids.insert(values[2]);
        addresses.insert(identity);
        CHECK(sms.size() > 1);  // blocks of one launch land on several SMs
    }
    CHECK(sm_counts.size() == 1);
    CHECK(grids.size() > 20);
    CHECK(addresses.size() > 20);
}
