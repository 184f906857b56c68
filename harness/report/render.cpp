#include "report/render.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "common/text.hpp"
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
    if (!row.ratio_min || !row.ratio_max) {
        return kMissing;
    }
    return fixed(*row.ratio_min, 2) + "–" + fixed(*row.ratio_max, 2);
}

Cell accumulator_cell(const AccumulatorResult& result) {
    if (!result.ran) {
        return {kMissing, Tone::muted};
    }
    if (result.ok) {
        return {"ok", Tone::good};
    }
    return {"bad (" + std::to_string(result.bad_threads) + ")", Tone::bad};
}

std::string stride_text(const ReportRow& row) {
    // The marker sits in a column of its own width so the digits stay right-aligned.
    return std::to_string(row.stride) + (row.unnamed ? "*" : " ");
}

std::vector<const ReportRow*> rows_of(const Report& report, bool reference) {
    std::vector<const ReportRow*> rows;
    for (const auto& row : report.rows) {
        if ((row.kernel == "reference") == reference) {
            rows.push_back(&row);
        }
    }
    std::stable_sort(rows.begin(), rows.end(),
                     [](const ReportRow* a, const ReportRow* b) { return a->stride < b->stride; });
    return rows;
}

std::string ratio_explanation(const Report& report) {
    return is_simulated(report)
               ? "ratio: the modeled cost at the stride over the modeled cost at stride 1"
               : "ratio: the median time at the stride over the time at stride 1";
}

// The simulator counts each row's conflict degree; the column is shown whenever it has values.
bool any_counted_degree(const Report& report) {
    return std::any_of(report.rows.begin(), report.rows.end(),
                       [](const ReportRow& row) { return row.counted_degree.has_value(); });
}

void add_timing_columns(const Report& report, bool verbose, std::vector<TableColumn>& columns) {
    if (is_simulated(report)) {
        columns.push_back({"modeled", "cost"});
    } else {
        columns.push_back({"median", "ms"});
    }
    columns.push_back({"spread", "%"});
    if (verbose) {
        columns.push_back({"samples", ""});
    }
    if (verbose || any_counted_degree(report)) {
        columns.push_back({"counted", "degree"});
    }
    columns.push_back({"accumulator", ""});
    columns.push_back({"hidden", "input"});
}

void add_timing_cells(const ReportRow& row, bool verbose, bool counted, std::vector<Cell>& cells) {
    if (row.timing) {
        cells.push_back({significant(row.timing->median_ms, 4)});
        cells.push_back({fixed(row.timing->spread * 100.0, 1)});
    } else {
        cells.push_back({kMissing, Tone::muted});
        cells.push_back({kMissing, Tone::muted});
    }
    if (verbose) {
        cells.push_back({row.timing ? std::to_string(row.timing->samples) : kMissing});
    }
    if (verbose || counted) {
        cells.push_back({row.counted_degree ? fixed(*row.counted_degree, 2) : kMissing});
    }
    cells.push_back(accumulator_cell(row.accumulator));
    cells.push_back(accumulator_cell(row.hidden));
}

}  // namespace

Table student_table(const Report& report, bool verbose) {
    Table table;
    table.title = "Your kernel (" + ratio_explanation(report) + ")";
    table.columns = {{"stride", ""},         {"degree", "(model)"},
                     {"your", "prediction"}, {"your ratio", "(your GPU)"},
                     {"measured", "ratio"},  {"min–max", ""},
                     {"reference", "ratio"}};
    add_timing_columns(report, verbose, table.columns);
    bool any_unnamed = false;
    for (const ReportRow* row : rows_of(report, false)) {
        std::vector<Cell> cells;
        cells.push_back({stride_text(*row)});
        cells.push_back({std::to_string(row->degree)});
        if (row->predicted_degree) {
            const bool right = static_cast<unsigned>(*row->predicted_degree) == row->degree &&
                               *row->predicted_degree > 0;
            cells.push_back(
                {std::to_string(*row->predicted_degree), right ? Tone::plain : Tone::bad});
        } else {
            cells.push_back({kMissing, Tone::muted});
        }
        cells.push_back(
            {ratio_text(row->claimed_ratio), row->claimed_ratio ? Tone::plain : Tone::muted});
        cells.push_back({ratio_text(row->ratio)});
        cells.push_back({range_text(*row), Tone::muted});
        cells.push_back({ratio_text(row->reference_ratio)});
        add_timing_cells(*row, verbose, any_counted_degree(report), cells);
        table.rows.push_back(std::move(cells));
        any_unnamed = any_unnamed || row->unnamed;
    }
    if (any_unnamed) {
        table.notes.push_back("* drawn for this grade: a stride you did not name");
    }
    return table;
}

Table reference_table(const Report& report, bool verbose) {
    Table table;
    table.title = "Reference kernel, same compiler and options";
    table.columns = {
        {"stride", ""}, {"degree", "(model)"}, {"ratio", "vs stride 1"}, {"min–max", ""}};
    add_timing_columns(report, verbose, table.columns);
    for (const ReportRow* row : rows_of(report, true)) {
        std::vector<Cell> cells;
        cells.push_back({stride_text(*row)});
        cells.push_back({std::to_string(row->degree)});
        cells.push_back({ratio_text(row->ratio)});
        cells.push_back({range_text(*row), Tone::muted});
        add_timing_cells(*row, verbose, any_counted_degree(report), cells);
        table.rows.push_back(std::move(cells));
    }
    return table;
}

std::vector<WrongValue> wrong_values(const Report& report) {
    std::vector<WrongValue> found;
    for (const bool reference : {false, true}) {
        for (const ReportRow* row : rows_of(report, reference)) {
            const std::string prefix = reference ? "reference kernel, " : "";
            if (row->accumulator.ran && !row->accumulator.ok) {
                found.push_back({prefix + describe_wrong_accumulator(row->stride, row->accumulator),
                                 reference, row->stride, &row->accumulator});
            }
            if (row->hidden.ran && !row->hidden.ok) {
                found.push_back(
                    {prefix + describe_wrong_accumulator(row->stride, row->hidden, "hidden input"),
                     reference, row->stride, &row->hidden});
            }
        }
    }
    return found;
}

bool named_in_details(const WrongValue& wrong, const std::vector<CheckResult>& checks) {
    if (wrong.reference) {
        return false;  // the checks speak of the student's kernel
    }
    const std::string stride = "stride " + std::to_string(wrong.stride);
    const AccumulatorResult& result = *wrong.result;
    const std::string thread = result.first_bad_thread
                                   ? "thread " + std::to_string(*result.first_bad_thread) +
                                         " (block " + std::to_string(result.first_bad_block) +
                                         ", thread " +
                                         std::to_string(result.first_bad_thread_in_block) + ")"
                                   : std::to_string(result.bad_threads) + " ";
    for (const auto& check : checks) {
        for (const auto& detail : check.details) {
            const bool same_stride = detail.compare(0, stride.size(), stride) == 0 &&
                                     detail.size() > stride.size() &&
                                     (detail[stride.size()] == ':' || detail[stride.size()] == ',');
            if (same_stride && detail.find(thread) != std::string::npos) {
                return true;
            }
        }
    }
    return false;
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

std::string device_phrase(const Environment& environment) {
    const std::string arch = arch_name(environment.compute_capability);
    const std::string arch_part = arch.empty() ? "" : arch + ", ";
    if (environment.backend == "sim") {
        return "on the PTX simulator (" + arch_part + "sim): costs are modeled";
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
    if (review.same_as_others == 1) {
        reasons.push_back("the same as another submission's in this class");
    } else if (review.same_as_others > 1) {
        reasons.push_back("the same as " + std::to_string(review.same_as_others) +
                          " other submissions' in this class");
    }
    if (reasons.empty()) {
        return {};
    }
    return "set apart for your instructor's review: " + join(reasons, ", and ") +
           " (case, spacing and punctuation aside)";
}

std::string thread_value(double value) {
    if (std::isnan(value)) {
        return "NaN (never written)";
    }
    if (std::isinf(value)) {
        return value > 0 ? "+infinity" : "-infinity";
    }
    return format_number(value, 6);
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

namespace grader {

std::string describe_wrong_accumulator(int stride, const AccumulatorResult& result,
                                       std::string_view input) {
    using report_detail::thread_value;
    std::string line = "stride " + std::to_string(stride);
    if (!input.empty()) {
        line += ", " + std::string(input);
    }
    line += ": ";
    if (!result.ran) {
        return line + "did not run";
    }
    if (result.first_bad_thread) {
        line += "thread " + std::to_string(*result.first_bad_thread) + " (block " +
                std::to_string(result.first_bad_block) + ", thread " +
                std::to_string(result.first_bad_thread_in_block) + ") held " +
                thread_value(result.first_bad_value) + ", expected " +
                thread_value(result.first_bad_expected) + "; ";
    }
    return line + std::to_string(result.bad_threads) + " of " + std::to_string(result.threads) +
           " threads wrong";
}

}  // namespace grader
