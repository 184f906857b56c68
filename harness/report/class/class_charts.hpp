#pragma once

// The class page's charts (inline SVG): the verdicts, the scores, and each student's ratios or
// counted degrees beside the reference's and the model's. Internal to report/class/.

#include <sstream>
#include <vector>

#include "report/class_outputs.hpp"

namespace grader::class_detail {

// What the class's ratios are: every page label follows from it, so a class graded on the
// simulator is never said to be timed.
enum class Numbers { none, timed, modeled, mixed };
Numbers numbers_of(const ClassSummary& summary);

void write_verdict_counts(std::ostringstream& html, const ClassSummary& summary);
void write_score_histogram(std::ostringstream& html, const ClassSummary& summary);
// Whether any student has a ratio to plot (Part 2 on the simulator has none).
bool any_student_ratio(const ClassSummary& summary);
void write_counted_chart(std::ostringstream& html, const ClassSummary& summary,
                         const std::vector<const ClassEntry*>& sorted);
// Each student's ratio, timed or modeled in their grade, beside the reference's and the model's;
// on the simulator only the kernels whose modeled ratios differ from the reference's.
void write_ratio_chart(std::ostringstream& html, const ClassSummary& summary,
                       const std::vector<const ClassEntry*>& sorted);
// What the students wrote in their answers: each one's measured ratio per stride (or kernel), on
// the same log scale as the model's degree, coloured by whether their predicted degree is the
// model's, with the predictions tallied under each column.
void write_claims_chart(std::ostringstream& html, const ClassSummary& summary,
                        const std::vector<const ClassEntry*>& sorted);

}  // namespace grader::class_detail
