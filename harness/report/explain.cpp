// `grader explain`'s lane tables, from the Explanation value the worker sent.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "model/explanation.hpp"
#include "model/measurements.hpp"
#include "model/observations.hpp"
#include "report/describe.hpp"
#include "report/render.hpp"
#include "report/writers.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace report_detail {

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

std::string line_name(const ExplainedLine& line) {
    // FILE:LINE, as the grader's other locations (every access of the line, whatever column),
    // and the access's width where it is not the usual 32 bits.
    const SharedLineCounts& counts = line.counts;
    const std::string width = describe_access_width(counts.bytes_per_lane);
    return text::visible_line(describe_line_place(counts.file, counts.line)) +
           (counts.store ? " (store" : " (load") + (width.empty() ? "" : ", " + width) + ")";
}

// "4", or "1.50" between whole numbers.
std::string degree_text(double degree) {
    char text[32];
    if (std::abs(degree - std::round(degree)) < 0.005) {
        std::snprintf(text, sizeof text, "%.0f", degree);
    } else {
        std::snprintf(text, sizeof text, "%.2f", degree);
    }
    return text;
}

std::string line_degree_text(const ExplainedLine& line) {
    return line.counts.degree <= 1.0 ? "conflict free"
                                     : degree_text(line.counts.degree) + "-way conflict";
}

}  // namespace report_detail

namespace {

using report_detail::bank_mates_text;
using report_detail::degree_text;
using report_detail::line_degree_text;
using report_detail::line_name;

// "a half-warp", "a quarter-warp": the lanes one wavefront serves at the fewest, for a wide access.
std::string served_together(std::uint32_t bytes_per_lane) {
    return bytes_per_lane >= 16 ? "its quarter-warp" : "its half-warp";
}

std::string lane_table(const ExplainedWarp& warp) {
    std::string out;
    char line[256];
    std::snprintf(line, sizeof line, "      warp %u of block %u: %u wavefronts, %u at the fewest\n",
                  warp.warp, warp.block, warp.wavefronts, std::max(1u, warp.ideal_wavefronts));
    out += line;
    if (!warp.rule.empty()) {
        out += "      " + text::visible_line(warp.rule) + "\n";
    }
    const std::uint32_t words = std::max(1u, warp.bytes_per_lane / 4);
    if (words == 1) {
        out += "      lane    word  bank  shares its bank with\n";
    } else {
        // A wide access: each lane's words, and its banks, as first-last.
        out += "      lane          words    banks  shares a bank in " +
               served_together(warp.bytes_per_lane) + " with\n";
    }
    for (std::uint32_t lane = 0; lane < warp.lanes.size(); ++lane) {
        const auto& access = warp.lanes[lane];
        if (!access.active) {
            std::snprintf(line, sizeof line,
                          words == 1 ? "      %4u       -     -  (inactive)\n"
                                     : "      %4u              -        -  (inactive)\n",
                          lane);
        } else if (words == 1) {
            std::snprintf(line, sizeof line, "      %4u  %6llu  %4u  %s\n", lane,
                          static_cast<unsigned long long>(access.word), access.bank,
                          bank_mates_text(access, lane).c_str());
        } else {
            char span[48];
            std::snprintf(span, sizeof span, "%llu-%llu",
                          static_cast<unsigned long long>(access.word),
                          static_cast<unsigned long long>(access.word + words - 1));
            char banks[16];
            std::snprintf(banks, sizeof banks, "%u-%u", access.bank,
                          (access.bank + words - 1) % 32);
            std::snprintf(line, sizeof line, "      %4u  %13s  %7s  %s\n", lane, span, banks,
                          bank_mates_text(access, lane).c_str());
        }
        out += line;
    }
    return out;
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
            char degree[96];
            std::snprintf(degree, sizeof degree, ": the shared loads' conflict degree is %.2f",
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
            busiest = std::max(busiest, line.counts.requests);
        }
        for (const auto& line : stride.lines) {
            if (!line.representative) {
                continue;
            }
            const SharedLineCounts& counts = line.counts;
            if (line.max_degree <= 1 && counts.requests < busiest) {
                out += "  " + line_name(line) + ": " + visible_line(line.representative->banks) +
                       "\n" + hardware_text(line);
                continue;
            }
            const double per_request =
                counts.requests > 0
                    ? static_cast<double>(counts.wavefronts) / static_cast<double>(counts.requests)
                    : 0.0;
            const double fewest = counts.requests > 0 && counts.ideal_wavefronts > 0
                                      ? static_cast<double>(counts.ideal_wavefronts) /
                                            static_cast<double>(counts.requests)
                                      : 1.0;
            char head[320];
            std::snprintf(head, sizeof head,
                          "  %s: %s, %.2f wavefronts per request over %llu requests (%s at the "
                          "fewest)\n",
                          line_name(line).c_str(), line_degree_text(line).c_str(), per_request,
                          static_cast<unsigned long long>(counts.requests),
                          degree_text(fewest).c_str());
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
