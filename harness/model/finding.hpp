#pragma once

// A finding: one thing the grade observed, as a typed value (model/findings.def lists the kinds,
// each with its cause, severity and fields). The simulator, the answers reader, the compile step
// and the checks emit findings; the diagnosis and the report switch on their kinds; only
// report/findings_text.cpp puts them into words.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/observations.hpp"

namespace grader {

enum class Cause;  // model/diagnosis.hpp

enum class FindingKind {
#define FINDING(kind, cause, severity, fields) kind,
#include "model/findings.def"
};

enum class Severity { info, warning, error };

// The members of Finding a kind fills (findings.def's fourth column).
enum FindingField : unsigned {
    FIELD_LINES = 1u << 0,
    FIELD_THREADS = 1u << 1,
    FIELD_WORD = 1u << 2,
    FIELD_VALUES = 1u << 3,
    FIELD_COUNT = 1u << 4,
    FIELD_NAMES = 1u << 5,
    FIELD_TEXT = 1u << 6,
    FIELD_STRIDES = 1u << 7,
    FIELD_OUTPUT = 1u << 8,
    FIELD_COUNTS = 1u << 9,
};

// A place in a source file, as compilers write it: file (its own name), line, column (0 where
// unknown). The file of a PTX .loc is the PTX's, which a student's asm can forge: writers make
// it safe for their format.
struct FindingPlace {
    std::string file;
    int line = 0;
    int column = 0;
    // Where the PTX gives no .loc: its own line (the simulator's "PTX line 67").
    int ptx_line = 0;

    bool operator==(const FindingPlace& other) const {
        return file == other.file && line == other.line && column == other.column &&
               ptx_line == other.ptx_line;
    }
};

// A thread of a launch: its block and thread index (x, y, z), its warp in the block and its lane.
struct FindingThread {
    std::array<std::uint32_t, 3> block{};
    std::array<std::uint32_t, 3> thread{};
    std::uint32_t warp = 0;
    std::uint32_t lane = 0;
    bool any_warp = false;  // several warps, none by name (other readers of a word)
};

// A word of a block's shared memory, with the variable that holds it where known.
struct SharedWord {
    std::uint64_t word = 0;
    std::string variable;  // as the source names it ("tile"); empty where unknown
    std::uint64_t word_in_variable = 0;
};

// How a measured value outside the plausible band most likely slipped (measurement_implausible).
enum class MeasurementSlip {
    none,
    bandwidth_percent,  // the lesson's bandwidth as % of the copy's, where time is asked for
    inverted,           // stride 1's time over this one's
    percent_for_ratio,  // a percentage where a ratio is asked for
    ratio_for_percent,  // a ratio where a percentage is asked for
    milliseconds,       // perhaps a time in milliseconds
    faster_than_base,   // a time under the base's, where no kernel runs faster
};

struct Finding {
    FindingKind kind = FindingKind::wrong_output;
    std::vector<int> strides;            // the strides it was seen at; 0: no sweep
    std::vector<FindingPlace> lines;     // source places, in the kind's order
    std::vector<FindingThread> threads;  // threads, in the kind's order
    std::optional<SharedWord> word;
    std::vector<double> values;      // the kind's numbers, in its order
    std::uint64_t count = 0;         // how many, or a small code the kind names
    std::vector<std::string> names;  // names from the exercise or the submission
    std::string text;                // words from outside the grader (a compiler, a student)
    std::optional<OutputComparison> output;  // wrong_output's comparison
    std::optional<SharedLineCounts> counts;  // a counted line (line 0: the launch's loads/stores)
    bool witness = false;  // seen by the simulator running this source beside a GPU
    bool unnamed = false;  // at a stride drawn for this grade
    bool timed = false;    // in the timed launches (wrong_output)

    bool has_stride(int stride) const;
};

std::string_view to_string(FindingKind kind);  // "race_read_after_write"
std::optional<FindingKind> finding_kind_from_string(std::string_view key);
std::string_view to_string(Severity severity);  // "error", "warning", "info"
// The cause a kind is evidence of; nullopt for `none` (findings.def).
std::optional<Cause> cause_of(FindingKind kind);
Severity severity_of(FindingKind kind);
unsigned fields_of(FindingKind kind);
const std::vector<FindingKind>& all_finding_kinds();

// Whether a finding fails the check that carries it (error severity).
inline bool fails(const Finding& finding) {
    return severity_of(finding.kind) == Severity::error;
}

// A shared-memory race of any kind, the benign same-value one included.
bool is_race(FindingKind kind);

// The place of a race's fix: the two accesses a __syncthreads() must separate, the earlier in
// the source first (a race's two, or an unwritten read and the fill it did not wait for).
// Empty for others.
std::vector<FindingPlace> barrier_between(const Finding& race);

// Whether two findings say the same thing but for the stride (and the threads and word that
// showed it): the report names it once, with every stride. Races between the same two places
// are one, whichever lanes and words raced; an unwritten read is one per place.
bool same_finding(const Finding& a, const Finding& b);

// Findings that say the same thing merged into one, their strides joined and their counts summed
// (races_counted): errors first, each group in first-seen order. Every finding's facts stay;
// report/ bounds how many lines a check prints.
std::vector<Finding> merged(const std::vector<Finding>& findings);

}  // namespace grader
