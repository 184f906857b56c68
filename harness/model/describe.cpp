#include "model/describe.hpp"

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

namespace grader {

std::string describe_value(double value) {
    if (std::isnan(value)) {
        return "NaN (the output or the tile word was never written)";
    }
    if (std::isinf(value)) {
        return value > 0 ? "+infinity" : "-infinity";
    }
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.4f", value);
    std::string text(buffer);
    while (!text.empty() && text.back() == '0') {
        text.pop_back();
    }
    if (!text.empty() && text.back() == '.') {
        text.pop_back();
    }
    return text == "-0" ? "0" : text;
}

std::string describe_wrong_output(int stride, const OutputComparison& result) {
    std::string line = stride > 0 ? "stride " + std::to_string(stride) + ": " : std::string();
    const std::string things = result.matrix ? " elements" : " threads";
    if (!result.ran) {
        return line + "did not run";
    }
    if (!result.first_bad) {
        return line + std::to_string(result.bad_elements) + things + " wrong";
    }
    if (result.matrix) {
        line += "row " + std::to_string(result.first_bad_row) + ", column " +
                std::to_string(result.first_bad_column);
    } else {
        line += "thread " + std::to_string(*result.first_bad) + " (block " +
                std::to_string(result.first_bad_block) + ", thread " +
                std::to_string(result.first_bad_thread_in_block) + ")";
    }
    line += " holds " + (result.first_bad_wrote_nan && std::isnan(result.first_bad_value)
                             ? std::string("NaN (a NaN the kernel wrote)")
                             : describe_value(result.first_bad_value));
    line += std::isnan(result.first_bad_expected)
                ? ", where the exercise's own kernel writes nothing from the same blocks"
                : ", expected " + describe_value(result.first_bad_expected);
    return line + "; " + std::to_string(result.bad_elements) + " of " +
           std::to_string(result.elements) + things + " wrong";
}

}  // namespace grader
