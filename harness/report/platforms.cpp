// The formats that grading platforms read: Gradescope's and PrairieLearn's results.json.

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/json.hpp"
#include "report/render.hpp"
#include "report/writers.hpp"

namespace grader {
namespace report_detail {
namespace {

// Keys in the order a person reading the file expects: the score first.
using json = nlohmann::ordered_json;

double finite_or_zero(double value) {
    return std::isfinite(value) ? value : 0.0;
}

// Bytes that are not UTF-8 (a kernel's printf can print anything) become U+FFFD instead of
// making dump() throw.
template <typename Json>
std::string dump(const Json& document) {
    return document.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string check_output(const CheckResult& check) {
    std::vector<std::string> lines;
    if (!check.message.empty()) {
        lines.push_back(clean(check.message));
    }
    for (const auto& detail : check.details) {
        lines.push_back("  " + clean(detail));
    }
    return join(lines, "\n");
}

std::string review_note() {
    return "For your instructor's review: the machine does not score this.";
}

// Why there is no grade, for platforms that have no word for it.
std::string ungradable_reason(const Report& report) {
    std::string why = report.summary.empty() ? "grading did not finish" : clean(report.summary);
    if (report.interruption) {
        const Interruption& stop = *report.interruption;
        why += "\n" +
               (stop.stage.empty() ? std::string() : "Stopped at " + clean(stop.stage) + ": ") +
               clean(stop.message) + " (" + std::string(to_string(stop.kind)) + ")";
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
            "Submit again or tell your instructor.\nWhy: " +
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
            test_output = review_note() + "\n" + check_output(check);
        }
        const json test{{"name", clean(check.title)},
                        {"score", score},
                        {"max_score", max_score},
                        {"status", check.review || check.passed() ? "passed" : "failed"},
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

std::string write_prairielearn(const Report& report) {
    using namespace report_detail;
    const bool ungradable = report.verdict == Verdict::ungradable;
    double fraction = 0.0;
    if (!ungradable) {
        if (report.max_score > 0.0) {
            fraction = std::clamp(finite_or_zero(report.score) / report.max_score, 0.0, 1.0);
        } else {
            fraction = report.verdict == Verdict::pass ? 1.0 : 0.0;
        }
    }
    std::string message = verdict_word(report.verdict) + " " + score_text(report);
    if (!report.summary.empty()) {
        message += ": " + clean(report.summary);
    }

    json tests = json::array();
    for (const auto& check : report.checks) {
        std::string description = "check " + clean(check.id);
        if (check.review) {
            description += ", " + review_note();
        } else if (!check.required) {
            description += ", optional";
        }
        std::vector<std::string> details;
        for (const auto& detail : check.details) {
            details.push_back(clean(detail));
        }
        tests.push_back(
            {{"name", clean(check.title)},
             {"description", description},
             {"points", check.review || ungradable ? 0.0 : finite_or_zero(check.points)},
             {"max_points", check.review ? 0.0 : finite_or_zero(check.max_points)},
             {"message", clean(check.message)},
             {"output", join(details, "\n")}});
    }
    json document{{"gradable", !ungradable},
                  {"score", fraction},
                  {"message", message},
                  {"output", render_text(report, TextOptions{false, false}, false)},
                  {"tests", tests}};
    if (ungradable) {
        // PrairieLearn shows format_errors for a result it marks "invalid, not gradable", and
        // does not count the attempt against the student.
        document["format_errors"] =
            json::array({"This submission could not be graded: " + ungradable_reason(report)});
    }
    return dump(document);
}

std::string write_json(const Report& report) {
    return report_detail::dump(nlohmann::json(report));
}

}  // namespace grader
