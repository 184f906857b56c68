#pragma once

// The graded checks: pure functions from what was observed to a Report. Nothing here touches a
// GPU, so every check is tested on synthetic measurements. Each check has a kind (what it looks
// at) and its parameters, points and messages from the exercise file.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exercise/exercise.hpp"
#include "model/diagnosis.hpp"
#include "model/measurements.hpp"
#include "model/report.hpp"
#include "model/sweep.hpp"
#include "report/findings_text.hpp"

namespace grader {

// The strides the student's kernel is run at: the named ones, those its rules refer to, the
// ratio's base stride and the unnamed ones drawn for this grade.
std::vector<int> student_strides_to_run(const Exercise& exercise,
                                        const std::vector<int>& unnamed_strides);

// The exercise's kernels run at their sweep and at every stride the student's kernel runs at, so
// every student row has a reference row to be compared with.
std::vector<int> reference_strides_to_run(const Exercise& exercise,
                                          const std::vector<int>& unnamed_strides);

// Draws exercise.unnamed_strides_per_grade strides from the pool that the submission does not
// name, deterministically from the seed.
std::vector<int> draw_unnamed_strides(const Exercise& exercise, std::uint64_t seed);

// A case's ratio, as a rule reads it: nullopt for a case not measured.
using RatioLookup = std::function<std::optional<double>(const Case&)>;

// An ordering rule evaluated over ratios.
struct RuleOutcome {
    bool evaluated = false;  // false when a ratio it needs is missing
    bool passed = false;
    // The ratios it compared: the subject's, and the near and far cases' (closer_to) or the
    // one it must be slower than (slower_than).
    std::optional<double> subject;
    std::optional<double> near;
    std::optional<double> far;
    std::optional<double> than;
    // In words (report/findings_text.cpp): "stride 3 at 0.99x is closer to stride 1 (1x) than to
    // stride 4 (3.16x)".
    std::string detail;
};
RuleOutcome evaluate_rule(const Exercise& exercise, const OrderingRule& rule,
                          const RatioLookup& ratio_of);

// The measured ratios of the grade: a case's own, 1 for the ratio's base once it was timed.
// `m` must outlive the function.
RatioLookup measured_ratios(const Exercise& exercise, const Measurements& m);

// Whether the exercise's own kernels show the model on this machine: the calibration rules that
// failed, each as a detail line (empty when calibrated, or where nothing was timed).
std::vector<std::string> calibration_failures(const Exercise& exercise, const Measurements& m);

// The exercise's own kernels as `grader sweep` shows them, with the calibration rules' outcomes.
Sweep summarize_sweep(const Exercise& exercise, const Measurements& measurements);

// How the exercise's findings read: its ratios (as percentages or not), its banks and its files.
Wording wording(const Exercise& exercise);

// One finding, once: a check's findings merged where they say the same thing at several strides
// (a race is one finding per missing barrier, whichever lanes and words raced; the "N accesses
// raced in all" counts are summed), errors first, and its details written from them
// (report/findings_text.hpp), bounded whatever the student's kernel did: at most max_details
// lines, then one saying how many were cut; each line and the message cut to max_bytes (twice
// that for the message). evaluate() applies it.
void collapse_details(CheckResult& check, const Wording& wording,
                      std::size_t max_details = kMaxDetailsPerCheck,
                      std::size_t max_bytes = kMaxDetailBytes);

// "submission.yaml:5:60", FILE:LINE:COLUMN as compilers write it (editors and Colab link it):
// the file's own name, never the grading machine's path; empty where there is no file.
std::string shown_location(const SourceLocation& location);

// The root cause of a check that failed, from what the grade observed (not from the check's
// words): a missing barrier, an off-by-one guard, a compile error by kind, a wrong prediction
// with where it is written. nullopt for a check that passed or did not run. grade_checks() sets
// each check's.
std::optional<Diagnosis> diagnose_check(const Exercise& exercise, const CheckSpec& spec,
                                        const CheckResult& check, const Submission& submission,
                                        const Measurements& m);

// The root cause a report comes down to: the machine's for an ungradable grade, the folder's
// where a file is missing, the kernel's stop or its first failing check's, then the answers';
// for a pass that lost points, the check that lost them; nullopt for full marks.
std::optional<Diagnosis> diagnose_report(const Exercise& exercise, const Report& report);

// Sets the report's diagnosis (diagnose_report) and the summary's reason from it. evaluate()
// calls it; grade_submission() again once it knows what the folder holds.
void diagnose(const Exercise& exercise, Report& report);

Report evaluate(const Exercise& exercise, const Submission& submission,
                const Measurements& measurements, const std::string& submission_label);

// Exit status for a verdict: 0 pass, 1 fail, 3 ungradable.
int exit_code(Verdict verdict);

}  // namespace grader
