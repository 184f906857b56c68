#pragma once

// A graded result, as a plain value. Every report format is a writer over this; adding a format
// never touches measurement or checks.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "model/diagnosis.hpp"
#include "model/finding.hpp"
#include "model/measurements.hpp"

namespace grader {

inline constexpr int kReportSchemaVersion = 3;

enum class Verdict { pass, fail, ungradable };
const char* to_string(Verdict verdict);

// A check that could not be evaluated (its input was never produced: the kernel did not compile,
// grading stopped first) is not_run: neither a pass nor a failure of its own.
enum class CheckStatus { passed, failed, not_run };
const char* to_string(CheckStatus status);

struct CheckResult {
    std::string id;
    std::string title;
    CheckStatus status = CheckStatus::failed;
    bool required = true;
    bool review = false;  // flagged for the instructor, not scored by the machine
    double points = 0.0;  // awarded
    double max_points = 0.0;
    std::string message;  // one paragraph the student reads
    // What the check observed, typed (model/findings.def), said once whichever strides showed
    // it: errors first, then what it costs nothing. The JSON keeps them.
    std::vector<Finding> findings;
    // The findings in words, one line each (report/findings_text.cpp), bounded: what every
    // format prints.
    std::vector<std::string> details;
    // What the check is, whatever the exercise calls it: "answers_file", "compile_abi", "output",
    // "predicted", "ordering", "consistency", "measured", "counted_degree" or "sentence".
    std::string kind;
    // Why it failed or lost points, as a root cause; nullopt where it passed in full or did not
    // run.
    std::optional<Diagnosis> diagnosis;
    // Why it did not run (not_run): what the machine lacked or what stopped first. The message
    // says it to the student; an ungradable summary names it.
    std::string not_run_reason;

    bool passed() const { return status == CheckStatus::passed; }
    bool not_run() const { return status == CheckStatus::not_run; }
};

// One row of the tables: a kernel at a stride (or once, without a sweep).
struct ReportRow {
    std::string kernel;    // "student", or the id of one of the exercise's kernels
    std::string label;     // as tables name it, e.g. "transpose tile[32][33]"
    int stride = 0;        // 0 where the exercise has no sweep
    unsigned degree = 0;   // the model's conflict degree; 0 where it makes no claim
    bool named = false;    // a stride the submission had to name
    bool unnamed = false;  // drawn per grade to catch stride-sniffing
    std::optional<int> predicted_degree;
    std::optional<double> claimed_ratio;  // what the student measured, as a ratio
    std::optional<TimingStats> timing;
    std::optional<double> ratio;  // time over the time of the ratio's base
    std::optional<double> ratio_min;
    std::optional<double> ratio_max;
    std::optional<double> reference_ratio;  // the kernel compared with, at the same stride
    // The conflict degree the counted_degree check judges: wavefronts over the fewest the
    // accesses' widths allow, of the worst source line where the simulator counted (of every
    // shared access of the launch, loads or stores, where the GPU's counters did).
    std::optional<double> counted_degree;
    std::optional<double> counted_load_degree;   // over every shared load of the launch
    std::optional<double> counted_store_degree;  // over every shared store
    std::string count_source;                    // "simulator" or "hardware"
    // 32-byte sectors per warp-level global load (store) request, as counted.
    std::optional<double> global_load_sectors_per_request;
    std::optional<double> global_store_sectors_per_request;
    // Per source line, the simulator's count of the source (on a GPU too): the student's rows.
    std::vector<SharedLineCounts> shared_lines;
    std::vector<OutputComparison> outputs;       // one per input
    std::optional<double> gigabytes_per_second;  // where the exercise gives bytes per launch

    const OutputComparison* output(const std::string& input) const;
};

// A sentence set apart for the instructor's review: equal, once case, spacing and punctuation
// are set aside, to the starter kit's example or to other students' in the same batch. Who the
// others are is for the instructor (the gradebook and the class page name them); a student's own
// report says only how many.
struct SentenceReview {
    bool same_as_example = false;
    std::size_t same_as_others = 0;  // other submissions of the batch with the same sentence

    bool flagged() const { return same_as_example || same_as_others > 0; }
};

// Why a folder holds no work for this exercise, where the folder alone shows it: nothing in it,
// the files one folder down, another exercise's kernel file, or a file the exercise needs under
// another name ("Probe.cu", "submission.yml"). Each is a cause of its own, with its own advice
// (the message), apart from a file missing among others.
struct FolderProblem {
    enum class Kind { empty, one_folder_down, other_exercise, misnamed_file };
    Kind kind = Kind::empty;
    std::string detail;   // the inner folder's name, the other exercise's id, or the misnamed file
    std::string message;  // what the student reads: what is wrong and what to do
};
const char* to_string(FolderProblem::Kind kind);

// The cause a folder's problem is, and a kernel's stop (model/diagnosis.cpp): what the diagnosis
// and the class page both name.
Cause cause_of(FolderProblem::Kind kind);
Cause cause_of(StopKind kind);

struct Report {
    int schema_version = kReportSchemaVersion;
    std::string exercise_id;
    std::string exercise_title;
    std::string submission;  // the folder as given on the command line
    std::string student_id;
    std::string claimed_gpu;
    Verdict verdict = Verdict::ungradable;
    std::string summary;  // one line: why this verdict
    double score = 0.0;
    double max_score = 0.0;
    std::vector<CheckResult> checks;
    std::vector<ReportRow> rows;
    std::string sentence;
    Environment environment;
    std::uint64_t seed = 0;
    int timing_rounds = 0;
    double wall_seconds = 0.0;
    std::string compile_log;    // the student's, host paths removed
    std::string kernel_output;  // what the kernel printed, bounded
    std::optional<Interruption> interruption;
    std::map<std::string, double> stage_seconds;  // where the grade's wall time went
    // How the tables read their ratios: "stride 1" or a kernel's label, and as a percentage.
    std::string ratio_base;
    bool ratio_as_percent = false;

    // Added after schema version 1 was first published; fields only ever join at the end.
    // The sentence compared with the starter kit's and the class's: set by `grader batch` once
    // every grade of the class is in.
    SentenceReview sentence_review;
    // What kept the student's kernel from being graded, as facts a platform may treat apart
    // (an exercise may tell PrairieLearn such a submission is not gradable).
    std::vector<std::string> missing_files;  // files the submission had to hold and did not:
                                             // set by grade_submission()
    bool compile_error = false;              // NVRTC could not compile the student's kernel
    // The model the exercise grades against: shared memory's banks, and the kernel the student's
    // ratios are compared with (a consistency check's, else the oracle; empty where none).
    unsigned banks = 32;
    std::string reference_kernel;
    // Set by grade_submission() where missing_files has a cause the folder shows.
    std::optional<FolderProblem> folder_problem;
    // The root cause the grade comes down to: the failing check's (or the stop's, or the
    // machine's for an ungradable grade), else the first check that lost points; nullopt for
    // full marks. The text report's first line after the verdict.
    std::optional<Diagnosis> diagnosis;
};

}  // namespace grader
