// The table of finding kinds (harness/model/findings.def) and their words
// (harness/report/findings_text.cpp): every kind is worded, naming what its row says it holds;
// merging says a finding once whatever strides showed it; and the words of the kinds the issue's
// cases turn on, one by one.

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/bank_model.hpp"
#include "model/diagnosis.hpp"
#include "model/finding.hpp"
#include "model/json.hpp"
#include "model/observations.hpp"
#include "report/diagnosis_text.hpp"
#include "report/findings_text.hpp"
#include "test_paths.hpp"

using namespace grader;

namespace {

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

FindingThread thread_at(std::uint32_t block, std::uint32_t thread) {
    FindingThread t;
    t.block = {block, 0, 0};
    t.thread = {thread, 0, 0};
    t.warp = thread / 32;
    t.lane = thread % 32;
    return t;
}

// A finding of the kind with every field filled, as its row of findings.def allows.
Finding sample(FindingKind kind) {
    Finding f;
    f.kind = kind;
    f.strides = {8};
    f.lines = {{"probe.cu", 25, 9, 0}, {"probe.cu", 34, 9, 0}};
    f.threads = {thread_at(0, 3), thread_at(0, 40)};
    f.word = SharedWord{7, "tile", 7};
    f.values = {3.0, 1.0, 2.0, 4.0, 0.5};
    f.count = 5;
    f.names = {"alpha", "beta", "gamma"};
    f.text = "TEXT";
    OutputComparison output;
    output.input = "ones";
    output.ran = true;
    output.elements = 270336;
    output.bad_elements = 17;
    output.first_bad = 1234;
    output.first_bad_block = 4;
    output.first_bad_thread_in_block = 210;
    output.first_bad_value = 1024.0;
    output.first_bad_expected = 2048.0;
    f.output = output;
    SharedLineCounts counts;
    counts.file = "probe.cu";
    counts.line = 34;
    counts.requests = 100;
    counts.wavefronts = 200;
    counts.ideal_wavefronts = 100;
    counts.degree = 2.0;
    counts.lanes_per_row = 16;
    counts.row_pitch = 17;
    f.counts = counts;
    return f;
}

}  // namespace

TEST_CASE("every finding kind has a key, a known cause or none, and words naming its fields") {
    const Wording wording;
    for (const FindingKind kind : all_finding_kinds()) {
        const std::string key(to_string(kind));
        CAPTURE(key);
        CHECK(finding_kind_from_string(key) == kind);
        const Finding f = sample(kind);
        const std::string line = finding_line(f, wording);
        CHECK(!line.empty());
        const unsigned fields = fields_of(kind);
        if ((fields & FIELD_TEXT) != 0) {
            CHECK(has(line, "TEXT"));
        }
        if ((fields & FIELD_THREADS) != 0) {
            CHECK((has(line, "(3, 0, 0)") || has(line, "thread 3")));
        }
        if ((fields & FIELD_WORD) != 0) {
            CHECK(has(line, "word 7 of tile"));
        }
        if ((fields & FIELD_LINES) != 0 && kind != FindingKind::races_counted) {
            CHECK(has(line, "probe.cu:25:9"));
        }
        if ((fields & FIELD_COUNTS) != 0) {
            CHECK(has(line, "probe.cu:34"));
        }
        if ((fields & FIELD_OUTPUT) != 0) {
            CHECK(has(line, "expected 2048"));
        }
        if (fails(f)) {
            CHECK(cause_of(kind).has_value());  // an error is evidence of a cause
        }
    }
}

TEST_CASE("a finding reads back from JSON as it was written, kind and fields") {
    Finding race = sample(FindingKind::race_read_after_write);
    race.output.reset();
    race.counts.reset();
    race.witness = true;
    const nlohmann::json j = race;
    CHECK(j["kind"] == "race_read_after_write");
    CHECK(j["cause"] == "missing_barrier");
    CHECK(j["severity"] == "error");
    const Finding back = j.get<Finding>();
    CHECK(back.kind == race.kind);
    CHECK(back.lines == race.lines);
    CHECK(back.word->variable == "tile");
    CHECK(back.witness);
    SUBCASE("a kind a newer grader wrote reads as unknown, its key kept") {
        nlohmann::json newer = j;
        newer["kind"] = "race_across_clusters";
        newer.erase("text");
        const Finding unknown = newer.get<Finding>();
        CHECK(unknown.kind == FindingKind::unknown);
        CHECK(unknown.text == "race_across_clusters");
    }
}

TEST_CASE("a race's fix names the two places in source order, whichever side found it") {
    Finding read = sample(FindingKind::race_read_after_write);
    read.lines = {{"probe.cu", 34, 9, 0}, {"probe.cu", 25, 9, 0}};
    Finding write = sample(FindingKind::race_write_after_read);
    write.lines = {{"probe.cu", 25, 9, 0}, {"probe.cu", 34, 9, 0}};
    CHECK(barrier_fix(read) == "put __syncthreads() between probe.cu:25:9 and probe.cu:34:9");
    CHECK(barrier_fix(write) == barrier_fix(read));
    SUBCASE("one missing barrier is one finding, at every stride that showed it") {
        read.strides = {1};
        write.strides = {8};
        Finding other = read;
        other.strides = {16};
        const std::vector<Finding> one = merged({read, write, other});
        REQUIRE(one.size() == 1);
        CHECK(one.front().strides == std::vector<int>{1, 8, 16});
        CHECK(has(finding_line(one.front(), Wording{}), "(at strides 1, 8 and 16)"));
    }
}

TEST_CASE("two writes of one value are racecheck's INFO: no fix, no cost, said as such") {
    Finding same = sample(FindingKind::race_same_value);
    same.lines = {{"probe.cu", 13, 5, 0}, {"probe.cu", 13, 5, 0}};
    CHECK(severity_of(FindingKind::race_same_value) == Severity::info);
    CHECK(!fails(same));
    CHECK(!cause_of(FindingKind::race_same_value).has_value());
    const std::string line = finding_line(same, Wording{});
    CHECK(has(line, "the same value"));
    CHECK(has(line, "costs nothing"));
    CHECK(has(line, "INFO"));
    CHECK(!has(line, "put __syncthreads() between probe.cu:13:5 and probe.cu:13:5"));
    CHECK(barrier_fix(same).empty());
}

TEST_CASE("a read that did not wait for the fill names the fill and the barrier between") {
    Finding read = sample(FindingKind::unwritten_shared_read);
    read.lines = {{"probe.cu", 21, 18, 0}, {"probe.cu", 16, 17, 0}};
    const std::string line = finding_line(read, Wording{});
    CHECK(has(line, "before any thread of its block wrote it"));
    CHECK(has(line, "probe.cu:16:17 writes it"));
    CHECK(has(line, "put __syncthreads() between probe.cu:16:17 and probe.cu:21:18"));
    CHECK(has(missing_barrier_text(read),
              "reads words of the shared tile before the fill at probe.cu:16:17 has written them"));
    SUBCASE("without a fill it is a word nothing wrote") {
        read.lines.resize(1);
        CHECK(barrier_fix(read).empty());
        CHECK(has(finding_line(read, Wording{}), "whatever was left there"));
    }
}

TEST_CASE("the words of a narrow tile, a strided write and a tile never read") {
    const Wording wording;
    Finding span = sample(FindingKind::warp_spans_rows);
    span.values = {16, 17, 2};
    const std::string spans = finding_text(span, wording);
    CHECK(has(spans, "span 2 rows of a tile 16 words wide"));
    CHECK(has(spans, "17 is coprime with 32, yet the rows' words share banks"));
    Finding strided = sample(FindingKind::strided_global_stores);
    strided.values = {32};
    CHECK(has(finding_text(strided, wording), "conflict free"));
    CHECK(has(finding_text(strided, wording), "32 global sectors per store request"));
    CHECK(has(finding_text(sample(FindingKind::tile_never_read), wording), "never loads from it"));
}

TEST_CASE("a warp's lanes on two rows of a narrow tile are told from one row or one column") {
    std::array<std::uint64_t, 32> words{};
    SUBCASE("a column of tile[16][17]: two rows of 16 lanes, 17 words apart") {
        for (std::uint64_t lane = 0; lane < 32; ++lane) {
            words[lane] = 17 * (lane % 16) + lane / 16;
        }
        const WarpRowSpan span = warp_row_span(words, 0xffffffffu);
        CHECK(span.lanes_per_row == 16);
        CHECK(span.row_pitch == 17);
    }
    SUBCASE("a row of tile[16][17]: 16 lanes a row, the next row 17 words on") {
        for (std::uint64_t lane = 0; lane < 32; ++lane) {
            words[lane] = 17 * (lane / 16) + lane % 16;
        }
        const WarpRowSpan span = warp_row_span(words, 0xffffffffu);
        CHECK(span.lanes_per_row == 16);
        CHECK(span.row_pitch == 17);
    }
    SUBCASE("a column of tile[32][33] is one run: no span") {
        for (std::uint64_t lane = 0; lane < 32; ++lane) {
            words[lane] = 33 * lane;
        }
        CHECK(warp_row_span(words, 0xffffffffu).lanes_per_row == 0);
    }
    SUBCASE("a broadcast, or a warp not full, is no span") {
        CHECK(warp_row_span(words, 0xffffffffu).lanes_per_row == 0);
        for (std::uint64_t lane = 0; lane < 32; ++lane) {
            words[lane] = 17 * (lane % 16) + lane / 16;
        }
        CHECK(warp_row_span(words, 0x0000ffffu).lanes_per_row == 0);
    }
}

// Sentences that a check's message, a read and a folder's problem share with a finding: said by
// report/ alone (scripts/check_messages.py fails where another part spells them again).
TEST_CASE("a check's message and a folder's problem take their words from report/") {
    const Wording wording;
    Finding unfit = sample(FindingKind::timing_machine_unfit);
    CHECK(timing_unused_reason(unfit) ==
          "this machine does not show the model with the exercise's own kernels, so it cannot "
          "grade timings (the machine is unfit, not your kernel)");
    CHECK(finding_text(unfit, wording) == "timing not used: " + timing_unused_reason(unfit));
    Finding needs_gpu = sample(FindingKind::timing_needs_gpu);
    CHECK(has(timing_unused_reason(needs_gpu), "the counted degree stands in"));
    CHECK(timing_unused_reason(needs_gpu) != timing_unused_reason(unfit));

    Finding none = sample(FindingKind::no_shared_access);
    none.count = 1;
    CHECK(no_shared_tile_message(none, "transpose") ==
          "Your kernel has no shared tile: transpose made no shared-memory load or store in 1 "
          "counted run, so it has no bank conflicts to remove.");
    none.count = 3;
    CHECK(has(no_shared_tile_message(none, "transpose"), "in 3 counted runs,"));

    CHECK(file_not_found_text("probe.cu") == "probe.cu was not found in the submission folder");
    Finding missing = sample(FindingKind::kernel_file_missing);
    missing.names = {"probe.cu"};
    missing.text.clear();
    CHECK(finding_text(missing, wording) == file_not_found_text("probe.cu"));

    CHECK(misnamed_files_text({{"Probe.cu", "probe.cu"}}) ==
          "the folder holds Probe.cu, not probe.cu: rename Probe.cu to probe.cu (file names are "
          "exact, case included)");
    CHECK(misnamed_files_text({{"Probe.cu", "probe.cu"}, {"submission.yml", "submission.yaml"}}) ==
          "the folder holds Probe.cu, not probe.cu, and submission.yml, not submission.yaml: "
          "rename Probe.cu to probe.cu and submission.yml to submission.yaml (file names are "
          "exact, case included)");

    // An answers file not read at all starts again from the kit's; the reader says only why.
    DiagnosisFacts facts;
    facts.answers_file = "submission.yaml";
    CHECK(diagnosis_fix(Cause::malformed_answers, facts) ==
          "start from the starter kit's submission.yaml and fill in every blank");
}

TEST_CASE("a measurement read as inverted is told to write the exercise's own description") {
    Finding inverted = sample(FindingKind::measurement_implausible);
    inverted.values = {0.25, 3.0, 5.0, 4.0, 4.0};
    inverted.count = 2;  // MeasurementSlip::inverted
    inverted.names.resize(2);
    inverted.names.push_back("this stride's time divided by stride 1's");
    CHECK(has(finding_text(inverted, Wording{}),
              "this looks inverted (stride 1's time divided by this one's): write this stride's "
              "time divided by stride 1's, 4"));
    inverted.names.back() = "the kernel's time divided by the copy's";
    CHECK(
        has(finding_text(inverted, Wording{}), "write the kernel's time divided by the copy's, "));
}
