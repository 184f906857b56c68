#pragma once

// What `grader sweep` found: the exercise's own kernels timed on this machine (the lesson's
// Part 1 table, or Part 2's kernels) and whether they show the model, as a plain value.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/measurements.hpp"

namespace grader {

struct SweepRow {
    std::string kernel;
    std::string label;
    int stride = 0;       // 0 without a sweep
    unsigned degree = 0;  // the model's; 0 where it makes no claim
    std::optional<TimingStats> timing;
    std::optional<double> ratio;           // to the exercise's base
    std::optional<double> counted_degree;  // as ReportRow::counted_degree, where counted
    bool outputs_ok = true;                // the oracle's and the others' runs all completed
};

struct CalibrationLine {
    std::string description;
    bool evaluated = false;
    bool passed = false;
    std::string detail;
};

struct Sweep {
    Environment environment;
    std::vector<SweepRow> rows;
    std::vector<CalibrationLine> calibration;
    std::string ratio_base;  // "stride 1" or a kernel's label
    bool ratio_as_percent = false;
    std::uint64_t input_words = 0;
    int timing_rounds = 0;
    double timing_seconds = 0.0;
    std::uint64_t seed = 0;
    std::optional<Interruption> interruption;
    bool calibrated() const;
};

}  // namespace grader
