// The diagnosis: each failing check's root cause, from what the grade observed rather than from
// the check's words, and the one a report comes down to.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "checks/checks.hpp"
#include "common/kernel_ids.hpp"
#include "common/text.hpp"
#include "compile/nvrtc_log.hpp"
#include "exercise/exercise.hpp"
#include "model/diagnosis.hpp"
#include "model/finding.hpp"
#include "model/measurements.hpp"
#include "model/observations.hpp"
#include "model/report.hpp"
#include "report/describe.hpp"
#include "report/diagnosis_text.hpp"
#include "report/findings_text.hpp"

namespace grader {
namespace {

const std::string kStudent(kStudentKernel);

Diagnosis make(Cause cause, std::string what, std::string fix = {}, std::string where = {},
               std::vector<Finding> evidence = {}) {
    Diagnosis diagnosis;
    diagnosis.cause = cause;
    diagnosis.what = std::move(what);
    diagnosis.fix = std::move(fix);
    diagnosis.where = std::move(where);
    diagnosis.evidence = std::move(evidence);
    return diagnosis;
}

// The first of the findings of a kind, or nullptr.
const Finding* first_of(const std::vector<Finding>& findings, FindingKind kind) {
    const auto found = std::find_if(findings.begin(), findings.end(),
                                    [kind](const Finding& f) { return f.kind == kind; });
    return found == findings.end() ? nullptr : &*found;
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

// The cause of NVRTC's error, by the kind the compile step read.
Cause compile_cause(CompileLogError::Kind kind) {
    switch (kind) {
        case CompileLogError::Kind::syntax:
            return Cause::compile_syntax_error;
        case CompileLogError::Kind::undefined_name:
            return Cause::compile_undefined_name;
        case CompileLogError::Kind::type:
            return Cause::compile_type_error;
        case CompileLogError::Kind::other:
            break;
    }
    return Cause::compile_error;
}

// The conditions of an exercise's diagnosis rule, over what was counted.
bool rule_holds(const DiagnosisRule& rule, double worst_degree, int static_shared_bytes) {
    return (!rule.counted_degree_at_least || worst_degree >= *rule.counted_degree_at_least) &&
           (!rule.static_shared_bytes_above ||
            static_shared_bytes > *rule.static_shared_bytes_above);
}

// A kernel's stop as a diagnosis: its cause, the place in the source where it stopped (where
// the device says: the simulator), and what to do where that is plain (an access outside its
// buffer, a loop that never ends).
Diagnosis stop_diagnosis(const Interruption& stop, const Finding* at) {
    const Cause cause = cause_of(stop.kind);
    const std::string where =
        at != nullptr && !at->lines.empty() ? place_text(at->lines.front()) : std::string();
    const std::string kind = at != nullptr && !at->names.empty() ? at->names.front() : "";
    DiagnosisFacts facts;
    facts.where = where;
    facts.outside_buffer = kind == "out_of_bounds";
    const std::string fix = diagnosis_fix(cause, facts);
    return make(cause,
                (stop.stage.empty() ? std::string() : "at " + stop.stage + ": ") + stop.message,
                fix, where, at != nullptr ? std::vector<Finding>{*at} : std::vector<Finding>{});
}

// The stop's finding among a report's checks' (the output check carries it), or nullptr.
const Finding* stop_finding(const std::vector<CheckResult>& checks) {
    for (const CheckResult& check : checks) {
        if (const Finding* stopped = first_of(check.findings, FindingKind::kernel_stopped)) {
            return stopped;
        }
    }
    return nullptr;
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
                return make(Cause::blank_sentence, diagnosis_lead(Cause::blank_sentence, facts()),
                            as_fix(exercise_.sentence_prompt));
        }
        return std::nullopt;
    }

private:
    // The check's first finding that fails it, in words, or its message.
    std::string first_detail() const {
        for (const Finding& f : check_.findings) {
            if (fails(f)) {
                return finding_line(f, wording(exercise_));
            }
        }
        return check_.details.empty() ? check_.message : check_.details.front();
    }

    const Finding* first_failing() const {
        for (const Finding& f : check_.findings) {
            if (fails(f)) {
                return &f;
            }
        }
        return nullptr;
    }

    std::optional<Diagnosis> answers_file() const {
        if (submission_.missing) {
            return make(Cause::missing_answers_file,
                        diagnosis_lead(Cause::missing_answers_file, facts()),
                        diagnosis_fix(Cause::missing_answers_file, facts()));
        }
        const auto is_blank = [](const SubmissionProblem& problem) {
            return problem.kind == FindingKind::answer_blank ||
                   problem.kind == FindingKind::answer_placeholder;
        };
        const auto blank =
            std::find_if(submission_.problems.begin(), submission_.problems.end(), is_blank);
        if (blank != submission_.problems.end()) {
            const auto blanks =
                std::count_if(submission_.problems.begin(), submission_.problems.end(), is_blank);
            const Finding* said = first_blank_finding();
            if (blanks == 1) {
                // The finding's words lead with the place; the diagnosis names it as where.
                return make(Cause::blank_answers, said != nullptr ? text(*said) : blank->field, {},
                            shown_location(blank->location),
                            said != nullptr ? std::vector<Finding>{*said} : std::vector<Finding>{});
            }
            DiagnosisFacts many = facts();
            many.blanks = static_cast<long>(blanks);
            many.field = blank->field;
            many.where = shown_location(blank->location);
            return make(Cause::blank_answers, diagnosis_lead(Cause::blank_answers, many),
                        diagnosis_fix(Cause::blank_answers, many), many.where,
                        said != nullptr ? std::vector<Finding>{*said} : std::vector<Finding>{});
        }
        if (submission_.problems.empty()) {
            return std::nullopt;
        }
        const SubmissionProblem& first = submission_.problems.front();
        // A file that could not be read at all (line 0) is started again from the kit's.
        return make(Cause::malformed_answers,
                    (first.field.empty() ? "" : first.field + ": ") + first.message,
                    first.location.line == 0 ? diagnosis_fix(Cause::malformed_answers, facts())
                                             : std::string(),
                    shown_location(first.location));
    }

    const Finding* first_blank_finding() const {
        for (const Finding& f : check_.findings) {
            if (f.kind == FindingKind::answer_blank || f.kind == FindingKind::answer_placeholder) {
                return &f;
            }
        }
        return nullptr;
    }

    std::string text(const Finding& f) const { return finding_text(f, wording(exercise_)); }

    // What the words of a cause need from the exercise: its files' names.
    DiagnosisFacts facts() const {
        DiagnosisFacts facts;
        facts.kernel_file = exercise_.submission_source;
        facts.answers_file = exercise_.submission_answers;
        return facts;
    }

    std::optional<Diagnosis> compile_abi() const {
        const CompileOutcome& c = m_.student;
        if (!c.attempted && c.vetting_problems.empty()) {
            if (c.source_missing) {
                return make(Cause::missing_kernel_file,
                            diagnosis_lead(Cause::missing_kernel_file, facts()),
                            diagnosis_fix(Cause::missing_kernel_file, facts()));
            }
            return make(Cause::forbidden_source, c.log);
        }
        if (!c.vetting_problems.empty()) {
            const SourceProblem& first = c.vetting_problems.front();
            return make(Cause::forbidden_source, first.message, {},
                        shown_location({exercise_.submission_source, first.line, first.column}));
        }
        if (c.attempted && !c.ok) {
            const std::vector<CompileLogError> errors = compile_log_errors(c.log, 1);
            const std::string error = errors.empty() ? std::string() : errors.front().line;
            const std::string place =
                errors.empty() || errors.front().line_number <= 0
                    ? std::string()
                    : place_text({errors.front().file, errors.front().line_number,
                                  errors.front().column, 0});
            const Cause cause =
                errors.empty() ? Cause::compile_error : compile_cause(errors.front().kind);
            DiagnosisFacts at = facts();
            at.where = place;
            const std::string fix = diagnosis_fix(cause, at);
            return make(
                cause,
                diagnosis_lead(cause, facts()) + ": " + (error.empty() ? first_detail() : error),
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
        return stop_diagnosis(*m_.interruption,
                              first_of(check_.findings, FindingKind::kernel_stopped));
    }

    std::optional<Diagnosis> output() const {
        if (stopped_by_kernel()) {
            // A read that did not wait for the fill can be why the kernel stopped: the simulator
            // faults at a wild offset where a GPU reads stale words. The barrier is the cause.
            if (auto barrier = missing_barrier()) {
                return barrier;
            }
            return stop();
        }
        std::vector<const KernelRun*> runs;
        for (const auto& run : m_.runs) {
            if (run.kernel == kStudent) {
                runs.push_back(&run);
            }
        }
        // A race first: it is why the values came out wrong, or may on another GPU.
        if (auto barrier = missing_barrier()) {
            return barrier;
        }
        if (const Finding* race =
                first_of(check_.findings, FindingKind::race_one_store_two_values)) {
            return make(Cause::shared_write_race, text(*race),
                        diagnosis_fix(Cause::shared_write_race, facts()), {}, {*race});
        }
        if (const Finding* read = first_of(check_.findings, FindingKind::unwritten_shared_read)) {
            return make(Cause::unwritten_tile, finding_line(*read, wording(exercise_)),
                        diagnosis_fix(Cause::unwritten_tile, facts()), {}, {*read});
        }
        // A tile filled and never read: its sums are of values the kernel made itself.
        if (never_reads_tile(runs, true)) {
            return tile_never_read(runs, true);
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

    // The missing barrier the check's findings show: a race that can change a value, between two
    // places, or a read before the fill wrote it with no barrier completed; nullopt where none.
    std::optional<Diagnosis> missing_barrier() const {
        for (const Finding& finding : check_.findings) {
            if (!fails(finding) || barrier_between(finding).empty()) {
                continue;
            }
            const std::vector<FindingPlace> places = barrier_between(finding);
            std::string what = missing_barrier_text(finding);
            const Finding* stopped = first_of(check_.findings, FindingKind::kernel_stopped);
            std::vector<Finding> evidence{finding};
            if (stopped != nullptr) {
                // The stop is the consequence: on the simulator the read took leftover bits.
                what += "; then " + text(*stopped);
                evidence.push_back(*stopped);
            }
            return make(Cause::missing_barrier, what, barrier_fix(finding),
                        place_text(places.back()), evidence);
        }
        return std::nullopt;
    }

    // Whether the student's kernel made no shared load at any stride counted (and, where
    // `stores`, stored to shared memory all the same).
    bool never_reads_tile(const std::vector<const KernelRun*>& runs, bool stores) const {
        int counted = 0;
        for (const KernelRun* run : runs) {
            const SharedAccessCounts* counts = run->counts    ? &*run->counts
                                               : run->witness ? &*run->witness
                                                              : nullptr;
            if (counts == nullptr) {
                continue;
            }
            if (counts->load_requests > 0 || (stores && counts->store_requests == 0)) {
                return false;
            }
            ++counted;
        }
        return counted > 0;
    }

    Diagnosis tile_never_read(const std::vector<const KernelRun*>& runs, bool stores) const {
        Finding unread;
        unread.kind = FindingKind::tile_never_read;
        unread.count = stores ? 1 : 0;
        for (const KernelRun* run : runs) {
            unread.strides.push_back(run->stride);
        }
        return make(Cause::tile_never_read, text(unread),
                    diagnosis_fix(Cause::tile_never_read, facts()), {}, {unread});
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

    std::vector<const KernelRun*> student_runs() const {
        std::vector<const KernelRun*> runs;
        for (const auto& run : m_.runs) {
            if (run.kernel == kStudent) {
                runs.push_back(&run);
            }
        }
        return runs;
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
                DiagnosisFacts edge = facts();
                edge.matrix = true;
                edge.last_column = result.first_bad_column + 1 == layout.columns;
                return make(Cause::off_by_one_guard,
                            diagnosis_lead(Cause::off_by_one_guard, edge) + ": " + symptom,
                            diagnosis_fix(Cause::off_by_one_guard, edge));
            }
            const std::uint64_t threads =
                std::uint64_t{m_.environment.grid_blocks} * m_.environment.block_size;
            if (!result.matrix && threads > 0 &&
                *result.first_bad + result.bad_elements == threads) {
                DiagnosisFacts last = facts();
                last.threads = result.bad_elements;
                return make(Cause::off_by_one_guard,
                            diagnosis_lead(Cause::off_by_one_guard, last) + ": " + symptom,
                            diagnosis_fix(Cause::off_by_one_guard, last));
            }
        }
        const InputSpec* spec = input(result.input);
        if (spec != nullptr && spec->poison_shared && std::isnan(result.first_bad_value) &&
            result.first_bad_wrote_nan) {
            // Shared memory held NaN before this input's runs: a NaN sum read a tile word no
            // thread had written yet (never, or not before the read: a missing barrier on a GPU).
            return make(Cause::unwritten_tile,
                        diagnosis_lead(Cause::unwritten_tile, facts()) + ": " + symptom,
                        diagnosis_fix(Cause::unwritten_tile, facts()));
        }
        const double value = result.first_bad_value;
        const double expected = result.first_bad_expected;
        if (spec != nullptr && spec->fill == InputSpec::Fill::constant && std::isfinite(value) &&
            std::isfinite(expected) && value >= 0.0 && value < expected &&
            value == std::floor(value) && spec->value == 1.0) {
            if (never_reads_tile(student_runs(), false)) {
                // Not a count of reads: no read of the tile was made.
                return tile_never_read(student_runs(), false);
            }
            return make(Cause::skipped_reads,
                        diagnosis_lead(Cause::skipped_reads, facts()) + ", and " + symptom +
                            ": it made " + describe_value(value) + " of its " +
                            describe_value(expected) + " reads",
                        diagnosis_fix(Cause::skipped_reads, facts()));
        }
        return make(Cause::wrong_output, symptom);
    }

    std::optional<Diagnosis> predicted() const {
        if (const Finding* wrong = first_of(check_.findings, FindingKind::prediction_wrong)) {
            return make(
                Cause::wrong_prediction, text(*wrong), as_fix(fill_template(spec_.hint, {})),
                wrong->lines.empty() ? std::string() : place_text(wrong->lines.front()), {*wrong});
        }
        return make(Cause::blank_answers, first_detail());
    }

    std::optional<Diagnosis> measured() const {
        if (const Finding* odd = first_of(check_.findings, FindingKind::measurement_implausible)) {
            // "submission.yaml:17:57": the line that points.
            return make(Cause::implausible_measurement, text(*odd), {},
                        odd->lines.empty() ? std::string() : place_text(odd->lines.front()),
                        {*odd});
        }
        const Finding* missing = first_of(check_.findings, FindingKind::measurement_missing);
        if (missing == nullptr) {
            const Finding* untimed = first_of(check_.findings, FindingKind::rule_not_timed);
            missing = untimed != nullptr && untimed->count == 1 ? untimed : nullptr;
        }
        if (missing != nullptr) {
            return make(Cause::blank_answers, text(*missing), {}, {}, {*missing});
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
                        diagnosis_lead(Cause::ignores_stride, facts()) + ": " + first_detail(),
                        diagnosis_fix(Cause::ignores_stride, facts()));
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
                            diagnosis_lead(Cause::stride_sniffing, facts()) + ": " + first_detail(),
                            diagnosis_fix(Cause::stride_sniffing, facts()));
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
        if (const Finding* unread = first_of(check_.findings, FindingKind::tile_never_read)) {
            return make(Cause::tile_never_read, text(*unread),
                        diagnosis_fix(Cause::tile_never_read, facts()), {}, {*unread});
        }
        const Finding* off = first_of(check_.findings, FindingKind::degree_off_model);
        if (off != nullptr) {
            for (const auto& rule : spec_.diagnoses) {
                if (rule.cause && rule_holds(rule, worst, m_.student.static_shared_bytes)) {
                    return make(*rule.cause, rule.message, {}, {}, {*off});
                }
            }
            if (const Finding* span = first_of(check_.findings, FindingKind::warp_spans_rows)) {
                // The exercise's hint (make the row coprime with 32) does not apply: it is.
                return make(Cause::warp_spans_rows, text(*span),
                            diagnosis_fix(Cause::warp_spans_rows, facts()),
                            span->counts
                                ? describe_line_place(span->counts->file, span->counts->line)
                                : std::string(),
                            {*span});
            }
        } else if (const Finding* rule = first_failing()) {
            // The counts are the model's; only the time failed its rule. Name what the time
            // pays for where the counts show it (an output written down its columns).
            const Finding* strided = first_of(check_.findings, FindingKind::strided_global_stores);
            std::vector<Finding> evidence{*rule};
            std::string what = finding_line(*rule, wording(exercise_));
            if (strided != nullptr) {
                evidence.push_back(*strided);
                what += "; " + text(*strided);
            }
            return make(Cause::timing_out_of_order, what,
                        strided != nullptr ? diagnosis_fix(Cause::timing_out_of_order, facts())
                                           : as_fix(fill_template(spec_.hint, {})),
                        {}, evidence);
        }
        if (counted > 0 && every_one && model_above_one && exercise_.has_sweep()) {
            DiagnosisFacts counted_one = facts();
            counted_one.counted_one = true;
            return make(Cause::ignores_stride, diagnosis_lead(Cause::ignores_stride, counted_one),
                        diagnosis_fix(Cause::ignores_stride, counted_one));
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

std::optional<Diagnosis> diagnose_report(const Exercise& /*exercise*/, const Report& report) {
    if (report.verdict == Verdict::ungradable) {
        // The machine's cause was set where it was known (evaluate); it stays.
        return report.diagnosis && area_of(report.diagnosis->cause) == CauseArea::machine
                   ? report.diagnosis
                   : std::optional<Diagnosis>(make(Cause::machine_fault, report.summary));
    }
    if (report.folder_problem) {
        return make(cause_of(report.folder_problem->kind), report.folder_problem->message);
    }
    if (report.missing_files.size() > 1) {
        DiagnosisFacts both;
        both.kernel_file = report.missing_files[0];
        both.answers_file = report.missing_files[1];
        return make(Cause::missing_files, diagnosis_lead(Cause::missing_files, both),
                    diagnosis_fix(Cause::missing_files, both));
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
    for (const CheckResult& check : report.checks) {
        // A missing barrier the stop followed from outranks the stop: the simulator faulted
        // where a GPU reads stale words.
        if (check.diagnosis && check.diagnosis->cause == Cause::missing_barrier) {
            consider(*check.diagnosis, check.required);
        }
    }
    if (stop && stop->students_fault) {
        // The kernel stopped: the cause of every check that could not finish after it.
        consider(stop_diagnosis(*stop, stop_finding(report.checks)), true);
    }
    for (const CheckResult& check : report.checks) {
        if (check.diagnosis) {
            consider(*check.diagnosis, check.required);
        }
    }
    return best;
}

}  // namespace grader
