#pragma once

// The id of the student's kernel among a grade's kernels: what the exercise file's kernels, the
// measurements and the report rows call it.

#include <string_view>

namespace grader {

inline constexpr std::string_view kStudentKernel = "student";

}  // namespace grader
