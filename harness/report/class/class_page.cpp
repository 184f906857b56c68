// The class page: one self-contained HTML file (inline CSS and SVG, no script).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/kernel_ids.hpp"
#include "common/text.hpp"
#include "model/bank_model.hpp"
#include "report/class/class_detail.hpp"
#include "report/class/markup.hpp"
#include "report/class_outputs.hpp"
#include "report/class_page_css.hpp"
#include "text/text_safety.hpp"

namespace grader {

using namespace class_detail;

// ---------------------------------------------------------------------------------------------
// HTML class report

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

// What the class's ratios are: every page label follows from it, so a class graded on the
// simulator is never said to be timed.
enum class Numbers { none, timed, modeled, mixed };

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

void write_ratio_chart(std::ostringstream& html, const ClassSummary& summary,
                       const std::vector<const ClassEntry*>& sorted) {
    const Numbers numbers = numbers_of(summary);
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

    // The y axis is log2 from a power of two under every value to one above, bounded so that
    // one absurd ratio cannot flatten the class; values past the bounds sit on the edge.
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
    const int low_power = std::max(-6, static_cast<int>(std::floor(std::log2(low / 1.05))));
    const int high_power = std::min(12, static_cast<int>(std::ceil(std::log2(high * 1.05))));

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

    // Legend, one row above the plot.
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
        legend_text("model: degree gcd(stride, " + std::to_string(summary.banks) + ")", 0);
    }
    html << "</g>\n</svg>\n";

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

    // Strides across, so the table stays short however many strides the class drew.
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

void write_failure_reasons(std::ostringstream& html, const ClassSummary& summary) {
    html << "<section class=\"card\" aria-labelledby=\"failure-reasons-title\">\n"
         << "<h2 id=\"failure-reasons-title\">Failure reasons, by root cause</h2>\n"
         << "<table id=\"failure-reasons\">\n<thead><tr><th class=\"number\">#</th>"
         << "<th>root cause</th><th class=\"number\">submissions</th><th>folders</th></tr>"
         << "</thead>\n<tbody>\n";
    constexpr std::size_t kFoldersShown = 12;
    std::size_t rank = 0;
    for (const FailureReason& reason : summary.failure_reasons) {
        html << "<tr class=\"failure-reason\" data-key=\"" << escape_html(reason.key)
             << "\"><td class=\"number\">" << ++rank << "</td><td>" << escape_html(reason.reason)
             << "</td><td class=\"number\">" << reason.folders.size()
             << "</td><td class=\"folders\">";
        for (std::size_t i = 0; i < reason.folders.size() && i < kFoldersShown; ++i) {
            html << (i > 0 ? ", " : "") << escape_html(reason.folders[i]);
        }
        if (reason.folders.size() > kFoldersShown) {
            html << " and " << reason.folders.size() - kFoldersShown << " more";
        }
        html << "</td></tr>\n";
    }
    if (summary.failure_reasons.empty()) {
        html << "<tr><td colspan=\"4\">No graded submission lost a point.</td></tr>\n";
    }
    html << "</tbody>\n</table>\n<p class=\"note\">Each submission counts once, under the first "
            "stage that failed: the answers file, the compile, the kernel stopping, then the "
            "checks in the exercise's order. Checks that did not run because of it are not "
            "failures of their own (see the checks below); ungradable submissions are listed "
            "apart.</p>\n</section>\n";
}

void write_checks(std::ostringstream& html, const ClassSummary& summary) {
    html << "<section class=\"card\" aria-labelledby=\"checks-title\">\n"
         << "<h2 id=\"checks-title\">Checks</h2>\n"
         << "<table id=\"checks\" class=\"compact\">\n<thead><tr><th>check</th>"
         << "<th class=\"number\">passed</th><th class=\"number\">failed</th>"
         << "<th class=\"number\">not run</th><th class=\"number\">points</th></tr></thead>\n"
         << "<tbody>\n";
    for (const CheckSummary& check : summary.checks) {
        html << "<tr class=\"check-row\" data-check=\"" << escape_html(check.id) << "\"><td>"
             << escape_html(check.title.empty() ? check.id : check.title)
             << "</td><td class=\"number\">" << check.passed << "</td><td class=\"number\">"
             << check.failed << "</td><td class=\"number\">" << check.not_run
             << "</td><td class=\"number\">" << format_number(check.max_points, 2)
             << "</td></tr>\n";
    }
    html << "</tbody>\n</table>\n<p class=\"note\">A check that did not run had no input: the "
            "kernel did not compile, or grading stopped before it.</p>\n</section>\n";
}

void write_not_graded(std::ostringstream& html, const ClassSummary& summary,
                      const std::vector<std::string>& unfinished) {
    html << "<section class=\"card\" aria-labelledby=\"not-graded-title\">\n"
         << "<h2 id=\"not-graded-title\">Not graded</h2>\n"
         << "<table id=\"not-graded\">\n<thead><tr><th>folder</th><th>why</th></tr></thead>\n"
         << "<tbody>\n";
    for (const NotGraded& entry : summary.not_graded) {
        html << "<tr class=\"not-graded-row\"><td class=\"folder\">" << escape_html(entry.folder)
             << "</td><td class=\"reason\">" << escape_html(entry.reason) << "</td></tr>\n";
    }
    for (const std::string& folder : unfinished) {
        html << "<tr class=\"not-graded-row unfinished\"><td class=\"folder\">"
             << escape_html(folder) << "</td><td class=\"reason\">the batch was interrupted "
             << "before this submission was graded</td></tr>\n";
    }
    if (summary.not_graded.empty() && unfinished.empty()) {
        html << "<tr><td colspan=\"2\">Every submission was graded.</td></tr>\n";
    }
    html << "</tbody>\n</table>\n<p class=\"note\">"
         << (unfinished.empty() ? "The machine or the grader stopped these grades"
                                : "The batch was interrupted before these grades finished, or "
                                  "the machine or the grader stopped them")
         << ": they are not failures, carry no score, and should be graded again"
         << (unfinished.empty() ? "" : " (the same command with --resume grades only them)")
         << ".</p>\n</section>\n";
}

// Students whose one flag is a sentence shared with classmates are one row per cluster, their
// folders folded: at 300 students, 116 rows each saying "sentence nearly the same as 98
// others'" were most of this table, and the Sentences section lists each cluster once anyway.
void write_review(std::ostringstream& html, const std::vector<const ClassEntry*>& sorted,
                  const std::map<std::string, SubmissionFlags>& flags,
                  const std::vector<SentenceCluster>& clusters) {
    std::map<std::size_t, std::vector<std::string>> only_shared;  // by cluster number
    Markup page(html);
    page.open("section", {{"class", "card"}, {"aria-labelledby", "review-title"}})
        .line()
        .element("h2", "To look at twice", {{"id", "review-title"}})
        .line()
        .open("table", {{"id", "review"}, {"class", "flag-rows"}})
        .line()
        .open("thead")
        .open("tr")
        .element("th", "folder")
        .element("th", "student id")
        .element("th", "why")
        .close("tr")
        .close("thead")
        .line()
        .open("tbody")
        .line();
    for (const ClassEntry* entry : sorted) {
        const auto mine = flags.find(entry->student_folder);
        if (mine == flags.end()) {
            continue;
        }
        const SubmissionFlags& flag = mine->second;
        if (flag.sentence_cluster > 0 && !flag.no_id && !flag.example_id &&
            flag.same_id_as.empty() && !flag.no_sentence && !flag.sentence_same_as_example) {
            only_shared[flag.sentence_cluster].push_back(entry->student_folder);
            continue;
        }
        std::string why;
        const auto lines = flag.lines();
        for (std::size_t i = 0; i < lines.size(); ++i) {
            why += (i > 0 ? "; " : "") + lines[i];
        }
        page.open("tr", {{"class", "review-row"}})
            .element("td", entry->student_folder,
                     {{"class", "folder"}, {"title", entry->student_folder}})
            .element("td", entry->report.student_id,
                     {{"class", "student"}, {"title", entry->report.student_id}})
            .element("td", why, {{"class", "flags"}})
            .close("tr")
            .line();
    }
    for (const auto& [number, folders] : only_shared) {
        const auto cluster =
            std::find_if(clusters.begin(), clusters.end(),
                         [n = number](const SentenceCluster& c) { return c.number == n; });
        const bool identical = cluster == clusters.end() || cluster->identical;
        std::string members;
        for (std::size_t i = 0; i < folders.size(); ++i) {
            members += (i > 0 ? ", " : "") + folders[i];
        }
        const std::string count = std::to_string(folders.size());
        page.open("tr", {{"class", "review-cluster-row"}})
            .open("td", {{"class", "folders"}, {"colspan", "2"}})
            .open("details")
            .element("summary", count + (folders.size() == 1 ? " student" : " students"))
            .text(members)
            .close("details")
            .close("td")
            .element("td",
                     std::string("sentence ") + (identical ? "same as" : "nearly the same as") +
                         " the others' of sentence cluster " + std::to_string(number) +
                         " (listed under Sentences), and nothing else",
                     {{"class", "flags"}})
            .close("tr")
            .line();
    }
    if (flags.empty()) {
        page.open("tr")
            .element("td",
                     "Every student id is distinct, and every sentence is given and the "
                     "student's own.",
                     {{"colspan", "3"}})
            .close("tr")
            .line();
    }
    page.close("tbody")
        .line()
        .close("table")
        .line()
        .element("p",
                 "Ids compare without case or surrounding spaces; sentences compare without "
                 "case, spacing or punctuation, against each other and the starter kit's "
                 "example.",
                 {{"class", "note"}})
        .line()
        .close("section")
        .line();
}

// The sentences, the one answer left for a person to read: each cluster once, with its members
// folded away (a class of 300 where 60 share a sentence stays one screen), then every sentence
// that is its student's own.
void write_sentences(std::ostringstream& html, const std::vector<const ClassEntry*>& sorted,
                     const std::vector<SentenceCluster>& clusters,
                     const std::map<std::string, SubmissionFlags>& flags) {
    Markup page(html);
    page.open("section", {{"class", "card"}, {"aria-labelledby", "sentences-title"}})
        .line()
        .element("h2", "Sentences", {{"id", "sentences-title"}})
        .line()
        .open("table", {{"id", "sentences"}})
        .line()
        .open("thead")
        .open("tr")
        .element("th", "sentence")
        .element("th", "students", {{"class", "number"}})
        .element("th", "who")
        .close("tr")
        .close("thead")
        .line()
        .open("tbody")
        .line();
    for (const SentenceCluster& cluster : clusters) {
        const std::string size = std::to_string(cluster.folders.size());
        std::string members;
        for (std::size_t i = 0; i < cluster.folders.size(); ++i) {
            members += (i > 0 ? ", " : "") + cluster.folders[i];
        }
        page.open("tr", {{"class", "sentence-cluster"}})
            .open("td", {{"class", "sentence"}})
            .element("span",
                     "cluster " + std::to_string(cluster.number) +
                         (cluster.identical ? "" : ", near-identical"),
                     {{"class", "badge review"}})
            .text(" " + cluster.sentence)
            .close("td")
            .element("td", size, {{"class", "number"}})
            .open("td", {{"class", "folder"}})
            .open("details")
            .element("summary", size + " folders")
            .text(members)
            .close("details")
            .close("td")
            .close("tr")
            .line();
    }
    if (clusters.empty()) {
        page.open("tr")
            .element("td", "No two sentences are the same or nearly.", {{"colspan", "3"}})
            .close("tr")
            .line();
    }
    page.close("tbody").line().close("table").line();
    std::vector<const ClassEntry*> own;
    for (const ClassEntry* entry : sorted) {
        const auto mine = flags.find(entry->student_folder);
        const bool clustered = mine != flags.end() && mine->second.sentence_cluster > 0;
        if (!clustered && !text::comparison_key(entry->report.sentence).empty()) {
            own.push_back(entry);
        }
    }
    // Folded past a screenful, so 300 sentences do not bury the students' table below them.
    if (own.size() > 30) {
        html << "<details>";
    } else {
        html << "<details open>";
    }
    page.element("summary", own.size() == 1
                                ? std::string("1 sentence of its own")
                                : std::to_string(own.size()) + " sentences of their own")
        .open("table", {{"id", "own-sentences"}})
        .open("thead")
        .open("tr")
        .element("th", "sentence")
        .element("th", "folder")
        .close("tr")
        .close("thead")
        .open("tbody")
        .line();
    for (const ClassEntry* entry : own) {
        page.open("tr", {{"class", "sentence-own"}})
            .element("td", entry->report.sentence, {{"class", "sentence"}})
            .element("td", entry->student_folder, {{"class", "folder"}})
            .close("tr")
            .line();
    }
    page.close("tbody")
        .close("table")
        .close("details")
        .line()
        .element("p",
                 "Sentences compare without case, spacing or punctuation; near-identical ones (a "
                 "word in twelve changed, added or dropped, at least one) share a cluster.",
                 {{"class", "note"}})
        .line()
        .close("section")
        .line();
}

void write_skipped(std::ostringstream& html, const std::vector<SkippedEntry>& skipped) {
    Markup page(html);
    page.open("section", {{"class", "card"}, {"aria-labelledby", "skipped-title"}})
        .line()
        .element("h2", "Skipped in the class folder", {{"id", "skipped-title"}})
        .line()
        .open("table", {{"id", "skipped"}})
        .line()
        .open("thead")
        .open("tr")
        .element("th", "name")
        .element("th", "why")
        .close("tr")
        .close("thead")
        .line()
        .open("tbody")
        .line();
    for (const SkippedEntry& entry : skipped) {
        page.open("tr", {{"class", "skipped-row"}})
            .element("td", entry.name, {{"class", "name"}})
            .element("td", entry.reason, {{"class", "reason"}})
            .close("tr")
            .line();
    }
    if (skipped.empty()) {
        page.open("tr")
            .element("td", "Nothing: every entry of the class folder is a submission.",
                     {{"colspan", "2"}})
            .close("tr")
            .line();
    }
    page.close("tbody").line().close("table").line().close("section").line();
}

// The first line of a reason, for a row's one line (the whole reason is in its details).
std::string first_line(const std::string& text) {
    return text.substr(0, text.find('\n'));
}

// One line a student, whatever the class's size: at 300 students, rows whose reasons, flags and
// numbers wrapped (93 px each) were three quarters of the page. A row shows its folder, id,
// verdict, score, report and the first line of its reason; the whole reason and the flags are
// in the row's details, folded. Numbers shared by the whole class are said once above.
void write_students(std::ostringstream& html, const std::vector<const ClassEntry*>& sorted,
                    const std::map<std::string, SubmissionFlags>& flags) {
    std::set<std::string> sources;
    for (const ClassEntry* entry : sorted) {
        sources.insert(numbers_source(entry->report));
    }
    const bool one_source = sources.size() == 1;
    Markup page(html);
    page.open("section", {{"class", "card"}, {"aria-labelledby", "students-title"}})
        .line()
        .element("h2", "Students", {{"id", "students-title"}})
        .line();
    if (one_source) {
        page.element("p", "Every student's numbers: " + *sources.begin() + ".",
                     {{"class", "note"}, {"id", "students-numbers"}})
            .line();
    }
    page.element("p",
                 "One line a student: the first line of the reason, and how many flags; open "
                 "the line for the whole reason and the flags.",
                 {{"class", "note"}})
        .line()
        .open("table", {{"id", "students"}, {"class", "one-line"}})
        .line()
        .open("thead")
        .open("tr")
        .element("th", "folder")
        .element("th", "student id")
        .element("th", "verdict")
        .element("th", "score", {{"class", "number"}});
    if (!one_source) {
        page.element("th", "numbers");
    }
    page.element("th", "reason and flags")
        .element("th", "report")
        .close("tr")
        .close("thead")
        .line()
        .open("tbody")
        .line();
    for (const ClassEntry* entry : sorted) {
        const Report& report = entry->report;
        const char* verdict = to_string(report.verdict);
        page.open("tr", {{"class", "student-row"}})
            .element("td", entry->student_folder,
                     {{"class", "folder"}, {"title", entry->student_folder}})
            .element("td", report.student_id, {{"class", "student"}, {"title", report.student_id}})
            .open("td")
            .element("span", verdict, {{"class", std::string("badge ") + verdict}})
            .close("td")
            .element(
                "td",
                (report.verdict == Verdict::ungradable ? "–" : format_number(report.score, 2)) +
                    " / " + format_number(report.max_score, 2),
                {{"class", "number"}});
        if (!one_source) {
            page.element("td", numbers_source(report), {{"class", "numbers"}});
        }
        std::vector<std::string> lines;
        if (const auto mine = flags.find(entry->student_folder); mine != flags.end()) {
            lines = mine->second.lines();
        }
        const std::string reason = class_reason(report);
        page.open("td", {{"class", "detail"}});
        if (reason.empty() && lines.empty()) {
            page.text("–");
        } else {
            page.open("details").open("summary");
            if (!lines.empty()) {
                page.element(
                        "span",
                        std::to_string(lines.size()) + (lines.size() == 1 ? " flag" : " flags"),
                        {{"class", "badge review"}})
                    .text(" ");
            }
            // Hidden while the details are open: the whole reason follows.
            page.element("span",
                         reason.empty() ? "no reason: " + lines.front() : first_line(reason),
                         {{"class", "first-line"}})
                .close("summary");
            if (!reason.empty()) {
                // The reason as written, its lines kept (text::html, not html_line).
                page.open("div", {{"class", "reason"}});
                html << text::html(reason);
                page.close("div");
            }
            if (!lines.empty()) {
                std::string joined;
                for (std::size_t i = 0; i < lines.size(); ++i) {
                    joined += (i > 0 ? "; " : "") + lines[i];
                }
                page.element("div", joined, {{"class", "flags"}});
            }
            page.close("details");
        }
        page.close("td").open("td");
        if (entry->report_link.empty()) {
            page.text("–");
        } else {
            page.element("a", "report", {{"href", text::url_path(entry->report_link)}});
        }
        page.close("td").close("tr").line();
    }
    page.close("tbody").line().close("table").line().close("section").line();
}

}  // namespace

std::string write_class_report_html(const std::vector<ClassEntry>& entries,
                                    const ClassReportOptions& options) {
    return write_class_report_html(compute_class_data(entries, options), options);
}

std::string write_class_report_html(const ClassData& data, const ClassReportOptions& options) {
    const ClassSummary& summary = data.summary;
    const std::vector<const ClassEntry*>& sorted = data.sorted;
    const auto& flags = data.flags;
    const std::string exercise_id =
        options.exercise_id.empty() ? summary.exercise_id : options.exercise_id;
    const std::string exercise_title =
        options.exercise_title.empty() ? summary.exercise_title : options.exercise_title;
    const std::string heading = exercise_title.empty() ? exercise_id : exercise_title;

    std::ostringstream html;
    html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         // Nothing on this page may be fetched: a student string that slipped past escaping
         // still could not load anything.
         << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'\">\n"
         << "<title>Class report: " << escape_html(heading);
    if (!options.generated_at.empty()) {
        html << " (" << escape_html(options.generated_at) << ")";
    }
    html << "</title>\n<style>" << kClassPageCss << "</style>\n</head>\n<body>\n<main>\n"
         << "<h1>Class report: " << escape_html(heading) << "</h1>\n<p class=\"meta\">";
    if (!exercise_id.empty()) {
        html << "Exercise <code>" << escape_html(exercise_id) << "</code>";
    }
    if (!options.generated_at.empty()) {
        html << " · generated " << escape_html(options.generated_at);
    }
    html << " · " << summary.submissions << " submissions";
    html << "</p>\n<p class=\"meta\" id=\"numbers-source\">";
    if (summary.timed > 0) {
        html << "Timed on ";
        for (std::size_t i = 0; i < summary.timed_on.size(); ++i) {
            html << (i > 0 ? ", " : "") << escape_html(summary.timed_on[i]);
        }
        if (summary.timed_on.empty()) {
            html << "a GPU";
        }
        html << " (" << summary.timed << (summary.timed == 1 ? " submission" : " submissions")
             << ")";
    }
    if (summary.modeled > 0) {
        html << (summary.timed > 0 ? "; " : "") << "modeled on the PTX simulator, no GPU ("
             << summary.modeled << (summary.modeled == 1 ? " submission" : " submissions")
             << "): its costs are modeled, not times";
    }
    if (summary.timed == 0 && summary.modeled == 0) {
        html << "No kernel was timed or modeled.";
    }
    html << "</p>\n";
    if (options.interrupted || !options.unfinished.empty()) {
        html << "<p id=\"interrupted\" class=\"banner\" role=\"alert\">This run was interrupted: "
             << options.unfinished.size() << " of "
             << summary.submissions + options.unfinished.size()
             << " submissions have no report (listed under Not graded). Run the same command "
                "with <code>--resume</code> to finish.</p>\n";
    }

    write_verdict_counts(html, summary);
    write_score_histogram(html, summary);
    const bool counted_instead =
        !any_student_ratio(summary) &&
        std::any_of(sorted.begin(), sorted.end(), [](const ClassEntry* entry) {
            return std::any_of(entry->report.rows.begin(), entry->report.rows.end(),
                               [](const ReportRow& row) { return row.counted_degree.has_value(); });
        });
    if (counted_instead) {
        write_counted_chart(html, summary, sorted);
    } else {
        write_ratio_chart(html, summary, sorted);
    }
    write_failure_reasons(html, summary);
    write_checks(html, summary);
    write_not_graded(html, summary, options.unfinished);
    write_review(html, sorted, flags, data.clusters);
    write_sentences(html, sorted, data.clusters, flags);
    write_skipped(html, options.skipped);
    write_students(html, sorted, flags);
    html << "</main>\n</body>\n</html>\n";
    return html.str();
}

}  // namespace grader
