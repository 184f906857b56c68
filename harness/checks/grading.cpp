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
#include "model/describe.hpp"
#include "model/diagnosis.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace {

const std::string kStudent(kStudentKernel);

// How a ratio reads in this exercise: "3.16x", or "236%" where the exercise speaks in percent.
std::string ratio_text(const Exercise& exercise, double ratio) {
    if (exercise.ratios.as_percent) {
        return format_number(ratio * 100.0, 0) + "%";
    }
    return format_number(ratio, 2) + "x";
}

// "stride 3", or the kernel's label where there is no sweep.
// " (128-bit)", or nothing for 32-bit accesses.
std::string width_text(std::uint32_t bytes_per_lane) {
    const std::string width = describe_access_width(bytes_per_lane);
    return width.empty() ? width : " (" + width + ")";
}

// What a count of shared accesses says, with the width's fewest wavefronts: "32.00 wavefronts
// per request where 1 is the fewest their width allows: a conflict degree of 32.00".
std::string degree_sentence(std::uint64_t requests, std::uint64_t wavefronts,
                            std::uint64_t ideal_wavefronts, double degree) {
    const double per_request =
        requests > 0 ? static_cast<double>(wavefronts) / static_cast<double>(requests) : 0.0;
    if (ideal_wavefronts == 0) {
        return format_number(per_request, 2) + " wavefronts per request";
    }
    const double fewest =
        requests > 0 ? static_cast<double>(ideal_wavefronts) / static_cast<double>(requests) : 0.0;
    return format_number(per_request, 2) + " wavefronts per request where " +
           format_number(fewest, fewest == std::floor(fewest) ? 0 : 2) +
           " is the fewest their width allows: a conflict degree of " + format_number(degree, 2);
}

// "the shared loads at probe.cu:34 counted ..." (the simulator's worst line).
std::string counted_line_text(const SharedLineCounts& line) {
    return std::string(line.store ? "the shared stores" : "the shared loads") + " at " +
           describe_line_place(line.file, line.line) + width_text(line.bytes_per_lane) +
           " counted " +
           degree_sentence(line.requests, line.wavefronts, line.ideal_wavefronts, line.degree);
}

// "probe.cu:34, whose shared loads counted ..." (a line the simulator blames).
std::string blamed_line_text(const SharedLineCounts& line) {
    return describe_line_place(line.file, line.line) + ", whose shared " +
           (line.store ? "stores" : "loads") + width_text(line.bytes_per_lane) + " counted " +
           degree_sentence(line.requests, line.wavefronts, line.ideal_wavefronts, line.degree);
}

// "the shared loads counted ..." (a launch's totals).
std::string counted_totals_text(bool stores, std::uint64_t requests, std::uint64_t wavefronts,
                                std::uint64_t ideal_wavefronts) {
    const double degree =
        static_cast<double>(wavefronts) /
        static_cast<double>(ideal_wavefronts > 0 ? ideal_wavefronts
                                                 : std::max<std::uint64_t>(1, requests));
    return std::string(stores ? "the shared stores" : "the shared loads") + " counted " +
           degree_sentence(requests, wavefronts, ideal_wavefronts, degree);
}

std::string case_text(const Exercise& exercise, const Case& c) {
    if (c.stride > 0) {
        return "stride " + std::to_string(c.stride);
    }
    return c.kernel == kStudent ? std::string("your kernel") : exercise.kernel(c.kernel).label;
}

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
    check.message = "Not run: " + reason + ".";
}

std::string where(const SourceLocation& location) {
    return shown_location(location);
}

// Failing items first, so the summary and a reader's eye land on what went wrong.
void failures_first(std::vector<std::string>& details, const std::string& passing_prefix) {
    std::stable_partition(details.begin(), details.end(),
                          [&](const std::string& d) { return d.rfind(passing_prefix, 0) != 0; });
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
class Grading {
public:
    Grading(const Exercise& exercise, const Submission& submission, const Measurements& m)
        : exercise_(exercise), submission_(submission), m_(m) {
        calibration_ = calibration_failures(exercise, m);
        timing_reason_ = timing_unavailable_reason();
    }

    CheckResult check(const CheckSpec& spec) const {
        CheckResult check;
        check.id = spec.id;
        check.title = spec.title;
        check.required = spec.required;
        check.review = spec.review;
        check.max_points = spec.points;
        check.kind = std::string(to_string(spec.kind));
        if (timing_check(spec) && !timing_reason_.empty()) {
            not_run(check, timing_reason_);
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
    // the model with the exercise's own kernels. Empty when they can.
    std::string timing_unavailable_reason() const {
        const bool timed = std::any_of(m_.runs.begin(), m_.runs.end(),
                                       [](const KernelRun& r) { return r.ratio.has_value(); });
        if (!calibration_.empty()) {
            return "this machine does not show the model with the exercise's own kernels, so it "
                   "cannot grade timings (the machine is unfit, not your kernel)";
        }
        if (!timed && m_.environment.backend == "sim" && !exercise_.simulator.modeled_timing) {
            return "timing needs a GPU for this exercise (its file sets simulator.modeled_timing: "
                   "false); the counted degree stands in";
        }
        return {};
    }

    void answers_file(const CheckSpec& spec, CheckResult& check) const {
        std::size_t blanks = 0;
        for (const auto& problem : submission_.problems) {
            check.details.push_back(where(problem.location) + ": " +
                                    (problem.field.empty() ? "" : problem.field + ": ") +
                                    problem.message);
            blanks += problem.message.rfind("still blank", 0) == 0 ? 1 : 0;
        }
        if (blanks > 0) {
            check.details.insert(check.details.begin(),
                                 std::to_string(blanks) + (blanks == 1 ? " blank" : " blanks") +
                                     " of the starter kit's " + exercise_.submission_answers +
                                     " still to fill in, named below");
        }
        // Values read as meant (a decimal comma, a unit) pass, each with how to write it.
        for (const auto& note : submission_.notes) {
            check.details.push_back(where(note.location) + ": " +
                                    (note.field.empty() ? "" : note.field + ": ") + note.message);
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
            check.details.push_back(
                where({exercise_.submission_source, problem.line, problem.column}) + ": " +
                problem.message);
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
            // Without an error line the compile's own sentence leads the log ("probeSharedStride
            // is overloaded in probe.cu ..."): that is the reason, not NVRTC.
            const std::string first_line = c.log.substr(0, c.log.find('\n'));
            check.details.push_back(
                !errors.empty() ? "NVRTC could not compile " + exercise_.submission_source + ": " +
                                      errors.front()
                : first_line.empty() ? "NVRTC could not compile " + exercise_.submission_source +
                                           " (the log is below)"
                                     : first_line);
            for (std::size_t i = 1; i < errors.size(); ++i) {
                check.details.push_back(errors[i]);
            }
        }
        if (!c.abi_problem.empty()) {
            check.details.push_back(c.abi_problem);
        }
        const bool passed =
            c.attempted && c.ok && c.vetting_problems.empty() && c.abi_problem.empty();
        finish(check, spec, passed,
               {{"kernel", exercise_.kernel_name},
                {"arch", c.arch},
                {"signature", c.signature.empty() ? exercise_.kernel_name : c.signature}});
        if (!c.attempted && c.vetting_problems.empty() && !c.log.empty()) {
            // Nothing reached the compiler: say why first ("probe.cu was not found ...").
            check.message = c.log + ".";
        } else if (!c.vetting_problems.empty()) {
            check.message = exercise_.submission_source +
                            " was refused before compiling: it uses what a submission may not "
                            "(each use is below, by line).";
        } else if (c.attempted && !c.ok) {
            // The first line names the failure: a dropped ';' is a compile error, not an ABI
            // mismatch, and the fixed ABI's sentence would send the student to the signature.
            std::string first =
                check.details.empty() ? std::string("the log is below") : check.details.front();
            const std::string nvrtc = "NVRTC could not compile " + exercise_.submission_source;
            if (first.rfind(nvrtc + ": ", 0) == 0) {
                first = first.substr(nvrtc.size() + 2);
            }
            check.message = exercise_.submission_source + " did not compile: " + first;
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
                    check.details.push_back((result.timed ? "in the timed launches, " : "") +
                                            describe_wrong_output(run.stride, result));
                    if (!result.timed) {
                        check.details.insert(check.details.end(), run.notes.begin(),
                                             run.notes.end());
                    }
                }
            }
            if (!run_compared) {
                continue;
            }
            ++ran;
            if (run_ok && !run.races.empty()) {
                // Say why a right answer fails: the order the warps ran in here is one of many.
                check.details.push_back(
                    (run.stride > 0 ? "stride " + std::to_string(run.stride) + ": " : "") +
                    "every value came out right in the order the warps ran here, but a GPU may "
                    "run them in another order");
            }
            for (const auto& race : run.races) {
                all_ok = false;
                check.details.push_back(
                    (run.stride > 0 ? "stride " + std::to_string(run.stride) + ": " : "") +
                    "a shared-memory race: " + race);
            }
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
            check.details.push_back("stopped: " + m_.interruption->message);
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
            const std::string name = answer_name(subject);
            if (row == nullptr || !row->predicted_degree) {
                check.details.push_back(name + ": no predicted degree in " +
                                        exercise_.submission_answers);
            } else if (degree && *row->predicted_degree == static_cast<int>(*degree)) {
                ++correct;
            } else {
                const std::string model =
                    subject.stride > 0
                        ? "gcd(" + std::to_string(subject.stride) + ", " +
                              std::to_string(exercise_.banks) + ") is " +
                              std::to_string(degree.value_or(0))
                        : "its conflict degree is " + std::to_string(degree.value_or(0));
                check.details.push_back(where(row->predicted_location) + ": " + name +
                                        ": you predicted " +
                                        std::to_string(*row->predicted_degree) + "; " + model);
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
                check.details.push_back(rule.description + ": a case it needs was not timed");
                continue;
            }
            all_passed = all_passed && outcome.passed;
            check.details.push_back(std::string(outcome.passed ? "holds: " : "does not hold: ") +
                                    outcome.detail);
        }
        failures_first(check.details, "holds: ");
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
            check.details.push_back(
                std::string(within ? "matches: " : "differs: ") +
                case_text(exercise_, Case{run.kernel, run.stride}) +
                (unnamed ? " (a stride you did not name)" : "") +
                (named || unnamed || run.stride == 0 ? "" : " (checked by the ordering)") +
                ": yours " + ratio_text(exercise_, *run.ratio) + ", the " +
                exercise_.kernel(spec.against).label + "'s " +
                ratio_text(exercise_, *against->ratio) + ", off by " +
                format_number(off * 100.0, 0) + "% (tolerance " +
                format_number(spec.tolerance * 100.0, 0) + "%)");
        }
        if (compared == 0) {
            not_run(check, why_student_not_run(m_));
            return;
        }
        failures_first(check.details, "matches: ");
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
                    check.details.push_back(answer_name(subject) +
                                            ": submission.yaml gives no measured value");
                    continue;
                }
                const double low = std::max(0.0, spec.band_low * *degree - spec.band_slack);
                const double high = spec.band_high * *degree + spec.band_slack;
                if (*ratio < low || *ratio > high) {
                    all_plausible = false;
                    const auto in_band = [&](double r) { return r >= low && r <= high; };
                    check.details.push_back(
                        where(row->measured_location) + ": " + answer_name(subject) +
                        ": you measured " + ratio_text(exercise_, *ratio) + "; for a " +
                        std::to_string(*degree) + "-way " +
                        (*degree == 1 ? std::string("(conflict-free) access") : "conflict") +
                        " a ratio between " + ratio_text(exercise_, low) + " and " +
                        ratio_text(exercise_, high) + " is plausible" +
                        measurement_slip(*ratio, in_band));
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
                    check.details.push_back(
                        where(row->measured_location) + ": " + answer_name(subject) +
                        ": you wrote " + ratio_text(exercise_, *ratio) +
                        measurement_slip(*ratio, [](double r) { return r >= 1.0; }));
                }
            }
        }
        for (const auto& rule : spec.rules) {
            const RuleOutcome outcome = evaluate_rule(exercise_, rule, claimed);
            ++rows;
            if (!outcome.evaluated) {  // a rule over a missing row does not hold
                all_plausible = false;
                check.details.push_back(rule.description + ": " + missing_cases(rule, claimed) +
                                        " not in submission.yaml");
                continue;
            }
            if (!outcome.passed) {
                all_plausible = false;
                check.details.push_back(rule.description + ": " + outcome.detail);
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
        int counted = 0;
        int counted_without_shared = 0;  // runs whose counts hold no shared load or store
        bool all_match = true;
        std::optional<double> worst;
        std::string source;
        // On a GPU whose launch totals do not confirm the simulator's witness of the same
        // source: the line the witness blames most, where it disagrees with the model.
        std::optional<std::pair<double, std::string>> simulator_blames;
        int judged_by_witness = 0;  // GPU runs judged by the witness's lines, which they confirm
        for (const auto& run : m_.runs) {
            if (run.kernel != spec.kernel || !run.counts) {
                continue;
            }
            const SharedAccessCounts& counts = *run.counts;
            const JudgedDegree judged = judged_degree(run, m_.environment.grid_blocks);
            if (!judged.degree) {
                ++counted_without_shared;
                continue;
            }
            const double degree = *judged.degree;
            const Case subject{run.kernel, run.stride};
            const auto model = exercise_.model_degree(subject);
            if (!model) {
                continue;
            }
            ++counted;
            source = run.count_source;
            worst = std::max(worst.value_or(0.0), degree);
            judged_by_witness += judged.confirmed_witness ? 1 : 0;
            const auto off_model = [&](double d) {
                return std::abs(d - *model) > std::max(0.01, spec.tolerance * *model);
            };
            const std::string model_text =
                "the model's degree is " +
                (subject.stride > 0 ? "gcd(" + std::to_string(subject.stride) + ", " +
                                          std::to_string(exercise_.banks) + ") = "
                                    : std::string()) +
                std::to_string(*model);
            if (off_model(degree)) {
                all_match = false;
                std::string counted_text;
                if (judged.line != nullptr) {
                    counted_text = counted_line_text(*judged.line);
                } else {
                    const auto load = counts.load_degree();
                    const auto store = counts.store_degree();
                    const bool stores = store && store.value_or(0.0) > load.value_or(0.0);
                    counted_text = counted_totals_text(
                        stores, stores ? counts.store_requests : counts.load_requests,
                        stores ? counts.store_wavefronts : counts.load_wavefronts,
                        stores ? counts.store_ideal_wavefronts : counts.load_ideal_wavefronts);
                }
                check.details.push_back(case_text(exercise_, subject) + ": " + counted_text + "; " +
                                        model_text);
            }
            const SharedLineCounts* blamed =
                judged.line == nullptr && run.witness ? run.witness->worst_line() : nullptr;
            if (blamed != nullptr && off_model(blamed->degree)) {
                const double how_far = std::abs(blamed->degree - *model) / *model;
                if (!simulator_blames || how_far > simulator_blames->first) {
                    simulator_blames = {how_far, case_text(exercise_, subject) +
                                                     ": the simulator, running this source, "
                                                     "blames " +
                                                     blamed_line_text(*blamed) + "; " + model_text};
                }
            }
        }
        if (simulator_blames) {
            check.details.push_back(simulator_blames->second);
        }
        if (judged_by_witness > 0) {
            check.details.push_back(
                "judged line by line: the GPU's launch totals confirm the simulator's count of "
                "this source (the same shared instructions, degrees within " +
                format_number(SharedAccessCounts::kWitnessTolerance * 100.0, 0) +
                "%), so the simulator's lines are the GPU's");
        }
        if (counted == 0 && counted_without_shared > 0) {
            // The device counted, and the kernel touched no shared memory: the student's kernel
            // decides that (Part 2's naive transpose), so it fails; "not run" is the machine's.
            finish(check, spec, false, {});
            check.message = "Your kernel has no shared tile: " + exercise_.kernel_name +
                            " made no shared-memory load or store in " +
                            std::to_string(counted_without_shared) +
                            (counted_without_shared == 1 ? " counted run" : " counted runs") +
                            ", so it has no bank conflicts to remove. " +
                            fill_template(spec.hint, {});
            check.details.push_back(
                "your kernel has no shared tile: 0 shared load requests and 0 shared store "
                "requests, counted by " +
                (source_of_counts(spec) == "hardware" ? std::string("the GPU's own counters")
                                                      : std::string("the simulator (PTX-level)")));
            return;
        }
        if (counted == 0) {
            not_run(check, m_.runs.empty() ? why_student_not_run(m_)
                                           : "no device counted the kernel's shared accesses");
            return;
        }
        if (!spec.rules.empty()) {
            if (!timing_reason_.empty()) {
                check.details.push_back("timing not used: " + timing_reason_);
            } else {
                const RatioLookup ratio_of = measured_ratios(exercise_, m_);
                for (const auto& rule : spec.rules) {
                    const RuleOutcome outcome = evaluate_rule(exercise_, rule, ratio_of);
                    if (!outcome.evaluated) {
                        continue;
                    }
                    all_match = all_match && outcome.passed;
                    check.details.push_back(
                        std::string(outcome.passed ? "holds: " : "does not hold: ") +
                        outcome.detail);
                }
            }
        }
        failures_first(check.details, "holds: ");
        check.details.push_back("counted by " + (source == "hardware"
                                                     ? std::string("the GPU's own counters")
                                                     : std::string("the simulator (PTX-level)")));
        for (const auto& run : m_.runs) {
            if (run.kernel == spec.kernel && !run.count_note.empty()) {
                check.details.push_back(run.count_note);
                break;  // the same reason at every stride
            }
        }
        for (const auto& read : m_.student.clock_reads) {
            check.details.push_back("flagged for review: the kernel reads " + read +
                                    "; a kernel that reads a clock can pace its own timings");
        }
        finish(check, spec, all_match, {});
        if (!all_match) {
            for (const auto& diagnosis : spec.diagnoses) {
                const bool degree_holds = !diagnosis.counted_degree_at_least ||
                                          worst.value_or(0.0) >= *diagnosis.counted_degree_at_least;
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
        check.details.push_back("\"" + submission_.sentence + "\"");
        if (!exercise_.example_sentence.empty() &&
            text::comparison_key(submission_.sentence) ==
                text::comparison_key(exercise_.example_sentence)) {
            check.details.push_back(
                "flagged for review: this is the starter kit's example sentence, word for word");
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
    // the band: "; it looks like ..., write ... instead". Empty where none does.
    std::string measurement_slip(double ratio, const std::function<bool(double)>& in_band) const {
        const bool percent = exercise_.ratios.as_percent;
        const auto shown = [&](double r) { return ratio_text(exercise_, r); };
        if (percent && ratio < 1.0 && in_band(1.0 / ratio)) {
            // The lesson's table gives bandwidth as "% of copy" (57.1); the file asks for time.
            return "; " + format_number(ratio * 100.0, 1) +
                   " looks like the lesson's bandwidth "
                   "as a percentage of the copy's; the answers file asks for time as a "
                   "percentage of the copy's time, which is 100 / " +
                   format_number(ratio * 100.0, 1) + " x 100 = " + shown(1.0 / ratio);
        }
        if (!percent && ratio < 1.0 && in_band(1.0 / ratio)) {
            return "; this looks inverted (stride 1's time divided by this one's): write this "
                   "stride's time divided by stride 1's, " +
                   shown(1.0 / ratio);
        }
        if (!percent && in_band(ratio / 100.0)) {
            return "; this looks like a percentage: write the ratio, " + shown(ratio / 100.0);
        }
        if (percent && in_band(ratio * 100.0)) {
            return "; this looks like a ratio, not a percentage: write " + shown(ratio * 100.0);
        }
        return "; if this is a time in milliseconds, write instead " +
               exercise_.answers.measured_description;
    }

    // The cases a rule needs that the lookup lacks: "stride 16", "stride 8 and stride 16".
    std::string missing_cases(const OrderingRule& rule, const RatioLookup& lookup) const {
        std::vector<const Case*> needed{&rule.subject};
        if (rule.kind == OrderingRule::Kind::closer_to) {
            needed.push_back(&rule.near);
            needed.push_back(&rule.far);
        } else if (rule.kind == OrderingRule::Kind::slower_than) {
            needed.push_back(&rule.than);
        }
        std::string names;
        int missing = 0;
        for (const Case* c : needed) {
            if (!lookup(*c)) {
                names += (names.empty() ? "" : " and ") + answer_name(*c);
                ++missing;
            }
        }
        return missing == 0 ? std::string("a value it needs is")
                            : names + (missing > 1 ? " are" : " is");
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
    std::string timing_reason_;
};

}  // namespace

std::vector<CheckResult> grade_checks(const Exercise& exercise, const Submission& submission,
                                      const Measurements& m) {
    const Grading grading(exercise, submission, m);
    std::vector<CheckResult> checks;
    for (const CheckSpec& spec : exercise.checks) {
        checks.push_back(grading.check(spec));
        checks.back().diagnosis = diagnose_check(exercise, spec, checks.back(), submission, m);
    }
    return checks;
}

RuleOutcome evaluate_rule(const Exercise& exercise, const OrderingRule& rule,
                          const RatioLookup& ratio_of) {
    RuleOutcome outcome;
    const auto subject = ratio_of(rule.subject);
    if (!subject) {
        return outcome;
    }
    const auto text = [&](double ratio) { return ratio_text(exercise, ratio); };
    const std::string subject_text = case_text(exercise, rule.subject) + " at " + text(*subject);
    switch (rule.kind) {
        case OrderingRule::Kind::closer_to: {
            const auto near = ratio_of(rule.near);
            const auto far = ratio_of(rule.far);
            if (!near || !far) {
                return outcome;
            }
            outcome.evaluated = true;
            outcome.passed = std::abs(*subject - *near) < std::abs(*subject - *far);
            outcome.detail = subject_text + " is " + (outcome.passed ? "" : "not ") + "closer to " +
                             case_text(exercise, rule.near) + " (" + text(*near) + ") than to " +
                             case_text(exercise, rule.far) + " (" + text(*far) + ")";
            break;
        }
        case OrderingRule::Kind::slower_than: {
            const auto than = ratio_of(rule.than);
            if (!than) {
                return outcome;
            }
            outcome.evaluated = true;
            outcome.passed = *subject > *than * rule.factor;
            // The observed factor beside the threshold: "is 1.96 times stride 8 (6.30x); more
            // than 1.25 times is required", never the threshold read as what was seen.
            const std::string than_text = case_text(exercise, rule.than) + " (" + text(*than) + ")";
            const std::string required = format_number(rule.factor, 2) + " times";
            if (*than > 0.0 && std::isfinite(*subject / *than)) {
                outcome.detail = subject_text + " is " + format_number(*subject / *than, 2) +
                                 " times " + than_text + "; " +
                                 (outcome.passed ? "more than " : "it must be more than ") +
                                 required + (outcome.passed ? " is required" : "");
            } else {
                outcome.detail = subject_text + " is " + (outcome.passed ? "" : "not ") +
                                 "more than " + required + " " + than_text;
            }
            break;
        }
        case OrderingRule::Kind::at_most: {
            outcome.evaluated = true;
            outcome.passed = *subject <= rule.limit;
            outcome.detail = subject_text + " is " + (outcome.passed ? "" : "not ") + "at most " +
                             text(rule.limit);
            break;
        }
    }
    return outcome;
}

}  // namespace grader
