// The diagnosis: each failing check's root cause, from what the grade observed rather than from
// the check's words, and the one a report comes down to.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "checks/checks.hpp"
#include "common/kernel_ids.hpp"
#include "common/text.hpp"
#include "exercise/exercise.hpp"
#include "model/describe.hpp"
#include "model/diagnosis.hpp"
#include "model/measurements.hpp"
#include "model/report.hpp"

namespace grader {
namespace {

const std::string kStudent(kStudentKernel);

// The simulator's note for a tile word read before any thread of its block wrote it.
constexpr std::string_view kUnwrittenNote = " before any thread of its block wrote it";

Diagnosis make(Cause cause, std::string what, std::string fix = {}, std::string where = {}) {
    Diagnosis diagnosis;
    diagnosis.cause = cause;
    diagnosis.what = std::move(what);
    diagnosis.fix = std::move(fix);
    diagnosis.where = std::move(where);
    return diagnosis;
}

// An exercise's hint ("Keep the signature exactly: ...") as the fix after a semicolon.
std::string as_fix(std::string hint) {
    while (!hint.empty() && (hint.back() == '.' || hint.back() == ' ')) {
        hint.pop_back();
    }
    if (hint.size() > 1 && std::isupper(static_cast<unsigned char>(hint[0])) != 0 &&
        std::islower(static_cast<unsigned char>(hint[1])) != 0) {
        hint[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(hint[0])));
    }
    return hint;
}

bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

// The first place in the student's source a message names: "probe.cu:26:9" in "... at
// probe.cu:26:9 (st.global.f32 ...)"; empty where it names none.
std::string source_place(const std::string& message, const std::string& source) {
    for (std::size_t at = message.find(source + ":"); at != std::string::npos;
         at = message.find(source + ":", at + 1)) {
        std::size_t end = at + source.size();
        while (end < message.size() &&
               (message[end] == ':' || std::isdigit(static_cast<unsigned char>(message[end])))) {
            ++end;
        }
        while (end > at + source.size() && message[end - 1] == ':') {
            --end;
        }
        if (end > at + source.size() + 1) {
            return message.substr(at, end - at);
        }
    }
    return {};
}

// The cause of a stop the student's kernel caused.
Cause stop_cause(StopKind kind) {
    switch (kind) {
        case StopKind::fault:
            return Cause::kernel_fault;
        case StopKind::timeout:
            return Cause::kernel_timeout;
        case StopKind::memory:
            return Cause::kernel_memory;
        case StopKind::launch:
            return Cause::launch_refused;
        case StopKind::unsupported:
            return Cause::unsupported_instruction;
        case StopKind::no_gpu:
            return Cause::no_gpu;
        case StopKind::crash:
            return Cause::kernel_crash;
    }
    return Cause::kernel_crash;
}

// NVRTC's first error, by kind: what a student does about "expected a ';'" is not what they do
// about an undefined name.
Cause compile_cause(std::string_view error) {
    for (const std::string_view undefined :
         {"is undefined", "was not declared", "undeclared", "has no member"}) {
        if (contains(error, undefined)) {
            return Cause::compile_undefined_name;
        }
    }
    for (const std::string_view type :
         {"incompatible", "cannot be used to initialize", "a value of type", "no suitable",
          "too few arguments", "too many arguments", "no instance of", "expression must have",
          "cannot be assigned", "argument of type", "conversion", "not a modifiable"}) {
        if (contains(error, type)) {
            return Cause::compile_type_error;
        }
    }
    for (const std::string_view syntax :
         {"expected a", "expected an", "unexpected", "unrecognized token", "missing closing",
          "unbalanced", "expected ", "extra text"}) {
        if (contains(error, syntax)) {
            return Cause::compile_syntax_error;
        }
    }
    return Cause::compile_error;
}

// "probe.cu:35:5" from a log line "probe.cu:35:5: error: ..." or "probe.cu(35): error: ...".
std::string log_place(std::string_view line) {
    const std::size_t error = line.find(": error");
    if (error == std::string_view::npos) {
        return {};
    }
    std::string place(line.substr(0, error));
    if (const std::size_t open = place.find('(');
        open != std::string::npos && place.back() == ')') {
        place = place.substr(0, open) + ":" + place.substr(open + 1, place.size() - open - 2);
    }
    return place;
}

// The first line of a log that reports an error; empty where none does.
std::string first_error(const std::string& log) {
    std::size_t start = 0;
    while (start < log.size()) {
        const std::size_t end = std::min(log.find('\n', start), log.size());
        const std::string line = log.substr(start, end - start);
        if (contains(line, "error")) {
            return line;
        }
        start = end + 1;
    }
    return {};
}

// The conditions of an exercise's diagnosis rule, over what was counted.
bool rule_holds(const DiagnosisRule& rule, double worst_degree, int static_shared_bytes) {
    return (!rule.counted_degree_at_least || worst_degree >= *rule.counted_degree_at_least) &&
           (!rule.static_shared_bytes_above ||
            static_shared_bytes > *rule.static_shared_bytes_above);
}

// A kernel's stop as a diagnosis: its cause, the place in the source it names, and what to do
// where that is plain (an access outside every buffer, a loop that never ends).
Diagnosis stop_diagnosis(const Interruption& stop, const std::string& source) {
    const Cause cause = stop_cause(stop.kind);
    const std::string where = source_place(stop.message, source);
    std::string fix;
    if (cause == Cause::kernel_fault && contains(stop.message, "outside every allocation")) {
        fix = "keep the index of the access" + (where.empty() ? "" : " at " + where) +
              " inside its buffer";
    } else if (cause == Cause::kernel_timeout) {
        fix = "make every loop end" + (where.empty() ? "" : " (the kernel was at " + where + ")");
    }
    return make(cause,
                (stop.stage.empty() ? std::string() : "at " + stop.stage + ": ") + stop.message,
                fix, where);
}

class Diagnoser {
public:
    Diagnoser(const Exercise& exercise, const CheckSpec& spec, const CheckResult& check,
              const Submission& submission, const Measurements& m)
        : exercise_(exercise), spec_(spec), check_(check), submission_(submission), m_(m) {}

    std::optional<Diagnosis> diagnose() const {
        switch (spec_.kind) {
            case CheckKind::answers_file:
                return answers_file();
            case CheckKind::compile_abi:
                return compile_abi();
            case CheckKind::output:
                return output();
            case CheckKind::predicted:
                return predicted();
            case CheckKind::measured:
                return measured();
            case CheckKind::ordering:
            case CheckKind::consistency:
                return timing();
            case CheckKind::counted_degree:
                return counted_degree();
            case CheckKind::sentence:
                return make(Cause::blank_sentence, "no sentence was given",
                            as_fix(exercise_.sentence_prompt));
        }
        return std::nullopt;
    }

private:
    // The first detail of the check, or its message.
    std::string first_detail() const {
        return check_.details.empty() ? check_.message : check_.details.front();
    }

    std::optional<Diagnosis> answers_file() const {
        if (submission_.missing) {
            return make(Cause::missing_answers_file,
                        "there is no " + exercise_.submission_answers + " in the folder",
                        "start from the starter kit's " + exercise_.submission_answers +
                            ", fill in every blank and hand it in beside " +
                            exercise_.submission_source);
        }
        const auto blank = std::find_if(
            submission_.problems.begin(), submission_.problems.end(), [](const auto& problem) {
                return problem.message.rfind("still blank", 0) == 0 ||
                       problem.message.rfind("still the placeholder", 0) == 0;
            });
        if (blank != submission_.problems.end()) {
            const auto blanks = std::count_if(
                submission_.problems.begin(), submission_.problems.end(), [](const auto& problem) {
                    return problem.message.rfind("still blank", 0) == 0 ||
                           problem.message.rfind("still the placeholder", 0) == 0;
                });
            if (blanks == 1) {
                return make(Cause::blank_answers, blank->field + ": " + blank->message, {},
                            shown_location(blank->location));
            }
            return make(Cause::blank_answers,
                        std::to_string(blanks) + " answers in " + exercise_.submission_answers +
                            " still blank (first: " + blank->field + ")",
                        "fill in each, starting at " + shown_location(blank->location),
                        shown_location(blank->location));
        }
        if (submission_.problems.empty()) {
            return std::nullopt;
        }
        const SubmissionProblem& first = submission_.problems.front();
        return make(Cause::malformed_answers,
                    (first.field.empty() ? "" : first.field + ": ") + first.message, {},
                    shown_location(first.location));
    }

    std::optional<Diagnosis> compile_abi() const {
        const CompileOutcome& c = m_.student;
        if (!c.attempted && c.vetting_problems.empty()) {
            if (contains(c.log, "was not found")) {
                return make(Cause::missing_kernel_file,
                            "there is no " + exercise_.submission_source + " in the folder",
                            "hand in " + exercise_.submission_source + ", your kernel, beside " +
                                exercise_.submission_answers);
            }
            return make(Cause::forbidden_source, c.log);
        }
        if (!c.vetting_problems.empty()) {
            const SourceProblem& first = c.vetting_problems.front();
            return make(Cause::forbidden_source, first.message, {},
                        shown_location({exercise_.submission_source, first.line, first.column}));
        }
        if (c.attempted && !c.ok) {
            const std::string error = first_error(c.log);
            const std::string place = log_place(error);
            const Cause cause = compile_cause(error);
            const std::string at = place.empty() ? std::string() : " at " + place;
            std::string fix;
            switch (cause) {
                case Cause::compile_syntax_error:
                    fix = "correct the source" + at +
                          " (a ';', a bracket or a brace missing or extra just before it)";
                    break;
                case Cause::compile_undefined_name:
                    fix = "declare the name or correct its spelling" + at +
                          " (names are exact, case included)";
                    break;
                case Cause::compile_type_error:
                    fix = "make the types agree" + at;
                    break;
                default:
                    break;
            }
            return make(cause,
                        exercise_.submission_source +
                            " did not compile: " + (error.empty() ? first_detail() : error),
                        fix, place);
        }
        if (!c.abi_problem.empty()) {
            return make(Cause::wrong_signature, c.abi_problem,
                        as_fix(fill_template(spec_.hint, {})));
        }
        return std::nullopt;
    }

    bool stopped_by_kernel() const {
        return m_.interruption && m_.interruption->students_fault && m_.student.ok &&
               m_.student.abi_problem.empty();
    }

    std::optional<Diagnosis> stop() const {
        return stop_diagnosis(*m_.interruption, exercise_.submission_source);
    }

    std::optional<Diagnosis> output() const {
        if (stopped_by_kernel()) {
            return stop();
        }
        std::vector<const KernelRun*> runs;
        for (const auto& run : m_.runs) {
            if (run.kernel == kStudent) {
                runs.push_back(&run);
            }
        }
        // A race first: it is why the values came out wrong, or may on another GPU.
        std::vector<int> race_strides;
        std::string fix;
        std::string unsynchronized;
        for (const KernelRun* run : runs) {
            for (const auto& race : run->races) {
                if (const std::string found = race_fix(race); !found.empty()) {
                    fix = fix.empty() ? found : fix;
                    race_strides.push_back(run->stride);
                } else if (unsynchronized.empty()) {
                    unsynchronized = race;
                }
            }
        }
        if (!fix.empty()) {
            const std::size_t between = fix.find(" and ");
            return make(Cause::missing_barrier,
                        "a warp reads words of the shared tile that another warp wrote, with no "
                        "barrier between the write and the read" +
                            strides_text(race_strides),
                        fix,
                        between == std::string::npos ? std::string() : fix.substr(between + 5));
        }
        if (!unsynchronized.empty()) {
            return make(Cause::shared_write_race, unsynchronized,
                        "give each lane its own word: two lanes that compute the same index race");
        }
        for (const KernelRun* run : runs) {
            for (const auto& note : run->notes) {
                if (contains(note, kUnwrittenNote)) {
                    return make(Cause::unwritten_tile, note,
                                "write every word of the tile, then __syncthreads(), then read it");
                }
            }
        }
        // Tile words no thread wrote explain a wrong sum on every input, also on one whose runs
        // start from whatever the SM held (a GPU's leftovers: a finite wrong sum; a NaN there is
        // the kernel's own): where an input whose runs start from the NaN poison gave a NaN sum,
        // that is the cause to name.
        if (finite_on_own_input(runs)) {
            for (const KernelRun* run : runs) {
                for (const OutputComparison& result : run->outputs) {
                    const InputSpec* poisoned = input(result.input);
                    if (result.input != spec_.input && poisoned != nullptr &&
                        poisoned->poison_shared && result.ran && !result.ok &&
                        std::isnan(result.first_bad_value) && result.first_bad_wrote_nan) {
                        return wrong_output(*run, result);
                    }
                }
            }
        }
        for (const KernelRun* run : runs) {
            for (const OutputComparison& result : run->outputs) {
                if (result.input == spec_.input && result.ran && !result.ok) {
                    return wrong_output(*run, result);
                }
            }
        }
        return std::nullopt;
    }

    // Whether this check's own input first went wrong with a finite value (what a GPU's SM
    // held before), not a NaN or an infinity the kernel made.
    bool finite_on_own_input(const std::vector<const KernelRun*>& runs) const {
        for (const KernelRun* run : runs) {
            for (const OutputComparison& result : run->outputs) {
                if (result.input == spec_.input && result.ran && !result.ok) {
                    return std::isfinite(result.first_bad_value);
                }
            }
        }
        return false;
    }

    // " (at strides 1, 3 and 8)", " (at 7 strides)" for a cause seen at several strides.
    static std::string strides_text(std::vector<int> strides) {
        std::sort(strides.begin(), strides.end());
        strides.erase(std::unique(strides.begin(), strides.end()), strides.end());
        if (strides.size() < 2 || strides.front() == 0) {
            return {};
        }
        if (strides.size() > 3) {
            return " (at " + std::to_string(strides.size()) + " strides)";
        }
        std::string text = " (at strides ";
        for (std::size_t i = 0; i < strides.size(); ++i) {
            text += (i == 0                    ? ""
                     : i + 1 == strides.size() ? " and "
                                               : ", ") +
                    std::to_string(strides[i]);
        }
        return text + ")";
    }

    const InputSpec* input(const std::string& id) const {
        for (const auto& spec : exercise_.inputs) {
            if (spec.id == id) {
                return &spec;
            }
        }
        return nullptr;
    }

    Diagnosis wrong_output(const KernelRun& run, const OutputComparison& result) const {
        const std::string symptom = describe_wrong_output(run.stride, result);
        const bool never_written =
            std::isnan(result.first_bad_value) && !result.first_bad_wrote_nan;
        if (never_written && result.first_bad) {
            // The output guard stops one short: the last thread (or the last row or column)
            // never writes.
            const OutputLayout& layout = exercise_.buffers.output;
            if (result.matrix && layout.rows > 0 && layout.columns > 0 &&
                (result.first_bad_row + 1 == layout.rows ||
                 result.first_bad_column + 1 == layout.columns)) {
                const bool column = result.first_bad_column + 1 == layout.columns;
                return make(Cause::off_by_one_guard,
                            "the output's last " + std::string(column ? "column" : "row") +
                                " was never written: " + symptom,
                            "let the bounds check pass every index below n (x < n, not x < n - 1 "
                            "or x + 1 < n)");
            }
            const std::uint64_t threads =
                std::uint64_t{m_.environment.grid_blocks} * m_.environment.block_size;
            if (!result.matrix && threads > 0 &&
                *result.first_bad + result.bad_elements == threads) {
                return make(
                    Cause::off_by_one_guard,
                    "the grid's last " +
                        (result.bad_elements == 1 ? std::string("thread never wrote its output")
                                                  : std::to_string(result.bad_elements) +
                                                        " threads never wrote their outputs") +
                        ": " + symptom,
                    "let the output guard pass every thread below n (t < n, not t + 1 < n "
                    "or t < n - 1)");
            }
        }
        const InputSpec* spec = input(result.input);
        if (spec != nullptr && spec->poison_shared && std::isnan(result.first_bad_value) &&
            result.first_bad_wrote_nan) {
            // Shared memory held NaN before this input's runs: a NaN sum read a tile word no
            // thread had written yet (never, or not before the read: a missing barrier on a GPU).
            return make(Cause::unwritten_tile,
                        "a thread's sum is NaN: it read words of the tile before any thread wrote "
                        "them (the grader fills shared memory with NaN first): " +
                            symptom,
                        "write every word of the tile, then __syncthreads(), then read it");
        }
        const double value = result.first_bad_value;
        const double expected = result.first_bad_expected;
        if (spec != nullptr && spec->fill == InputSpec::Fill::constant && std::isfinite(value) &&
            std::isfinite(expected) && value >= 0.0 && value < expected &&
            value == std::floor(value) && spec->value == 1.0) {
            return make(Cause::skipped_reads,
                        "each word of the tile is 1, so a thread's sum counts its reads, and " +
                            symptom + ": it made " + describe_value(value) + " of its " +
                            describe_value(expected) + " reads",
                        "make every read the loop asks for, in every thread: a row that is fast "
                        "because it reads less fails");
        }
        return make(Cause::wrong_output, symptom);
    }

    std::optional<Diagnosis> predicted() const {
        for (const auto& row : submission_.rows) {
            const auto degree = exercise_.model_degree(row.subject);
            if (row.predicted_degree && degree &&
                *row.predicted_degree != static_cast<int>(*degree)) {
                const std::string name = row.subject.stride > 0
                                             ? "stride " + std::to_string(row.subject.stride)
                                             : exercise_.answers.key_field + " " + row.key;
                const std::string model = row.subject.stride > 0
                                              ? "gcd(" + std::to_string(row.subject.stride) + ", " +
                                                    std::to_string(exercise_.banks) + ") is " +
                                                    std::to_string(*degree)
                                              : "its conflict degree is " + std::to_string(*degree);
                return make(Cause::wrong_prediction,
                            name + ": you predicted " + std::to_string(*row.predicted_degree) +
                                "; " + model,
                            as_fix(fill_template(spec_.hint, {})),
                            shown_location(row.predicted_location));
            }
        }
        return make(Cause::blank_answers, first_detail());
    }

    std::optional<Diagnosis> measured() const {
        std::string where;
        for (const std::string& detail : check_.details) {
            // "submission.yaml:17:57: stride 8: you measured ...": the line that points.
            if (detail.rfind(
                    std::filesystem::path(exercise_.submission_answers).filename().string(), 0) ==
                0) {
                where = detail.substr(0, detail.find(": "));
                return make(Cause::implausible_measurement, detail.substr(where.size() + 2), {},
                            where);
            }
        }
        if (contains(first_detail(), "gives no measured value") ||
            contains(first_detail(), "not in " + exercise_.submission_answers)) {
            return make(Cause::blank_answers, first_detail());
        }
        return make(Cause::implausible_measurement, first_detail(),
                    as_fix(fill_template(spec_.hint, {})));
    }

    // The student's ratios at strides whose degree is above 1 are all near 1: the kernel reads
    // the same words whatever the stride.
    bool ignores_stride() const {
        int conflicted = 0;
        for (const auto& run : m_.runs) {
            const auto degree = exercise_.model_degree({run.kernel, run.stride});
            if (run.kernel != kStudent || !degree || *degree < 4) {
                continue;
            }
            const bool counted_one =
                run.counts && run.counts->load_degree() && *run.counts->load_degree() < 1.5;
            const bool timed_one = run.ratio && *run.ratio < 1.5;
            if (!counted_one && !timed_one) {
                return false;
            }
            ++conflicted;
        }
        return conflicted > 0;
    }

    std::optional<Diagnosis> timing() const {
        if (ignores_stride()) {
            return make(Cause::ignores_stride,
                        "your kernel runs alike at every stride, as if every lane read the same "
                        "words: " +
                            first_detail(),
                        "index the tile with the stride you are given: lane L reads word L x "
                        "stride + k");
        }
        if (spec_.kind == CheckKind::consistency) {
            // Right at the strides the student named, wrong only at strides drawn for the grade.
            bool named_differs = false;
            bool unnamed_differs = false;
            for (const auto& run : m_.runs) {
                if (run.kernel != spec_.kernel || !run.ratio) {
                    continue;
                }
                const KernelRun* against = m_.run(spec_.against, run.stride);
                if (against == nullptr || !against->ratio) {
                    continue;
                }
                const bool differs = std::abs(*run.ratio / *against->ratio - 1.0) > spec_.tolerance;
                const bool unnamed = std::find(m_.unnamed_strides.begin(), m_.unnamed_strides.end(),
                                               run.stride) != m_.unnamed_strides.end();
                (unnamed ? unnamed_differs : named_differs) |= differs;
            }
            if (unnamed_differs && !named_differs) {
                return make(Cause::stride_sniffing,
                            "your kernel times like the lesson's probe at the strides you named, "
                            "and not at strides drawn for this grade: " +
                                first_detail(),
                            "use the stride you are given the same way at every stride");
            }
        }
        return make(Cause::timing_out_of_order, first_detail(),
                    as_fix(fill_template(spec_.hint, {})));
    }

    std::optional<Diagnosis> counted_degree() const {
        int counted = 0;
        int without_shared = 0;
        double worst = 0.0;
        bool every_one = true;
        bool model_above_one = false;
        for (const auto& run : m_.runs) {
            if (run.kernel != spec_.kernel || !run.counts) {
                continue;
            }
            const auto load = run.counts->load_degree();
            const auto store = run.counts->store_degree();
            if (!load && !store) {
                ++without_shared;
                continue;
            }
            const double degree = std::max(load.value_or(0.0), store.value_or(0.0));
            const auto model = exercise_.model_degree({run.kernel, run.stride});
            if (!model) {
                continue;
            }
            ++counted;
            worst = std::max(worst, degree);
            every_one = every_one && degree < 1.5;
            model_above_one = model_above_one || *model > 1;
        }
        if (counted == 0 && without_shared > 0) {
            return make(Cause::no_shared_tile, check_.message,
                        as_fix(fill_template(spec_.hint, {})));
        }
        for (const auto& rule : spec_.diagnoses) {
            if (rule.cause && rule_holds(rule, worst, m_.student.static_shared_bytes)) {
                return make(*rule.cause, rule.message);
            }
        }
        const bool timing_only = std::all_of(
            check_.details.begin(), check_.details.end(), [](const std::string& detail) {
                return detail.rfind("does not hold: ", 0) == 0 || detail.rfind("holds: ", 0) == 0 ||
                       detail.rfind("counted by ", 0) == 0 ||
                       detail.rfind("timing not used", 0) == 0;
            });
        if (timing_only && contains(first_detail(), "does not hold: ")) {
            return make(Cause::timing_out_of_order, first_detail(),
                        as_fix(fill_template(spec_.hint, {})));
        }
        if (counted > 0 && every_one && model_above_one && exercise_.has_sweep()) {
            return make(Cause::ignores_stride,
                        "every stride counted 1 wavefront per request: your lanes read the same "
                        "words (a broadcast) or the stride never reaches the index",
                        "index the tile with the stride you are given: lane L reads word L x "
                        "stride + k");
        }
        return make(Cause::wrong_conflict_degree, first_detail(),
                    as_fix(fill_template(spec_.hint, {})));
    }

    const Exercise& exercise_;
    const CheckSpec& spec_;
    const CheckResult& check_;
    const Submission& submission_;
    const Measurements& m_;
};

// Which diagnosis a report comes down to, lowest first: what keeps the kernel from being graded
// at all, the kernel's own faults, then the answers; a check a pass does not require after those
// a pass does.
int rank(const Diagnosis& diagnosis, bool required) {
    int rank = 0;
    switch (area_of(diagnosis.cause)) {
        case CauseArea::machine:
            rank = 0;
            break;
        case CauseArea::folder:
            rank = diagnosis.cause == Cause::missing_answers_file ? 3 : 1;
            break;
        case CauseArea::source:
        case CauseArea::kernel:
            rank = 2;
            break;
        case CauseArea::answers:
            rank = 4;
            break;
    }
    return required ? rank : rank + 10;
}

Cause folder_cause(const Report& report) {
    const FolderProblem::Kind kind = report.folder_problem->kind;
    switch (kind) {
        case FolderProblem::Kind::empty:
            return Cause::empty_folder;
        case FolderProblem::Kind::one_folder_down:
            return Cause::files_one_folder_down;
        case FolderProblem::Kind::other_exercise:
            return Cause::other_exercise;
        case FolderProblem::Kind::misnamed_file:
            return Cause::misnamed_file;
    }
    return Cause::missing_files;
}

}  // namespace

std::string shown_location(const SourceLocation& location) {
    if (location.file.empty()) {
        return {};
    }
    std::string text = std::filesystem::path(location.file).filename().string();
    if (location.line > 0) {
        text += ":" + std::to_string(location.line);
        if (location.column > 0) {
            text += ":" + std::to_string(location.column);
        }
    }
    return text;
}

std::optional<Diagnosis> diagnose_check(const Exercise& exercise, const CheckSpec& spec,
                                        const CheckResult& check, const Submission& submission,
                                        const Measurements& m) {
    // A check that passed has no cause, even where a policy held back its points (the untouched
    // kit's kernel); one that did not run is the stop's or the machine's to explain.
    if (check.status != CheckStatus::failed) {
        return std::nullopt;
    }
    std::optional<Diagnosis> diagnosis = Diagnoser(exercise, spec, check, submission, m).diagnose();
    if (diagnosis) {
        diagnosis->check = check.id;
    }
    return diagnosis;
}

std::optional<Diagnosis> diagnose_report(const Exercise& exercise, const Report& report) {
    if (report.verdict == Verdict::ungradable) {
        // The machine's cause was set where it was known (evaluate); it stays.
        return report.diagnosis && area_of(report.diagnosis->cause) == CauseArea::machine
                   ? report.diagnosis
                   : std::optional<Diagnosis>(make(Cause::machine_fault, report.summary));
    }
    if (report.folder_problem) {
        return make(folder_cause(report), report.folder_problem->message);
    }
    if (report.missing_files.size() > 1) {
        return make(Cause::missing_files,
                    "the folder holds neither " + report.missing_files[0] + " nor " +
                        report.missing_files[1],
                    "hand in both, starting from the starter kit's");
    }
    std::optional<Diagnosis> best;
    int best_rank = 0;
    const auto consider = [&](const Diagnosis& diagnosis, bool required) {
        const int candidate = rank(diagnosis, required);
        if (!best || candidate < best_rank) {
            best = diagnosis;
            best_rank = candidate;
        }
    };
    const std::optional<Interruption>& stop = report.interruption;
    if (stop && stop->students_fault) {
        // The kernel stopped: the cause of every check that could not finish after it.
        consider(stop_diagnosis(*stop, exercise.submission_source), true);
    }
    for (const CheckResult& check : report.checks) {
        if (check.diagnosis) {
            consider(*check.diagnosis, check.required);
        }
    }
    return best;
}

}  // namespace grader
