#include <optional>
#include <string>
#include <string_view>

#include "model/report.hpp"
#include "report/writers.hpp"

namespace grader {

std::optional<Format> parse_format(std::string_view name) {
    for (const Format format : {Format::text, Format::json, Format::markdown, Format::gradescope,
                                Format::prairielearn, Format::junit}) {
        if (name == to_string(format)) {
            return format;
        }
    }
    return std::nullopt;
}

const char* to_string(Format format) {
    switch (format) {
        case Format::text:
            return "text";
        case Format::json:
            return "json";
        case Format::markdown:
            return "markdown";
        case Format::gradescope:
            return "gradescope";
        case Format::prairielearn:
            return "prairielearn";
        case Format::junit:
            return "junit";
    }
    return "text";
}

std::string report_file_name(Format format, bool several_in_one_folder) {
    switch (format) {
        case Format::text:
            return "report.txt";
        case Format::json:
            return "report.json";
        case Format::markdown:
            return "report.md";
        case Format::gradescope:
            return several_in_one_folder ? "gradescope-results.json" : "results.json";
        case Format::prairielearn:
            return several_in_one_folder ? "prairielearn-results.json" : "results.json";
        case Format::junit:
            return "junit.xml";
    }
    return "report.txt";
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
    }
    return write_text(report, options.text);
}

}  // namespace grader
