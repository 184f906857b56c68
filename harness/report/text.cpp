#include "common/text.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/diagnosis.hpp"
#include "model/finding.hpp"
#include "model/measurements.hpp"
#include "model/observations.hpp"
#include "model/report.hpp"
#include "report/findings_text.hpp"
#include "report/render.hpp"
#include "report/writers.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace report_detail {
namespace {

constexpr std::size_t kLogLines = 60;
constexpr const char* kIndent = "  ";
constexpr std::size_t kCheckWordWidth = 10;           // "[NOT RUN] "
constexpr const char* kCheckIndent = "            ";  // under the title, past the word
// A terminal's width, and a Colab cell's: lines longer than this wrap, and a table leaves out
// the columns it can spare until it fits.
constexpr std::size_t kWidth = 100;
// How much deeper a wrapped line's continuations are indented: deeper than the two spaces that
// nest a detail under its check, so a reader (or a script) tells a continuation from a new line.
constexpr const char* kWrapIndent = "    ";

// The lines of `text` (itself split at '\n'), each wrapped at kWidth columns between words: the
// first after `first`, each later one after `rest`. A word wider than the line stays whole.
std::vector<std::string> wrapped(std::string_view text, const std::string& first,
                                 const std::string& rest) {
    std::vector<std::string> out;
    for (const std::string& paragraph : split_lines(text)) {
        std::string line = out.empty() ? first : rest;
        const std::size_t indent = text::display_width(line);
        std::size_t width = indent;
        std::size_t start = 0;
        bool empty = true;
        while (start <= paragraph.size()) {
            std::size_t end = paragraph.find(' ', start);
            if (end == std::string::npos) {
                end = paragraph.size();
            }
            const std::string word = paragraph.substr(start, end - start);
            const std::size_t word_width = text::display_width(word);
            if (!empty && width + 1 + word_width > kWidth) {
                while (line.size() > rest.size() && line.back() == ' ') {
                    line.pop_back();
                }
                out.push_back(line);
                line = rest;
                width = text::display_width(rest);
                empty = true;
            }
            if (!empty) {
                line += ' ';
                ++width;
            }
            line += word;
            width += word_width;
            empty = false;
            start = end + 1;
        }
        while (!line.empty() && line.back() == ' ') {
            line.pop_back();
        }
        out.push_back(line);
    }
    if (out.empty()) {
        out.push_back(first);
    }
    return out;
}

// Appends text wrapped at kWidth after `indent`, its continuations kWrapIndent deeper, painted
// line by line.
void put(std::string& out, std::string_view text, const std::string& indent,
         const std::function<std::string(const std::string&)>& paint) {
    const std::string rest = indent + kWrapIndent;
    const std::vector<std::string> lines = wrapped(text, indent, rest);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        // The indent stays unpainted, so a color never runs under the margin.
        const std::size_t margin = std::min(i == 0 ? indent.size() : rest.size(), lines[i].size());
        out += lines[i].substr(0, margin) + paint(lines[i].substr(margin)) + "\n";
    }
}

void put(std::string& out, std::string_view text, const std::string& indent) {
    put(out, text, indent, [](const std::string& line) { return line; });
}

// Wraps text in ANSI escapes only where the caller asked for color.
class Painter {
public:
    explicit Painter(bool color) : color_(color) {}

    std::string paint(const std::string& text, const char* code) const {
        return color_ ? std::string("\x1b[") + code + "m" + text + "\x1b[0m" : text;
    }
    std::string bold(const std::string& text) const { return paint(text, "1"); }
    std::string tone(const std::string& text, Tone tone) const {
        switch (tone) {
            case Tone::good:
                return paint(text, "32");
            case Tone::bad:
                return paint(text, "1;31");
            case Tone::muted:
                return paint(text, "2");
            case Tone::plain:
                return text;
        }
        return text;
    }
    std::string verdict(Verdict verdict) const {
        const std::string word = verdict_word(verdict);
        switch (verdict) {
            case Verdict::pass:
                return paint(word, "1;32");
            case Verdict::fail:
                return paint(word, "1;31");
            case Verdict::ungradable:
                return paint(word, "1;33");
        }
        return word;
    }
    std::string check(const CheckResult& check) const {
        const std::string word = "[" + check_word(check) + "]";
        if (check.not_run()) {
            return paint(word, "2");
        }
        if (check.review && check.passed()) {
            return paint(word, "1;36");
        }
        return paint(word, check.passed() ? "1;32" : "1;31");
    }

private:
    bool color_;
};

std::string pad(const std::string& text, std::size_t width, bool left) {
    const std::size_t shown = text::display_width(text);
    const std::string fill(width > shown ? width - shown : 0, ' ');
    return left ? text + fill : fill + text;
}

std::vector<std::size_t> column_widths(const Table& table) {
    std::vector<std::size_t> widths(table.columns.size(), 0);
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
        widths[c] = std::max(text::display_width(table.columns[c].top),
                             text::display_width(table.columns[c].bottom));
        for (const auto& row : table.rows) {
            if (c < row.size()) {
                widths[c] = std::max(widths[c], text::display_width(row[c].text));
            }
        }
    }
    return widths;
}

// The table without the columns it can spare, highest drop rank first, until it fits kWidth.
Table fitted(Table table) {
    for (;;) {
        const std::vector<std::size_t> widths = column_widths(table);
        std::size_t total = std::string(kIndent).size();
        for (std::size_t c = 0; c < widths.size(); ++c) {
            total += widths[c] + (c > 0 ? 2 : 0);
        }
        const auto spare = std::max_element(
            table.columns.begin(), table.columns.end(),
            [](const TableColumn& a, const TableColumn& b) { return a.drop_rank < b.drop_rank; });
        if (total <= kWidth || spare == table.columns.end() || spare->drop_rank == 0) {
            return table;
        }
        const auto index = static_cast<std::size_t>(spare - table.columns.begin());
        table.columns.erase(spare);
        for (auto& row : table.rows) {
            if (index < row.size()) {
                row.erase(row.begin() + static_cast<std::ptrdiff_t>(index));
            }
        }
    }
}

void render_table(const Table& table, const Painter& painter, std::string& out) {
    put(out, table.title, "", [&](const std::string& part) { return painter.bold(part); });
    const std::vector<std::size_t> widths = column_widths(table);
    const auto line = [&](auto cell_text) {
        std::string text = kIndent;
        for (std::size_t c = 0; c < widths.size(); ++c) {
            text += (c > 0 ? "  " : "") + cell_text(c);
        }
        while (!text.empty() && text.back() == ' ') {
            text.pop_back();
        }
        return text + "\n";
    };
    out += line([&](std::size_t c) { return pad(table.columns[c].top, widths[c], false); });
    out += line([&](std::size_t c) { return pad(table.columns[c].bottom, widths[c], false); });
    out += line([&](std::size_t c) { return std::string(widths[c], '-'); });
    for (const auto& row : table.rows) {
        out += line([&](std::size_t c) {
            if (c >= row.size()) {
                return std::string(widths[c], ' ');
            }
            return painter.tone(pad(row[c].text, widths[c], false), row[c].tone);
        });
    }
    for (const auto& note : table.notes) {
        put(out, note, kIndent,
            [&](const std::string& part) { return painter.tone(part, Tone::muted); });
    }
}

void render_block(const std::string& title, const std::string& raw, std::size_t max_lines,
                  const Painter& painter, std::string& out) {
    out += "\n" + painter.bold(title) + "\n";
    for (const auto& line : split_lines(text::visible(raw), max_lines)) {
        put(out, line, kIndent);
    }
}

void render_environment(const Report& report, std::string& out) {
    using text::visible_line;
    const Environment& env = report.environment;
    std::vector<std::string> lines;
    lines.push_back("exercise: " + visible_line(report.exercise_title) + " (" +
                    visible_line(report.exercise_id) + ")");
    lines.push_back("submission: " + visible_line(report.submission) +
                    (report.claimed_gpu.empty()
                         ? ""
                         : ", measured by the student on " + visible_line(report.claimed_gpu)));
    lines.push_back(
        "backend: " + visible_line(env.backend) +
        ", device: " + (env.device_name.empty() ? "none" : visible_line(env.device_name)) +
        ", compute capability " +
        (env.compute_capability.empty() ? "unknown" : visible_line(env.compute_capability)) +
        (env.sm_count > 0 ? ", " + std::to_string(env.sm_count) + " SMs" : std::string()));
    // The simulator has no driver and no SMs: nothing is printed rather than "driver ," or 0.
    lines.push_back((env.driver_version.empty()
                         ? std::string()
                         : "driver " + visible_line(env.driver_version) + ", ") +
                    "NVRTC " + visible_line(env.nvrtc_version) + ", grader " +
                    visible_line(env.grader_version));
    lines.push_back("grid: " + std::to_string(env.grid_blocks) + " blocks of " +
                    std::to_string(env.block_size) + " threads" +
                    (env.blocks_per_sm > 0
                         ? ", " + std::to_string(env.blocks_per_sm) + " blocks per SM"
                         : std::string()));
    if (!env.confinement.empty()) {
        lines.push_back("compile confinement: " + visible_line(env.confinement));
    }
    for (const auto& note : env.notes) {
        lines.push_back("note: " + visible_line(note));
    }
    lines.push_back("seed " + std::to_string(report.seed) + ", " +
                    std::to_string(report.timing_rounds) + " rounds, " +
                    format_number(report.wall_seconds, 2) + " s in all");
    out += "\nEnvironment\n";
    for (const std::string& line : lines) {
        put(out, line, kIndent);
    }
}

// The title of an earlier check whose details say the same finding as detail d of check c (its
// finding, at the same strides), or "" where none does.
std::string said_under(const Report& report, std::size_t c, std::size_t d) {
    const CheckResult& check = report.checks[c];
    const bool cut_line = check.findings.size() >= check.details.size() &&
                          d + 1 == check.details.size() &&
                          check.findings.size() > kMaxDetailsPerCheck;
    if (d >= check.findings.size() || cut_line) {
        return {};
    }
    const Finding& finding = check.findings[d];
    for (std::size_t e = 0; e < c; ++e) {
        const CheckResult& other = report.checks[e];
        for (std::size_t i = 0; i < other.findings.size() && i < other.details.size(); ++i) {
            if (same_finding(other.findings[i], finding) &&
                other.findings[i].strides == finding.strides) {
                return other.title;
            }
        }
    }
    return {};
}

// Each check with its message and details. A finding a check shares with one printed above (a
// race both output checks saw) is said once, there, and referred to here.
void render_checks(const Report& report, const Painter& painter, std::string& out) {
    if (report.checks.empty()) {
        return;
    }
    out += "\n" + painter.bold("Checks") + "\n";
    for (std::size_t c = 0; c < report.checks.size(); ++c) {
        const CheckResult& check = report.checks[c];
        const std::string word = "[" + check_word(check) + "]";
        const char* kind = check.review ? "  (for review)" : check.required ? "" : "  (optional)";
        out += kIndent + painter.check(check) +
               std::string(kCheckWordWidth - std::min(word.size(), kCheckWordWidth - 1), ' ') +
               text::visible_line(check.title) + "  " + check_points(check) + kind + "\n";
        put(out, text::visible(check.message), kCheckIndent);
        for (std::size_t d = 0; d < check.details.size(); ++d) {
            const std::string earlier = said_under(report, c, d);
            put(out,
                earlier.empty() ? text::visible(check.details[d])
                                : "the same as under " + text::visible_line(earlier) + " above",
                std::string(kCheckIndent) + kIndent);
        }
    }
}

void render_interruption(const Interruption& stop, const Painter& painter, std::string& out) {
    out += "\n" + painter.bold("Grading stopped") + "\n";
    put(out,
        (stop.stage.empty() ? "" : "at " + text::visible_line(stop.stage) + ": ") +
            text::visible_line(stop.message) + " (" + std::string(to_string(stop.kind)) + ")",
        kIndent);
    if (!stop.students_fault) {
        put(out,
            "The machine or the grader is at fault, not the submission: this grade does not "
            "count, and there is nothing in your work to change. Tell your instructor, who must "
            "fix the grading machine (the reason is above).",
            kIndent);
    }
}

}  // namespace

// Whether a check's findings name this wrong output: its input at its stride.
bool named_by_a_check(const Report& report, const WrongValue& wrong) {
    for (const CheckResult& check : report.checks) {
        for (const Finding& finding : check.findings) {
            if (finding.kind == FindingKind::wrong_output && finding.output &&
                finding.output->input == wrong.result->input && finding.has_stride(wrong.stride)) {
                return true;
            }
        }
    }
    return false;
}

// One line each check that failed or did not run, with its verdict, title and points, then how
// many passed.
void render_check_lines(const Report& report, const Painter& painter, std::string& out) {
    out += "\n" + painter.bold("Checks") + "\n";
    std::size_t passed = 0;
    for (const CheckResult& check : report.checks) {
        if (check.passed()) {
            ++passed;
            continue;
        }
        const std::string word = "[" + check_word(check) + "]";
        out += kIndent + painter.check(check) +
               std::string(kCheckWordWidth - std::min(word.size(), kCheckWordWidth - 1), ' ') +
               text::visible_line(check.title) + "  " + check_points(check) + "\n";
    }
    if (passed > 0) {
        out += kIndent +
               painter.tone("and " + std::to_string(passed) +
                                (passed == 1 ? " check passed" : " checks passed"),
                            Tone::muted) +
               "\n";
    }
}

// Whether a table bears on the failure the diagnosis names: the student's own rows always (they
// carry the reference's ratio beside theirs), and the lines of shared accesses for a conflict.
// The exercise's own kernels' tables are left out of a failing report (-v shows every table).
bool bears_on_failure(const Report& report, const Table& table) {
    if (report.verdict != Verdict::fail || !report.diagnosis) {
        return true;
    }
    const Cause cause = report.diagnosis->cause;
    switch (table.kind) {
        case TableKind::student:
            return true;
        case TableKind::lines:
            return cause == Cause::wrong_conflict_degree || cause == Cause::old_width ||
                   cause == Cause::warp_spans_rows || cause == Cause::ignores_stride ||
                   cause == Cause::tile_never_read;
        case TableKind::reference:
            return false;
    }
    return true;
}

namespace {

// The failing threads, unless a check's findings name each of them (a platform lists the checks
// itself).
void render_wrong_values(const Report& report, bool with_checks, const Painter& painter,
                         std::string& out) {
    std::vector<std::string> wrong;
    for (const auto& found : wrong_values(report)) {
        if (!with_checks || !named_by_a_check(report, found)) {
            wrong.push_back(found.line);
        }
    }
    if (!wrong.empty()) {
        out += "\n" + painter.bold("Outputs that held the wrong value") + "\n";
        for (const auto& line : wrong) {
            put(out, line, kIndent,
                [&](const std::string& part) { return painter.tone(part, Tone::bad); });
        }
    }
}

// One footer line, so a grade can be repeated and its machine named; -v gives the rest.
void render_footer(const Report& report, const Painter& painter, std::string& out) {
    const Environment& env = report.environment;
    std::string machine = text::visible_line(env.backend.empty() ? "no backend" : env.backend);
    if (!env.device_name.empty()) {
        machine += " on " + text::visible_line(env.device_name);
    }
    if (!env.nvrtc_version.empty()) {
        machine += ", NVRTC " + text::visible_line(env.nvrtc_version);
    }
    if (!env.grader_version.empty()) {
        machine += ", grader " + text::visible_line(env.grader_version);
    }
    out += "\n";
    put(out,
        "seed " + std::to_string(report.seed) + " (--seed " + std::to_string(report.seed) +
            " repeats this grade), " + machine,
        "", [&](const std::string& part) { return painter.tone(part, Tone::muted); });
}

}  // namespace

std::string render_text(const Report& report, const TextOptions& options, bool with_checks) {
    const Painter painter(options.color);
    std::string out;
    // The verdict and the score in color, then who, what and where, wrapped like any line.
    const std::string verdict = verdict_word(report.verdict);
    const std::string score = score_text(report);
    const std::vector<std::string> heading =
        wrapped(verdict + "  " + score + "  " + student_name(report) + "  " +
                    text::visible_line(report.exercise_id) + "  " + device_phrase(report),
                "", kWrapIndent);
    out += painter.verdict(report.verdict) + "  " + painter.bold(score) +
           heading.front().substr(verdict.size() + 2 + score.size()) + "\n";
    for (std::size_t i = 1; i < heading.size(); ++i) {
        out += heading[i] + "\n";
    }
    // The line under it is the diagnosis and its fix (the summary says it).
    if (!report.summary.empty()) {
        put(out, text::visible_line(report.summary), "");
    }
    if (options.verbose) {
        render_environment(report, out);
    }

    // The first screen: the table that shows the failure, and the checks a line each. A
    // failing report's rest follows under a rule: every check's details, the tables that do not
    // bear on the failure, the logs.
    const std::vector<Table> shown = tables(report, options.verbose);
    if (shown.empty() || shown.front().rows.empty()) {
        out += "\n" + painter.bold("Your kernel") + "\n" + kIndent +
               painter.tone("no rows: your kernel did not run", Tone::muted) + "\n";
    }
    const bool failing = report.verdict != Verdict::pass && with_checks && !options.verbose;
    for (const Table& table : shown) {
        if (table.rows.empty()) {
            continue;
        }
        if (failing && !bears_on_failure(report, table)) {
            continue;  // left out: it does not bear on the failure
        }
        out += "\n";
        render_table(options.verbose ? table : fitted(table), painter, out);
    }

    render_wrong_values(report, with_checks, painter, out);

    if (with_checks && failing) {
        render_check_lines(report, painter, out);
        out += "\n" + painter.tone(std::string(kWidth, '-'), Tone::muted) + "\n";
        put(out, "The rest of the report: every check's details, then the logs.", "",
            [&](const std::string& part) { return painter.tone(part, Tone::muted); });
    }
    if (with_checks) {
        render_checks(report, painter, out);
    }
    if (!report.sentence.empty()) {
        out += "\n" + painter.bold("Your sentence") + "\n";
        put(out, text::visible(report.sentence), kIndent);
        const std::string flag = sentence_flag_text(report.sentence_review);
        if (!flag.empty()) {
            put(out, "(" + flag + ")", kIndent,
                [&](const std::string& part) { return painter.tone(part, Tone::bad); });
        }
    }
    const std::size_t max_lines = options.verbose ? 0 : kLogLines;
    if (!report.compile_log.empty()) {
        render_block("Compile log", report.compile_log, max_lines, painter, out);
    }
    if (!report.kernel_output.empty()) {
        render_block("What the kernel printed", report.kernel_output, max_lines, painter, out);
    }
    if (report.interruption) {
        render_interruption(*report.interruption, painter, out);
    }
    if (!options.verbose) {
        render_footer(report, painter, out);
    }
    return out;
}

}  // namespace report_detail

std::string write_text(const Report& report, const TextOptions& options) {
    return report_detail::render_text(report, options, true);
}

}  // namespace grader
