// JUnit XML, the test-report format CI systems read: one testcase per check.

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/measurements.hpp"
#include "model/report.hpp"
#include "report/render.hpp"
#include "report/writers.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace report_detail {
namespace {

std::string attribute(std::string_view name, std::string_view value) {
    return " " + std::string(name) + "=\"" + text::xml(value, text::XmlPlace::attribute) + "\"";
}

std::string character_data(std::string_view value) {
    return text::xml(value, text::XmlPlace::text);
}

std::string message_and_details(const CheckResult& check) {
    std::string body = check.message;
    for (const auto& detail : check.details) {
        body += "\n" + detail;
    }
    return body;
}

// junit-10.xsd's SUREFIRE_TIME: digits, a point and at most three decimals; no sign.
std::string seconds(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.3f", std::isfinite(value) && value > 0 ? value : 0.0);
    return buffer;
}

}  // namespace
}  // namespace report_detail

std::string write_junit(const Report& report) {
    using namespace report_detail;
    const std::string suite_name =
        report.exercise_id.empty() ? "grader" : text::visible_line(report.exercise_id);
    int failures = 0;
    int skipped = 0;
    std::string cases;
    for (const auto& check : report.checks) {
        cases += "    <testcase" + attribute("classname", suite_name) +
                 attribute("name", text::visible_line(check.id)) + attribute("time", "0");
        if (check.not_run()) {
            // Its input was never produced (the kernel did not compile, grading stopped): not a
            // failure of its own.
            ++skipped;
            cases +=
                ">\n      <skipped" + attribute("message", check.message) + "/>\n    </testcase>\n";
        } else if (check.review && check.passed()) {
            ++skipped;
            std::string note = "for the instructor's review: " + check.message;
            if (check.kind == "sentence" && report.sentence_review.flagged()) {
                note += " The sentence was " + sentence_flag_text(report.sentence_review) + ".";
            }
            cases += ">\n      <skipped" + attribute("message", note) + "/>\n    </testcase>\n";
        } else if (!check.passed()) {
            ++failures;
            const char* type = check.review ? "review" : check.required ? "required" : "optional";
            cases += ">\n      <failure" + attribute("message", check.message) +
                     attribute("type", type) + ">" + character_data(message_and_details(check)) +
                     "</failure>\n    </testcase>\n";
        } else {
            cases += "/>\n";
        }
    }
    int errors = 0;
    if (report.verdict == Verdict::ungradable) {
        ++errors;
        const Interruption stop =
            report.interruption.value_or(Interruption{StopKind::crash, "", report.summary, false});
        cases += "    <testcase" + attribute("classname", suite_name) +
                 attribute("name", "grading") + attribute("time", seconds(report.wall_seconds)) +
                 ">\n      <error" +
                 attribute("message", stop.message.empty() ? report.summary : stop.message) +
                 attribute("type", std::string(to_string(stop.kind))) + ">" +
                 character_data("ungradable" + (stop.stage.empty() ? "" : " at " + stop.stage) +
                                ": " + report.summary) +
                 "</error>\n    </testcase>\n";
    }
    const int tests = static_cast<int>(report.checks.size()) + errors;
    const std::string counts = attribute("tests", std::to_string(tests)) +
                               attribute("failures", std::to_string(failures)) +
                               attribute("errors", std::to_string(errors));
    const std::string time = attribute("time", seconds(report.wall_seconds));

    std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    // junit-10.xsd allows no skipped count on <testsuites>, and the xUnit plugin drops a file
    // that fails the schema: the count is on <testsuite> only.
    out += "<testsuites" + attribute("name", "gpu-course-grader") + counts + time + ">\n";
    out += "  <testsuite" + attribute("name", suite_name) + counts +
           attribute("skipped", std::to_string(skipped)) + time + ">\n";
    out += "    <properties>\n";
    const auto property = [&](std::string_view name, std::string_view value) {
        out += "      <property" + attribute("name", name) + attribute("value", value) + "/>\n";
    };
    property("student", text::visible_line(report.student_id));
    property("submission", text::visible_line(report.submission));
    property("verdict", to_string(report.verdict));
    property("score", points(report.score));
    property("max_score", points(report.max_score));
    property("backend", report.environment.backend);
    property("device", report.environment.device_name);
    property("seed", std::to_string(report.seed));
    out += "    </properties>\n";
    out += cases;
    out += "    <system-out>" +
           character_data(render_text(report, TextOptions{false, false}, true)) + "</system-out>\n";
    out += "  </testsuite>\n</testsuites>\n";
    return out;
}

}  // namespace grader
