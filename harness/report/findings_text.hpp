#pragma once

// A finding in words: one function a kind (model/findings.def), the only place a finding's
// sentence is written. The checks call finding_lines() for a check's details; the writers call
// finding_text() where they name one finding. Text from outside the grader (a PTX file name, a
// compiler's line) is as the finding holds it: each writer makes it safe for its format.

#include <cstddef>
#include <string>
#include <vector>

#include "model/finding.hpp"

namespace grader {

// What the words need that a finding does not carry: how the exercise writes ratios, its banks
// and its files' names.
struct Wording {
    bool ratio_as_percent = false;
    unsigned banks = 32;
    std::string answers_file = "submission.yaml";
    std::string kernel_file = "probe.cu";
};

// The finding as one line, without its strides: "thread (3, 0, 0) ... read word 7 of tile at
// probe.cu:34:9, which ... wrote at probe.cu:25:9, with no __syncthreads() between them".
std::string finding_text(const Finding& finding, const Wording& wording);

// The finding as a sentence of a paragraph: capitalized, ending with a period.
std::string finding_sentence(const Finding& finding, const Wording& wording);

// "stride 8: " where one stride showed it, " (at strides 3, 5 and 8)" where several did: the
// finding's line as a check's detail prints it.
std::string finding_line(const Finding& finding, const Wording& wording);

// A check's details: one line a finding, in order, each cut to max_bytes; at most max_lines,
// then one line saying how many were cut.
inline constexpr std::size_t kMaxDetailsPerCheck = 12;
inline constexpr std::size_t kMaxDetailBytes = 1000;
std::vector<std::string> finding_lines(const std::vector<Finding>& findings, const Wording& wording,
                                       std::size_t max_lines = kMaxDetailsPerCheck,
                                       std::size_t max_bytes = kMaxDetailBytes);

// "probe.cu:25:9" (FILE:LINE:COLUMN as compilers write it), "line 25" where the PTX names no
// file, "PTX line 67" where it has no .loc.
std::string place_text(const FindingPlace& place);

// The fix a race's places call for: "put __syncthreads() between probe.cu:25:9 and
// probe.cu:34:9"; empty for a finding that is no such race.
std::string barrier_fix(const Finding& race);

// What a missing barrier does, by the race that shows it (read after write, write after read,
// two writes of different values), or by a read of a word a fill had not written yet.
std::string missing_barrier_text(const Finding& evidence);

// A counted-degree check's message where the counts are clean and only its timing rule failed:
// the exercise's own words for clean counts, then the rule that failed (never "still conflict").
std::string timing_only_message(const std::string& counts_clean, const Finding& failed_rule,
                                const Wording& wording);

// "probe.cu was not found in the submission folder": the read's account of a file handed in
// with no such name (kernel_file_missing), before the name it seems to have meant.
std::string file_not_found_text(const std::string& name);

// Why a grade's times are not used (timing_machine_unfit, timing_needs_gpu), as a timing check
// that was not run says it: "this machine does not show the model with the exercise's own ...".
std::string timing_unused_reason(const Finding& unused);

// A counted-degree check's message where the kernel made no shared access (no_shared_access):
// "Your kernel has no shared tile: probe made no shared-memory load or store in 3 counted runs,
// so it has no bank conflicts to remove."
std::string no_shared_tile_message(const Finding& none, const std::string& kernel_name);

// "(at strides 1, 3 and 8)", "(at 7 strides)"; empty for fewer than two.
std::string strides_text(std::vector<int> strides);

}  // namespace grader
