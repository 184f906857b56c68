// A launch of the whole grid that looks closely at a few blocks (LaunchOptions::checked): every
// block runs and writes; only the checked ones are counted; and blocks that do the same work
// until something tells them apart share it, which no kernel can tell from each doing it.

#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sim/sim.hpp"
#include "sim_kernels.hpp"

using grader::testing::compile_to_ptx;
using grader::testing::sim_fixture;
namespace sim = grader::sim;

namespace {

const sim::Module& module() {
    static const sim::Module m =
        sim::parse_ptx(compile_to_ptx(sim_fixture("whole_grid.cu"), "whole_grid.cu"));
    return m;
}

constexpr std::uint32_t kBlocks = 160;
constexpr std::uint32_t kThreads = 128;
constexpr std::uint32_t kPoison = 0x7fc0dead;

struct Outcome {
    sim::LaunchResult result;
    std::vector<std::uint32_t> out;  // the output words' bits
};

// `entry` over the grid, its output poisoned first. share: tell the launch which buffer is the
// input, so that blocks may share their work; checked: the blocks it reports on.
Outcome run(const char* entry, std::vector<std::vector<std::byte>> extra, bool share,
            const std::vector<sim::Dim3>& checked, std::uint64_t seed = 5,
            const sim::LaunchOptions& given = {}) {
    sim::GlobalMemory memory(seed);
    std::vector<float> input(1024);
    for (std::size_t k = 0; k < input.size(); ++k)
        input[k] = static_cast<float>(k % 13);
    const std::uint64_t in = memory.allocate(input.size() * 4);
    memory.write(in, input.data(), input.size() * 4);
    const std::size_t n = std::size_t{kBlocks} * kThreads;
    const std::uint64_t out = memory.allocate(n * 4);
    const std::vector<std::uint32_t> poison(n, kPoison);
    memory.write(out, poison.data(), n * 4);
    sim::LaunchOptions options = given;
    options.clock_seed = seed;
    options.checked = checked;
    if (share) {
        options.input_address = in;
        options.input_bytes = input.size() * 4;
    }
    std::vector<std::vector<std::byte>> params = {sim::param_bytes(in), sim::param_bytes(out)};
    params.insert(params.end(), extra.begin(), extra.end());
    Outcome outcome;
    outcome.result =
        sim::launch(module(), entry, {kBlocks, 1, 1}, {kThreads, 1, 1}, params, memory, options);
    outcome.out.resize(n);
    memory.read(out, outcome.out.data(), n * 4);
    return outcome;
}

const std::vector<sim::Dim3> kChecked = {{0, 0, 0}, {41, 0, 0}, {159, 0, 0}};

// What `body` returns, run in a child, and the child's peak resident memory in KiB as wait4
// reports it (the test process itself, NVRTC loaded, is part of it).
struct InChild {
    bool exited = false;
    bool answered = false;
    std::array<std::uint64_t, 2> seen{};
    long peak_kib = 0;
};

template <typename Body>
InChild run_in_child(Body body) {
    InChild result;
    int pipe_ends[2];
    REQUIRE(pipe(pipe_ends) == 0);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        const std::array<std::uint64_t, 2> seen = body();
        const bool written = write(pipe_ends[1], seen.data(), sizeof seen) == sizeof seen;
        _exit(written ? 0 : 1);
    }
    close(pipe_ends[1]);
    result.answered = read(pipe_ends[0], result.seen.data(), sizeof result.seen) ==
                      static_cast<ssize_t>(sizeof result.seen);
    close(pipe_ends[0]);
    int status = 0;
    rusage usage{};
    REQUIRE(wait4(child, &status, 0, &usage) == child);
    result.exited = WIFEXITED(status);
    result.peak_kib = usage.ru_maxrss;
    return result;
}

}  // namespace

TEST_CASE("a launch runs every block and counts only the checked ones") {
    const Outcome all =
        run("sharedWorkThen", {sim::param_bytes(300), sim::param_bytes(0)}, false, {});
    const Outcome few =
        run("sharedWorkThen", {sim::param_bytes(300), sim::param_bytes(0)}, false, kChecked);
    REQUIRE_MESSAGE(few.result.status == sim::LaunchStatus::completed, few.result.message);
    CHECK(few.result.blocks_run == kBlocks);
    CHECK(few.result.counts.blocks_executed == kChecked.size());
    CHECK(all.result.counts.blocks_executed == kBlocks);
    // Every block's instructions count toward the budget; the counts are the checked blocks'.
    CHECK(few.result.instructions_run == all.result.instructions_run);
    CHECK(few.result.counts.warp_instructions * kBlocks ==
          all.result.counts.warp_instructions * kChecked.size());
    CHECK(few.result.counts.shared_load_requests * kBlocks ==
          all.result.counts.shared_load_requests * kChecked.size());
    CHECK(few.out == all.out);
}

TEST_CASE("blocks that share their work write exactly what each writes doing it alone") {
    // What follows the shared loop: nothing, the clock, a shared word nothing wrote (each
    // block's own leftovers), a global word another block writes, a local array.
    for (const int ending : {0, 1, 2, 4}) {
        CAPTURE(ending);
        for (const std::uint64_t seed : {1ull, 9ull}) {
            CAPTURE(seed);
            const Outcome alone =
                run("sharedWorkThen", {sim::param_bytes(400), sim::param_bytes(ending)}, false,
                    kChecked, seed);
            const Outcome shared =
                run("sharedWorkThen", {sim::param_bytes(400), sim::param_bytes(ending)}, true,
                    kChecked, seed);
            REQUIRE_MESSAGE(shared.result.status == sim::LaunchStatus::completed,
                            shared.result.message);
            CHECK(shared.result.blocks_run == kBlocks);
            CHECK(shared.out == alone.out);
            CHECK(shared.result.counts.warp_instructions == alone.result.counts.warp_instructions);
            CHECK(shared.result.counts.shared_load_wavefronts ==
                  alone.result.counts.shared_load_wavefronts);
            CHECK(shared.result.instructions_run == alone.result.instructions_run);
        }
    }
    // Each block's leftovers are its own, as each reads alone.
    const Outcome leftovers =
        run("sharedWorkThen", {sim::param_bytes(400), sim::param_bytes(2)}, true, kChecked);
    CHECK(leftovers.out[0] != leftovers.out[100 * kThreads]);
}

TEST_CASE("a block that reads what another block writes does its own work, and sees it") {
    const Outcome shared =
        run("sharedWorkThen", {sim::param_bytes(200), sim::param_bytes(3)}, true, kChecked);
    REQUIRE_MESSAGE(shared.result.status == sim::LaunchStatus::completed, shared.result.message);
    CHECK(shared.result.blocks_run == kBlocks);
    const Outcome plain =
        run("sharedWorkThen", {sim::param_bytes(200), sim::param_bytes(0)}, true, kChecked);
    for (std::uint32_t b = 0; b < kBlocks; ++b) {
        CAPTURE(b);
        float with_flag, sum;
        std::memcpy(&with_flag, &shared.out[b * kThreads], 4);
        std::memcpy(&sum, &plain.out[b * kThreads], 4);
        // The next block's flag, where it had been set by then (it is b + 2), or 0.
        const float seen = with_flag - sum;
        CHECK((seen == 0.0f || seen == static_cast<float>((b + 1) % kBlocks + 1)));
    }
}

TEST_CASE("blocks share work that comes after reading their index, where the index waits") {
    // The index read first and used only for where the sum goes: the loop is still shared, and
    // each block computes its index again from its own.
    const Outcome alone = run("identityFirst", {sim::param_bytes(500)}, false, kChecked);
    const Outcome shared = run("identityFirst", {sim::param_bytes(500)}, true, kChecked);
    REQUIRE_MESSAGE(shared.result.status == sim::LaunchStatus::completed, shared.result.message);
    CHECK(shared.out == alone.out);
    CHECK(shared.result.instructions_run == alone.result.instructions_run);
    // Every block but the one recorded, the checked ones too: nothing the recorded block did
    // depended on the order its warps ran in, and what follows its loop is a global store. The
    // checked blocks' counts are those of each run alone.
    CHECK(shared.result.blocks_sharing_work == kBlocks - 1);
    CHECK(alone.result.blocks_sharing_work == 0);
    CHECK(shared.result.counts.blocks_executed == kChecked.size());
    CHECK(shared.result.counts.warp_instructions == alone.result.counts.warp_instructions);
    CHECK(shared.result.counts.thread_instructions == alone.result.counts.thread_instructions);
    CHECK(shared.result.counts.shared_load_requests == alone.result.counts.shared_load_requests);
    CHECK(shared.result.counts.shared_load_wavefronts ==
          alone.result.counts.shared_load_wavefronts);
    CHECK(shared.result.counts.global_store_sectors == alone.result.counts.global_store_sectors);
    // A branch on the index parts ways where it is taken: block 77's, and only it, is left out.
    const Outcome skips = run("skipsBlock77", {sim::param_bytes(300)}, true, kChecked);
    CHECK(skips.result.blocks_sharing_work > 0);
}

TEST_CASE("a block whose warps read the tile before the others fill it shares the loop after") {
    // Each warp waits at its first read of a word not yet written; once the warps after it have
    // written them, it goes on, and the loop is recorded as any shared loop is.
    const Outcome shared = run("missingBarrier", {sim::param_bytes(2000)}, true, kChecked);
    REQUIRE_MESSAGE(shared.result.status == sim::LaunchStatus::completed, shared.result.message);
    CHECK(shared.result.blocks_run == kBlocks);
    // The checked blocks run from their start: the recorded block's warps waited for each
    // other, which a checked block's own run does not.
    CHECK(shared.result.blocks_sharing_work == kBlocks - kChecked.size());
    // A block runs 4 warps x 2,000 reads, 8,000 iterations of the loop: each block that shares
    // runs only the store after it itself.
    const std::uint64_t per_block = shared.result.instructions_run / kBlocks;
    CHECK(shared.result.instructions_shared >
          shared.result.blocks_sharing_work * (per_block - per_block / 50));
    // Every block read the tile whole: the sum of the words each lane reads, in any order.
    const Outcome synced =
        run("sharedWorkThen", {sim::param_bytes(2000), sim::param_bytes(0)}, true, kChecked);
    for (std::uint32_t b = 0; b < kBlocks; ++b) {
        if (std::find(kChecked.begin(), kChecked.end(), sim::Dim3{b, 0, 0}) != kChecked.end())
            continue;  // a checked block runs alone, reading what the warps after it left
        CAPTURE(b);
        CHECK(std::equal(&shared.out[b * kThreads], &shared.out[(b + 1) * kThreads],
                         &synced.out[b * kThreads]));
    }
}

TEST_CASE("blocks that read words their block never wrote share the loop, each its own leftovers") {
    // Past `filled` words each block reads its own leftovers. The recording keeps those loads
    // and what is computed from them; each block not checked computes them again with its own.
    for (const int mode : {0, 1, 2, 3}) {
        for (const int filled : {512, 1000}) {
            CAPTURE(mode);
            CAPTURE(filled);
            const std::vector<std::vector<std::byte>> args = {
                sim::param_bytes(1500), sim::param_bytes(filled), sim::param_bytes(mode)};
            const Outcome alone = run("partTile", args, false, kChecked);
            const Outcome shared = run("partTile", args, true, kChecked);
            REQUIRE_MESSAGE(shared.result.status == sim::LaunchStatus::completed,
                            shared.result.message);
            CHECK(shared.out == alone.out);
            CHECK(shared.result.instructions_run == alone.result.instructions_run);
            CHECK(shared.result.counts.warp_instructions == alone.result.counts.warp_instructions);
            CHECK(shared.result.blocks_sharing_work == kBlocks - kChecked.size());
            const std::uint64_t per_block = shared.result.instructions_run / kBlocks;
            CHECK(shared.result.instructions_shared >
                  shared.result.blocks_sharing_work * (per_block - per_block / 20));
        }
    }
    // Each block's leftovers are its own.
    const Outcome half =
        run("partTile", {sim::param_bytes(1500), sim::param_bytes(512), sim::param_bytes(3)}, true,
            kChecked);
    CHECK(half.out[5 * kThreads] != half.out[100 * kThreads]);
}

TEST_CASE("a kernel that reads its block first runs every block itself, with the same outputs") {
    const Outcome alone = run("blockFirst", {sim::param_bytes(64)}, false, kChecked);
    const Outcome shared = run("blockFirst", {sim::param_bytes(64)}, true, kChecked);
    REQUIRE(shared.result.status == sim::LaunchStatus::completed);
    CHECK(shared.out == alone.out);
    CHECK(shared.result.instructions_run == alone.result.instructions_run);
}

TEST_CASE("a block of the grid that writes nothing leaves its outputs at the poison") {
    const Outcome shared = run("skipsBlock77", {sim::param_bytes(300)}, true, kChecked);
    REQUIRE(shared.result.status == sim::LaunchStatus::completed);
    for (std::uint32_t b = 0; b < kBlocks; ++b) {
        CAPTURE(b);
        CHECK((shared.out[b * kThreads + 5] == kPoison) == (b == 77));
    }
}

TEST_CASE("the modeled GPU is the architecture's: a T4 for sm_75, holding what its SMs hold") {
    const sim::GpuModel t4 = sim::GpuModel::for_arch("sm_75");
    CHECK(t4.name == "Tesla T4");
    CHECK(t4.sm_count == 40);
    CHECK(t4.warps_per_sm == 32);
    CHECK(sim::GpuModel::for_arch("sm_90").sm_count == 132);
    CHECK(sim::GpuModel::for_arch("sm_87").name == "GeForce RTX 3080");  // the nearest below
    // The probe's blocks: 256 threads and 8 KiB, four to an SM (the harness's 160-block grid);
    // the transpose's, four too; a block of 1024 threads, one.
    CHECK(t4.resident_per_sm(256, 8192) == 4);
    CHECK(t4.resident_per_sm(256, 4224) == 4);
    CHECK(t4.resident_per_sm(1024, 0) == 1);
    CHECK(t4.resident_per_sm(32, 48 * 1024) == 1);
}

TEST_CASE("a grid the GPU holds at once is resident at once: a barrier over it completes") {
    // 160 blocks of 128 threads: eight to each of a T4's SMs, all resident.
    const Outcome held = run("gridBarrier", {sim::param_bytes(200000)}, false, kChecked);
    REQUIRE_MESSAGE(held.result.status == sim::LaunchStatus::completed, held.result.message);
    for (std::uint32_t b = 0; b < kBlocks; ++b) {
        float seen;
        std::memcpy(&seen, &held.out[b * kThreads], 4);
        CHECK(seen == static_cast<float>(kBlocks));
    }
}

TEST_CASE("a block polling its partner a few hundred times sees it arrive, as on a GPU") {
    // The grid is resident at once; a turn ends after a few polls, so the partner takes its turn
    // before the poller gives up (where a block's turn was 8 slices of 2,048 instructions, a
    // block polled 200 times before its partner started: about half never saw theirs).
    for (const std::uint64_t seed : {5ull, 6ull, 7ull}) {
        CAPTURE(seed);
        const Outcome polled = run("pollsPartner", {sim::param_bytes(200)}, false, kChecked, seed);
        REQUIRE_MESSAGE(polled.result.status == sim::LaunchStatus::completed,
                        polled.result.message);
        int unseen = 0;
        for (std::uint32_t b = 0; b < kBlocks; ++b) {
            float polls;
            std::memcpy(&polls, &polled.out[b * kThreads], 4);
            unseen += polls < 0.0f ? 1 : 0;
        }
        CHECK(unseen == 0);
    }
}

TEST_CASE("blocks replayed on several threads that store without end stay within memory") {
    // Each replay worker logs its global stores until the launch applies them; a block storing
    // in an endless loop logged one 24-byte entry a lane-store up to its budget (a grade of
    // hostile/infinite_loop on two threads peaked at 4.2 GB). Run in a child, whose peak
    // resident memory wait4 reports.
    sim::LaunchOptions options;
    options.instruction_budget = 20'000'000;
    options.block_instruction_budget = 2'000'000;
    const Outcome alone = run("storesForever", {sim::param_bytes(300)}, true, kChecked, 5, options);
    REQUIRE(alone.result.status == sim::LaunchStatus::budget_exceeded);
    options.threads = 3;
    const InChild threads = run_in_child([&] {
        const Outcome o = run("storesForever", {sim::param_bytes(300)}, true, kChecked, 5, options);
        const bool same = o.result.status == alone.result.status &&
                          o.result.message == alone.result.message && o.out == alone.out;
        return std::array<std::uint64_t, 2>{o.result.instructions_run, same ? 1u : 0u};
    });
    REQUIRE(threads.answered);
    CHECK(threads.exited);
    CHECK(threads.seen[0] == alone.result.instructions_run);
    CHECK_MESSAGE(threads.seen[1] == 1, "the launch on three threads ended otherwise than on one");
    // The logs are bounded at 96 MiB a batch.
    CHECK(threads.peak_kib < 512 * 1024);
    MESSAGE("figure: peak resident memory on three threads " << threads.peak_kib / 1024 << " MiB");
}

TEST_CASE("a loop without end over a value of the block's own records a bounded slice") {
    // Each step of the loop is kept for the other blocks to compute again with their own index:
    // without a bound, 32 bytes a warp instruction up to the launch's budget (640 MB at 20
    // million). Run in a child, whose peak resident memory wait4 reports.
    sim::LaunchOptions options;
    options.instruction_budget = 20'000'000;
    const InChild endless = run_in_child([&] {
        const Outcome o =
            run("ownValueLoop", {sim::param_bytes(1 << 30)}, true, kChecked, 5, options);
        return std::array<std::uint64_t, 2>{static_cast<std::uint64_t>(o.result.status), 0};
    });
    REQUIRE(endless.answered);
    CHECK(endless.exited);
    CHECK(endless.seen[0] == static_cast<std::uint64_t>(sim::LaunchStatus::budget_exceeded));
    CHECK(endless.peak_kib < 384 * 1024);
    MESSAGE("figure: peak resident memory " << endless.peak_kib / 1024 << " MiB");
    // A loop that ends: every block's result as each computes it alone.
    const Outcome alone = run("ownValueLoop", {sim::param_bytes(3000)}, false, kChecked);
    const Outcome shared = run("ownValueLoop", {sim::param_bytes(3000)}, true, kChecked);
    CHECK(shared.out == alone.out);
    CHECK(shared.result.blocks_sharing_work == kBlocks - 1);
    CHECK(shared.result.counts.warp_instructions == alone.result.counts.warp_instructions);
}

TEST_CASE("%gridid is the launch's own number") {
    sim::GlobalMemory memory(3);
    const std::uint64_t in = memory.allocate(4);
    const std::uint64_t out = memory.allocate(32 * 4);
    std::set<float> ids;
    for (std::uint64_t launch = 0; launch < 3; ++launch) {
        sim::LaunchOptions options;
        options.clock_seed = 3;
        options.grid_id = 500 + launch;
        const auto result =
            sim::launch(module(), "readsGridId", {1, 1, 1}, {32, 1, 1},
                        {sim::param_bytes(in), sim::param_bytes(out)}, memory, options);
        REQUIRE(result.status == sim::LaunchStatus::completed);
        float id;
        memory.read(out, &id, 4);
        CHECK(id == static_cast<float>(500 + launch));
        ids.insert(id);
    }
    CHECK(ids.size() == 3);
}
