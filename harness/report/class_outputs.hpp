#pragma once

// The class's outputs, as writers over the graded Reports of every submission: a gradebook CSV,
// a JSON summary and one self-contained HTML page. Each writer returns text; writing the files
// is the caller's business. Everything a student wrote (ids, folder names, sentences, logs) is
// untrusted and reaches each format through text/text_safety.hpp.

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/report.hpp"

namespace grader {

struct ClassEntry {
    // The submission's folder as the class outputs name it: the folder the platform or the
    // instructor's export made, made safe and unique (batch's student_folder_name). The key of
    // every class output: two students who typed the same id still have two folders.
    std::string student_folder;
    std::string report_link;  // relative path from the class outputs to this student's report
    Report report;
    // The submission's folder as the class folder holds it, shown (batch's submission_key): the
    // gradebook's key, unique in the class. Empty: student_folder is shown instead.
    std::string submission_folder = {};
};

// Something in the class folder that was not graded, and why.
struct SkippedEntry {
    std::string name;    // as found (any bytes)
    std::string reason;  // e.g. "a plain file, not a submission folder"
};

// A measured value as an answers file gives it: the row's kernel and stride, and the value as a
// ratio (a percentage divided by 100), as ReportRow keys and claims it.
struct ClaimedRatio {
    std::string kernel;
    int stride = 0;
    double ratio = 0.0;
};

// What the class outputs know besides the reports.
struct ClassReportOptions {
    std::string exercise_id;     // empty: taken from the first report that names one
    std::string exercise_title;  // empty: likewise
    std::string generated_at;    // shown in the title, e.g. "2026-12-02 13:05 UTC"; the caller
                                 // gives it so the page is reproducible from the same inputs
    // The starter kit's example (the exercise's starter_example): a sentence or an id handed in
    // unchanged from it is flagged. Empty: nothing to compare with.
    std::string example_sentence;
    std::string example_student_id;
    // Values no student measured: the starter kit's example's measured values, and the
    // simulator's modeled ratios of the exercise's kernel (what `grader grade` prints where there
    // is no GPU). A student whose measured values are all one of these is flagged.
    std::vector<ClaimedRatio> example_ratios;
    std::vector<ClaimedRatio> modeled_ratios;
    // The lesson's own answer to the sentence prompt, a sentence an item (its course page's
    // Solution): a student's sentence that is one of them, or several of them in a row, or
    // nearly, is flagged, and its cluster named as the lesson's.
    std::vector<std::string> lesson_solution;
    // The question PrairieLearn's score upload gives the scores to; empty: the exercise's id.
    std::string prairielearn_qid;
    std::vector<SkippedEntry> skipped;  // listed on the page and in the summary
    // The run stopped before every submission had a report (Ctrl-C, a signal): every output says
    // so, and lists these folders, so a partial class never reads as complete.
    bool interrupted = false;
    std::vector<std::string> unfinished;  // folders with no report: in flight or not started
};

// Figures over the whole class, shared by the JSON summary and the HTML page.
struct RatioSpread {
    double min = 0.0;
    double median = 0.0;
    double max = 0.0;
};

// One column of the class's ratios: a stride of a sweep, or, for an exercise without one (Part 2),
// one kernel by its label ("your kernel", "copy, no transpose", ...).
struct StrideSummary {
    int stride = 0;
    std::string label;    // the kernel's label where the exercise has no sweep
    unsigned degree = 1;  // the model's degree: gcd(stride, banks), or the kernel's (0: none)
    std::size_t student_count = 0;  // students with a ratio at this stride
    std::optional<RatioSpread> student_ratio;
    std::optional<double> reference_ratio;  // median over the grades of the reference kernel
};

struct CheckSummary {
    std::string id;
    std::string title;
    double max_points = 0.0;
    std::size_t reported = 0;  // reports that carry this check
    std::size_t passed = 0;
    std::size_t failed = 0;
    std::size_t not_run = 0;  // its input was never produced: not counted as a failure
};

// Why submissions did not get full marks, by root cause: each submission counts once, under its
// report's diagnosis (a missing barrier, an off-by-one guard, the old width, a compile error by
// kind: model/diagnosis.hpp), or, for a report that has none (written by an older grader), the
// first stage that failed (the answers file, the compile, the student's kernel stopping, then
// the checks in the exercise's order). Checks that did not run because of it are not counted.
struct FailureReason {
    // "cause:<cause>" (a diagnosis), "check:<id>", "interruption:<kind>" or "summary:<text>"
    std::string key;
    std::string reason;                // what the instructor reads: the cause's title
    std::string cause;                 // the diagnosis's cause ("missing_barrier"); empty: none
    std::string area;                  // who acts on it: "folder", "source", "kernel", "answers"
    std::vector<std::string> folders;  // the submissions it applies to, sorted
};

// One submission's root cause, as the failure reasons group it; nullopt for full marks and for
// an ungradable grade (listed apart).
struct StudentCause {
    std::string key;     // FailureReason::key
    std::string reason;  // FailureReason::reason
};
std::optional<StudentCause> student_cause(const Report& report);

// A submission the machine could not grade: not a failure, listed apart with its reason.
struct NotGraded {
    std::string folder;
    std::string reason;
};

// What an instructor should look at twice in one submission.
struct SubmissionFlags {
    bool no_id = false;                         // the answers file names no student id
    bool example_id = false;                    // the starter kit's id, kept
    std::vector<std::string> same_id_as;        // other folders whose id is the same
    bool no_sentence = false;                   // the sentence review item failed: none was given
    bool sentence_same_as_example = false;      // case, spacing and punctuation aside
    bool sentence_nearly_example = false;       // a word in twelve changed, added or dropped
    bool sentence_same_as_lesson = false;       // the lesson's own solution, word for word
    bool sentence_nearly_lesson = false;        // the lesson's own solution, nearly
    std::vector<std::string> same_sentence_as;  // other folders in the same sentence cluster
    std::size_t sentence_cluster = 0;           // 1-based number of that cluster; 0: none
    bool sentence_cluster_identical = true;     // false: near-identical, not word for word
    // Every measured value the answers give is the starter kit's example's; or the simulator's
    // modeled ratio (of the exercise's kernel, or of this student's own as the grade modeled it).
    bool measured_same_as_example = false;
    bool measured_same_as_modeled = false;

    bool any() const {
        return no_id || example_id || !same_id_as.empty() || no_sentence ||
               sentence_same_as_example || sentence_nearly_example || sentence_same_as_lesson ||
               sentence_nearly_lesson || !same_sentence_as.empty() || measured_same_as_example ||
               measured_same_as_modeled;
    }
    // Whether a flag other than a sentence shared with classmates is set: one whose row the class
    // page cannot fold into its sentence cluster's.
    bool beyond_shared_sentence() const {
        SubmissionFlags others = *this;
        others.same_sentence_as.clear();
        return others.any();
    }
    // One line each, e.g. "same student id as bob", "sentence same as the starter kit's example".
    std::vector<std::string> lines() const;
};

// Sentences that are the same, or nearly (a word changed, a typo), grouped: an instructor reads
// one sentence per cluster with its members, not every pair.
struct SentenceCluster {
    std::size_t number = 0;            // 1-based, largest cluster first
    std::string sentence;              // the first member's sentence, as typed (raw)
    std::vector<std::string> folders;  // its members, sorted
    bool identical = true;             // every member's sentence compares equal
    // Where the sentence comes from where it is not a student's: "the lesson's own solution" or
    // "the starter kit's example"; empty otherwise.
    std::string source;
};

// The clusters of two members or more. Identical: equal text::comparison_key; near-identical:
// at most one word in twelve of the longer changed, added or dropped (at least one), linked
// transitively, between sentences of four words or more (two short answers such as "Coprime."
// and "gcd" are one word apart, and no copy of each other). A cluster whose sentence is the
// lesson's solution or the starter kit's example (options) is named so.
std::vector<SentenceCluster> cluster_sentences(const std::vector<ClassEntry>& entries,
                                               const ClassReportOptions& options = {});

// The flags of every submission that has one, by folder. Student ids compare without case and
// surrounding spaces; sentences compare by text::comparison_key.
std::map<std::string, SubmissionFlags> flag_submissions(const std::vector<ClassEntry>& entries,
                                                        const ClassReportOptions& options);

// The student's report's part of the flags: what their own report may say (how many others, never
// who).
SentenceReview sentence_review_of(const SubmissionFlags& flags);

// Where a report's numbers come from: "timed on NVIDIA H200", "modeled on the PTX simulator", or
// why there are none ("not measured: no GPU"). Said for every student: a class page must never
// call modeled costs measured times.
std::string numbers_source(const Report& report);

struct ClassSummary {
    std::string exercise_id;
    std::string exercise_title;
    unsigned banks = 32;  // shared memory's banks, from the reports
    std::size_t submissions = 0;
    std::size_t passed = 0;
    std::size_t failed = 0;
    std::size_t ungradable = 0;
    double max_score = 0.0;             // the largest max_score of any report
    std::vector<double> graded_scores;  // pass and fail only: an ungradable score means nothing
    std::optional<double> mean_score;
    std::optional<double> median_score;
    std::vector<CheckSummary> checks;            // in the order of the first report that has checks
    std::vector<FailureReason> failure_reasons;  // by root cause, most frequent first
    std::vector<NotGraded> not_graded;           // the ungradable submissions, by folder
    std::vector<StrideSummary> strides;          // ascending, or the kernels in report order
    bool sweep = true;                           // false: the columns are kernels, not strides
    std::string ratio_base;                      // what the ratios divide by, e.g. "stride 1"
    std::vector<std::string> timed_on;           // distinct GPUs the class was timed on
    std::size_t timed = 0;                       // reports timed on a GPU
    std::size_t modeled = 0;                     // reports graded on the PTX simulator
};

ClassSummary summarize_class(const std::vector<ClassEntry>& entries);

// One line per submission: why it got its verdict. Its diagnosis where the report has one (the
// cause's title, then what was found and the fix: "missing __syncthreads() (a race): a warp reads
// ...; put __syncthreads() between probe.cu:25:9 and probe.cu:34:9"), else the interruption where
// grading stopped, else the report's summary. Raw text: each writer makes it safe for its format.
std::string class_reason(const Report& report);

// Everything the class outputs show, computed once from the reports; each writer reads it.
struct ClassData {
    std::vector<const ClassEntry*> sorted;  // by folder; points into the entries it was made from
    ClassSummary summary;
    std::map<std::string, SubmissionFlags> flags;
    std::vector<SentenceCluster> clusters;
};

ClassData compute_class_data(const std::vector<ClassEntry>& entries,
                             const ClassReportOptions& options);

// The class outputs, from one ClassData: what a batch (or a merge of shards) writes.
struct ClassOutputTexts {
    std::string gradebook_csv;
    std::string summary_json;
    std::string page_html;
    std::string prairielearn_scores_csv;  // PrairieLearn's score upload (prairielearn_scores.hpp)
};

ClassOutputTexts write_class_outputs_text(const std::vector<ClassEntry>& entries,
                                          const nlohmann::json& run_info,
                                          const ClassReportOptions& options);

// Each writer, over a ClassData computed once; the forms below taking entries compute it.
std::string write_gradebook_csv(const ClassData& data, const ClassReportOptions& options);
std::string write_class_summary_json(const ClassData& data, const nlohmann::json& run_info,
                                     const ClassReportOptions& options);
std::string write_class_report_html(const ClassData& data, const ClassReportOptions& options);

// RFC 4180 CSV with CRLF line ends, one row per entry sorted by folder: the folder (the key), the
// id the student typed, score, max_score, verdict, where the numbers come from, points per check
// ("not run" where a check did not run; nothing at all for an ungradable submission, so a sum
// cannot bring a score back), flags and reason. Each field is one line; a field a spreadsheet
// would run as a formula gets a leading apostrophe.
std::string write_gradebook_csv(const std::vector<ClassEntry>& entries,
                                const ClassReportOptions& options = {});

// The ClassSummary as JSON, with the flags, what was skipped, and run_info embedded as is under
// "run".
std::string write_class_summary_json(const std::vector<ClassEntry>& entries,
                                     const nlohmann::json& run_info,
                                     const ClassReportOptions& options = {});

// One HTML page with no external resource: inline CSS and SVG, no script, readable offline.
// Stable element ids: #verdict-counts, #score-histogram, #ratio-chart, #failure-reasons, #checks,
// #not-graded, #review, #skipped, #students.
std::string write_class_report_html(const std::vector<ClassEntry>& entries,
                                    const ClassReportOptions& options);

}  // namespace grader
