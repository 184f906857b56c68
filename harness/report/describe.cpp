#include "report/describe.hpp"

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
    const bool unwritten = result.first_bad_unwritten ||
                           (std::isnan(result.first_bad_value) && !result.first_bad_wrote_nan);
    if (unwritten) {
        line += " was never written: no block of the grid wrote it";
        if (!std::isnan(result.first_bad_expected)) {
            line += " (expected " + describe_value(result.first_bad_expected) + ")";
        }
    } else {
        line += " holds " + (result.first_bad_wrote_nan && std::isnan(result.first_bad_value)
                                 ? std::string("NaN (a NaN the kernel wrote)")
                                 : describe_value(result.first_bad_value));
        line += std::isnan(result.first_bad_expected)
                    ? ", where the exercise's own kernel writes nothing"
                    : ", expected " + describe_value(result.first_bad_expected);
    }
    line += "; " + std::to_string(result.bad_elements) + " of " + std::to_string(result.elements) +
            things + " wrong";
    if (result.unwritten > 0 && !(unwritten && result.unwritten == 1)) {
        line += ", " + std::to_string(result.unwritten) + " of them never written";
    }
    if (result.compared_blocks > 0) {
        // What the simulator compared: the kernel ran every block, the oracle a few.
        line += " in the " + std::to_string(result.compared_blocks) + " of the grid's " +
                std::to_string(result.grid_blocks) + " blocks the simulator compared";
    }
    return line;
}

std::string describe_line_place(const std::string& file, int line) {
    if (line <= 0) {
        return "a line the PTX does not name";
    }
    return (file.empty() ? std::string("line ") : file + ":") + std::to_string(line);
}

std::string describe_access_width(std::uint32_t bytes_per_lane) {
    return bytes_per_lane == 4 || bytes_per_lane == 0 ? std::string()
                                                      : std::to_string(bytes_per_lane * 8) + "-bit";
}

}  // namespace grader
