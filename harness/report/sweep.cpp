// `grader sweep`'s table: the exercise's own kernels on this machine, and the calibration.

#include "model/sweep.hpp"

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/measurements.hpp"
#include "report/render.hpp"
#include "report/writers.hpp"
#include "text/text_safety.hpp"

namespace grader {

std::string write_sweep_text(const Sweep& sweep) {
    using text::visible_line;
    std::string out;
    char line[200];
    const Environment& env = sweep.environment;
    const bool simulated = env.backend == "sim";
    bool timed = false;
    for (const SweepRow& row : sweep.rows) {
        timed = timed || row.timing.has_value();
    }
    if (simulated) {
        out += "Backend: PTX simulator for compute capability " +
               visible_line(env.compute_capability) + ", NVRTC " + visible_line(env.nvrtc_version) +
               (timed ? "; times are modeled costs, not milliseconds\n"
                      : "; nothing is timed (this exercise's timing needs a GPU)\n");
        std::snprintf(line, sizeof line, "Grid: %u blocks of %u threads, simulated\n\n",
                      env.grid_blocks, env.block_size);
    } else {
        out += "GPU: " + visible_line(env.device_name) + " (compute capability " +
               visible_line(env.compute_capability) + "), driver " +
               visible_line(env.driver_version) + ", NVRTC " + visible_line(env.nvrtc_version) +
               "\n";
        std::snprintf(line, sizeof line, "Grid: %u blocks of %u threads (%d per SM)\n\n",
                      env.grid_blocks, env.block_size, env.blocks_per_sm);
    }
    out += line;
    const bool strided = !sweep.rows.empty() && sweep.rows.front().stride > 0;
    std::snprintf(line, sizeof line, "%llu input words; every ratio is to %s\n",
                  static_cast<unsigned long long>(sweep.input_words), sweep.ratio_base.c_str());
    out += line;
    out += strided ? "  stride     degree" : "  kernel                          degree";
    out += simulated ? "   modeled cost" : "    time (ms)";
    out += sweep.ratio_as_percent ? "    % of base" : "   vs base";
    out += "   spread   counted degree\n";
    for (const SweepRow& row : sweep.rows) {
        const std::string degree = row.degree > 0 ? std::to_string(row.degree) : "-";
        const double ratio = row.ratio.value_or(0.0) * (sweep.ratio_as_percent ? 100.0 : 1.0);
        const std::string counted = row.counted_degree
                                        ? std::to_string(*row.counted_degree).substr(0, 5)
                                        : std::string("-");
        if (strided) {
            std::snprintf(line, sizeof line, "  %6d     %6s", row.stride, degree.c_str());
        } else {
            std::snprintf(line, sizeof line, "  %-30s  %6s", visible_line(row.label).c_str(),
                          degree.c_str());
        }
        out += line;
        // A row nothing timed shows "-", never a time or ratio of 0.
        if (row.timing) {
            std::snprintf(line, sizeof line, simulated ? "   %12.0f" : "   %10.4f",
                          row.timing->median_ms);
        } else {
            std::snprintf(line, sizeof line, simulated ? "   %12s" : "   %10s", "-");
        }
        out += line;
        if (row.ratio) {
            std::snprintf(line, sizeof line, sweep.ratio_as_percent ? "   %10.1f" : "   %7.2f",
                          ratio);
        } else {
            std::snprintf(line, sizeof line, sweep.ratio_as_percent ? "   %10s" : "   %7s", "-");
        }
        out += line;
        if (row.timing) {
            std::snprintf(line, sizeof line, "   %5.2f%%   %s\n", row.timing->spread * 100.0,
                          counted.c_str());
        } else {
            std::snprintf(line, sizeof line, "   %6s   %s\n", "-", counted.c_str());
        }
        out += line;
    }
    out +=
        "\nCalibration (the exercise's kernels must show the model before this machine grades "
        "timings):\n";
    for (const CalibrationLine& calibration : sweep.calibration) {
        out += std::string("  ") +
               (!calibration.evaluated ? "[ -- ] "
                : calibration.passed   ? "[ ok ] "
                                       : "[FAIL] ") +
               calibration.description +
               (calibration.detail.empty() ? "" : ": " + calibration.detail) + "\n";
    }
    if (sweep.interruption) {
        out += "\nStopped: " + visible_line(sweep.interruption->message) + "\n";
    }
    if (!simulated) {
        std::snprintf(line, sizeof line, "\n%d timing rounds in %.3f s, seed %llu\n",
                      sweep.timing_rounds, sweep.timing_seconds,
                      static_cast<unsigned long long>(sweep.seed));
        out += line;
    }
    return out;
}

}  // namespace grader
