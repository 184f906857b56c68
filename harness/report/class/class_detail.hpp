#pragma once

// What the class outputs' writers share besides the public ClassSummary: the order of entries
// and the columns of checks, computed in class_summary.cpp. Internal to report/class/.

#include <string>
#include <vector>

#include "report/class_outputs.hpp"

namespace grader::class_detail {

// Entries by folder (then by typed id): every output lists a class in this order.
std::vector<const ClassEntry*> sorted_by_folder(const std::vector<ClassEntry>& entries);

// The check columns: every check id in the order of the first report that has it.
std::vector<CheckSummary> check_columns(const std::vector<const ClassEntry*>& sorted);

const CheckResult* find_check(const Report& report, const std::string& id);

// A ratio a log scale can place.
bool plottable(double ratio);

// Graded on the PTX simulator: its numbers are modeled costs.
bool modeled(const Report& report);

}  // namespace grader::class_detail
