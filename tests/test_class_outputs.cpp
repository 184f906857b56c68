#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/text.hpp"
#include "fixtures/class/synthetic_class.hpp"
#include "model/diagnosis.hpp"
#include "model/finding.hpp"
#include "model/measurements.hpp"
#include "model/report.hpp"
#include "report/class_outputs.hpp"
#include "test_paths.hpp"

using namespace grader;

namespace {

// An RFC 4180 reader, written apart from the writer so the test does not share its mistakes.
// Returns nullopt on a malformed file (a stray quote, a quote left open, a bare line end). A
// leading UTF-8 byte-order mark is read as a spreadsheet reads it: not part of the first cell.
// `separator` is ',' as the file is written, or ';' as a European spreadsheet reads it (a quote
// inside a cell is then a character, as LibreOffice reads it).
std::optional<std::vector<std::vector<std::string>>> parse_csv(const std::string& file,
                                                               char separator = ',') {
    const std::string bom = "\xEF\xBB\xBF";
    const std::string text = file.rfind(bom, 0) == 0 ? file.substr(bom.size()) : file;
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> row;
    std::string field;
    bool in_quotes = false;
    bool field_was_quoted = false;
    std::size_t i = 0;
    while (i < text.size()) {
        const char c = text[i];
        if (in_quotes) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
                field += '"';
                i += 2;
            } else if (c == '"') {
                in_quotes = false;
                ++i;
            } else {
                field += c;
                ++i;
            }
        } else if (c == '"' && separator != ',' && !field.empty()) {
            field += c;  // read at ';', a quote inside a comma-separated cell is a character
            ++i;
        } else if (c == '"') {
            if (!field.empty() || field_was_quoted) {
                return std::nullopt;
            }
            in_quotes = true;
            field_was_quoted = true;
            ++i;
        } else if (c == separator) {
            row.push_back(field);
            field.clear();
            field_was_quoted = false;
            ++i;
        } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
            row.push_back(field);
            rows.push_back(row);
            row.clear();
            field.clear();
            field_was_quoted = false;
            i += 2;
        } else if (c == '\r' || c == '\n') {
            return std::nullopt;  // a bare line end outside quotes
        } else {
            if (field_was_quoted) {
                return std::nullopt;
            }
            field += c;
            ++i;
        }
    }
    if (in_quotes) {
        return std::nullopt;
    }
    if (!field.empty() || !row.empty()) {
        row.push_back(field);
        rows.push_back(row);
    }
    return rows;
}

std::size_t count_of(const std::string& text, const std::string& needle) {
    std::size_t count = 0;
    for (std::size_t at = text.find(needle); at != std::string::npos;
         at = text.find(needle, at + needle.size())) {
        ++count;
    }
    return count;
}

std::size_t student_dots_expected(const std::vector<ClassEntry>& entries) {
    std::size_t dots = 0;
    for (const ClassEntry& entry : entries) {
        for (const ReportRow& row : entry.report.rows) {
            dots += row.kernel == "student" && row.ratio ? 1 : 0;
        }
    }
    return dots;
}

// Whether a spreadsheet would run a cell as a formula: a text cell that starts with =, + or @ (a
// leading - is a number's sign or made text by the writer's apostrophe); a key cell (the
// folder), or a cell a spreadsheet splitting at ';' made, where it could also call a function,
// follow a link or reach a program outside a formula's string ("...", its quotes doubled).
bool could_run(const std::string& cell, bool key) {
    if (cell.empty() || std::string("=+-@").find(cell[0]) == std::string::npos) {
        return false;
    }
    if (cell[0] == '=' || !key) {
        return cell[0] != '-';
    }
    bool in_string = false;
    for (const char c : cell) {
        in_string = c == '"' ? !in_string : in_string;
        if (!in_string && std::string("()|![").find(c) != std::string::npos) {
            return true;
        }
    }
    return false;
}

const std::vector<std::string>* row_for_folder(const std::vector<std::vector<std::string>>& rows,
                                               const std::string& folder) {
    for (const auto& row : rows) {
        if (!row.empty() && row[0] == folder) {
            return &row;
        }
    }
    return nullptr;
}

// The options a batch gives: the starter kit's example to compare with.
ClassReportOptions with_example() {
    ClassReportOptions options;
    options.example_sentence = fixtures::kExampleSentence;
    options.example_student_id = fixtures::kExampleStudentId;
    return options;
}

// The text of the element with this id, tags and all, up to its closing tag.
std::string element_with_id(const std::string& html, const std::string& id,
                            const std::string& tag) {
    const std::size_t start = html.find("<" + tag + " id=\"" + id + "\"");
    if (start == std::string::npos) {
        return {};
    }
    const std::size_t end = html.find("</" + tag + ">", start);
    return html.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

const std::vector<std::string> kHeader = {"folder",
                                          "student_id",
                                          "score",
                                          "max_score",
                                          "verdict",
                                          "numbers",
                                          "submission_file",
                                          "compile_abi",
                                          "accumulator",
                                          "hidden_input",
                                          "predicted_degrees",
                                          "ordering",
                                          "consistency",
                                          "sentence",
                                          "sentence_text",
                                          "sentence_cluster",
                                          "flags",
                                          "cause",
                                          "reason"};

std::size_t column(const std::string& name) {
    return static_cast<std::size_t>(std::find(kHeader.begin(), kHeader.end(), name) -
                                    kHeader.begin());
}

}  // namespace

TEST_CASE("the gradebook is keyed by submission folder, one line per row, the typed id beside") {
    const std::vector<ClassEntry> entries = fixtures::synthetic_class();
    const std::string csv = write_gradebook_csv(entries, with_example());
    // Excel opens a CSV as UTF-8 only with a byte-order mark.
    CHECK(csv.rfind("\xEF\xBB\xBF", 0) == 0);
    const auto rows = parse_csv(csv);
    REQUIRE(rows.has_value());
    REQUIRE(rows->size() == entries.size() + 1);
    CHECK(count_of(csv, "\r\n") == entries.size() + 1);  // no field spans two lines
    CHECK((*rows)[0] == kHeader);
    for (const auto& row : *rows) {
        CHECK(row.size() == kHeader.size());
    }

    std::vector<std::string> folders;
    for (std::size_t i = 1; i < rows->size(); ++i) {
        folders.push_back((*rows)[i][0]);
    }
    // The folder "@trent" is the key as it is named: it can run nothing, and it joins.
    CHECK(folders.front() == "@trent");
    CHECK(std::is_sorted(folders.begin(), folders.end()));
    CHECK(std::set<std::string>(folders.begin(), folders.end()).size() == folders.size());

    SUBCASE("a pass has its score, where its numbers came from, its points per check") {
        const auto* alice = row_for_folder(*rows, "alice");
        REQUIRE(alice != nullptr);
        CHECK((*alice)[column("student_id")] == "s1001");
        CHECK((*alice)[column("score")] == "13");
        CHECK((*alice)[column("verdict")] == "pass");
        CHECK((*alice)[column("numbers")] == "timed on NVIDIA H200");
        CHECK((*alice)[column("predicted_degrees")] == "3");
        CHECK((*alice)[column("flags")] == "");
        CHECK(alice->back() == "All required checks passed.");
    }
    SUBCASE("a compile failure keeps its points; the checks it kept from running say so") {
        const auto* frank = row_for_folder(*rows, "frank");
        REQUIRE(frank != nullptr);
        CHECK((*frank)[column("score")] == "4");
        CHECK((*frank)[column("submission_file")] == "1");
        CHECK((*frank)[column("compile_abi")] == "0");
        // Numbers a spreadsheet sums: a check that did not run earned 0, never "not run".
        CHECK((*frank)[column("accumulator")] == "0");
        CHECK((*frank)[column("consistency")] == "0");
        CHECK(frank->back() == "Failed: Compile and ABI.");
    }
    SUBCASE("a compile failure on a machine without a GPU reads as the compile, not as no_gpu") {
        std::vector<ClassEntry> no_gpu = {entries[5]};
        REQUIRE(no_gpu[0].student_folder == "frank");
        no_gpu[0].report.interruption =
            Interruption{StopKind::no_gpu, "load", "no GPU answered (CUDA_ERROR_NO_DEVICE)", false};
        const auto no_gpu_rows = parse_csv(write_gradebook_csv(no_gpu));
        REQUIRE(no_gpu_rows.has_value());
        const auto* row = row_for_folder(*no_gpu_rows, "frank");
        REQUIRE(row != nullptr);
        CHECK(row->back() == "Failed: Compile and ABI.");
    }
    SUBCASE("an ungradable row has no score and no points a sum could add back") {
        const auto* grace = row_for_folder(*rows, "grace");
        REQUIRE(grace != nullptr);
        CHECK((*grace)[column("score")] == "");
        CHECK((*grace)[column("verdict")] == "ungradable");
        for (std::size_t c = column("submission_file"); c <= column("sentence"); ++c) {  // points
            CHECK_MESSAGE((*grace)[c] == "", kHeader[c]);
        }
        CHECK(grace->back() ==
              "timeout at run student stride 16: the GPU did not answer within 30 s");
    }
    SUBCASE("a blank id still has its row, under its folder, and is flagged") {
        const auto* nina = row_for_folder(*rows, "nina");
        REQUIRE(nina != nullptr);
        CHECK((*nina)[column("student_id")] == "");
        CHECK((*nina)[column("flags")] == "no student id; no sentence");
    }
    SUBCASE("two students who kept the starter kit's id are two rows, each flagged") {
        const auto* kim = row_for_folder(*rows, "kim");
        const auto* lee = row_for_folder(*rows, "lee");
        REQUIRE(kim != nullptr);
        REQUIRE(lee != nullptr);
        CHECK((*kim)[column("flags")] ==
              "the starter kit's student id; same student id as lee; sentence same as the "
              "starter kit's example; sentence same as lee (sentence cluster 1)");
        CHECK((*kim)[column("sentence_cluster")] == "1");
        CHECK((*lee)[column("sentence_cluster")] == "1");
        CHECK_FALSE((*kim)[column("sentence_text")].empty());
        CHECK_FALSE((*lee)[column("sentence_text")].empty());
        CHECK((*lee)[column("flags")].find("same student id as kim") != std::string::npos);
    }
    SUBCASE("hostile student ids come back on one line, and a formula is neutralised") {
        const auto* peggy = row_for_folder(*rows, "peggy");
        REQUIRE(peggy != nullptr);
        CHECK((*peggy)[column("student_id")] == "Smith, \"Bobby\"\\nTables");
        const auto* mallory = row_for_folder(*rows, "mallory");
        REQUIRE(mallory != nullptr);
        CHECK((*mallory)[column("student_id")] == std::string("'") + fixtures::kFormulaStudentId);
        const auto* oscar = row_for_folder(*rows, "oscar");
        REQUIRE(oscar != nullptr);
        CHECK((*oscar)[column("student_id")] == fixtures::kScriptStudentId);
    }
    SUBCASE("no cell that a spreadsheet would run is left as it was") {
        for (const auto& row : *rows) {
            CHECK_MESSAGE(!could_run(row[0], true), row[0]);
            for (std::size_t c = 1; c < row.size(); ++c) {
                CHECK_MESSAGE(!could_run(row[c], false), row[c]);
            }
        }
    }
}

TEST_CASE("control characters in a student's id or reason never reach the gradebook raw") {
    std::vector<ClassEntry> entries = fixtures::synthetic_class();
    entries[0].report.student_id = "\x1b]0;owned\x07\x1b[2J";
    entries[0].report.summary = "#error \x1b[31mFAIL\r\nPASS 13/13";
    entries[0].report.verdict = Verdict::fail;
    const std::string csv = write_gradebook_csv(entries);
    CHECK(csv.find('\x1b') == std::string::npos);
    CHECK(csv.find('\x07') == std::string::npos);
    const auto rows = parse_csv(csv);
    REQUIRE(rows.has_value());
    CHECK(rows->size() == entries.size() + 1);
    const auto* alice = row_for_folder(*rows, "alice");
    REQUIRE(alice != nullptr);
    // Shown as escapes, and (starting with a control) never a formula either.
    CHECK((*alice)[column("student_id")] == "'\\x1b]0;owned\\x07\\x1b[2J");
    CHECK(alice->back() == "#error \\x1b[31mFAIL\\r\\nPASS 13/13");
}

TEST_CASE("a folder starting with - or + joins as it is named, an id like it is made text") {
    std::vector<ClassEntry> entries = fixtures::synthetic_class();
    entries[0].student_folder = "-dash-first";
    entries[0].report.student_id = "+SUM(A1:A9)";
    entries[1].student_folder = "=HYPERLINK(\"http://x\";\"y\")";
    const std::string csv = write_gradebook_csv(entries);
    const auto rows = parse_csv(csv);
    REQUIRE(rows.has_value());
    const auto* row = row_for_folder(*rows, "-dash-first");
    REQUIRE(row != nullptr);
    CHECK((*row)[column("student_id")] == "'+SUM(A1:A9)");
    CHECK((*row)[column("score")] == "13");
    // A folder that could run as a formula is made text even as a key; its ; is quoted.
    CHECK(row_for_folder(*rows, "'=HYPERLINK(\"http://x\";\"y\")") != nullptr);
    CHECK(csv.find("\"'=HYPERLINK(\"\"http://x\"\";") != std::string::npos);
}

TEST_CASE("a sentence that is a formula to a spreadsheet splitting at ; is quoted and made text") {
    std::vector<ClassEntry> entries = fixtures::synthetic_class();
    entries[0].report.sentence = ";=cmd|' /C calc'!A0";
    entries[1].report.sentence = "@SUM(1+1)*cmd|' /C calc'!A0";
    const std::string csv = write_gradebook_csv(entries);
    CHECK(csv.find(",\";'=cmd|' /C calc'!A0\",") != std::string::npos);
    CHECK(csv.find(",\"'@SUM(1+1)*cmd|' /C calc'!A0\",") != std::string::npos);
    // Read with ; as the separator, as a European spreadsheet does, no cell starts a formula.
    const auto rows = parse_csv(csv, ';');
    REQUIRE(rows.has_value());
    for (const auto& row : *rows) {
        for (std::size_t c = 0; c < row.size(); ++c) {
            CHECK_MESSAGE(!could_run(row[c], c == 0), row[c]);
        }
    }
    const auto by_comma = parse_csv(csv);
    REQUIRE(by_comma.has_value());
    CHECK((*row_for_folder(*by_comma, "alice"))[column("sentence_text")] == ";'=cmd|' /C calc'!A0");
}

TEST_CASE("failure reasons rank root causes: each submission once, under its first failing stage") {
    const std::vector<ClassEntry> entries = fixtures::synthetic_class();
    const auto summary = summarize_class(entries);
    std::vector<std::string> keys;
    for (const auto& reason : summary.failure_reasons) {
        keys.push_back(reason.key);
    }
    CHECK(keys == std::vector<std::string>{"check:predicted_degrees", "check:accumulator",
                                           "check:compile_abi", "check:consistency"});
    CHECK(summary.failure_reasons[0].folders == std::vector<std::string>{"ivan", "mallory"});
    std::size_t counted = 0;
    for (const auto& reason : summary.failure_reasons) {
        counted += reason.folders.size();
    }
    CHECK(counted == summary.failed);  // every failure once, none twice

    SUBCASE("knock-on failures after a compile error count under the compile alone") {
        // A grader that marked the later checks failed rather than not run.
        std::vector<ClassEntry> old_style = {entries[5]};
        REQUIRE(old_style[0].student_folder == "frank");
        for (CheckResult& check : old_style[0].report.checks) {
            if (check.not_run()) {
                check.status = CheckStatus::failed;
            }
        }
        const auto reasons = summarize_class(old_style).failure_reasons;
        REQUIRE(reasons.size() == 1);
        CHECK(reasons[0].key == "check:compile_abi");
    }
    SUBCASE("a kernel that faulted is its own root cause, before the checks it spoiled") {
        std::vector<ClassEntry> faulted = {entries[0]};
        Report& report = faulted[0].report;
        report.verdict = Verdict::fail;
        report.interruption =
            Interruption{StopKind::fault, "run student stride 8", "illegal address", true};
        for (CheckResult& check : report.checks) {
            if (check.id == "accumulator" || check.id == "ordering") {
                check.status = CheckStatus::failed;
            }
        }
        const auto reasons = summarize_class(faulted).failure_reasons;
        REQUIRE(reasons.size() == 1);
        CHECK(reasons[0].key == "cause:kernel_fault");
        CHECK(reasons[0].reason == "the kernel faulted");
    }
    SUBCASE("the checks that did not run are counted as not run, not as failures") {
        const auto accumulator =
            std::find_if(summary.checks.begin(), summary.checks.end(),
                         [](const CheckSummary& check) { return check.id == "accumulator"; });
        REQUIRE(accumulator != summary.checks.end());
        CHECK(accumulator->failed == 1);   // erin
        CHECK(accumulator->not_run == 1);  // frank
        CHECK(accumulator->passed == 14);
    }
    SUBCASE("ungradable submissions are listed apart with their reason, never as failures") {
        REQUIRE(summary.not_graded.size() == 1);
        CHECK(summary.not_graded[0].folder == "grace");
        CHECK(summary.not_graded[0].reason.find("the GPU did not answer") != std::string::npos);
        for (const auto& reason : summary.failure_reasons) {
            CHECK(std::find(reason.folders.begin(), reason.folders.end(), "grace") ==
                  reason.folders.end());
        }
    }
}

TEST_CASE("the class summary JSON counts verdicts, scores, checks, causes, flags and strides") {
    const std::vector<ClassEntry> entries = fixtures::synthetic_class();
    const nlohmann::json run_info = {{"grader_version", "0.1.0"}, {"seed", 42}};
    ClassReportOptions options = with_example();
    options.skipped = {{".git", "hidden (the name starts with '.')"},
                       {"roster.csv", "a file, not a submission folder"}};
    const auto summary =
        nlohmann::json::parse(write_class_summary_json(entries, run_info, options));

    CHECK(summary["submissions"] == 17);
    CHECK(summary["verdicts"]["pass"] == 11);
    CHECK(summary["verdicts"]["fail"] == 5);
    CHECK(summary["verdicts"]["ungradable"] == 1);
    CHECK(summary["score"]["graded"] == 16);
    // 11 at 13, then 6, 4, 11, 8 and 10: 182 points over 16 graded submissions.
    CHECK(summary["score"]["mean"].get<double>() == doctest::Approx(11.375));
    CHECK(summary["score"]["median"].get<double>() == doctest::Approx(13.0));
    CHECK(summary["run"] == run_info);
    CHECK(summary["exercise_id"] == "day15-bank-conflicts");
    CHECK(summary["numbers"]["timed"] == 17);
    CHECK(summary["numbers"]["modeled"] == 0);
    CHECK(summary["numbers"]["timed_on"] == nlohmann::json({"NVIDIA H200"}));

    const auto& checks = summary["checks"];
    REQUIRE(checks.size() == 8);
    CHECK(checks[2]["id"] == "accumulator");
    CHECK(checks[2]["reported"] == 16);  // the timeout stopped before any check
    CHECK(checks[2]["failed"] == 1);
    CHECK(checks[2]["not_run"] == 1);

    const auto& reasons = summary["failure_reasons"];
    REQUIRE(reasons.size() == 4);
    CHECK(reasons[0]["key"] == "check:predicted_degrees");
    CHECK(reasons[0]["count"] == 2);
    CHECK(summary["not_graded"] ==
          nlohmann::json::array({{{"folder", "grace"},
                                  {"reason",
                                   "timeout at run student stride 16: the GPU did not "
                                   "answer within 30 s"}}}));
    // The sentence is for the instructor to review: an empty one is a flag, not a failure reason.
    for (const auto& reason : reasons) {
        CHECK(reason["key"] != "check:sentence");
    }

    const auto& flags = summary["flags"];
    INFO(flags.dump());
    CHECK(flags.size() == 3);
    CHECK(flags["kim"]["example_id"] == true);
    CHECK(flags["kim"]["same_id_as"] == nlohmann::json({"lee"}));
    CHECK(flags["lee"]["sentence_same_as_example"] == true);
    CHECK(flags["lee"]["same_sentence_as"] == nlohmann::json({"kim"}));
    CHECK(flags["nina"]["no_id"] == true);
    CHECK(flags["nina"]["no_sentence"] == true);
    CHECK(summary["skipped"].size() == 2);
    CHECK(summary["skipped"][1]["name"] == "roster.csv");

    const auto& strides = summary["strides"];
    const auto stride16 = std::find_if(strides.begin(), strides.end(),
                                       [](const auto& row) { return row["stride"] == 16; });
    REQUIRE(stride16 != strides.end());
    CHECK((*stride16)["degree"] == 16);
    CHECK((*stride16)["students"] == 15);  // frank did not compile; grace stopped at 16
    CHECK((*stride16)["student_ratio"]["min"].get<double>() ==
          doctest::Approx(0.55 * 12.55).epsilon(0.01));  // erin's kernel skips reads
    CHECK((*stride16)["reference_ratio"].get<double>() == doctest::Approx(12.55).epsilon(0.01));
    const auto stride65 = std::find_if(strides.begin(), strides.end(),
                                       [](const auto& row) { return row["stride"] == 65; });
    REQUIRE(stride65 != strides.end());
    CHECK((*stride65)["students"] == 2);  // an unnamed stride: only the students it was drawn for
}

TEST_CASE("sentences and ids are flagged for the class, and a student learns only how many") {
    const auto flags = flag_submissions(fixtures::synthetic_class(), with_example());
    CHECK(flags.size() == 3);
    REQUIRE(flags.count("lee") == 1);
    const SentenceReview review = sentence_review_of(flags.at("lee"));
    CHECK(review.same_as_example);
    CHECK(review.same_as_others == 1);
    CHECK(flags.count("alice") == 0);

    SUBCASE("without the starter kit's example, copies are still found among the class") {
        const auto alone = flag_submissions(fixtures::synthetic_class(), {});
        CHECK_FALSE(alone.at("kim").sentence_same_as_example);
        CHECK(alone.at("kim").same_sentence_as == std::vector<std::string>{"lee"});
    }
}

TEST_CASE("a grade the harness could not finish is not flagged 'no student id'") {
    std::vector<ClassEntry> entries = fixtures::synthetic_class();
    // The harness failed before the answers file was read: no id, through no fault of the
    // student's (the batch's harness_failure_report); and a machine that stopped answering, whose
    // ungradable grade is graded again before its id means anything.
    Report crashed = fixtures::ungradable_timeout_report("");
    crashed.interruption = Interruption{StopKind::crash, "", "the worker could not start", false};
    entries.push_back({"quentin", "quentin/report.html", crashed, {}});
    entries.push_back(
        {"rupert", "rupert/report.html", fixtures::ungradable_timeout_report(""), {}});
    // The student's own kernel crashed after the answers were read without an id: still flagged.
    Report own_crash = fixtures::ungradable_timeout_report("");
    own_crash.interruption = Interruption{StopKind::crash, "run student stride 8", "trap", true};
    entries.push_back({"sybil", "sybil/report.html", own_crash, {}});

    const auto flags = flag_submissions(entries, with_example());
    const auto no_id = [&](const std::string& folder) {
        const auto found = flags.find(folder);
        return found != flags.end() && found->second.no_id;
    };
    CHECK_FALSE(no_id("quentin"));
    CHECK_FALSE(no_id("rupert"));
    CHECK(no_id("sybil"));
    CHECK(no_id("nina"));  // left the id blank: the student's to fix
}

TEST_CASE("a student id that is not UTF-8 does not stop the class summary") {
    std::vector<ClassEntry> entries = fixtures::synthetic_class();
    entries[1].report.student_id = "s\xff\xfe";
    entries[1].student_folder = "b\xc3";
    entries[1].report.verdict = Verdict::fail;
    entries[1].report.checks[0].status = CheckStatus::failed;
    std::string json;
    REQUIRE_NOTHROW(json = write_class_summary_json(entries, nlohmann::json::object()));
    nlohmann::json parsed;  // kept: parse() warns when its result is dropped
    CHECK_NOTHROW(parsed = nlohmann::json::parse(json));
}

TEST_CASE("the class summary JSON writes no bidi, C1 or separator character raw, and keeps them") {
    const std::string hostile = "bob\xe2\x80\xae\xe2\x81\xa6\xc2\x85\xe2\x80\xa8\x7f Jos\xc3\xa9";
    std::vector<ClassEntry> entries = fixtures::synthetic_class();
    entries[1].student_folder = hostile;
    entries[1].report.student_id = hostile;
    entries[1].report.verdict = Verdict::fail;
    entries[1].report.checks[0].status = CheckStatus::failed;
    const nlohmann::json run_info = {{"class_dir", "/classes/" + hostile}};
    const std::string written = write_class_summary_json(entries, run_info);
    for (const char* raw : {"\xe2\x80\xae", "\xe2\x81\xa6", "\xc2\x85", "\xe2\x80\xa8", "\x7f"}) {
        CHECK(written.find(raw) == std::string::npos);
    }
    CHECK(written.find("Jos\xc3\xa9") != std::string::npos);
    const auto summary = nlohmann::json::parse(written);
    CHECK(summary["run"] == run_info);
    bool folder_kept = false;
    for (const auto& reason : summary["failure_reasons"]) {
        for (const auto& folder : reason["folders"]) {
            folder_kept = folder_kept || folder == hostile;
        }
    }
    CHECK(folder_kept);
}

TEST_CASE("the class report is one page with no external resource and every string escaped") {
    const std::vector<ClassEntry> entries = fixtures::synthetic_class();
    ClassReportOptions options = with_example();
    options.generated_at = "2026-12-02 13:00 UTC";
    options.skipped = {{"roster.csv", "a file, not a submission folder"}};
    const std::string html = write_class_report_html(entries, options);

    CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
    CHECK(html.find("<title>Class report: Day 15: shared-memory bank conflicts (2026-12-02 "
                    "13:00 UTC)</title>") != std::string::npos);
    for (const char* id : {"id=\"verdict-counts\"", "id=\"score-histogram\"", "id=\"ratio-chart\"",
                           "id=\"failure-reasons\"", "id=\"checks\"", "id=\"not-graded\"",
                           "id=\"review\"", "id=\"skipped\"", "id=\"students\""}) {
        CHECK_MESSAGE(count_of(html, id) == 1, id);
    }

    SUBCASE("nothing is fetched from anywhere") {
        CHECK(html.find("http://") == std::string::npos);
        CHECK(html.find("https://") == std::string::npos);
        CHECK(html.find("src=") == std::string::npos);
        CHECK(html.find("@import") == std::string::npos);
        CHECK(html.find("url(") == std::string::npos);
        CHECK(html.find("<link") == std::string::npos);
        CHECK(html.find("<img") == std::string::npos);
        CHECK(html.find("default-src 'none'") != std::string::npos);
        const std::regex href(R"(href="([^"]*)\")");
        std::size_t reports = 0;
        for (auto it = std::sregex_iterator(html.begin(), html.end(), href);
             it != std::sregex_iterator(); ++it) {
            const std::string target = (*it)[1];
            CHECK_MESSAGE(target.find(':') == std::string::npos, target);
            CHECK_MESSAGE(target.rfind("//", 0) != 0, target);
            reports += target.rfind('#', 0) == 0 ? 0 : 1;  // else a place on this page
        }
        CHECK(reports == entries.size());
    }
    SUBCASE("its one script is inline, and the only one the page's policy lets run") {
        CHECK(count_of(html, "<script") == 1);
        const std::size_t open = html.find("<script>");
        REQUIRE(open != std::string::npos);
        const std::size_t start = open + std::string("<script>").size();
        const std::string script = html.substr(start, html.find("</script>", start) - start);
        const auto digest = sha256(script);
        const std::string hash =
            base64(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
        CHECK(html.find("script-src 'sha256-" + hash + "'") != std::string::npos);
        CHECK(html.find("unsafe-inline'; script") != std::string::npos);  // style only
        CHECK(html.find("'unsafe-eval'") == std::string::npos);
        CHECK(script.find("innerHTML") == std::string::npos);  // it moves rows, writes no markup
    }
    SUBCASE("student strings are escaped, links stay on this disk") {
        CHECK(html.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
        CHECK(html.find("Smith, &quot;Bobby&quot;\\nTables") != std::string::npos);
        CHECK(html.find("=cmd|&#39; /C calc&#39;!A0") != std::string::npos);
        CHECK(html.find("href=\"%40trent/report.html\"") != std::string::npos);
        CHECK(html.find("href=\"javascript%3Aalert%281%29//grace/report.html\"") !=
              std::string::npos);
    }
    SUBCASE("a GPU class says where it was timed, and calls its ratios measured") {
        CHECK(html.find("Timed on NVIDIA H200 (17 submissions)") != std::string::npos);
        CHECK(html.find("Measured ratio per stride") != std::string::npos);
        CHECK(html.find(">time / time at stride 1 (log scale)<") != std::string::npos);
        // Said once above the students, not on each of their rows.
        CHECK(count_of(html, "Every student&#39;s numbers: timed on NVIDIA H200.") == 1);
        CHECK(count_of(html, "<td class=\"numbers\">") == 0);
    }
    SUBCASE("a student's row is one line; the whole reason and the flags are in its details") {
        const std::string students = element_with_id(html, "students", "table");
        CHECK(students.find("class=\"one-line\"") != std::string::npos);
        // frank did not compile: the first line of his reason in the row, all of it inside.
        const std::size_t frank = students.find("<td class=\"folder\">frank</td>");
        REQUIRE(frank != std::string::npos);
        const std::string row = students.substr(frank, students.find("</tr>", frank) - frank);
        CHECK(row.find("<details><summary>") != std::string::npos);
        CHECK(row.find("<div class=\"reason\">") != std::string::npos);
        // kim: her flags counted in the line, listed in the details.
        const std::size_t kim = students.find(">kim</td>");
        REQUIRE(kim != std::string::npos);
        const std::string kim_row = students.substr(kim, students.find("</tr>", kim) - kim);
        CHECK(kim_row.find("<span class=\"badge review\">4 flags</span>") != std::string::npos);
        CHECK(kim_row.find("<div class=\"flags\">the starter kit&#39;s student id; same student "
                           "id as lee") != std::string::npos);
        // Nothing said twice on one row and nothing lost: every flag line and reason is there.
        CHECK(count_of(students, "<details>") <= entries.size());
    }
    SUBCASE("the charts and tables have one mark per thing counted") {
        CHECK(count_of(html, "class=\"bar\"") == 14);      // scores 0 to 13
        CHECK(count_of(html, "data-count=\"11\" ") == 1);  // the 11 passes at 13
        CHECK(count_of(html, "class=\"student-dot\"") == student_dots_expected(entries));
        // 1, 2, 3, 4, 8, 16, 32, 33 and the unnamed 5, 6, 7, 12, 24, 31, 48, 65
        CHECK(count_of(html, "class=\"reference-point\"") == 16);
        CHECK(count_of(html, "class=\"model-point\"") == 16);
        CHECK(count_of(html, "class=\"student-row\"") == entries.size());
        CHECK(count_of(html, "class=\"failure-reason\"") == 4);
        CHECK(count_of(html, "class=\"check-row\"") == 8);
        CHECK(count_of(html, "class=\"not-graded-row\"") == 1);
        CHECK(count_of(html, "class=\"review-row\"") == 3);
        CHECK(count_of(html, "class=\"skipped-row\"") == 1);
        CHECK(html.find("No data") == std::string::npos);
    }
    SUBCASE("the ungradable student is listed apart, not among the failure reasons") {
        const std::string reasons = element_with_id(html, "failure-reasons", "table");
        CHECK(reasons.find("grace") == std::string::npos);
        CHECK(reasons.find("Hidden-input") == std::string::npos);  // frank's knock-on
        CHECK(element_with_id(html, "not-graded", "table").find("grace") != std::string::npos);
    }
    SUBCASE("the students table is sorted by folder") {
        const std::string students = element_with_id(html, "students", "table");
        std::vector<std::size_t> positions;
        for (const char* folder : {"@trent", "alice", "bob", "frank", "grace", "peggy"}) {
            positions.push_back(
                students.find(std::string("<td class=\"folder\">") + folder + "</td>"));
        }
        CHECK(std::find(positions.begin(), positions.end(), std::string::npos) == positions.end());
        CHECK(std::is_sorted(positions.begin(), positions.end()));
    }
}

TEST_CASE("a class graded on the simulator says modeled everywhere, never measured or timed") {
    const std::vector<ClassEntry> entries = fixtures::simulated_class();
    const std::string html = write_class_report_html(entries, with_example());
    CHECK(html.find("modeled on the PTX simulator, no GPU (17 submissions)") != std::string::npos);
    CHECK(html.find("Modeled cost ratio per stride") != std::string::npos);
    CHECK(html.find(">modeled cost / modeled cost at stride 1 (log scale)<") != std::string::npos);
    CHECK(html.find("data-numbers=\"modeled\"") != std::string::npos);
    CHECK(html.find("Measured ratio") == std::string::npos);
    CHECK(html.find("time / time at stride 1") == std::string::npos);
    CHECK(html.find("a GPU with 32 banks") == std::string::npos);
    CHECK(html.find("Timed on") == std::string::npos);
    CHECK(count_of(html, "Every student&#39;s numbers: modeled on the PTX simulator.") == 1);
    // A class that mixes both says it on each row.
    std::vector<ClassEntry> mixed = entries;
    mixed.front().report.environment = fixtures::synthetic_class().front().report.environment;
    const std::string mixed_html = write_class_report_html(mixed, with_example());
    CHECK(count_of(mixed_html, "<td class=\"numbers\">modeled on the PTX simulator</td>") ==
          entries.size() - 1);
    CHECK(count_of(mixed_html, "<td class=\"numbers\">timed on NVIDIA H200</td>") == 1);
    CHECK(mixed_html.find("Every student&#39;s numbers") == std::string::npos);

    const auto rows = parse_csv(write_gradebook_csv(entries, with_example()));
    REQUIRE(rows.has_value());
    for (std::size_t i = 1; i < rows->size(); ++i) {
        CHECK((*rows)[i][column("numbers")] == "modeled on the PTX simulator");
    }
    const auto summary = nlohmann::json::parse(write_class_summary_json(entries, nullptr));
    CHECK(summary["numbers"]["modeled"] == 17);
    CHECK(summary["numbers"]["timed"] == 0);
    CHECK(summary["devices"].empty());
}

TEST_CASE("an empty class still gives a header, a summary and a page whose plots say no data") {
    const std::vector<ClassEntry> none;
    const auto rows = parse_csv(write_gradebook_csv(none));
    REQUIRE(rows.has_value());
    REQUIRE(rows->size() == 1);
    CHECK(rows->front() == std::vector<std::string>{
                               "folder", "student_id", "score", "max_score", "verdict", "numbers",
                               "sentence_text", "sentence_cluster", "flags", "cause", "reason"});
    const auto summary = nlohmann::json::parse(write_class_summary_json(none, nullptr));
    CHECK(summary["submissions"] == 0);
    CHECK(summary["score"]["mean"].is_null());
    ClassReportOptions options;
    options.exercise_id = "day15";
    options.exercise_title = "Day 15";
    const std::string html = write_class_report_html(none, options);
    CHECK(html.find("id=\"ratio-chart\"") != std::string::npos);
    CHECK(html.find("No submission could be graded.") != std::string::npos);
    CHECK(element_with_id(html, "score-histogram", "svg").find("No data") != std::string::npos);
    CHECK(element_with_id(html, "ratio-chart", "svg").find("No data") != std::string::npos);
    CHECK(html.find("nan") == std::string::npos);
}

TEST_CASE("an exercise without a sweep (Part 2) plots each kernel against its base, no strides") {
    // Two students of the padded transpose, graded on a GPU: rows per kernel, stride 0.
    const auto part2 = [](const std::string& folder, double mine, int grade) {
        ClassEntry entry;
        entry.student_folder = folder;
        Report& report = entry.report;
        report.exercise_id = "day15-padding";
        report.verdict = Verdict::pass;
        report.environment.backend = "cuda";
        report.environment.gpu_available = true;
        report.environment.device_name = "NVIDIA H200";
        report.ratio_base = "copy, no transpose";
        const double wobble = 1.0 + 0.01 * grade;
        const struct {
            const char* kernel;
            const char* label;
            unsigned degree;
            double ratio;
        } rows[] = {{"student", "your kernel", 1, mine},
                    {"copy", "copy, no transpose", 0, 1.0},
                    {"unpadded", "transpose tile[32][32]", 32, 2.47 * wobble},
                    {"padded", "transpose tile[32][33]", 1, 1.10 * wobble}};
        for (const auto& r : rows) {
            ReportRow row;
            row.kernel = r.kernel;
            row.label = r.label;
            row.degree = r.degree;
            row.ratio = r.ratio;
            report.rows.push_back(row);
        }
        return entry;
    };
    const std::vector<ClassEntry> entries = {part2("ana", 1.09, 0), part2("ben", 2.5, 1)};
    const ClassSummary summary = summarize_class(entries);
    CHECK_FALSE(summary.sweep);
    CHECK(summary.ratio_base == "copy, no transpose");
    REQUIRE(summary.strides.size() == 4);
    CHECK(summary.strides[0].label == "your kernel");
    CHECK(summary.strides[0].student_count == 2);
    REQUIRE(summary.strides[0].student_ratio);
    CHECK(summary.strides[0].student_ratio->max == doctest::Approx(2.5));
    CHECK(summary.strides[2].label == "transpose tile[32][32]");
    CHECK(summary.strides[2].degree == 32);
    REQUIRE(summary.strides[2].reference_ratio);
    CHECK(*summary.strides[2].reference_ratio == doctest::Approx(2.47 * 1.005));

    const std::string html = write_class_report_html(entries, ClassReportOptions{});
    const std::string chart = element_with_id(html, "ratio-chart", "svg");
    CHECK(html.find("Measured ratio per kernel, against the copy, no transpose") !=
          std::string::npos);
    CHECK(chart.find("time / time of the copy, no transpose") != std::string::npos);
    CHECK(chart.find("transpose tile[32][33]") != std::string::npos);
    CHECK(chart.find("degree 32") != std::string::npos);
    // Nothing of the probe's sweep: no stride axis, no gcd model.
    CHECK(chart.find("gcd") == std::string::npos);
    CHECK(chart.find("stride") == std::string::npos);
    CHECK(chart.find("model-point") == std::string::npos);
    CHECK(element_with_id(html, "stride-table", "table").find("<th>kernel</th>") !=
          std::string::npos);
    const auto json_summary =
        nlohmann::json::parse(write_class_summary_json(entries, nlohmann::json::object()));
    CHECK(json_summary["strides"][0]["kernel"] == "your kernel");
}

TEST_CASE("sentences are grouped into clusters: identical and near-identical, each listed once") {
    const auto student = [](const std::string& folder, const std::string& sentence) {
        ClassEntry entry;
        entry.student_folder = folder;
        entry.report.student_id = folder;
        entry.report.verdict = Verdict::pass;
        entry.report.sentence = sentence;
        return entry;
    };
    const std::string copied =
        "Stride 3 is odd, so it shares no factor with 32 and every lane "
        "reads its own bank.";
    std::vector<ClassEntry> entries;
    for (int i = 0; i < 60; ++i) {
        // Case and spacing aside, the same sentence.
        entries.push_back(student("s" + std::to_string(100 + i), i % 2 ? copied : "  " + copied));
    }
    // Near-identical: one word changed.
    entries.push_back(student("t1",
                              "Stride 3 is odd, so it shares no factor with 32 and every "
                              "lane reads its own memory bank."));
    entries.push_back(student("u1", "Padding the tile by one column shifts each row by a bank."));
    entries.push_back(student("u2", "Stride 16 puts 16 lanes on two banks, a 16-way conflict."));

    const std::vector<SentenceCluster> clusters = cluster_sentences(entries);
    REQUIRE(clusters.size() == 1);
    CHECK(clusters[0].number == 1);
    CHECK(clusters[0].folders.size() == 61);
    CHECK_FALSE(clusters[0].identical);
    CHECK(std::find(clusters[0].folders.begin(), clusters[0].folders.end(), "t1") !=
          clusters[0].folders.end());

    // A flag line is short whatever the cluster's size: no 60 names on each of 60 rows.
    const auto flags = flag_submissions(entries, ClassReportOptions{});
    const std::vector<std::string> lines = flags.at("s100").lines();
    REQUIRE(lines.size() == 1);
    CHECK(lines[0] == "sentence nearly the same as 60 others' (sentence cluster 1)");
    CHECK(flags.find("u1") == flags.end());

    // The page lists the cluster once, and each student's own sentence.
    const std::string html = write_class_report_html(entries, ClassReportOptions{});
    const std::string table = element_with_id(html, "sentences", "table");
    const std::string own = element_with_id(html, "own-sentences", "table");
    CHECK(count_of(table, "class=\"sentence-cluster\"") == 1);
    CHECK(count_of(own, "class=\"sentence-own\"") == 2);
    CHECK(own.find("Padding the tile by one column") != std::string::npos);
    CHECK(count_of(html, "every lane reads its own bank") == 1);
    // To look at twice: the 61 whose one flag is the shared sentence are one row, folded.
    const std::string review = element_with_id(html, "review", "table");
    CHECK(count_of(review, "class=\"review-row\"") == 0);
    CHECK(count_of(review, "class=\"review-cluster-row\"") == 1);
    CHECK(review.find("<summary>61 students</summary>s100, s101, ") != std::string::npos);
    CHECK(review.find("t1") != std::string::npos);
    CHECK(review.find("sentence nearly the same as the others&#39; of sentence cluster 1 "
                      "(listed under Sentences), and nothing else") != std::string::npos);
    CHECK(html.find("<details open><summary>2 sentences of their own") != std::string::npos);
    // One is "1 sentence of its own", never "1 sentences of their own".
    std::vector<ClassEntry> one_own = entries;
    one_own.erase(std::find_if(one_own.begin(), one_own.end(),
                               [](const ClassEntry& e) { return e.student_folder == "u1"; }));
    const std::string one_html = write_class_report_html(one_own, ClassReportOptions{});
    CHECK(one_html.find("<details open><summary>1 sentence of its own") != std::string::npos);
    CHECK(one_html.find("1 sentences") == std::string::npos);

    // The summary carries the clusters with their members.
    const auto summary = nlohmann::json::parse(write_class_summary_json(entries, nullptr));
    REQUIRE(summary["sentence_clusters"].size() == 1);
    CHECK(summary["sentence_clusters"][0]["folders"].size() == 61);
}

TEST_CASE("two different sentences on one subject are not clustered") {
    ClassEntry a;
    a.student_folder = "a";
    a.report.sentence = "Stride 3 shares no factor with 32, so it is conflict free.";
    ClassEntry b = a;
    b.student_folder = "b";
    b.report.sentence = "Stride 16 shares a factor of 16 with 32, a 16-way conflict.";
    CHECK(cluster_sentences({a, b}).empty());
    b.report.sentence = "stride 3 shares no factor with 32 so it is conflict free";
    REQUIRE(cluster_sentences({a, b}).size() == 1);
    CHECK(cluster_sentences({a, b})[0].identical);
}

TEST_CASE("near-identical means a word or two changed, not another clause on the same idea") {
    // The variants scripts/bench/make_class.py --own-sentences writes, as a class writes them.
    const auto clustered = [](const std::string& one, const std::string& other) {
        ClassEntry a;
        a.student_folder = "a";
        a.report.sentence = one;
        ClassEntry b = a;
        b.student_folder = "b";
        b.report.sentence = other;
        return cluster_sentences({a, b}).size() == 1;
    };
    const std::string fixture =
        "Stride 3 shares no factor with 32, so its 32 lanes land in 32 different banks and it is "
        "conflict free like stride 1; the degree depends on divisibility, not on size.";
    SUBCASE("case, punctuation and spacing are the same sentence") {
        CHECK(clustered(fixture,
                        "stride 3 shares no factor with 32 so its 32 lanes land in 32 different "
                        "banks and it is conflict free like stride 1 - the degree depends on "
                        "divisibility not on size"));
        CHECK(clustered(fixture,
                        "  STRIDE 3 shares no factor with 32,so its 32 lanes land in 32 "
                        "different banks and it is conflict-free like stride 1; the "
                        "degree depends on divisibility, not on size!"));
    }
    SUBCASE("a word swapped, a letter changed, or a word added joins") {
        std::string swapped = fixture;
        swapped.replace(swapped.find("different"), 9, "distinct");
        CHECK(clustered(fixture, swapped));
        std::string typo = fixture;
        typo.replace(typo.find("different"), 9, "diferent");
        CHECK(clustered(fixture, typo));
        std::string two = swapped;
        two.replace(two.find("size"), 4, "magnitude");
        CHECK(clustered(fixture, two));
        std::string added = fixture;
        added.replace(added.find("banks"), 5, "shared memory banks");
        CHECK(clustered(fixture, added));
    }
    SUBCASE("two correct sentences that share two clauses but open differently stay apart") {
        // Trigram overlap of these pairs is 0.86 and 0.85: they were once one cluster.
        CHECK_FALSE(
            clustered("Stride 3 is odd, so the addresses 3L mod 32 are a permutation of "
                      "the banks, and the time depends on the shared factor, not on how "
                      "big the stride is (student 132).",
                      "The stride 3 has no factor 2, so the addresses 3L mod 32 are a "
                      "permutation of the banks, and the time depends on the shared "
                      "factor, not on how big the stride is (student 136)."));
        CHECK_FALSE(
            clustered("Stride 3 is odd, so lane L lands in bank 3L mod 32, and it runs "
                      "like stride 1, while 2 and 4 are 2-way and 4-way conflicts.",
                      "Since gcd(3, 32) is 1, so lane L lands in bank 3L mod 32, and it "
                      "runs like stride 1, while 2 and 4 are 2-way and 4-way conflicts."));
        CHECK_FALSE(clustered(fixture,
                              "Odd strides are conflict free because gcd(odd, 32) = 1, "
                              "so 3 is as fast as 1."));
    }
}

TEST_CASE("an interrupted batch never looks complete: page, gradebook and summary say so") {
    const std::vector<ClassEntry> entries = fixtures::synthetic_class();
    ClassReportOptions options = with_example();
    options.interrupted = true;
    options.unfinished = {"zed", "yan"};
    const std::string html = write_class_report_html(entries, options);
    const std::string banner = element_with_id(html, "interrupted", "p");
    CHECK(banner.find("This run was interrupted: 2 of " + std::to_string(entries.size() + 2)) !=
          std::string::npos);
    const std::string not_graded = element_with_id(html, "not-graded", "table");
    CHECK(not_graded.find("zed") != std::string::npos);
    CHECK(not_graded.find("yan") != std::string::npos);
    CHECK(html.find("Every submission was graded") == std::string::npos);
    // No other sentence of the page says everything was graded either.
    CHECK(html.find("was graded.") == std::string::npos);
    CHECK(html.find("The batch was interrupted before these grades finished") != std::string::npos);

    const auto rows = parse_csv(write_gradebook_csv(entries, options));
    REQUIRE(rows.has_value());
    const auto* zed = row_for_folder(*rows, "zed");
    REQUIRE(zed != nullptr);
    CHECK((*zed)[column("verdict")] == "not graded");
    CHECK((*zed)[column("score")] == "");
    CHECK(zed->back().find("interrupted") != std::string::npos);

    const auto summary = nlohmann::json::parse(write_class_summary_json(entries, nullptr, options));
    CHECK(summary["interrupted"] == true);
    CHECK(summary["unfinished"] == nlohmann::json({"zed", "yan"}));

    // The same class, run to the end: no banner.
    CHECK(write_class_report_html(entries, with_example()).find("id=\"interrupted\"") ==
          std::string::npos);
}

TEST_CASE("missing files are root causes of their own, not 'Compile and ABI' or 'Answers file'") {
    const auto entry = [](const std::string& folder, bool source_missing, bool answers_missing) {
        ClassEntry e;
        e.student_folder = folder;
        e.report.verdict = Verdict::fail;
        CheckResult answers;
        answers.id = "submission_file";
        answers.title = "Answers file";
        answers.status = answers_missing ? CheckStatus::failed : CheckStatus::passed;
        if (answers_missing) {
            e.report.missing_files.push_back("submission.yaml");
        }
        CheckResult compile;
        compile.id = "compile_abi";
        compile.title = "Compile and ABI";
        compile.status = source_missing ? CheckStatus::failed : CheckStatus::passed;
        if (source_missing) {
            e.report.missing_files.insert(e.report.missing_files.begin(), "probe.cu");
            Finding missing;
            missing.kind = FindingKind::kernel_file_missing;
            missing.names = {"probe.cu"};
            compile.findings.push_back(missing);
        }
        e.report.checks = {answers, compile};
        return e;
    };
    const std::vector<ClassEntry> entries = {entry("empty", true, true),
                                             entry("no-kernel", true, false),
                                             entry("no-answers", false, true)};
    const ClassSummary summary = summarize_class(entries);
    std::map<std::string, std::string> reason_of;
    for (const FailureReason& reason : summary.failure_reasons) {
        REQUIRE(reason.folders.size() == 1);
        reason_of[reason.folders[0]] = reason.key + " | " + reason.reason;
    }
    // Each the Cause the diagnosis names, whatever wrote the report.
    CHECK(reason_of["empty"] == "cause:missing_files | neither the kernel nor the answers file");
    CHECK(reason_of["no-kernel"] == "cause:missing_kernel_file | no kernel file");
    CHECK(reason_of["no-answers"] == "cause:missing_answers_file | no answers file");

    SUBCASE("an empty folder, files one folder down and another exercise's work are apart") {
        const auto with_problem = [&](const std::string& folder, FolderProblem::Kind kind,
                                      const std::string& detail) {
            ClassEntry e = entry(folder, true, kind != FolderProblem::Kind::other_exercise);
            e.report.folder_problem = FolderProblem{kind, detail, "what to do"};
            return e;
        };
        const ClassSummary apart = summarize_class(
            {with_problem("nothing", FolderProblem::Kind::empty, ""),
             with_problem("zipped", FolderProblem::Kind::one_folder_down, "day15"),
             with_problem("part2", FolderProblem::Kind::other_exercise, "day15-padding"),
             entry("no-kernel", true, false)});
        std::map<std::string, std::string> cause_of;
        for (const FailureReason& reason : apart.failure_reasons) {
            REQUIRE(reason.folders.size() == 1);
            cause_of[reason.folders[0]] = reason.key + " | " + reason.reason;
        }
        CHECK(cause_of["nothing"].rfind("cause:empty_folder | An empty folder", 0) == 0);
        CHECK(cause_of["zipped"].rfind(
                  "cause:files_one_folder_down | The files are one folder down", 0) == 0);
        CHECK(cause_of["part2"].rfind("cause:other_exercise:day15-padding | Another exercise's "
                                      "work (day15-padding)",
                                      0) == 0);
        CHECK(cause_of["part2"].find("--exercise day15-padding") != std::string::npos);
        CHECK(cause_of["no-kernel"] == "cause:missing_kernel_file | no kernel file");
    }
}

TEST_CASE("the page without a GPU plots the counted degree, never an empty ratio chart") {
    // Part 2 on the simulator: no cost is modeled, so no student has a ratio; the degree is
    // counted.
    std::vector<ClassEntry> entries;
    for (const auto& [folder, counted] :
         std::vector<std::pair<std::string, double>>{{"ann", 1.0}, {"ben", 32.0}, {"cat", 1.0}}) {
        ClassEntry entry;
        entry.student_folder = folder;
        entry.report.verdict = counted == 1.0 ? Verdict::pass : Verdict::fail;
        entry.report.environment.backend = "sim";
        ReportRow row;
        row.kernel = "student";
        row.label = "your kernel";
        row.degree = 1;
        row.counted_degree = counted;
        entry.report.rows.push_back(row);
        entries.push_back(entry);
    }
    const std::string html = write_class_report_html(entries, ClassReportOptions{});
    const std::string chart = element_with_id(html, "counted-chart", "svg");
    REQUIRE_FALSE(chart.empty());
    CHECK(count_of(chart, "class=\"counted-point\"") == 3);
    CHECK(count_of(chart, "class=\"model-degree\"") == 1);
    CHECK(chart.find("your kernel") != std::string::npos);
    CHECK(html.find("id=\"ratio-chart\"") == std::string::npos);
    CHECK(html.find("Nothing here was timed") != std::string::npos);
}

TEST_CASE("ids that differ only by invisible or look-alike characters are flagged as shared") {
    std::vector<ClassEntry> entries = fixtures::synthetic_class();
    const auto set_id = [&entries](const std::string& folder, const std::string& id) {
        for (ClassEntry& entry : entries) {
            if (entry.student_folder == folder) {
                entry.report.student_id = id;
            }
        }
    };
    set_id("alice", "ann.lee");
    set_id("bob",
           "\xD0\xB0nn.l\xE2\x80\x8B"
           "ee");                // a Cyrillic a, a zero-width space
    set_id("carol", "ANN.1EE");  // capitals, 1 for l
    const auto flags = flag_submissions(entries, with_example());
    REQUIRE(flags.count("alice") == 1);
    CHECK(flags.at("alice").same_id_as == std::vector<std::string>{"bob", "carol"});
    SUBCASE("an id that differs by a letter a reader sees is not flagged") {
        set_id("bob", "ann.lea");
        set_id("carol", "s1003");
        CHECK(flag_submissions(entries, with_example()).count("alice") == 0);
    }
}

namespace {

// The student's measured values on each named stride, as the answers file gave them.
void claim(Report& report, const std::map<int, double>& measured) {
    for (ReportRow& row : report.rows) {
        if (row.kernel == "student" && measured.count(row.stride) != 0) {
            row.claimed_ratio = measured.at(row.stride);
        }
    }
}

ClassReportOptions with_lesson_and_ratios() {
    ClassReportOptions options = with_example();
    options.example_ratios = {{"student", 3, 1.0}, {"student", 8, 7.83}, {"student", 16, 15.6}};
    options.modeled_ratios = {{"student", 3, 1.00}, {"student", 8, 6.30}, {"student", 16, 12.35}};
    options.lesson_solution = {
        "Stride 3 does not sit between stride 2 and stride 4 because the degree is not a function "
        "of how large the stride is.",
        "It is a divisibility question, and 3 shares nothing with 32."};
    return options;
}

}  // namespace

TEST_CASE("measured values copied from the starter kit's example or the simulator are flagged") {
    std::vector<ClassEntry> entries = fixtures::synthetic_class();
    auto& alice = entries[0].report;
    auto& bob = entries[1].report;
    auto& carol = entries[2].report;
    auto& dave = entries[3].report;
    claim(alice, {{3, 1.0}, {8, 7.83}, {16, 15.6}});   // the shipped example's, as typed there
    claim(bob, {{3, 1.00}, {8, 7.830}, {16, 15.60}});  // the same numbers, other zeros
    claim(carol, {{3, 1.0}, {8, 6.3}, {16, 12.35}});   // the simulator's, "measured on my T4"
    claim(dave, {{3, 1.02}, {8, 7.71}, {16, 15.3}});   // a T4's own
    const auto flags = flag_submissions(entries, with_lesson_and_ratios());
    REQUIRE(flags.count("alice") == 1);
    CHECK(flags.at("alice").measured_same_as_example);
    CHECK(flags.at("bob").measured_same_as_example);
    CHECK_FALSE(flags.at("alice").measured_same_as_modeled);
    CHECK(flags.at("carol").measured_same_as_modeled);
    CHECK_FALSE(flags.at("carol").measured_same_as_example);
    CHECK(flags.count("dave") == 0);
    CHECK(flags.at("carol").lines() ==
          std::vector<std::string>{
              "measured values the simulator's modeled ratios, not a GPU's times"});

    SUBCASE("in the gradebook's flags, the summary and the review table") {
        const auto rows = parse_csv(write_gradebook_csv(entries, with_lesson_and_ratios()));
        REQUIRE(rows.has_value());
        CHECK((*row_for_folder(*rows, "alice"))[column("flags")] ==
              "measured values the starter kit's example's, not the student's own");
        const auto summary = nlohmann::json::parse(
            write_class_summary_json(entries, nlohmann::json::object(), with_lesson_and_ratios()));
        CHECK(summary["flags"]["bob"]["measured_same_as_example"] == true);
        CHECK(summary["flags"]["carol"]["measured_same_as_modeled"] == true);
        const std::string page = write_class_report_html(entries, with_lesson_and_ratios());
        CHECK(element_with_id(page, "review", "table").find("the simulator&#39;s modeled ratios") !=
              std::string::npos);
    }
    SUBCASE("graded on the simulator, a student's own kernel's modeled ratios typed as measured") {
        std::vector<ClassEntry> simulated = fixtures::simulated_class();
        auto& erin = simulated[4].report;  // a kernel of her own, 0.55 of the reference's ratios
        std::map<int, double> printed;
        for (const ReportRow& row : erin.rows) {
            if (row.kernel == "student" && row.named) {
                printed[row.stride] = std::round(*row.ratio * 100.0) / 100.0;
            }
        }
        claim(erin, printed);
        claim(simulated[3].report, {{3, 1.02}, {8, 7.71}, {16, 15.3}});
        const auto sim_flags = flag_submissions(simulated, with_example());
        CHECK(sim_flags.at("erin").measured_same_as_modeled);
        CHECK(sim_flags.count("dave") == 0);
        // The same numbers from a GPU's grade are that GPU's times: nothing to flag.
        std::vector<ClassEntry> timed = fixtures::synthetic_class();
        timed[4].report.rows = erin.rows;
        CHECK(flag_submissions(timed, with_example()).count("erin") == 0);
    }
    SUBCASE("a kernel that is 1 everywhere, measured 1 everywhere, is no copy of anything") {
        std::vector<ClassEntry> flat = fixtures::simulated_class();
        for (ReportRow& row : flat[0].report.rows) {
            row.ratio = 1.0;
        }
        claim(flat[0].report, {{3, 1.0}, {8, 1.0}, {16, 1.0}});
        CHECK(flag_submissions(flat, with_example()).count("alice") == 0);
    }
}

TEST_CASE("the lesson's own solution is flagged and its cluster named as the lesson's") {
    std::vector<ClassEntry> entries = fixtures::synthetic_class();
    const ClassReportOptions options = with_lesson_and_ratios();
    // Both of the lesson's sentences as one answer; the first alone; the first with a word changed.
    entries[0].report.sentence = options.lesson_solution[0] + " " + options.lesson_solution[1];
    entries[1].report.sentence = options.lesson_solution[0];
    entries[2].report.sentence =
        "Stride 3 does not sit between stride 2 and stride 4 because the degree is not a function "
        "of how big the stride is.";
    const auto flags = flag_submissions(entries, options);
    CHECK(flags.at("alice").sentence_same_as_lesson);
    CHECK(flags.at("bob").sentence_same_as_lesson);
    CHECK(flags.at("carol").sentence_nearly_lesson);
    CHECK_FALSE(flags.at("carol").sentence_same_as_lesson);
    CHECK(flags.count("dave") == 0);
    const auto lines = flags.at("alice").lines();
    CHECK(std::find(lines.begin(), lines.end(),
                    "sentence same as the lesson's own solution (its course page)") != lines.end());

    const std::vector<SentenceCluster> clusters = cluster_sentences(entries, options);
    const auto lesson = std::find_if(clusters.begin(), clusters.end(), [](const auto& cluster) {
        return cluster.source == "the lesson's own solution";
    });
    REQUIRE(lesson != clusters.end());
    CHECK(lesson->folders == std::vector<std::string>{"bob", "carol"});
    const auto example = std::find_if(clusters.begin(), clusters.end(), [](const auto& cluster) {
        return cluster.source == "the starter kit's example";
    });
    REQUIRE(example != clusters.end());
    CHECK(example->folders == std::vector<std::string>{"kim", "lee"});

    const std::string page = write_class_report_html(entries, options);
    CHECK(element_with_id(page, "sentences", "table")
              .find(": the lesson&#39;s own solution</span>") != std::string::npos);
    const auto summary =
        nlohmann::json::parse(write_class_summary_json(entries, nlohmann::json::object(), options));
    bool named = false;
    for (const auto& cluster : summary["sentence_clusters"]) {
        named = named || cluster["source"] == "the lesson's own solution";
    }
    CHECK(named);
}

TEST_CASE(
    "the starter sentence in look-alike letters or with invisible characters is the starter's") {
    std::vector<ClassEntry> entries = fixtures::synthetic_class();
    // Latin a, e, o, c, i, p as Cyrillic ones (U+0430, U+0435, U+043E, U+0441, U+0456, U+0440).
    std::string cyrillic;
    std::string invisible;
    int seen = 0;
    for (const char c : std::string(fixtures::kExampleSentence)) {
        const std::map<char, const char*> cyrillic_of = {{'a', "\xd0\xb0"}, {'e', "\xd0\xb5"},
                                                         {'o', "\xd0\xbe"}, {'c', "\xd1\x81"},
                                                         {'i', "\xd1\x96"}, {'p', "\xd1\x80"}};
        cyrillic += cyrillic_of.count(c) != 0 ? cyrillic_of.at(c) : std::string(1, c);
        invisible += c;
        // U+034F, U+FE00 and U+180E inside words, in turn.
        if (c == 'n' || c == 't') {
            static const char* const kInvisible[] = {"\xcd\x8f", "\xef\xb8\x80", "\xe1\xa0\x8e"};
            invisible += kInvisible[seen++ % 3];
        }
    }
    REQUIRE(cyrillic != fixtures::kExampleSentence);
    entries[0].report.sentence = cyrillic;
    entries[1].report.sentence = invisible;
    const auto flags = flag_submissions(entries, with_example());
    CHECK(flags.at("alice").sentence_same_as_example);
    CHECK(flags.at("bob").sentence_same_as_example);
    // With kim's and lee's, one cluster of four, word for word.
    CHECK(flags.at("alice").same_sentence_as == std::vector<std::string>{"bob", "kim", "lee"});
    CHECK(flags.at("alice").sentence_cluster_identical);
}

TEST_CASE("short answers one word apart are no near-copies of each other") {
    std::vector<ClassEntry> entries = fixtures::synthetic_class();
    entries[0].report.sentence = "Coprime.";
    entries[1].report.sentence = "gcd";
    entries[2].report.sentence = "Odd stride.";
    entries[3].report.sentence = "Even stride.";
    const auto flags = flag_submissions(entries, with_example());
    for (const char* folder : {"alice", "bob", "carol", "dave"}) {
        CHECK_MESSAGE(flags.count(folder) == 0, folder);
    }
    for (const SentenceCluster& cluster : cluster_sentences(entries)) {
        CHECK(std::find(cluster.folders.begin(), cluster.folders.end(), "alice") ==
              cluster.folders.end());
    }
    // Two who answered with the same word did write the same: that is said, as identical.
    entries[1].report.sentence = "coprime";
    const auto same = flag_submissions(entries, with_example());
    CHECK(same.at("alice").same_sentence_as == std::vector<std::string>{"bob"});
    CHECK(same.at("alice").sentence_cluster_identical);
}

TEST_CASE("each failing student is under one root cause, the diagnosis, not the check it broke") {
    const std::vector<ClassEntry> entries = fixtures::diagnosed_class();
    const ClassSummary summary = summarize_class(entries);
    std::map<std::string, std::vector<std::string>> by_cause;
    for (const FailureReason& reason : summary.failure_reasons) {
        CAPTURE(reason.key);
        if (!reason.cause.empty()) {
            CHECK(reason.key == "cause:" + reason.cause);
            by_cause[reason.cause] = reason.folders;
        }
    }
    CHECK(by_cause["skipped_reads"] == std::vector<std::string>{"erin"});
    CHECK(by_cause["compile_syntax_error"] == std::vector<std::string>{"frank"});
    CHECK(by_cause["stride_sniffing"] == std::vector<std::string>{"heidi"});
    CHECK(by_cause["wrong_prediction"] == std::vector<std::string>{"mallory"});
    // The machine's fault is no student's cause: grace is listed apart, as not graded.
    CHECK(by_cause.count("machine_fault") == 0);
    const auto compile = std::find_if(
        summary.failure_reasons.begin(), summary.failure_reasons.end(),
        [](const FailureReason& reason) { return reason.cause == "compile_syntax_error"; });
    REQUIRE(compile != summary.failure_reasons.end());
    CHECK(compile->reason == "compile error: syntax");
    CHECK(compile->area == "source");

    SUBCASE("the gradebook's cause and reason are the diagnosis, with its fix") {
        const auto rows = parse_csv(write_gradebook_csv(entries));
        REQUIRE(rows.has_value());
        const auto* erin = row_for_folder(*rows, "erin");
        REQUIRE(erin != nullptr);
        CHECK((*erin)[column("cause")] == "skipped reads");
        CHECK(erin->back() ==
              "skipped reads: probe.cu:31:9: thread 0 of block 0 held 1024 at stride 8, not "
              "2048: the kernel skipped half of its reads; make every thread's 2048 reads");
        CHECK((*row_for_folder(*rows, "alice"))[column("cause")] == "");
        CHECK(row_for_folder(*rows, "grace")->back().find("the GPU did not answer") !=
              std::string::npos);
    }
    SUBCASE("summary.json groups by cause and keeps each student's diagnosis whole") {
        const auto json =
            nlohmann::json::parse(write_class_summary_json(entries, nlohmann::json::object(), {}));
        bool grouped = false;
        for (const auto& reason : json["failure_reasons"]) {
            if (reason["cause"] == "stride_sniffing") {
                grouped = reason["folders"] == nlohmann::json({"heidi"}) &&
                          reason["area"] == "kernel" && reason["count"] == 1;
            }
        }
        CHECK(grouped);
        CHECK(json["diagnoses"]["frank"]["cause"] == "compile_syntax_error");
        CHECK(json["diagnoses"]["frank"]["where"] == "probe.cu:35:5");
        CHECK(json["diagnoses"]["frank"]["fix"] == "add the ; before probe.cu:35:5");
        CHECK_FALSE(json["diagnoses"].contains("alice"));
    }
    SUBCASE("a report without a diagnosis (an older grader's) still has its stage as its cause") {
        std::vector<ClassEntry> mixed = entries;
        mixed[4].report.diagnosis.reset();  // erin
        const ClassSummary old = summarize_class(mixed);
        const bool by_check = std::any_of(old.failure_reasons.begin(), old.failure_reasons.end(),
                                          [](const FailureReason& r) {
                                              return r.key == "check:accumulator" &&
                                                     r.folders == std::vector<std::string>{"erin"};
                                          });
        CHECK(by_check);
    }
}

TEST_CASE(
    "on the simulator the ratio chart draws only the kernels that differ from the reference") {
    std::vector<ClassEntry> entries = fixtures::simulated_class();
    // Kernels like the reference: the simulator models exactly the reference's ratios.
    for (ClassEntry& entry : entries) {
        for (ReportRow& row : entry.report.rows) {
            if (row.kernel == "student" && row.reference_ratio && row.ratio) {
                row.ratio = *row.reference_ratio;
            }
        }
    }
    const std::string alike = write_class_report_html(entries, {});
    CHECK(count_of(alike, "class=\"student-dot\"") == 0);
    CHECK(alike.find("16 students' kernels model the reference's ratios at every stride") !=
          std::string::npos);
    CHECK(alike.find("only the 0 that differ are drawn") != std::string::npos);
    // The reference and the model are still drawn, and the students' own numbers charted.
    CHECK(count_of(alike, "class=\"reference-point\"") > 0);
    CHECK(count_of(alike, "<svg id=\"claims-chart\"") == 1);

    // erin's kernel skips reads: its modeled ratios are not the reference's, and it is drawn.
    for (ReportRow& row : entries[4].report.rows) {
        if (row.kernel == "student" && row.ratio) {
            row.ratio = *row.ratio * 0.55;
        }
    }
    const std::string one = write_class_report_html(entries, {});
    std::size_t erin_dots = 0;
    for (const ReportRow& row : entries[4].report.rows) {
        erin_dots += row.kernel == "student" && row.ratio ? 1 : 0;
    }
    CHECK(count_of(one, "class=\"student-dot\"") == erin_dots);
    CHECK(one.find("only the 1 that differ are drawn") != std::string::npos);

    SUBCASE("a GPU class draws every student: their times are their own") {
        std::vector<ClassEntry> timed = fixtures::synthetic_class();
        CHECK(count_of(write_class_report_html(timed, {}), "class=\"student-dot\"") ==
              student_dots_expected(timed));
    }
}

TEST_CASE("the students' own predictions and measurements are charted, a column per stride") {
    const std::vector<ClassEntry> entries = fixtures::synthetic_class();
    const std::string html = write_class_report_html(entries, {});
    const std::string chart = element_with_id(html, "claims-chart", "svg");
    std::size_t claims = 0;
    std::size_t wrong = 0;
    for (const ClassEntry& entry : entries) {
        for (const ReportRow& row : entry.report.rows) {
            claims += row.claimed_ratio ? 1 : 0;
            wrong += row.claimed_ratio && row.predicted_degree &&
                             static_cast<unsigned>(*row.predicted_degree) != row.degree
                         ? 1
                         : 0;
        }
    }
    REQUIRE(claims > 0);
    CHECK(count_of(chart, "class=\"claim-dot\"") == claims);
    CHECK(count_of(chart, "data-right=\"no\"") == wrong);
    CHECK(count_of(chart, "class=\"claim-model\"") == 3);  // strides 3, 8 and 16
    CHECK(chart.find(">stride 8</text>") != std::string::npos);
    CHECK(chart.find("predicted 8: ") != std::string::npos);
    const std::string table = element_with_id(html, "claims-table", "table");
    CHECK(table.find("<th>predicted it</th>") != std::string::npos);
}

TEST_CASE("each student's row carries what the page's script sorts and filters by") {
    const std::vector<ClassEntry> entries = fixtures::diagnosed_class();
    const std::string html = write_class_report_html(entries, with_example());
    const std::string students = element_with_id(html, "students", "table");
    const std::size_t frank = students.find("data-folder=\"frank\"");
    REQUIRE(frank != std::string::npos);
    const std::string tag = students.substr(frank, students.find('>', frank) - frank);
    CHECK(tag.find("data-verdict=\"fail\"") != std::string::npos);
    CHECK(tag.find("data-score=\"4\"") != std::string::npos);
    CHECK(tag.find("data-cause=\"cause:compile_syntax_error\"") != std::string::npos);
    const std::size_t kim = students.find("data-folder=\"kim\"");
    REQUIRE(kim != std::string::npos);
    const std::string kim_tag = students.substr(kim, students.find('>', kim) - kim);
    CHECK(kim_tag.find("data-flags=\"example-id same-id sentence-example sentence-shared\"") !=
          std::string::npos);
    // The filters offer each cause the class has, with its count, and each flag kind.
    const std::string filters = element_with_id(html, "student-filters", "form");
    CHECK(filters.find("<option value=\"cause:compile_syntax_error\">compile error: syntax "
                       "(1)</option>") != std::string::npos);
    CHECK(filters.find("<option value=\"sentence-example\">") != std::string::npos);
    // A cause's row links to that filter (where the script runs).
    CHECK(element_with_id(html, "failure-reasons", "table")
              .find("href=\"#cause=cause%3Acompile_syntax_error\"") != std::string::npos);
    // An ungradable grade has no score to sort by, and no cause of its own.
    const std::size_t grace = students.find("data-folder=\"grace\"");
    const std::string grace_tag = students.substr(grace, students.find('>', grace) - grace);
    CHECK(grace_tag.find("data-score=\"\"") != std::string::npos);
    CHECK(grace_tag.find("data-cause=\"\"") != std::string::npos);
}
