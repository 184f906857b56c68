#pragma once

// The exercise and the submission, as plain values. Everything exercise-specific lives in the
// exercise's YAML file; the C++ knows only the shapes below: kernels with an ABI of parameter
// roles, a launch, input buffers filled by rule, an output compared with a trusted kernel's,
// an optional sweep over strides, timing ratios against a base, and checks of a few kinds.

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/kernel_ids.hpp"
#include "model/diagnosis.hpp"
#include "model/finding.hpp"

namespace grader {

// A place in a text file; line and column are 1-based, 0 where unknown.
struct SourceLocation {
    std::string file;
    int line = 0;
    int column = 0;
};

// "file:line:column" (omitting what is unknown).
std::string to_string(const SourceLocation& location);

// The instructor's exercise file is wrong: the CLI exits 2 with this message.
class ExerciseError : public std::runtime_error {
public:
    ExerciseError(SourceLocation location, std::string field, const std::string& message);
    const SourceLocation& location() const noexcept { return location_; }
    const std::string& field() const noexcept { return field_; }

private:
    SourceLocation location_;
    std::string field_;
};

// What each kernel parameter is for, so the harness knows what to pass.
enum class ParameterRole {
    input,     // the input buffer
    output,    // the output buffer
    count,     // how many output elements there are
    stride,    // the swept stride
    constant,  // a fixed value from the exercise file
};

struct KernelParameter {
    std::string name;
    std::string type;  // as the student reads it, e.g. "const float*"
    std::size_t size_bytes = 0;
    ParameterRole role = ParameterRole::input;
    std::int64_t value = 0;  // ParameterRole::constant: what is passed
};

// A kernel the grade builds and runs: the student's, or one of the exercise's own, all built
// with the same compiler and options.
struct KernelSpec {
    std::string id;              // "student", "reference", "copy", ...: how rules and rows name it
    std::string label;           // how tables name it, e.g. "transpose tile[32][33]"
    std::string name;            // the name NVRTC looks up
    std::filesystem::path file;  // absolute, for the exercise's kernels; empty for the student's
    bool oracle = false;         // its outputs are what the student's must equal, exactly
    // The model's conflict degree of its shared loads, where no stride decides it (an exercise
    // without a sweep); nullopt where it makes no claim (a kernel without shared loads).
    std::optional<unsigned> degree;

    bool is_student() const { return id == kStudentKernel; }
};

// A header the harness provides to NVRTC; the only thing a submission may #include.
struct ProvidedHeader {
    std::string include_name;    // e.g. "day15_probe.h"
    std::filesystem::path path;  // resolved, absolute
};

struct Dim3Spec {
    std::uint32_t x = 1;
    std::uint32_t y = 1;
    std::uint32_t z = 1;
    std::uint64_t count() const { return std::uint64_t{x} * y * z; }
};

struct LaunchSpec {
    Dim3Spec block{256, 1, 1};
    // Fill the GPU: as many blocks per SM as the occupancy API allows, on every SM (a 1-D grid).
    bool grid_from_occupancy = true;
    Dim3Spec grid;  // otherwise, this grid
    // The grid the simulator stands in for where the occupancy decides it (no GPU to ask).
    std::uint32_t simulated_grid_blocks = 160;
    // Blocks the simulator runs per launch, drawn from the whole grid by the grade's seed.
    std::uint32_t simulated_blocks = 2;
};

// How the output is laid out, for messages that name the element at fault.
struct OutputLayout {
    enum class Kind {
        per_thread,  // one element per launched thread: "thread 1234 (block 4, thread 210)"
        matrix,      // rows x columns, row-major: "row 17, column 3"
    };
    Kind kind = Kind::per_thread;
    std::uint64_t rows = 0;
    std::uint64_t columns = 0;
};

struct BuffersSpec {
    std::uint64_t input_words = 0;  // floats in the input buffer
    OutputLayout output;            // per_thread: one float per thread of the grid
    // Bytes one launch reads and writes in global memory, for a GB/s column; 0: not shown.
    std::uint64_t bytes_per_launch = 0;
};

// One way to fill the input buffer; every kernel runs once with each.
struct InputSpec {
    enum class Fill {
        constant,         // every word `value`
        random_integers,  // integers 0..value, from the grade's seed (sums of them stay exact)
        random_floats,    // finite floats from the grade's seed
    };
    std::string id;  // "ones", "hidden", ...
    Fill fill = Fill::constant;
    double value = 1.0;
    // Fill the GPU's shared memory with NaN before these runs, so a tile the kernel leaves
    // partly unwritten reads NaN rather than what an earlier kernel left there.
    bool poison_shared = false;
    std::optional<std::uint32_t> simulated_blocks;  // overrides LaunchSpec::simulated_blocks
    SourceLocation location;
};

// A kernel at a stride: one row of the tables, one side of a rule.
struct Case {
    std::string kernel;  // a KernelSpec id
    int stride = 0;      // 0 where the exercise has no sweep
};
bool operator==(const Case& a, const Case& b);
bool operator<(const Case& a, const Case& b);

// An ordering rule over ratios. The same shape serves the student's ordering checks, the
// calibration of the machine and the plausibility of the student's own measurements.
struct OrderingRule {
    enum class Kind {
        closer_to,    // ratio(subject) is closer to ratio(near) than to ratio(far)
        slower_than,  // ratio(subject) > ratio(than) * factor
        at_most,      // ratio(subject) <= limit
    };
    std::string id;
    Kind kind = Kind::closer_to;
    Case subject;
    Case near;
    Case far;
    Case than;
    double factor = 1.0;
    double limit = 0.0;
    std::string
        description;  // read by the student, e.g. "stride 3 is closer to stride 1 than to 4"
    SourceLocation location;
};

// A mistake the lesson names, recognised from what was counted: its message replaces the
// check's generic one. Every condition given must hold.
struct DiagnosisRule {
    std::optional<double> counted_degree_at_least;
    std::optional<int> static_shared_bytes_above;
    std::string message;
    // The root cause it names (`cause: old_width`); the check's generic one where not given.
    std::optional<Cause> cause;
};

enum class CheckKind {
    answers_file,    // the answers file is complete and well-formed
    compile_abi,     // the kernel compiles and has the ABI
    output,          // with one input, the kernel's outputs equal the oracle's, exactly
    predicted,       // the predicted degrees are the model's
    ordering,        // the kernel's ratios follow rules
    consistency,     // the kernel's ratios match a reference kernel's at every stride
    measured,        // the student's own measured values are plausible
    counted_degree,  // the counted conflict degree is the model's
    sentence,        // the sentence, kept for review
};
std::string_view to_string(CheckKind kind);

// Points, messages and parameters of one check, from the exercise file. Messages are templates:
// "{stride}" and the like are filled in by the check.
struct CheckSpec {
    std::string id;
    CheckKind kind = CheckKind::answers_file;
    std::string title;
    double points = 0.0;
    bool required = true;  // a failed required check fails the verdict
    bool review = false;   // recorded for the instructor, not scored by the machine
    std::string pass_message;
    std::string fail_message;
    std::string hint;  // shown under a failure
    // Only where the kind takes them:
    std::string input;                   // output: the input whose runs are compared
    std::string kernel{kStudentKernel};  // consistency and counted_degree: the kernel judged
    std::string against;                 // consistency: the kernel compared with
    double tolerance = 0.0;              // consistency: |ratio / against's ratio - 1| at most;
                                         // counted_degree: |counted / model - 1| at most
    std::vector<OrderingRule> rules;     // ordering and measured; counted_degree: timing rules
                                         // that must hold too where the machine can time
    // measured: each measured ratio lies within [low * degree, high * degree], widened by
    // `slack` on either side (a ratio of a conflict-free row is near 1, not near low).
    double band_low = 0.0;
    double band_high = 0.0;
    double band_slack = 0.0;
    std::vector<DiagnosisRule> diagnoses;  // counted_degree
    // counted_degree: the accesses the model's degree is about: every shared access (Part 2's
    // tile), or only the loads (Part 1's probe, whose fill is not what it measures), whose worst
    // line is then the one a failure names.
    enum class Accesses { all, loads };
    Accesses accesses = Accesses::all;
    SourceLocation location;
};

struct TimingSpec {
    int warmup_launches = 2;     // per kernel and stride, before any sample
    double warmup_ms = 30.0;     // busy time before the first round, to bring clocks up
    double min_sample_ms = 0.5;  // a sample is back-to-back launches lasting at least this
    int min_samples = 10;
    int max_samples = 100;
    double target_spread = 0.005;  // stop once every row's robust relative spread is below
    double max_seconds = 0.6;      // time cap for the timed rounds
};

struct LimitsSpec {
    double compile_seconds = 30.0;
    double run_seconds = 30.0;
    std::size_t output_bytes = 64 * 1024;  // what the worker may print that is kept
    std::size_t memory_bytes = std::size_t{4} << 30;
    std::size_t source_bytes = 256 * 1024;  // a source larger than this is refused
};

// Every ratio is a time over the time of a base: the same kernel at a stride (a sweep), or
// another kernel (a baseline such as a plain copy).
struct RatioSpec {
    int to_stride = 1;        // with a sweep
    std::string to_kernel;    // without one: a KernelSpec id
    bool as_percent = false;  // tables and answers write the ratio as a percentage
};

// What the answers file holds: one row per stride the student names, or one row per kernel the
// exercise lists under a key of its own ("tile: yours"), each with a predicted degree and the
// student's own measurement.
struct AnswerRowSpec {
    std::string key;     // the value of the row's key field: "32x32", "yours"
    std::string kernel;  // the KernelSpec id the row is about
};

struct AnswersSpec {
    std::string key_field = "stride";  // "stride": the rows are strides.student
    std::vector<AnswerRowSpec> rows;   // where the key is not a stride
    std::string predicted_field = "predicted_degree";
    std::string measured_field = "measured_ratio";
    std::string measured_description = "this stride's time divided by stride 1's";
};

// What the simulator may stand in for where there is no GPU.
struct SimulatorSpec {
    // Its modeled costs order the strides like times (true for the probe, whose cost is all
    // shared-memory traffic); false where the model leaves out what dominates (global memory),
    // and then checks that need timing do not run on it.
    bool modeled_timing = true;
    // `modeled_ratios`: the exercise's own kernel's modeled ratios at the student's strides, as
    // `grader grade` prints them where there is no GPU. A student who types them in as measured
    // on a GPU is flagged for the instructor. tests/test_exercise_data.cpp checks them against
    // the simulator.
    std::map<int, double> modeled_ratios;
};

// PrairieLearn's advice for a submission it cannot grade at all (a file missing, a kernel that
// does not compile) is "gradable": false, which does not count the attempt; an exercise chooses.
// The defaults grade them, as a failure.
struct PrairieLearnPolicy {
    bool compile_error_gradable = true;
    bool missing_file_gradable = true;
};

struct Exercise {
    std::filesystem::path directory;  // absolute
    std::filesystem::path file;       // the exercise.yaml, absolute
    int schema_version = 2;
    std::string id;
    std::string title;
    unsigned banks = 32;

    // The ABI the student's kernel must have.
    std::string kernel_name;
    std::vector<KernelParameter> parameters;
    std::string submission_source = "probe.cu";
    std::string submission_answers = "submission.yaml";
    // The grade's kernels: the student's first, then the exercise's own, oracle among them.
    std::vector<KernelSpec> kernels;
    std::filesystem::path shared_poison_source;  // absolute, optional: fills shared memory with NaN

    // Compilation: the same options for every kernel.
    std::vector<std::string> compile_options;
    std::string default_arch = "sm_75";  // used where no GPU tells the architecture
    std::vector<ProvidedHeader> headers;

    LaunchSpec launch;
    BuffersSpec buffers;
    std::vector<InputSpec> inputs;

    // The sweep; empty strides mean none, every kernel runs once.
    std::vector<int> reference_strides;    // swept by the exercise's kernels
    std::vector<int> student_strides;      // the rows a submission must have
    std::vector<int> unnamed_stride_pool;  // strides the student did not name, drawn per grade
    int unnamed_strides_per_grade = 0;
    bool has_sweep() const { return !student_strides.empty(); }

    RatioSpec ratios;
    // The exercise's kernels must pass these, or the machine cannot grade timings.
    std::vector<OrderingRule> calibration;
    // Where calibration fails: true makes the grade ungradable (the timing checks are the
    // grade); false marks the checks that need timing not run and grades on the rest (the
    // counted degree decides).
    bool calibration_decides = true;

    TimingSpec timing;
    LimitsSpec limits;
    SimulatorSpec simulator;
    AnswersSpec answers;
    std::vector<CheckSpec> checks;  // in the report's order
    std::string sentence_prompt;

    const CheckSpec& check(const std::string& id) const;
    const KernelSpec& kernel(const std::string& id) const;
    const KernelSpec* oracle() const;
    // The model's conflict degree of a case: gcd(stride, banks) on a sweep, else the kernel's.
    std::optional<unsigned> model_degree(const Case& c) const;

    // Optional settings, added after the first release.
    // From the starter kit's filled-in example (`starter_example`, a submission folder): a
    // sentence or an id handed in unchanged from it is flagged for the instructor's review.
    // Empty where the exercise names no example.
    std::string example_sentence;
    std::string example_student_id;
    // The example's measured values, as ratios (a percentage divided by 100), by the case each
    // row is about: a student who hands them in as their own measurements is flagged.
    std::vector<std::pair<Case, double>> example_ratios;
    // `lesson_solution`: the lesson's own answer to the sentence prompt, as its course page words
    // it, a sentence an item. A student's sentence that is one of them, or nearly, is flagged and
    // named as the lesson's.
    std::vector<std::string> lesson_solution;
    // `platforms.prairielearn`: how PrairieLearn's results file treats an ungradable submission.
    PrairieLearnPolicy prairielearn;
    // `scoring.kernel_points_without_answers`: the share of their points the kernel's checks
    // (compile, outputs, timings, counted degree) earn while the answers file holds none of the
    // student's answers (missing, or every value still blank). The starter kit's kernel is the
    // lesson's own, so at 1 an untouched kit would take most points. A slip in answers the
    // student wrote costs the answers' own points, never these.
    double kernel_points_without_answers = 0.5;
};

// Reads DIR/exercise.yaml. Throws ExerciseError naming file, line, column and field.
Exercise load_exercise(const std::filesystem::path& directory);

// A problem with a submission's answers file: the student's mistake, graded, never thrown.
struct SubmissionProblem {
    SourceLocation location;
    std::string field;  // e.g. "rows[1].predicted_degree"
    // What the reader found (model/findings.def): a blank, the starter kit's placeholder, a
    // malformed value, or (a note) a value read as meant.
    FindingKind kind = FindingKind::answer_malformed;
    // A blank: what the field holds once filled in; a placeholder: the placeholder as written;
    // otherwise the reader's account of what is wrong and what was expected.
    std::string message;
};

struct SubmissionRow {
    Case subject;  // the kernel and stride the row is about
    std::string key;
    std::optional<int> predicted_degree;
    std::optional<double> measured;  // as the student wrote it (a ratio, or a percentage)
    SourceLocation location;
    // Where each value is written, for a check that points at it: "submission.yaml:17:28".
    SourceLocation predicted_location;
    SourceLocation measured_location;
};

struct Submission {
    std::filesystem::path directory;
    std::string student_id;
    std::string gpu_name;  // the GPU the student measured on
    std::vector<SubmissionRow> rows;
    std::string sentence;
    std::vector<SubmissionProblem> problems;  // empty when the answers file is complete and valid
    // Values read as the student meant them though not written as asked (a decimal comma, a
    // unit after the number), each saying how it was read and how to write it: not problems.
    std::vector<SubmissionProblem> notes;
    // How many predicted and measured values the rows hold, right or wrong: 0 for the untouched
    // starter kit, whose answers are all blank.
    int answers_given = 0;
    // The file is there but could not be read (not YAML, not UTF-8, too large): what the student
    // answered is unknown, so it is not taken for the untouched kit.
    bool unreadable = false;
    bool missing = false;  // there is no answers file at all
    // Why the answers file was never read (the grader stopped before it): then nothing can be
    // said of it, neither pass nor fail. Empty when it was read.
    std::string unread_reason;

    const SubmissionRow* row(const Case& subject) const;
};

// Reads DIR/<answers> against the exercise. Never throws for the student's mistakes: a missing,
// unreadable, non-UTF-8, malformed, incomplete or still blank file yields problems. The kernel
// source is not read here.
Submission load_submission(const std::filesystem::path& directory, const Exercise& exercise);

}  // namespace grader
