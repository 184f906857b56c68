// The report and the lane tables as HTML fragments, for the page of `grader serve`. Every text
// that comes from outside the grader goes through text::html; the class names are the page's
// stylesheet's (harness/serve/page/page.css).

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/explanation.hpp"
#include "model/measurements.hpp"
#include "model/observations.hpp"
#include "model/report.hpp"
#include "report/render.hpp"
#include "report/writers.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace report_detail {
namespace {

const char* tone_class(Tone tone) {
    switch (tone) {
        case Tone::good:
            return " class=\"good\"";
        case Tone::bad:
            return " class=\"bad\"";
        case Tone::muted:
            return " class=\"muted\"";
        case Tone::plain:
            return "";
    }
    return "";
}

void table_html(const Table& table, std::string& out) {
    out += "<h3>" + text::html_line(table.title) + "</h3>\n<table class=\"rows\">\n<thead><tr>";
    for (const auto& column : table.columns) {
        out += "<th>" + text::html_line(column.top) +
               (column.bottom.empty() ? "" : "<br>" + text::html_line(column.bottom)) + "</th>";
    }
    out += "</tr></thead>\n<tbody>\n";
    for (const auto& row : table.rows) {
        out += "<tr>";
        for (const auto& cell : row) {
            out += std::string("<td") + tone_class(cell.tone) + ">" + text::html_line(cell.text) +
                   "</td>";
        }
        out += "</tr>\n";
    }
    out += "</tbody></table>\n";
    for (const auto& note : table.notes) {
        out += "<p class=\"note\">" + text::html_line(note) + "</p>\n";
    }
}

std::string check_class(const CheckResult& check) {
    if (check.not_run()) {
        return "not-run";
    }
    if (check.review && check.passed()) {
        return "review";
    }
    return check.passed() ? "passed" : "failed";
}

std::string code_block(std::string_view raw, std::size_t max_lines) {
    return "<pre>" + text::html(join(split_lines(text::visible(raw), max_lines), "\n")) +
           "</pre>\n";
}

std::string number(double value, const char* format) {
    char text[64];
    std::snprintf(text, sizeof text, format, value);
    return text;
}

}  // namespace
}  // namespace report_detail

std::string write_report_html(const Report& report) {
    using namespace report_detail;
    const std::string verdict = to_string(report.verdict);
    std::string out = "<section class=\"report verdict-" + verdict + "\">\n";
    out += "<h2><span class=\"verdict\">" + verdict_word(report.verdict) +
           "</span> <span class=\"score\">" + score_text(report) + "</span> " +
           text::html_line(report.exercise_title.empty() ? report.exercise_id
                                                         : report.exercise_title) +
           "</h2>\n";
    out += "<p class=\"where\">" + text::html_line(student_name(report)) + " &middot; graded " +
           text::html_line(device_phrase(report)) + "</p>\n";
    if (!report.summary.empty()) {
        out += "<p class=\"summary\">" + text::html_line(report.summary) + "</p>\n";
    }
    const std::vector<Table> shown = tables(report, false);
    if (shown.empty() || shown.front().rows.empty()) {
        out += "<p class=\"note\">No rows: your kernel did not run.</p>\n";
    }
    for (const Table& table : shown) {
        if (!table.rows.empty()) {
            table_html(table, out);
        }
    }
    const auto wrong = wrong_values(report);
    if (!wrong.empty()) {
        out += "<h3>Outputs that held the wrong value</h3>\n<ul class=\"wrong\">\n";
        for (const auto& found : wrong) {
            out += "<li>" + text::html_line(found.line) + "</li>\n";
        }
        out += "</ul>\n";
    }
    if (!report.checks.empty()) {
        out += "<h3>Checks</h3>\n<ul class=\"checks\">\n";
        for (const auto& check : report.checks) {
            out += "<li class=\"check " + check_class(check) + "\"><span class=\"mark\">" +
                   check_word(check) + "</span> <strong>" + text::html_line(check.title) +
                   "</strong> <span class=\"points\">" + check_points(check) + "</span>";
            if (!check.message.empty()) {
                out += "<p>" + text::html(check.message) + "</p>";
            }
            if (!check.details.empty()) {
                out += "<ul>";
                for (const auto& detail : check.details) {
                    out += "<li>" + text::html(detail) + "</li>";
                }
                out += "</ul>";
            }
            out += "</li>\n";
        }
        out += "</ul>\n";
    }
    if (!report.sentence.empty()) {
        out += "<h3>Your sentence</h3>\n<blockquote>" + text::html(report.sentence) +
               "</blockquote>\n";
        const std::string flag = sentence_flag_text(report.sentence_review);
        if (!flag.empty()) {
            out += "<p class=\"flag\">" + text::html_line(flag) + "</p>\n";
        }
    }
    if (!report.compile_log.empty()) {
        out += "<h3>Compile log</h3>\n" + code_block(report.compile_log, 200);
    }
    if (!report.kernel_output.empty()) {
        out += "<h3>What the kernel printed</h3>\n" + code_block(report.kernel_output, 200);
    }
    if (report.interruption) {
        const Interruption& stop = *report.interruption;
        out += "<h3>Grading stopped</h3>\n<p class=\"stopped\">" +
               (stop.stage.empty() ? std::string() : "At " + text::html_line(stop.stage) + ": ") +
               text::html_line(stop.message) + " (" + text::html_line(to_string(stop.kind)) +
               ")</p>\n";
        if (!stop.students_fault) {
            out +=
                "<p class=\"stopped\">The machine or the grader is at fault, not the "
                "submission: this grade does not count.</p>\n";
        }
    }
    out += "<p class=\"seed\">seed " + std::to_string(report.seed) + " &middot; " +
           number(report.wall_seconds, "%.2f") + " s</p>\n</section>\n";
    return out;
}

std::string write_explanation_html(const Explanation& explanation) {
    using namespace report_detail;
    std::string out = "<section class=\"explain\">\n";
    if (!explanation.problem.empty()) {
        return out + "<pre>" + text::html(explanation.problem) + "</pre>\n</section>\n";
    }
    out += "<p>" + text::html_line(explanation.kernel_name) + " from " +
           text::html_line(explanation.source_name) + " on the PTX simulator (" +
           text::html_line(explanation.arch) + "), " + std::to_string(explanation.grid_blocks) +
           " blocks of " + std::to_string(explanation.block_threads) +
           " threads; bank = (byte address / 4) % " + std::to_string(explanation.banks) + "</p>\n";
    if (!explanation.hardware_note.empty()) {
        out += "<p class=\"note\">" + text::html_line(explanation.hardware_note) + "</p>\n";
    }
    for (const ExplainedStride& stride : explanation.strides) {
        out += "<h4>" +
               (stride.stride > 0 ? "stride " + std::to_string(stride.stride)
                                  : std::string("one launch")) +
               (stride.load_degree
                    ? number(*stride.load_degree, ": %.2f shared-load wavefronts per request")
                    : std::string()) +
               "</h4>\n";
        if (!stride.stopped.empty()) {
            out += "<p class=\"stopped\">stopped (" + text::html_line(stride.stopped) + ")</p>\n";
        }
        std::uint64_t busiest = 0;
        for (const auto& line : stride.lines) {
            busiest = std::max(busiest, line.counts.requests);
        }
        for (const auto& line : stride.lines) {
            if (!line.representative) {
                continue;
            }
            const ExplainedWarp& warp = *line.representative;
            const bool conflict_free = line.max_degree <= 1;
            out += "<p class=\"line\"><strong>" + text::html_line(line_name(line)) + "</strong>: ";
            const SharedLineCounts& counts = line.counts;
            if (conflict_free && counts.requests < busiest) {
                out += text::html_line(warp.banks) + "</p>\n";
                continue;
            }
            out += line_degree_text(line) +
                   number(counts.requests > 0 ? static_cast<double>(counts.wavefronts) /
                                                    static_cast<double>(counts.requests)
                                              : 0.0,
                          ", %.2f wavefronts per request") +
                   " over " + std::to_string(counts.requests) + " requests</p>\n";
            out += "<table class=\"lanes\" data-stride=\"" + std::to_string(stride.stride) +
                   "\">\n<caption>warp " + std::to_string(warp.warp) + " of block " +
                   std::to_string(warp.block) + ": " + std::to_string(warp.wavefronts) +
                   " wavefronts; " + text::html_line(warp.banks) +
                   "</caption>\n<thead><tr><th>lane</th><th>word</th><th>bank</th><th>shares "
                   "its bank with</th></tr></thead>\n<tbody>\n";
            for (std::uint32_t lane = 0; lane < warp.lanes.size(); ++lane) {
                const ExplainedLane& access = warp.lanes[lane];
                if (!access.active) {
                    out += "<tr class=\"inactive\"><td>" + std::to_string(lane) +
                           "</td><td>-</td><td>-</td><td>(inactive)</td></tr>\n";
                    continue;
                }
                out += std::string("<tr") + (access.bank_mates != 0 ? " class=\"shared\"" : "") +
                       "><td>" + std::to_string(lane) + "</td><td>" + std::to_string(access.word) +
                       "</td><td>" + std::to_string(access.bank) + "</td><td>" +
                       bank_mates_text(access, lane) + "</td></tr>\n";
            }
            out += "</tbody></table>\n";
        }
        if (!stride.note.empty()) {
            out += "<p class=\"note\">note: " + text::html_line(stride.note) + "</p>\n";
        }
    }
    return out + "</section>\n";
}

}  // namespace grader
