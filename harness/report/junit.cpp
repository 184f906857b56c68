// JUnit XML, the test-report format CI systems read: one testcase per check.

#include <cmath>
#include <cstdio>
#include <string>

#include "common/text.hpp"
#include "report/render.hpp"
#include "report/writers.hpp"

namespace grader {
namespace report_detail {
namespace {

constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Text as XML 1.0 character data, or as an attribute's value where attribute is true. XML 1.0
// cannot carry most control characters even as references, nor bytes that are not UTF-8, nor
// U+FFFE and U+FFFF: each becomes U+FFFD, so a kernel's stray output cannot make the file invalid.
std::string xml_escape(std::string_view text, bool attribute) {
    std::string out;
    out.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) {
        const auto byte = static_cast<unsigned char>(text[i]);
        if (byte < 0x80) {
            switch (byte) {
                case '&':
                    out += "&amp;";
                    break;
                case '<':
                    out += "&lt;";
                    break;
                case '>':
                    out += "&gt;";
                    break;
                case '"':
                    out += attribute ? "&quot;" : "\"";
                    break;
                case '\'':
                    out += attribute ? "&apos;" : "'";
                    break;
                // An attribute's value folds a raw newline or tab into a space.
                case '\n':
                    out += attribute ? "&#10;" : "\n";
                    break;
                case '\t':
                    out += attribute ? "&#9;" : "\t";
                    break;
                case '\r':
                    out += "&#13;";
                    break;
                default:
                    if (byte < 0x20 || byte == 0x7F) {
                        out += kReplacement;
                    } else {
                        out += static_cast<char>(byte);
                    }
            }
            ++i;
            continue;
        }
        const std::size_t length = (byte & 0xE0) == 0xC0 ? 2 : (byte & 0xF0) == 0xE0 ? 3 : 4;
        const bool valid = (byte & 0xC0) == 0xC0 && byte < 0xF8 && i + length <= text.size() &&
                           !first_invalid_utf8(text.substr(i, length));
        const std::string_view sequence = valid ? text.substr(i, length) : std::string_view();
        if (!valid || sequence == "\xEF\xBF\xBE" || sequence == "\xEF\xBF\xBF") {
            out += kReplacement;
            i += valid ? length : 1;
            continue;
        }
        out.append(sequence);
        i += length;
    }
    return out;
}

std::string attribute(std::string_view name, std::string_view value) {
    return " " + std::string(name) + "=\"" + xml_escape(value, true) + "\"";
}

std::string seconds(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.3f", std::isfinite(value) ? value : 0.0);
    return buffer;
}

}  // namespace
}  // namespace report_detail

std::string write_junit(const Report& report) {
    using namespace report_detail;
    const std::string suite_name = report.exercise_id.empty() ? "grader" : report.exercise_id;
    int failures = 0;
    int skipped = 0;
    std::string cases;
    for (const auto& check : report.checks) {
        cases += "    <testcase" + attribute("classname", suite_name) +
                 attribute("name", check.id) + attribute("time", "0");
        if (check.review) {
            ++skipped;
            cases += ">\n      <skipped" +
                     attribute("message", "for the instructor's review: " + check.message) +
                     "/>\n    </testcase>\n";
        } else if (!check.passed()) {
            ++failures;
            std::string body = check.message;
            for (const auto& detail : check.details) {
                body += "\n" + detail;
            }
            cases += ">\n      <failure" + attribute("message", check.message) +
                     attribute("type", check.required ? "required" : "optional") + ">" +
                     xml_escape(body, false) + "</failure>\n    </testcase>\n";
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
                 xml_escape("ungradable" + (stop.stage.empty() ? "" : " at " + stop.stage) + ": " +
                                report.summary,
                            false) +
                 "</error>\n    </testcase>\n";
    }
    const int tests = static_cast<int>(report.checks.size()) + errors;
    const std::string counts = attribute("tests", std::to_string(tests)) +
                               attribute("failures", std::to_string(failures)) +
                               attribute("errors", std::to_string(errors)) +
                               attribute("skipped", std::to_string(skipped)) +
                               attribute("time", seconds(report.wall_seconds));

    std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out += "<testsuites" + attribute("name", "gpu-course-grader") + counts + ">\n";
    out += "  <testsuite" + attribute("name", suite_name) + counts + ">\n";
    out += "    <properties>\n";
    const auto property = [&](std::string_view name, std::string_view value) {
        out += "      <property" + attribute("name", name) + attribute("value", value) + "/>\n";
    };
    property("student", report.student_id);
    property("submission", report.submission);
    property("verdict", to_string(report.verdict));
    property("score", points(report.score));
    property("max_score", points(report.max_score));
    property("backend", report.environment.backend);
    property("device", report.environment.device_name);
    property("seed", std::to_string(report.seed));
    out += "    </properties>\n";
    out += cases;
    out += "    <system-out>" +
           xml_escape(render_text(report, TextOptions{false, false}, true), false) +
           "</system-out>\n";
    out += "  </testsuite>\n</testsuites>\n";
    return out;
}

}  // namespace grader
