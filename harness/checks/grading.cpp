// The checks one by one: what each kind of check asks of a grade's measurements and answers,
// and the ordering rules they share.

#include "checks/grading.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "checks/checks.hpp"
#include "common/kernel_ids.hpp"
#include "common/text.hpp"
#include "compile/nvrtc_log.hpp"
#include "model/diagnosis.hpp"
#include "model/finding.hpp"
#include "model/observations.hpp"
#include "report/describe.hpp"
#include "report/findings_text.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace {

const std::string kStudent(kStudentKernel);

bool timing_check(const CheckSpec& spec) {
    return spec.kind == CheckKind::ordering || spec.kind == CheckKind::consistency;
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
        return m.interruption->kind == StopKind::no_gpu ? "a GPU is needed to run the kernel"
                                                        : m.interruption->message;
    }
    if (!m.environment.gpu_available && m.environment.backend != "sim") {
        return "a GPU is needed to run the kernel";
    }
    return "the kernel was not run";
}

// A check that could not be evaluated: neither passed nor failed, with the reason.
void not_run(CheckResult& check, const std::string& reason) {
    check.status = CheckStatus::not_run;
    check.points = 0.0;
    check.not_run_reason = reason;
    // A reason that is whole sentences (a machine fault's, which says what to fix) keeps its
    // own full stop.
    const bool ends_sentence = !reason.empty() && reason.back() == '.';
    check.message = "Not run: " + reason + (ends_sentence ? "" : ".");
}

// Where a location is, as a finding names it: the file's own name, never the grading machine's
// path.
FindingPlace place(const SourceLocation& location) {
    FindingPlace at;
    at.file = location.file.empty() ? std::string()
                                    : std::filesystem::path(location.file).filename().string();
    at.line = location.line;
    at.column = location.column;
    return at;
}

// A problem (or a note) the answers reader found, as a finding.
Finding answer_finding(const SubmissionProblem& problem) {
    Finding finding;
    finding.kind = problem.kind;
    if (!problem.location.file.empty()) {
        finding.lines = {place(problem.location)};
    }
    finding.names = {problem.field};
    finding.text = problem.message;
    return finding;
}

// A compile log's lines that report an error, at most `most` (the compile step reads them).
std::vector<std::string> error_lines(const std::string& log, std::size_t most) {
    std::vector<std::string> lines;
    for (const CompileLogError& error : compile_log_errors(log, most)) {
        lines.push_back(error.line);
    }
    return lines;
}

// A rule's outcome as a finding: its cases (each case's stride, and the kernel's label where it
// is not the student's), their ratios and the rule's numbers.
Finding rule_finding(const Exercise& exercise, const OrderingRule& rule,
                     const RuleOutcome& outcome) {
    Finding finding;
    const auto add_case = [&](const Case& c, const std::optional<double>& ratio) {
        finding.strides.push_back(c.stride);
        finding.names.push_back(
            c.stride > 0 || c.kernel == kStudent ? std::string() : exercise.kernel(c.kernel).label);
        finding.values.push_back(ratio.value_or(std::nan("")));
    };
    add_case(rule.subject, outcome.subject);
    switch (rule.kind) {
        case OrderingRule::Kind::closer_to:
            finding.kind = outcome.passed ? FindingKind::rule_closer_to_holds
                                          : FindingKind::rule_closer_to_fails;
            add_case(rule.near, outcome.near);
            add_case(rule.far, outcome.far);
            break;
        case OrderingRule::Kind::slower_than:
            finding.kind = outcome.passed ? FindingKind::rule_slower_than_holds
                                          : FindingKind::rule_slower_than_fails;
            add_case(rule.than, outcome.than);
            finding.values.push_back(rule.factor);
            break;
        case OrderingRule::Kind::at_most:
            finding.kind =
                outcome.passed ? FindingKind::rule_at_most_holds : FindingKind::rule_at_most_fails;
            finding.values.push_back(rule.limit);
            break;
    }
    return finding;
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

// What the checks share: the exercise, the observations, and what they make of the machine.
// What the counted runs of a check's kernel said of its degree (Grading::counted_degree).
struct DegreeTally {
    int counted = 0;                 // runs with a degree the model names
    int counted_without_shared = 0;  // runs whose counts hold no shared load or store
    int stored_never_read = 0;       // of them, runs that store to shared memory all the same
    bool degrees_match = true;       // every counted degree within the tolerance of the model's
    std::optional<double> worst;     // the highest degree counted
    std::string source;              // what counted: "hardware", or the simulator
};

class Grading {
public:
    Grading(const Exercise& exercise, const Submission& submission, const Measurements& m)
        : exercise_(exercise), submission_(submission), m_(m) {
        calibration_ = calibration_failures(exercise, m);
        timing_unused_ = timing_unused();
    }

    CheckResult check(const CheckSpec& spec) const {
        CheckResult check;
        check.id = spec.id;
        check.title = spec.title;
        check.required = spec.required;
        check.review = spec.review;
        check.max_points = spec.points;
        check.kind = std::string(to_string(spec.kind));
        if (timing_check(spec) && timing_unused_) {
            not_run(check, timing_unused_reason(*timing_unused_));
            return check;
        }
        const bool reads_answers =
            spec.kind == CheckKind::answers_file || spec.kind == CheckKind::predicted ||
            spec.kind == CheckKind::measured || spec.kind == CheckKind::sentence;
        if (reads_answers && !submission_.unread_reason.empty()) {
            not_run(check, submission_.unread_reason);
            return check;
        }
        switch (spec.kind) {
            case CheckKind::answers_file:
                answers_file(spec, check);
                break;
            case CheckKind::compile_abi:
                compile_abi(spec, check);
                break;
            case CheckKind::output:
                output(spec, check);
                break;
            case CheckKind::predicted:
                predicted(spec, check);
                break;
            case CheckKind::ordering:
                ordering(spec, check);
                break;
            case CheckKind::consistency:
                consistency(spec, check);
                break;
            case CheckKind::measured:
                measured(spec, check);
                break;
            case CheckKind::counted_degree:
                counted_degree(spec, check);
                break;
            case CheckKind::sentence:
                sentence(spec, check);
                break;
        }
        return check;
    }

private:
    // Why this grade's times cannot be checked: no timing at all, or a machine that does not show
    // the model with the exercise's own kernels. None when they can.
    std::optional<Finding> timing_unused() const {
        const bool timed = std::any_of(m_.runs.begin(), m_.runs.end(),
                                       [](const KernelRun& r) { return r.ratio.has_value(); });
        Finding unused;
        if (!calibration_.empty()) {
            unused.kind = FindingKind::timing_machine_unfit;
            return unused;
        }
        if (!timed && m_.environment.backend == "sim" && !exercise_.simulator.modeled_timing) {
            unused.kind = FindingKind::timing_needs_gpu;
            return unused;
        }
        return std::nullopt;
    }

    void answers_file(const CheckSpec& spec, CheckResult& check) const {
        std::size_t blanks = 0;
        for (const auto& problem : submission_.problems) {
            check.findings.push_back(answer_finding(problem));
            blanks += problem.kind == FindingKind::answer_blank ? 1 : 0;
        }
        if (blanks > 0) {
            Finding summary;
            summary.kind = FindingKind::answers_still_blank;
            summary.count = blanks;
            summary.names = {exercise_.submission_answers};
            check.findings.insert(check.findings.begin(), summary);
        }
        // Values read as meant (a decimal comma, a unit) pass, each with how to write it.
        for (const auto& note : submission_.notes) {
            check.findings.push_back(answer_finding(note));
        }
        finish(check, spec, submission_.problems.empty(), {});
    }

    void compile_abi(const CheckSpec& spec, CheckResult& check) const {
        const CompileOutcome& c = m_.student;
        if (!c.attempted && c.log.empty() && c.vetting_problems.empty()) {
            // Nothing was tried and nothing is known of the source: grading stopped first.
            not_run(check, m_.interruption ? m_.interruption->message
                                           : std::string("the kernel was not compiled"));
            return;
        }
        for (const auto& problem : c.vetting_problems) {
            Finding refused;
            refused.kind = FindingKind::source_refused;
            refused.lines = {place({exercise_.submission_source, problem.line, problem.column})};
            refused.text = problem.message;
            check.findings.push_back(std::move(refused));
        }
        if (!c.attempted && c.vetting_problems.empty()) {
            Finding missing;
            missing.kind = c.source_missing ? FindingKind::kernel_file_missing
                                            : FindingKind::kernel_not_compiled;
            missing.names = {exercise_.submission_source};
            missing.text = c.log;
            check.findings.push_back(std::move(missing));
        } else if (c.attempted && !c.ok && c.vetting_problems.empty()) {
            // The log's error lines, already free of host paths; the whole log is in the report.
            for (const std::string& error : error_lines(c.log, 5)) {
                Finding failed;
                failed.kind = FindingKind::compile_error;
                failed.names = {exercise_.submission_source};
                failed.text = error;
                check.findings.push_back(std::move(failed));
            }
            // Without an error line the compile's own sentence leads the log ("probeSharedStride
            // is overloaded in probe.cu ..."): that is the reason, not NVRTC.
            if (check.findings.empty()) {
                Finding log;
                log.kind = FindingKind::compile_log;
                log.text = c.log.substr(0, c.log.find('\n'));
                check.findings.push_back(std::move(log));
            }
        }
        if (!c.abi_problem.empty()) {
            Finding abi;
            abi.kind = FindingKind::abi_mismatch;
            abi.text = c.abi_problem;
            check.findings.push_back(std::move(abi));
        }
        const bool passed =
            c.attempted && c.ok && c.vetting_problems.empty() && c.abi_problem.empty();
        finish(check, spec, passed,
               {{"kernel", exercise_.kernel_name},
                {"arch", c.arch},
                {"signature", c.signature.empty() ? exercise_.kernel_name : c.signature}});
        if (!c.attempted && c.vetting_problems.empty() && !c.log.empty()) {
            // Nothing reached the compiler: why leads (the folder's, or the read's).
            check.message = c.log + ".";
        } else if (!c.vetting_problems.empty()) {
            check.message = exercise_.submission_source +
                            " was refused before compiling: it uses what a submission may not "
                            "(each use is below, by line).";
        } else if (c.attempted && !c.ok) {
            // The first line names the failure: a dropped ';' is a compile error, not an ABI
            // mismatch, and the fixed ABI's sentence would send the student to the signature.
            const std::vector<std::string> errors = error_lines(c.log, 1);
            const std::string first_line = c.log.substr(0, c.log.find('\n'));
            check.message = exercise_.submission_source + " did not compile: " +
                            (!errors.empty()      ? errors.front()
                             : first_line.empty() ? std::string("the log is below")
                                                  : first_line);
        }
    }

    void output(const CheckSpec& spec, CheckResult& check) const {
        int ran = 0;
        bool all_ok = true;
        std::optional<double> expected;
        for (const auto& run : m_.runs) {
            if (run.kernel != kStudent) {
                continue;
            }
            bool run_compared = false;
            bool run_ok = true;
            for (const OutputComparison& result : run.outputs) {
                if (result.input != spec.input || !result.ran) {
                    continue;
                }
                run_compared = true;
                if (!expected) {
                    expected = result.expected;
                }
                if (!result.ok) {
                    all_ok = false;
                    run_ok = false;
                    Finding wrong;
                    wrong.kind = FindingKind::wrong_output;
                    wrong.strides = {run.stride};
                    wrong.output = result;
                    wrong.timed = result.timed;
                    check.findings.push_back(std::move(wrong));
                    if (!result.timed) {
                        for (const Finding& seen : run.findings) {
                            if (seen.kind == FindingKind::unwritten_shared_read) {
                                check.findings.push_back(seen);
                            }
                        }
                    }
                }
            }
            if (!run_compared) {
                continue;
            }
            ++ran;
            bool hazard = false;
            for (const Finding& seen : run.findings) {
                if (is_race(seen.kind)) {
                    // A race that can change a value fails the outputs even where they came
                    // out right; two writes of one value (racecheck's INFO) fail nothing.
                    hazard = hazard || fails(seen);
                    check.findings.push_back(seen);
                }
            }
            if (run_ok && hazard) {
                // Say why a right answer fails: the order the warps ran in here is one of many.
                Finding lucky;
                lucky.kind = FindingKind::right_by_warp_order;
                lucky.strides = {run.stride};
                check.findings.push_back(std::move(lucky));
            }
            all_ok = all_ok && !hazard;
        }
        const bool stopped_by_kernel = m_.interruption && m_.interruption->students_fault &&
                                       m_.student.ok && m_.student.abi_problem.empty();
        if (ran == 0 && !stopped_by_kernel) {
            not_run(check, why_student_not_run(m_));
            return;
        }
        if (stopped_by_kernel) {
            // The kernel faulted or hung before its outputs could be compared: that is its
            // outputs' failure, whatever had been compared before.
            all_ok = false;
            Finding stopped;
            stopped.kind = FindingKind::kernel_stopped;
            // What the simulator saw before the stop: where it stopped, and a read that raced
            // a fill, which can be its cause.
            for (const auto& run : m_.runs) {
                if (run.kernel != kStudent) {
                    continue;
                }
                for (const Finding& seen : run.findings) {
                    if (seen.kind == FindingKind::kernel_stopped) {
                        stopped = seen;
                    } else if (seen.kind == FindingKind::unwritten_shared_read ||
                               is_race(seen.kind)) {
                        check.findings.push_back(seen);
                    }
                }
            }
            stopped.text = m_.interruption->message;
            stopped.strides.clear();
            check.findings.insert(check.findings.begin(), std::move(stopped));
        }
        finish(check, spec, all_ok,
               {{"expected", format_number(expected.value_or(0.0), 4)},
                {"kernel", exercise_.kernel_name}});
        if (!expected && stopped_by_kernel) {
            // Nothing was compared, so the exercise's message (which names the expected value)
            // has nothing true to say.
            check.message = "Your kernel stopped before any of its outputs could be compared.";
        }
    }

    void predicted(const CheckSpec& spec, CheckResult& check) const {
        int correct = 0;
        int total = 0;
        for (const Case& subject : answer_cases()) {
            ++total;
            const std::optional<unsigned> degree = exercise_.model_degree(subject);
            const SubmissionRow* row = submission_.row(subject);
            if (row == nullptr || !row->predicted_degree) {
                Finding missing = answer_row(FindingKind::prediction_missing, subject);
                missing.names.push_back(exercise_.submission_answers);
                check.findings.push_back(std::move(missing));
            } else if (degree && *row->predicted_degree == static_cast<int>(*degree)) {
                ++correct;
            } else {
                Finding wrong = answer_row(FindingKind::prediction_wrong, subject);
                wrong.lines = {place(row->predicted_location)};
                wrong.values = {static_cast<double>(*row->predicted_degree),
                                static_cast<double>(degree.value_or(0))};
                wrong.count = exercise_.banks;
                check.findings.push_back(std::move(wrong));
            }
        }
        finish(check, spec, total > 0 && correct == total, {});
        check.points = total > 0 ? check.max_points * correct / total : 0.0;
    }

    void ordering(const CheckSpec& spec, CheckResult& check) const {
        const RatioLookup ratio_of = measured_ratios(exercise_, m_);
        const bool any = std::any_of(m_.runs.begin(), m_.runs.end(), [&](const KernelRun& r) {
            return r.kernel == spec.kernel && r.ratio.has_value();
        });
        if (!any) {
            not_run(check, why_student_not_run(m_));
            return;
        }
        bool all_passed = true;
        for (const auto& rule : spec.rules) {
            const RuleOutcome outcome = evaluate_rule(exercise_, rule, ratio_of);
            if (!outcome.evaluated) {
                all_passed = false;
                Finding untimed;
                untimed.kind = FindingKind::rule_not_timed;
                untimed.text = rule.description;
                check.findings.push_back(std::move(untimed));
                continue;
            }
            all_passed = all_passed && outcome.passed;
            check.findings.push_back(rule_finding(exercise_, rule, outcome));
        }
        finish(check, spec, all_passed, {});
    }

    void consistency(const CheckSpec& spec, CheckResult& check) const {
        int compared = 0;
        bool all_within = true;
        for (const auto& run : m_.runs) {
            if (run.kernel != spec.kernel || !run.ratio ||
                (exercise_.has_sweep() && run.stride == exercise_.ratios.to_stride)) {
                continue;
            }
            const KernelRun* against = m_.run(spec.against, run.stride);
            if (against == nullptr || !against->ratio) {
                continue;
            }
            ++compared;
            const double off = std::abs(*run.ratio / *against->ratio - 1.0);
            const bool within = off <= spec.tolerance;
            all_within = all_within && within;
            const bool named =
                std::find(exercise_.student_strides.begin(), exercise_.student_strides.end(),
                          run.stride) != exercise_.student_strides.end();
            const bool unnamed = std::find(m_.unnamed_strides.begin(), m_.unnamed_strides.end(),
                                           run.stride) != m_.unnamed_strides.end();
            Finding compared_ratio;
            compared_ratio.kind = within ? FindingKind::ratio_matches : FindingKind::ratio_differs;
            compared_ratio.strides = {run.stride};
            compared_ratio.names = {exercise_.kernel(spec.against).label};
            compared_ratio.values = {*run.ratio, *against->ratio, off, spec.tolerance};
            compared_ratio.unnamed = unnamed;
            compared_ratio.count = named || unnamed || run.stride == 0 ? 0 : 1;
            check.findings.push_back(std::move(compared_ratio));
        }
        if (compared == 0) {
            not_run(check, why_student_not_run(m_));
            return;
        }
        finish(check, spec, all_within, {});
    }

    // The student's own measurements, as ratios: percentages are divided by 100.
    std::optional<double> claimed_ratio(const SubmissionRow& row) const {
        if (!row.measured) {
            return std::nullopt;
        }
        return exercise_.ratios.as_percent ? *row.measured / 100.0 : *row.measured;
    }

    void measured(const CheckSpec& spec, CheckResult& check) const {
        const Case base = exercise_.has_sweep() ? Case{kStudent, exercise_.ratios.to_stride}
                                                : Case{exercise_.ratios.to_kernel, 0};
        const RatioLookup claimed = [&](const Case& c) -> std::optional<double> {
            if (c == base || (exercise_.has_sweep() && c.stride == base.stride)) {
                return 1.0;
            }
            const SubmissionRow* row = submission_.row(c);
            return row ? claimed_ratio(*row) : std::nullopt;
        };
        int rows = 0;
        bool all_plausible = true;
        if (spec.band_high > 0.0) {
            for (const Case& subject : answer_cases()) {
                const SubmissionRow* row = submission_.row(subject);
                const auto ratio = row ? claimed_ratio(*row) : std::nullopt;
                const auto degree = exercise_.model_degree(subject);
                if (!degree) {
                    continue;
                }
                ++rows;
                if (!ratio) {  // a missing row is never a plausible one
                    all_plausible = false;
                    Finding missing = answer_row(FindingKind::measurement_missing, subject);
                    missing.names.push_back(exercise_.submission_answers);
                    check.findings.push_back(std::move(missing));
                    continue;
                }
                const double low = std::max(0.0, spec.band_low * *degree - spec.band_slack);
                const double high = spec.band_high * *degree + spec.band_slack;
                if (*ratio < low || *ratio > high) {
                    all_plausible = false;
                    const auto in_band = [&](double r) { return r >= low && r <= high; };
                    const auto [slip, meant] = measurement_slip(*ratio, in_band);
                    Finding odd = answer_row(FindingKind::measurement_implausible, subject);
                    odd.lines = {place(row->measured_location)};
                    odd.values = {*ratio, low, high, static_cast<double>(*degree), meant};
                    odd.count = static_cast<std::uint64_t>(slip);
                    odd.names.resize(2);
                    odd.names.push_back(exercise_.answers.measured_description);
                    check.findings.push_back(std::move(odd));
                }
            }
        }
        if (spec.band_high <= 0.0 && exercise_.ratios.as_percent) {
            // Without a band, a time well under the base's is the slip to name: no kernel here
            // runs faster than the copy it is compared with.
            for (const Case& subject : answer_cases()) {
                const SubmissionRow* row = submission_.row(subject);
                const auto ratio = row ? claimed_ratio(*row) : std::nullopt;
                if (ratio && *ratio < 0.9) {
                    all_plausible = false;
                    auto [slip, meant] =
                        measurement_slip(*ratio, [](double r) { return r >= 1.0; });
                    if (slip == MeasurementSlip::milliseconds) {
                        slip = MeasurementSlip::faster_than_base;
                    }
                    Finding odd = answer_row(FindingKind::measurement_implausible, subject);
                    odd.lines = {place(row->measured_location)};
                    odd.values = {*ratio, std::nan(""), std::nan(""), 0.0, meant};
                    odd.count = static_cast<std::uint64_t>(slip);
                    odd.names.resize(2);
                    odd.names.push_back(exercise_.answers.measured_description);
                    check.findings.push_back(std::move(odd));
                }
            }
        }
        for (const auto& rule : spec.rules) {
            const RuleOutcome outcome = evaluate_rule(exercise_, rule, claimed);
            ++rows;
            if (!outcome.evaluated) {  // a rule over a missing row does not hold
                all_plausible = false;
                Finding missing;
                missing.kind = FindingKind::rule_not_timed;
                missing.text = rule.description;
                missing.names = missing_cases(rule, claimed);
                missing.count = 1;  // the student's own numbers: not in the answers file
                check.findings.push_back(std::move(missing));
                continue;
            }
            if (!outcome.passed) {
                all_plausible = false;
                Finding failed = rule_finding(exercise_, rule, outcome);
                failed.text = rule.description;
                check.findings.push_back(std::move(failed));
            }
        }
        if (rows == 0) {
            not_run(check, "the answers file has no measurements to check");
            return;
        }
        finish(check, spec, all_plausible, {});
    }

    void counted_degree(const CheckSpec& spec, CheckResult& check) const {
        // A GPU counts after the timing rounds (its counters replay the timed launches, and the
        // simulator's witness is read at the same point); the simulator counts as each launch
        // runs. A grade that stopped before its end has no count on a GPU, so it has none on the
        // simulator either: one scoring policy whichever device ran it.
        if (m_.interruption) {
            not_run(check, why_student_not_run(m_));
            return;
        }
        const DegreeTally tally = tally_degrees(spec, check);
        if (no_degree_counted(spec, tally, check)) {
            return;
        }
        const bool all_match = rules_hold(spec, tally.degrees_match, check);
        count_notes(spec, tally.source, check);
        finish(check, spec, all_match, {});
        counted_degree_message(spec, tally, all_match, check);
    }

    // Each counted run of the checked kernel's degree against the model, its findings added to
    // `check` as they are found, then the line the simulator's witness blames most, where it
    // disagrees with the model.
    DegreeTally tally_degrees(const CheckSpec& spec, CheckResult& check) const {
        DegreeTally tally;
        // On a GPU whose launch totals do not confirm the simulator's witness of the same
        // source: the line the witness blames most, where it disagrees with the model.
        std::optional<std::pair<double, Finding>> simulator_blames;
        int judged_by_witness = 0;  // GPU runs judged by the witness's lines, which they confirm
        const bool loads_only = spec.accesses == CheckSpec::Accesses::loads;
        for (const auto& run : m_.runs) {
            if (run.kernel != spec.kernel || !run.counts) {
                continue;
            }
            const JudgedDegree judged = judged_degree(run, m_.environment.grid_blocks, loads_only);
            if (!judged.degree) {
                ++tally.counted_without_shared;
                tally.stored_never_read += run.counts->store_requests > 0 ? 1 : 0;
                continue;
            }
            const double degree = *judged.degree;
            const auto model = exercise_.model_degree(Case{run.kernel, run.stride});
            if (!model) {
                continue;
            }
            ++tally.counted;
            tally.source = run.count_source;
            tally.worst = std::max(tally.worst.value_or(0.0), degree);
            judged_by_witness += judged.confirmed_witness ? 1 : 0;
            const auto off_model = [&](double d) {
                return std::abs(d - *model) > std::max(0.01, spec.tolerance * *model);
            };
            if (off_model(degree)) {
                tally.degrees_match = false;
                add_off_model(run, judged, *model, loads_only, check);
            }
            const SharedLineCounts* blamed = judged.line == nullptr && run.witness
                                                 ? run.witness->worst_line(loads_only)
                                                 : nullptr;
            if (blamed != nullptr && off_model(blamed->degree)) {
                const double how_far = std::abs(blamed->degree - *model) / *model;
                if (!simulator_blames || how_far > simulator_blames->first) {
                    Finding blames;
                    blames.kind = FindingKind::simulator_blames_line;
                    blames.strides = {run.stride};
                    blames.counts = *blamed;
                    blames.values = {static_cast<double>(*model)};
                    blames.count = exercise_.banks;
                    simulator_blames = {how_far, std::move(blames)};
                }
            }
        }
        if (simulator_blames) {
            check.findings.push_back(simulator_blames->second);
        }
        if (judged_by_witness > 0) {
            Finding judged;
            judged.kind = FindingKind::judged_by_witness;
            judged.values = {SharedAccessCounts::kWitnessTolerance};
            check.findings.push_back(std::move(judged));
        }
        return tally;
    }

    // A run whose degree is off the model: the counts that show it (the line judged, or the
    // launch's totals), and where a warp's lanes span two rows of a narrow tile, that too.
    void add_off_model(const KernelRun& run, const JudgedDegree& judged, unsigned model,
                       bool loads_only, CheckResult& check) const {
        Finding off;
        off.kind = FindingKind::degree_off_model;
        off.strides = {run.stride};
        off.values = {static_cast<double>(model)};
        off.count = exercise_.banks;
        if (judged.line != nullptr) {
            off.counts = *judged.line;
        } else {
            // The launch's totals: its loads, or its stores where they are worse (and the check
            // is about every access).
            const SharedAccessCounts& counts = *run.counts;
            const auto load = counts.load_degree();
            const auto store = counts.store_degree();
            const bool stores = !loads_only && store && store.value_or(0.0) > load.value_or(0.0);
            SharedLineCounts totals;
            totals.line = 0;
            totals.store = stores;
            totals.requests = stores ? counts.store_requests : counts.load_requests;
            totals.wavefronts = stores ? counts.store_wavefronts : counts.load_wavefronts;
            totals.ideal_wavefronts =
                stores ? counts.store_ideal_wavefronts : counts.load_ideal_wavefronts;
            totals.degree = (stores ? store : load).value_or(0.0);
            off.counts = totals;
        }
        check.findings.push_back(off);
        if (judged.line != nullptr && judged.line->lanes_per_row > 0) {
            // Lanes of a warp on two rows of a narrow tile: why a pitch coprime with the banks
            // still conflicts.
            Finding span = off;
            span.kind = FindingKind::warp_spans_rows;
            span.values = {static_cast<double>(judged.line->lanes_per_row),
                           static_cast<double>(judged.line->row_pitch), *judged.degree};
            check.findings.push_back(std::move(span));
        }
    }

    // True where no run was counted with a degree the model names, the check then decided.
    bool no_degree_counted(const CheckSpec& spec, const DegreeTally& tally,
                           CheckResult& check) const {
        if (tally.counted > 0) {
            return false;
        }
        if (tally.stored_never_read > 0) {
            // A tile filled and never read: nothing of it reaches a result, so no degree of its
            // loads can be the model's.
            finish(check, spec, false, {});
            Finding unread;
            unread.kind = FindingKind::tile_never_read;
            for (const auto& run : m_.runs) {
                if (run.kernel == spec.kernel && run.counts) {
                    unread.strides.push_back(run.stride);
                }
            }
            check.findings.push_back(std::move(unread));
            return true;
        }
        if (tally.counted_without_shared > 0) {
            // The device counted, and the kernel touched no shared memory: the student's kernel
            // decides that (Part 2's naive transpose), so it fails; "not run" is the machine's.
            finish(check, spec, false, {});
            Finding none;
            none.kind = FindingKind::no_shared_access;
            none.count = static_cast<std::uint64_t>(tally.counted_without_shared);
            none.names = {source_of_counts(spec)};
            check.message = no_shared_tile_message(none, exercise_.kernel_name) + " " +
                            fill_template(spec.hint, {});
            check.findings.push_back(std::move(none));
            return true;
        }
        not_run(check, m_.runs.empty() ? why_student_not_run(m_)
                                       : "no device counted the kernel's shared accesses");
        return true;
    }

    // Whether the degrees match and the check's timing rules hold, their findings added; where
    // only the time fails, what the time pays for where the counts show it.
    bool rules_hold(const CheckSpec& spec, bool degrees_match, CheckResult& check) const {
        bool all_match = degrees_match;
        if (!spec.rules.empty()) {
            if (timing_unused_) {
                check.findings.push_back(*timing_unused_);
            } else {
                const RatioLookup ratio_of = measured_ratios(exercise_, m_);
                for (const auto& rule : spec.rules) {
                    const RuleOutcome outcome = evaluate_rule(exercise_, rule, ratio_of);
                    if (!outcome.evaluated) {
                        continue;
                    }
                    all_match = all_match && outcome.passed;
                    check.findings.push_back(rule_finding(exercise_, rule, outcome));
                }
            }
        }
        if (degrees_match && !all_match) {
            // The counts are clean and the time fails the rule: say what the time is paying for
            // where the counts show it (an output written down its columns).
            for (const auto& run : m_.runs) {
                const auto sectors = run.kernel == spec.kernel && run.counts
                                         ? run.counts->global_store_sectors_per_request()
                                         : std::nullopt;
                if (sectors && *sectors > 8.0) {
                    Finding strided;
                    strided.kind = FindingKind::strided_global_stores;
                    strided.strides = {run.stride};
                    strided.values = {*sectors};
                    check.findings.push_back(std::move(strided));
                    break;  // the same at every stride
                }
            }
        }
        return all_match;
    }

    // What counted (`source`), why its counts may differ from another device's, and the clock
    // reads of the student's kernel.
    void count_notes(const CheckSpec& spec, const std::string& source, CheckResult& check) const {
        Finding counted_by;
        counted_by.kind = FindingKind::counted_by;
        counted_by.names = {source == "hardware" ? "hardware" : "simulator"};
        check.findings.push_back(std::move(counted_by));
        for (const auto& run : m_.runs) {
            if (run.kernel == spec.kernel && !run.count_note.empty()) {
                Finding note;
                note.kind = FindingKind::count_difference;
                note.text = run.count_note;
                check.findings.push_back(std::move(note));
                break;  // the same reason at every stride
            }
        }
        for (const auto& read : m_.student.clock_reads) {
            Finding clock;
            clock.kind = FindingKind::clock_read;
            clock.text = read;
            check.findings.push_back(std::move(clock));
        }
    }

    // The message of a finished check, where the findings say more than its spec's pass or fail
    // message: only the time failed, a warp spans two rows, or one of the exercise's diagnoses
    // fits.
    void counted_degree_message(const CheckSpec& spec, const DegreeTally& tally, bool all_match,
                                CheckResult& check) const {
        if (tally.degrees_match && !all_match) {
            // Not "still conflict": the counts are conflict free, and only the time failed.
            const auto failed_rule =
                std::find_if(check.findings.begin(), check.findings.end(), fails);
            if (failed_rule != check.findings.end()) {
                check.message = timing_only_message(fill_template(spec.pass_message, {}),
                                                    *failed_rule, wording(exercise_));
            }
        }
        if (!tally.degrees_match) {
            for (const Finding& finding : check.findings) {
                if (finding.kind == FindingKind::warp_spans_rows) {
                    // The exercise's hint (a row length coprime with 32) is met already: say
                    // what conflicts instead.
                    check.message = fill_template(spec.fail_message, {}) + " " +
                                    finding_sentence(finding, wording(exercise_));
                    break;
                }
            }
        }
        if (!all_match && !tally.degrees_match) {
            for (const auto& diagnosis : spec.diagnoses) {
                const bool degree_holds =
                    !diagnosis.counted_degree_at_least ||
                    tally.worst.value_or(0.0) >= *diagnosis.counted_degree_at_least;
                const bool shared_holds =
                    !diagnosis.static_shared_bytes_above ||
                    m_.student.static_shared_bytes > *diagnosis.static_shared_bytes_above;
                if (degree_holds && shared_holds) {
                    check.message = diagnosis.message;
                    break;
                }
            }
        }
    }

    std::string source_of_counts(const CheckSpec& spec) const {
        for (const auto& run : m_.runs) {
            if (run.kernel == spec.kernel && run.counts) {
                return run.count_source;
            }
        }
        return {};
    }

    void sentence(const CheckSpec& spec, CheckResult& check) const {
        const bool given = submission_.sentence.find_first_not_of(" \t\r\n") != std::string::npos;
        finish(check, spec, given, {});
        if (!given) {
            return;
        }
        Finding sentence;
        sentence.kind = FindingKind::sentence_given;
        sentence.text = submission_.sentence;
        check.findings.push_back(std::move(sentence));
        if (!exercise_.example_sentence.empty() &&
            text::comparison_key(submission_.sentence) ==
                text::comparison_key(exercise_.example_sentence)) {
            Finding example;
            example.kind = FindingKind::sentence_is_example;
            check.findings.push_back(std::move(example));
        }
    }

    // The cases the answers file speaks of, in the exercise's order.
    std::vector<Case> answer_cases() const {
        std::vector<Case> cases;
        if (exercise_.answers.key_field == "stride") {
            for (const int stride : exercise_.student_strides) {
                cases.push_back({kStudent, stride});
            }
        } else {
            for (const auto& row : exercise_.answers.rows) {
                cases.push_back({row.kernel, 0});
            }
        }
        return cases;
    }

    // What a number outside the plausible band most likely is, where one reading puts it back in
    // the band, and that reading; milliseconds (perhaps a time) where none does.
    std::pair<MeasurementSlip, double> measurement_slip(
        double ratio, const std::function<bool(double)>& in_band) const {
        const bool percent = exercise_.ratios.as_percent;
        if (percent && ratio < 1.0 && in_band(1.0 / ratio)) {
            // The lesson's table gives bandwidth as "% of copy" (57.1); the file asks for time.
            return {MeasurementSlip::bandwidth_percent, 1.0 / ratio};
        }
        if (!percent && ratio < 1.0 && in_band(1.0 / ratio)) {
            return {MeasurementSlip::inverted, 1.0 / ratio};
        }
        if (!percent && in_band(ratio / 100.0)) {
            return {MeasurementSlip::percent_for_ratio, ratio / 100.0};
        }
        if (percent && in_band(ratio * 100.0)) {
            return {MeasurementSlip::ratio_for_percent, ratio * 100.0};
        }
        return {MeasurementSlip::milliseconds, std::nan("")};
    }

    // The cases a rule needs that the lookup lacks, as the answers file names them.
    std::vector<std::string> missing_cases(const OrderingRule& rule,
                                           const RatioLookup& lookup) const {
        std::vector<const Case*> needed{&rule.subject};
        if (rule.kind == OrderingRule::Kind::closer_to) {
            needed.push_back(&rule.near);
            needed.push_back(&rule.far);
        } else if (rule.kind == OrderingRule::Kind::slower_than) {
            needed.push_back(&rule.than);
        }
        std::vector<std::string> names;
        for (const Case* c : needed) {
            if (!lookup(*c)) {
                names.push_back(answer_name(*c));
            }
        }
        return names;
    }

    // A finding about a row of the answers file: its stride, or its key.
    Finding answer_row(FindingKind kind, const Case& subject) const {
        Finding finding;
        finding.kind = kind;
        finding.strides = {subject.stride};
        if (subject.stride == 0) {
            for (const auto& row : exercise_.answers.rows) {
                if (row.kernel == subject.kernel) {
                    finding.names = {exercise_.answers.key_field, row.key};
                }
            }
            if (finding.names.empty()) {
                finding.names = {subject.kernel, ""};
            }
        } else {
            finding.names = {"", ""};
        }
        return finding;
    }

    std::string answer_name(const Case& subject) const {
        if (subject.stride > 0) {
            return "stride " + std::to_string(subject.stride);
        }
        for (const auto& row : exercise_.answers.rows) {
            if (row.kernel == subject.kernel) {
                return exercise_.answers.key_field + " " + row.key;
            }
        }
        return subject.kernel;
    }

    const Exercise& exercise_;
    const Submission& submission_;
    const Measurements& m_;
    std::vector<std::string> calibration_;
    std::optional<Finding> timing_unused_;
};

}  // namespace

std::vector<CheckResult> grade_checks(const Exercise& exercise, const Submission& submission,
                                      const Measurements& m) {
    const Grading grading(exercise, submission, m);
    std::vector<CheckResult> checks;
    const Wording words = wording(exercise);
    for (const CheckSpec& spec : exercise.checks) {
        checks.push_back(grading.check(spec));
        collapse_details(checks.back(), words);
        checks.back().diagnosis = diagnose_check(exercise, spec, checks.back(), submission, m);
    }
    return checks;
}

RuleOutcome evaluate_rule(const Exercise& exercise, const OrderingRule& rule,
                          const RatioLookup& ratio_of) {
    RuleOutcome outcome;
    outcome.subject = ratio_of(rule.subject);
    if (!outcome.subject) {
        return outcome;
    }
    switch (rule.kind) {
        case OrderingRule::Kind::closer_to:
            outcome.near = ratio_of(rule.near);
            outcome.far = ratio_of(rule.far);
            if (!outcome.near || !outcome.far) {
                return outcome;
            }
            outcome.passed = std::abs(*outcome.subject - *outcome.near) <
                             std::abs(*outcome.subject - *outcome.far);
            break;
        case OrderingRule::Kind::slower_than:
            outcome.than = ratio_of(rule.than);
            if (!outcome.than) {
                return outcome;
            }
            outcome.passed = *outcome.subject > *outcome.than * rule.factor;
            break;
        case OrderingRule::Kind::at_most:
            outcome.passed = *outcome.subject <= rule.limit;
            break;
    }
    outcome.evaluated = true;
    outcome.detail = finding_text(rule_finding(exercise, rule, outcome), wording(exercise));
    return outcome;
}

}  // namespace grader
