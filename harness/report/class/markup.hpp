#pragma once

// A small HTML builder for the class page: every text and attribute value it writes goes through
// text::html_line, so a student's string cannot be written unescaped by forgetting to. Tag and
// attribute names are the code's own constants.

#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/text_safety.hpp"

namespace grader::class_detail {

class Markup {
public:
    using Attributes = std::initializer_list<std::pair<std::string_view, std::string>>;

    explicit Markup(std::ostringstream& out) : out_(out) {}

    Markup& open(std::string_view tag, Attributes attributes = {}) {
        out_ << '<' << tag;
        for (const auto& [name, value] : attributes) {
            out_ << ' ' << name << "=\"" << text::html_line(value) << '"';
        }
        out_ << '>';
        return *this;
    }
    Markup& close(std::string_view tag) {
        out_ << "</" << tag << '>';
        return *this;
    }
    Markup& text(const std::string& content) {
        out_ << text::html_line(content);
        return *this;
    }
    // One element holding text: <td class="x">text</td>.
    Markup& element(std::string_view tag, const std::string& content, Attributes attributes = {}) {
        return open(tag, attributes).text(content).close(tag);
    }
    // A table's column headings, <thead><tr><th>...</th>...</tr></thead>, each with its CSS class
    // where it has one ("number" right-aligns a column of figures).
    struct Heading {
        std::string text;
        std::string css_class;
    };
    Markup& table_head(const std::vector<Heading>& headings) {
        open("thead").open("tr");
        for (const Heading& heading : headings) {
            if (heading.css_class.empty()) {
                element("th", heading.text);
            } else {
                element("th", heading.text, {{"class", heading.css_class}});
            }
        }
        return close("tr").close("thead");
    }
    Markup& line() {
        out_ << '\n';
        return *this;
    }

private:
    std::ostringstream& out_;
};

}  // namespace grader::class_detail
