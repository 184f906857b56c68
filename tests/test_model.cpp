#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/bank_model.hpp"
#include "model/diagnosis.hpp"
#include "model/finding.hpp"
#include "model/json.hpp"
#include "model/measurements.hpp"
#include "model/observations.hpp"
#include "model/report.hpp"
#include "report/describe.hpp"
#include "test_paths.hpp"

using namespace grader;

TEST_CASE("the conflict degree is gcd(stride, 32): periodic, not monotone") {
    CHECK(conflict_degree(3) == 1);
    CHECK(conflict_degree(31) == 1);
    CHECK(conflict_degree(33) == 1);
    CHECK(conflict_degree(63) == 1);
    CHECK(conflict_degree(6) == 2);
    CHECK(conflict_degree(12) == 4);
    CHECK(conflict_degree(24) == 8);
    CHECK(conflict_degree(48) == 16);
    CHECK(conflict_degree(64) == 32);
    CHECK(conflict_degree(-8) == 8);
    CHECK(conflict_degree(0) == 1);  // one word for every lane: a broadcast
    CHECK(conflict_degree(8, 16) == 8);
}

TEST_CASE("measurements survive the worker's JSON channel, NaN values included") {
    Measurements m;
    m.seed = 99;
    m.environment.device_name = "NVIDIA H200";
    m.unnamed_strides = {6, 31};
    KernelRun run;
    run.kernel = "student";
    run.stride = 8;
    OutputComparison ones;
    ones.input = "ones";
    ones.ran = true;
    ones.first_bad = 1234;
    ones.first_bad_value = std::nan("");
    ones.first_bad_expected = 2048;
    run.outputs.push_back(ones);
    SharedAccessCounts counts;
    counts.load_requests = 100;
    counts.load_wavefronts = 800;
    counts.load_ideal_wavefronts = 100;
    counts.store_requests = 4;
    counts.store_wavefronts = 16;  // 128-bit stores: 4 wavefronts each, the fewest
    counts.store_ideal_wavefronts = 16;
    counts.global_load_requests = 8;
    counts.global_load_sectors = 32;
    counts.blocks = 2;
    counts.lines.push_back({"probe.cu", 34, false, 4, 100, 800, 100, 8.0});
    run.counts = counts;
    Finding race;
    race.kind = FindingKind::race_read_after_write;
    race.strides = {8};
    race.lines = {{"probe.cu", 14, 9, 0}, {"probe.cu", 12, 9, 0}};
    race.word = SharedWord{7, "tile", 7};
    run.findings.push_back(race);
    TimingStats stats;
    stats.median_ms = 0.5;
    stats.samples = 10;
    run.timing = stats;
    run.ratio = 6.65;
    m.runs.push_back(run);
    m.interruption = Interruption{StopKind::timeout, "run student stride 8", "stopped", true};
    m.stage_seconds["compile"] = 0.3;

    const Measurements back = nlohmann::json(m).get<Measurements>();
    REQUIRE(back.runs.size() == 1);
    CHECK(back.seed == 99);
    CHECK(back.unnamed_strides == std::vector<int>{6, 31});
    const OutputComparison* ones_back = back.runs[0].output("ones");
    REQUIRE(ones_back != nullptr);
    CHECK(ones_back->first_bad == std::optional<std::uint64_t>(1234));
    CHECK(std::isnan(ones_back->first_bad_value));
    CHECK(back.runs[0].counts->load_degree() == doctest::Approx(8.0));
    CHECK(back.runs[0].counts->store_degree() == doctest::Approx(1.0));
    CHECK(back.runs[0].counts->global_load_sectors_per_request() == doctest::Approx(4.0));
    CHECK_FALSE(back.runs[0].counts->global_store_sectors_per_request());
    CHECK(back.runs[0].counts->blocks == 2);
    REQUIRE(back.runs[0].counts->worst_line() != nullptr);
    CHECK(back.runs[0].counts->worst_line()->line == 34);
    CHECK(back.runs[0].counts->launch_degree() == doctest::Approx(8.0));
    REQUIRE(back.runs[0].findings.size() == 1);
    CHECK(back.runs[0].findings[0].kind == FindingKind::race_read_after_write);
    CHECK(back.runs[0].findings[0].lines == race.lines);
    CHECK(back.runs[0].findings[0].word->variable == "tile");
    CHECK(back.interruption->kind == StopKind::timeout);
    CHECK(back.runs[0].timing->median_ms == doctest::Approx(0.5));
    CHECK(*back.runs[0].ratio == doctest::Approx(6.65));
    REQUIRE(back.interruption);
    CHECK(back.interruption->stage == "run student stride 8");
    CHECK(back.stage_seconds.at("compile") == doctest::Approx(0.3));
    CHECK(back.run("student", 8) != nullptr);
    CHECK(back.run("reference", 8) == nullptr);
}

TEST_CASE("a report's verdict reads back, and an unknown verdict is refused") {
    Report report;
    report.verdict = Verdict::fail;
    report.score = 9;
    report.max_score = 13;
    const Report back = nlohmann::json(report).get<Report>();
    CHECK(back.verdict == Verdict::fail);
    CHECK(back.score == 9);
    nlohmann::json broken = nlohmann::json(report);
    broken["verdict"] = "maybe";
    CHECK_THROWS(broken.get<Report>());
}

TEST_CASE("an infinity or a NaN the kernel wrote survives the worker's JSON; never-written stays") {
    for (const double value : {HUGE_VAL, -HUGE_VAL}) {
        OutputComparison written;
        written.ran = true;
        written.first_bad = 3;
        written.first_bad_value = value;
        const auto back = nlohmann::json(written).get<OutputComparison>();
        CHECK(back.first_bad_value == value);
        CHECK(describe_wrong_output(0, back).find(
                  value > 0 ? "holds +infinity" : "holds -infinity") != std::string::npos);
        CHECK(describe_wrong_output(0, back).find("never written") == std::string::npos);
    }
    OutputComparison nan_written;
    nan_written.ran = true;
    nan_written.first_bad = 3;
    nan_written.first_bad_value = std::nan("");
    nan_written.first_bad_wrote_nan = true;
    const auto nan_back = nlohmann::json(nan_written).get<OutputComparison>();
    CHECK(nan_back.first_bad_wrote_nan);
    CHECK(describe_wrong_output(0, nan_back).find("a NaN the kernel wrote") != std::string::npos);
    OutputComparison unwritten = nan_written;
    unwritten.first_bad_wrote_nan = false;
    const auto unwritten_back = nlohmann::json(unwritten).get<OutputComparison>();
    CHECK(describe_wrong_output(0, unwritten_back).find("never written") != std::string::npos);
}

TEST_CASE("a diagnosis reads back from a report's JSON, on the report and on its check") {
    Report report;
    report.verdict = Verdict::fail;
    Diagnosis diagnosis;
    diagnosis.cause = Cause::missing_barrier;
    diagnosis.what = "a warp reads words of the tile another warp wrote";
    diagnosis.fix = "put __syncthreads() between probe.cu:25:9 and probe.cu:34:9";
    diagnosis.where = "probe.cu:34:9";
    diagnosis.check = "accumulator";
    CheckResult check;
    check.id = "accumulator";
    check.diagnosis = diagnosis;
    report.checks.push_back(check);
    report.diagnosis = diagnosis;

    const nlohmann::json written = report;
    CHECK(written["diagnosis"]["cause"] == "missing_barrier");
    CHECK(written["diagnosis"]["title"] == "missing __syncthreads() (a race)");
    CHECK(written["diagnosis"]["area"] == "kernel");
    CHECK(written["checks"][0]["diagnosis"]["fix"] == diagnosis.fix);
    const Report read = written.get<Report>();
    REQUIRE(read.diagnosis);
    CHECK(read.diagnosis->cause == Cause::missing_barrier);
    CHECK(read.diagnosis->where == "probe.cu:34:9");
    CHECK(read.diagnosis->check == "accumulator");
    REQUIRE(read.checks.front().diagnosis);
    CHECK(to_sentence(*read.checks.front().diagnosis) == diagnosis.what + "; " + diagnosis.fix);

    SUBCASE("a report without one writes null and reads back none") {
        report.diagnosis.reset();
        const nlohmann::json none = report;
        CHECK(none["diagnosis"].is_null());
        CHECK_FALSE(none.get<Report>().diagnosis);
    }
}

TEST_CASE("every cause has a key of its own that reads back, a title and an area") {
    std::set<std::string_view> keys;
    for (const Cause cause : all_causes()) {
        CHECK(keys.insert(to_string(cause)).second);
        CHECK(cause_from_string(to_string(cause)) == cause);
        CHECK_FALSE(cause_title(cause).empty());
    }
    CHECK(keys.size() == all_causes().size());
    CHECK(area_of(Cause::no_gpu) == CauseArea::machine);
    CHECK(area_of(Cause::wrong_prediction) == CauseArea::answers);
    CHECK_FALSE(cause_from_string("a_cause_from_a_newer_grader"));
}

TEST_CASE("a counted degree is wavefronts over the fewest the widths allow, of the worst line") {
    SharedAccessCounts counts;
    CHECK_FALSE(counts.load_degree());
    CHECK_FALSE(counts.launch_degree());
    // A conflict-free float4 store: 4 wavefronts per request, all of them the fewest.
    counts.store_requests = 32;
    counts.store_wavefronts = 128;
    counts.store_ideal_wavefronts = 128;
    // A launch's loads: 4 column reads of 32 wavefronts and 1,000 broadcasts, per warp.
    counts.load_requests = 1004;
    counts.load_wavefronts = 1128;
    counts.load_ideal_wavefronts = 1004;
    CHECK(*counts.store_degree() == doctest::Approx(1.0));
    CHECK(*counts.load_degree() == doctest::Approx(1128.0 / 1004.0));
    CHECK(*counts.launch_degree() == doctest::Approx(1128.0 / 1004.0));
    counts.lines.push_back({"t.cu", 17, true, 16, 32, 128, 128, 1.0});
    counts.lines.push_back({"t.cu", 24, false, 4, 1000, 1000, 1000, 1.0});
    counts.lines.push_back({"t.cu", 32, false, 4, 4, 128, 4, 32.0});
    counts.blocks = 2;

    SUBCASE("the simulator's own count: its worst line") {
        KernelRun run;
        run.counts = counts;
        run.count_source = "simulator";
        const JudgedDegree judged = judged_degree(run, 100);
        REQUIRE(judged.line != nullptr);
        CHECK(judged.line->line == 32);
        CHECK(*judged.degree == 32.0);
        CHECK_FALSE(judged.confirmed_witness);
    }
    SUBCASE("a GPU's totals that confirm the simulator's witness: the witness's worst line") {
        SharedAccessCounts gpu;  // the same accesses over a grid of 100 blocks, 4% more wavefronts
        gpu.load_requests = 1004 * 50;
        gpu.load_wavefronts = 1173 * 50;
        gpu.load_ideal_wavefronts = 1004 * 50;
        gpu.store_requests = 32 * 50;
        gpu.store_wavefronts = 128 * 50;
        gpu.store_ideal_wavefronts = 128 * 50;
        CHECK(gpu.confirms(counts, 100));
        KernelRun run;
        run.counts = gpu;
        run.count_source = "hardware";
        run.witness = counts;
        const JudgedDegree judged = judged_degree(run, 100);
        CHECK(*judged.degree == 32.0);
        CHECK(judged.confirmed_witness);
        // Where ptxas merged loads (fewer instructions), or the witness's blocks do other work
        // than the grid's, the GPU's totals stand alone.
        run.counts->load_requests = 1004 * 25;
        CHECK_FALSE(run.counts->confirms(counts, 100));
        CHECK(judged_degree(run, 100).line == nullptr);
        // Where the GPU's degrees are not the simulator's (its bank model missed something).
        run.counts->load_requests = 1004 * 50;
        run.counts->load_wavefronts = 2 * 1128 * 50;
        CHECK_FALSE(run.counts->confirms(counts, 100));
        CHECK(*judged_degree(run, 100).degree == doctest::Approx(2 * 1128.0 / 1004.0));
    }
    SUBCASE("counts written before the fewest were counted: wavefronts per request") {
        SharedAccessCounts old;
        old.load_requests = 10;
        old.load_wavefronts = 80;
        CHECK(*old.load_degree() == 8.0);
    }
}
