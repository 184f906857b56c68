#pragma once

// The graded checks: pure functions from what was observed to a Report. Nothing here touches a
// GPU, so every check is tested on synthetic measurements.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "exercise/exercise.hpp"
#include "model/measurements.hpp"
#include "model/report.hpp"

namespace grader {

// The strides the student's kernel is run at: the named ones, those the ordering rules refer to,
// stride 1 (the base of every ratio) and the unnamed ones drawn for this grade.
std::vector<int> student_strides_to_run(const Exercise& exercise,
                                        const std::vector<int>& unnamed_strides);

// The reference kernel runs at its sweep and at every stride the student's kernel runs at, so
// every student row has a reference row to be compared with.
std::vector<int> reference_strides_to_run(const Exercise& exercise,
                                          const std::vector<int>& unnamed_strides);

// Draws exercise.unnamed_strides_per_grade strides from the pool that the submission does not
// name, deterministically from the seed.
std::vector<int> draw_unnamed_strides(const Exercise& exercise, std::uint64_t seed);

// An ordering rule evaluated over ratios; `ratio_of` returns nullopt for a stride not measured.
struct RuleOutcome {
    bool evaluated = false;  // false when a ratio it needs is missing
    bool passed = false;
    std::string detail;      // "stride 3: 0.99x, closer to stride 1 (1x) than to stride 4 (3.16x)"
};
RuleOutcome evaluate_rule(const OrderingRule& rule,
                          const std::function<std::optional<double>(int)>& ratio_of);

// A kernel's ratio to its own stride 1, as the rules read it: 1 at stride 1 once it was timed,
// nullopt for a stride not measured. `m` must outlive the function.
std::function<std::optional<double>(int)> ratios_of(const Measurements& m, const char* kernel);

Report evaluate(const Exercise& exercise, const Submission& submission,
                const Measurements& measurements, const std::string& submission_label);

// Exit status for a verdict: 0 pass, 1 fail, 3 ungradable.
int exit_code(Verdict verdict);

}  // namespace grader
