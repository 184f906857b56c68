#pragma once

// Pieces the writers share: the tables as cells, numbers as the lesson writes them, and text made
// safe to show. Internal to harness/report.

#include <string>
#include <string_view>
#include <vector>

#include "model/report.hpp"
#include "report/writers.hpp"

namespace grader::report_detail {

// How a cell should stand out, where the format can show it.
enum class Tone { plain, good, bad, muted };

struct Cell {
    std::string text;
    Tone tone = Tone::plain;
};

struct TableColumn {
    std::string top;
    std::string bottom;  // the second header line, "" where one line is enough
};

struct Table {
    std::string title;
    std::vector<TableColumn> columns;
    std::vector<std::vector<Cell>> rows;
    std::vector<std::string> notes;  // one line each, under the table
};

// The tables a report shows: with a sweep, the student's kernel at every stride it ran and each
// of the exercise's kernels at its strides; without one, one row per kernel with its time,
// bandwidth and ratio to the base, as the lesson's Part 2 table.
std::vector<Table> tables(const Report& report, bool verbose);

// A student row's input whose outputs were wrong.
struct WrongValue {
    std::string line;  // describe_wrong_output's
    int stride = 0;
    const OutputComparison* result = nullptr;
};
std::vector<WrongValue> wrong_values(const Report& report);

// Whether a check's detail already says the same.
bool named_in_details(const WrongValue& wrong, const std::vector<CheckResult>& checks);

// "sm_90" from "9.0"; empty where the capability is unknown.
std::string arch_name(const std::string& compute_capability);
// "on NVIDIA H200 (sm_90, cuda)", or where there was no GPU or only the simulator, says so.
std::string device_phrase(const Environment& environment);
bool is_simulated(const Report& report);

std::string verdict_word(Verdict verdict);           // "PASS", "FAIL", "UNGRADABLE"
std::string check_word(const CheckResult& check);    // "PASS", "FAIL", "REVIEW"
std::string points(double value);                    // "11", "10.5"
std::string score_text(const Report& report);        // "11/13"
std::string check_points(const CheckResult& check);  // "2/2"
std::string student_name(const Report& report);

// A value a thread held: "1024", "2047.5", or "NaN (never written)".
std::string thread_value(double value);

// Text shown as it is, without what could move a terminal's cursor or break a page: bytes that
// are not UTF-8 become U+FFFD, control characters other than newline and tab become "\x1b".
std::string clean(std::string_view text);

// The lines of text, at most max_lines of them unless max_lines is 0; the last line then says
// how many were left out.
std::vector<std::string> split_lines(std::string_view text, std::size_t max_lines = 0);

std::string join(const std::vector<std::string>& lines, std::string_view separator);

// The text form without color: the heading, tables and logs, with or without the checks.
std::string render_text(const Report& report, const TextOptions& options, bool with_checks);

// The count of characters a terminal shows: UTF-8 code points.
std::size_t display_width(std::string_view text);

}  // namespace grader::report_detail
