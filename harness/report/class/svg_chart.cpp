#include "report/class/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace grader::class_detail {
namespace {

void write_mark(std::ostringstream& html, const SvgMark& mark) {
    html << '<' << mark.element;
    for (const auto& [name, value] : mark.attributes) {
        html << ' ' << name << "=\"" << value << '"';
    }
    if (mark.element == "g") {
        html << ">\n";
        for (const SvgMark& child : mark.children) {
            write_mark(html, child);
        }
        html << "</g>";
    } else if (mark.element == "text") {
        html << '>' << mark.content << "</text>";
    } else if (!mark.content.empty()) {
        html << "><title>" << mark.content << "</title></" << mark.element << '>';
    } else {
        html << "/>";
    }
    if (mark.ends_line) {
        html << '\n';
    }
}

}  // namespace

std::string svg_number(double value, int decimals) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    return buffer;
}

std::string plain_number(double value) {
    std::ostringstream text;
    text << value;
    return text.str();
}

SvgMark& SvgChart::add(std::string element,
                       std::vector<std::pair<std::string, std::string>> attributes,
                       std::string content, bool ends_line) {
    marks.push_back(
        SvgMark{std::move(element), std::move(attributes), std::move(content), {}, ends_line});
    return marks.back();
}

double LogPlot::y_of(double value) const {
    const double power = std::clamp(std::log2(value), static_cast<double>(low_power),
                                    static_cast<double>(high_power));
    return top + plot_height - (power - low_power) / (high_power - low_power) * plot_height;
}

void write_svg(std::ostringstream& html, const SvgChart& chart) {
    html << "<svg id=\"" << chart.id << "\" viewBox=\"0 0 " << chart.width << ' ' << chart.height
         << "\" width=\"" << chart.width << "\" height=\"" << chart.height
         << "\" role=\"img\" aria-label=\"" << chart.label << '"';
    for (const auto& [name, value] : chart.data) {
        html << ' ' << name << "=\"" << value << '"';
    }
    html << ">\n";
    for (const SvgMark& mark : chart.marks) {
        write_mark(html, mark);
    }
    html << "</svg>\n";
}

}  // namespace grader::class_detail
