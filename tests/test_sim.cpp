// The PTX simulator on real NVRTC output: the course's probe, its transposes and its broken demo,
// plus kernels that spin, run off the end of a buffer, or use an instruction it lacks.

#include <doctest/doctest.h>
#include <nvrtc.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <numeric>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "grader_run.hpp"
#include "sim/executor.hpp"
#include "sim/sim.hpp"
#include "sim_kernels.hpp"
#include "test_paths.hpp"

using grader::testing::compile_to_ptx;
using grader::testing::line_of;
using grader::testing::read_text;
namespace sim = grader::sim;

namespace {

std::string fixture(const std::string& name) {
    return std::string(GRADER_FIXTURES_DIR) + "/kernels/" + name;
}

std::vector<float> read_floats(const sim::GlobalMemory& memory, std::uint64_t address,
                               std::size_t count) {
    std::vector<float> values(count);
    memory.read(address, values.data(), count * sizeof(float));
    return values;
}

std::uint64_t upload(sim::GlobalMemory& memory, const std::vector<float>& values) {
    const std::uint64_t address = memory.allocate(values.size() * sizeof(float));
    memory.write(address, values.data(), values.size() * sizeof(float));
    return address;
}

const sim::SharedLineStats* line_stats(const std::vector<sim::SharedLineStats>& lines, int line,
                                       bool store) {
    for (const auto& l : lines) {
        if (l.line == line && l.store == store)
            return &l;
    }
    return nullptr;
}

}  // namespace

TEST_CASE("the probe's shared loads cost gcd(stride, 32) wavefronts and every thread sums 2048") {
    const std::string path = std::string(GRADER_SOURCE_DIR) + "/reference/probe_shared_stride.cu";
    const sim::Module module = sim::parse_ptx(compile_to_ptx(path, "probe.cu"));
    const int read_line = line_of(path, "acc += tile[");
    const int store_line = line_of(path, "tile[w] = in[w]");

    constexpr std::uint32_t kThreads = 256;
    constexpr std::uint32_t kBlocks = 4;  // block 1 runs; the others must stay untouched
    for (const int stride : {1, 2, 3, 4, 8, 16, 32, 33, 64, 65}) {
        CAPTURE(stride);
        sim::GlobalMemory memory;
        const std::uint64_t in = upload(memory, std::vector<float>(2048, 1.0f));
        const std::uint64_t out = upload(memory, std::vector<float>(kThreads * kBlocks, -1.0f));
        const std::size_t n = kThreads * kBlocks;
        sim::LaunchOptions options;
        options.blocks = {sim::Dim3{1, 0, 0}};  // indices are 0-based: y and z are 0
        const auto result =
            sim::launch(module, "probeSharedStride", {kBlocks, 1, 1}, {kThreads, 1, 1},
                        {sim::param_bytes(in), sim::param_bytes(out), sim::param_bytes(n),
                         sim::param_bytes(stride)},
                        memory, options);
        REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
        CHECK_FALSE(result.uninitialized_shared_read);

        const auto values = read_floats(memory, out, kThreads * kBlocks);
        for (std::uint32_t t = 0; t < kThreads * kBlocks; ++t) {
            const bool executed = t / kThreads == 1;
            if (values[t] != (executed ? 2048.0f : -1.0f)) {
                FAIL("thread " << t << " holds " << values[t]);
            }
        }

        const auto lines = sim::shared_accesses_by_line(result.counts);
        const auto* reads = line_stats(lines, read_line, false);
        REQUIRE(reads != nullptr);
        const std::uint64_t warps = kThreads / 32;
        CHECK(reads->requests == 2048 * warps);
        CHECK(reads->wavefronts ==
              reads->requests * static_cast<std::uint64_t>(std::gcd(stride, 32)));
        CHECK(reads->max_degree == static_cast<std::uint32_t>(std::gcd(stride, 32)));
        CHECK(reads->conflicts() == reads->wavefronts - reads->requests);
        CHECK(result.counts.shared_load_requests == 2048 * warps);

        const auto* stores = line_stats(lines, store_line, true);
        REQUIRE(stores != nullptr);
        CHECK(stores->requests == 2048 / 32);  // 8 stores per thread, 8 warps
        CHECK(stores->conflicts() == 0);

        REQUIRE(reads->representative);
        const auto& table = *reads->representative;
        for (unsigned lane = 0; lane < 32; ++lane) {
            REQUIRE(table.lanes[lane].active);
            CHECK(table.lanes[lane].bank == table.lanes[lane].word % 32);
        }
        if (stride == 16)
            CHECK(sim::describe_banks(table) == "16 lanes in each of 2 banks: 16-way conflict");
        if (stride == 3)
            CHECK(sim::describe_banks(table) == "32 lanes in 32 distinct banks, conflict free");
    }
}

TEST_CASE("the modeled cost orders the probe's strides as the degrees do") {
    const std::string path = std::string(GRADER_SOURCE_DIR) + "/reference/probe_shared_stride.cu";
    const sim::Module module = sim::parse_ptx(compile_to_ptx(path, "probe.cu"));
    auto cost = [&](int stride) {
        sim::GlobalMemory memory;
        const std::uint64_t in = upload(memory, std::vector<float>(2048, 1.0f));
        const std::uint64_t out = upload(memory, std::vector<float>(256, 0.0f));
        const std::size_t n = 256;
        const auto result = sim::launch(module, "probeSharedStride", {1, 1, 1}, {256, 1, 1},
                                        {sim::param_bytes(in), sim::param_bytes(out),
                                         sim::param_bytes(n), sim::param_bytes(stride)},
                                        memory, {});
        REQUIRE(result.status == sim::LaunchStatus::completed);
        return sim::modeled_cost(result.counts);
    };
    const double one = cost(1);
    CHECK(cost(3) == doctest::Approx(one));
    CHECK(cost(16) > 1.3 * cost(8));
    CHECK(cost(32) / one > 15.0);
}

TEST_CASE("the padded transpose's column read is conflict free and the unpadded one is 32-way") {
    for (const bool padded : {false, true}) {
        CAPTURE(padded);
        const std::string path = fixture(padded ? "transpose_tile33.cu" : "transpose_tile32.cu");
        const sim::Module module = sim::parse_ptx(compile_to_ptx(path, "transpose.cu"));
        constexpr int n = 64;
        std::vector<float> matrix(n * n);
        std::iota(matrix.begin(), matrix.end(), 0.0f);
        sim::GlobalMemory memory;
        const std::uint64_t in = upload(memory, matrix);
        const std::uint64_t out = upload(memory, std::vector<float>(n * n, -1.0f));
        const auto result = sim::launch(
            module, "transposeTiled", {n / 32, n / 32, 1}, {32, 8, 1},
            {sim::param_bytes(in), sim::param_bytes(out), sim::param_bytes(n)}, memory, {});
        REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
        CHECK_FALSE(result.uninitialized_shared_read);
        const auto transposed = read_floats(memory, out, n * n);
        for (int r = 0; r < n; ++r) {
            for (int c = 0; c < n; ++c) {
                if (transposed[r * n + c] != matrix[c * n + r])
                    FAIL("out[" << r << "][" << c << "] is wrong");
            }
        }
        const auto lines = sim::shared_accesses_by_line(result.counts);
        const auto* reads = line_stats(lines, line_of(path, "= tile[tx][ty + k]"), false);
        const auto* writes = line_stats(lines, line_of(path, "tile[ty + k][tx] ="), true);
        REQUIRE(reads != nullptr);
        REQUIRE(writes != nullptr);
        CHECK(reads->max_degree == (padded ? 1u : 32u));
        CHECK(reads->wavefronts == reads->requests * (padded ? 1u : 32u));
        CHECK(reads->requests == 4 * 8 * 4);  // 4 blocks, 8 warps, 4 reads each
        CHECK(writes->max_degree == 1);
        CHECK(writes->conflicts() == 0);
        if (!padded) {
            REQUIRE(reads->representative);
            CHECK(sim::describe_banks(*reads->representative) ==
                  "all 32 lanes in bank 0: 32-way conflict");
        }
    }
}

TEST_CASE("the course's tx * 2 % 32 demo broadcasts instead of conflicting") {
    const std::string path = fixture("broadcast_half_tile.cu");
    const sim::Module module = sim::parse_ptx(compile_to_ptx(path, "demo.cu"));
    std::vector<float> input(32 * 32);
    std::iota(input.begin(), input.end(), 0.0f);
    sim::GlobalMemory memory;
    const std::uint64_t in = upload(memory, input);
    const std::uint64_t out = upload(memory, std::vector<float>(32 * 32, 0.0f));
    const auto result = sim::launch(module, "broadcastHalfTile", {1, 1, 1}, {32, 32, 1},
                                    {sim::param_bytes(in), sim::param_bytes(out)}, memory, {});
    REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
    CHECK_FALSE(result.uninitialized_shared_read);  // it reads only what it wrote
    const auto lines = sim::shared_accesses_by_line(result.counts);
    const auto* reads = line_stats(lines, line_of(path, "output[index] = sharedData"), false);
    REQUIRE(reads != nullptr);
    CHECK(reads->requests == 32);
    CHECK(reads->max_degree == 1);
    CHECK(reads->conflicts() == 0);
    REQUIRE(reads->representative);
    // Lanes tx and tx + 16 share each word: 16 distinct words in 16 banks.
    const auto& lane0 = reads->representative->lanes[0];
    const auto& lane16 = reads->representative->lanes[16];
    CHECK(lane0.word == lane16.word);
    CHECK(lane0.bank_mates == ((1u << 0) | (1u << 16)));
    CHECK(sim::describe_banks(*reads->representative) ==
          "32 lanes in 16 distinct banks (16 share a word: broadcast), conflict free");
}

TEST_CASE("reading the columns the demo never wrote is reported with its line, thread and word") {
    const std::string path = fixture("reads_unwritten_columns.cu");
    const sim::Module module = sim::parse_ptx(compile_to_ptx(path, "unwritten.cu"));
    sim::GlobalMemory memory;
    const std::uint64_t in = upload(memory, std::vector<float>(32 * 32, 1.0f));
    const std::uint64_t out = upload(memory, std::vector<float>(32 * 32, 0.0f));
    sim::LaunchOptions poisoned;
    poisoned.poison_shared = true;  // as the GPU path poisons shared memory for the hidden input
    const auto result =
        sim::launch(module, "readsUnwrittenColumns", {1, 1, 1}, {32, 32, 1},
                    {sim::param_bytes(in), sim::param_bytes(out)}, memory, poisoned);
    REQUIRE(result.status == sim::LaunchStatus::completed);
    REQUIRE(result.uninitialized_shared_read);
    const auto& unwritten = *result.uninitialized_shared_read;
    CHECK(unwritten.where.line == line_of(path, "output[index] = sharedData"));
    CHECK(unwritten.where.file == "unwritten.cu");
    CHECK(unwritten.thread.thread.x == 1);  // the first odd column
    CHECK(unwritten.thread.thread.y == 0);
    CHECK(unwritten.word == 1);
    CHECK(unwritten.variable.find("sharedData") != std::string::npos);
    CHECK_FALSE(unwritten.written_later);  // no thread writes the odd columns
    // The poisoned words come back as NaN, as after the GPU path's poison kernel.
    const auto values = read_floats(memory, out, 32 * 32);
    CHECK(values[0] == 1.0f);
    CHECK(values[1] != values[1]);

    // Unpoisoned, the words hold what earlier blocks left there (drawn from the seed): still
    // reported, and not the poison.
    sim::GlobalMemory again;
    const std::uint64_t in2 = upload(again, std::vector<float>(32 * 32, 1.0f));
    const std::uint64_t out2 = upload(again, std::vector<float>(32 * 32, 0.0f));
    sim::LaunchOptions leftovers;
    leftovers.clock_seed = 5;
    const auto second =
        sim::launch(module, "readsUnwrittenColumns", {1, 1, 1}, {32, 32, 1},
                    {sim::param_bytes(in2), sim::param_bytes(out2)}, again, leftovers);
    REQUIRE(second.status == sim::LaunchStatus::completed);
    CHECK(second.uninitialized_shared_read);
    const auto left = read_floats(again, out2, 32 * 32);
    std::uint32_t bits = 0;
    std::memcpy(&bits, &left[1], 4);
    CHECK((bits & 0x7fc00000u) != 0x7fc00000u);  // a leftover, not the harness's NaN poison
    CHECK(left[0] == 1.0f);
}

TEST_CASE("a read ahead of the block's fill is told from a read of a word the block never writes") {
    const std::string path = fixture("reads_before_the_fill.cu");
    const sim::Module module = sim::parse_ptx(compile_to_ptx(path, "fill.cu"));
    const auto run = [&](const char* kernel) {
        sim::GlobalMemory memory;
        const std::uint64_t in = upload(memory, std::vector<float>(32 * 32, 1.0f));
        const std::uint64_t out = upload(memory, std::vector<float>(32 * 32, 0.0f));
        return sim::launch(module, kernel, {2, 1, 1}, {32, 32, 1},
                           {sim::param_bytes(in), sim::param_bytes(out)}, memory, {});
    };
    // Warp 0 reads row 1 before warp 1 fills it: the word is written later in the block, so the
    // read is a missing barrier's, and the report names the fill.
    const auto ahead = run("readsBeforeTheFill");
    REQUIRE(ahead.uninitialized_shared_read);
    CHECK(ahead.uninitialized_shared_read->barriers_before == 0);
    CHECK(ahead.uninitialized_shared_read->written_later);
    CHECK(ahead.uninitialized_shared_read->where.line ==
          line_of(path, "output[index] = tile[(ty + 1)"));
    // The spare array is read for what was left there and never written: a tile never written,
    // though the kernel stores to shared memory before the read with no barrier.
    const auto spare = run("readsSpareArray");
    REQUIRE(spare.uninitialized_shared_read);
    CHECK(spare.uninitialized_shared_read->barriers_before == 0);
    CHECK_FALSE(spare.uninitialized_shared_read->written_later);
    CHECK(spare.uninitialized_shared_read->variable.find("spare") != std::string::npos);
}

TEST_CASE("a kernel that never finishes ends with budget_exceeded") {
    // It waits on a global flag another block could set: the block's state repeats, but what it
    // reads comes from outside it, so it runs to its budget (past where a block's loops are
    // watched, Executor::kWatchLoopsFrom), not stopped as a loop.
    const std::string path = fixture("spins_forever.cu");
    const sim::Module module = sim::parse_ptx(compile_to_ptx(path, "spin.cu"));
    sim::GlobalMemory memory;
    const std::uint64_t flag = memory.allocate(4);
    const std::uint64_t out = memory.allocate(32 * 4);
    sim::LaunchOptions options;
    options.instruction_budget = 3'000'000;
    const auto result =
        sim::launch(module, "spinsForever", {1, 1, 1}, {64, 1, 1},
                    {sim::param_bytes(flag), sim::param_bytes(out)}, memory, options);
    CHECK(result.status == sim::LaunchStatus::budget_exceeded);
    CHECK_FALSE(result.loops_after);
    CHECK(result.counts.warp_instructions == 3'000'000);
    REQUIRE(result.last_location);
    CHECK(result.last_location->line == line_of(path, "if (*flag == 12345)"));
    CHECK(result.message.find("timed out") != std::string::npos);
}

TEST_CASE("a block that can never end is stopped when its state comes back, long before budget") {
    const std::string path = fixture("loops_without_end.cu");
    const sim::Module module = sim::parse_ptx(compile_to_ptx(path, "loops.cu"));
    sim::LaunchOptions options;
    options.instruction_budget = 400'000'000;
    options.block_instruction_budget = 100'000'000;
    struct Ran {
        sim::LaunchResult result;
        std::vector<unsigned> out;  // each thread's word
    };
    // Two blocks of 128 threads, `out` first among the parameters.
    const auto run = [&](const char* entry, std::vector<std::vector<std::byte>> more) {
        sim::GlobalMemory memory;
        const std::uint64_t out = memory.allocate(128 * 4);
        more.insert(more.begin(), sim::param_bytes(out));
        Ran ran{
            sim::launch(module, entry, {2, 1, 1}, {128, 1, 1}, std::move(more), memory, options),
            std::vector<unsigned>(128)};
        memory.read(out, ran.out.data(), ran.out.size() * 4);
        return ran;
    };
    SUBCASE("threads waiting on a shared flag set after the wait: never_ends' bug") {
        const sim::LaunchResult result = run("spinsOnSharedFlag", {}).result;
        CHECK(result.status == sim::LaunchStatus::budget_exceeded);
        REQUIRE(result.loops_after);
        CHECK(*result.loops_after >= std::uint64_t{1} << 20);
        CHECK(*result.loops_after < 4'000'000);
        REQUIRE(result.over_block_budget);
        REQUIRE(result.last_location);
        CHECK(result.last_location->line == line_of(path, "while (ready == 0) {"));
        CHECK(result.message.find("can never end") != std::string::npos);
        CHECK(result.instructions_run < 10'000'000);
    }
    SUBCASE("a store in an endless loop: what a block stores it does not read back") {
        const sim::LaunchResult result = run("storesTheSameForever", {}).result;
        CHECK(result.status == sim::LaunchStatus::budget_exceeded);
        CHECK(result.loops_after);
    }
    SUBCASE("a thread counting to 3 million in shared memory ends with its count") {
        const unsigned rounds = 3'000'000;
        const Ran ran = run("countsInShared", {sim::param_bytes(rounds)});
        REQUIRE(ran.result.status == sim::LaunchStatus::completed);
        CHECK_FALSE(ran.result.loops_after);
        CHECK(std::all_of(ran.out.begin(), ran.out.end(), [&](unsigned c) { return c == rounds; }));
    }
    SUBCASE("counting to 2 million in local memory ends with its count") {
        const unsigned rounds = 2'000'000;
        const unsigned which = 5;
        const Ran ran = run("countsInLocal", {sim::param_bytes(rounds), sim::param_bytes(which)});
        REQUIRE(ran.result.status == sim::LaunchStatus::completed);
        CHECK(std::all_of(ran.out.begin(), ran.out.end(), [&](unsigned c) { return c == rounds; }));
    }
}

TEST_CASE("a global write past what is mapped is a fault naming the line and the thread") {
    const std::string path = fixture("writes_past_the_end.cu");
    const sim::Module module = sim::parse_ptx(compile_to_ptx(path, "past_end.cu"));
    sim::GlobalMemory memory;
    // Past the end of a small buffer, a write lands in its 2 MiB granule, as on a GPU.
    const std::uint64_t small = memory.allocate(64 * sizeof(float));
    const auto landed = sim::launch(module, "writesPastTheEnd", {1, 1, 1}, {64, 1, 1},
                                    {sim::param_bytes(small)}, memory, {});
    CHECK(landed.status == sim::LaunchStatus::completed);
    // Past the end of the granules, it faults: 64 floats at the end of a 2 MiB buffer.
    const std::uint64_t granule = 2 << 20;
    const std::uint64_t out = memory.allocate(granule) + granule - 64 * sizeof(float);
    const auto result = sim::launch(module, "writesPastTheEnd", {1, 1, 1}, {64, 1, 1},
                                    {sim::param_bytes(out)}, memory, {});
    REQUIRE(result.status == sim::LaunchStatus::fault);
    REQUIRE(result.fault);
    CHECK(result.fault->kind == "out_of_bounds");
    CHECK(result.fault->where.line == line_of(path, "out[i + 1] ="));
    CHECK(result.fault->thread.thread.x == 63);
    CHECK(result.fault->address == out + 64 * sizeof(float));
    // FILE:LINE:COLUMN, as every location the grader writes.
    CHECK(result.message.find("past_end.cu:" + std::to_string(result.fault->where.line) + ":" +
                              std::to_string(result.fault->where.column) + " (") !=
          std::string::npos);
}

TEST_CASE("an unsupported instruction is reported with its opcode and line, not a crash") {
    const sim::Module module =
        sim::parse_ptx(read_text(fixture("uses_unsupported_instruction.ptx")));
    sim::GlobalMemory memory;
    const std::uint64_t out = memory.allocate(32 * 4);
    const auto result = sim::launch(module, "usesTexture", {1, 1, 1}, {32, 1, 1},
                                    {sim::param_bytes(out)}, memory, {});
    REQUIRE(result.status == sim::LaunchStatus::unsupported);
    REQUIRE(result.unsupported);
    CHECK(result.unsupported->opcode == "tex.1d.v4.f32.s32");
    CHECK(result.unsupported->where.line == 7);
    CHECK(result.unsupported->where.file == "uses_texture.cu");
}

TEST_CASE("malformed PTX is a ParseError with its line") {
    const std::string ptx =
        ".version 9.0\n.target sm_90\n.address_size 64\n"
        ".visible .entry broken()\n{\n\t.reg .b32 %r<2>;\n\tadd.s32 %r1, %r7, 1;\n\tret;\n}\n";
    try {
        (void)sim::parse_ptx(ptx);
        FAIL("no ParseError");
    } catch (const sim::ParseError& error) {
        CHECK(error.line() == 7);
        CHECK(error.message().find("%r7") != std::string::npos);
    }
}

TEST_CASE("wrong parameter sizes are the harness's fault") {
    const std::string path = std::string(GRADER_SOURCE_DIR) + "/reference/probe_shared_stride.cu";
    const sim::Module module = sim::parse_ptx(compile_to_ptx(path, "probe.cu"));
    sim::GlobalMemory memory;
    const int n = 256;  // size_t in the ABI
    CHECK_THROWS_AS(
        sim::launch(module, "probeSharedStride", {1, 1, 1}, {256, 1, 1},
                    {sim::param_bytes(std::uint64_t{0}), sim::param_bytes(std::uint64_t{0}),
                     sim::param_bytes(n), sim::param_bytes(1)},
                    memory, {}),
        std::invalid_argument);
}

TEST_CASE("students' variants of the probe sum 2048 and show the same degrees") {
    struct Variant {
        const char* file;
        std::uint32_t dynamic_shared_bytes;
    };
    for (const Variant variant :
         {Variant{"probe_modulo_index.cu", 0}, Variant{"probe_unrolled_once_volatile.cu", 0},
          Variant{"probe_dynamic_shared.cu", 8192}, Variant{"probe_float4_tile_load.cu", 0}}) {
        CAPTURE(variant.file);
        const std::string path = fixture(variant.file);
        const sim::Module module = sim::parse_ptx(compile_to_ptx(path, "probe.cu"));
        for (const int stride : {1, 3, 8, 16, 32}) {
            CAPTURE(stride);
            sim::GlobalMemory memory;
            const std::uint64_t in = upload(memory, std::vector<float>(2048, 1.0f));
            const std::uint64_t out = upload(memory, std::vector<float>(256, -1.0f));
            const std::size_t n = 256;
            sim::LaunchOptions options;
            options.dynamic_shared_bytes = variant.dynamic_shared_bytes;
            const auto result = sim::launch(module, "probeSharedStride", {1, 1, 1}, {256, 1, 1},
                                            {sim::param_bytes(in), sim::param_bytes(out),
                                             sim::param_bytes(n), sim::param_bytes(stride)},
                                            memory, options);
            REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
            CHECK_FALSE(result.uninitialized_shared_read);
            const auto values = read_floats(memory, out, 256);
            CHECK(std::count(values.begin(), values.end(), 2048.0f) == 256);
            CHECK(result.counts.shared_load_requests == 2048 * 8);
            CHECK(result.counts.shared_load_wavefronts ==
                  result.counts.shared_load_requests *
                      static_cast<std::uint64_t>(std::gcd(stride, 32)));
            // Tile stores are conflict free, 16-byte ones included (4 phases of 8 lanes).
            CHECK(result.counts.shared_store_wavefronts ==
                  result.counts.shared_store_ideal_wavefronts);
            if (std::string(variant.file) == "probe_float4_tile_load.cu") {
                CHECK(result.counts.shared_store_requests == 2048 / 4 / 32);
                CHECK(result.counts.shared_store_wavefronts ==
                      4 * result.counts.shared_store_requests);
            }
        }
    }
}

TEST_CASE(
    "divergent lanes, barriers, local arrays, shuffles and atomics compute what the host does") {
    const std::string path = fixture("divergent_mix.cu");
    const sim::Module module = sim::parse_ptx(compile_to_ptx(path, "mix.cu"));
    constexpr int kThreads = 256;
    const std::vector<int> in = {3, -2, 5, 7, 1, 0, 4, 9};
    std::vector<signed char> bytes(kThreads);
    for (int t = 0; t < kThreads; ++t)
        bytes[t] = static_cast<signed char>(t * 37 - 100);

    sim::GlobalMemory memory;
    const std::uint64_t in_address = memory.allocate(in.size() * sizeof(int));
    memory.write(in_address, in.data(), in.size() * sizeof(int));
    const std::uint64_t bytes_address = memory.allocate(bytes.size());
    memory.write(bytes_address, bytes.data(), bytes.size());
    const std::uint64_t out = memory.allocate(kThreads * 6 * sizeof(int));
    const std::uint64_t fout = memory.allocate(kThreads * sizeof(float));
    const auto result = sim::launch(module, "divergentMix", {1, 1, 1}, {kThreads, 1, 1},
                                    {sim::param_bytes(in_address), sim::param_bytes(bytes_address),
                                     sim::param_bytes(out), sim::param_bytes(fout)},
                                    memory, {});
    REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);

    std::vector<int> s(kThreads);
    for (int t = 0; t < kThreads; ++t) {
        int v = 0;
        for (int i = 0; i <= t % 7; ++i)
            v += in[i];
        if (t & 1) {
            v = v * 3 - 1;
        } else if (t % 3 == 0) {
            v = -v;
        } else {
            v = v / 5;
        }
        s[t] = v;
    }
    std::vector<int> got(kThreads * 6);
    memory.read(out, got.data(), got.size() * sizeof(int));
    std::vector<float> got_float(kThreads);
    memory.read(fout, got_float.data(), got_float.size() * sizeof(float));
    for (int t = 0; t < kThreads; ++t) {
        CAPTURE(t);
        int warp_sum = 0;
        for (int l = t / 32 * 32; l < t / 32 * 32 + 32; ++l)
            warp_sum += s[l];
        CHECK(got[t * 6 + 0] == s[t]);
        CHECK(got[t * 6 + 1] == s[(t + 1) % kThreads]);
        CHECK(got[t * 6 + 2] == in[in[t % 8] & 7] * t);
        CHECK(got[t * 6 + 3] == warp_sum);
        CHECK(got[t * 6 + 4] == kThreads);
        CHECK(got[t * 6 + 5] == bytes[t] * 7 + (t >> 2));
        CHECK(got_float[t] == std::sqrt(static_cast<float>(t)) + static_cast<float>(s[t]) / 3.0f);
    }
}

TEST_CASE("printf runs without output and a call of a device function is reported as unsupported") {
    SUBCASE("printf") {
        const std::string path = fixture("calls_printf.cu");
        const sim::Module module = sim::parse_ptx(compile_to_ptx(path, "printf.cu"));
        sim::GlobalMemory memory;
        const std::uint64_t out = memory.allocate(64 * sizeof(float));
        const int n = 5;
        const auto result = sim::launch(module, "callsPrintf", {1, 1, 1}, {64, 1, 1},
                                        {sim::param_bytes(out), sim::param_bytes(n)}, memory, {});
        REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
        CHECK(result.counts.printf_calls == 1);
        const auto values = read_floats(memory, out, 64);
        CHECK(std::count(values.begin(), values.end(), 5.0f) == 64);
    }
    SUBCASE("printf's result is the arguments its format parsed, as CUDA's") {
        const sim::Module module =
            sim::parse_ptx(compile_to_ptx(fixture("printf_results.cu"), "results.cu"));
        sim::GlobalMemory memory;
        const std::uint64_t out = memory.allocate(32 * sizeof(std::int32_t));
        const int n = 5;
        const auto result = sim::launch(module, "printfResults", {1, 1, 1}, {32, 1, 1},
                                        {sim::param_bytes(out), sim::param_bytes(n)}, memory, {});
        REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
        CHECK(result.counts.printf_calls == 4);
        std::vector<std::int32_t> got(32);
        memory.read(out, got.data(), got.size() * sizeof(std::int32_t));
        CHECK(got[0] == 0);  // no argument
        CHECK(got[1] == 2);
        CHECK(got[2] == 1);  // %% is no argument
        CHECK(got[3] == 3);
        CHECK(std::count(got.begin() + 4, got.end(), -100) == 28);
    }
    SUBCASE("a call") {
        const std::string path = fixture("calls_noinline_function.cu");
        const sim::Module module = sim::parse_ptx(compile_to_ptx(path, "call.cu"));
        sim::GlobalMemory memory;
        const std::uint64_t out = memory.allocate(64 * sizeof(float));
        const int n = 5;
        const auto result = sim::launch(module, "callsNoinlineFunction", {1, 1, 1}, {64, 1, 1},
                                        {sim::param_bytes(out), sim::param_bytes(n)}, memory, {});
        REQUIRE(result.status == sim::LaunchStatus::unsupported);
        REQUIRE(result.unsupported);
        CHECK(result.unsupported->opcode.find("call") == 0);
        CHECK(result.unsupported->opcode.find("twice") != std::string::npos);
        CHECK(result.unsupported->where.line == line_of(path, "out[threadIdx.x] = twice("));
    }
}

TEST_CASE("8- and 16-byte shared loads cost what Nsight Compute counted on an H200") {
    const std::string path = fixture("wide_shared_loads.cu");
    const sim::Module module = sim::parse_ptx(compile_to_ptx(path, "wide.cu"));
    struct Pattern {
        const char* kernel;
        int stride;
        int share;  // 2^share lanes read the same element
        std::uint64_t wavefronts_per_request;
    };
    // Measured with ncu 2025.3 (l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum per
    // smsp__sass_inst_executed_op_shared_ld.sum), one warp, 2026-12-02.
    const Pattern patterns[] = {
        {"loads64", 0, 0, 1},   {"loads64", 1, 0, 2},   {"loads64", 2, 0, 4},
        {"loads64", 3, 0, 2},   {"loads64", 4, 0, 8},   {"loads64", 8, 0, 16},
        {"loads64", 16, 0, 32}, {"loads64", 32, 0, 32}, {"loads64", 1, 1, 1},
        {"loads64", 2, 1, 2},   {"loads64", 1, 4, 1},   {"loads128", 0, 0, 2},
        {"loads128", 1, 0, 4},  {"loads128", 2, 0, 8},  {"loads128", 3, 0, 4},
        {"loads128", 4, 0, 16}, {"loads128", 8, 0, 32}, {"loads128", 1, 1, 2},
        {"loads128", 1, 2, 2},  {"loads128", 1, 3, 2},
    };
    for (const Pattern& p : patterns) {
        CAPTURE(p.kernel);
        CAPTURE(p.stride);
        CAPTURE(p.share);
        sim::GlobalMemory memory;
        const std::uint64_t out = memory.allocate(32 * sizeof(float));
        const auto result = sim::launch(
            module, p.kernel, {1, 1, 1}, {32, 1, 1},
            {sim::param_bytes(out), sim::param_bytes(p.stride), sim::param_bytes(p.share)}, memory,
            {});
        REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);
        CHECK(result.counts.shared_load_requests == 64);
        CHECK(result.counts.shared_load_wavefronts == 64 * p.wavefronts_per_request);
    }
}

TEST_CASE("integer, double and correctly rounded float results equal an H200's, bit for bit") {
    // tests/fixtures/kernels/differential_ops_h200/ holds what the same NVRTC PTX wrote on an H200
    // (driver API, grid 2 x 64 threads, 2026-12-02).
    const std::string path = fixture("differential_ops.cu");
    const sim::Module module = sim::parse_ptx(compile_to_ptx(path, "differential.cu"));
    constexpr int kThreads = 128, kInts = 24, kFloats = 16, kDoubles = 6;
    sim::GlobalMemory memory;
    const std::uint64_t ints = memory.allocate(kThreads * kInts * 4);
    const std::uint64_t floats = memory.allocate(kThreads * kFloats * 4);
    const std::uint64_t doubles = memory.allocate(kThreads * kDoubles * 8);
    const int n = kThreads;
    const auto result = sim::launch(module, "differentialOps", {2, 1, 1}, {64, 1, 1},
                                    {sim::param_bytes(ints), sim::param_bytes(floats),
                                     sim::param_bytes(doubles), sim::param_bytes(n)},
                                    memory, {});
    REQUIRE_MESSAGE(result.status == sim::LaunchStatus::completed, result.message);

    auto gpu = [](const std::string& name) {
        return read_text(fixture("differential_ops_h200/" + name));
    };
    const std::string gpu_ints = gpu("ints.bin"), gpu_floats = gpu("floats.bin"),
                      gpu_doubles = gpu("doubles.bin");
    REQUIRE(gpu_ints.size() == kThreads * kInts * 4);
    REQUIRE(gpu_floats.size() == kThreads * kFloats * 4);
    REQUIRE(gpu_doubles.size() == kThreads * kDoubles * 8);
    std::vector<int> sim_ints(kThreads * kInts);
    std::vector<float> sim_floats(kThreads * kFloats);
    std::vector<double> sim_doubles(kThreads * kDoubles);
    memory.read(ints, sim_ints.data(), gpu_ints.size());
    memory.read(floats, sim_floats.data(), gpu_floats.size());
    memory.read(doubles, sim_doubles.data(), gpu_doubles.size());
    for (int k = 0; k < kThreads * kInts; ++k) {
        int expected = 0;
        std::memcpy(&expected, gpu_ints.data() + 4 * k, 4);
        if (sim_ints[k] != expected)
            FAIL("thread " << k / kInts << " int " << k % kInts);
    }
    for (int k = 0; k < kThreads * kDoubles; ++k) {
        double expected = 0;
        std::memcpy(&expected, gpu_doubles.data() + 8 * k, 8);
        if (sim_doubles[k] != expected)
            FAIL("thread " << k / kDoubles << " double " << k % kDoubles);
    }
    for (int k = 0; k < kThreads * kFloats; ++k) {
        float expected = 0;
        std::memcpy(&expected, gpu_floats.data() + 4 * k, 4);
        const int slot = k % kFloats;
        // Slot 1 (x * y - y): ptxas contracts the PTX mul and sub into one FMA, the simulator
        // rounds twice. Slots 10 to 15 are approximate functions. Both within 2 ulp.
        const bool exact = slot != 1 && slot < 10;
        if (exact) {
            if (sim_floats[k] != expected)
                FAIL("thread " << k / kFloats << " float " << slot);
        } else if (std::fabs(sim_floats[k] - expected) > 2.5e-7f * std::fabs(expected)) {
            FAIL("thread " << k / kFloats << " float " << slot << ": " << sim_floats[k] << " vs "
                           << expected);
        }
    }
}

TEST_CASE("a launch past the kernel's launch bounds is refused, as a GPU refuses it") {
    const std::string ptx = compile_to_ptx(fixture("launch_bounds.cu"), "bounds.cu");
    const auto run = [](const std::string& text, sim::Dim3 block) {
        const sim::Module module = sim::parse_ptx(text);
        sim::GlobalMemory memory;
        const std::uint64_t in = upload(memory, std::vector<float>(128, 1.0f));
        const std::uint64_t out = upload(memory, std::vector<float>(128, 0.0f));
        return sim::launch(module, "boundedCopy", {1, 1, 1}, block,
                           {sim::param_bytes(in), sim::param_bytes(out)}, memory, {});
    };
    CHECK(run(ptx, {64, 1, 1}).status == sim::LaunchStatus::completed);
    const auto over = run(ptx, {128, 1, 1});
    REQUIRE(over.status == sim::LaunchStatus::fault);
    REQUIRE(over.fault);
    CHECK(over.fault->kind == "launch");
    CHECK(over.message.find("allow 64 threads a block; this launch has 128") != std::string::npos);

    // .reqntid (a block of exactly these threads), in the same place of the PTX.
    const std::string bounds = ".maxntid 64, 1, 1";
    REQUIRE(ptx.find(bounds) != std::string::npos);
    std::string exact = ptx;
    exact.replace(exact.find(bounds), bounds.size(), ".reqntid 32, 2, 1");
    CHECK(run(exact, {32, 2, 1}).status == sim::LaunchStatus::completed);
    const auto other = run(exact, {64, 1, 1});
    CHECK(other.status == sim::LaunchStatus::fault);
    CHECK(other.message.find("(32, 2, 1) threads (.reqntid)") != std::string::npos);
}

TEST_CASE("a register file's poison is xorshift64*'s stream, whether drawn four places at once") {
    // One step at a time, as the stream is defined: the state's low bit set, then each word the
    // output of the next step.
    const auto one_step_at_a_time = [](std::uint64_t state, std::size_t count) {
        std::vector<std::uint64_t> words(count);
        std::uint64_t x = state | 1;
        for (std::uint64_t& word : words) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            word = x * 0x2545f4914f6cdd1dull;
        }
        return std::pair<std::vector<std::uint64_t>, std::uint64_t>(words, x);
    };
    // Short runs, runs of a launch's register files (a multiple of 32 words) and a long run
    // whose length is no multiple of four, from several states.
    for (const std::uint64_t state : {0ull, 1ull, 0x9e3779b97f4a7c15ull, ~0ull}) {
        for (const std::size_t count :
             {std::size_t{1}, std::size_t{4}, std::size_t{1020}, std::size_t{1024},
              std::size_t{1184}, std::size_t{16384}, std::size_t{4098}}) {
            CAPTURE(state);
            CAPTURE(count);
            const auto [expected, expected_state] = one_step_at_a_time(state, count);
            std::vector<std::uint64_t> words(count);
            const std::uint64_t next = sim::detail::poison_stream(state, words.data(), count);
            CHECK(words == expected);
            CHECK(next == expected_state);
        }
    }
    // The next run goes on from where the last ended, as a launch's files do block after block.
    std::vector<std::uint64_t> first(2048);
    std::vector<std::uint64_t> second(2048);
    const std::uint64_t after_first = sim::detail::poison_stream(42, first.data(), first.size());
    sim::detail::poison_stream(after_first, second.data(), second.size());
    CHECK(second == one_step_at_a_time(after_first, 2048).first);
    CHECK(second != first);
}
