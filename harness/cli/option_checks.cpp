#include "cli/option_checks.hpp"

#include <charconv>
#include <cmath>
#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <system_error>

#include "text/text_safety.hpp"

namespace grader::cli {
namespace {

// The value as a whole number, where it is one.
std::optional<long long> whole_number(const std::string& value) {
    long long number = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (error != std::errc() || end != value.data() + value.size()) {
        return std::nullopt;
    }
    return number;
}

}  // namespace

CLI::Validator at_least_one(const std::string& what) {
    return CLI::Validator(
        [what](std::string& value) -> std::string {
            const auto number = whole_number(value);
            if (!number || *number < 1) {
                return text::visible_line(value) + " is not a number of " + what +
                       "; give a whole number, 1 or more";
            }
            return {};
        },
        "N >= 1");
}

CLI::Validator positive_seconds() {
    return CLI::Validator(
        [](std::string& value) -> std::string {
            double seconds = 0.0;
            try {
                std::size_t used = 0;
                seconds = std::stod(value, &used);
                if (used != value.size()) {
                    seconds = -1.0;
                }
            } catch (const std::exception&) {
                seconds = -1.0;
            }
            if (!std::isfinite(seconds) || seconds <= 0.0) {
                return text::visible_line(value) +
                       " is not a time limit; give seconds above 0, e.g. 30";
            }
            return {};
        },
        "SECONDS > 0");
}

CLI::Validator non_negative_index(const std::string& what) {
    return CLI::Validator(
        [what](std::string& value) -> std::string {
            const auto number = whole_number(value);
            if (!number || *number < 0) {
                return text::visible_line(value) + " is not " + what + "; give 0 or more";
            }
            return {};
        },
        "N >= 0");
}

}  // namespace grader::cli
