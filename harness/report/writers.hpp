#pragma once

// Report writers: each turns a grader::Report into the text of one file, and none prints or
// touches the file system. Adding a format means adding a writer here; measurement and checks
// never change for it.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/explanation.hpp"
#include "model/report.hpp"
#include "model/sweep.hpp"

namespace grader {

struct TextOptions {
    bool color = false;    // ANSI colors, for a terminal
    bool verbose = false;  // the environment, timing samples, and logs without a line limit
};

// How PrairieLearn's results treat a submission that could not be graded at all: the exercise
// file decides (platforms.prairielearn); by default both are graded, as a failure. An ungradable
// verdict is never gradable.
struct PrairieLearnOptions {
    bool compile_error_gradable = true;
    bool missing_file_gradable = true;
};

// Everything a writer may be told besides the report.
struct ReportOptions {
    TextOptions text;
    PrairieLearnOptions prairielearn;
};

// The report's formats; their names, files and HTTP types are formats.cpp's one table. html is
// the page's fragment (write_report_html), served by `grader serve`, never written to a file.
enum class Format { text, json, markdown, gradescope, prairielearn, junit, html };

// "text", "json", "markdown", "gradescope", "prairielearn", "junit" or "html"; nullopt for
// anything else.
std::optional<Format> parse_format(std::string_view name);
const char* to_string(Format format);
// The Content-Type of an HTTP answer in this format ("text/plain; charset=utf-8").
const char* content_type(Format format);
// The names of the formats a report is written to files in (`grader grade --format`), in order.
std::vector<std::string> file_format_names();

// The conventional file name for a format: report.txt, report.json, report.md, results.json (what
// Gradescope and PrairieLearn read), junit.xml. Where several formats go into one folder, the two
// results.json become gradescope-results.json and prairielearn-results.json.
std::string report_file_name(Format format, bool several_in_one_folder);

// What a person reads: the verdict line, the lesson's table with the harness's numbers beside the
// student's, one line per check, then the sentence, logs and why grading stopped.
std::string write_text(const Report& report, const TextOptions& options);

// The documented schema (docs/report-schema.md), indented by 2, ending in a newline.
std::string write_json(const Report& report);

// GitHub-flavoured markdown, for a pull request comment or a job summary.
std::string write_markdown(const Report& report);

// Gradescope's autograder results.json.
std::string write_gradescope(const Report& report);

// PrairieLearn's external grader results.json. A result it is told not to grade
// ("gradable": false) puts no points at stake in any test.
std::string write_prairielearn(const Report& report, const PrairieLearnOptions& options = {});

// JUnit XML as the Jenkins xUnit plugin's junit-10.xsd allows it: one testcase per check, a
// failure for a failed check, skipped for a check that did not run or a review item, an error
// for an ungradable grade.
std::string write_junit(const Report& report);

std::string write_report(const Report& report, Format format, const ReportOptions& options);
std::string write_report(const Report& report, Format format, const TextOptions& options);

// An HTML fragment (one <section class="report">, no page around it), for the page of `grader
// serve`: the text report's content, the verdict, tables, checks, sentence and logs, as elements
// a stylesheet can lay out.
std::string write_report_html(const Report& report);

// `grader sweep`: the exercise's own kernels on this machine, and the calibration rules.
std::string write_sweep_text(const Sweep& sweep);

// `grader explain`: per stride, each shared-memory line with its counted degree and, for the
// busiest access, the 32 lanes of one warp with their word, bank and bank-mates.
std::string write_explanation_text(const Explanation& explanation, bool stats);
// The same as an HTML fragment: each stride's lines, and for the busiest one a table of the 32
// lanes with their word, bank and bank-mates.
std::string write_explanation_html(const Explanation& explanation);

}  // namespace grader
