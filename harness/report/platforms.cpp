// The formats that grading platforms read: Gradescope's and PrairieLearn's results.json.

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/json.hpp"
#include "model/measurements.hpp"
#include "model/report.hpp"
#include "report/render.hpp"
#include "report/writers.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace report_detail {
namespace {

// Keys in the order a person reading the file expects: the score first.
using json = nlohmann::ordered_json;

double finite_or_zero(double value) {
    return std::isfinite(value) ? value : 0.0;
}

// Bytes that are not UTF-8 (a kernel's printf can print anything) become U+FFFD instead of
// making dump() throw; hidden controls are escaped.
template <typename Json>
std::string dump(const Json& document) {
    return text::json_text(document, 2) + "\n";
}

std::string check_output(const CheckResult& check) {
    std::vector<std::string> lines;
    if (!check.message.empty()) {
        lines.push_back(text::visible(check.message));
    }
    for (const auto& detail : check.details) {
        lines.push_back("  " + text::visible(detail));
    }
    return join(lines, "\n");
}

// The review item's output: the note, why the sentence was set apart (if it was), the check.
std::string review_output(const Report& report, const CheckResult& check) {
    std::string output = "For your instructor's review: the machine does not score this.\n";
    if (check.kind == "sentence") {
        const std::string flag = sentence_flag_text(report.sentence_review);
        if (!flag.empty()) {
            output += "Your sentence was " + flag + ".\n";
        }
    }
    return output + check_output(check);
}

// Why there is no grade, for platforms that have no word for it.
std::string ungradable_reason(const Report& report) {
    using text::visible_line;
    std::string why =
        report.summary.empty() ? "grading did not finish" : visible_line(report.summary);
    if (report.interruption) {
        const Interruption& stop = *report.interruption;
        why +=
            "\n" +
            (stop.stage.empty() ? std::string() : "Stopped at " + visible_line(stop.stage) + ": ") +
            visible_line(stop.message) + " (" + std::string(to_string(stop.kind)) + ")";
    }
    return why;
}

}  // namespace
}  // namespace report_detail

std::string write_gradescope(const Report& report) {
    using namespace report_detail;
    const bool ungradable = report.verdict == Verdict::ungradable;
    std::string output;
    if (ungradable) {
        output =
            "UNGRADABLE: this submission could not be graded, so it shows 0 points here. "
            "Gradescope has no \"ungradable\" result; this 0 is not a grade for your work. "
            "There is nothing in your work to change: tell your instructor, who must fix the "
            "grading machine.\nWhy: " +
            ungradable_reason(report) + "\n\n";
    }
    output += render_text(report, TextOptions{false, false}, false);

    json tests = json::array();
    for (const auto& check : report.checks) {
        double score = ungradable ? 0.0 : finite_or_zero(check.points);
        double max_score = finite_or_zero(check.max_points);
        std::string test_output =
            (ungradable ? "Not scored: this submission could not be graded.\n" : "") +
            check_output(check);
        if (check.review) {
            score = 0.0;
            max_score = 0.0;
            test_output = review_output(report, check);
        }
        const json test{{"name", text::visible_line(check.title)},
                        {"score", score},
                        {"max_score", max_score},
                        {"status", check.passed() ? "passed" : "failed"},
                        {"output", test_output},
                        {"visibility", "visible"}};
        tests.push_back(test);
    }
    const json document{
        {"score", ungradable ? 0.0 : finite_or_zero(report.score)},
        {"max_score", finite_or_zero(report.max_score)},
        // Gradescope documents execution_time as whole seconds.
        {"execution_time", static_cast<long long>(std::ceil(finite_or_zero(report.wall_seconds)))},
        {"output", output},
        {"output_format", "text"},
        {"visibility", "visible"},
        {"stdout_visibility", "hidden"},
        {"tests", tests}};
    return dump(document);
}

namespace report_detail {
namespace {

// Why PrairieLearn should not count this attempt, or nullopt where it is a grade: an ungradable
// verdict always; a missing file or a compile error where the exercise says so.
std::optional<std::string> not_gradable_reason(const Report& report,
                                               const PrairieLearnOptions& options) {
    if (report.verdict == Verdict::ungradable) {
        return "This submission could not be graded: " + ungradable_reason(report);
    }
    if (!options.missing_file_gradable && !report.missing_files.empty()) {
        std::vector<std::string> files;
        for (const auto& file : report.missing_files) {
            files.push_back(text::visible_line(file));
        }
        return "This submission is missing " + join(files, " and ") +
               ": add the files and submit again.";
    }
    if (!options.compile_error_gradable && report.compile_error) {
        // The compile check's first line names the error ("probe.cu did not compile:
        // probe.cu:35:5: error: expected a \";\"").
        std::string what = "The kernel did not compile";
        for (const auto& check : report.checks) {
            if (check.kind == "compile_abi" && !check.message.empty()) {
                what = text::visible_line(check.message);
                break;
            }
        }
        while (!what.empty() && what.back() == '.') {
            what.pop_back();
        }
        return what +
               ". Nothing could be graded and this attempt does not count: fix the error (the "
               "compile log is below) and submit again.";
    }
    return std::nullopt;
}

}  // namespace
}  // namespace report_detail

std::string write_prairielearn(const Report& report, const PrairieLearnOptions& options) {
    using namespace report_detail;
    const std::optional<std::string> not_gradable = not_gradable_reason(report, options);
    double fraction = 0.0;
    if (!not_gradable) {
        if (report.max_score > 0.0) {
            fraction = std::clamp(finite_or_zero(report.score) / report.max_score, 0.0, 1.0);
        } else {
            fraction = report.verdict == Verdict::pass ? 1.0 : 0.0;
        }
    }
    std::string message = verdict_word(report.verdict) + " " + score_text(report);
    if (!report.summary.empty()) {
        message += ": " + text::visible_line(report.summary);
    }

    json tests = json::array();
    for (const auto& check : report.checks) {
        std::string description = "check " + text::visible_line(check.id);
        if (check.not_run()) {
            description += ", not run";
        } else if (check.review) {
            description += ", for your instructor's review: the machine does not score this";
        } else if (!check.required) {
            description += ", optional";
        }
        std::vector<std::string> details;
        for (const auto& detail : check.details) {
            details.push_back(text::visible(detail));
        }
        if (check.review && check.kind == "sentence") {
            const std::string flag = sentence_flag_text(report.sentence_review);
            if (!flag.empty()) {
                details.push_back("Your sentence was " + flag + ".");
            }
        }
        // A result PrairieLearn does not grade puts no points at stake: every test is neutral,
        // rather than a red 0 beside checks that passed.
        const bool neutral = check.review || not_gradable.has_value();
        tests.push_back({{"name", text::visible_line(check.title)},
                         {"description", description},
                         {"points", neutral ? 0.0 : finite_or_zero(check.points)},
                         {"max_points", neutral ? 0.0 : finite_or_zero(check.max_points)},
                         {"message", text::visible(check.message)},
                         {"output", join(details, "\n")}});
    }
    json document{{"gradable", !not_gradable},
                  {"score", fraction},
                  {"message", message},
                  {"output", render_text(report, TextOptions{false, false}, false)},
                  {"tests", tests}};
    if (not_gradable) {
        // PrairieLearn shows format_errors for a result it marks "invalid, not gradable", and
        // does not count the attempt against the student.
        document["format_errors"] = json::array({*not_gradable});
    }
    return dump(document);
}

std::string write_json(const Report& report) {
    return report_detail::dump(nlohmann::json(report));
}

}  // namespace grader
