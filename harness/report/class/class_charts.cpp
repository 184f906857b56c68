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
#include "text/text_safety.hpp"

namespace grader::class_detail {
namespace {

std::string escape_html(const std::string& text) {
    return text::html_line(text);
}

// A coordinate with one decimal: enough for a screen, short in the file.
std::string svg_number(double value, int decimals = 1) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    return buffer;
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
    std::uint64_t hash = 1469598103934665603ULL;
    for (char c : folder + "#" + std::to_string(stride)) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 1099511628211ULL;
    }
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

void write_score_histogram(std::ostringstream& html, const ClassSummary& summary) {
    // One bar per whole point while that stays readable, else ten equal bins.
    const double max_score = std::max(summary.max_score, 1.0);
    const bool per_point = max_score <= 40.0;
    const int bins = per_point ? static_cast<int>(std::ceil(max_score)) + 1 : 10;
    const double width = per_point ? 1.0 : max_score / bins;
    std::vector<int> counts(static_cast<std::size_t>(bins), 0);
    for (double score : summary.graded_scores) {
        int bin = static_cast<int>(std::floor(std::max(score, 0.0) / width));
        bin = std::min(bin, bins - 1);
        ++counts[static_cast<std::size_t>(bin)];
    }
    const int most = std::max(1, *std::max_element(counts.begin(), counts.end()));
    const int step = std::max(1, static_cast<int>(std::ceil(most / 5.0)));
    const int top = ((most + step - 1) / step) * step;

    const double view_width = 960, view_height = 250;
    const double left = 56, right = 16, top_margin = 20, bottom = 56;
    const double plot_width = view_width - left - right;
    const double plot_height = view_height - top_margin - bottom;
    const double band = plot_width / bins;
    const auto y_of = [&](double count) {
        return top_margin + plot_height - count / top * plot_height;
    };

    html << "<section class=\"card\" aria-labelledby=\"score-histogram-title\">\n"
         << "<h2 id=\"score-histogram-title\">Distribution of scores</h2>\n"
         << "<svg id=\"score-histogram\" viewBox=\"0 0 " << view_width << ' ' << view_height
         << "\" width=\"" << view_width << "\" height=\"" << view_height
         << "\" role=\"img\" aria-label=\"Histogram of scores\">\n";
    for (int tick = 0; tick <= top; tick += step) {
        const double y = y_of(tick);
        html << "<line class=\"grid\" x1=\"" << left << "\" x2=\"" << left + plot_width
             << "\" y1=\"" << svg_number(y) << "\" y2=\"" << svg_number(y) << "\"/>"
             << "<text x=\"" << left - 8 << "\" y=\"" << svg_number(y + 4)
             << "\" text-anchor=\"end\">" << tick << "</text>\n";
    }
    for (int bin = 0; bin < bins; ++bin) {
        const int count = counts[static_cast<std::size_t>(bin)];
        const double x = left + bin * band + band * 0.12;
        const double bar_width = band * 0.76;
        const double y = y_of(count);
        const std::string label =
            per_point ? std::to_string(bin)
                      : format_number(bin * width, 1) + "–" + format_number((bin + 1) * width, 1);
        html << "<rect class=\"bar\" data-bin=\"" << label << "\" data-count=\"" << count
             << "\" x=\"" << svg_number(x) << "\" y=\"" << svg_number(y) << "\" width=\""
             << svg_number(bar_width) << "\" height=\"" << svg_number(top_margin + plot_height - y)
             << "\" fill=\"#1565c0\"><title>score " << label << ": " << count
             << (count == 1 ? " submission" : " submissions") << "</title></rect>";
        if (count > 0) {
            html << "<text x=\"" << svg_number(x + bar_width / 2) << "\" y=\"" << svg_number(y - 5)
                 << "\" text-anchor=\"middle\">" << count << "</text>";
        }
        html << "<text x=\"" << svg_number(left + (bin + 0.5) * band) << "\" y=\""
             << svg_number(top_margin + plot_height + 18) << "\" text-anchor=\"middle\">" << label
             << "</text>\n";
    }
    html << "<line class=\"axis\" x1=\"" << left << "\" x2=\"" << left + plot_width << "\" y1=\""
         << top_margin + plot_height << "\" y2=\"" << top_margin + plot_height << "\"/>\n"
         << "<text class=\"axis-title\" x=\"" << left + plot_width / 2 << "\" y=\""
         << view_height - 10 << "\" text-anchor=\"middle\">score (points, out of "
         << format_number(summary.max_score, 2) << ")</text>\n"
         << "<text class=\"axis-title\" transform=\"translate(16 " << top_margin + plot_height / 2
         << ") rotate(-90)\" text-anchor=\"middle\">submissions</text>\n";
    if (summary.graded_scores.empty()) {
        html << "<text class=\"no-data\" x=\"" << left + plot_width / 2 << "\" y=\""
             << top_margin + plot_height / 2 << "\" text-anchor=\"middle\">No data: no submission "
             << "was graded, so there is no score to show.</text>\n";
    }
    html << "</svg>\n"
         << "<p class=\"note\">Graded submissions only (" << summary.graded_scores.size()
         << "); ungradable ones (" << summary.ungradable << ") have no score.</p>\n</section>\n";
}

// Where no student has a ratio (Part 2 on the simulator: its costs are not modeled) but the
// simulator or the GPU counted the degree, the page plots what was measured: each student's
// counted degree per kernel (or stride) beside the model's, never an empty chart.
bool any_student_ratio(const ClassSummary& summary) {
    return std::any_of(summary.strides.begin(), summary.strides.end(),
                       [](const StrideSummary& row) { return row.student_ratio.has_value(); });
}

void write_counted_chart(std::ostringstream& html, const ClassSummary& summary,
                         const std::vector<const ClassEntry*>& sorted) {
    struct Column {
        std::string name;
        unsigned model = 0;
        std::vector<double> counted;
    };
    std::vector<Column> columns;
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
                                       [&](const Column& c) { return c.name == name; });
            if (column == columns.end()) {
                columns.push_back({name, row.degree, {}});
                column = std::prev(columns.end());
            }
            column->counted.push_back(*row.counted_degree);
        }
    }
    const double width = 960, height = 360, left = 64, top = 40, bottom = 60;
    const double plot_height = height - top - bottom;
    const double band = (width - left - 16) / std::max<std::size_t>(columns.size(), 1);
    // log2 from degree 1 to 32 (the widest conflict a warp can have).
    const auto y_of = [&](double degree) {
        return top + plot_height - std::clamp(std::log2(degree), 0.0, 5.0) / 5.0 * plot_height;
    };
    html << "<section class=\"card\" aria-labelledby=\"counted-chart-title\">\n"
         << "<h2 id=\"counted-chart-title\">Counted conflict degree per student</h2>\n"
         << "<svg id=\"counted-chart\" viewBox=\"0 0 " << width << ' ' << height << "\" width=\""
         << width << "\" height=\"" << height
         << "\" role=\"img\" aria-label=\"each student's counted conflict degree and the "
            "model's\">\n";
    for (int power = 0; power <= 5; ++power) {
        const double y = y_of(std::pow(2.0, power));
        html << "<line x1=\"" << left << "\" x2=\"" << width - 16 << "\" y1=\"" << svg_number(y)
             << "\" y2=\"" << svg_number(y) << "\" stroke=\"#d0d7de\"/><text x=\"" << left - 8
             << "\" y=\"" << svg_number(y + 4) << "\" text-anchor=\"end\">" << (1 << power)
             << "</text>\n";
    }
    std::size_t dots = 0;
    for (std::size_t i = 0; i < columns.size(); ++i) {
        const Column& column = columns[i];
        const double x = left + (i + 0.5) * band;
        if (column.model > 0) {
            html << "<line class=\"model-degree\" x1=\"" << svg_number(x - band / 3) << "\" x2=\""
                 << svg_number(x + band / 3) << "\" y1=\"" << svg_number(y_of(column.model))
                 << "\" y2=\"" << svg_number(y_of(column.model))
                 << "\" stroke=\"#c62828\" stroke-width=\"2\"/>\n";
        }
        for (std::size_t k = 0; k < column.counted.size(); ++k) {
            // Spread across the band so 300 equal degrees read as a crowd, not one dot.
            const double spread = column.counted.size() > 1
                                      ? (static_cast<double>(k) / (column.counted.size() - 1) - 0.5)
                                      : 0.0;
            html << "<circle class=\"counted-point\" cx=\"" << svg_number(x + spread * band * 0.5)
                 << "\" cy=\"" << svg_number(y_of(column.counted[k])) << "\" r=\"3\" "
                 << "fill=\"#0b57d0\" fill-opacity=\"0.5\"/>\n";
            ++dots;
        }
        html << "<text x=\"" << svg_number(x) << "\" y=\"" << height - bottom + 20
             << "\" text-anchor=\"middle\">" << escape_html(column.name) << "</text>\n";
    }
    if (dots == 0) {
        html << "<text class=\"no-data\" x=\"" << width / 2 << "\" y=\"" << height / 2
             << "\" text-anchor=\"middle\">No data: no submission's degree was counted</text>\n";
    }
    html << "</svg>\n<p class=\"note\">Nothing here was timed";
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
void write_ratio_legend(std::ostringstream& html, bool sweep, unsigned banks, double left) {
    double legend_x = left;
    const double legend_y = 16;
    const auto legend_text = [&](const std::string& label, double advance) {
        html << "<text x=\"" << svg_number(legend_x + 20) << "\" y=\"" << svg_number(legend_y + 4)
             << "\">" << label << "</text>\n";
        legend_x += advance;
    };
    html << "<g id=\"ratio-legend\">\n";
    for (Verdict verdict : {Verdict::pass, Verdict::fail, Verdict::ungradable}) {
        html << "<circle cx=\"" << svg_number(legend_x + 8) << "\" cy=\"" << legend_y
             << "\" r=\"4\" fill=\"" << verdict_color(verdict) << "\"/>";
        legend_text(std::string("student, ") + to_string(verdict),
                    verdict == Verdict::ungradable ? 160 : 120);
    }
    html << "<line x1=\"" << svg_number(legend_x) << "\" x2=\"" << svg_number(legend_x + 16)
         << "\" y1=\"" << legend_y << "\" y2=\"" << legend_y
         << "\" stroke=\"#1565c0\" stroke-width=\"2.5\"/>";
    legend_text(sweep ? "reference kernel (median of the grades)"
                      : "the exercise's kernel (median of the grades)",
                265);
    if (sweep) {
        html << "<rect x=\"" << svg_number(legend_x + 3) << "\" y=\"" << legend_y - 5
             << "\" width=\"10\" height=\"10\" fill=\"none\" stroke=\"#8e24aa\" "
                "stroke-width=\"1.5\"/>";
        legend_text("model: degree gcd(stride, " + std::to_string(banks) + ")", 0);
    }
    html << "</g>\n";
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

void write_ratio_chart(std::ostringstream& html, const ClassSummary& summary,
                       const std::vector<const ClassEntry*>& all) {
    const Numbers numbers = numbers_of(summary);
    // On the simulator, the students whose kernels model other ratios than the reference's: the
    // rest would pile on the reference's bar and say nothing it does not.
    std::vector<const ClassEntry*> sorted;
    std::size_t like_reference = 0;
    for (const ClassEntry* entry : all) {
        if (numbers != Numbers::modeled || differs_from_reference(entry->report)) {
            sorted.push_back(entry);
        } else if (std::any_of(entry->report.rows.begin(), entry->report.rows.end(),
                               [](const ReportRow& row) {
                                   return row.kernel == kStudentKernel && row.ratio;
                               })) {
            ++like_reference;
        }
    }
    const bool sweep = summary.sweep;
    std::vector<int> strides;
    for (const StrideSummary& row : summary.strides) {
        strides.push_back(row.stride);
    }
    // The column a student's row falls in: its stride, or its kernel's label.
    const auto column_of = [&](const ReportRow& row) {
        for (std::size_t i = 0; i < summary.strides.size(); ++i) {
            const StrideSummary& column = summary.strides[i];
            if (sweep ? column.stride == row.stride
                      : column.label == (row.label.empty() ? row.kernel : row.label)) {
                return i;
            }
        }
        return summary.strides.size();
    };
    const std::string base =
        sweep ? std::string("stride 1")
              : (summary.ratio_base.empty() ? std::string("the base kernel") : summary.ratio_base);
    const std::string per = sweep ? " per stride" : " per kernel, against the " + base;
    const std::string title = numbers == Numbers::timed     ? "Measured ratio" + per
                              : numbers == Numbers::modeled ? "Modeled cost ratio" + per
                              : numbers == Numbers::mixed   ? "Ratio" + per + ", timed and modeled"
                                                            : "Ratio" + per;
    const std::string axis =
        numbers == Numbers::timed
            ? "time / time " + std::string(sweep ? "at " : "of the ") + base + " (log scale)"
        : numbers == Numbers::modeled
            ? "modeled cost / modeled cost " + std::string(sweep ? "at " : "of the ") + base +
                  " (log scale)"
            : "ratio to " + std::string(sweep ? "" : "the ") + base + " (log scale)";
    html << "<section class=\"card\" aria-labelledby=\"ratio-chart-title\">\n"
         << "<h2 id=\"ratio-chart-title\">" << escape_html(title) << "</h2>\n";

    // Named values, not a structured binding: a lambda may not capture a binding before C++20.
    const std::pair<int, int> powers = y_powers(summary);
    const int low_power = powers.first, high_power = powers.second;

    const double view_width = 960, view_height = 460;
    const double left = 64, right = 16, top_margin = 44, bottom = 70;
    const double plot_width = view_width - left - right;
    const double plot_height = view_height - top_margin - bottom;
    const double band = strides.empty() ? plot_width : plot_width / strides.size();
    const auto y_of = [&](double ratio) {
        const double power = std::clamp(std::log2(ratio), static_cast<double>(low_power),
                                        static_cast<double>(high_power));
        return top_margin + plot_height -
               (power - low_power) / (high_power - low_power) * plot_height;
    };
    const auto x_of = [&](std::size_t index) { return left + (index + 0.5) * band; };

    html << "<svg id=\"ratio-chart\" viewBox=\"0 0 " << view_width << ' ' << view_height
         << "\" width=\"" << view_width << "\" height=\"" << view_height
         << "\" role=\"img\" aria-label=\"" << escape_html(title)
         << ": each student, the reference kernel and the model\" data-numbers=\""
         << (numbers == Numbers::timed     ? "timed"
             : numbers == Numbers::modeled ? "modeled"
             : numbers == Numbers::mixed   ? "mixed"
                                           : "none")
         << "\">\n";
    for (int power = low_power; power <= high_power; ++power) {
        const double y = y_of(std::ldexp(1.0, power));
        html << "<line class=\"grid\" x1=\"" << left << "\" x2=\"" << left + plot_width
             << "\" y1=\"" << svg_number(y) << "\" y2=\"" << svg_number(y) << "\"/>"
             << "<text x=\"" << left - 8 << "\" y=\"" << svg_number(y + 4)
             << "\" text-anchor=\"end\">" << format_number(std::ldexp(1.0, power), 4)
             << "</text>\n";
    }
    for (std::size_t i = 0; i < strides.size(); ++i) {
        const StrideSummary& column = summary.strides[i];
        html << "<text x=\"" << svg_number(x_of(i)) << "\" y=\"" << top_margin + plot_height + 18
             << "\" text-anchor=\"middle\">"
             << (sweep ? std::to_string(column.stride) : escape_html(column.label)) << "</text>";
        if (sweep || column.degree > 0) {
            html << "<text x=\"" << svg_number(x_of(i)) << "\" y=\""
                 << top_margin + plot_height + 34
                 << "\" text-anchor=\"middle\" style=\"fill:#8e24aa;font-size:11px\">"
                 << (sweep ? "gcd " : "degree ") << column.degree << "</text>";
        }
        html << "\n";
    }
    html << "<line class=\"axis\" x1=\"" << left << "\" x2=\"" << left + plot_width << "\" y1=\""
         << top_margin + plot_height << "\" y2=\"" << top_margin + plot_height << "\"/>"
         << "<line class=\"axis\" x1=\"" << left << "\" x2=\"" << left << "\" y1=\"" << top_margin
         << "\" y2=\"" << top_margin + plot_height << "\"/>\n"
         << "<text class=\"axis-title\" x=\"" << left + plot_width / 2 << "\" y=\""
         << view_height - 10 << "\" text-anchor=\"middle\">"
         << (sweep
                 ? "stride (words); under it the model's conflict degree gcd(stride, " +
                       std::to_string(summary.banks) + ")"
                 : std::string("kernel; under it the conflict degree the exercise gives its tile"))
         << "</text>\n"
         << "<text class=\"axis-title\" id=\"ratio-axis\" transform=\"translate(18 "
         << top_margin + plot_height / 2 << ") rotate(-90)\" text-anchor=\"middle\">" << axis
         << "</text>\n";
    if (strides.empty()) {
        html << "<text class=\"no-data\" x=\"" << left + plot_width / 2 << "\" y=\""
             << top_margin + plot_height / 2 << "\" text-anchor=\"middle\">No data: no kernel "
             << "was timed or modeled in this class, so there is no ratio to plot.</text>\n";
    }

    // The model: the conflict degree on the same axis, which is the ratio a kernel whose time
    // were all bank requests would show. Strides are categories, so nothing joins the marks. A
    // kernel's degree is no model of its time against another kernel: not drawn there.
    for (std::size_t i = 0; sweep && i < strides.size(); ++i) {
        const double y = y_of(conflict_degree(strides[i]));
        html << "<rect class=\"model-point\" x=\"" << svg_number(x_of(i) - 5) << "\" y=\""
             << svg_number(y - 5)
             << "\" width=\"10\" height=\"10\" fill=\"none\" stroke=\"#8e24aa\" "
             << "stroke-width=\"1.5\"><title>model: stride " << strides[i] << ", degree "
             << conflict_degree(strides[i]) << "</title></rect>\n";
    }

    for (const ClassEntry* entry : sorted) {
        const bool is_modeled = modeled(entry->report);
        for (const ReportRow& row : entry->report.rows) {
            if (row.kernel != kStudentKernel || !row.ratio || !plottable(*row.ratio)) {
                continue;
            }
            const std::size_t index = column_of(row);
            if (index >= strides.size()) {
                continue;
            }
            const double x = x_of(index) + jitter(entry->student_folder, row.stride) * band * 0.5;
            const char* color = verdict_color(entry->report.verdict);
            // Where a class mixes both, a modeled dot is hollow.
            const bool hollow = is_modeled && numbers == Numbers::mixed;
            html << "<circle class=\"student-dot\" data-verdict=\""
                 << to_string(entry->report.verdict) << "\" data-numbers=\""
                 << (is_modeled ? "modeled" : "timed") << "\" cx=\"" << svg_number(x) << "\" cy=\""
                 << svg_number(y_of(*row.ratio)) << "\" r=\"3.5\" fill=\""
                 << (hollow ? "none" : color) << "\" stroke=\"" << color
                 << "\" fill-opacity=\"0.7\"><title>" << escape_html(entry->student_folder) << ": "
                 << (sweep ? "stride " + std::to_string(row.stride) : escape_html(row.label))
                 << ", " << (is_modeled ? "modeled " : "timed ") << "ratio "
                 << format_number(*row.ratio, 3) << "</title></circle>\n";
        }
    }

    // The reference on top: a bar across the stride's band, the mark students should sit on.
    for (std::size_t i = 0; i < summary.strides.size(); ++i) {
        if (summary.strides[i].reference_ratio) {
            const double y = y_of(*summary.strides[i].reference_ratio);
            html << "<line class=\"reference-point\" x1=\"" << svg_number(x_of(i) - band * 0.38)
                 << "\" x2=\"" << svg_number(x_of(i) + band * 0.38) << "\" y1=\"" << svg_number(y)
                 << "\" y2=\"" << svg_number(y) << "\" stroke=\"#1565c0\" stroke-width=\"2.5\">"
                 << "<title>"
                 << (sweep ? "reference: stride " + std::to_string(strides[i])
                           : escape_html(summary.strides[i].label) + ", median of the grades")
                 << ", ratio " << format_number(*summary.strides[i].reference_ratio, 3)
                 << "</title></line>\n";
        }
    }

    write_ratio_legend(html, summary.sweep, summary.banks, left);
    html << "</svg>\n";

    write_ratio_note(html, summary, numbers, base);
    if (numbers == Numbers::modeled) {
        html << "<p class=\"note\" id=\"ratio-like-reference\">" << like_reference
             << (like_reference == 1 ? " student's kernel models" : " students' kernels model")
             << " the reference's ratios at every stride, as the simulator models any kernel "
                "that reads like it: their dots would sit on the reference's bar, so only the "
             << sorted.size()
             << " that differ are drawn. What the students predicted and measured themselves is "
                "charted above.</p>\n";
    }
    write_stride_table(html, summary);
}

void write_claims_chart(std::ostringstream& html, const ClassSummary& summary,
                        const std::vector<const ClassEntry*>& sorted) {
    // A column per row a student answers: (kernel, stride), in the order first seen.
    struct Column {
        std::string kernel;
        int stride = 0;
        std::string name;
        unsigned degree = 0;
        std::vector<std::pair<double, bool>> claims;  // measured, predicted the model's degree
        std::map<int, std::size_t> predicted;         // degree -> students
        std::size_t right = 0;
    };
    std::vector<Column> columns;
    bool percent = false;
    for (const ClassEntry* entry : sorted) {
        percent = percent || entry->report.ratio_as_percent;
        for (const ReportRow& row : entry->report.rows) {
            if (!row.claimed_ratio && !row.predicted_degree) {
                continue;
            }
            auto column = std::find_if(columns.begin(), columns.end(), [&](const Column& c) {
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
        std::stable_sort(columns.begin(), columns.end(),
                         [](const Column& a, const Column& b) { return a.stride < b.stride; });
    }
    // In a column, those who predicted the model's degree first, each group by value: the two
    // read as two groups, not as one band of mixed colours.
    for (Column& column : columns) {
        std::sort(column.claims.begin(), column.claims.end(), [](const auto& a, const auto& b) {
            return a.second != b.second ? a.second : a.first < b.first;
        });
    }
    double low = 1.0;
    double high = summary.sweep ? 2.0 : 1.0;
    for (const Column& column : columns) {
        for (const auto& [ratio, right] : column.claims) {
            low = std::min(low, ratio);
            high = std::max(high, ratio);
        }
        if (summary.sweep && column.degree > 0) {
            high = std::max(high, static_cast<double>(column.degree));
        }
    }
    const int low_power = std::max(-6, static_cast<int>(std::floor(std::log2(low / 1.05))));
    const int high_power =
        std::max(low_power + 1, std::min(12, static_cast<int>(std::ceil(std::log2(high * 1.05)))));
    const double width = 960, height = 400, left = 64, right_margin = 16, top = 24, bottom = 96;
    const double plot_width = width - left - right_margin;
    const double plot_height = height - top - bottom;
    const double band = plot_width / static_cast<double>(std::max<std::size_t>(columns.size(), 1));
    const auto y_of = [&](double ratio) {
        const double power = std::clamp(std::log2(ratio), static_cast<double>(low_power),
                                        static_cast<double>(high_power));
        return top + plot_height - (power - low_power) / (high_power - low_power) * plot_height;
    };
    const auto value_text = [&](double ratio) {
        return percent ? format_number(ratio * 100.0, 1) + "%" : format_number(ratio, 4);
    };
    html << "<section class=\"card\" aria-labelledby=\"claims-chart-title\">\n"
         << "<h2 id=\"claims-chart-title\">What the students predicted and measured</h2>\n"
         << "<svg id=\"claims-chart\" viewBox=\"0 0 " << width << ' ' << height << "\" width=\""
         << width << "\" height=\"" << height
         << "\" role=\"img\" aria-label=\"each student's own measured value and predicted degree "
            "per "
         << (summary.sweep ? "stride" : "kernel") << "\">\n";
    for (int power = low_power; power <= high_power; ++power) {
        const double y = y_of(std::ldexp(1.0, power));
        html << "<line class=\"grid\" x1=\"" << left << "\" x2=\"" << left + plot_width
             << "\" y1=\"" << svg_number(y) << "\" y2=\"" << svg_number(y) << "\"/><text x=\""
             << left - 8 << "\" y=\"" << svg_number(y + 4) << "\" text-anchor=\"end\">"
             << value_text(std::ldexp(1.0, power)) << "</text>\n";
    }
    std::size_t dots = 0;
    for (std::size_t i = 0; i < columns.size(); ++i) {
        const Column& column = columns[i];
        const double x = left + (static_cast<double>(i) + 0.5) * band;
        if (summary.sweep && column.degree > 0) {
            const double y = y_of(column.degree);
            html << "<rect class=\"claim-model\" x=\"" << svg_number(x - 6) << "\" y=\""
                 << svg_number(y - 6)
                 << "\" width=\"12\" height=\"12\" fill=\"none\" stroke=\"#8e24aa\" "
                    "stroke-width=\"2\"><title>model: degree "
                 << column.degree << "</title></rect>\n";
        }
        for (std::size_t k = 0; k < column.claims.size(); ++k) {
            const auto& [ratio, right] = column.claims[k];
            // Spread across the band in the students' order, so a crowd reads as a crowd.
            const double spread =
                column.claims.size() > 1
                    ? static_cast<double>(k) / static_cast<double>(column.claims.size() - 1) - 0.5
                    : 0.0;
            html << "<circle class=\"claim-dot\" data-right=\"" << (right ? "yes" : "no")
                 << "\" cx=\"" << svg_number(x + spread * band * 0.6) << "\" cy=\""
                 << svg_number(y_of(ratio)) << "\" r=\"3\" fill=\""
                 << (right ? "#2e7d32" : "#e65100") << "\" fill-opacity=\"0.55\"/>\n";
            ++dots;
        }
        html << "<text x=\"" << svg_number(x) << "\" y=\"" << top + plot_height + 18
             << "\" text-anchor=\"middle\">" << escape_html(column.name) << "</text>";
        // The predictions, most frequent first: "predicted 8: 250, 4: 30".
        std::vector<std::pair<std::size_t, int>> tallies;
        for (const auto& [degree, students] : column.predicted) {
            tallies.push_back({students, degree});
        }
        std::sort(tallies.rbegin(), tallies.rend());
        std::string predicted;
        for (std::size_t t = 0; t < tallies.size() && t < 3; ++t) {
            predicted += (t == 0 ? "" : ", ") + std::to_string(tallies[t].second) + ": " +
                         std::to_string(tallies[t].first);
        }
        if (tallies.size() > 3) {
            predicted += ", ...";
        }
        html << "<text class=\"tally\" x=\"" << svg_number(x) << "\" y=\"" << top + plot_height + 36
             << "\" text-anchor=\"middle\">"
             << (predicted.empty() ? std::string("no prediction") : "predicted " + predicted)
             << "</text>\n";
    }
    if (dots == 0) {
        html << "<text class=\"no-data\" x=\"" << left + plot_width / 2 << "\" y=\""
             << top + plot_height / 2
             << "\" text-anchor=\"middle\">No data: no student's answers give a measured "
                "value</text>\n";
    }
    html << "<text class=\"axis-title\" x=\"" << left + plot_width / 2 << "\" y=\"" << height - 12
         << "\" text-anchor=\"middle\">"
         << (summary.sweep
                 ? "stride; under it, the degrees the students predicted: degree: students"
                 : "kernel; under it, the degrees the students predicted: degree: "
                   "students")
         << "</text>\n<text class=\"axis-title\" transform=\"translate(16 " << top + plot_height / 2
         << ") rotate(-90)\" text-anchor=\"middle\">"
         << (percent ? "measured, as the answers give it (log scale)"
                     : "measured ratio, as the answers give it (log scale)")
         << "</text>\n</svg>\n<p class=\"note\">Each dot is one student's measured value as "
            "their answers file gives it, green where they predicted the model's degree for that "
         << (summary.sweep ? "stride" : "kernel") << " and orange where not";
    if (summary.sweep) {
        html << "; the square is the model's degree gcd(stride, " << summary.banks
             << "), the ratio a kernel all of whose time were bank requests would show";
    }
    html << ". These are the students' own numbers, from their own GPUs: the grade's numbers are "
            "in the next chart.</p>\n";
    html << "<div class=\"scroll\"><table id=\"claims-table\" class=\"compact\">\n<thead><tr>"
            "<th></th>";
    for (const Column& column : columns) {
        html << "<th class=\"number\">" << escape_html(column.name) << "</th>";
    }
    html << "</tr></thead>\n<tbody>\n";
    const auto row = [&](const char* heading, const auto& cell) {
        html << "<tr><th>" << heading << "</th>";
        for (const Column& column : columns) {
            html << "<td class=\"number\">" << cell(column) << "</td>";
        }
        html << "</tr>\n";
    };
    row("model's degree",
        [](const Column& c) { return c.degree > 0 ? std::to_string(c.degree) : std::string("–"); });
    row("predicted it", [](const Column& c) {
        std::size_t predicted = 0;
        for (const auto& [degree, students] : c.predicted) {
            predicted += students;
        }
        return std::to_string(c.right) + " of " + std::to_string(predicted);
    });
    const auto spread = [&](const Column& c, double at) {
        if (c.claims.empty()) {
            return std::string("–");
        }
        std::vector<double> values;
        for (const auto& claim : c.claims) {
            values.push_back(claim.first);
        }
        std::sort(values.begin(), values.end());
        return value_text(values[static_cast<std::size_t>(at * (values.size() - 1) + 0.5)]);
    };
    row("measured, min", [&](const Column& c) { return spread(c, 0.0); });
    row("measured, median", [&](const Column& c) { return spread(c, 0.5); });
    row("measured, max", [&](const Column& c) { return spread(c, 1.0); });
    html << "</tbody>\n</table></div>\n</section>\n";
}

}  // namespace grader::class_detail
