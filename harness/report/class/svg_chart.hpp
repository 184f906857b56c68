#pragma once

// The class page's charts as data: each chart is a list of marks in the SVG's own coordinates
// (what its numbers became: grid lines, dots, bars, labels), and write_svg() is the one writer
// that turns any chart into inline SVG. Internal to report/class/.

#include <cstddef>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace grader::class_detail {

// A coordinate with one decimal (or `decimals`): enough for a screen, short in the file.
std::string svg_number(double value, int decimals = 1);
// A number as a stream writes it (the charts' whole-pixel frame: margins, widths).
std::string plain_number(double value);

// One element of a chart: its attributes in the order written, their values already escaped.
struct SvgMark {
    std::string element;  // "line", "rect", "circle", "text" or "g"
    std::vector<std::pair<std::string, std::string>> attributes;
    // A text's words, or another element's <title> (none where empty); already escaped.
    std::string content;
    std::vector<SvgMark> children;  // a group's
    bool ends_line = true;          // a line break after it
};

struct SvgChart {
    std::string id;
    double width = 0.0;
    double height = 0.0;
    std::string label;  // aria-label, already escaped
    // Attributes after the label (data-numbers="timed"), already escaped.
    std::vector<std::pair<std::string, std::string>> data;
    std::vector<SvgMark> marks;

    // Adds a mark; returns it for the caller to finish (ends_line, children).
    SvgMark& add(std::string element, std::vector<std::pair<std::string, std::string>> attributes,
                 std::string content = {}, bool ends_line = true);
};

// Where a chart's columns and values go: categories across, each in a band of the plot's width,
// and a log2 scale up from low_power to high_power (values beyond sit on the edge).
struct LogPlot {
    double left = 0.0;
    double top = 0.0;
    double plot_width = 0.0;
    double plot_height = 0.0;
    std::size_t columns = 0;
    int low_power = 0;
    int high_power = 1;

    double band() const { return plot_width / static_cast<double>(columns == 0 ? 1 : columns); }
    double x_of(std::size_t column) const {
        return left + (static_cast<double>(column) + 0.5) * band();
    }
    double y_of(double value) const;
    double bottom() const { return top + plot_height; }
};

void write_svg(std::ostringstream& html, const SvgChart& chart);

}  // namespace grader::class_detail
