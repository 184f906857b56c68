#pragma once

// The exercise and the submission, as plain values. Everything exercise-specific lives in the
// exercise's YAML file; the C++ knows only the shapes below.

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

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
enum class ParameterRole { input, output, count, stride };

struct KernelParameter {
    std::string name;
    std::string type;  // as the student reads it, e.g. "const float*"
    std::size_t size_bytes = 0;
    ParameterRole role = ParameterRole::input;
};

// A header the harness provides to NVRTC; the only thing a submission may #include.
struct ProvidedHeader {
    std::string include_name;            // e.g. "day15_probe.h"
    std::filesystem::path path;          // resolved, absolute
};

// An ordering rule over ratios to stride 1. The same shape serves the student's ordering checks
// and the calibration of the machine.
struct OrderingRule {
    enum class Kind {
        closer_to,    // ratio(stride) is closer to ratio(near) than to ratio(far)
        slower_than,  // ratio(stride) > ratio(than) * factor
        at_most,      // ratio(stride) <= limit
    };
    std::string id;
    Kind kind = Kind::closer_to;
    int stride = 0;
    int near = 0;
    int far = 0;
    int than = 0;
    double factor = 1.0;
    double limit = 0.0;
    std::string description;  // read by the student, e.g. "stride 3 is closer to stride 1 than to 4"
    SourceLocation location;
};

// Every check the harness runs; an exercise file must give points and messages for each.
inline constexpr std::array<std::string_view, 8> kHarnessCheckIds = {
    "submission_file", "compile_abi", "accumulator", "hidden_input",
    "predicted_degrees", "ordering", "consistency", "sentence"};

// Points and messages of one check, from the exercise file. Messages are templates: "{stride}"
// and the like are filled in by the check.
struct CheckSpec {
    std::string id;
    std::string title;
    double points = 0.0;
    bool required = true;       // a failed required check fails the verdict
    bool review = false;        // recorded for the instructor, not scored by the machine
    std::string pass_message;
    std::string fail_message;
    std::string hint;           // shown under a failure
};

struct TimingSpec {
    int warmup_launches = 2;         // per kernel and stride, before any sample
    double warmup_ms = 30.0;         // busy time before the first round, to bring clocks up
    double min_sample_ms = 0.5;      // a sample is back-to-back launches lasting at least this
    int min_samples = 10;
    int max_samples = 100;
    double target_spread = 0.005;    // stop once every row's robust relative spread is below
    double max_seconds = 0.6;        // time cap for the timed rounds
};

struct LimitsSpec {
    double compile_seconds = 30.0;
    double run_seconds = 30.0;
    std::size_t output_bytes = 64 * 1024;        // what the worker may print that is kept
    std::size_t memory_bytes = std::size_t{4} << 30;
    std::size_t source_bytes = 256 * 1024;       // probe.cu larger than this is refused
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
    int schema_version = 1;
    std::string id;
    std::string title;

    // The ABI the student's kernel must have.
    std::string kernel_name;
    std::vector<KernelParameter> parameters;
    std::string submission_source = "probe.cu";
    std::string submission_answers = "submission.yaml";
    std::filesystem::path reference_source;  // absolute, the reference kernel with the same ABI
    std::filesystem::path shared_poison_source;  // absolute, optional: kernel that poisons shared memory

    // Compilation: the same options for the reference and the student.
    std::vector<std::string> compile_options;
    std::string default_arch = "sm_75";  // used where no GPU tells the architecture
    std::vector<ProvidedHeader> headers;

    // The probe.
    std::uint32_t tile_words = 2048;
    std::uint32_t reads_per_thread = 2048;
    std::uint32_t block_size = 256;
    std::string grid = "occupancy";  // fill every SM with as many blocks as the occupancy API allows
    unsigned banks = 32;
    float tile_value = 1.0f;         // the accumulator check's tile; every thread then holds
                                     // tile_value * reads_per_thread exactly
    int hidden_max_value = 15;       // hidden-input tile: integers 0..hidden_max_value

    std::vector<int> reference_strides;     // swept by the reference kernel
    std::vector<int> student_strides;       // the rows a submission must have
    std::vector<int> unnamed_stride_pool;   // strides the student did not name, drawn per grade
    int unnamed_strides_per_grade = 2;

    std::vector<OrderingRule> ordering;     // checked on the student kernel's timings
    std::vector<OrderingRule> calibration;  // the reference must pass these, or the GPU is unfit
    double consistency_tolerance = 0.15;    // |student/reference - 1| at the same stride

    TimingSpec timing;
    LimitsSpec limits;
    std::map<std::string, CheckSpec> checks;  // by id
    std::string sentence_prompt;

    const CheckSpec& check(const std::string& id) const;

    // Optional settings, added after the first release.
    // From the starter kit's filled-in example (`starter_example`, a submission folder): a
    // sentence or an id handed in unchanged from it is flagged for the instructor's review.
    // Empty where the exercise names no example.
    std::string example_sentence;
    std::string example_student_id;
    // `platforms.prairielearn`: how PrairieLearn's results file treats an ungradable submission.
    PrairieLearnPolicy prairielearn;
};

// Reads DIR/exercise.yaml. Throws ExerciseError naming file, line, column and field.
Exercise load_exercise(const std::filesystem::path& directory);

// A problem with a submission's answers file: the student's mistake, graded, never thrown.
struct SubmissionProblem {
    SourceLocation location;
    std::string field;    // e.g. "rows[1].predicted_degree"
    std::string message;  // says what is wrong and what was expected
};

struct SubmissionRow {
    int stride = 0;
    std::optional<int> predicted_degree;
    std::optional<double> measured_ratio;
    SourceLocation location;
};

struct Submission {
    std::filesystem::path directory;
    std::string student_id;
    std::string gpu_name;  // the GPU the student measured on
    std::vector<SubmissionRow> rows;
    std::string sentence;
    std::vector<SubmissionProblem> problems;  // empty when the answers file is complete and valid

    const SubmissionRow* row(int stride) const;
};

// Reads DIR/submission.yaml against the exercise. Never throws for the student's mistakes: a
// missing, unreadable, non-UTF-8, malformed or incomplete file yields problems. The probe source
// is not read here.
Submission load_submission(const std::filesystem::path& directory, const Exercise& exercise);

}  // namespace grader
