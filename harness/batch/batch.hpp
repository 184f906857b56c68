#pragma once

// Grading a whole class: one sub-folder of a class folder per submission, graded concurrently
// (each in its own isolated worker, through grade_submission), every report format written into
// OUTPUT/<student>/, then the class outputs (gradebook, summary, HTML page) over every report
// present. A batch can be interrupted and resumed: OUTPUT/<student>/report.json is written last
// and marks a finished submission.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "batch/device_servers.hpp"
#include "batch/shard.hpp"
#include "exercise/exercise.hpp"
#include "model/measurements.hpp"
#include "model/report.hpp"
#include "report/class_outputs.hpp"
#include "report/writers.hpp"

namespace grader {

// The caller asked for something the class folder cannot give (an unknown student, a class
// folder that cannot be read, an output folder inside the class folder, an output folder another
// batch is writing into). The CLI exits 2 with this message.
class BatchError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The class outputs a batch writes into its output folder, beside one folder per student.
inline constexpr const char* kGradebookFile = "gradebook.csv";
inline constexpr const char* kSummaryFile = "summary.json";
inline constexpr const char* kClassReportFile = "class-report.html";
inline constexpr const char* kLocksFolder = ".locks";
// PrairieLearn's score upload (an assessment's Uploads tab, "Upload new question scores").
inline constexpr const char* kPrairieLearnScoresFile = "prairielearn-scores.csv";

struct BatchOptions {
    std::filesystem::path submissions_dir;  // one sub-folder per submission
    std::filesystem::path output_dir;       // created if missing
    // Submissions graded at once; <= 0: default_jobs() (device_servers.hpp).
    int jobs = 0;
    std::vector<int> devices;  // GPU indices to spread over; empty: visible_devices() (ibid.)
    double run_seconds_override = 0.0;  // > 0 replaces the exercise's run limit
    // "cuda", "sim", or "auto": cuda where the first device answers, else sim (resolve_backend(),
    // as a grade alone resolves it). Resolved once for the whole class, so that one gradebook
    // never mixes GPU and simulated grades.
    std::string backend = "auto";
    std::filesystem::path worker_executable;  // the grader, started as "grader __worker"
    // On GPUs, one device server per GPU (device/device_server.hpp) holds the context and the
    // counters for the whole class and times the exercise's own kernels once; false: every grade
    // opens the GPU itself, as `grader grade` does.
    bool device_server = true;
    std::map<std::string, std::string> other_exercise_sources;  // GradeOptions's, for each grade
    // Keep the report of every submission whose OUTPUT/<student>/report.json exists and parses,
    // instead of grading it again. Without it every submission is graded and its files replaced.
    bool resume = false;
    // Folder names (as found, or as the output names them) to grade; empty: every submission.
    // The named ones are graded even when resuming; the class outputs still cover every report.
    std::vector<std::string> only;
    // Polled by the pool: once true, no new submission starts, run_batch writes the class outputs
    // for what finished and returns with interrupted set. Grades in flight are abandoned: their
    // threads are detached and write nothing more; their workers die with the process
    // (PR_SET_PDEATHSIG), so the caller is expected to exit soon after.
    const std::atomic<bool>* stop = nullptr;
    // One task of a job array: grade only this shard's share of the class (see shard.hpp), keep
    // every pass or fail report an earlier start of the same task wrote (an ungradable one is
    // graded again: the machine may be another), write OUTPUT/shard.json, and leave the class
    // outputs to `grader merge`.
    std::optional<Shard> shard;
    // The question prairielearn-scores.csv gives the scores to; empty: the exercise's id.
    std::string prairielearn_qid;
};

// One submission of the class.
struct BatchSubmission {
    std::string folder_name;          // as found in the class folder (any bytes)
    std::string student;              // the output folder's name and the key in the gradebook
    std::filesystem::path directory;  // submissions_dir / folder_name, or its one folder that
                                      // holds the files (zipped one level down)
};

// Where the batch stands, as handed to every progress call.
struct BatchStatus {
    std::size_t total = 0;   // submissions in this run's scope (all, or those of `only`)
    std::size_t done = 0;    // of those, with a report: kept from before, or graded now
    std::size_t kept = 0;    // reports kept from an earlier run (resume)
    std::size_t graded = 0;  // graded in this run
    std::size_t passed = 0;  // verdicts over `done`
    std::size_t failed = 0;
    std::size_t ungradable = 0;
    double elapsed_seconds = 0.0;
    std::vector<std::string> in_flight;  // students being graded now, in the order they started
    int jobs = 0;
    std::vector<int> devices;
    std::string backend;  // "cuda" or "sim"
};

// One submission graded in this run.
struct GradedSubmission {
    std::string student;
    int device = 0;
    Verdict verdict = Verdict::ungradable;
    double score = 0.0;
    double max_score = 0.0;
    double wall_seconds = 0.0;
    std::string reason;          // class_reason(): why this verdict
    bool harness_error = false;  // grade_submission threw: the report says why
};

// How the batch tells its caller what happens; the library never prints. Calls come from the
// pool's threads but never at the same time, and none comes after run_batch has returned.
class BatchProgress {
public:
    virtual ~BatchProgress() = default;
    virtual void batch_started(const BatchStatus& status) { (void)status; }
    virtual void submission_started(const std::string& student, const BatchStatus& status) {
        (void)student;
        (void)status;
    }
    virtual void submission_finished(const GradedSubmission& graded, const BatchStatus& status) {
        (void)graded;
        (void)status;
    }
    // What the batch's user must know at once, however quiet the progress (a GPU's device server
    // that could not start), one sentence.
    virtual void notice(const std::string& line) { (void)line; }
};

struct BatchResult {
    BatchStatus status;                  // at the end
    std::vector<ClassEntry> entries;     // every report in the class outputs, sorted by student
    std::vector<SkippedEntry> skipped;   // what in the class folder is not a submission, and why
    std::size_t submissions = 0;         // in the class folder
    std::size_t harness_errors = 0;      // grades in this run where grade_submission threw
    bool interrupted = false;            // options.stop was set before the end
    std::vector<std::string> abandoned;  // in flight when interrupted; no report written
    std::vector<std::string> not_started;
    std::string started_at;  // ISO 8601 UTC
    std::string finished_at;
    double wall_seconds = 0.0;
    std::vector<std::filesystem::path> class_outputs;  // the files written into output_dir
    // Submissions with a flag for the instructor (a shared or missing id, a copied or missing
    // sentence), and those whose reports were written again to say so.
    std::size_t flagged = 0;
    std::size_t reports_rewritten = 0;
    // Where a grade of this run says the kernel gave the student's compile no confinement: its
    // confinement text, once for the class (empty where every compile was confined or none
    // said).
    std::string unconfined_compile;
    // Where options.shard was given: the names it was given, in class order.
    std::vector<std::string> assigned;
    // Where the grades went through device servers: where each GPU's time went, a line per GPU.
    std::vector<std::string> device_servers;
};

// Whether an environment says the student's compile ran unconfined: its confinement text is
// there and does not begin with "Landlock" (the words the compile uses when the kernel confined
// it). An empty text says nothing either way.
bool compile_unconfined(const Environment& environment);

// The output folder name for a submission folder: the name itself where it is valid UTF-8 with
// no control character and not "." or "..", else its printable ASCII with '_' for the rest and
// "-" plus a short hash of the raw bytes, so two odd names never meet.
std::string student_folder_name(const std::string& folder_name);

// The gradebook's key for a submission folder: the name itself where it is valid UTF-8 with no
// control character, else the name shown with its invisible or invalid parts escaped and its raw
// bytes in hex, "Jos\uFFFD [4a6f73e9]", so that two folders never show as one.
std::string submission_key(const std::string& folder_name);

// The class outputs' own names in the output folder; no student's output folder takes one.
const std::set<std::string>& class_output_names();

// What a Mac's zip or the system leaves beside the submissions, never a student's: a folder
// "__MACOSX" (a Mac's zip: the files' Finder metadata) and every name that starts with '.'
// (".DS_Store", "._alice", ".git"). Skipped in the class folder, and not taken for the one folder
// that holds a student's files.
bool system_leftover(const std::string& name);
inline constexpr const char* kSystemLeftoverReason =
    "left by a Mac's zip or the system (__MACOSX, or a name that starts with '.'), not a "
    "submission";

// A class folder's contents: its submissions, sorted by folder name (every sub-folder; a
// symbolic link to a folder counts), and what was skipped, with why (hidden entries, plain files,
// anything else that is not a folder).
struct ClassFolder {
    std::vector<BatchSubmission> submissions;
    std::vector<SkippedEntry> skipped;
};

// Whether a class folder's entry of this name can be a submission: not a system leftover (a '.'
// first, which covers "." and "..", or __MACOSX), and a name a listing gives (no '/', no NUL).
bool listed_as_submission(const std::string& name);

// Gives each submission (sorted by folder name) the output name batch files its reports under:
// student_folder_name(), with a hash suffix where that is one of class_output_names() or of
// also_reserved. Throws BatchError, naming both folders and `where` (the class folder), where two
// would share an output folder or a gradebook row. `grader merge` checks a shard's class list
// with it.
void name_submissions(std::vector<BatchSubmission>& submissions,
                      const std::set<std::string>& also_reserved, const std::string& where);

// Reads a class folder. Output names are never one of class_output_names() nor of also_reserved
// (a folder name that must stay free in the output folder): such a name gets a suffix from a hash
// of the folder name. Throws BatchError if the class folder cannot be read, and where two
// folders would share a gradebook key or an output folder (a folder named like another's renamed
// output): one student's grade must never be filed under another's name.
ClassFolder find_submissions(const std::filesystem::path& submissions_dir,
                             const std::set<std::string>& also_reserved = {});

// Throws BatchError where output_dir is the class folder or lies inside it, or inside a folder a
// submission's symbolic link points to.
void check_output_folder(const std::filesystem::path& submissions_dir,
                         const std::filesystem::path& output_dir);
void check_output_folder(const std::filesystem::path& submissions_dir,
                         const std::filesystem::path& output_dir,
                         const std::vector<BatchSubmission>& submissions);

// Whether output_dir holds what an earlier batch wrote: a class output, or a report.json in a
// sub-folder.
bool output_has_reports(const std::filesystem::path& output_dir);

// The reports a batch (or a merge) wrote into output_dir, one per sub-folder that holds a
// report.json, by folder; each folder is its entry's key. Throws BatchError where output_dir
// cannot be read.
std::vector<ClassEntry> entries_in_output(const std::filesystem::path& output_dir);

// The exercise a run graded: its summary.json's exercise_id, else its reports' (`entries`, read
// from it), else the manifest's of a shard. nullopt where it says none; throws BatchError naming
// two where its reports are of two exercises.
std::optional<std::string> run_exercise_id(const std::filesystem::path& output_dir,
                                           const std::vector<ClassEntry>& entries);

// OUTPUT/<student>/report.json, read back; nullopt where missing, unreadable, a link or not a
// report. The second form follows no link below `folder` (a shard's folder, read by the merge).
std::optional<Report> read_report_json(const std::filesystem::path& file);
std::optional<Report> read_report_json(const std::filesystem::path& folder,
                                       const std::filesystem::path& name);

// The files a batch writes into OUTPUT/<student>/, report.json (the one that marks a submission
// finished) last.
std::vector<std::string> submission_file_names();

// How a batch renders each student's reports for this exercise.
ReportOptions batch_report_options(const Exercise& exercise);

// What the class outputs know of the exercise and of the class folder besides the reports.
ClassReportOptions batch_class_options(const Exercise& exercise,
                                       const std::vector<SkippedEntry>& skipped);

// The reports found in OUTPUT/<student>/report.json, one per submission that has one, in the
// submissions' order.
std::vector<ClassEntry> collect_class_entries(const std::vector<BatchSubmission>& submissions,
                                              const std::filesystem::path& output_dir);

// The class-wide stage of a batch over the reports in output_dir: ids and sentences compared
// across the class, the reports whose sentence flag changed written again (into output_dir),
// then gradebook.csv, summary.json (with run(the stage so far) as its "run"), class-report.html
// and prairielearn-scores.csv (to the question prairielearn_qid; empty: the exercise's id). One
// batch of the whole class and `grader merge` of its shards both end here.
struct ClassStageResult {
    std::size_t flagged = 0;
    std::size_t reports_rewritten = 0;
    std::vector<std::filesystem::path> files;
};
using RunInfo = std::function<nlohmann::json(const ClassStageResult&)>;
ClassStageResult write_class_stage(const Exercise& exercise, std::vector<ClassEntry>& entries,
                                   const std::vector<SkippedEntry>& skipped,
                                   const std::filesystem::path& output_dir, const RunInfo& run,
                                   const std::string& finished_at, bool interrupted = false,
                                   const std::vector<std::string>& unfinished = {},
                                   const std::string& prairielearn_qid = {});

// Grades the class and writes every file. The output folder may not be the class folder nor lie
// inside it (nor inside a submission a symbolic link points to), and is locked for the run's
// length: a second batch into it is refused. Once every grade is in, sentences and ids are
// compared across the class, and the reports whose sentence flag changed are written again
// from their report.json (no grade runs twice). Throws BatchError for the caller's mistakes,
// ExerciseError never (the exercise is already loaded), and std::exception for the harness's
// own faults (an output file that cannot be written), after writing what class outputs it can.
// A submission that makes grade_submission throw is recorded as ungradable, with the reason.
BatchResult run_batch(const Exercise& exercise, const BatchOptions& options,
                      BatchProgress& progress);

}  // namespace grader
