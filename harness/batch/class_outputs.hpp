#pragma once

// The class's outputs, as writers over the graded Reports of every submission: a gradebook CSV,
// a JSON summary and one self-contained HTML page. Each writer returns text; writing the files
// is the caller's business. Everything a student wrote (ids, folder names, sentences, logs) is
// untrusted and is quoted, neutralised or escaped for the format it lands in.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/report.hpp"

namespace grader {

struct ClassEntry {
    std::string student_folder;  // the submission's folder name, as found in the class folder
    std::string report_link;     // relative path from the class outputs to this student's report
    Report report;
};

struct ClassReportOptions {
    std::string exercise_id;     // empty: taken from the first report that names one
    std::string exercise_title;  // empty: likewise
    std::string generated_at;    // shown in the title, e.g. "2026-12-02 13:05 UTC"; the caller
                                 // gives it so the page is reproducible from the same inputs
};

// Figures over the whole class, shared by the JSON summary and the HTML page.
struct RatioSpread {
    double min = 0.0;
    double median = 0.0;
    double max = 0.0;
};

struct StrideSummary {
    int stride = 0;
    unsigned degree = 1;            // gcd(stride, 32): the model
    std::size_t student_count = 0;  // students with a measured ratio at this stride
    std::optional<RatioSpread> student_ratio;
    std::optional<double> reference_ratio;  // median over the grades of the reference kernel
};

struct CheckSummary {
    std::string id;
    std::string title;
    double max_points = 0.0;
    std::size_t reported = 0;  // reports that carry this check
    std::size_t passed = 0;
};

// Why submissions did not pass: one failed check, or one kind of interruption.
struct FailureReason {
    std::string key;                   // "check:<id>", "interruption:<kind>" or "summary:<text>"
    std::string reason;                // what the instructor reads
    std::vector<std::string> folders;  // the submissions it applies to, sorted
};

struct ClassSummary {
    std::string exercise_id;
    std::string exercise_title;
    std::size_t submissions = 0;
    std::size_t passed = 0;
    std::size_t failed = 0;
    std::size_t ungradable = 0;
    double max_score = 0.0;             // the largest max_score of any report
    std::vector<double> graded_scores;  // pass and fail only: an ungradable score means nothing
    std::optional<double> mean_score;
    std::optional<double> median_score;
    std::vector<CheckSummary> checks;            // in the order of the first report that has checks
    std::vector<FailureReason> failure_reasons;  // most frequent first, then by reason
    std::vector<StrideSummary> strides;          // ascending
    std::vector<std::string> devices;            // distinct GPUs the class was graded on
};

ClassSummary summarize_class(const std::vector<ClassEntry>& entries);

// One line per submission: why it got its verdict (the interruption where grading stopped,
// else the report's summary).
std::string class_reason(const Report& report);

// RFC 4180 CSV with CRLF line ends, one row per entry sorted by folder. Text fields that a
// spreadsheet would run as a formula (leading =, +, -, @, tab, CR) get a leading apostrophe.
std::string write_gradebook_csv(const std::vector<ClassEntry>& entries);

// The ClassSummary as JSON, with run_info embedded as is under "run".
std::string write_class_summary_json(const std::vector<ClassEntry>& entries,
                                     const nlohmann::json& run_info);

// One HTML page with no external resource: inline CSS and SVG, no script, readable offline.
// Stable element ids: #verdict-counts, #score-histogram, #ratio-chart, #failure-reasons,
// #students.
std::string write_class_report_html(const std::vector<ClassEntry>& entries,
                                    const ClassReportOptions& options);

}  // namespace grader
