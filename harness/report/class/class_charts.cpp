// The class page's charts (class_charts.hpp).

#include "report/class/class_charts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/kernel_ids.hpp"
#include "common/text.hpp"
#include "model/bank_model.hpp"
#include "model/report.hpp"
#include "report/class/class_detail.hpp"
#include "report/class/svg_chart.hpp"
#include "text/text_safety.hpp"

namespace grader::class_detail {
namespace {

std::string escape_html(const std::string& text) {
    return text::html_line(text);
}

const char* verdict_color(Verdict verdict) {
    switch (verdict) {
        case Verdict::pass:
            return "#2e7d32";
        case Verdict::fail:
            return "#c62828";
        case Verdict::ungradable:
            return "#757575";
    }
    return "#757575";
}

// A fixed jitter per student and stride, so dots at one stride do not hide each other and the
// page is the same on every run.
double jitter(const std::string& folder, int stride) {
    const std::uint64_t hash = fnv1a(folder + "#" + std::to_string(stride));
    return static_cast<double>(hash % 1000) / 999.0 - 0.5;  // in [-0.5, 0.5]
}

}  // namespace

Numbers numbers_of(const ClassSummary& summary) {
    if (summary.timed > 0 && summary.modeled > 0) {
        return Numbers::mixed;
    }
    if (summary.modeled > 0) {
        return Numbers::modeled;
    }
    return summary.timed > 0 ? Numbers::timed : Numbers::none;
}

void write_verdict_counts(std::ostringstream& html, const ClassSummary& summary) {
    html << "<section class=\"card\" aria-labelledby=\"verdict-counts-title\">\n"
         << "<h2 id=\"verdict-counts-title\">Verdicts</h2>\n<ul class=\"counts\" "
            "id=\"verdict-counts\">\n"
         << "<li class=\"total\"><span class=\"number\" data-count=\"" << summary.submissions
         << "\">" << summary.submissions << "</span>submissions</li>\n"
         << "<li class=\"pass\"><span class=\"number\" data-verdict=\"pass\">" << summary.passed
         << "</span>pass</li>\n"
         << "<li class=\"fail\"><span class=\"number\" data-verdict=\"fail\">" << summary.failed
         << "</span>fail</li>\n"
         << "<li class=\"ungradable\"><span class=\"number\" data-verdict=\"ungradable\">"
         << summary.ungradable << "</span>ungradable</li>\n</ul>\n";
    html << "<p class=\"note\">";
    if (summary.mean_score) {
        html << "Mean score " << format_number(*summary.mean_score, 2) << ", median "
             << format_number(*summary.median_score, 2) << " of "
             << format_number(summary.max_score, 2) << " points, over the "
             << summary.graded_scores.size() << " graded submissions.";
    } else {
        html << "No submission could be graded.";
    }
    if (summary.ungradable > 0) {
        html << " Ungradable submissions have no score: the grade stopped for a reason that "
                "is not theirs to answer for, or could not be completed; grade them again.";
    }
    html << "</p>\n</section>\n";
}

namespace {

using Attributes = std::vector<std::pair<std::string, std::string>>;

// A horizontal grid line across the plot at `y`, and its value's label left of the axis: in the
// page's grid style, or `stroke`'s.
void add_grid_line(SvgChart& chart, double left, double right, double y, const std::string& label,
                   const std::string& stroke = {}) {
    Attributes attributes;
    if (stroke.empty()) {
        attributes.emplace_back("class", "grid");
    }
    attributes.insert(attributes.end(), {{"x1", plain_number(left)},
                                         {"x2", plain_number(right)},
                                         {"y1", svg_number(y)},
                                         {"y2", svg_number(y)}});
    if (!stroke.empty()) {
        attributes.emplace_back("stroke", stroke);
    }
    chart.add("line", attributes, {}, false);
    chart.add("text",
              {{"x", plain_number(left - 8)}, {"y", svg_number(y + 4)}, {"text-anchor", "end"}},
              label);
}

// The score histogram's bars, one per whole point while that stays readable, else ten bins.
struct ScoreBins {
    bool per_point = true;
    double width = 1.0;
    std::vector<int> counts;

    explicit ScoreBins(const ClassSummary& summary) {
        const double max_score = std::max(summary.max_score, 1.0);
        per_point = max_score <= 40.0;
        const int bins = per_point ? static_cast<int>(std::ceil(max_score)) + 1 : 10;
        width = per_point ? 1.0 : max_score / bins;
        counts.assign(static_cast<std::size_t>(bins), 0);
        for (double score : summary.graded_scores) {
            int bin = static_cast<int>(std::floor(std::max(score, 0.0) / width));
            bin = std::min(bin, bins - 1);
            ++counts[static_cast<std::size_t>(bin)];
        }
    }
    std::string label(int bin) const {
        return per_point
                   ? std::to_string(bin)
                   : format_number(bin * width, 1) + "–" + format_number((bin + 1) * width, 1);
    }
};

SvgChart score_histogram(const ClassSummary& summary) {
    const ScoreBins bins(summary);
    const int count_of_bins = static_cast<int>(bins.counts.size());
    const int most = std::max(1, *std::max_element(bins.counts.begin(), bins.counts.end()));
    const int step = std::max(1, static_cast<int>(std::ceil(most / 5.0)));
    const int top = ((most + step - 1) / step) * step;

    SvgChart chart{"score-histogram", 960, 250, "Histogram of scores", {}, {}};
    const double left = 56, right = 16, top_margin = 20, bottom = 56;
    const double plot_width = chart.width - left - right;
    const double plot_height = chart.height - top_margin - bottom;
    const double baseline = top_margin + plot_height;
    const double band = plot_width / count_of_bins;
    const auto y_of = [&](double count) { return baseline - count / top * plot_height; };

    for (int tick = 0; tick <= top; tick += step) {
        add_grid_line(chart, left, left + plot_width, y_of(tick), std::to_string(tick));
    }
    for (int bin = 0; bin < count_of_bins; ++bin) {
        const int count = bins.counts[static_cast<std::size_t>(bin)];
        const double x = left + bin * band + band * 0.12;
        const double bar_width = band * 0.76;
        const double y = y_of(count);
        const std::string label = bins.label(bin);
        chart.add("rect",
                  {{"class", "bar"},
                   {"data-bin", label},
                   {"data-count", std::to_string(count)},
                   {"x", svg_number(x)},
                   {"y", svg_number(y)},
                   {"width", svg_number(bar_width)},
                   {"height", svg_number(baseline - y)},
                   {"fill", "#1565c0"}},
                  "score " + label + ": " + std::to_string(count) +
                      (count == 1 ? " submission" : " submissions"),
                  false);
        if (count > 0) {
            chart.add("text",
                      {{"x", svg_number(x + bar_width / 2)},
                       {"y", svg_number(y - 5)},
                       {"text-anchor", "middle"}},
                      std::to_string(count), false);
        }
        chart.add("text",
                  {{"x", svg_number(left + (bin + 0.5) * band)},
                   {"y", svg_number(baseline + 18)},
                   {"text-anchor", "middle"}},
                  label);
    }
    chart.add("line", {{"class", "axis"},
                       {"x1", plain_number(left)},
                       {"x2", plain_number(left + plot_width)},
                       {"y1", plain_number(baseline)},
                       {"y2", plain_number(baseline)}});
    chart.add("text",
              {{"class", "axis-title"},
               {"x", plain_number(left + plot_width / 2)},
               {"y", plain_number(chart.height - 10)},
               {"text-anchor", "middle"}},
              "score (points, out of " + format_number(summary.max_score, 2) + ")");
    chart.add("text",
              {{"class", "axis-title"},
               {"transform",
                "translate(16 " + plain_number(top_margin + plot_height / 2) + ") rotate(-90)"},
               {"text-anchor", "middle"}},
              "submissions");
    if (summary.graded_scores.empty()) {
        chart.add("text",
                  {{"class", "no-data"},
                   {"x", plain_number(left + plot_width / 2)},
                   {"y", plain_number(top_margin + plot_height / 2)},
                   {"text-anchor", "middle"}},
                  "No data: no submission was graded, so there is no score to show.");
    }
    return chart;
}

}  // namespace

void write_score_histogram(std::ostringstream& html, const ClassSummary& summary) {
    html << "<section class=\"card\" aria-labelledby=\"score-histogram-title\">\n"
         << "<h2 id=\"score-histogram-title\">Distribution of scores</h2>\n";
    write_svg(html, score_histogram(summary));
    html << "<p class=\"note\">Graded submissions only (" << summary.graded_scores.size()
         << "); ungradable ones (" << summary.ungradable << ") have no score.</p>\n</section>\n";
}

// Where no student has a ratio (Part 2 on the simulator: its costs are not modeled) but the
// simulator or the GPU counted the degree, the page plots what was measured: each student's
// counted degree per kernel (or stride) beside the model's, never an empty chart.
bool any_student_ratio(const ClassSummary& summary) {
    return std::any_of(summary.strides.begin(), summary.strides.end(),
                       [](const StrideSummary& row) { return row.student_ratio.has_value(); });
}

namespace {

// A column of the counted chart: each student's counted degree for one kernel (or stride).
struct CountedColumn {
    std::string name;
    unsigned model = 0;
    std::vector<double> counted;
};

std::vector<CountedColumn> counted_columns(const ClassSummary& summary,
                                           const std::vector<const ClassEntry*>& sorted) {
    std::vector<CountedColumn> columns;
    for (const ClassEntry* entry : sorted) {
        if (entry->report.verdict == Verdict::ungradable) {
            continue;
        }
        for (const ReportRow& row : entry->report.rows) {
            if (row.kernel != "student" || !row.counted_degree || *row.counted_degree <= 0.0) {
                continue;
            }
            const std::string name = summary.sweep ? "stride " + std::to_string(row.stride)
                                                   : (row.label.empty() ? row.kernel : row.label);
            auto column = std::find_if(columns.begin(), columns.end(),
                                       [&](const CountedColumn& c) { return c.name == name; });
            if (column == columns.end()) {
                columns.push_back({name, row.degree, {}});
                column = std::prev(columns.end());
            }
            column->counted.push_back(*row.counted_degree);
        }
    }
    return columns;
}

SvgChart counted_chart(const std::vector<CountedColumn>& columns) {
    SvgChart chart{"counted-chart",
                   960,
                   360,
                   "each student's counted conflict degree and the model's",
                   {},
                   {}};
    const double bottom = 60;
    // log2 from degree 1 to 32 (the widest conflict a warp can have).
    LogPlot plot{64, 40, chart.width - 64 - 16, chart.height - 40 - bottom, columns.size(), 0, 5};
    for (int power = 0; power <= 5; ++power) {
        add_grid_line(chart, plot.left, chart.width - 16, plot.y_of(std::pow(2.0, power)),
                      std::to_string(1 << power), "#d0d7de");
    }
    const double band = plot.band();
    std::size_t dots = 0;
    for (std::size_t i = 0; i < columns.size(); ++i) {
        const CountedColumn& column = columns[i];
        const double x = plot.x_of(i);
        if (column.model > 0) {
            const std::string y = svg_number(plot.y_of(column.model));
            chart.add("line", {{"class", "model-degree"},
                               {"x1", svg_number(x - band / 3)},
                               {"x2", svg_number(x + band / 3)},
                               {"y1", y},
                               {"y2", y},
                               {"stroke", "#c62828"},
                               {"stroke-width", "2"}});
        }
        for (std::size_t k = 0; k < column.counted.size(); ++k) {
            // Spread across the band so 300 equal degrees read as a crowd, not one dot.
            const double spread = column.counted.size() > 1
                                      ? (static_cast<double>(k) / (column.counted.size() - 1) - 0.5)
                                      : 0.0;
            chart.add("circle", {{"class", "counted-point"},
                                 {"cx", svg_number(x + spread * band * 0.5)},
                                 {"cy", svg_number(plot.y_of(column.counted[k]))},
                                 {"r", "3"},
                                 {"fill", "#0b57d0"},
                                 {"fill-opacity", "0.5"}});
            ++dots;
        }
        chart.add("text",
                  {{"x", svg_number(x)},
                   {"y", plain_number(chart.height - bottom + 20)},
                   {"text-anchor", "middle"}},
                  escape_html(column.name));
    }
    if (dots == 0) {
        chart.add("text",
                  {{"class", "no-data"},
                   {"x", plain_number(chart.width / 2)},
                   {"y", plain_number(chart.height / 2)},
                   {"text-anchor", "middle"}},
                  "No data: no submission's degree was counted");
    }
    return chart;
}

}  // namespace

void write_counted_chart(std::ostringstream& html, const ClassSummary& summary,
                         const std::vector<const ClassEntry*>& sorted) {
    html << "<section class=\"card\" aria-labelledby=\"counted-chart-title\">\n"
         << "<h2 id=\"counted-chart-title\">Counted conflict degree per student</h2>\n";
    write_svg(html, counted_chart(counted_columns(summary, sorted)));
    html << "<p class=\"note\">Nothing here was timed";
    if (summary.modeled > 0) {
        html << " (the simulator does not model this exercise's costs)";
    }
    html << ": each blue dot is one student's counted conflict degree (shared-memory wavefronts "
            "per request) for that kernel; the red line is the model's degree.</p>\n</section>\n";
}

namespace {

// What the ratio chart's dots, bars and squares are, in the words of how the class was graded.
void write_ratio_note(std::ostringstream& html, const ClassSummary& summary, Numbers numbers,
                      const std::string& base) {
    const bool sweep = summary.sweep;
    html << "<p class=\"note\" id=\"ratio-note\">";
    if (!sweep) {
        html << (numbers == Numbers::modeled
                     ? "No GPU timed these numbers: the class was graded on the PTX simulator, and "
                       "each dot is one student's kernel as the simulator modeled it"
                 : numbers == Numbers::mixed
                     ? "This class mixes grades timed on a GPU (filled dots) and grades "
                       "modeled on the PTX simulator (hollow dots); each dot is one "
                       "student's kernel"
                     : "Each dot is one student's kernel, timed on a GPU in that student's "
                       "grade")
             << ", over the " << escape_html(base)
             << " in the same grade (dots are spread sideways so they do not hide each other). "
                "The blue bars are the exercise's own kernels in the same grades (median over "
                "the grades). Under each kernel, the conflict degree of its tile's column read; "
                "a kernel's time is not that degree times another's, since global memory costs "
                "too.</p>\n";
    } else {
        switch (numbers) {
            case Numbers::timed:
                html << "Each dot is one student's kernel at one stride, timed on a GPU in that "
                        "student's grade: its time over its own time at stride 1";
                break;
            case Numbers::modeled:
                html << "No GPU timed these numbers: the class was graded on the PTX simulator. "
                        "Each "
                        "dot is one student's kernel at one stride, as the simulator modeled it in "
                        "that student's grade: its modeled cost (instructions plus 20 per "
                        "shared-memory wavefront) over its own modeled cost at stride 1";
                break;
            case Numbers::mixed:
                html
                    << "This class mixes grades timed on a GPU (filled dots) and grades modeled on "
                       "the PTX simulator (hollow dots: modeled costs, not times); each student's "
                       "kind is in the table below. Each dot is one student's kernel at one "
                       "stride, "
                       "over its own value at stride 1";
                break;
            case Numbers::none:
                html << "Each dot would be one student's kernel at one stride, over its own value "
                        "at "
                        "stride 1";
                break;
        }
        html
            << " (dots are spread sideways so they do not hide each other). The blue bar is the "
               "reference kernel in the same grades (median over the grades). The square is the "
               "model's conflict degree gcd(stride, "
            << summary.banks
            << ") on the same axis: the ratio a kernel would "
               "show if its cost were all bank requests. Ratios can sit below it where stride 1 "
               "has "
               "costs of its own; the grade compares each student with the reference, not with the "
               "degree.</p>\n";
    }
}

// The chart's numbers as a table: strides (or kernels) across, so it stays short however many
// strides the class drew.
void write_stride_table(std::ostringstream& html, const ClassSummary& summary) {
    const bool sweep = summary.sweep;
    bool header_row = true;
    const auto cells = [&](const char* heading, const auto& cell) {
        const char* tag = header_row ? "th" : "td";
        html << "<tr><th>" << heading << "</th>";
        for (const StrideSummary& row : summary.strides) {
            html << '<' << tag << " class=\"number\">" << cell(row) << "</" << tag << '>';
        }
        html << "</tr>\n";
        header_row = false;
    };
    const auto spread = [](const StrideSummary& row, double RatioSpread::*field) {
        return row.student_ratio ? format_number((*row.student_ratio).*field, 2) : "–";
    };
    html << "<div class=\"scroll\"><table id=\"stride-table\" class=\"compact\">\n<thead>\n";
    if (sweep) {
        cells("stride", [](const StrideSummary& row) { return std::to_string(row.stride); });
    } else {
        cells("kernel", [](const StrideSummary& row) { return escape_html(row.label); });
    }
    html << "</thead>\n<tbody>\n";
    cells("degree", [](const StrideSummary& row) {
        return row.degree > 0 ? std::to_string(row.degree) : std::string("–");
    });
    cells(sweep ? "reference" : "exercise's kernel", [](const StrideSummary& row) {
        return row.reference_ratio ? format_number(*row.reference_ratio, 2) : "–";
    });
    cells("students", [](const StrideSummary& row) { return std::to_string(row.student_count); });
    cells("student min", [&](const StrideSummary& row) { return spread(row, &RatioSpread::min); });
    cells("student median",
          [&](const StrideSummary& row) { return spread(row, &RatioSpread::median); });
    cells("student max", [&](const StrideSummary& row) { return spread(row, &RatioSpread::max); });
    html << "</tbody>\n</table></div>\n</section>\n";
}

// The ratio chart's legend, one row above the plot.
SvgMark ratio_legend(bool sweep, unsigned banks, double left) {
    SvgMark legend{"g", {{"id", "ratio-legend"}}, {}, {}, true};
    double legend_x = left;
    const double legend_y = 16;
    const auto add = [&legend](std::string element, Attributes attributes) {
        legend.children.push_back(
            SvgMark{std::move(element), std::move(attributes), {}, {}, false});
    };
    const auto legend_text = [&](const std::string& label, double advance) {
        legend.children.push_back(
            SvgMark{"text",
                    {{"x", svg_number(legend_x + 20)}, {"y", svg_number(legend_y + 4)}},
                    label,
                    {},
                    true});
        legend_x += advance;
    };
    for (Verdict verdict : {Verdict::pass, Verdict::fail, Verdict::ungradable}) {
        add("circle", {{"cx", svg_number(legend_x + 8)},
                       {"cy", plain_number(legend_y)},
                       {"r", "4"},
                       {"fill", verdict_color(verdict)}});
        legend_text(std::string("student, ") + to_string(verdict),
                    verdict == Verdict::ungradable ? 160 : 120);
    }
    add("line", {{"x1", svg_number(legend_x)},
                 {"x2", svg_number(legend_x + 16)},
                 {"y1", plain_number(legend_y)},
                 {"y2", plain_number(legend_y)},
                 {"stroke", "#1565c0"},
                 {"stroke-width", "2.5"}});
    legend_text(sweep ? "reference kernel (median of the grades)"
                      : "the exercise's kernel (median of the grades)",
                265);
    if (sweep) {
        add("rect", {{"x", svg_number(legend_x + 3)},
                     {"y", plain_number(legend_y - 5)},
                     {"width", "10"},
                     {"height", "10"},
                     {"fill", "none"},
                     {"stroke", "#8e24aa"},
                     {"stroke-width", "1.5"}});
        legend_text("model: degree gcd(stride, " + std::to_string(banks) + ")", 0);
    }
    return legend;
}

// The ratio chart's y axis, as powers of two: log2 from one under every value to one above,
// bounded so that one absurd ratio cannot flatten the class; values past the bounds sit on the
// edge.
std::pair<int, int> y_powers(const ClassSummary& summary) {
    double low = 1.0, high = static_cast<double>(summary.banks);
    for (const StrideSummary& row : summary.strides) {
        if (row.student_ratio) {
            low = std::min(low, row.student_ratio->min);
            high = std::max(high, row.student_ratio->max);
        }
        if (row.reference_ratio) {
            low = std::min(low, *row.reference_ratio);
            high = std::max(high, *row.reference_ratio);
        }
    }
    return {std::max(-6, static_cast<int>(std::floor(std::log2(low / 1.05)))),
            std::min(12, static_cast<int>(std::ceil(std::log2(high * 1.05))))};
}

// Whether a grade's kernel models other ratios than the reference's at some stride: on the
// simulator a kernel like the reference models exactly its ratios, and a dot of it repeats the
// reference's bar.
bool differs_from_reference(const Report& report) {
    constexpr double kSame = 0.005;
    return std::any_of(report.rows.begin(), report.rows.end(), [](const ReportRow& row) {
        return row.kernel == kStudentKernel && row.ratio && row.reference_ratio &&
               plottable(*row.ratio) && plottable(*row.reference_ratio) &&
               std::abs(*row.ratio / *row.reference_ratio - 1.0) > kSame;
    });
}

}  // namespace

namespace {

// The students drawn on the ratio chart: on the simulator, those whose kernels model other ratios
// than the reference's (the rest would pile on the reference's bar and say nothing it does not),
// and how many were left out so.
struct RatioStudents {
    std::vector<const ClassEntry*> drawn;
    std::size_t like_reference = 0;
};

RatioStudents ratio_students(Numbers numbers, const std::vector<const ClassEntry*>& all) {
    RatioStudents students;
    for (const ClassEntry* entry : all) {
        if (numbers != Numbers::modeled || differs_from_reference(entry->report)) {
            students.drawn.push_back(entry);
        } else if (std::any_of(entry->report.rows.begin(), entry->report.rows.end(),
                               [](const ReportRow& row) {
                                   return row.kernel == kStudentKernel && row.ratio;
                               })) {
            ++students.like_reference;
        }
    }
    return students;
}

// What the ratio chart calls its numbers, in the words of how the class was graded.
struct RatioWords {
    std::string base;   // "stride 1", or the exercise's base kernel
    std::string title;  // "Measured ratio per stride"
    std::string axis;   // "time / time at stride 1 (log scale)"
};

RatioWords ratio_words(const ClassSummary& summary, Numbers numbers) {
    const bool sweep = summary.sweep;
    RatioWords words;
    words.base =
        sweep ? std::string("stride 1")
              : (summary.ratio_base.empty() ? std::string("the base kernel") : summary.ratio_base);
    const std::string per = sweep ? " per stride" : " per kernel, against the " + words.base;
    words.title = numbers == Numbers::timed     ? "Measured ratio" + per
                  : numbers == Numbers::modeled ? "Modeled cost ratio" + per
                  : numbers == Numbers::mixed   ? "Ratio" + per + ", timed and modeled"
                                                : "Ratio" + per;
    const std::string of = sweep ? "at " : "of the ";
    words.axis = numbers == Numbers::timed ? "time / time " + of + words.base + " (log scale)"
                 : numbers == Numbers::modeled
                     ? "modeled cost / modeled cost " + of + words.base + " (log scale)"
                     : "ratio to " + std::string(sweep ? "" : "the ") + words.base + " (log scale)";
    return words;
}

const char* numbers_name(Numbers numbers) {
    switch (numbers) {
        case Numbers::timed:
            return "timed";
        case Numbers::modeled:
            return "modeled";
        case Numbers::mixed:
            return "mixed";
        case Numbers::none:
            break;
    }
    return "none";
}

// The ratio chart's frame: its grid, each column's stride (or kernel) and degree, its axes.
void add_ratio_frame(SvgChart& chart, const LogPlot& plot, const ClassSummary& summary,
                     const RatioWords& words) {
    const bool sweep = summary.sweep;
    const double right = plot.left + plot.plot_width;
    for (int power = plot.low_power; power <= plot.high_power; ++power) {
        add_grid_line(chart, plot.left, right, plot.y_of(std::ldexp(1.0, power)),
                      format_number(std::ldexp(1.0, power), 4));
    }
    for (std::size_t i = 0; i < summary.strides.size(); ++i) {
        const StrideSummary& column = summary.strides[i];
        const bool with_degree = sweep || column.degree > 0;
        chart.add("text",
                  {{"x", svg_number(plot.x_of(i))},
                   {"y", plain_number(plot.bottom() + 18)},
                   {"text-anchor", "middle"}},
                  sweep ? std::to_string(column.stride) : escape_html(column.label), !with_degree);
        if (with_degree) {
            chart.add("text",
                      {{"x", svg_number(plot.x_of(i))},
                       {"y", plain_number(plot.bottom() + 34)},
                       {"text-anchor", "middle"},
                       {"style", "fill:#8e24aa;font-size:11px"}},
                      (sweep ? "gcd " : "degree ") + std::to_string(column.degree));
        }
    }
    chart.add("line",
              {{"class", "axis"},
               {"x1", plain_number(plot.left)},
               {"x2", plain_number(right)},
               {"y1", plain_number(plot.bottom())},
               {"y2", plain_number(plot.bottom())}},
              {}, false);
    chart.add("line", {{"class", "axis"},
                       {"x1", plain_number(plot.left)},
                       {"x2", plain_number(plot.left)},
                       {"y1", plain_number(plot.top)},
                       {"y2", plain_number(plot.bottom())}});
    chart.add(
        "text",
        {{"class", "axis-title"},
         {"x", plain_number(plot.left + plot.plot_width / 2)},
         {"y", plain_number(chart.height - 10)},
         {"text-anchor", "middle"}},
        sweep ? "stride (words); under it the model's conflict degree gcd(stride, " +
                    std::to_string(summary.banks) + ")"
              : std::string("kernel; under it the conflict degree the exercise gives its tile"));
    chart.add("text",
              {{"class", "axis-title"},
               {"id", "ratio-axis"},
               {"transform",
                "translate(18 " + plain_number(plot.top + plot.plot_height / 2) + ") rotate(-90)"},
               {"text-anchor", "middle"}},
              escape_html(words.axis));
    if (summary.strides.empty()) {
        chart.add("text",
                  {{"class", "no-data"},
                   {"x", plain_number(plot.left + plot.plot_width / 2)},
                   {"y", plain_number(plot.top + plot.plot_height / 2)},
                   {"text-anchor", "middle"}},
                  "No data: no kernel was timed or modeled in this class, so there is no ratio "
                  "to plot.");
    }
}

// The column a student's row falls in: its stride, or its kernel's label; past the last where
// none.
std::size_t ratio_column(const ClassSummary& summary, const ReportRow& row) {
    for (std::size_t i = 0; i < summary.strides.size(); ++i) {
        const StrideSummary& column = summary.strides[i];
        if (summary.sweep ? column.stride == row.stride
                          : column.label == (row.label.empty() ? row.kernel : row.label)) {
            return i;
        }
    }
    return summary.strides.size();
}

// Each drawn student's ratio at each stride (or kernel), coloured by their verdict.
void add_student_dots(SvgChart& chart, const LogPlot& plot, const ClassSummary& summary,
                      Numbers numbers, const std::vector<const ClassEntry*>& drawn) {
    for (const ClassEntry* entry : drawn) {
        const bool is_modeled = modeled(entry->report);
        for (const ReportRow& row : entry->report.rows) {
            if (row.kernel != kStudentKernel || !row.ratio || !plottable(*row.ratio)) {
                continue;
            }
            const std::size_t index = ratio_column(summary, row);
            if (index >= summary.strides.size()) {
                continue;
            }
            const double x =
                plot.x_of(index) + jitter(entry->student_folder, row.stride) * plot.band() * 0.5;
            const char* color = verdict_color(entry->report.verdict);
            // Where a class mixes both, a modeled dot is hollow.
            const bool hollow = is_modeled && numbers == Numbers::mixed;
            chart.add("circle",
                      {{"class", "student-dot"},
                       {"data-verdict", to_string(entry->report.verdict)},
                       {"data-numbers", is_modeled ? "modeled" : "timed"},
                       {"cx", svg_number(x)},
                       {"cy", svg_number(plot.y_of(*row.ratio))},
                       {"r", "3.5"},
                       {"fill", hollow ? "none" : color},
                       {"stroke", color},
                       {"fill-opacity", "0.7"}},
                      escape_html(entry->student_folder) + ": " +
                          (summary.sweep ? "stride " + std::to_string(row.stride)
                                         : escape_html(row.label)) +
                          ", " + (is_modeled ? "modeled " : "timed ") + "ratio " +
                          format_number(*row.ratio, 3));
        }
    }
}

SvgChart ratio_chart(const ClassSummary& summary, Numbers numbers, const RatioWords& words,
                     const std::vector<const ClassEntry*>& drawn) {
    SvgChart chart{"ratio-chart",
                   960,
                   460,
                   escape_html(words.title) + ": each student, the reference kernel and the model",
                   {{"data-numbers", numbers_name(numbers)}},
                   {}};
    const std::pair<int, int> powers = y_powers(summary);
    const double left = 64, top = 44;
    const LogPlot plot{left,
                       top,
                       chart.width - left - 16,
                       chart.height - top - 70,
                       summary.strides.size(),
                       powers.first,
                       powers.second};
    add_ratio_frame(chart, plot, summary, words);
    // The model: the conflict degree on the same axis, which is the ratio a kernel whose time
    // were all bank requests would show. Strides are categories, so nothing joins the marks. A
    // kernel's degree is no model of its time against another kernel: not drawn there.
    for (std::size_t i = 0; summary.sweep && i < summary.strides.size(); ++i) {
        const int stride = summary.strides[i].stride;
        const double y = plot.y_of(conflict_degree(stride));
        chart.add("rect",
                  {{"class", "model-point"},
                   {"x", svg_number(plot.x_of(i) - 5)},
                   {"y", svg_number(y - 5)},
                   {"width", "10"},
                   {"height", "10"},
                   {"fill", "none"},
                   {"stroke", "#8e24aa"},
                   {"stroke-width", "1.5"}},
                  "model: stride " + std::to_string(stride) + ", degree " +
                      std::to_string(conflict_degree(stride)));
    }
    add_student_dots(chart, plot, summary, numbers, drawn);
    // The reference on top: a bar across the stride's band, the mark students should sit on.
    for (std::size_t i = 0; i < summary.strides.size(); ++i) {
        const StrideSummary& column = summary.strides[i];
        if (!column.reference_ratio) {
            continue;
        }
        const std::string y = svg_number(plot.y_of(*column.reference_ratio));
        chart.add("line",
                  {{"class", "reference-point"},
                   {"x1", svg_number(plot.x_of(i) - plot.band() * 0.38)},
                   {"x2", svg_number(plot.x_of(i) + plot.band() * 0.38)},
                   {"y1", y},
                   {"y2", y},
                   {"stroke", "#1565c0"},
                   {"stroke-width", "2.5"}},
                  (summary.sweep ? "reference: stride " + std::to_string(column.stride)
                                 : escape_html(column.label) + ", median of the grades") +
                      ", ratio " + format_number(*column.reference_ratio, 3));
    }
    chart.marks.push_back(ratio_legend(summary.sweep, summary.banks, left));
    return chart;
}

}  // namespace

void write_ratio_chart(std::ostringstream& html, const ClassSummary& summary,
                       const std::vector<const ClassEntry*>& all) {
    const Numbers numbers = numbers_of(summary);
    const RatioStudents students = ratio_students(numbers, all);
    const RatioWords words = ratio_words(summary, numbers);
    html << "<section class=\"card\" aria-labelledby=\"ratio-chart-title\">\n"
         << "<h2 id=\"ratio-chart-title\">" << escape_html(words.title) << "</h2>\n";
    write_svg(html, ratio_chart(summary, numbers, words, students.drawn));
    write_ratio_note(html, summary, numbers, words.base);
    if (numbers == Numbers::modeled) {
        html << "<p class=\"note\" id=\"ratio-like-reference\">" << students.like_reference
             << (students.like_reference == 1 ? " student's kernel models"
                                              : " students' kernels model")
             << " the reference's ratios at every stride, as the simulator models any kernel "
                "that reads like it: their dots would sit on the reference's bar, so only the "
             << students.drawn.size()
             << " that differ are drawn. What the students predicted and measured themselves is "
                "charted above.</p>\n";
    }
    write_stride_table(html, summary);
}

namespace {

// A column of the claims chart: a row the students answer, (kernel, stride), in the order first
// seen; each one's measured value, whether they predicted the model's degree, and the tally of
// what they predicted.
struct ClaimColumn {
    std::string kernel;
    int stride = 0;
    std::string name;
    unsigned degree = 0;
    std::vector<std::pair<double, bool>> claims;  // measured, predicted the model's degree
    std::map<int, std::size_t> predicted;         // degree -> students
    std::size_t right = 0;

    // "predicted 8: 250, 4: 30", the three most frequent first; "no prediction".
    std::string tally() const;
    // The measured value at `at` of the way from the least to the most ("–": none).
    std::optional<double> measured(double at) const;
};

std::string ClaimColumn::tally() const {
    std::vector<std::pair<std::size_t, int>> tallies;
    for (const auto& [predicted_degree, students] : predicted) {
        tallies.push_back({students, predicted_degree});
    }
    std::sort(tallies.rbegin(), tallies.rend());
    std::string text;
    for (std::size_t t = 0; t < tallies.size() && t < 3; ++t) {
        text += (t == 0 ? "" : ", ") + std::to_string(tallies[t].second) + ": " +
                std::to_string(tallies[t].first);
    }
    if (tallies.size() > 3) {
        text += ", ...";
    }
    return text.empty() ? std::string("no prediction") : "predicted " + text;
}

std::optional<double> ClaimColumn::measured(double at) const {
    if (claims.empty()) {
        return std::nullopt;
    }
    std::vector<double> values;
    for (const auto& claim : claims) {
        values.push_back(claim.first);
    }
    std::sort(values.begin(), values.end());
    return values[static_cast<std::size_t>(at * (values.size() - 1) + 0.5)];
}

struct Claims {
    std::vector<ClaimColumn> columns;
    bool percent = false;  // the answers give ratios as percentages

    std::string value_text(double ratio) const {
        return percent ? format_number(ratio * 100.0, 1) + "%" : format_number(ratio, 4);
    }
};

// Every student's answered rows, a column per (kernel, stride); in a sweep, by stride.
Claims claims_of(const ClassSummary& summary, const std::vector<const ClassEntry*>& sorted) {
    Claims claims;
    std::vector<ClaimColumn>& columns = claims.columns;
    for (const ClassEntry* entry : sorted) {
        claims.percent = claims.percent || entry->report.ratio_as_percent;
        for (const ReportRow& row : entry->report.rows) {
            if (!row.claimed_ratio && !row.predicted_degree) {
                continue;
            }
            auto column = std::find_if(columns.begin(), columns.end(), [&](const ClaimColumn& c) {
                return c.kernel == row.kernel && c.stride == row.stride;
            });
            if (column == columns.end()) {
                columns.push_back({row.kernel,
                                   row.stride,
                                   summary.sweep ? "stride " + std::to_string(row.stride)
                                                 : (row.label.empty() ? row.kernel : row.label),
                                   row.degree,
                                   {},
                                   {},
                                   0});
                column = std::prev(columns.end());
            }
            const bool right = row.predicted_degree && row.degree > 0 &&
                               static_cast<unsigned>(*row.predicted_degree) == row.degree;
            if (row.predicted_degree) {
                ++column->predicted[*row.predicted_degree];
                column->right += right ? 1 : 0;
            }
            if (row.claimed_ratio && plottable(*row.claimed_ratio)) {
                column->claims.push_back({*row.claimed_ratio, right});
            }
        }
    }
    if (summary.sweep) {
        std::stable_sort(
            columns.begin(), columns.end(),
            [](const ClaimColumn& a, const ClaimColumn& b) { return a.stride < b.stride; });
    }
    // In a column, those who predicted the model's degree first, each group by value: the two
    // read as two groups, not as one band of mixed colours.
    for (ClaimColumn& column : columns) {
        std::sort(column.claims.begin(), column.claims.end(), [](const auto& a, const auto& b) {
            return a.second != b.second ? a.second : a.first < b.first;
        });
    }
    return claims;
}

// The claims chart's scale: every value and, in a sweep, every model degree on it.
std::pair<int, int> claim_powers(const ClassSummary& summary, const Claims& claims) {
    double low = 1.0;
    double high = summary.sweep ? 2.0 : 1.0;
    for (const ClaimColumn& column : claims.columns) {
        for (const auto& [ratio, right] : column.claims) {
            low = std::min(low, ratio);
            high = std::max(high, ratio);
        }
        if (summary.sweep && column.degree > 0) {
            high = std::max(high, static_cast<double>(column.degree));
        }
    }
    const int low_power = std::max(-6, static_cast<int>(std::floor(std::log2(low / 1.05))));
    return {low_power, std::max(low_power + 1,
                                std::min(12, static_cast<int>(std::ceil(std::log2(high * 1.05)))))};
}

// One column's marks: the model's degree, each student's value, the column's name and tally.
// Returns the dots drawn.
std::size_t add_claim_column(SvgChart& chart, const LogPlot& plot, bool sweep,
                             const ClaimColumn& column, std::size_t index) {
    const double x = plot.x_of(index);
    if (sweep && column.degree > 0) {
        const double y = plot.y_of(column.degree);
        chart.add("rect",
                  {{"class", "claim-model"},
                   {"x", svg_number(x - 6)},
                   {"y", svg_number(y - 6)},
                   {"width", "12"},
                   {"height", "12"},
                   {"fill", "none"},
                   {"stroke", "#8e24aa"},
                   {"stroke-width", "2"}},
                  "model: degree " + std::to_string(column.degree));
    }
    for (std::size_t k = 0; k < column.claims.size(); ++k) {
        const auto& [ratio, right] = column.claims[k];
        // Spread across the band in the students' order, so a crowd reads as a crowd.
        const double spread =
            column.claims.size() > 1
                ? static_cast<double>(k) / static_cast<double>(column.claims.size() - 1) - 0.5
                : 0.0;
        chart.add("circle", {{"class", "claim-dot"},
                             {"data-right", right ? "yes" : "no"},
                             {"cx", svg_number(x + spread * plot.band() * 0.6)},
                             {"cy", svg_number(plot.y_of(ratio))},
                             {"r", "3"},
                             {"fill", right ? "#2e7d32" : "#e65100"},
                             {"fill-opacity", "0.55"}});
    }
    chart.add(
        "text",
        {{"x", svg_number(x)}, {"y", plain_number(plot.bottom() + 18)}, {"text-anchor", "middle"}},
        escape_html(column.name), false);
    chart.add("text",
              {{"class", "tally"},
               {"x", svg_number(x)},
               {"y", plain_number(plot.bottom() + 36)},
               {"text-anchor", "middle"}},
              column.tally());
    return column.claims.size();
}

SvgChart claims_chart(const ClassSummary& summary, const Claims& claims) {
    const bool sweep = summary.sweep;
    SvgChart chart{"claims-chart",
                   960,
                   400,
                   std::string("each student's own measured value and predicted degree per ") +
                       (sweep ? "stride" : "kernel"),
                   {},
                   {}};
    const std::pair<int, int> powers = claim_powers(summary, claims);
    const double left = 64, top = 24;
    const LogPlot plot{left,
                       top,
                       chart.width - left - 16,
                       chart.height - top - 96,
                       claims.columns.size(),
                       powers.first,
                       powers.second};
    for (int power = plot.low_power; power <= plot.high_power; ++power) {
        add_grid_line(chart, left, left + plot.plot_width, plot.y_of(std::ldexp(1.0, power)),
                      claims.value_text(std::ldexp(1.0, power)));
    }
    std::size_t dots = 0;
    for (std::size_t i = 0; i < claims.columns.size(); ++i) {
        dots += add_claim_column(chart, plot, sweep, claims.columns[i], i);
    }
    if (dots == 0) {
        chart.add("text",
                  {{"class", "no-data"},
                   {"x", plain_number(left + plot.plot_width / 2)},
                   {"y", plain_number(top + plot.plot_height / 2)},
                   {"text-anchor", "middle"}},
                  "No data: no student's answers give a measured value");
    }
    chart.add("text",
              {{"class", "axis-title"},
               {"x", plain_number(left + plot.plot_width / 2)},
               {"y", plain_number(chart.height - 12)},
               {"text-anchor", "middle"}},
              sweep ? "stride; under it, the degrees the students predicted: degree: students"
                    : "kernel; under it, the degrees the students predicted: degree: students");
    chart.add("text",
              {{"class", "axis-title"},
               {"transform",
                "translate(16 " + plain_number(top + plot.plot_height / 2) + ") rotate(-90)"},
               {"text-anchor", "middle"}},
              claims.percent ? "measured, as the answers give it (log scale)"
                             : "measured ratio, as the answers give it (log scale)");
    return chart;
}

// The chart's numbers as a table, a column per chart column.
void write_claims_table(std::ostringstream& html, const Claims& claims) {
    html << "<div class=\"scroll\"><table id=\"claims-table\" class=\"compact\">\n<thead><tr>"
            "<th></th>";
    for (const ClaimColumn& column : claims.columns) {
        html << "<th class=\"number\">" << escape_html(column.name) << "</th>";
    }
    html << "</tr></thead>\n<tbody>\n";
    const auto row = [&](const char* heading, const auto& cell) {
        html << "<tr><th>" << heading << "</th>";
        for (const ClaimColumn& column : claims.columns) {
            html << "<td class=\"number\">" << cell(column) << "</td>";
        }
        html << "</tr>\n";
    };
    row("model's degree", [](const ClaimColumn& c) {
        return c.degree > 0 ? std::to_string(c.degree) : std::string("–");
    });
    row("predicted it", [](const ClaimColumn& c) {
        std::size_t predicted = 0;
        for (const auto& [degree, students] : c.predicted) {
            predicted += students;
        }
        return std::to_string(c.right) + " of " + std::to_string(predicted);
    });
    const auto measured = [&claims](const ClaimColumn& c, double at) {
        const std::optional<double> value = c.measured(at);
        return value ? claims.value_text(*value) : std::string("–");
    };
    row("measured, min", [&](const ClaimColumn& c) { return measured(c, 0.0); });
    row("measured, median", [&](const ClaimColumn& c) { return measured(c, 0.5); });
    row("measured, max", [&](const ClaimColumn& c) { return measured(c, 1.0); });
    html << "</tbody>\n</table></div>\n</section>\n";
}

}  // namespace

void write_claims_chart(std::ostringstream& html, const ClassSummary& summary,
                        const std::vector<const ClassEntry*>& sorted) {
    const Claims claims = claims_of(summary, sorted);
    html << "<section class=\"card\" aria-labelledby=\"claims-chart-title\">\n"
         << "<h2 id=\"claims-chart-title\">What the students predicted and measured</h2>\n";
    write_svg(html, claims_chart(summary, claims));
    html << "<p class=\"note\">Each dot is one student's measured value as their answers file "
            "gives it, green where they predicted the model's degree for that "
         << (summary.sweep ? "stride" : "kernel") << " and orange where not";
    if (summary.sweep) {
        html << "; the square is the model's degree gcd(stride, " << summary.banks
             << "), the ratio a kernel all of whose time were bank requests would show";
    }
    html << ". These are the students' own numbers, from their own GPUs: the grade's numbers are "
            "in the next chart.</p>\n";
    write_claims_table(html, claims);
}

}  // namespace grader::class_detail
