#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "batch/class_outputs.hpp"
#include "fixtures/class/synthetic_class.hpp"

using namespace grader;

namespace {

// An RFC 4180 reader, written apart from the writer so the test does not share its mistakes.
// Returns nullopt on a malformed file (a stray quote, a quote left open).
std::optional<std::vector<std::vector<std::string>>> parse_csv(const std::string& text) {
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
        } else if (c == '"') {
            if (!field.empty() || field_was_quoted) {
                return std::nullopt;
            }
            in_quotes = true;
            field_was_quoted = true;
            ++i;
        } else if (c == ',') {
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

const std::vector<std::string>* row_for_folder(const std::vector<std::vector<std::string>>& rows,
                                               const std::string& folder) {
    for (const auto& row : rows) {
        if (row.size() > 1 && row[1] == folder) {
            return &row;
        }
    }
    return nullptr;
}

}  // namespace

TEST_CASE("the gradebook CSV parses back with one row per submission, sorted by folder") {
    const std::vector<ClassEntry> entries = fixtures::synthetic_class();
    const std::string csv = write_gradebook_csv(entries);
    const auto rows = parse_csv(csv);
    REQUIRE(rows.has_value());
    REQUIRE(rows->size() == entries.size() + 1);

    const std::vector<std::string> header = {
        "student",         "folder",      "score",       "max_score",    "verdict",
        "submission_file", "compile_abi", "accumulator", "hidden_input", "predicted_degrees",
        "ordering",        "consistency", "sentence",    "reason"};
    CHECK((*rows)[0] == header);
    for (const auto& row : *rows) {
        CHECK(row.size() == header.size());
    }

    std::vector<std::string> folders;
    for (std::size_t i = 1; i < rows->size(); ++i) {
        folders.push_back((*rows)[i][1]);
    }
    // "@trent" is neutralised to "'@trent", which still sorts first as the folder "@trent".
    CHECK(folders.front() == "'@trent");
    CHECK(std::is_sorted(folders.begin() + 1, folders.end()));
    CHECK(std::count(folders.begin(), folders.end(), "grace") == 1);

    SUBCASE("a pass has its score, its points per check and its summary") {
        const auto* alice = row_for_folder(*rows, "alice");
        REQUIRE(alice != nullptr);
        CHECK((*alice)[0] == "s1001");
        CHECK((*alice)[2] == "13");
        CHECK((*alice)[3] == "13");
        CHECK((*alice)[4] == "pass");
        CHECK((*alice)[9] == "3");  // predicted_degrees
        CHECK(alice->back() == "All required checks passed.");
    }
    SUBCASE("a compile failure keeps its row, with the points it did get") {
        const auto* frank = row_for_folder(*rows, "frank");
        REQUIRE(frank != nullptr);
        CHECK((*frank)[2] == "4");
        CHECK((*frank)[4] == "fail");
        CHECK((*frank)[5] == "1");  // submission_file
        CHECK((*frank)[6] == "0");  // compile_abi
        CHECK(frank->back() == "Failed: Compile and ABI.");
    }
    SUBCASE("an ungradable timeout has a row, no score, and the interruption as reason") {
        const auto* grace = row_for_folder(*rows, "grace");
        REQUIRE(grace != nullptr);
        CHECK((*grace)[2] == "");
        CHECK((*grace)[4] == "ungradable");
        CHECK((*grace)[5] == "");  // grading stopped before any check
        CHECK(grace->back() ==
              "timeout at run student stride 16: the GPU did not answer within 30 s");
    }
    SUBCASE("hostile student ids come back whole, and a formula is neutralised") {
        const auto* peggy = row_for_folder(*rows, "peggy");
        REQUIRE(peggy != nullptr);
        CHECK((*peggy)[0] == fixtures::kQuotedStudentId);
        const auto* mallory = row_for_folder(*rows, "mallory");
        REQUIRE(mallory != nullptr);
        CHECK((*mallory)[0] == std::string("'") + fixtures::kFormulaStudentId);
        const auto* oscar = row_for_folder(*rows, "oscar");
        REQUIRE(oscar != nullptr);
        CHECK((*oscar)[0] == fixtures::kScriptStudentId);
    }
    SUBCASE("no cell that a spreadsheet would run is left as it was") {
        for (const auto& row : *rows) {
            for (const std::string& cell : row) {
                if (!cell.empty()) {
                    CHECK_MESSAGE(std::string("=+@").find(cell[0]) == std::string::npos, cell);
                }
            }
        }
    }
}

TEST_CASE("a folder or id starting with - or + is neutralised, a number is not") {
    std::vector<ClassEntry> entries = fixtures::synthetic_class();
    entries[0].student_folder = "-1+1";
    entries[0].report.student_id = "+SUM(A1:A9)";
    const auto rows = parse_csv(write_gradebook_csv(entries));
    REQUIRE(rows.has_value());
    const auto* row = row_for_folder(*rows, "'-1+1");
    REQUIRE(row != nullptr);
    CHECK((*row)[0] == "'+SUM(A1:A9)");
    CHECK((*row)[2] == "13");
}

TEST_CASE("the class summary JSON counts verdicts, scores, checks, reasons and strides") {
    const std::vector<ClassEntry> entries = fixtures::synthetic_class();
    const nlohmann::json run_info = {{"grader_version", "0.1.0"}, {"seed", 42}};
    const auto summary = nlohmann::json::parse(write_class_summary_json(entries, run_info));

    CHECK(summary["submissions"] == 14);
    CHECK(summary["verdicts"]["pass"] == 8);
    CHECK(summary["verdicts"]["fail"] == 5);
    CHECK(summary["verdicts"]["ungradable"] == 1);
    CHECK(summary["score"]["graded"] == 13);
    // 8 passes at 13, then 6, 4, 11, 8 and 10: 143 points over 13 graded submissions.
    CHECK(summary["score"]["mean"].get<double>() == doctest::Approx(11.0));
    CHECK(summary["score"]["median"].get<double>() == doctest::Approx(13.0));
    CHECK(summary["score"]["max_score"].get<double>() == doctest::Approx(13.0));
    CHECK(summary["run"] == run_info);
    CHECK(summary["exercise_id"] == "day15-bank-conflicts");

    const auto& checks = summary["checks"];
    REQUIRE(checks.size() == 8);
    CHECK(checks[0]["id"] == "submission_file");
    CHECK(checks[2]["id"] == "accumulator");
    CHECK(checks[2]["reported"] == 13);  // the timeout stopped before any check
    CHECK(checks[2]["passed"] == 11);
    CHECK(checks[4]["id"] == "predicted_degrees");
    CHECK(checks[4]["passed"] == 10);

    const auto& reasons = summary["failure_reasons"];
    REQUIRE(reasons.size() == 7);
    CHECK(reasons[0]["key"] == "check:predicted_degrees");
    CHECK(reasons[0]["count"] == 3);
    CHECK(reasons[0]["folders"] == nlohmann::json({"erin", "ivan", "mallory"}));
    for (std::size_t i = 1; i < reasons.size(); ++i) {
        CHECK(reasons[i - 1]["count"].get<int>() >= reasons[i]["count"].get<int>());
    }
    const auto timeout = std::find_if(reasons.begin(), reasons.end(), [](const auto& reason) {
        return reason["key"].template get<std::string>().rfind("interruption:timeout", 0) == 0;
    });
    REQUIRE(timeout != reasons.end());
    CHECK((*timeout)["count"] == 1);
    CHECK((*timeout)["reason"] == "Grading stopped: timeout (not the student's fault)");
    // The sentence is for the instructor to review: an empty one is not a failure reason.
    for (const auto& reason : reasons) {
        CHECK(reason["key"] != "check:sentence");
    }

    const auto& strides = summary["strides"];
    const auto stride16 = std::find_if(strides.begin(), strides.end(),
                                       [](const auto& row) { return row["stride"] == 16; });
    REQUIRE(stride16 != strides.end());
    CHECK((*stride16)["degree"] == 16);
    CHECK((*stride16)["students"] == 12);  // frank did not compile; grace stopped at 16
    CHECK((*stride16)["student_ratio"]["min"].get<double>() ==
          doctest::Approx(0.55 * 12.55).epsilon(0.01));  // erin's kernel skips reads
    CHECK((*stride16)["reference_ratio"].get<double>() == doctest::Approx(12.55).epsilon(0.01));
    const auto stride1 = std::find_if(strides.begin(), strides.end(),
                                      [](const auto& row) { return row["stride"] == 1; });
    REQUIRE(stride1 != strides.end());
    CHECK((*stride1)["students"] == 0);
    CHECK((*stride1)["student_ratio"].is_null());
    const auto stride65 = std::find_if(strides.begin(), strides.end(),
                                       [](const auto& row) { return row["stride"] == 65; });
    REQUIRE(stride65 != strides.end());
    CHECK((*stride65)["students"] == 2);  // an unnamed stride: only the students it was drawn for
    CHECK((*stride65)["reference_ratio"].get<double>() == doctest::Approx(1.0).epsilon(0.01));
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

TEST_CASE("the class report is one page with no external resource and every string escaped") {
    const std::vector<ClassEntry> entries = fixtures::synthetic_class();
    const std::string html = write_class_report_html(entries, {"", "", "2026-12-02 13:00 UTC"});

    CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
    CHECK(html.find("<title>Class report: Day 15: shared-memory bank conflicts (2026-12-02 "
                    "13:00 UTC)</title>") != std::string::npos);
    for (const char* id : {"id=\"verdict-counts\"", "id=\"score-histogram\"", "id=\"ratio-chart\"",
                           "id=\"failure-reasons\"", "id=\"students\""}) {
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
        CHECK(html.find("<script") == std::string::npos);
        CHECK(html.find("default-src 'none'") != std::string::npos);
        const std::regex href(R"(href="([^"]*)\")");
        std::size_t links = 0;
        for (auto it = std::sregex_iterator(html.begin(), html.end(), href);
             it != std::sregex_iterator(); ++it, ++links) {
            const std::string target = (*it)[1];
            CHECK_MESSAGE(target.find(':') == std::string::npos, target);
            CHECK_MESSAGE(target.rfind("//", 0) != 0, target);
        }
        CHECK(links == entries.size());
    }
    SUBCASE("student strings are escaped, links stay on this disk") {
        CHECK(html.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
        CHECK(html.find("Smith, &quot;Bobby&quot;") != std::string::npos);
        CHECK(html.find("=cmd|&#39; /C calc&#39;!A0") != std::string::npos);
        CHECK(html.find("href=\"%40trent/report.html\"") != std::string::npos);
        CHECK(html.find("href=\"javascript%3Aalert%281%29//grace/report.html\"") !=
              std::string::npos);
    }
    SUBCASE("the charts and tables have one mark per thing counted") {
        CHECK(count_of(html, "class=\"bar\"") == 14);     // scores 0 to 13
        CHECK(count_of(html, "data-count=\"8\" ") == 1);  // the 8 passes at 13
        CHECK(count_of(html, "class=\"student-dot\"") == student_dots_expected(entries));
        // 1, 2, 3, 4, 8, 16, 32, 33 and the unnamed 5, 6, 7, 12, 24, 31, 48, 65
        CHECK(count_of(html, "class=\"reference-point\"") == 16);
        CHECK(count_of(html, "class=\"model-point\"") == 16);
        CHECK(count_of(html, "class=\"student-row\"") == entries.size());
        CHECK(count_of(html, "class=\"failure-reason\"") == 7);
    }
    SUBCASE("the students table is sorted by folder") {
        std::vector<std::size_t> positions;
        for (const char* folder : {"@trent", "alice", "bob", "frank", "grace", "peggy"}) {
            positions.push_back(html.find(std::string("<td class=\"folder\">") + folder));
        }
        CHECK(std::find(positions.begin(), positions.end(), std::string::npos) == positions.end());
        CHECK(std::is_sorted(positions.begin(), positions.end()));
    }
}

TEST_CASE("an empty class still gives a header, a summary and a page") {
    const std::vector<ClassEntry> none;
    const auto rows = parse_csv(write_gradebook_csv(none));
    REQUIRE(rows.has_value());
    REQUIRE(rows->size() == 1);
    CHECK(rows->front() ==
          std::vector<std::string>{"student", "folder", "score", "max_score", "verdict", "reason"});
    const auto summary = nlohmann::json::parse(write_class_summary_json(none, nullptr));
    CHECK(summary["submissions"] == 0);
    CHECK(summary["score"]["mean"].is_null());
    const std::string html = write_class_report_html(none, {"day15", "Day 15", ""});
    CHECK(html.find("id=\"ratio-chart\"") != std::string::npos);
    CHECK(html.find("No submission could be graded.") != std::string::npos);
    CHECK(html.find("nan") == std::string::npos);
}
