#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/text.hpp"
#include "model/report.hpp"
#include "report/class/class_detail.hpp"
#include "report/class_outputs.hpp"
#include "text/text_safety.hpp"

namespace grader {

using namespace class_detail;

// ---------------------------------------------------------------------------------------------
// Gradebook CSV

namespace {

void append_csv_row(std::string& out, const std::vector<std::string>& fields) {
    out += text::csv_row(fields);
}

std::string joined(const std::vector<std::string>& lines, const char* separator) {
    std::string out;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        out += (i > 0 ? separator : "") + lines[i];
    }
    return out;
}

}  // namespace

std::string write_gradebook_csv(const std::vector<ClassEntry>& entries,
                                const ClassReportOptions& options) {
    return write_gradebook_csv(compute_class_data(entries, options), options);
}

std::string write_gradebook_csv(const ClassData& data, const ClassReportOptions& options) {
    const std::vector<const ClassEntry*>& sorted = data.sorted;
    const std::vector<CheckSummary>& columns = data.summary.checks;
    const auto& flags = data.flags;

    // A byte-order mark: Excel reads a CSV without one in the machine's legacy code page, and a
    // student's accented name comes out garbled.
    std::string out = "\xEF\xBB\xBF";
    std::vector<std::string> header = {"folder",    "student_id", "score",
                                       "max_score", "verdict",    "numbers"};
    for (const CheckSummary& column : columns) {
        header.push_back(text::csv_field(column.id));
    }
    header.push_back("sentence_text");
    header.push_back("sentence_cluster");
    header.push_back("flags");
    header.push_back("cause");
    header.push_back("reason");
    append_csv_row(out, header);

    for (const ClassEntry* entry : sorted) {
        const Report& report = entry->report;
        // An ungradable submission has no score: a 0, or points per check, imported into a
        // gradebook would read as the student's when the machine or the harness stopped the grade.
        const bool graded = report.verdict != Verdict::ungradable;
        std::vector<std::string> row;
        // The key, exactly as the class folder names it wherever that is harmless: it joins.
        row.push_back(text::csv_field(
            entry->submission_folder.empty() ? entry->student_folder : entry->submission_folder,
            text::CsvCell::key));
        row.push_back(text::csv_field(report.student_id));
        row.push_back(graded ? format_number(report.score, 2) : "");
        row.push_back(format_number(report.max_score, 2));
        row.push_back(to_string(report.verdict));
        row.push_back(text::csv_field(numbers_source(report)));
        for (const CheckSummary& column : columns) {
            const CheckResult* check = find_check(report, column.id);
            if (!graded || check == nullptr) {
                row.push_back("");
            } else {
                // A number in every point column, so a spreadsheet can sum it: a check that did
                // not run earned nothing, and the reason column says what stopped it.
                row.push_back(format_number(check->not_run() ? 0.0 : check->points, 2));
            }
        }
        const auto mine = flags.find(entry->student_folder);
        row.push_back(text::csv_field(report.sentence));
        row.push_back(mine == flags.end() || mine->second.sentence_cluster == 0
                          ? ""
                          : std::to_string(mine->second.sentence_cluster));
        row.push_back(mine == flags.end() ? ""
                                          : text::csv_field(joined(mine->second.lines(), "; ")));
        const std::optional<StudentCause> cause = student_cause(report);
        row.push_back(cause ? text::csv_field(cause->reason) : std::string());
        row.push_back(text::csv_field(class_reason(report)));
        append_csv_row(out, row);
    }
    for (const std::string& folder : options.unfinished) {
        std::vector<std::string> row(header.size());
        row[0] = text::csv_field(folder, text::CsvCell::key);
        row[4] = "not graded";
        row.back() =
            "the batch was interrupted before this submission was graded: run the same "
            "command with --resume";
        append_csv_row(out, row);
    }
    return out;
}

}  // namespace grader
