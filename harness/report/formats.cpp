#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/report.hpp"
#include "report/writers.hpp"

namespace grader {
namespace {

// Every report format, spelled here alone: its name (--format, ?format=), the type an HTTP
// answer gives it, its file's name alone and among the others, and whether it is written to a
// file (the page's HTML fragment is not).
struct FormatEntry {
    Format format;
    const char* name;
    const char* content_type;
    const char* file_name;
    const char* file_name_among_others;
    bool written_to_files;
};

constexpr FormatEntry kFormats[] = {
    {Format::text, "text", "text/plain; charset=utf-8", "report.txt", "report.txt", true},
    {Format::json, "json", "application/json", "report.json", "report.json", true},
    {Format::markdown, "markdown", "text/markdown; charset=utf-8", "report.md", "report.md", true},
    {Format::gradescope, "gradescope", "application/json", "results.json",
     "gradescope-results.json", true},
    {Format::prairielearn, "prairielearn", "application/json", "results.json",
     "prairielearn-results.json", true},
    {Format::junit, "junit", "application/xml", "junit.xml", "junit.xml", true},
    {Format::html, "html", "text/html; charset=utf-8", "report.html", "report.html", false},
};

const FormatEntry& entry(Format format) {
    for (const FormatEntry& known : kFormats) {
        if (known.format == format) {
            return known;
        }
    }
    return kFormats[0];
}

}  // namespace

std::optional<Format> parse_format(std::string_view name) {
    for (const FormatEntry& known : kFormats) {
        if (name == known.name) {
            return known.format;
        }
    }
    return std::nullopt;
}

const char* to_string(Format format) {
    return entry(format).name;
}

const char* content_type(Format format) {
    return entry(format).content_type;
}

std::vector<std::string> file_format_names() {
    std::vector<std::string> names;
    for (const FormatEntry& known : kFormats) {
        if (known.written_to_files) {
            names.emplace_back(known.name);
        }
    }
    return names;
}

std::string report_file_name(Format format, bool several_in_one_folder) {
    const FormatEntry& known = entry(format);
    return several_in_one_folder ? known.file_name_among_others : known.file_name;
}

std::string write_report(const Report& report, Format format, const TextOptions& options) {
    ReportOptions all;
    all.text = options;
    return write_report(report, format, all);
}

std::string write_report(const Report& report, Format format, const ReportOptions& options) {
    switch (format) {
        case Format::text:
            return write_text(report, options.text);
        case Format::json:
            return write_json(report);
        case Format::markdown:
            return write_markdown(report);
        case Format::gradescope:
            return write_gradescope(report);
        case Format::prairielearn:
            return write_prairielearn(report, options.prairielearn);
        case Format::junit:
            return write_junit(report);
        case Format::html:
            return write_report_html(report);
    }
    return write_text(report, options.text);
}

}  // namespace grader
