#include <algorithm>
#include <cstddef>
#include <memory>
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

// Text from the report shown as text, on one line: markdown's punctuation escaped, so a
// student's sentence or a kernel name cannot become a link, a heading or a table column.
std::string inline_text(std::string_view raw) {
    return text::markdown_inline(raw);
}

// A fence longer than any run of backticks in the text, so the text cannot close it.
std::string code_block(std::string_view raw, std::size_t max_lines) {
    const std::string text = join(split_lines(text::visible(raw), max_lines), "\n");
    std::size_t longest = 0;
    std::size_t run = 0;
    for (const char c : text) {
        run = c == '`' ? run + 1 : 0;
        longest = std::max(longest, run);
    }
    const std::string fence(std::max<std::size_t>(3, longest + 1), '`');
    return fence + "text\n" + text + "\n" + fence + "\n";
}

void table_markdown(const Table& table, std::string& out) {
    out += "\n### " + inline_text(table.title) + "\n\n|";
    for (const auto& column : table.columns) {
        out += " " + column.top + (column.bottom.empty() ? "" : " " + column.bottom) + " |";
    }
    out += "\n|";
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
        out += "---:|";
    }
    out += "\n";
    for (const auto& row : table.rows) {
        out += "|";
        for (const auto& cell : row) {
            std::string text = inline_text(cell.text);
            while (!text.empty() && text.back() == ' ') {
                text.pop_back();  // the text table's room for the unnamed-stride marker
            }
            if (cell.tone == Tone::bad) {
                text = "**" + text + "**";
            }
            out += " " + text + " |";
        }
        out += "\n";
    }
    for (const auto& note : table.notes) {
        out += "\n" + inline_text(note) + "\n";
    }
}

const char* check_mark(const CheckResult& check) {
    if (check.not_run()) {
        return "⏭️";
    }
    if (check.review && check.passed()) {
        return "📝";
    }
    return check.passed() ? "✅" : "❌";
}

}  // namespace
}  // namespace report_detail

std::string write_markdown(const Report& report) {
    using namespace report_detail;
    std::string out =
        "## " + verdict_word(report.verdict) + " — " + score_text(report) + " — " +
        inline_text(report.exercise_title.empty() ? report.exercise_id : report.exercise_title) +
        "\n\n";
    out += "**Student:** " + inline_text(student_name(report)) + " · **Exercise:** " +
           inline_text(report.exercise_id) + " · **Graded** " + inline_text(device_phrase(report)) +
           "\n";
    if (!report.summary.empty()) {
        out += "\n> " + inline_text(report.summary) + "\n";
    }

    const std::vector<Table> shown = tables(report, false);
    if (shown.empty() || shown.front().rows.empty()) {
        out += "\n### Your kernel\n\nNo rows: your kernel did not run.\n";
    }
    for (const Table& table : shown) {
        if (!table.rows.empty()) {
            table_markdown(table, out);
        }
    }
    const auto wrong = wrong_values(report);
    if (!wrong.empty()) {
        out += "\n### Outputs that held the wrong value\n\n";
        for (const auto& found : wrong) {
            out += "- " + inline_text(found.line) + "\n";
        }
    }

    if (!report.checks.empty()) {
        out += "\n### Checks\n\n";
        for (const auto& check : report.checks) {
            out += std::string("- ") + check_mark(check) + " **" + check_word(check) + "** " +
                   inline_text(check.title) + " — " + check_points(check) + "  \n  " +
                   inline_text(check.message) + "\n";
            for (const auto& detail : check.details) {
                out += "  - " + inline_text(detail) + "\n";
            }
        }
    }
    if (!report.sentence.empty()) {
        out += "\n### Your sentence\n\n> " + inline_text(report.sentence) + "\n";
        const std::string flag = sentence_flag_text(report.sentence_review);
        if (!flag.empty()) {
            out += "\n**" + inline_text(flag) + "**\n";
        }
    }
    if (!report.compile_log.empty()) {
        out += "\n### Compile log\n\n" + code_block(report.compile_log, 200);
    }
    if (!report.kernel_output.empty()) {
        out += "\n### What the kernel printed\n\n" + code_block(report.kernel_output, 200);
    }
    if (report.interruption) {
        const Interruption& stop = *report.interruption;
        out += "\n### Grading stopped\n\n" +
               (stop.stage.empty() ? std::string() : "At " + inline_text(stop.stage) + ": ") +
               inline_text(stop.message) + " (" + inline_text(to_string(stop.kind)) + ")\n";
        if (!stop.students_fault) {
            out +=
                "\nThe machine or the grader is at fault, not the submission: this grade does "
                "not count.\n";
        }
    }
    return out;
}

}  // namespace grader
