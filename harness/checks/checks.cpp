#include "checks/checks.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "checks/grading.hpp"
#include "common/kernel_ids.hpp"
#include "common/text.hpp"
#include "model/finding.hpp"
#include "model/observations.hpp"
#include "report/describe.hpp"
#include "report/diagnosis_text.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace {

const std::string kStudent(kStudentKernel);

void insert_unique(std::vector<int>& strides, int stride) {
    if (stride > 0 && std::find(strides.begin(), strides.end(), stride) == strides.end()) {
        strides.push_back(stride);
    }
}

// Why the machine cannot grade, if it cannot: never the student's fault.
std::optional<std::string> ungradable_reason(const Measurements& m) {
    if (m.interruption && !m.interruption->students_fault) {
        return m.interruption->message;
    }
    for (const auto& [id, outcome] : m.references) {
        if (outcome.attempted && !outcome.ok) {
            return "the exercise's kernel '" + id +
                   "' did not compile on this machine: " + outcome.log;
        }
    }
    return std::nullopt;
}

}  // namespace

RatioLookup measured_ratios(const Exercise& exercise, const Measurements& m) {
    return [&exercise, &m](const Case& c) -> std::optional<double> {
        const bool base = exercise.has_sweep() ? c.stride == exercise.ratios.to_stride
                                               : c.kernel == exercise.ratios.to_kernel;
        const KernelRun* run = m.run(c.kernel, c.stride);
        if (base) {
            return run && run->timing ? std::optional<double>(1.0) : std::nullopt;
        }
        return run ? run->ratio : std::nullopt;
    };
}

std::vector<std::string> calibration_failures(const Exercise& exercise, const Measurements& m) {
    std::vector<std::string> failures;
    const RatioLookup ratio_of = measured_ratios(exercise, m);
    for (const auto& rule : exercise.calibration) {
        const RuleOutcome outcome = evaluate_rule(exercise, rule, ratio_of);
        if (outcome.evaluated && !outcome.passed) {
            failures.push_back(outcome.detail);
        }
    }
    return failures;
}

std::vector<int> student_strides_to_run(const Exercise& exercise,
                                        const std::vector<int>& unnamed_strides) {
    std::vector<int> strides;
    if (!exercise.has_sweep()) {
        return strides;
    }
    insert_unique(strides, exercise.ratios.to_stride);
    for (const int s : exercise.student_strides) {
        insert_unique(strides, s);
    }
    for (const auto& spec : exercise.checks) {
        for (const auto& rule : spec.rules) {
            for (const Case* c : {&rule.subject, &rule.near, &rule.far, &rule.than}) {
                if (c->kernel == kStudent) {
                    insert_unique(strides, c->stride);
                }
            }
        }
    }
    for (const int s : unnamed_strides) {
        insert_unique(strides, s);
    }
    std::sort(strides.begin(), strides.end());
    return strides;
}

std::vector<int> reference_strides_to_run(const Exercise& exercise,
                                          const std::vector<int>& unnamed_strides) {
    std::vector<int> strides = student_strides_to_run(exercise, unnamed_strides);
    for (const int s : exercise.reference_strides) {
        insert_unique(strides, s);
    }
    for (const auto& rule : exercise.calibration) {
        for (const Case* c : {&rule.subject, &rule.near, &rule.far, &rule.than}) {
            insert_unique(strides, c->stride);
        }
    }
    std::sort(strides.begin(), strides.end());
    return strides;
}

std::vector<int> draw_unnamed_strides(const Exercise& exercise, std::uint64_t seed) {
    std::vector<int> pool;
    for (const int s : exercise.unnamed_stride_pool) {
        const bool named =
            std::find(exercise.student_strides.begin(), exercise.student_strides.end(), s) !=
            exercise.student_strides.end();
        if (!named && s != exercise.ratios.to_stride) {
            pool.push_back(s);
        }
    }
    std::mt19937_64 rng(seed);
    std::shuffle(pool.begin(), pool.end(), rng);
    const auto count = std::min<std::size_t>(
        pool.size(), static_cast<std::size_t>(std::max(exercise.unnamed_strides_per_grade, 0)));
    // At least one drawn stride shares a factor with the banks (degree above 1), where the pool
    // has one: with only odd strides drawn, a kernel honest at the named strides and running
    // stride 1 elsewhere would see degree 1 where every check expects 1.
    const auto conflicted = [&](int s) { return std::gcd(s, exercise.banks) > 1; };
    if (count > 0 &&
        std::none_of(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(count), conflicted)) {
        const auto first = std::find_if(pool.begin(), pool.end(), conflicted);
        if (first != pool.end()) {
            std::rotate(pool.begin(), first, first + 1);
        }
    }
    std::vector<int> drawn(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(count));
    std::sort(drawn.begin(), drawn.end());
    return drawn;
}

namespace {

// The exercise's points policy: while the answers file holds none of the student's answers (it
// is missing, or every value is still the starter kit's blank), the kernel's checks earn only the
// exercise's share of their points, so the untouched starter kit (whose kernel is the lesson's)
// takes neither a pass nor most of the points. A slip in answers the student did write (a blank
// sentence, a misspelt key, a value that is no number) costs the answers' own points, never the
// kernel's.
void apply_points_policy(const Exercise& exercise, const Submission& submission, Report& report) {
    const double share = exercise.kernel_points_without_answers;
    if (share >= 1.0 || report.checks.size() != exercise.checks.size()) {
        return;  // the report's checks are the exercise's, in its order
    }
    if (submission.answers_given > 0 || submission.unreadable) {
        return;
    }
    CheckResult* answers = nullptr;
    for (std::size_t i = 0; i < report.checks.size(); ++i) {
        if (exercise.checks[i].kind == CheckKind::answers_file) {
            answers = &report.checks[i];
        }
    }
    if (answers == nullptr || answers->status != CheckStatus::failed) {
        return;
    }
    double before = 0.0;
    double after = 0.0;
    for (std::size_t i = 0; i < report.checks.size(); ++i) {
        CheckResult& check = report.checks[i];
        const CheckKind kind = exercise.checks[i].kind;
        const bool kernel = kind == CheckKind::compile_abi || kind == CheckKind::output ||
                            kind == CheckKind::ordering || kind == CheckKind::consistency ||
                            kind == CheckKind::counted_degree;
        if (kernel && check.points > 0.0) {
            before += check.points;
            check.points *= share;
            after += check.points;
        }
    }
    if (before > 0.0) {
        Finding held_back;
        held_back.kind = FindingKind::points_held_back;
        held_back.values = {share, after, before};
        held_back.names = {exercise.submission_answers};
        answers->findings.push_back(std::move(held_back));
        collapse_details(*answers, wording(exercise));
    }
}

// Whether the exercise's counted degree is its loads' alone (its counted_degree check says so):
// the tables' counted degree is then the loads', as the check judges it.
bool counts_loads_only(const Exercise& exercise) {
    return std::any_of(exercise.checks.begin(), exercise.checks.end(), [](const CheckSpec& spec) {
        return spec.kind == CheckKind::counted_degree &&
               spec.accesses == CheckSpec::Accesses::loads;
    });
}

// Why the machine could not grade, as a cause: no GPU, a GPU that does not show the model with
// the exercise's own kernels (calibration), or a fault of the grader, the device or the exercise.
Diagnosis machine_diagnosis(const Measurements& m, const std::string& reason, bool uncalibrated) {
    Diagnosis diagnosis;
    diagnosis.what = reason;
    if (uncalibrated) {
        diagnosis.cause = Cause::machine_unfit;
    } else if ((m.interruption && m.interruption->kind == StopKind::no_gpu) ||
               (!m.environment.gpu_available && m.environment.backend == "cuda")) {
        diagnosis.cause = Cause::no_gpu;
    } else {
        diagnosis.cause = Cause::machine_fault;
    }
    diagnosis.fix = diagnosis_fix(diagnosis.cause, DiagnosisFacts{});
    return diagnosis;
}

// The report's row of one run: what the exercise, the student's answers and the measurements say
// of that kernel at that stride.
ReportRow report_row(const Exercise& exercise, const Submission& submission, const Measurements& m,
                     const KernelRun& run, const CheckSpec* consistency) {
    ReportRow row;
    row.kernel = run.kernel;
    row.label = exercise.kernel(run.kernel).label;
    row.stride = run.stride;
    row.degree = exercise.model_degree(Case{run.kernel, run.stride}).value_or(0);
    row.named = std::find(exercise.student_strides.begin(), exercise.student_strides.end(),
                          run.stride) != exercise.student_strides.end();
    row.unnamed = std::find(m.unnamed_strides.begin(), m.unnamed_strides.end(), run.stride) !=
                  m.unnamed_strides.end();
    if (const SubmissionRow* answer = submission.row(Case{run.kernel, run.stride})) {
        row.predicted_degree = answer->predicted_degree;
        if (answer->measured) {
            row.claimed_ratio =
                exercise.ratios.as_percent ? *answer->measured / 100.0 : *answer->measured;
        }
    }
    const RatioLookup ratio_of = measured_ratios(exercise, m);
    if (run.kernel == kStudent && consistency != nullptr) {
        row.reference_ratio = ratio_of(Case{consistency->against, run.stride});
    }
    row.timing = run.timing;
    row.ratio = ratio_of(Case{run.kernel, run.stride});
    row.ratio_min = run.ratio_min;
    row.ratio_max = run.ratio_max;
    if (run.counts) {
        row.counted_degree =
            judged_degree(run, m.environment.grid_blocks, counts_loads_only(exercise)).degree;
        row.counted_load_degree = run.counts->load_degree();
        row.counted_store_degree = run.counts->store_degree();
        row.count_source = run.count_source;
        row.global_load_sectors_per_request = run.counts->global_load_sectors_per_request();
        row.global_store_sectors_per_request = run.counts->global_store_sectors_per_request();
        if (run.kernel == kStudent) {
            row.shared_lines = run.witness ? run.witness->lines : run.counts->lines;
        }
    }
    row.outputs = run.outputs;
    if (run.timing && !run.timing->modeled && run.timing->median_ms > 0 &&
        exercise.buffers.bytes_per_launch > 0) {
        row.gigabytes_per_second =
            static_cast<double>(exercise.buffers.bytes_per_launch) / run.timing->median_ms / 1e6;
    }
    return row;
}

// The verdict: a failed required check fails the work whatever stopped the machine, since the
// failure stands wherever the work runs; otherwise the machine's fault (an interruption that is
// not the student's, a reference that did not compile, uncalibrated timing behind a required
// check) makes the grade ungradable.
void decide_verdict(const Exercise& exercise, const Measurements& m, Report& report) {
    const auto first_failure = std::find_if(
        report.checks.begin(), report.checks.end(),
        [](const CheckResult& c) { return c.required && c.status == CheckStatus::failed; });
    const auto first_not_run = std::find_if(
        report.checks.begin(), report.checks.end(),
        [](const CheckResult& c) { return c.required && c.status == CheckStatus::not_run; });
    std::optional<std::string> ungradable = ungradable_reason(m);
    const bool students_stop = m.interruption && m.interruption->students_fault;
    if (!ungradable && !students_stop && first_not_run != report.checks.end()) {
        ungradable = first_not_run->title +
                     " could not be checked on this machine: " + first_not_run->not_run_reason +
                     ".";
    }
    if (first_failure != report.checks.end()) {
        report.verdict = Verdict::fail;
        report.summary = "fail: " + first_failure->title + ": " +
                         (first_failure->details.empty() ? first_failure->message
                                                         : first_failure->details.front());
    } else if (ungradable) {
        report.verdict = Verdict::ungradable;
        report.summary = "ungradable: " + *ungradable;
        const std::vector<std::string> calibration = calibration_failures(exercise, m);
        for (const auto& detail : calibration) {
            report.summary += "; " + detail;
        }
        report.diagnosis = machine_diagnosis(m, *ungradable, !calibration.empty());
    } else {
        report.verdict = Verdict::pass;
        report.summary = "pass: every check passed";
    }
}

}  // namespace

Report evaluate(const Exercise& exercise, const Submission& submission, const Measurements& m,
                const std::string& submission_label) {
    Report report;
    report.exercise_id = exercise.id;
    report.exercise_title = exercise.title;
    report.submission = submission_label;
    report.student_id = submission.student_id;
    report.claimed_gpu = submission.gpu_name;
    report.sentence = submission.sentence;
    report.environment = m.environment;
    report.seed = m.seed;
    report.timing_rounds = m.timing_rounds;
    report.wall_seconds = m.wall_seconds;
    report.compile_log = m.student.log;
    // NVRTC ran and refused the kernel (a typo, an undefined name): a platform may treat this
    // attempt apart (PrairieLearn's compile_error_gradable). A source refused before compiling
    // (a forbidden #include) is a rule broken, not a compile error, and stays a grade.
    report.compile_error =
        m.student.attempted && !m.student.ok && m.student.vetting_problems.empty();
    report.kernel_output = m.worker_output;
    report.interruption = m.interruption;
    report.stage_seconds = m.stage_seconds;
    report.ratio_base = exercise.has_sweep() ? "stride " + std::to_string(exercise.ratios.to_stride)
                                             : exercise.kernel(exercise.ratios.to_kernel).label;
    report.ratio_as_percent = exercise.ratios.as_percent;
    report.banks = exercise.banks;
    if (m.context_seconds > 0) {
        report.stage_seconds["context creation (beside the compile)"] = m.context_seconds;
    }

    report.checks = grade_checks(exercise, submission, m);

    const CheckSpec* consistency = nullptr;
    for (const auto& spec : exercise.checks) {
        if (spec.kind == CheckKind::consistency) {
            consistency = &spec;
        }
    }
    if (consistency != nullptr) {
        report.reference_kernel = consistency->against;
    } else if (const KernelSpec* oracle = exercise.oracle()) {
        report.reference_kernel = oracle->id;
    }
    for (const auto& run : m.runs) {
        report.rows.push_back(report_row(exercise, submission, m, run, consistency));
    }
    std::stable_sort(report.rows.begin(), report.rows.end(), [](const auto& a, const auto& b) {
        return std::make_pair(a.kernel != kStudent, a.stride) <
               std::make_pair(b.kernel != kStudent, b.stride);
    });

    apply_points_policy(exercise, submission, report);
    for (const auto& check : report.checks) {
        report.score += check.points;
        report.max_score += check.max_points;
    }

    decide_verdict(exercise, m, report);
    diagnose(exercise, report);
    if (report.verdict == Verdict::pass && !report.diagnosis && !submission.notes.empty()) {
        // Read as the student meant it: say so where they look first.
        const SubmissionProblem& note = submission.notes.front();
        report.summary +=
            "; note: " + std::filesystem::path(note.location.file).filename().string() + ":" +
            std::to_string(note.location.line) + ": " + note.message;
    }
    return report;
}

void diagnose(const Exercise& exercise, Report& report) {
    report.diagnosis = diagnose_report(exercise, report);
    if (!report.diagnosis) {
        return;
    }
    // The summary's reason is the diagnosis: the root cause and its fix, not the first symptom.
    // A folder's own message says both already ("the folder is empty: hand in ...").
    if (report.verdict == Verdict::fail && report.folder_problem) {
        report.summary = "fail: " + report.folder_problem->message;
    } else if (report.verdict == Verdict::fail) {
        report.summary = "fail: " + to_line(*report.diagnosis);
    } else if (report.verdict == Verdict::pass) {
        // A pass that lost points (a wrong prediction), or that has a check to see to all the
        // same (no sentence, worth none): what, and where.
        report.summary = "pass, with one thing to fix: " + to_line(*report.diagnosis);
    }
}

Sweep summarize_sweep(const Exercise& exercise, const Measurements& m) {
    Sweep sweep;
    sweep.environment = m.environment;
    sweep.ratio_base = exercise.has_sweep() ? "stride " + std::to_string(exercise.ratios.to_stride)
                                            : exercise.kernel(exercise.ratios.to_kernel).label;
    sweep.ratio_as_percent = exercise.ratios.as_percent;
    sweep.input_words = exercise.buffers.input_words;
    sweep.timing_rounds = m.timing_rounds;
    sweep.timing_seconds = m.timing_seconds;
    sweep.seed = m.seed;
    sweep.interruption = m.interruption;
    const RatioLookup ratio_of = measured_ratios(exercise, m);
    for (const auto& run : m.runs) {
        SweepRow row;
        row.kernel = run.kernel;
        row.label = exercise.kernel(run.kernel).label;
        row.stride = run.stride;
        row.degree = exercise.model_degree(Case{run.kernel, run.stride}).value_or(0);
        row.timing = run.timing;
        row.ratio = ratio_of(Case{run.kernel, run.stride});
        if (run.counts) {
            row.counted_degree =
                judged_degree(run, m.environment.grid_blocks, counts_loads_only(exercise)).degree;
        }
        sweep.rows.push_back(row);
    }
    for (const auto& rule : exercise.calibration) {
        const RuleOutcome outcome = evaluate_rule(exercise, rule, ratio_of);
        sweep.calibration.push_back({rule.description, outcome.evaluated,
                                     outcome.evaluated && outcome.passed, outcome.detail});
    }
    return sweep;
}

int exit_code(Verdict verdict) {
    switch (verdict) {
        case Verdict::pass:
            return 0;
        case Verdict::fail:
            return 1;
        case Verdict::ungradable:
            return 3;
    }
    return 4;
}

}  // namespace grader
