// What a kernel can observe on the simulator is something a GPU could show (issue 17, section 3):
// %warpid and %nwarpid, shared memory's initial contents, .ftz, a module's __device__ globals
// across launches, blocks running side by side; and shared atomics are shared requests with
// their bank cost (section 2). Issue 42: directed rounding to the bit, atomics' flush to zero in
// global memory, shared memory in whole allocation units, and blocks an SM holds by its registers.

#include <cuda_occupancy.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ios>
#include <iterator>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "sim/rounding.hpp"
#include "sim/sim.hpp"
#include "sim_kernels.hpp"

using grader::testing::compile_to_ptx;
using grader::testing::sim_fixture;
using grader::testing::upload;
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

TEST_CASE(
    "a register a thread reads before it writes holds what the thread before it on its "
    "place left there") {
    // 2000 blocks of 64 threads, 640 at a time on a T4: the blocks after the first 640 find a
    // thread's register as the block before them on their place left it (its %smid and
    // %warpid, which are theirs), however the kernel's other threads write it first: a write
    // under a guard, or past a branch the reader takes around it.
    constexpr std::uint32_t kBlocks = 2000, kThreads = 64, kPlaces = 640;
    for (const std::string kernel : {"readsLeftoverRegister", "readsLeftoverPastBranch"}) {
        for (const std::uint32_t write_first : {0u, 0xffffu, 0x55555555u}) {
            CAPTURE(kernel);
            CAPTURE(write_first);
            const std::uint64_t seed = 3 + write_first % 7;
            sim::GlobalMemory memory(seed);
            const std::size_t n = std::size_t{kBlocks} * kThreads * 2;
            const std::uint64_t out = memory.allocate(n * 4);
            sim::LaunchOptions options;
            options.clock_seed = seed;
            const auto result = sim::launch(module(), kernel, {kBlocks, 1, 1}, {kThreads, 1, 1},
                                            {sim::param_bytes(out), sim::param_bytes(write_first)},
                                            memory, options);
            REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
            const auto got = read_back<std::uint32_t>(memory, out, n);
            std::size_t own_place = 0, readers = 0;
            for (std::size_t t = 0; t < std::size_t{kBlocks} * kThreads; ++t) {
                const std::uint32_t left = got[2 * t], mine = got[2 * t + 1];
                if (((write_first >> (t % 32)) & 1) != 0) {
                    if (left != 7)
                        FAIL("thread " << t << " wrote 7 first and read " << left);
                    continue;
                }
                ++readers;
                own_place += left == mine ? 1 : 0;
                // A marked value is a place's: this thread's own, never another place's.
                if ((left >> 16) == 1 && left < 0x10000u + (40u << 8) && left != mine)
                    FAIL("thread " << t << " read " << left << ", left on another place; its "
                                   << "own is " << mine);
            }
            // Every reader past the first block on each place found its own place's mark.
            CHECK(own_place >= readers / kBlocks * (kBlocks - kPlaces));
        }
    }
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

TEST_CASE("CUDA's rounded intrinsics give on the simulator what the PTX ISA defines, to the bit") {
    namespace rounding = grader::sim::rounding;
    using rounding::Direction;
    static const sim::Module rounded =
        sim::parse_ptx(compile_to_ptx(sim_fixture("directed_rounding.cu"), "directed_rounding.cu"));
    constexpr int kSamples = 512;
    constexpr int kResults = 84;  // ROUNDING_RESULTS
    // Operands of every kind: random bits (NaNs, infinities, subnormals among them), and pairs a
    // few binades apart with few-bit significands, whose sums and products round or tie.
    std::mt19937_64 rng(42);
    const auto any_float = [&](float near) {
        std::uint32_t b = static_cast<std::uint32_t>(rng());
        if (rng() % 2 == 0) {
            const auto e = static_cast<std::int64_t>((bits_of(near) >> 23) & 0xff) +
                           static_cast<std::int64_t>(rng() % 61) - 30;
            b = (b & 0x80000000u) |
                (static_cast<std::uint32_t>(std::clamp<std::int64_t>(e, 0, 254)) << 23) |
                (static_cast<std::uint32_t>(rng() & rng()) >> 9);
        }
        return float_of(b);
    };
    const auto any_double = [&](double near) {
        std::uint64_t b = rng();
        double d;
        if (rng() % 2 == 0) {
            std::uint64_t n;
            std::memcpy(&n, &near, 8);
            const auto e = static_cast<std::int64_t>((n >> 52) & 0x7ff) +
                           static_cast<std::int64_t>(rng() % 121) - 60;
            b = (b & 0x8000000000000000ull) |
                (static_cast<std::uint64_t>(std::clamp<std::int64_t>(e, 0, 2046)) << 52) |
                ((rng() & rng()) >> 12);
        }
        std::memcpy(&d, &b, 8);
        return d;
    };
    std::vector<float> floats = {2.0f, 1e-10f, 1.0f};
    std::vector<double> doubles = {2.0 + 0.75 * std::ldexp(1.0, -22), 1.0, 1.0};
    std::vector<std::int64_t> integers = {16777217};
    for (int k = 1; k < kSamples; ++k) {
        const float a = any_float(1.0f);
        const float b = any_float(a);
        floats.insert(floats.end(), {a, b, any_float(a * b)});
        const double x = any_double(1.0);
        const double y = any_double(x);
        doubles.insert(doubles.end(), {x, y, any_double(x * y)});
        integers.push_back(static_cast<std::int64_t>(rng() >> (rng() % 64)) * (rng() % 2 ? 1 : -1));
    }
    sim::GlobalMemory memory;
    const std::uint64_t f = upload(memory, floats);
    const std::uint64_t d = memory.allocate(doubles.size() * 8);
    memory.write(d, doubles.data(), doubles.size() * 8);
    const std::uint64_t i = memory.allocate(integers.size() * 8);
    memory.write(i, integers.data(), integers.size() * 8);
    const std::uint64_t out = memory.allocate(std::size_t{kSamples} * kResults * 8);
    const auto result =
        sim::launch(rounded, "directedRounding", {kSamples / 256, 1, 1}, {256, 1, 1},
                    {sim::param_bytes(f), sim::param_bytes(d), sim::param_bytes(i),
                     sim::param_bytes(out), sim::param_bytes(kSamples)},
                    memory, {});
    REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
    const auto got = read_back<std::uint64_t>(memory, out, std::size_t{kSamples} * kResults);
    constexpr Direction kFour[] = {Direction::nearest, Direction::toward_zero, Direction::down,
                                   Direction::up};
    int mismatches = 0;
    for (int k = 0; k < kSamples && mismatches < 8; ++k) {
        const float a = floats[3 * k], b = floats[3 * k + 1], c = floats[3 * k + 2];
        const double x = doubles[3 * k], y = doubles[3 * k + 1], z = doubles[3 * k + 2];
        const std::int64_t m = integers[k];
        std::vector<float> f32;
        std::vector<double> f64;
        for (const auto& op : {rounding::add<float>, rounding::sub<float>, rounding::mul<float>,
                               rounding::div<float>}) {
            for (const Direction dir : kFour)
                f32.push_back(op(a, b, dir));
        }
        for (const Direction dir : kFour)
            f32.push_back(rounding::fma(a, b, c, dir));
        for (const Direction dir : kFour)
            f32.push_back(rounding::div(1.0f, a, dir));
        for (const Direction dir : kFour)
            f32.push_back(rounding::sqrt(a, dir));
        for (const Direction dir : kFour)
            f32.push_back(rounding::narrow(x, dir));
        for (const Direction dir : kFour)
            f32.push_back(rounding::from_integer<float>(static_cast<std::int32_t>(m), dir));
        for (const Direction dir : kFour)
            f32.push_back(rounding::from_integer<float>(static_cast<std::uint32_t>(m), dir));
        for (const Direction dir : kFour)
            f32.push_back(rounding::from_integer<float>(m, dir));
        for (const Direction dir : kFour)
            f32.push_back(rounding::from_integer<float>(static_cast<std::uint64_t>(m), dir));
        for (const auto& op : {rounding::add<double>, rounding::sub<double>, rounding::mul<double>,
                               rounding::div<double>}) {
            for (const Direction dir : kFour)
                f64.push_back(op(x, y, dir));
        }
        for (const Direction dir : kFour)
            f64.push_back(rounding::fma(x, y, z, dir));
        for (const Direction dir : kFour)
            f64.push_back(rounding::div(1.0, x, dir));
        for (const Direction dir : kFour)
            f64.push_back(rounding::sqrt(x, dir));
        for (const Direction dir : kFour)
            f64.push_back(rounding::from_integer<double>(m, dir));
        for (const Direction dir : kFour)
            f64.push_back(rounding::from_integer<double>(static_cast<std::uint64_t>(m), dir));
        REQUIRE(f32.size() + f64.size() == kResults);
        for (std::size_t j = 0; j < f32.size(); ++j) {
            const std::uint64_t word = got[static_cast<std::size_t>(k) * kResults + j];
            const float sim_result = float_of(static_cast<std::uint32_t>(word));
            if (!(std::isnan(sim_result) && std::isnan(f32[j])) && word != bits_of(f32[j])) {
                ++mismatches;
                FAIL_CHECK("sample " << k << ", f32 result " << j << ": 0x" << std::hex << word
                                     << ", the PTX ISA's 0x" << bits_of(f32[j]));
            }
        }
        for (std::size_t j = 0; j < f64.size(); ++j) {
            const std::uint64_t word = got[static_cast<std::size_t>(k) * kResults + 48 + j];
            std::uint64_t want;
            std::memcpy(&want, &f64[j], 8);
            double sim_result;
            std::memcpy(&sim_result, &word, 8);
            if (!(std::isnan(sim_result) && std::isnan(f64[j])) && word != want) {
                ++mismatches;
                FAIL_CHECK("sample " << k << ", f64 result " << j << ": 0x" << std::hex << word
                                     << ", the PTX ISA's 0x" << want);
            }
        }
    }
    CHECK(mismatches == 0);
    // Sample 0, the cases issue 42 names, as an H100 gave them: __fadd_ru(2, 1e-10) is 2 and an
    // ulp, __double2float_rz(2 + 0.75 ulp) is 2; and __int2float_ru(2^24 + 1) is 2^24 + 2.
    CHECK(got[3] == 0x40000001u);
    CHECK(got[29] == 0x40000000u);
    CHECK(got[35] == bits_of(16777218.0f));
}

TEST_CASE(
    "an atomic float add flushes subnormals to zero in global memory and keeps them in shared") {
    for (const float tiny : {1e-40f, -1e-40f}) {
        CAPTURE(tiny);
        sim::GlobalMemory memory;
        const std::uint64_t in = upload(memory, {tiny, 1.0f});
        // global[0] a zero of the tiny one's sign: the flushed sum keeps it.
        const std::uint64_t global = upload(memory, {std::copysign(0.0f, tiny), 1e-39f, 0.0f});
        const std::uint64_t out = memory.allocate(5 * 4);
        const auto result = sim::launch(
            module(), "atomicSubnormals", {1, 1, 1}, {32, 1, 1},
            {sim::param_bytes(in), sim::param_bytes(global), sim::param_bytes(out)}, memory, {});
        REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
        const auto got = read_back<float>(memory, out, 5);
        CHECK(bits_of(got[0]) == bits_of(tiny));  // shared: kept (an H100: 0x000116c2)
        CHECK(bits_of(got[1]) == (bits_of(tiny) & 0x80000000u));  // global: flushed, signed
        CHECK(bits_of(got[2]) == bits_of(1e-39f));  // the old value comes back as it was
        CHECK(bits_of(got[3]) == 0u);               // and the word is flushed: 0 + 0
        CHECK(bits_of(got[4]) == bits_of(tiny));    // shared through a generic pointer: kept
    }
}

TEST_CASE("an atomic add's NaN is the canonical one in f32 and keeps its payload in f64") {
    // As an H100 gave them (gpu-check behaviours, section 17): f32 0x7fffffff in shared and in
    // global memory, f64 0x7ff8000000000123 kept in both; the host's f32 add would keep it.
    sim::GlobalMemory memory;
    const std::uint64_t in = upload(memory, {float_of(0x7fc00123u)});
    const std::uint64_t out = upload(memory, {0.0f, 0.0f, 0.0f, 1.0f});
    const auto result = sim::launch(module(), "atomicNan", {1, 1, 1}, {32, 1, 1},
                                    {sim::param_bytes(in), sim::param_bytes(out)}, memory, {});
    REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
    const auto got = read_back<std::uint32_t>(memory, out, 4);
    CHECK(got[0] == 0x7fffffffu);  // f32, shared
    CHECK(got[1] == 0x7fc00123u);  // f64, shared: the payload's low half
    CHECK(got[2] == 0x7ff80000u);  // and its high half
    CHECK(got[3] == 0x7fffffffu);  // f32, global
}

TEST_CASE("each float operation gives a NaN's bits as an H100 and an H200 do") {
    // tests/fixtures/sim/nan_results.cu, slot by slot. `measured`: the bits gpu-check's
    // behaviours section 8 printed on an H200 (docs/measurements/2026-12-05-h200-run1.log) and
    // an H100 (2026-12-06-h100-gpu-check.md); the others are the model's reading of those (f32
    // arithmetic canonical, f64 the first NaN operand's payload, conversions carry the payload),
    // printed beside the GPU's by the same section.
    struct Expected {
        const char* name;
        std::uint64_t bits;
        bool measured;
    };
    const Expected expected[] = {
        {"add.f32", 0x7fffffffu, true},
        {"mul.f32", 0x7fffffffu, true},
        {"fma.f32", 0x7fffffffu, true},
        {"div.rn.f32", 0x7fffffffu, true},
        {"sqrt.f32(-1)", 0x7fffffffu, true},
        {"rcp.approx.f32", 0x7fffffffu, true},
        {"min.f32(nan, 1)", 0x3f800000u, true},
        {"min.f32(a, a)", 0x7fc00123u, true},
        {"neg.f32", 0x7fffffffu, true},
        {"abs.f32", 0x7fffffffu, true},
        {"inf - inf f32", 0x7fffffffu, true},
        {"ex2.approx.f32", 0x7fffffffu, true},
        {"cvt.f32.f64", 0x7fc00000u, true},
        {"cvt.f64.f32", 0x7ff8002460000000ull, true},
        {"add.f64", 0x7ff8000000000123ull, true},
        {"add.f32(a, b)", 0x7fffffffu, false},
        {"min.f32(a, b)", 0x7fc00123u, false},
        {"max.f32(b, a)", 0x7fc00456u, false},
        {"cvt.rni.f32.f32", 0x7fffffffu, false},
        {"add.f64(a, b)", 0x7ff8000000000123ull, false},
        {"add.f64(1, b)", 0x7ff8000000000456ull, false},
        {"mul.f64(1, a)", 0x7ff8000000000123ull, false},
        {"fma.f64(1, 1, a)", 0x7ff8000000000123ull, false},
        {"div.f64(a, 1)", 0x7ff8000000000123ull, false},
        {"sqrt.f64(a)", 0x7ff8000000000123ull, false},
        {"neg.f64", 0xfff8000000000123ull, false},
        {"abs.f64", 0x7ff8000000000123ull, false},
        {"inf - inf f64", 0x7fffffffffffffffull, false},
        {"min.f64(a, b)", 0x7ff8000000000123ull, false},
        {"cvt.f64.f32(b)", 0x7ff8008ac0000000ull, false},
        {"cvt.f32.f64(b)", 0x7fc00000u, false},
    };
    constexpr std::size_t kResults = std::size(expected);
    const sim::Module nan_module =
        sim::parse_ptx(compile_to_ptx(sim_fixture("nan_results.cu"), "nan_results.cu"));
    sim::GlobalMemory memory;
    const std::vector<std::uint64_t> nans = {0x7fc00123u, 0x7fc00456u, 0x7ff8000000000123ull,
                                             0x7ff8000000000456ull};
    const std::uint64_t in = memory.allocate(nans.size() * 8);
    memory.write(in, nans.data(), nans.size() * 8);
    const std::uint64_t out = memory.allocate(kResults * 8);
    const auto result = sim::launch(nan_module, "nanResults", {1, 1, 1}, {1, 1, 1},
                                    {sim::param_bytes(in), sim::param_bytes(out)}, memory, {});
    REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
    const auto got = read_back<std::uint64_t>(memory, out, kResults);
    for (std::size_t k = 0; k < kResults; ++k) {
        const std::string name = expected[k].name;
        CAPTURE(name);
        CAPTURE(expected[k].measured);
        const auto hex = [](std::uint64_t v) {
            std::ostringstream text;
            text << "0x" << std::hex << v;
            return text.str();
        };
        CHECK(hex(got[k]) == hex(expected[k].bits));
    }
}

TEST_CASE(
    "a block's shared memory is whole allocation units: a read past its declared end is not") {
    // 2049 words (8196 bytes) are 8448 bytes on a T4 (units of 256), as %total_smem_size says.
    const auto run = [](int index) {
        sim::GlobalMemory memory;
        const std::uint64_t out = memory.allocate(2 * 4);
        auto result = sim::launch(module(), "sharedPastDeclared", {1, 1, 1}, {256, 1, 1},
                                  {sim::param_bytes(index), sim::param_bytes(out)}, memory, {});
        return std::make_pair(result, result.status == sim::LaunchStatus::completed
                                          ? read_back<std::uint32_t>(memory, out, 2)
                                          : std::vector<std::uint32_t>{});
    };
    for (const int index : {2048, 2049, 2050, 2111}) {
        CAPTURE(index);
        const auto ran = run(index);
        const sim::LaunchResult& result = ran.first;
        const std::vector<std::uint32_t>& got = ran.second;
        REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
        CHECK(got[0] == 0x5eedu);
        CHECK(got[1] == 8448u);
    }
    // Past the allocation: a fault, as on a GPU.
    const sim::LaunchResult result = run(2112).first;
    CHECK(result.status == sim::LaunchStatus::fault);
    CHECK(result.message.find("outside the block's 8448 bytes of shared memory") !=
          std::string::npos);
    // An H100's units are 128 bytes: 8196 bytes are 8320 there.
    CHECK(sim::GpuModel::for_arch("sm_90").shared_allocation(8196) == 8320);
    CHECK(sim::GpuModel::for_arch("sm_75").shared_allocation(8196) == 8448);
    CHECK(sim::GpuModel::for_arch("sm_75").shared_allocation(0) == 0);
}

TEST_CASE("the blocks an SM holds are what NVIDIA's occupancy calculator says, registers counted") {
    // A T4 (compute capability 7.5) as cuda_occupancy.h describes one.
    cudaOccDeviceProp t4;
    t4.computeMajor = 7;
    t4.computeMinor = 5;
    t4.maxThreadsPerBlock = 1024;
    t4.maxThreadsPerMultiprocessor = 1024;
    t4.regsPerBlock = 65536;
    t4.regsPerMultiprocessor = 65536;
    t4.warpSize = 32;
    t4.sharedMemPerBlock = 48 * 1024;
    t4.sharedMemPerMultiprocessor = 64 * 1024;
    t4.numSms = 40;
    t4.sharedMemPerBlockOptin = 64 * 1024;
    t4.reservedSharedMemPerBlock = 0;
    const sim::GpuModel model = sim::GpuModel::for_arch("sm_75");
    int compared = 0;
    for (int threads = 32; threads <= 1024; threads += 32) {
        for (int registers = 16; registers <= 255; ++registers) {
            cudaOccFuncAttributes attributes;
            attributes.maxThreadsPerBlock = 1024;
            attributes.numRegs = registers;
            attributes.sharedSizeBytes = 0;
            attributes.numBlockBarriers = 1;
            cudaOccDeviceState state;
            cudaOccResult result{};
            REQUIRE(cudaOccMaxActiveBlocksPerMultiprocessor(&result, &t4, &attributes, &state,
                                                            threads, 0) == CUDA_OCC_SUCCESS);
            const std::uint32_t ours = model.resident_per_sm(static_cast<std::uint32_t>(threads), 0,
                                                             static_cast<std::uint32_t>(registers));
            if (ours != static_cast<std::uint32_t>(result.activeBlocksPerMultiprocessor)) {
                FAIL_CHECK(threads << " threads of " << registers << " registers: " << ours
                                   << " blocks, the calculator's "
                                   << result.activeBlocksPerMultiprocessor);
            }
            ++compared;
        }
    }
    CHECK(compared == 32 * 240);
    // The kernel: 207 registers, blocks of 256: one block an SM, 40 on a T4, where the
    // registers' count left aside gives four.
    CHECK(model.resident_per_sm(256, 8192, 207) == 1);
    CHECK(model.resident_per_sm(256, 8192) == 4);
}
