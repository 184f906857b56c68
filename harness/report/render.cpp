#include "report/render.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

#include "common/kernel_ids.hpp"
#include "common/text.hpp"
#include "model/measurements.hpp"
#include "report/describe.hpp"
#include "text/text_safety.hpp"

namespace grader::report_detail {
namespace {

constexpr const char* kMissing = "—";

std::string fixed(double value, int decimals) {
    if (std::isnan(value)) {
        return kMissing;
    }
    if (std::isinf(value)) {
        return value > 0 ? "inf" : "-inf";
    }
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    return buffer;
}

// The lesson writes ratios with two decimals ("31.10") and times with a few significant digits
// ("0.286"); an H200 runs stride 1 in under 0.1 ms, so times keep four significant digits.
std::string ratio_text(const std::optional<double>& ratio) {
    return ratio ? fixed(*ratio, 2) : kMissing;
}

std::string significant(double value, int digits) {
    if (!std::isfinite(value) || value == 0.0) {
        return fixed(value, 0);
    }
    const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
    return fixed(value, std::max(0, digits - 1 - magnitude));
}

std::string range_text(const ReportRow& row) {
    // A modeled cost has no spread: one number twice would read as a measurement that agreed.
    if (!row.ratio_min || !row.ratio_max || *row.ratio_min == *row.ratio_max) {
        return kMissing;
    }
    return fixed(*row.ratio_min, 2) + "–" + fixed(*row.ratio_max, 2);
}

Cell output_cell(const OutputComparison* result) {
    if (result == nullptr || !result->ran) {
        return {kMissing, Tone::muted};
    }
    if (result->ok) {
        return {"ok", Tone::good};
    }
    return {"bad (" + std::to_string(result->bad_elements) + ")", Tone::bad};
}

std::string stride_text(const ReportRow& row) {
    // The marker sits in a column of its own width so the digits stay right-aligned.
    return std::to_string(row.stride) + (row.unnamed ? "*" : " ");
}

// The rows of one kernel, by stride.
std::vector<const ReportRow*> rows_of(const Report& report, const std::string& kernel) {
    std::vector<const ReportRow*> rows;
    for (const auto& row : report.rows) {
        if (row.kernel == kernel) {
            rows.push_back(&row);
        }
    }
    std::stable_sort(rows.begin(), rows.end(),
                     [](const ReportRow* a, const ReportRow* b) { return a->stride < b->stride; });
    return rows;
}

// The exercise's own kernels that have rows, in the report's order.
std::vector<std::string> harness_kernels(const Report& report) {
    std::vector<std::string> kernels;
    for (const auto& row : report.rows) {
        if (row.kernel != kStudentKernel &&
            std::find(kernels.begin(), kernels.end(), row.kernel) == kernels.end()) {
            kernels.push_back(row.kernel);
        }
    }
    return kernels;
}

bool has_sweep(const Report& report) {
    return std::any_of(report.rows.begin(), report.rows.end(),
                       [](const ReportRow& row) { return row.stride > 0; });
}

std::string ratio_explanation(const Report& report) {
    const std::string base = report.ratio_base.empty() ? "stride 1" : report.ratio_base;
    return is_simulated(report) ? "ratio: the modeled cost over the modeled cost at " + base
                                : "ratio: the median time over the time at " + base;
}

// The simulator counts each row's conflict degree; the column is shown whenever it has values.
bool any_counted_degree(const Report& report) {
    return std::any_of(report.rows.begin(), report.rows.end(),
                       [](const ReportRow& row) { return row.counted_degree.has_value(); });
}

// The inputs the rows ran with, in order: one column each.
std::vector<std::string> inputs_of(const Report& report) {
    std::vector<std::string> inputs;
    for (const auto& row : report.rows) {
        for (const auto& output : row.outputs) {
            if (std::find(inputs.begin(), inputs.end(), output.input) == inputs.end()) {
                inputs.push_back(output.input);
            }
        }
    }
    return inputs;
}

// The counted degree with who counted it: "hw" the GPU's own counters (SASS), "sim" the
// simulator (PTX-level).
Cell counted_cell(const ReportRow& row) {
    if (!row.counted_degree) {
        return {kMissing, Tone::muted};
    }
    const std::string source = row.count_source == "hardware"    ? " hw"
                               : row.count_source == "simulator" ? " sim"
                                                                 : "";
    return {fixed(*row.counted_degree, 2) + source};
}

// Whether any row counted global memory: its sectors per request get a column.
bool any_global_counts(const Report& report) {
    return std::any_of(report.rows.begin(), report.rows.end(), [](const ReportRow& row) {
        return row.global_load_sectors_per_request || row.global_store_sectors_per_request;
    });
}

// "4", "4.5", "—".
std::string sectors_text(const std::optional<double>& sectors) {
    if (!sectors) {
        return kMissing;
    }
    return fixed(*sectors, std::abs(*sectors - std::round(*sectors)) < 0.05 ? 0 : 1);
}

// Global sectors per request, loads and stores: "4 / 4" for a coalesced copy, "4 / 32" for a
// transpose that writes a column.
Cell sectors_cell(const ReportRow& row) {
    if (!row.global_load_sectors_per_request && !row.global_store_sectors_per_request) {
        return {kMissing, Tone::muted};
    }
    return {sectors_text(row.global_load_sectors_per_request) + " / " +
            sectors_text(row.global_store_sectors_per_request)};
}

// A modeled cost has no spread: the column says nothing on the simulator.
bool shows_spread(const Report& report, bool verbose) {
    return verbose || !is_simulated(report);
}

// Whether any row read its ratio more than once: a min–max column of dashes says nothing.
bool any_range(const Report& report) {
    return std::any_of(report.rows.begin(), report.rows.end(), [](const ReportRow& row) {
        return row.ratio_min && row.ratio_max && *row.ratio_min != *row.ratio_max;
    });
}

// The timing columns, and the outputs' where the table is the student's: the exercise's own
// kernels are the oracle, with nothing to compare.
void add_timing_columns(const Report& report, bool verbose, bool outputs,
                        std::vector<TableColumn>& columns) {
    if (is_simulated(report)) {
        columns.push_back({"modeled", "cost", 2});
    } else {
        columns.push_back({"median", "ms", 2});
    }
    if (shows_spread(report, verbose)) {
        columns.push_back({"spread", "%", 4});
    }
    if (verbose) {
        columns.push_back({"samples", "", 5});
    }
    if (verbose || any_counted_degree(report)) {
        columns.push_back({"counted", "degree"});
    }
    if (any_global_counts(report)) {
        columns.push_back({"sectors", "ld / st"});
    }
    if (outputs) {
        for (const auto& input : inputs_of(report)) {
            columns.push_back({input, "output"});
        }
    }
}

void add_timing_cells(const Report& report, const ReportRow& row, bool verbose, bool outputs,
                      std::vector<Cell>& cells) {
    if (row.timing) {
        cells.push_back({significant(row.timing->median_ms, 4)});
    } else {
        cells.push_back({kMissing, Tone::muted});
    }
    if (shows_spread(report, verbose)) {
        cells.push_back(row.timing ? Cell{fixed(row.timing->spread * 100.0, 1)}
                                   : Cell{kMissing, Tone::muted});
    }
    if (verbose) {
        cells.push_back({row.timing ? std::to_string(row.timing->samples) : kMissing});
    }
    if (verbose || any_counted_degree(report)) {
        cells.push_back(counted_cell(row));
    }
    if (any_global_counts(report)) {
        cells.push_back(sectors_cell(row));
    }
    if (outputs) {
        for (const auto& input : inputs_of(report)) {
            cells.push_back(row.kernel == kStudentKernel ? output_cell(row.output(input))
                                                         : Cell{kMissing, Tone::muted});
        }
    }
}

Cell prediction_cell(const ReportRow& row) {
    if (!row.predicted_degree) {
        return {kMissing, Tone::muted};
    }
    const bool right =
        static_cast<unsigned>(*row.predicted_degree) == row.degree && *row.predicted_degree > 0;
    return {std::to_string(*row.predicted_degree), right ? Tone::plain : Tone::bad};
}

std::string degree_text(unsigned degree) {
    return degree > 0 ? std::to_string(degree) : kMissing;
}

std::string percent_or_ratio(const Report& report, const std::optional<double>& ratio) {
    if (!ratio) {
        return kMissing;
    }
    return report.ratio_as_percent ? fixed(*ratio * 100.0, 1) : fixed(*ratio, 2);
}

Table student_sweep_table(const Report& report, bool verbose) {
    Table table;
    table.title = "Your kernel (" + ratio_explanation(report) + ")";
    const bool simulated = is_simulated(report);
    const bool range = verbose || any_range(report);
    // Where the table is wider than a terminal, the student's own figures (in the answers file,
    // and in the checks' details) go last, after the spread, the range and the time.
    table.columns = {{"stride", ""},
                     {"degree", "(model)"},
                     {"your", "prediction", 1},
                     {"your ratio", "(your GPU)", 1},
                     {simulated ? "modeled" : "measured", "ratio"}};
    if (range) {
        table.columns.push_back({"min–max", "", 3});
    }
    table.columns.push_back({"reference", simulated ? "(modeled)" : "ratio"});
    add_timing_columns(report, verbose, true, table.columns);
    bool any_unnamed = false;
    for (const ReportRow* row : rows_of(report, "student")) {
        std::vector<Cell> cells;
        cells.push_back({stride_text(*row)});
        cells.push_back({degree_text(row->degree)});
        cells.push_back(prediction_cell(*row));
        cells.push_back(
            {ratio_text(row->claimed_ratio), row->claimed_ratio ? Tone::plain : Tone::muted});
        cells.push_back({ratio_text(row->ratio)});
        if (range) {
            cells.push_back({range_text(*row), Tone::muted});
        }
        cells.push_back({ratio_text(row->reference_ratio)});
        add_timing_cells(report, *row, verbose, true, cells);
        table.rows.push_back(std::move(cells));
        any_unnamed = any_unnamed || row->unnamed;
    }
    if (any_unnamed) {
        table.notes.push_back("* drawn for this grade: a stride you did not name");
    }
    return table;
}

Table harness_sweep_table(const Report& report, const std::string& kernel, bool verbose) {
    Table table;
    table.kind = TableKind::reference;
    const auto rows = rows_of(report, kernel);
    const std::string label =
        rows.empty() || rows.front()->label.empty() ? kernel : rows.front()->label;
    table.title = label.empty() ? "Reference kernel" : label;
    table.title[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(table.title[0])));
    table.title += ", same compiler and options";
    const bool range = verbose || any_range(report);
    table.columns = {{"stride", ""},
                     {"degree", "(model)"},
                     {is_simulated(report) ? "modeled ratio" : "ratio", "vs stride 1"}};
    if (range) {
        table.columns.push_back({"min–max", "", 3});
    }
    add_timing_columns(report, verbose, false, table.columns);
    for (const ReportRow* row : rows) {
        std::vector<Cell> cells;
        cells.push_back({stride_text(*row)});
        cells.push_back({degree_text(row->degree)});
        cells.push_back({ratio_text(row->ratio)});
        if (range) {
            cells.push_back({range_text(*row), Tone::muted});
        }
        add_timing_cells(report, *row, verbose, false, cells);
        table.rows.push_back(std::move(cells));
    }
    return table;
}

// Without a sweep: one row per kernel, as the lesson's Part 2 table prints them.
Table kernels_table(const Report& report, bool verbose) {
    Table table;
    const bool simulated = is_simulated(report);
    const std::string base = report.ratio_base.empty() ? "the base" : report.ratio_base;
    const bool timed = std::any_of(report.rows.begin(), report.rows.end(),
                                   [](const ReportRow& row) { return row.timing.has_value(); });
    // An exercise whose timing needs a GPU (simulator.modeled_timing: false): on the simulator
    // nothing is modeled, and the title says so.
    table.title = "Kernels (" + std::string(report.ratio_as_percent ? "% of " : "ratio to ") +
                  base +
                  (!simulated ? ""
                   : timed    ? ", modeled"
                              : "; not timed on the simulator, the counted degree decides") +
                  ")";
    // Where the table is wider than a terminal, the columns the ratio and the outputs do without
    // go first: the bandwidth, the cost, then the student's own figures (in the answers file).
    table.columns = {{"kernel", ""},
                     {simulated ? "modeled" : "time", simulated ? "cost" : "(ms)", 3}};
    const bool bandwidth = std::any_of(report.rows.begin(), report.rows.end(), [](const auto& r) {
        return r.gigabytes_per_second.has_value();
    });
    if (bandwidth) {
        table.columns.push_back({"GB/s", "", 4});
    }
    table.columns.push_back({report.ratio_as_percent ? "% of" : "ratio to", base});
    table.columns.push_back({"degree", "(model)"});
    table.columns.push_back({"counted", "degree"});
    const bool sectors = any_global_counts(report);
    if (sectors) {
        table.columns.push_back({"sectors", "ld / st"});
    }
    table.columns.push_back({"your", "prediction", 1});
    table.columns.push_back({report.ratio_as_percent ? "your %" : "your ratio", "(your GPU)", 2});
    for (const auto& input : inputs_of(report)) {
        table.columns.push_back({input, "output"});
    }
    std::vector<std::string> order = harness_kernels(report);
    order.push_back("student");
    for (const std::string& kernel : order) {
        for (const ReportRow* row : rows_of(report, kernel)) {
            std::vector<Cell> cells;
            cells.push_back({kernel == kStudentKernel ? "your kernel" : row->label});
            cells.push_back({row->timing ? significant(row->timing->median_ms, 4) : kMissing,
                             row->timing ? Tone::plain : Tone::muted});
            if (bandwidth) {
                cells.push_back(
                    {row->gigabytes_per_second ? fixed(*row->gigabytes_per_second, 1) : kMissing});
            }
            cells.push_back({percent_or_ratio(report, row->ratio)});
            cells.push_back({degree_text(row->degree)});
            cells.push_back(counted_cell(*row));
            if (sectors) {
                cells.push_back(sectors_cell(*row));
            }
            cells.push_back(prediction_cell(*row));
            cells.push_back({percent_or_ratio(report, row->claimed_ratio),
                             row->claimed_ratio ? Tone::plain : Tone::muted});
            for (const auto& input : inputs_of(report)) {
                cells.push_back(kernel == kStudentKernel ? output_cell(row->output(input))
                                                         : Cell{kMissing, Tone::muted});
            }
            table.rows.push_back(std::move(cells));
        }
    }
    (void)verbose;
    return table;
}

// "load", "store, 128-bit".
std::string access_text(const SharedLineCounts& line) {
    const std::string width = describe_access_width(line.bytes_per_lane);
    return std::string(line.store ? "store" : "load") + (width.empty() ? "" : ", " + width);
}

Cell line_degree_cell(const SharedLineCounts& line) {
    return {fixed(line.degree, 2), line.degree > 1.005 ? Tone::bad : Tone::plain};
}

// The student's shared accesses per source line, as the simulator counted them (on a GPU too,
// beside the GPU's launch totals): the counted degree is the worst line's. With a sweep, a line's
// degree at each stride; without one, its wavefronts against the fewest its width allows.
std::optional<Table> lines_table(const Report& report) {
    const auto rows = rows_of(report, "student");
    using Key = std::tuple<std::string, int, bool>;
    std::vector<Key> keys;
    std::vector<const SharedLineCounts*> first;  // a line's first count, for its name and width
    for (const ReportRow* row : rows) {
        for (const SharedLineCounts& line : row->shared_lines) {
            const Key key{line.file, line.line, line.store};
            if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
                keys.push_back(key);
                first.push_back(&line);
            }
        }
    }
    if (keys.empty()) {
        return std::nullopt;
    }
    Table table;
    table.kind = TableKind::lines;
    const bool simulated = is_simulated(report);
    table.title = std::string(
                      "Your kernel's shared accesses, line by line (counted by the "
                      "simulator, in the PTX") +
                  (simulated ? "" : ", beside the GPU's launch totals") + ")";
    table.columns = {{"line", ""}, {"access", ""}};
    const bool sweep = has_sweep(report);
    if (sweep) {
        for (const ReportRow* row : rows) {
            table.columns.push_back({"stride", stride_text(*row)});
        }
    } else {
        table.columns.push_back({"requests", ""});
        table.columns.push_back({"wavefronts", "per request"});
        table.columns.push_back({"fewest", "per request"});
        table.columns.push_back({"degree", ""});
    }
    for (std::size_t k = 0; k < keys.size(); ++k) {
        std::vector<Cell> cells;
        cells.push_back({text::visible_line(describe_line_place(first[k]->file, first[k]->line))});
        cells.push_back({access_text(*first[k])});
        if (sweep) {
            for (const ReportRow* row : rows) {
                const auto found = std::find_if(
                    row->shared_lines.begin(), row->shared_lines.end(), [&](const auto& line) {
                        return Key{line.file, line.line, line.store} == keys[k];
                    });
                cells.push_back(found == row->shared_lines.end() ? Cell{kMissing, Tone::muted}
                                                                 : line_degree_cell(*found));
            }
        } else {
            const SharedLineCounts& line = *first[k];
            const auto per_request = [&](std::uint64_t value) {
                return line.requests > 0
                           ? fixed(static_cast<double>(value) / static_cast<double>(line.requests),
                                   2)
                           : std::string(kMissing);
            };
            cells.push_back({std::to_string(line.requests)});
            cells.push_back({per_request(line.wavefronts)});
            cells.push_back({per_request(line.ideal_wavefronts)});
            cells.push_back(line_degree_cell(line));
        }
        table.rows.push_back(std::move(cells));
    }
    table.notes.push_back(
        "degree: a line's wavefronts over the fewest its accesses' widths allow (1 per request of "
        "32-bit lanes, 2 of 64-bit, 4 of 128-bit), its worst instruction's; 1 is conflict free");
    return table;
}

}  // namespace

std::vector<Table> tables(const Report& report, bool verbose) {
    std::vector<Table> out;
    if (rows_of(report, "student").empty() && !verbose) {
        return out;
    }
    if (!has_sweep(report)) {
        if (!report.rows.empty()) {
            out.push_back(kernels_table(report, verbose));
            // The student's time against each of the exercise's kernels that claims a degree.
            const auto student = rows_of(report, "student");
            if (!student.empty() && student.front()->timing) {
                for (const ReportRow& row : report.rows) {
                    if (row.kernel != kStudentKernel && row.degree > 0 && row.timing &&
                        row.timing->median_ms > 0) {
                        out.back().notes.push_back(
                            "your kernel takes " +
                            fixed(student.front()->timing->median_ms / row.timing->median_ms, 2) +
                            "x the time of " + row.label);
                    }
                }
            }
        }
    } else {
        out.push_back(student_sweep_table(report, verbose));
        for (const std::string& kernel : harness_kernels(report)) {
            out.push_back(harness_sweep_table(report, kernel, verbose));
        }
    }
    if (!out.empty() && any_counted_degree(report)) {
        out.front().notes.push_back(
            "counted degree: shared wavefronts over the fewest the accesses' widths allow, of the "
            "worst line (sim: the simulator, in the PTX) or of the launch (hw: the GPU's own "
            "counters)");
    }
    if (!out.empty() && any_global_counts(report)) {
        out.front().notes.push_back(
            "sectors: 32-byte global-memory sectors per warp request, loads / stores (4 for 32 "
            "lanes of consecutive floats, 32 for lanes a row apart)");
    }
    if (auto lines = lines_table(report)) {
        out.push_back(std::move(*lines));
    }
    return out;
}

std::vector<WrongValue> wrong_values(const Report& report) {
    std::vector<WrongValue> found;
    for (const ReportRow* row : rows_of(report, "student")) {
        for (const auto& output : row->outputs) {
            if (output.ran && !output.ok) {
                found.push_back(
                    {output.input + " input, " + describe_wrong_output(row->stride, output),
                     row->stride, &output});
            }
        }
    }
    return found;
}

std::string arch_name(const std::string& compute_capability) {
    std::string digits;
    for (const char c : compute_capability) {
        if (c >= '0' && c <= '9') {
            digits += c;
        }
    }
    return digits.empty() ? std::string() : "sm_" + digits;
}

bool is_simulated(const Report& report) {
    return report.environment.backend == "sim";
}

std::string device_phrase(const Report& report) {
    const Environment& environment = report.environment;
    const std::string arch = arch_name(environment.compute_capability);
    const std::string arch_part = arch.empty() ? "" : arch + ", ";
    if (environment.backend == "sim") {
        const bool costs = std::any_of(report.rows.begin(), report.rows.end(),
                                       [](const ReportRow& row) { return row.ratio.has_value(); });
        // Short enough that the first line, with an id, fits a terminal's 100 columns.
        return "on the PTX simulator (" + arch_part + "sim), " +
               (costs || report.rows.empty() ? "modeled costs" : "not timed");
    }
    if (environment.backend == "cuda") {
        if (!environment.gpu_available) {
            return "on the cuda backend, with no GPU found";
        }
        const std::string name = environment.device_name.empty()
                                     ? "an unnamed GPU"
                                     : text::visible_line(environment.device_name);
        return "on " + name + " (" + arch_part + "cuda)";
    }
    // The worker resolves "auto"; a grade that stopped before it reported never learnt which.
    const std::string asked =
        environment.backend.empty() ? "" : " (" + text::visible_line(environment.backend) + ")";
    return "before any backend ran" + asked;
}

std::string verdict_word(Verdict verdict) {
    switch (verdict) {
        case Verdict::pass:
            return "PASS";
        case Verdict::fail:
            return "FAIL";
        case Verdict::ungradable:
            return "UNGRADABLE";
    }
    return "UNGRADABLE";
}

std::string check_word(const CheckResult& check) {
    if (check.not_run()) {
        return "NOT RUN";
    }
    if (check.review) {
        return check.passed() ? "REVIEW" : "FAIL";
    }
    return check.passed() ? "PASS" : "FAIL";
}

std::string points(double value) {
    if (std::isnan(value)) {
        return "?";
    }
    return format_number(value, 2);
}

std::string score_text(const Report& report) {
    return points(report.score) + "/" + points(report.max_score);
}

std::string check_points(const CheckResult& check) {
    return points(check.points) + "/" + points(check.max_points);
}

std::string student_name(const Report& report) {
    if (!report.student_id.empty()) {
        return text::visible_line(report.student_id);
    }
    return report.submission.empty() ? "(no student id)" : text::visible_line(report.submission);
}

std::string sentence_flag_text(const SentenceReview& review) {
    std::vector<std::string> reasons;
    if (review.same_as_example) {
        reasons.push_back("the same as the starter kit's example");
    }
    // The class's clusters join near-identical sentences too (a word in twelve changed at most):
    // "nearly" keeps the sentence true for both.
    if (review.same_as_others == 1) {
        reasons.push_back("the same or nearly the same as another submission's in this class");
    } else if (review.same_as_others > 1) {
        reasons.push_back("the same or nearly the same as " +
                          std::to_string(review.same_as_others) +
                          " other submissions' in this class");
    }
    if (reasons.empty()) {
        return {};
    }
    return "set apart for your instructor's review: " + join(reasons, ", and ") +
           " (case, spacing and punctuation aside)";
}

std::vector<std::string> split_lines(std::string_view text, std::size_t max_lines) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) {
            end = text.size();
        }
        lines.emplace_back(text.substr(start, end - start));
        start = end + 1;
    }
    if (max_lines > 0 && lines.size() > max_lines) {
        const std::size_t left_out = lines.size() - max_lines;
        lines.resize(max_lines);
        lines.push_back("... " + std::to_string(left_out) + " more lines (verbose shows them all)");
    }
    return lines;
}

std::string join(const std::vector<std::string>& lines, std::string_view separator) {
    std::string out;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (i > 0) {
            out += separator;
        }
        out += lines[i];
    }
    return out;
}

}  // namespace grader::report_detail
