#pragma once

// Pieces the writers share: the tables as cells, numbers as the lesson writes them, and the
// words every format uses. Internal to harness/report. Text from outside the grader is made safe
// by text/text_safety.hpp, where each writer puts it into its format.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/explanation.hpp"
#include "model/measurements.hpp"
#include "model/observations.hpp"
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
    // Where a table is too wide for a terminal's 100 columns, the text form leaves out columns
    // with the highest rank first; 0: always shown.
    int drop_rank = 0;
};

// What a table shows: the student's kernel (with a sweep, or every kernel without one), one of
// the exercise's own kernels, or the student's shared accesses line by line.
enum class TableKind { student, reference, lines };

struct Table {
    TableKind kind = TableKind::student;
    std::string title;
    std::vector<TableColumn> columns;
    std::vector<std::vector<Cell>> rows;
    std::vector<std::string> notes;  // one line each, under the table
};

// The tables a report shows: with a sweep, the student's kernel at every stride it ran and each
// of the exercise's kernels at its strides; without one, one row per kernel with its time,
// bandwidth and ratio to the base, as the lesson's Part 2 table. None where the student's kernel
// has no rows (it did not compile, the file was not there): the exercise's own rows alone are
// not the student's to read, except with verbose. A column is there only where a row has
// something in it (no spread for modeled costs, no range for a single reading).
std::vector<Table> tables(const Report& report, bool verbose);

// A student row's input whose outputs were wrong.
struct WrongValue {
    std::string line;  // describe_wrong_output's
    int stride = 0;
    const OutputComparison* result = nullptr;
};
std::vector<WrongValue> wrong_values(const Report& report);

// "sm_90" from "9.0"; empty where the capability is unknown.
std::string arch_name(const std::string& compute_capability);
// Where the grade's numbers came from, naming the backend actually used: "on NVIDIA H200
// (sm_90, cuda)", "on the PTX simulator (sm_75, sim), modeled costs" (or, where no row has a
// modeled cost, as for an exercise whose timing needs a GPU, "not timed"), "on the cuda backend,
// with no GPU found", or that grading stopped before a backend was chosen.
std::string device_phrase(const Report& report);
bool is_simulated(const Report& report);

std::string verdict_word(Verdict verdict);  // "PASS", "FAIL", "UNGRADABLE"
// "PASS", "FAIL", "NOT RUN" (its input was never produced), "REVIEW" (for the instructor), or
// "FAIL" for a review item that was not given (an empty sentence).
std::string check_word(const CheckResult& check);
std::string points(double value);                    // "11", "10.5"
std::string score_text(const Report& report);        // "11/13"
std::string check_points(const CheckResult& check);  // "2/2"
// The student id as one line, or the submission folder where the answers name none.
std::string student_name(const Report& report);

// Why the sentence was set apart for review, for the student's report ("the same as the
// starter kit's example"); empty where it was not.
std::string sentence_flag_text(const SentenceReview& review);

// The lines of text, at most max_lines of them unless max_lines is 0; the last line then says
// how many were left out.
std::vector<std::string> split_lines(std::string_view text, std::size_t max_lines = 0);

std::string join(const std::vector<std::string>& lines, std::string_view separator);

// `grader explain`'s words for a lane and a line, in every format: "lanes 0,16" or "none" (the
// other active lanes in a lane's bank), and "probe.cu:14 (load)".
std::string bank_mates_text(const ExplainedLane& lane, std::uint32_t index);
std::string line_name(const ExplainedLine& line);
// "4", or "1.50" between whole numbers; a line's "conflict free" or "4-way conflict", from the
// counts a grade keeps (its wavefronts over the fewest its width allows).
std::string degree_text(double degree);
std::string line_degree_text(const ExplainedLine& line);

// The text form without color: the heading, tables and logs, with or without the checks.
std::string render_text(const Report& report, const TextOptions& options, bool with_checks);

}  // namespace grader::report_detail
