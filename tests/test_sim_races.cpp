// Shared-memory races on the simulator: the Part 2 transpose without its barrier, a race whose
// output comes out right, lanes of one store writing different values to one word; and the
// exercises' own kernels, which must never race.

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "grader_run.hpp"
#include "sim/sim.hpp"
#include "sim_kernels.hpp"
#include "test_paths.hpp"

namespace sim = grader::sim;
namespace fs = std::filesystem;
using namespace grader::testing;

namespace {

fs::path reference(const std::string& name) {
    return fs::path(GRADER_SOURCE_DIR) / "reference" / name;
}

constexpr int kMatrix = 64;

struct Transposed {
    sim::LaunchResult result;
    bool exact = false;  // every output element is the transpose of the input
};

// A transposeTiled(in, out, n) kernel over a 64 x 64 matrix, 32 x 8 threads per block.
Transposed transpose(const fs::path& path, const std::string& entry = "transposeTiled") {
    const sim::Module module = sim::parse_ptx(compile_to_ptx(path, path.filename().string()));
    std::vector<float> matrix(kMatrix * kMatrix);
    std::iota(matrix.begin(), matrix.end(), 1.0f);
    sim::GlobalMemory memory;
    const std::uint64_t in = upload(memory, matrix);
    const std::uint64_t out = upload(memory, std::vector<float>(kMatrix * kMatrix, -1.0f));
    Transposed t;
    t.result = sim::launch(module, entry, {kMatrix / 32, kMatrix / 32, 1}, {32, 8, 1},
                           {sim::param_bytes(in), sim::param_bytes(out), sim::param_bytes(kMatrix)},
                           memory, {});
    const auto values = read_floats(memory, out, kMatrix * kMatrix);
    t.exact = true;
    for (int r = 0; r < kMatrix; ++r) {
        for (int c = 0; c < kMatrix; ++c) {
            const float expected =
                entry == "copyMatrix" ? matrix[r * kMatrix + c] : matrix[c * kMatrix + r];
            t.exact = t.exact && values[r * kMatrix + c] == expected;
        }
    }
    return t;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("the Part 2 transpose without its __syncthreads() races, named by line, word and lanes") {
    const fs::path path = sim_fixture("transpose_without_barrier.cu");
    const Transposed t = transpose(path);
    REQUIRE_MESSAGE(t.result.status == sim::LaunchStatus::completed, t.result.message);
    REQUIRE_FALSE(t.result.races.empty());
    CHECK(t.result.races.size() <= sim::LaunchResult::kMaxReportedRaces);
    CHECK(t.result.race_count >= t.result.races.size());

    const int store_line = line_of(path, "tile[ty + k][tx] = in[");
    const int read_line = line_of(path, "= tile[tx][ty + k]");
    // Warp 0 runs first and reads rows that warps 1..7 have yet to write: their stores race with
    // its reads.
    const sim::SharedRace& first = t.result.races.front();
    CHECK(first.kind == sim::SharedRace::Kind::write_after_read);
    CHECK(first.where.line == store_line);
    CHECK(first.earlier.line == read_line);
    CHECK(first.where.file == "transpose_without_barrier.cu");
    CHECK(first.thread.warp != first.other.warp);
    CHECK(first.word == first.byte_offset / 4);
    CHECK(contains(first.variable, "tile"));
    CAPTURE(first.message);
    // FILE:LINE:COLUMN, the form of every location the grader writes.
    REQUIRE(first.where.column > 0);
    REQUIRE(first.earlier.column > 0);
    CHECK(contains(first.message, "at transpose_without_barrier.cu:" + std::to_string(store_line) +
                                      ":" + std::to_string(first.where.column) + ", "));
    CHECK(contains(first.message, "at transpose_without_barrier.cu:" + std::to_string(read_line) +
                                      ":" + std::to_string(first.earlier.column) + " "));
    CHECK(contains(first.message, "shared word " + std::to_string(first.word) + " (word " +
                                      std::to_string(first.word_in_variable) + " of tile)"));
    CHECK(contains(first.message, "warp " + std::to_string(first.thread.warp) + ", lane " +
                                      std::to_string(first.thread.lane)));
    CHECK(contains(first.message, "with no __syncthreads() between them"));
}

TEST_CASE("a race is reported even where the simulator's warp order gives the right output") {
    const fs::path path = sim_fixture("transpose_last_warp_overwrites.cu");
    const Transposed t = transpose(path);
    REQUIRE_MESSAGE(t.result.status == sim::LaunchStatus::completed, t.result.message);
    CHECK(t.exact);
    REQUIRE_FALSE(t.result.races.empty());
    const sim::SharedRace& race = t.result.races.front();
    CHECK(race.kind == sim::SharedRace::Kind::write_after_read);
    CHECK(race.where.line == line_of(path, "first_row[tx] = 0.0f"));
    CHECK(race.earlier.line == line_of(path, "= tile[tx][ty + k]"));
    CHECK(race.thread.warp == 7);
    CHECK(race.other.warp < 7);
}

TEST_CASE("reads on two lines racing with one store, one loop after the other, are each reported") {
    const fs::path path = sim_fixture("two_racing_reads.cu");
    const Transposed t = transpose(path);
    REQUIRE_MESSAGE(t.result.status == sim::LaunchStatus::completed, t.result.message);
    const int store = line_of(path, "tile[ty][tx] = in");
    const auto reported = [&](const std::string& read) {
        return std::count_if(
            t.result.races.begin(), t.result.races.end(), [&](const sim::SharedRace& race) {
                return race.kind == sim::SharedRace::Kind::read_after_write &&
                       race.where.line == line_of(path, read) && race.earlier.line == store;
            });
    };
    CHECK(reported("sum += tile[(ty + k) % 8]") == 1);
    CHECK(reported("sum -= tile[(ty + 8 - k) % 8][tx ^ 1]") == 1);
    CHECK(t.result.race_count > 0);
}

TEST_CASE("the exercises' own kernels run without a race") {
    SUBCASE("both transposes and the copy") {
        for (const char* name : {"transpose_tile32.cu", "transpose_tile33.cu"}) {
            CAPTURE(name);
            const Transposed t = transpose(reference(name));
            REQUIRE_MESSAGE(t.result.status == sim::LaunchStatus::completed, t.result.message);
            CHECK(t.exact);
            CHECK(t.result.races.empty());
            CHECK(t.result.race_count == 0);
        }
        const Transposed copy = transpose(reference("copy_matrix.cu"), "copyMatrix");
        CHECK(copy.exact);
        CHECK(copy.result.race_count == 0);
    }
    SUBCASE("the probe at every stride of its sweep, two blocks") {
        const sim::Module module =
            sim::parse_ptx(compile_to_ptx(reference("probe_shared_stride.cu"), "probe.cu"));
        for (const int stride : {1, 2, 3, 4, 8, 16, 32, 33}) {
            CAPTURE(stride);
            sim::GlobalMemory memory;
            const std::uint64_t in = upload(memory, std::vector<float>(2048, 1.0f));
            const std::uint64_t out = upload(memory, std::vector<float>(512, 0.0f));
            const std::size_t n = 512;
            const auto result = sim::launch(module, "probeSharedStride", {2, 1, 1}, {256, 1, 1},
                                            {sim::param_bytes(in), sim::param_bytes(out),
                                             sim::param_bytes(n), sim::param_bytes(stride)},
                                            memory, {});
            REQUIRE(result.status == sim::LaunchStatus::completed);
            CHECK(result.races.empty());
            CHECK(result.race_count == 0);
        }
    }
    SUBCASE("the shared-memory poison kernel") {
        const sim::Module module =
            sim::parse_ptx(compile_to_ptx(reference("poison_shared_memory.cu"), "poison.cu"));
        sim::LaunchOptions options;
        options.dynamic_shared_bytes = 16 * 1024;
        const unsigned words = 4096;
        const unsigned seed = 7;
        sim::GlobalMemory memory;
        const auto result =
            sim::launch(module, "poisonSharedMemory", {1, 1, 1}, {256, 1, 1},
                        {sim::param_bytes(words), sim::param_bytes(seed)}, memory, options);
        REQUIRE(result.status == sim::LaunchStatus::completed);
        CHECK(result.race_count == 0);
    }
}

TEST_CASE("lanes of one store writing different values to one word race; the same value does not") {
    const auto run = [](const fs::path& path, const std::string& entry) {
        const sim::Module module = sim::parse_ptx(compile_to_ptx(path, path.filename().string()));
        std::vector<float> input(32 * 32);
        std::iota(input.begin(), input.end(), 0.0f);
        sim::GlobalMemory memory;
        const std::uint64_t in = upload(memory, input);
        const std::uint64_t out = upload(memory, std::vector<float>(32 * 32, 0.0f));
        return sim::launch(module, entry, {1, 1, 1}, {32, 32, 1},
                           {sim::param_bytes(in), sim::param_bytes(out)}, memory, {});
    };
    SUBCASE("the course's tx * 2 % 32 demo: lanes tx and tx + 16 store different inputs") {
        const fs::path path = fs::path(GRADER_FIXTURES_DIR) / "kernels/broadcast_half_tile.cu";
        const auto result = run(path, "broadcastHalfTile");
        REQUIRE(result.status == sim::LaunchStatus::completed);
        REQUIRE(result.races.size() == 1);  // one store instruction, reported once
        const sim::SharedRace& race = result.races.front();
        CHECK(race.kind == sim::SharedRace::Kind::one_store_two_values);
        CHECK(race.where.line == line_of(path, "sharedData[ty][conflictIndex] = input"));
        CHECK(race.other.lane == 0);
        CHECK(race.thread.lane == 16);
        CHECK(race.thread.warp == 0);
        CHECK(race.word == 0);
        CAPTURE(race.message);
        CHECK(contains(race.message, "lanes 0 and 16 of warp 0"));
        CHECK(contains(race.message, "word 0 of sharedData"));
        CHECK(contains(race.message, "broadcast_half_tile.cu:"));
        // Every warp's store races: 32 warp-wide stores.
        CHECK(result.race_count == 32);
    }
    SUBCASE("the same index storing the same element: a broadcast write") {
        const auto result = run(sim_fixture("same_value_store.cu"), "sameValueStore");
        REQUIRE(result.status == sim::LaunchStatus::completed);
        CHECK(result.races.empty());
        CHECK(result.race_count == 0);
    }
}

TEST_CASE(
    "a racing Part 2 submission fails its output check on the simulator; the example passes") {
    const fs::path root(GRADER_SOURCE_DIR);
    const fs::path scratch = grader::testing::scratch_root("sim_races");
    fs::create_directories(scratch);
    const auto grade = [&](const std::string& name, const fs::path& kernel) {
        const fs::path folder = scratch / name;
        fs::remove_all(folder);
        fs::create_directories(folder);
        fs::copy_file(root / "student/padding/example/submission.yaml", folder / "submission.yaml");
        fs::copy_file(kernel, folder / "transpose.cu");
        const fs::path report = scratch / (name + ".json");
        return grader::testing::run_grader(
            {"grade", folder.string(), "--exercise", (root / "exercises/day15-padding").string(),
             "--backend", "sim", "--format", "json", "--output", report.string(), "--seed", "7",
             "--quiet"},
            report, grader::testing::kNoGpu);
    };
    SUBCASE("without __syncthreads()") {
        const auto run = grade("without_barrier", sim_fixture("transpose_without_barrier.cu"));
        CAPTURE(run.output);
        REQUIRE(run.report.is_object());
        const auto* check = grader::testing::find_check(run.report, "correct");
        REQUIRE(check != nullptr);
        const std::string text = grader::testing::check_text(*check);
        CAPTURE(text);
        CHECK_FALSE((*check)["passed"].get<bool>());
        CHECK(contains(text, "a shared-memory race: "));
        CHECK(contains(text, "with no __syncthreads() completed before the read"));
        CHECK(contains(text, "of tile)"));
        CHECK_FALSE(contains(text, "every value came out right"));
        CHECK(run.exit_code == 1);
    }
    SUBCASE("the right output with a race in it") {
        const auto run =
            grade("last_warp_overwrites", sim_fixture("transpose_last_warp_overwrites.cu"));
        CAPTURE(run.output);
        REQUIRE(run.report.is_object());
        const auto* check = grader::testing::find_check(run.report, "correct");
        REQUIRE(check != nullptr);
        const std::string text = grader::testing::check_text(*check);
        CAPTURE(text);
        CHECK_FALSE((*check)["passed"].get<bool>());
        CHECK(contains(text, "a shared-memory race: "));
        CHECK(contains(text, "every value came out right in the order the warps ran here"));
        CHECK(contains(text, "transpose.cu:" + std::to_string(line_of(
                                                   sim_fixture("transpose_last_warp_overwrites.cu"),
                                                   "first_row[tx] = 0.0f"))));
    }
    SUBCASE("the padded example") {
        const auto run = grade("example", root / "student/padding/example/transpose.cu");
        CAPTURE(run.output);
        REQUIRE(run.report.is_object());
        const auto* check = grader::testing::find_check(run.report, "correct");
        REQUIRE(check != nullptr);
        CHECK((*check)["passed"].get<bool>());
        CHECK(run.exit_code == 0);
    }
}
