// A check's findings said once: merged where they say the same thing, then written in words by
// report/findings_text.cpp, bounded.

#include <cstddef>
#include <string>
#include <vector>

#include "checks/checks.hpp"
#include "exercise/exercise.hpp"
#include "model/finding.hpp"
#include "model/report.hpp"
#include "report/findings_text.hpp"
#include "text/text_safety.hpp"

namespace grader {

Wording wording(const Exercise& exercise) {
    Wording wording;
    wording.ratio_as_percent = exercise.ratios.as_percent;
    wording.banks = exercise.banks;
    wording.answers_file = exercise.submission_answers;
    wording.kernel_file = exercise.submission_source;
    return wording;
}

void collapse_details(CheckResult& check, const Wording& wording, std::size_t max_details,
                      std::size_t max_bytes) {
    check.findings = merged(check.findings);
    check.details = finding_lines(check.findings, wording, max_details, max_bytes);
    check.message = text::shorten(check.message, 2 * max_bytes);
}

}  // namespace grader
