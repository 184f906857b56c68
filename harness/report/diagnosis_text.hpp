#pragma once

// A diagnosis's words beside its evidence's (report/findings_text.hpp): what to do about a cause,
// and the lead that says what the evidence means. The checks decide the cause from typed
// findings (checks/diagnose.cpp); only report/ says it.

#include <string>
#include <utility>
#include <vector>

#include "model/diagnosis.hpp"

namespace grader {

// What a cause's words need that the cause does not say.
struct DiagnosisFacts {
    std::string where;         // the place at fault, "probe.cu:34:9"; may be empty
    std::string kernel_file;   // "probe.cu"
    std::string answers_file;  // "submission.yaml"
    // off_by_one_guard: the output is placed by row and column (a bounds check on x and y), not
    // by thread; kernel_fault: the access was outside its buffer (the simulator says so).
    bool matrix = false;
    bool outside_buffer = false;
    // blank_answers: how many are blank, and the first one's field.
    long blanks = 0;
    std::string field;
    // off_by_one_guard: which of the output's edges was never written, and how many threads.
    bool last_column = false;
    unsigned long long threads = 0;
    // ignores_stride: told by the counts (1 wavefront per request at every stride), not the times.
    bool counted_one = false;
};

// A folder's files under other names, (as found, as asked): "the folder holds Probe.cu, not
// probe.cu: rename Probe.cu to probe.cu (file names are exact, case included)".
std::string misnamed_files_text(const std::vector<std::pair<std::string, std::string>>& misnamed);

// The fix a cause calls for, where the grader knows one; empty where it has none (the
// exercise's hint, its own words, stands in).
std::string diagnosis_fix(Cause cause, const DiagnosisFacts& facts);

// What the evidence means, said before its words ("the grid's last 2 threads never wrote their
// outputs"); empty where the evidence says it alone.
std::string diagnosis_lead(Cause cause, const DiagnosisFacts& facts);

}  // namespace grader
