// `grader explain`'s lane tables, from the Explanation value the worker sent.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "model/explanation.hpp"
#include "report/render.hpp"
#include "report/writers.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace {

// "lanes 0,16" or "none": the other active lanes in a lane's bank.
std::string bank_mates_text(const ExplainedLane& lane, std::uint32_t index) {
    std::string text;
    int count = 0;
    for (std::uint32_t other = 0; other < 32; ++other) {
        if (other != index && (lane.bank_mates >> other & 1u) != 0) {
            text += (count++ == 0 ? "" : ",") + std::to_string(other);
        }
    }
    if (count == 31) {
        return "all 31 other lanes";
    }
    return count == 0 ? "none" : "lanes " + text;
}

std::string lane_table(const ExplainedWarp& warp) {
    std::string out;
    char line[256];
    std::snprintf(line, sizeof line, "      warp %u of block %u: %u wavefronts\n", warp.warp,
                  warp.block, warp.wavefronts);
    out += line;
    out += "      lane    word  bank  shares its bank with\n";
    for (std::uint32_t lane = 0; lane < warp.lanes.size(); ++lane) {
        const auto& access = warp.lanes[lane];
        if (!access.active) {
            std::snprintf(line, sizeof line, "      %4u       -     -  (inactive)\n", lane);
        } else {
            std::snprintf(line, sizeof line, "      %4u  %6llu  %4u  %s\n", lane,
                          static_cast<unsigned long long>(access.word), access.bank,
                          bank_mates_text(access, lane).c_str());
        }
        out += line;
    }
    return out;
}

std::string line_name(const ExplainedLine& line) {
    // FILE:LINE, as the grader's other locations (every access of the line, whatever column).
    return (line.file.empty() ? std::string("line ") : text::visible_line(line.file) + ":") +
           std::to_string(line.line) + (line.store ? " (store)" : " (load)");
}

std::string hardware_text(const ExplainedLine& line) {
    if (!line.hardware_instructions || !line.hardware_wavefronts ||
        *line.hardware_instructions == 0) {
        return {};
    }
    char text[160];
    std::snprintf(text, sizeof text,
                  "      the GPU counted %llu instructions, %llu wavefronts: %.2f per request\n",
                  static_cast<unsigned long long>(*line.hardware_instructions),
                  static_cast<unsigned long long>(*line.hardware_wavefronts),
                  static_cast<double>(*line.hardware_wavefronts) /
                      static_cast<double>(*line.hardware_instructions));
    return text;
}

}  // namespace

std::string write_explanation_text(const Explanation& explanation, bool stats) {
    using text::visible_line;
    std::string out;
    if (!explanation.problem.empty()) {
        return text::visible(explanation.problem) + "\n";
    }
    out += visible_line(explanation.kernel_name) + " from " +
           visible_line(explanation.source_name) + " on the PTX simulator (" + explanation.arch +
           "), " + std::to_string(explanation.grid_blocks) + " blocks of " +
           std::to_string(explanation.block_threads) + " threads; bank = (byte address / 4) % " +
           std::to_string(explanation.banks) + "\n";
    if (!explanation.hardware_note.empty()) {
        out += visible_line(explanation.hardware_note) + "\n";
    }
    for (const ExplainedStride& stride : explanation.strides) {
        out += "\n" + (stride.stride > 0 ? "stride " + std::to_string(stride.stride)
                                         : std::string("one launch"));
        if (stride.load_degree) {
            char degree[64];
            std::snprintf(degree, sizeof degree, ": %.2f shared-load wavefronts per request",
                          *stride.load_degree);
            out += degree;
        }
        out += "\n";
        if (!stride.stopped.empty()) {
            out += "  stopped (" + visible_line(stride.stopped) + ")\n";
        }
        // The busiest line is the one the stride's degree is about: it gets its lane table even
        // when it is conflict free, so stride 3's 32 distinct banks can be seen.
        std::uint64_t busiest = 0;
        for (const auto& line : stride.lines) {
            busiest = std::max(busiest, line.requests);
        }
        for (const auto& line : stride.lines) {
            if (!line.representative) {
                continue;
            }
            if (line.max_degree <= 1 && line.requests < busiest) {
                out += "  " + line_name(line) + ": " + visible_line(line.representative->banks) +
                       "\n" + hardware_text(line);
                continue;
            }
            char head[240];
            std::snprintf(
                head, sizeof head, "  %s: %s, %.2f wavefronts per request over %llu requests\n",
                line_name(line).c_str(),
                line.max_degree <= 1 ? "conflict free"
                                     : (std::to_string(line.max_degree) + "-way conflict").c_str(),
                line.requests > 0
                    ? static_cast<double>(line.wavefronts) / static_cast<double>(line.requests)
                    : 0.0,
                static_cast<unsigned long long>(line.requests));
            out += head + hardware_text(line) + lane_table(*line.representative) + "      " +
                   visible_line(line.representative->banks) + "\n";
        }
        if (!stride.note.empty()) {
            out += "  note: " + visible_line(stride.note) + "\n";
        }
    }
    if (stats) {
        char line[256];
        const double seconds = explanation.simulated_seconds;
        std::snprintf(
            line, sizeof line,
            "\nsimulated %llu warp instructions (%llu thread instructions) in %.3f s: "
            "%.3g warp instructions/s, %.3g thread instructions/s\n",
            static_cast<unsigned long long>(explanation.warp_instructions),
            static_cast<unsigned long long>(explanation.thread_instructions), seconds,
            seconds > 0 ? static_cast<double>(explanation.warp_instructions) / seconds : 0.0,
            seconds > 0 ? static_cast<double>(explanation.thread_instructions) / seconds : 0.0);
        out += line;
    }
    return out;
}

}  // namespace grader
