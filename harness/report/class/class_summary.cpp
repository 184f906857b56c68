// The class summary: sorting, statistics, root causes, flags and sentence clusters, computed
// from the Reports once and read by every writer.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/kernel_ids.hpp"
#include "common/text.hpp"
#include "model/bank_model.hpp"
#include "model/diagnosis.hpp"
#include "model/finding.hpp"
#include "model/measurements.hpp"
#include "model/report.hpp"
#include "report/class/class_detail.hpp"
#include "report/class_outputs.hpp"
#include "report/prairielearn_scores.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace class_detail {

// Folders decide the order everywhere, so two runs over the same class give the same files.
std::vector<const ClassEntry*> sorted_by_folder(const std::vector<ClassEntry>& entries) {
    std::vector<const ClassEntry*> sorted;
    sorted.reserve(entries.size());
    for (const ClassEntry& entry : entries) {
        sorted.push_back(&entry);
    }
    std::stable_sort(sorted.begin(), sorted.end(), [](const ClassEntry* a, const ClassEntry* b) {
        if (a->student_folder != b->student_folder) {
            return a->student_folder < b->student_folder;
        }
        return a->report.student_id < b->report.student_id;
    });
    return sorted;
}

double median_of(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t middle = values.size() / 2;
    return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2.0;
}

bool plottable(double ratio) {
    return std::isfinite(ratio) && ratio > 0.0;
}

bool timed_on_gpu(const Report& report) {
    return report.environment.backend == "cuda" && report.environment.gpu_available;
}

bool modeled(const Report& report) {
    return report.environment.backend == "sim";
}

// The check columns: every check id in the order of the first report that has it.
std::vector<CheckSummary> check_columns(const std::vector<const ClassEntry*>& sorted) {
    std::vector<CheckSummary> columns;
    for (const ClassEntry* entry : sorted) {
        for (const CheckResult& check : entry->report.checks) {
            const bool known =
                std::any_of(columns.begin(), columns.end(),
                            [&](const CheckSummary& column) { return column.id == check.id; });
            if (!known) {
                CheckSummary column;
                column.id = check.id;
                column.title = check.title;
                column.max_points = check.max_points;
                columns.push_back(column);
            }
        }
    }
    return columns;
}

// The stages that come before the student's kernel runs: a failure there is the root cause of
// whatever follows, even where a later check still ran.
bool before_the_kernel_runs(const CheckResult& check) {
    return check.kind == "answers_file" || check.kind == "compile_abi";
}

struct RootCause {
    std::string key;
    std::string reason;
    std::string cause = {};
    std::string area = {};
};

std::string check_reason(const CheckResult& check) {
    return "Failed: " + (check.title.empty() ? check.id : check.title);
}

RootCause cause_root(Cause cause) {
    const std::string key(to_string(cause));
    return RootCause{"cause:" + key, std::string(cause_title(cause)), key,
                     std::string(to_string(area_of(cause)))};
}

// A file the submission lacks is a cause of its own, with its own advice: not "Compile and ABI"
// for a missing kernel file, nor "Answers file" for an empty folder. The folder's own cause
// first (grade_submission's folder_problem: empty, one folder down, another exercise's work),
// else the files it lacks; each a Cause, as the diagnosis names it (a report read from a grader
// that wrote no diagnosis).
std::optional<RootCause> missing_files(const Report& report) {
    if (const std::optional<FolderProblem>& problem = report.folder_problem) {
        // The folder's cause with what the instructor does about it.
        RootCause root = cause_root(cause_of(problem->kind));
        switch (problem->kind) {
            case FolderProblem::Kind::empty:
                root.reason = "An empty folder: nothing was handed in (or the upload failed)";
                break;
            case FolderProblem::Kind::one_folder_down:
                root.reason =
                    "The files are one folder down, beside other folders: the student handed in "
                    "the folder that holds them";
                break;
            case FolderProblem::Kind::other_exercise:
                // One group for each other exercise: each is moved to its own class.
                root.key += ":" + problem->detail;
                root.reason = "Another exercise's work (" + problem->detail +
                              "): graded as this one; grade it with --exercise " + problem->detail +
                              " or move it to that exercise's class";
                break;
            case FolderProblem::Kind::misnamed_file:
                root.reason = "A file under another name (" + problem->detail + ")";
                break;
        }
        return root;
    }
    if (report.missing_files.size() > 1) {
        return cause_root(Cause::missing_files);
    }
    for (const CheckResult& check : report.checks) {
        if (check.status != CheckStatus::failed) {
            continue;
        }
        for (const Finding& finding : check.findings) {
            if (finding.kind == FindingKind::kernel_file_missing) {
                return cause_root(Cause::missing_kernel_file);
            }
        }
    }
    if (report.missing_files.size() == 1) {
        return cause_root(Cause::missing_answers_file);  // the kernel's would have a finding
    }
    return std::nullopt;
}

// The first stage that failed, or nullopt where nothing did (a pass with full marks) or the grade
// does not count (ungradable: listed apart).
std::optional<RootCause> root_cause(const Report& report) {
    if (report.verdict == Verdict::ungradable) {
        return std::nullopt;
    }
    if (report.folder_problem) {
        return missing_files(report);  // the folder's cause, with its detail
    }
    if (const std::optional<Diagnosis>& diagnosis = report.diagnosis) {
        return cause_root(diagnosis->cause);
    }
    if (auto missing = missing_files(report)) {
        return missing;
    }
    const std::optional<Interruption>& stop = report.interruption;
    const bool kernel_stopped = stop && stop->students_fault;
    for (const CheckResult& check : report.checks) {
        if (check.review || check.status != CheckStatus::failed) {
            continue;
        }
        if (kernel_stopped && !before_the_kernel_runs(check)) {
            break;  // the stop explains the checks after it
        }
        return RootCause{"check:" + check.id, check_reason(check)};
    }
    if (kernel_stopped) {
        return cause_root(cause_of(stop->kind));
    }
    if (report.verdict == Verdict::fail) {
        return RootCause{"summary:" + report.summary,
                         report.summary.empty() ? "No reason given" : report.summary};
    }
    return std::nullopt;
}

// Ids compare as people mean them: the same letters, whatever the case, the surrounding spaces,
// invisible characters or look-alike letters (text::id_key, UTS #39).
std::string id_key(const std::string& id) {
    return text::id_key(id);
}

const CheckResult* find_check(const Report& report, const std::string& id) {
    const auto found = std::find_if(report.checks.begin(), report.checks.end(),
                                    [&](const CheckResult& check) { return check.id == id; });
    return found == report.checks.end() ? nullptr : &*found;
}

const CheckResult* find_kind(const Report& report, std::string_view kind) {
    const auto found = std::find_if(report.checks.begin(), report.checks.end(),
                                    [&](const CheckResult& check) { return check.kind == kind; });
    return found == report.checks.end() ? nullptr : &*found;
}

}  // namespace class_detail

using namespace class_detail;

std::vector<std::string> SubmissionFlags::lines() const {
    std::vector<std::string> out;
    if (no_id) {
        out.push_back("no student id");
    }
    if (example_id) {
        out.push_back("the starter kit's student id");
    }
    if (!same_id_as.empty()) {
        std::string line = "same student id as ";
        for (std::size_t i = 0; i < same_id_as.size(); ++i) {
            line += (i > 0 ? ", " : "") + same_id_as[i];
        }
        out.push_back(line);
    }
    if (measured_same_as_example) {
        out.push_back("measured values the starter kit's example's, not the student's own");
    }
    if (measured_same_as_modeled) {
        out.push_back("measured values the simulator's modeled ratios, not a GPU's times");
    }
    if (no_sentence) {
        out.push_back("no sentence");
    }
    if (sentence_same_as_lesson || sentence_nearly_lesson) {
        out.push_back(std::string("sentence ") +
                      (sentence_same_as_lesson ? "same as" : "nearly the same as") +
                      " the lesson's own solution (its course page)");
    }
    if (sentence_same_as_example || sentence_nearly_example) {
        out.push_back(std::string("sentence ") +
                      (sentence_same_as_example ? "same as" : "nearly the same as") +
                      " the starter kit's example");
    }
    if (!same_sentence_as.empty()) {
        // A cluster of 60 is one short line, not 59 names on each of 60 rows.
        const std::string kind = sentence_cluster_identical ? "same as" : "nearly the same as";
        std::string line;
        if (same_sentence_as.size() <= 3) {
            line = "sentence " + kind + " ";
            for (std::size_t i = 0; i < same_sentence_as.size(); ++i) {
                line += (i > 0 ? ", " : "") + same_sentence_as[i];
            }
        } else {
            line = "sentence " + kind + " " + std::to_string(same_sentence_as.size()) + " others'";
        }
        if (sentence_cluster > 0) {
            line += " (sentence cluster " + std::to_string(sentence_cluster) + ")";
        }
        out.push_back(line);
    }
    return out;
}

namespace {

// A sentence as words for comparing: split at every ASCII character that is not a letter or a
// digit, each piece through text::comparison_key (case and Unicode punctuation folded), numbered
// by `ids` so that words compare as integers. Long texts compare by their first words only.
std::vector<std::uint32_t> sentence_words(const std::string& sentence,
                                          std::map<std::string, std::uint32_t>& ids) {
    constexpr std::size_t kMaxWords = 400;
    std::vector<std::uint32_t> words;
    std::size_t start = 0;
    while (start < sentence.size() && words.size() < kMaxWords) {
        std::size_t end = start;
        while (end < sentence.size() &&
               !(static_cast<unsigned char>(sentence[end]) < 0x80 &&
                 std::isalnum(static_cast<unsigned char>(sentence[end])) == 0)) {
            ++end;
        }
        if (end > start) {
            const std::string word = text::comparison_key(sentence.substr(start, end - start));
            if (!word.empty()) {
                words.push_back(
                    ids.emplace(word, static_cast<std::uint32_t>(ids.size())).first->second);
            }
        }
        start = end + 1;
    }
    return words;
}

// Whether two word lists are at most `limit` word edits apart (a word changed, added or
// dropped): Levenshtein's distance within a band of width `limit`, stopping once every cell of a
// row is over it.
bool within_word_edits(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b,
                       std::size_t limit) {
    const std::size_t n = a.size();
    const std::size_t m = b.size();
    if ((n > m ? n - m : m - n) > limit) {
        return false;
    }
    const std::size_t over = limit + 1;
    std::vector<std::size_t> previous(m + 1, over);
    std::vector<std::size_t> current(m + 1, over);
    for (std::size_t j = 0; j <= std::min(m, limit); ++j) {
        previous[j] = j;
    }
    for (std::size_t i = 1; i <= n; ++i) {
        const std::size_t from = i > limit ? i - limit : 1;
        const std::size_t to = std::min(m, i + limit);
        std::fill(current.begin(), current.end(), over);
        current[0] = i <= limit ? i : over;
        std::size_t row_best = current[0];
        for (std::size_t j = from; j <= to; ++j) {
            const std::size_t cost = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            current[j] = std::min({cost, previous[j] + 1, current[j - 1] + 1, over});
            row_best = std::min(row_best, current[j]);
        }
        if (row_best > limit) {
            return false;
        }
        std::swap(previous, current);
    }
    return previous[m] <= limit;
}

// How many word edits still make two sentences near-identical: one in twelve words of the
// longer, at least one. A word or two changed in a sentence of 30 words joins; another opening
// clause (five words or more) does not.
std::size_t near_identical_edits(std::size_t words_a, std::size_t words_b) {
    return std::max<std::size_t>(1, std::max(words_a, words_b) / 12);
}

// Sentences shorter than this are near-identical to nothing: "Coprime." and "gcd" are one word
// apart, and neither is a copy of the other.
constexpr std::size_t kNearIdenticalMinWords = 4;

bool near_identical(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {
    return std::min(a.size(), b.size()) >= kNearIdenticalMinWords &&
           within_word_edits(a, b, near_identical_edits(a.size(), b.size()));
}

enum class Likeness { none, nearly, same };

// How like one sentence another is: the same comparison key, near-identical, or neither.
Likeness likeness(const std::string& sentence, const std::string& other) {
    const std::string key = text::comparison_key(sentence);
    if (key.empty()) {
        return Likeness::none;
    }
    if (key == text::comparison_key(other)) {
        return Likeness::same;
    }
    std::map<std::string, std::uint32_t> ids;
    return near_identical(sentence_words(sentence, ids), sentence_words(other, ids))
               ? Likeness::nearly
               : Likeness::none;
}

// How like the lesson's solution a sentence is: any one of its sentences, or several in a row
// handed in as one.
Likeness lesson_likeness(const std::string& sentence, const std::vector<std::string>& lesson) {
    Likeness best = Likeness::none;
    for (std::size_t first = 0; first < lesson.size() && best != Likeness::same; ++first) {
        std::string run;
        for (std::size_t last = first; last < lesson.size() && best != Likeness::same; ++last) {
            run += (last > first ? " " : "") + lesson[last];
            best = std::max(best, likeness(sentence, run));
        }
    }
    return best;
}

// Whether a report's measured values are these, every one (two or more, one of them far from
// 1, so that a kernel that is 1 everywhere is not taken for a copy): within `tolerance` of each.
bool claims_are(const Report& report, const std::vector<ClaimedRatio>& values, double tolerance) {
    std::size_t matched = 0;
    bool telling = false;
    for (const ClaimedRatio& value : values) {
        const auto row =
            std::find_if(report.rows.begin(), report.rows.end(), [&](const ReportRow& r) {
                return r.kernel == value.kernel && r.stride == value.stride && r.claimed_ratio;
            });
        if (row == report.rows.end() || std::abs(*row->claimed_ratio - value.ratio) > tolerance) {
            return false;
        }
        ++matched;
        telling = telling || std::abs(value.ratio - 1.0) > 0.1;
    }
    return matched >= 2 && telling;
}

// Modeled ratios are printed with two decimals: a value typed from them is within half the last.
constexpr double kPrintedRatioTolerance = 0.005 + 1e-9;

// A student graded on the simulator whose measured values are their own kernel's modeled ratios,
// as `grader grade` printed them where there was no GPU.
bool claims_own_modeled(const Report& report) {
    if (!modeled(report)) {
        return false;
    }
    std::vector<ClaimedRatio> own;
    for (const ReportRow& row : report.rows) {
        if (row.kernel == kStudentKernel && row.claimed_ratio && row.ratio) {
            own.push_back({row.kernel, row.stride, *row.ratio});
        }
    }
    return claims_are(report, own, kPrintedRatioTolerance);
}

}  // namespace

std::vector<SentenceCluster> cluster_sentences(const std::vector<ClassEntry>& entries,
                                               const ClassReportOptions& options) {
    const std::vector<const ClassEntry*> sorted = sorted_by_folder(entries);
    // Identical sentences first, by key; then near-identical keys joined (union-find).
    std::vector<std::string> keys;
    std::map<std::string, std::vector<const ClassEntry*>> by_key;
    for (const ClassEntry* entry : sorted) {
        const std::string key = text::comparison_key(entry->report.sentence);
        if (key.empty()) {
            continue;
        }
        if (by_key.find(key) == by_key.end()) {
            keys.push_back(key);
        }
        by_key[key].push_back(entry);
    }
    std::vector<std::size_t> parent(keys.size());
    for (std::size_t i = 0; i < parent.size(); ++i) {
        parent[i] = i;
    }
    const auto root = [&](std::size_t i) {
        while (parent[i] != i) {
            i = parent[i] = parent[parent[i]];
        }
        return i;
    };
    std::map<std::string, std::uint32_t> word_ids;
    std::vector<std::vector<std::uint32_t>> words;
    words.reserve(keys.size());
    for (const std::string& key : keys) {
        words.push_back(sentence_words(by_key[key].front()->report.sentence, word_ids));
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
        for (std::size_t j = i + 1; j < keys.size(); ++j) {
            if (root(i) != root(j) && near_identical(words[i], words[j])) {
                parent[root(j)] = root(i);
            }
        }
    }
    std::map<std::size_t, SentenceCluster> by_root;
    std::map<std::size_t, std::size_t> distinct_keys;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        SentenceCluster& cluster = by_root[root(i)];
        ++distinct_keys[root(i)];
        for (const ClassEntry* entry : by_key[keys[i]]) {
            if (cluster.folders.empty()) {
                cluster.sentence = entry->report.sentence;
            }
            cluster.folders.push_back(entry->student_folder);
        }
    }
    std::vector<SentenceCluster> clusters;
    for (auto& [r, cluster] : by_root) {
        if (cluster.folders.size() > 1) {
            cluster.identical = distinct_keys[r] == 1;
            std::sort(cluster.folders.begin(), cluster.folders.end());
            clusters.push_back(std::move(cluster));
        }
    }
    std::stable_sort(clusters.begin(), clusters.end(),
                     [](const SentenceCluster& a, const SentenceCluster& b) {
                         if (a.folders.size() != b.folders.size()) {
                             return a.folders.size() > b.folders.size();
                         }
                         return a.folders.front() < b.folders.front();
                     });
    for (std::size_t i = 0; i < clusters.size(); ++i) {
        SentenceCluster& cluster = clusters[i];
        cluster.number = i + 1;
        if (lesson_likeness(cluster.sentence, options.lesson_solution) != Likeness::none) {
            cluster.source = "the lesson's own solution";
        } else if (!options.example_sentence.empty() &&
                   likeness(cluster.sentence, options.example_sentence) != Likeness::none) {
            cluster.source = "the starter kit's example";
        }
    }
    return clusters;
}

namespace {

std::map<std::string, SubmissionFlags> flags_with(const std::vector<ClassEntry>& entries,
                                                  const ClassReportOptions& options,
                                                  const std::vector<SentenceCluster>& clusters) {
    const std::vector<const ClassEntry*> sorted = sorted_by_folder(entries);
    std::map<std::string, std::vector<std::string>> by_id;
    const std::string example_id = id_key(options.example_student_id);
    std::map<std::string, SubmissionFlags> flags;
    for (const ClassEntry* entry : sorted) {
        const Report& report = entry->report;
        SubmissionFlags& mine = flags[entry->student_folder];
        const std::string id = id_key(report.student_id);
        // A grade the harness could not finish never read the answers file: its missing id is
        // the harness's failure, said in its report, not the student's.
        const bool harness_failed = report.interruption && !report.interruption->students_fault;
        if (id.empty()) {
            mine.no_id = !harness_failed;
        } else {
            mine.example_id = !example_id.empty() && id == example_id;
            by_id[id].push_back(entry->student_folder);
        }
        const std::string sentence = text::comparison_key(report.sentence);
        const CheckResult* review = find_kind(report, "sentence");
        // An answers file that could not be read has no sentence either; its own check says so.
        mine.no_sentence =
            review != nullptr ? review->status == CheckStatus::failed : sentence.empty();
        if (!sentence.empty()) {
            const Likeness example = options.example_sentence.empty()
                                         ? Likeness::none
                                         : likeness(report.sentence, options.example_sentence);
            mine.sentence_same_as_example = example == Likeness::same;
            mine.sentence_nearly_example = example == Likeness::nearly;
            const Likeness lesson = lesson_likeness(report.sentence, options.lesson_solution);
            mine.sentence_same_as_lesson = lesson == Likeness::same;
            mine.sentence_nearly_lesson = lesson == Likeness::nearly;
        }
        // Typed exactly as the example has them; the modeled ratios as printed.
        mine.measured_same_as_example =
            !options.example_ratios.empty() && claims_are(report, options.example_ratios, 1e-9);
        mine.measured_same_as_modeled =
            (!options.modeled_ratios.empty() &&
             claims_are(report, options.modeled_ratios, kPrintedRatioTolerance)) ||
            claims_own_modeled(report);
    }
    const auto others = [](const std::vector<std::string>& group, const std::string& me) {
        std::vector<std::string> rest;
        for (const auto& folder : group) {
            if (folder != me) {
                rest.push_back(folder);
            }
        }
        return rest;
    };
    for (const auto& [id, group] : by_id) {
        if (group.size() > 1) {
            for (const auto& folder : group) {
                flags[folder].same_id_as = others(group, folder);
            }
        }
    }
    for (const SentenceCluster& cluster : clusters) {
        for (const auto& folder : cluster.folders) {
            SubmissionFlags& mine = flags[folder];
            mine.same_sentence_as = others(cluster.folders, folder);
            mine.sentence_cluster = cluster.number;
            mine.sentence_cluster_identical = cluster.identical;
        }
    }
    for (auto it = flags.begin(); it != flags.end();) {
        it = it->second.any() ? std::next(it) : flags.erase(it);
    }
    return flags;
}

}  // namespace

std::map<std::string, SubmissionFlags> flag_submissions(const std::vector<ClassEntry>& entries,
                                                        const ClassReportOptions& options) {
    return flags_with(entries, options, cluster_sentences(entries, options));
}

ClassData compute_class_data(const std::vector<ClassEntry>& entries,
                             const ClassReportOptions& options) {
    ClassData data;
    data.sorted = sorted_by_folder(entries);
    data.summary = summarize_class(entries);
    if (data.summary.exercise_id.empty()) {
        // A class with no report yet still graded its exercise: a resumed run reads it here.
        data.summary.exercise_id = options.exercise_id;
    }
    data.clusters = cluster_sentences(entries, options);
    data.flags = flags_with(entries, options, data.clusters);
    return data;
}

ClassOutputTexts write_class_outputs_text(const std::vector<ClassEntry>& entries,
                                          const nlohmann::json& run_info,
                                          const ClassReportOptions& options) {
    const ClassData data = compute_class_data(entries, options);
    const std::string qid = !options.prairielearn_qid.empty() ? options.prairielearn_qid
                            : !options.exercise_id.empty()    ? options.exercise_id
                                                              : data.summary.exercise_id;
    return {write_gradebook_csv(data, options), write_class_summary_json(data, run_info, options),
            write_class_report_html(data, options), write_prairielearn_scores_csv(entries, qid)};
}

SentenceReview sentence_review_of(const SubmissionFlags& flags) {
    SentenceReview review;
    review.same_as_example = flags.sentence_same_as_example;
    review.same_as_others = flags.same_sentence_as.size();
    return review;
}

std::string numbers_source(const Report& report) {
    if (modeled(report)) {
        return "modeled on the PTX simulator";
    }
    if (timed_on_gpu(report)) {
        const std::string& device = report.environment.device_name;
        return "timed on " + (device.empty() ? std::string("an unnamed GPU") : device);
    }
    if (report.environment.backend == "cuda") {
        return "not measured: no GPU";
    }
    return "not measured: grading stopped first";
}

// Why a row reads as it does: a stop where it decided the grade (the student's kernel stopped, or
// the grade could not count), else the report's own summary, which leads with the first failure.
// A failed compile on a machine without a GPU is a failed compile, not "no_gpu".
std::optional<StudentCause> student_cause(const Report& report) {
    if (const auto cause = root_cause(report)) {
        return StudentCause{cause->key, cause->reason};
    }
    return std::nullopt;
}

std::string class_reason(const Report& report) {
    if (const std::optional<Diagnosis>& diagnosis = report.diagnosis) {
        const std::string title(cause_title(diagnosis->cause));
        const std::string sentence = to_sentence(*diagnosis);
        return sentence.empty() ? title : title + ": " + sentence;
    }
    if (report.interruption &&
        (report.verdict == Verdict::ungradable || report.interruption->students_fault)) {
        const Interruption& stop = *report.interruption;
        std::string reason(to_string(stop.kind));
        if (!stop.stage.empty()) {
            reason += " at " + stop.stage;
        }
        if (!stop.message.empty()) {
            reason += ": " + stop.message;
        }
        return reason;
    }
    return report.summary;
}

namespace {

// One entry's share of the class's counts: its verdict, score, how its numbers were made, its
// checks and the root cause of its failure.
void count_entry(const ClassEntry& entry, ClassSummary& summary,
                 std::map<std::string, FailureReason>& reasons, std::set<std::string>& devices) {
    const Report& report = entry.report;
    switch (report.verdict) {
        case Verdict::pass:
            ++summary.passed;
            break;
        case Verdict::fail:
            ++summary.failed;
            break;
        case Verdict::ungradable:
            ++summary.ungradable;
            summary.not_graded.push_back({entry.student_folder, class_reason(report)});
            break;
    }
    summary.max_score = std::max(summary.max_score, report.max_score);
    if (report.verdict != Verdict::ungradable) {
        summary.graded_scores.push_back(report.score);
    }
    if (summary.exercise_id.empty()) {
        summary.exercise_id = report.exercise_id;
    }
    if (summary.exercise_title.empty()) {
        summary.exercise_title = report.exercise_title;
        summary.banks = report.banks;
    }
    if (timed_on_gpu(report)) {
        ++summary.timed;
        if (!report.environment.device_name.empty()) {
            devices.insert(report.environment.device_name);
        }
    } else if (modeled(report)) {
        ++summary.modeled;
    }

    for (const CheckResult& check : report.checks) {
        for (CheckSummary& column : summary.checks) {
            if (column.id == check.id) {
                ++column.reported;
                column.passed += check.status == CheckStatus::passed ? 1 : 0;
                column.failed += check.status == CheckStatus::failed ? 1 : 0;
                column.not_run += check.status == CheckStatus::not_run ? 1 : 0;
            }
        }
    }
    if (const auto cause = root_cause(report)) {
        FailureReason& reason = reasons[cause->key];
        reason.key = cause->key;
        reason.reason = cause->reason;
        reason.cause = cause->cause;
        reason.area = cause->area;
        reason.folders.push_back(entry.student_folder);  // entries arrive sorted
    }
}

}  // namespace

ClassSummary summarize_class(const std::vector<ClassEntry>& entries) {
    const std::vector<const ClassEntry*> sorted = sorted_by_folder(entries);
    ClassSummary summary;
    summary.submissions = sorted.size();
    summary.checks = check_columns(sorted);

    std::map<std::string, FailureReason> reasons;
    // Columns: (stride, "") in a sweep; (0, label) per kernel where the exercise has none.
    using Column = std::pair<int, std::string>;
    std::map<Column, std::vector<double>> student_ratios;
    std::map<Column, std::vector<double>> reference_ratios;
    std::map<Column, unsigned> kernel_degrees;
    std::vector<Column> kernel_order;  // first seen, for an exercise without a sweep
    std::set<std::string> devices;

    for (const ClassEntry* entry : sorted) {
        const Report& report = entry->report;
        count_entry(*entry, summary, reasons, devices);

        if (summary.ratio_base.empty() && !report.ratio_base.empty()) {
            summary.ratio_base = report.ratio_base;
        }
        const bool sweep = std::any_of(report.rows.begin(), report.rows.end(),
                                       [](const ReportRow& row) { return row.stride > 0; });
        if (!sweep && !report.rows.empty()) {
            // Each kernel is a column of its own: the student's, and each of the exercise's at
            // its median over the grades.
            summary.sweep = false;
            for (const ReportRow& row : report.rows) {
                const Column column{0, row.label.empty() ? row.kernel : row.label};
                if (kernel_degrees.emplace(column, row.degree).second) {
                    kernel_order.push_back(column);
                }
                if (!row.ratio || !plottable(*row.ratio)) {
                    continue;
                }
                (row.kernel == kStudentKernel ? student_ratios : reference_ratios)[column]
                    .push_back(*row.ratio);
            }
            continue;
        }
        // The reference kernel is timed in every grade; where a grade has no reference row at a
        // stride, the student row carries the reference's ratio it was compared with.
        std::map<int, double> reference_here;
        for (const ReportRow& row : report.rows) {
            if (row.kernel == report.reference_kernel && row.ratio && plottable(*row.ratio)) {
                reference_here[row.stride] = *row.ratio;
            }
        }
        for (const ReportRow& row : report.rows) {
            if (row.kernel != kStudentKernel) {
                continue;
            }
            if (row.ratio && plottable(*row.ratio)) {
                student_ratios[{row.stride, ""}].push_back(*row.ratio);
            }
            if (row.reference_ratio && plottable(*row.reference_ratio)) {
                reference_here.emplace(row.stride, *row.reference_ratio);
            }
        }
        for (const auto& [stride, ratio] : reference_here) {
            reference_ratios[{stride, ""}].push_back(ratio);
        }
    }

    if (!summary.graded_scores.empty()) {
        double total = 0.0;
        for (double score : summary.graded_scores) {
            total += score;
        }
        summary.mean_score = total / static_cast<double>(summary.graded_scores.size());
        summary.median_score = median_of(summary.graded_scores);
    }

    for (auto& [key, reason] : reasons) {
        summary.failure_reasons.push_back(std::move(reason));
    }
    std::stable_sort(summary.failure_reasons.begin(), summary.failure_reasons.end(),
                     [](const FailureReason& a, const FailureReason& b) {
                         if (a.folders.size() != b.folders.size()) {
                             return a.folders.size() > b.folders.size();
                         }
                         return a.reason < b.reason;
                     });

    std::vector<Column> columns;
    if (summary.sweep) {
        std::set<Column> strides;
        for (const auto& [column, ratios] : student_ratios) {
            strides.insert(column);
        }
        for (const auto& [column, ratios] : reference_ratios) {
            strides.insert(column);
        }
        columns.assign(strides.begin(), strides.end());
    } else {
        columns = kernel_order;
    }
    for (const Column& column : columns) {
        StrideSummary row;
        row.stride = column.first;
        row.label = column.second;
        row.degree =
            summary.sweep ? conflict_degree(column.first, summary.banks) : kernel_degrees[column];
        const auto students = student_ratios.find(column);
        if (students != student_ratios.end()) {
            const std::vector<double>& ratios = students->second;
            row.student_count = ratios.size();
            row.student_ratio =
                RatioSpread{*std::min_element(ratios.begin(), ratios.end()), median_of(ratios),
                            *std::max_element(ratios.begin(), ratios.end())};
        }
        const auto reference = reference_ratios.find(column);
        if (reference != reference_ratios.end()) {
            row.reference_ratio = median_of(reference->second);
        }
        summary.strides.push_back(row);
    }
    summary.timed_on.assign(devices.begin(), devices.end());
    return summary;
}

}  // namespace grader
