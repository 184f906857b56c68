#pragma once

// The checks of an exercise, each by its kind (checks/grading.cpp); evaluate() (checks.hpp)
// turns them into a report.

#include <vector>

#include "checks/checks.hpp"
#include "exercise/exercise.hpp"
#include "model/measurements.hpp"
#include "model/report.hpp"

namespace grader {

// One result per check of the exercise, in its order, details not yet collapsed.
std::vector<CheckResult> grade_checks(const Exercise& exercise, const Submission& submission,
                                      const Measurements& m);

}  // namespace grader
