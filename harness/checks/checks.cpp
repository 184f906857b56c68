#include "checks/checks.hpp"

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <random>
#include <set>

#include "common/text.hpp"
#include "model/bank_model.hpp"

namespace grader {
namespace {

constexpr const char* kStudent = "student";
constexpr const char* kReference = "reference";

std::string ratio_text(double ratio) { return format_number(ratio, 2) + "x"; }

std::string value_text(double value) {
    if (std::isnan(value)) {
        return "NaN (the output or the tile word was never written)";
    }
    return format_number(value, 4);
}

void insert_sorted_unique(std::vector<int>& strides, int stride) {
    if (std::find(strides.begin(), strides.end(), stride) == strides.end()) {
        strides.push_back(stride);
    }
}

// Why the student's kernel did not run (or not to the end), in a few words.
std::string why_student_not_run(const Measurements& m) {
    if (!m.student.attempted) {
        return m.student.log.empty() ? "the kernel was not compiled" : m.student.log;
    }
    if (!m.student.vetting_problems.empty()) {
        return "the source has a forbidden #include or directive, so it was not compiled";
    }
    if (!m.student.ok) {
        return "the kernel did not compile";
    }
    if (!m.student.abi_problem.empty()) {
        return "the kernel does not have the exercise's ABI";
    }
    if (m.interruption) {
        return m.interruption->kind == "no_gpu" ? "a GPU is needed to run the kernel"
                                                 : m.interruption->message;
    }
    if (!m.environment.gpu_available && m.environment.backend != "sim") {
        return "a GPU is needed to run the kernel";
    }
    return "the kernel was not run";
}

// A check that could not be evaluated: failed, with the reason as its message.
void not_run(CheckResult& check, const std::string& reason) {
    check.status = CheckStatus::not_run;
    check.points = 0.0;
    check.message = "Not run: " + reason + ".";
}

std::string accumulator_detail(int stride, const AccumulatorResult& result, bool hidden) {
    std::string line = "stride " + std::to_string(stride) + ": ";
    if (!result.first_bad_thread) {
        return line + std::to_string(result.bad_threads) + " threads wrong";
    }
    line += "thread " + std::to_string(*result.first_bad_thread) + " (block " +
            std::to_string(result.first_bad_block) + ", thread " +
            std::to_string(result.first_bad_thread_in_block) + ") holds " +
            value_text(result.first_bad_value) + ", expected " +
            value_text(result.first_bad_expected);
    if (hidden) {
        line += " (the sum of the words it should read)";
    }
    line += "; " + std::to_string(result.bad_threads) + " of " + std::to_string(result.threads) +
            " threads wrong";
    return line;
}

// "submission.yaml, line 5, column 60": the file's own name, never the grading machine's path.
std::string where(const SourceLocation& location) {
    std::string text = std::filesystem::path(location.file).filename().string();
    if (location.line > 0) {
        text += ", line " + std::to_string(location.line);
        if (location.column > 0) {
            text += ", column " + std::to_string(location.column);
        }
    }
    return text;
}

// Failing items first, so the summary and a reader's eye land on what went wrong.
void failures_first(std::vector<std::string>& details, const std::string& passing_prefix) {
    std::stable_partition(details.begin(), details.end(), [&](const std::string& d) {
        return d.rfind(passing_prefix, 0) != 0;
    });
}

CheckResult make_check(const Exercise& exercise, const std::string& id) {
    const CheckSpec& spec = exercise.check(id);
    CheckResult check;
    check.id = id;
    check.title = spec.title;
    check.required = spec.required;
    check.review = spec.review;
    check.max_points = spec.points;
    return check;
}

void finish(CheckResult& check, const CheckSpec& spec, bool passed,
            const std::map<std::string, std::string>& values) {
    check.status = passed ? CheckStatus::passed : CheckStatus::failed;
    check.points = passed ? check.max_points : 0.0;
    check.message = fill_template(passed ? spec.pass_message : spec.fail_message, values);
    if (!passed && !spec.hint.empty()) {
        check.message += " " + fill_template(spec.hint, values);
    }
}

CheckResult check_submission_file(const Exercise& exercise, const Submission& submission) {
    CheckResult check = make_check(exercise, "submission_file");
    for (const auto& problem : submission.problems) {
        check.details.push_back(where(problem.location) + ": " +
                                (problem.field.empty() ? "" : problem.field + ": ") +
                                problem.message);
    }
    finish(check, exercise.check(check.id), submission.problems.empty(), {});
    return check;
}

CheckResult check_compile_abi(const Exercise& exercise, const Measurements& m) {
    CheckResult check = make_check(exercise, "compile_abi");
    const CompileOutcome& c = m.student;
    for (const auto& problem : c.vetting_problems) {
        check.details.push_back(exercise.submission_source + ", line " +
                                std::to_string(problem.line) + ": " + problem.message);
    }
    if (!c.attempted && c.vetting_problems.empty()) {
        check.details.push_back(c.log.empty() ? "the kernel was not compiled" : c.log);
    } else if (c.attempted && !c.ok && c.vetting_problems.empty()) {
        // The log's error lines, already free of host paths; the whole log is in the report.
        std::vector<std::string> errors;
        std::size_t start = 0;
        while (start < c.log.size() && errors.size() < 5) {
            const std::size_t end = std::min(c.log.find('\n', start), c.log.size());
            const std::string line = c.log.substr(start, end - start);
            if (line.find("error") != std::string::npos) {
                errors.push_back(line);
            }
            start = end + 1;
        }
        check.details.push_back("NVRTC could not compile " + exercise.submission_source +
                                (errors.empty() ? std::string(" (the log is below)")
                                                : ": " + errors.front()));
        for (std::size_t i = 1; i < errors.size(); ++i) {
            check.details.push_back(errors[i]);
        }
    }
    if (!c.abi_problem.empty()) {
        check.details.push_back(c.abi_problem);
    }
    const bool passed = c.attempted && c.ok && c.vetting_problems.empty() && c.abi_problem.empty();
    finish(check, exercise.check(check.id), passed,
           {{"kernel", exercise.kernel_name},
            {"arch", c.arch},
            {"signature", c.signature.empty() ? exercise.kernel_name : c.signature}});
    if (!c.attempted && c.vetting_problems.empty() && !c.log.empty()) {
        // Nothing reached the compiler: say why first ("probe.cu was not found ...").
        check.message = c.log + ".";
    }
    return check;
}

CheckResult check_accumulators(const Exercise& exercise, const Measurements& m, bool hidden) {
    CheckResult check = make_check(exercise, hidden ? "hidden_input" : "accumulator");
    const double expected =
        static_cast<double>(exercise.tile_value) * static_cast<double>(exercise.reads_per_thread);
    int ran = 0;
    bool all_ok = true;
    for (const auto& run : m.runs) {
        if (run.kernel != kStudent) {
            continue;
        }
        const AccumulatorResult& result = hidden ? run.hidden : run.ones;
        if (!result.ran) {
            continue;
        }
        ++ran;
        if (!result.ok) {
            all_ok = false;
            check.details.push_back(accumulator_detail(run.stride, result, hidden));
            if (!run.note.empty()) {
                check.details.push_back(run.note);
            }
        }
    }
    if (ran == 0) {
        not_run(check, why_student_not_run(m));
        return check;
    }
    if (m.interruption && m.interruption->students_fault) {
        all_ok = false;
        check.details.push_back("stopped: " + m.interruption->message);
    }
    finish(check, exercise.check(check.id), all_ok,
           {{"expected", format_number(expected, 4)}, {"kernel", exercise.kernel_name}});
    return check;
}

CheckResult check_predicted_degrees(const Exercise& exercise, const Submission& submission) {
    CheckResult check = make_check(exercise, "predicted_degrees");
    int correct = 0;
    for (const int stride : exercise.student_strides) {
        const unsigned degree = conflict_degree(stride, exercise.banks);
        const SubmissionRow* row = submission.row(stride);
        if (row == nullptr || !row->predicted_degree) {
            check.details.push_back("stride " + std::to_string(stride) +
                                    ": no predicted degree in " + exercise.submission_answers);
        } else if (*row->predicted_degree == static_cast<int>(degree)) {
            ++correct;
        } else {
            check.details.push_back("stride " + std::to_string(stride) + ": you predicted " +
                                    std::to_string(*row->predicted_degree) + "; gcd(" +
                                    std::to_string(stride) + ", " + std::to_string(exercise.banks) +
                                    ") is " + std::to_string(degree));
        }
    }
    const int total = static_cast<int>(exercise.student_strides.size());
    finish(check, exercise.check(check.id), total > 0 && correct == total, {});
    check.points = total > 0 ? check.max_points * correct / total : 0.0;
    return check;
}

CheckResult check_ordering(const Exercise& exercise, const Measurements& m) {
    CheckResult check = make_check(exercise, "ordering");
    const auto ratio_of = ratios_of(m, kStudent);
    if (!ratio_of(1)) {
        not_run(check, why_student_not_run(m));
        return check;
    }
    bool all_passed = true;
    for (const auto& rule : exercise.ordering) {
        const RuleOutcome outcome = evaluate_rule(rule, ratio_of);
        if (!outcome.evaluated) {
            all_passed = false;
            check.details.push_back(rule.description + ": a stride it needs was not timed");
            continue;
        }
        all_passed = all_passed && outcome.passed;
        check.details.push_back(std::string(outcome.passed ? "holds: " : "does not hold: ") +
                                outcome.detail);
    }
    failures_first(check.details, "holds: ");
    finish(check, exercise.check(check.id), all_passed, {});
    return check;
}

CheckResult check_consistency(const Exercise& exercise, const Measurements& m) {
    CheckResult check = make_check(exercise, "consistency");
    int compared = 0;
    bool all_within = true;
    for (const auto& run : m.runs) {
        if (run.kernel != kStudent || run.stride == 1 || !run.ratio) {
            continue;
        }
        const KernelRun* reference = m.run(kReference, run.stride);
        if (reference == nullptr || !reference->ratio) {
            continue;
        }
        ++compared;
        const double off = std::abs(*run.ratio / *reference->ratio - 1.0);
        const bool within = off <= exercise.consistency_tolerance;
        all_within = all_within && within;
        const bool named = std::find(exercise.student_strides.begin(),
                                     exercise.student_strides.end(),
                                     run.stride) != exercise.student_strides.end();
        const bool unnamed = std::find(m.unnamed_strides.begin(), m.unnamed_strides.end(),
                                       run.stride) != m.unnamed_strides.end();
        check.details.push_back(
            std::string(within ? "matches: " : "differs: ") + "stride " +
            std::to_string(run.stride) + (unnamed ? " (a stride you did not name)" : "") +
            (named || unnamed ? "" : " (checked by the ordering)") + ": yours " +
            ratio_text(*run.ratio) + ", the reference's " + ratio_text(*reference->ratio) +
            ", off by " + format_number(off * 100.0, 0) + "% (tolerance " +
            format_number(exercise.consistency_tolerance * 100.0, 0) + "%)");
    }
    if (compared == 0) {
        not_run(check, why_student_not_run(m));
        return check;
    }
    failures_first(check.details, "matches: ");
    finish(check, exercise.check(check.id), all_within, {});
    return check;
}

CheckResult check_sentence(const Exercise& exercise, const Submission& submission) {
    CheckResult check = make_check(exercise, "sentence");
    const bool given = submission.sentence.find_first_not_of(" \t\r\n") != std::string::npos;
    finish(check, exercise.check(check.id), given, {});
    if (given) {
        check.details.push_back("\"" + submission.sentence + "\"");
    }
    return check;
}

// Why the machine cannot grade, if it cannot: never the student's fault.
std::optional<std::string> ungradable_reason(const Exercise& exercise, const Measurements& m,
                                             std::vector<std::string>& calibration_details) {
    if (m.interruption && !m.interruption->students_fault) {
        return m.interruption->message;
    }
    if (m.reference.attempted && !m.reference.ok) {
        return "the reference kernel did not compile on this machine: " + m.reference.log;
    }
    const auto ratio_of = ratios_of(m, kReference);
    bool calibrated = true;
    for (const auto& rule : exercise.calibration) {
        const RuleOutcome outcome = evaluate_rule(rule, ratio_of);
        if (outcome.evaluated && !outcome.passed) {
            calibrated = false;
            calibration_details.push_back(outcome.detail);
        }
    }
    if (!calibrated) {
        return "this GPU does not show the bank model with the reference kernel, so it cannot "
               "grade timings (the machine is unfit, not your kernel)";
    }
    return std::nullopt;
}

}  // namespace

std::function<std::optional<double>(int)> ratios_of(const Measurements& m, const char* kernel) {
    return [&m, kernel](int stride) -> std::optional<double> {
        if (stride == 1) {
            const KernelRun* base = m.run(kernel, 1);
            return base && base->timing ? std::optional<double>(1.0) : std::nullopt;
        }
        const KernelRun* run = m.run(kernel, stride);
        return run ? run->ratio : std::nullopt;
    };
}

std::vector<int> student_strides_to_run(const Exercise& exercise,
                                        const std::vector<int>& unnamed_strides) {
    std::vector<int> strides{1};
    for (const int s : exercise.student_strides) {
        insert_sorted_unique(strides, s);
    }
    for (const auto& rule : exercise.ordering) {
        for (const int s : {rule.stride, rule.near, rule.far, rule.than}) {
            if (s > 0) {
                insert_sorted_unique(strides, s);
            }
        }
    }
    for (const int s : unnamed_strides) {
        insert_sorted_unique(strides, s);
    }
    std::sort(strides.begin(), strides.end());
    return strides;
}

std::vector<int> reference_strides_to_run(const Exercise& exercise,
                                          const std::vector<int>& unnamed_strides) {
    std::vector<int> strides = student_strides_to_run(exercise, unnamed_strides);
    for (const int s : exercise.reference_strides) {
        insert_sorted_unique(strides, s);
    }
    for (const auto& rule : exercise.calibration) {
        for (const int s : {rule.stride, rule.near, rule.far, rule.than}) {
            if (s > 0) {
                insert_sorted_unique(strides, s);
            }
        }
    }
    std::sort(strides.begin(), strides.end());
    return strides;
}

std::vector<int> draw_unnamed_strides(const Exercise& exercise, std::uint64_t seed) {
    std::vector<int> pool;
    for (const int s : exercise.unnamed_stride_pool) {
        const bool named = std::find(exercise.student_strides.begin(),
                                     exercise.student_strides.end(),
                                     s) != exercise.student_strides.end();
        if (!named && s != 1) {
            pool.push_back(s);
        }
    }
    std::mt19937_64 rng(seed);
    std::shuffle(pool.begin(), pool.end(), rng);
    const auto count = std::min<std::size_t>(
        pool.size(), static_cast<std::size_t>(std::max(exercise.unnamed_strides_per_grade, 0)));
    std::vector<int> drawn(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(count));
    std::sort(drawn.begin(), drawn.end());
    return drawn;
}

RuleOutcome evaluate_rule(const OrderingRule& rule,
                          const std::function<std::optional<double>(int)>& ratio_of) {
    RuleOutcome outcome;
    const auto subject = ratio_of(rule.stride);
    if (!subject) {
        return outcome;
    }
    const std::string subject_text =
        "stride " + std::to_string(rule.stride) + " at " + ratio_text(*subject);
    switch (rule.kind) {
        case OrderingRule::Kind::closer_to: {
            const auto near = ratio_of(rule.near);
            const auto far = ratio_of(rule.far);
            if (!near || !far) {
                return outcome;
            }
            outcome.evaluated = true;
            outcome.passed = std::abs(*subject - *near) < std::abs(*subject - *far);
            outcome.detail = subject_text + " is " + (outcome.passed ? "" : "not ") +
                             "closer to stride " + std::to_string(rule.near) + " (" +
                             ratio_text(*near) + ") than to stride " + std::to_string(rule.far) +
                             " (" + ratio_text(*far) + ")";
            break;
        }
        case OrderingRule::Kind::slower_than: {
            const auto than = ratio_of(rule.than);
            if (!than) {
                return outcome;
            }
            outcome.evaluated = true;
            outcome.passed = *subject > *than * rule.factor;
            outcome.detail = subject_text + " is " + (outcome.passed ? "" : "not ") +
                             (rule.factor > 1.0 ? format_number(rule.factor, 2) + " times " : "") +
                             "slower than stride " + std::to_string(rule.than) + " (" +
                             ratio_text(*than) + ")";
            break;
        }
        case OrderingRule::Kind::at_most: {
            outcome.evaluated = true;
            outcome.passed = *subject <= rule.limit;
            outcome.detail = subject_text + " is " + (outcome.passed ? "" : "not ") +
                             "at most " + ratio_text(rule.limit);
            break;
        }
    }
    return outcome;
}

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
    report.kernel_output = m.worker_output;
    report.interruption = m.interruption;
    report.stage_seconds = m.stage_seconds;
    if (m.context_seconds > 0) {
        report.stage_seconds["context creation (beside the compile)"] = m.context_seconds;
    }

    report.checks.push_back(check_submission_file(exercise, submission));
    report.checks.push_back(check_compile_abi(exercise, m));
    report.checks.push_back(check_accumulators(exercise, m, false));
    report.checks.push_back(check_accumulators(exercise, m, true));
    report.checks.push_back(check_predicted_degrees(exercise, submission));
    report.checks.push_back(check_ordering(exercise, m));
    report.checks.push_back(check_consistency(exercise, m));
    report.checks.push_back(check_sentence(exercise, submission));

    for (const auto& run : m.runs) {
        ReportRow row;
        row.kernel = run.kernel;
        row.stride = run.stride;
        row.degree = conflict_degree(run.stride, exercise.banks);
        row.named = std::find(exercise.student_strides.begin(), exercise.student_strides.end(),
                              run.stride) != exercise.student_strides.end();
        row.unnamed = std::find(m.unnamed_strides.begin(), m.unnamed_strides.end(), run.stride) !=
                      m.unnamed_strides.end();
        if (run.kernel == kStudent) {
            if (const SubmissionRow* answer = submission.row(run.stride)) {
                row.predicted_degree = answer->predicted_degree;
                row.claimed_ratio = answer->measured_ratio;
            }
            if (const KernelRun* reference = m.run(kReference, run.stride)) {
                row.reference_ratio = run.stride == 1 && reference->timing ? 1.0 : reference->ratio;
            }
        }
        row.timing = run.timing;
        row.ratio = run.stride == 1 && run.timing ? std::optional<double>(1.0) : run.ratio;
        row.ratio_min = run.ratio_min;
        row.ratio_max = run.ratio_max;
        row.counted_degree = run.counted_degree;
        row.accumulator = run.ones;
        row.hidden = run.hidden;
        report.rows.push_back(row);
    }
    std::stable_sort(report.rows.begin(), report.rows.end(), [](const auto& a, const auto& b) {
        return std::make_pair(a.kernel != kStudent, a.stride) <
               std::make_pair(b.kernel != kStudent, b.stride);
    });

    for (const auto& check : report.checks) {
        report.score += check.points;
        report.max_score += check.max_points;
    }

    std::vector<std::string> calibration_details;
    const auto ungradable = ungradable_reason(exercise, m, calibration_details);
    const auto first_failure =
        std::find_if(report.checks.begin(), report.checks.end(),
                     [](const CheckResult& c) { return c.required && !c.passed(); });
    // On a machine that runs kernels but does not show the model, the checks that do not depend
    // on timing still stand: a kernel that fails them has failed wherever it runs.
    const auto timing_independent_failure =
        std::find_if(report.checks.begin(), report.checks.end(), [](const CheckResult& c) {
            return c.required && !c.passed() && c.id != "ordering" && c.id != "consistency";
        });
    const bool machine_unfit = !calibration_details.empty();
    if (ungradable && !(machine_unfit && timing_independent_failure != report.checks.end())) {
        report.verdict = Verdict::ungradable;
        report.summary = "ungradable: " + *ungradable;
        for (const auto& detail : calibration_details) {
            report.summary += "; " + detail;
        }
    } else if (first_failure != report.checks.end()) {
        const auto& shown = machine_unfit ? *timing_independent_failure : *first_failure;
        report.verdict = Verdict::fail;
        report.summary = "fail: " + shown.title + ": " +
                         (shown.details.empty() ? shown.message : shown.details.front());
    } else {
        report.verdict = Verdict::pass;
        report.summary = "pass: every check passed";
    }
    return report;
}

int exit_code(Verdict verdict) {
    switch (verdict) {
        case Verdict::pass: return 0;
        case Verdict::fail: return 1;
        case Verdict::ungradable: return 3;
    }
    return 4;
}

}  // namespace grader
