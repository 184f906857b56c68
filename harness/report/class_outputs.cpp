#include "report/class_outputs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <sstream>

#include "common/kernel_ids.hpp"
#include "common/text.hpp"
#include "model/bank_model.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace {

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
    return check.id == "submission_file" || check.id == "compile_abi";
}

struct RootCause {
    std::string key;
    std::string reason;
};

std::string check_reason(const CheckResult& check) {
    return "Failed: " + (check.title.empty() ? check.id : check.title);
}

std::string stop_reason(const Interruption& stop) {
    return "The kernel stopped: " + std::string(to_string(stop.kind)) +
           (stop.stage.empty() ? "" : " at " + stop.stage);
}

// The first stage that failed, or nullopt where nothing did (a pass with full marks) or the grade
// does not count (ungradable: listed apart).
std::optional<RootCause> root_cause(const Report& report) {
    if (report.verdict == Verdict::ungradable) {
        return std::nullopt;
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
        return RootCause{"interruption:" + std::string(to_string(stop->kind)), stop_reason(*stop)};
    }
    if (report.verdict == Verdict::fail) {
        return RootCause{"summary:" + report.summary,
                         report.summary.empty() ? "No reason given" : report.summary};
    }
    return std::nullopt;
}

std::string trim_spaces(const std::string& text) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) {
        return {};
    }
    return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

// Ids compare as people mean them: the same letters, whatever the case or surrounding spaces.
std::string id_key(const std::string& id) {
    std::string key = trim_spaces(id);
    std::transform(key.begin(), key.end(), key.begin(), [](char c) {
        return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    });
    return key;
}

const CheckResult* find_check(const Report& report, const std::string& id) {
    const auto found = std::find_if(report.checks.begin(), report.checks.end(),
                                    [&](const CheckResult& check) { return check.id == id; });
    return found == report.checks.end() ? nullptr : &*found;
}

}  // namespace

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
    if (no_sentence) {
        out.push_back("no sentence");
    }
    if (sentence_same_as_example) {
        out.push_back("sentence same as the starter kit's example");
    }
    if (!same_sentence_as.empty()) {
        std::string line = "sentence same as ";
        for (std::size_t i = 0; i < same_sentence_as.size(); ++i) {
            line += (i > 0 ? ", " : "") + same_sentence_as[i];
        }
        out.push_back(line);
    }
    return out;
}

std::map<std::string, SubmissionFlags> flag_submissions(const std::vector<ClassEntry>& entries,
                                                        const ClassReportOptions& options) {
    const std::vector<const ClassEntry*> sorted = sorted_by_folder(entries);
    std::map<std::string, std::vector<std::string>> by_id;
    std::map<std::string, std::vector<std::string>> by_sentence;
    const std::string example_id = id_key(options.example_student_id);
    const std::string example_sentence = text::comparison_key(options.example_sentence);
    std::map<std::string, SubmissionFlags> flags;
    for (const ClassEntry* entry : sorted) {
        const Report& report = entry->report;
        SubmissionFlags& mine = flags[entry->student_folder];
        const std::string id = id_key(report.student_id);
        if (id.empty()) {
            mine.no_id = true;
        } else {
            mine.example_id = !example_id.empty() && id == example_id;
            by_id[id].push_back(entry->student_folder);
        }
        const std::string sentence = text::comparison_key(report.sentence);
        const CheckResult* review = find_check(report, "sentence");
        // An answers file that could not be read has no sentence either; its own check says so.
        mine.no_sentence =
            review != nullptr ? review->status == CheckStatus::failed : sentence.empty();
        if (!sentence.empty()) {
            mine.sentence_same_as_example =
                !example_sentence.empty() && sentence == example_sentence;
            by_sentence[sentence].push_back(entry->student_folder);
        }
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
    for (const auto& [sentence, group] : by_sentence) {
        if (group.size() > 1) {
            for (const auto& folder : group) {
                flags[folder].same_sentence_as = others(group, folder);
            }
        }
    }
    for (auto it = flags.begin(); it != flags.end();) {
        it = it->second.any() ? std::next(it) : flags.erase(it);
    }
    return flags;
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
std::string class_reason(const Report& report) {
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
        switch (report.verdict) {
            case Verdict::pass:
                ++summary.passed;
                break;
            case Verdict::fail:
                ++summary.failed;
                break;
            case Verdict::ungradable:
                ++summary.ungradable;
                summary.not_graded.push_back({entry->student_folder, class_reason(report)});
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
            reason.folders.push_back(entry->student_folder);  // entries arrive sorted
        }

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
            if (row.kernel == "reference" && row.ratio && plottable(*row.ratio)) {
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
        row.degree = summary.sweep ? conflict_degree(column.first) : kernel_degrees[column];
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

// ---------------------------------------------------------------------------------------------
// Gradebook CSV

namespace {

void append_csv_row(std::string& out, const std::vector<std::string>& fields) {
    for (std::size_t i = 0; i < fields.size(); ++i) {
        if (i > 0) {
            out += ',';
        }
        out += fields[i];
    }
    out += "\r\n";  // RFC 4180 line end
}

std::string joined(const std::vector<std::string>& lines, const char* separator) {
    std::string out;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        out += (i > 0 ? separator : "") + lines[i];
    }
    return out;
}

}  // namespace

std::string write_gradebook_csv(const std::vector<ClassEntry>& entries,
                                const ClassReportOptions& options) {
    const std::vector<const ClassEntry*> sorted = sorted_by_folder(entries);
    const std::vector<CheckSummary> columns = check_columns(sorted);
    const auto flags = flag_submissions(entries, options);

    std::string out;
    std::vector<std::string> header = {"folder",    "student_id", "score",
                                       "max_score", "verdict",    "numbers"};
    for (const CheckSummary& column : columns) {
        header.push_back(text::csv_field(column.id));
    }
    header.push_back("flags");
    header.push_back("reason");
    append_csv_row(out, header);

    for (const ClassEntry* entry : sorted) {
        const Report& report = entry->report;
        // An ungradable submission has no score: a 0, or points per check, imported into a
        // gradebook would read as the student's when the machine or the harness stopped the grade.
        const bool graded = report.verdict != Verdict::ungradable;
        std::vector<std::string> row;
        const std::string& key = entry->submission_folder.empty() ? entry->student_folder
                                                                  : entry->submission_folder;
        row.push_back(text::csv_field(key));
        row.push_back(text::csv_field(report.student_id));
        row.push_back(graded ? format_number(report.score, 2) : "");
        row.push_back(format_number(report.max_score, 2));
        row.push_back(to_string(report.verdict));
        row.push_back(text::csv_field(numbers_source(report)));
        for (const CheckSummary& column : columns) {
            const CheckResult* check = find_check(report, column.id);
            if (!graded || check == nullptr) {
                row.push_back("");
            } else if (check->not_run()) {
                row.push_back("not run");
            } else {
                row.push_back(format_number(check->points, 2));
            }
        }
        const auto mine = flags.find(entry->student_folder);
        row.push_back(mine == flags.end() ? ""
                                          : text::csv_field(joined(mine->second.lines(), "; ")));
        row.push_back(text::csv_field(class_reason(report)));
        append_csv_row(out, row);
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// JSON summary: its text for people (reasons, skipped names) is shown on one line as the
// gradebook shows it, so a reader that prints the strings prints no control character either.

std::string write_class_summary_json(const std::vector<ClassEntry>& entries,
                                     const nlohmann::json& run_info,
                                     const ClassReportOptions& options) {
    const ClassSummary summary = summarize_class(entries);
    using nlohmann::json;
    const auto optional_number = [](const std::optional<double>& value) {
        return value ? json(*value) : json(nullptr);
    };

    json checks = json::array();
    for (const CheckSummary& check : summary.checks) {
        checks.push_back({{"id", check.id},
                          {"title", check.title},
                          {"max_points", check.max_points},
                          {"reported", check.reported},
                          {"passed", check.passed},
                          {"failed", check.failed},
                          {"not_run", check.not_run}});
    }
    json reasons = json::array();
    for (const FailureReason& reason : summary.failure_reasons) {
        reasons.push_back({{"key", text::visible_line(reason.key)},
                           {"reason", text::visible_line(reason.reason)},
                           {"count", reason.folders.size()},
                           {"folders", reason.folders}});
    }
    json not_graded = json::array();
    for (const NotGraded& entry : summary.not_graded) {
        not_graded.push_back(
            {{"folder", entry.folder}, {"reason", text::visible_line(entry.reason)}});
    }
    json strides = json::array();
    for (const StrideSummary& stride : summary.strides) {
        json ratio = nullptr;
        if (stride.student_ratio) {
            ratio = {{"min", stride.student_ratio->min},
                     {"median", stride.student_ratio->median},
                     {"max", stride.student_ratio->max}};
        }
        strides.push_back({{"stride", stride.stride},
                           {"kernel", stride.label.empty() ? json(nullptr) : json(stride.label)},
                           {"degree", stride.degree},
                           {"students", stride.student_count},
                           {"student_ratio", ratio},
                           {"reference_ratio", optional_number(stride.reference_ratio)}});
    }
    json flags = json::object();
    for (const auto& [folder, mine] : flag_submissions(entries, options)) {
        flags[folder] = {{"no_id", mine.no_id},
                         {"example_id", mine.example_id},
                         {"same_id_as", mine.same_id_as},
                         {"no_sentence", mine.no_sentence},
                         {"sentence_same_as_example", mine.sentence_same_as_example},
                         {"same_sentence_as", mine.same_sentence_as}};
    }
    json skipped = json::array();
    for (const SkippedEntry& entry : options.skipped) {
        skipped.push_back({{"name", text::visible_line(entry.name)}, {"reason", entry.reason}});
    }

    json out = {
        {"schema_version", 1},
        {"exercise_id", summary.exercise_id},
        {"exercise_title", summary.exercise_title},
        {"submissions", summary.submissions},
        {"verdicts",
         {{"pass", summary.passed}, {"fail", summary.failed}, {"ungradable", summary.ungradable}}},
        {"score",
         {{"graded", summary.graded_scores.size()},
          {"mean", optional_number(summary.mean_score)},
          {"median", optional_number(summary.median_score)},
          {"max_score", summary.max_score}}},
        {"numbers",
         {{"timed", summary.timed}, {"modeled", summary.modeled}, {"timed_on", summary.timed_on}}},
        {"checks", checks},
        {"failure_reasons", reasons},
        {"not_graded", not_graded},
        {"flags", flags},
        {"skipped", skipped},
        {"strides", strides},
        {"devices", summary.timed_on},
        {"run", run_info},
    };
    // Student strings may hold bytes that are not UTF-8; they must not stop the class's summary.
    return text::json_text(out, 2) + "\n";
}

// ---------------------------------------------------------------------------------------------
// HTML class report

namespace {

std::string escape_html(const std::string& text) {
    return text::html_line(text);
}

// A coordinate with one decimal: enough for a screen, short in the file.
std::string svg_number(double value, int decimals = 1) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    return buffer;
}

const char* verdict_color(Verdict verdict) {
    switch (verdict) {
        case Verdict::pass:
            return "#2e7d32";
        case Verdict::fail:
            return "#c62828";
        case Verdict::ungradable:
            return "#757575";
    }
    return "#757575";
}

// A fixed jitter per student and stride, so dots at one stride do not hide each other and the
// page is the same on every run.
double jitter(const std::string& folder, int stride) {
    std::uint64_t hash = 1469598103934665603ULL;
    for (char c : folder + "#" + std::to_string(stride)) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 1099511628211ULL;
    }
    return static_cast<double>(hash % 1000) / 999.0 - 0.5;  // in [-0.5, 0.5]
}

// What the class's ratios are: every page label follows from it, so a class graded on the
// simulator is never said to be timed.
enum class Numbers { none, timed, modeled, mixed };

Numbers numbers_of(const ClassSummary& summary) {
    if (summary.timed > 0 && summary.modeled > 0) {
        return Numbers::mixed;
    }
    if (summary.modeled > 0) {
        return Numbers::modeled;
    }
    return summary.timed > 0 ? Numbers::timed : Numbers::none;
}

constexpr const char* kStyle = R"(
:root { color-scheme: light; }
body { margin: 0; background: #f5f6f8; color: #1f2328;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1040px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 0 0 10px; }
.meta { color: #57606a; margin: 0 0 20px; }
section.card { background: #fff; border: 1px solid #d0d7de; border-radius: 8px;
  padding: 16px 20px; margin: 0 0 20px; }
.counts { display: flex; flex-wrap: wrap; gap: 12px; margin: 0; padding: 0; list-style: none; }
.counts li { flex: 1 1 140px; border-radius: 6px; padding: 10px 14px; background: #f6f8fa;
  border-left: 5px solid #8c959f; }
.counts .number { display: block; font-size: 28px; font-weight: 650; }
.counts .pass { border-left-color: #2e7d32; } .counts .fail { border-left-color: #c62828; }
.counts .ungradable { border-left-color: #757575; } .counts .total { border-left-color: #1565c0; }
.note { color: #57606a; font-size: 13.5px; margin: 8px 0 0; }
svg { display: block; max-width: 100%; height: auto; font-family: inherit; }
svg text { fill: #1f2328; font-size: 12px; }
svg .axis-title { font-size: 13px; fill: #57606a; }
svg .grid { stroke: #e4e7eb; stroke-width: 1; }
svg .axis { stroke: #57606a; stroke-width: 1; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #e4e7eb;
  vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; }
td.number, th.number { text-align: right; font-variant-numeric: tabular-nums; }
td.reason { color: #57606a; max-width: 420px; overflow-wrap: anywhere; white-space: pre-wrap; }
td.folder, td.folders, td.student, td.name { overflow-wrap: anywhere; white-space: pre-wrap; max-width: 200px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; color: #fff;
  font-size: 12.5px; font-weight: 600; }
.badge.pass { background: #2e7d32; } .badge.fail { background: #c62828; }
.badge.ungradable { background: #757575; }
a { color: #0b57d0; }
.scroll { overflow-x: auto; margin-top: 12px; }
table.compact { font-size: 13px; }
table.compact th, table.compact td { padding: 3px 7px; }
table.compact tbody th { background: none; font-weight: 600; white-space: nowrap; }
svg .no-data { font-size: 15px; fill: #57606a; }
td.flags { color: #8a4b00; overflow-wrap: anywhere; max-width: 260px; }
td.numbers { color: #57606a; white-space: nowrap; }
)";

void write_verdict_counts(std::ostringstream& html, const ClassSummary& summary) {
    html << "<section class=\"card\" aria-labelledby=\"verdict-counts-title\">\n"
         << "<h2 id=\"verdict-counts-title\">Verdicts</h2>\n<ul class=\"counts\" "
            "id=\"verdict-counts\">\n"
         << "<li class=\"total\"><span class=\"number\" data-count=\"" << summary.submissions
         << "\">" << summary.submissions << "</span>submissions</li>\n"
         << "<li class=\"pass\"><span class=\"number\" data-verdict=\"pass\">" << summary.passed
         << "</span>pass</li>\n"
         << "<li class=\"fail\"><span class=\"number\" data-verdict=\"fail\">" << summary.failed
         << "</span>fail</li>\n"
         << "<li class=\"ungradable\"><span class=\"number\" data-verdict=\"ungradable\">"
         << summary.ungradable << "</span>ungradable</li>\n</ul>\n";
    html << "<p class=\"note\">";
    if (summary.mean_score) {
        html << "Mean score " << format_number(*summary.mean_score, 2) << ", median "
             << format_number(*summary.median_score, 2) << " of "
             << format_number(summary.max_score, 2) << " points, over the "
             << summary.graded_scores.size() << " graded submissions.";
    } else {
        html << "No submission could be graded.";
    }
    if (summary.ungradable > 0) {
        html << " Ungradable submissions have no score: the grade stopped for a reason that "
                "is not theirs to answer for, or could not be completed; grade them again.";
    }
    html << "</p>\n</section>\n";
}

void write_score_histogram(std::ostringstream& html, const ClassSummary& summary) {
    // One bar per whole point while that stays readable, else ten equal bins.
    const double max_score = std::max(summary.max_score, 1.0);
    const bool per_point = max_score <= 40.0;
    const int bins = per_point ? static_cast<int>(std::ceil(max_score)) + 1 : 10;
    const double width = per_point ? 1.0 : max_score / bins;
    std::vector<int> counts(static_cast<std::size_t>(bins), 0);
    for (double score : summary.graded_scores) {
        int bin = static_cast<int>(std::floor(std::max(score, 0.0) / width));
        bin = std::min(bin, bins - 1);
        ++counts[static_cast<std::size_t>(bin)];
    }
    const int most = std::max(1, *std::max_element(counts.begin(), counts.end()));
    const int step = std::max(1, static_cast<int>(std::ceil(most / 5.0)));
    const int top = ((most + step - 1) / step) * step;

    const double view_width = 960, view_height = 250;
    const double left = 56, right = 16, top_margin = 20, bottom = 56;
    const double plot_width = view_width - left - right;
    const double plot_height = view_height - top_margin - bottom;
    const double band = plot_width / bins;
    const auto y_of = [&](double count) {
        return top_margin + plot_height - count / top * plot_height;
    };

    html << "<section class=\"card\" aria-labelledby=\"score-histogram-title\">\n"
         << "<h2 id=\"score-histogram-title\">Distribution of scores</h2>\n"
         << "<svg id=\"score-histogram\" viewBox=\"0 0 " << view_width << ' ' << view_height
         << "\" width=\"" << view_width << "\" height=\"" << view_height
         << "\" role=\"img\" aria-label=\"Histogram of scores\">\n";
    for (int tick = 0; tick <= top; tick += step) {
        const double y = y_of(tick);
        html << "<line class=\"grid\" x1=\"" << left << "\" x2=\"" << left + plot_width
             << "\" y1=\"" << svg_number(y) << "\" y2=\"" << svg_number(y) << "\"/>"
             << "<text x=\"" << left - 8 << "\" y=\"" << svg_number(y + 4)
             << "\" text-anchor=\"end\">" << tick << "</text>\n";
    }
    for (int bin = 0; bin < bins; ++bin) {
        const int count = counts[static_cast<std::size_t>(bin)];
        const double x = left + bin * band + band * 0.12;
        const double bar_width = band * 0.76;
        const double y = y_of(count);
        const std::string label =
            per_point ? std::to_string(bin)
                      : format_number(bin * width, 1) + "–" + format_number((bin + 1) * width, 1);
        html << "<rect class=\"bar\" data-bin=\"" << label << "\" data-count=\"" << count
             << "\" x=\"" << svg_number(x) << "\" y=\"" << svg_number(y) << "\" width=\""
             << svg_number(bar_width) << "\" height=\"" << svg_number(top_margin + plot_height - y)
             << "\" fill=\"#1565c0\"><title>score " << label << ": " << count
             << (count == 1 ? " submission" : " submissions") << "</title></rect>";
        if (count > 0) {
            html << "<text x=\"" << svg_number(x + bar_width / 2) << "\" y=\"" << svg_number(y - 5)
                 << "\" text-anchor=\"middle\">" << count << "</text>";
        }
        html << "<text x=\"" << svg_number(left + (bin + 0.5) * band) << "\" y=\""
             << svg_number(top_margin + plot_height + 18) << "\" text-anchor=\"middle\">" << label
             << "</text>\n";
    }
    html << "<line class=\"axis\" x1=\"" << left << "\" x2=\"" << left + plot_width << "\" y1=\""
         << top_margin + plot_height << "\" y2=\"" << top_margin + plot_height << "\"/>\n"
         << "<text class=\"axis-title\" x=\"" << left + plot_width / 2 << "\" y=\""
         << view_height - 10 << "\" text-anchor=\"middle\">score (points, out of "
         << format_number(summary.max_score, 2) << ")</text>\n"
         << "<text class=\"axis-title\" transform=\"translate(16 " << top_margin + plot_height / 2
         << ") rotate(-90)\" text-anchor=\"middle\">submissions</text>\n";
    if (summary.graded_scores.empty()) {
        html << "<text class=\"no-data\" x=\"" << left + plot_width / 2 << "\" y=\""
             << top_margin + plot_height / 2 << "\" text-anchor=\"middle\">No data: no submission "
             << "was graded, so there is no score to show.</text>\n";
    }
    html << "</svg>\n"
         << "<p class=\"note\">Graded submissions only (" << summary.graded_scores.size()
         << "); ungradable ones (" << summary.ungradable << ") have no score.</p>\n</section>\n";
}

void write_ratio_chart(std::ostringstream& html, const ClassSummary& summary,
                       const std::vector<const ClassEntry*>& sorted) {
    const Numbers numbers = numbers_of(summary);
    const bool sweep = summary.sweep;
    std::vector<int> strides;
    for (const StrideSummary& row : summary.strides) {
        strides.push_back(row.stride);
    }
    // The column a student's row falls in: its stride, or its kernel's label.
    const auto column_of = [&](const ReportRow& row) {
        for (std::size_t i = 0; i < summary.strides.size(); ++i) {
            const StrideSummary& column = summary.strides[i];
            if (sweep ? column.stride == row.stride
                      : column.label == (row.label.empty() ? row.kernel : row.label)) {
                return i;
            }
        }
        return summary.strides.size();
    };
    const std::string base =
        sweep ? std::string("stride 1")
              : (summary.ratio_base.empty() ? std::string("the base kernel") : summary.ratio_base);
    const std::string per = sweep ? " per stride" : " per kernel, against the " + base;
    const std::string title = numbers == Numbers::timed     ? "Measured ratio" + per
                              : numbers == Numbers::modeled ? "Modeled cost ratio" + per
                              : numbers == Numbers::mixed   ? "Ratio" + per + ", timed and modeled"
                                                            : "Ratio" + per;
    const std::string axis =
        numbers == Numbers::timed ? "time / time " + std::string(sweep ? "at " : "of the ") + base +
                                        " (log scale)"
        : numbers == Numbers::modeled
            ? "modeled cost / modeled cost " + std::string(sweep ? "at " : "of the ") + base +
                  " (log scale)"
            : "ratio to " + std::string(sweep ? "" : "the ") + base + " (log scale)";
    html << "<section class=\"card\" aria-labelledby=\"ratio-chart-title\">\n"
         << "<h2 id=\"ratio-chart-title\">" << escape_html(title) << "</h2>\n";

    // The y axis is log2 from a power of two under every value to one above, bounded so that
    // one absurd ratio cannot flatten the class; values past the bounds sit on the edge.
    double low = 1.0, high = 32.0;
    for (const StrideSummary& row : summary.strides) {
        if (row.student_ratio) {
            low = std::min(low, row.student_ratio->min);
            high = std::max(high, row.student_ratio->max);
        }
        if (row.reference_ratio) {
            low = std::min(low, *row.reference_ratio);
            high = std::max(high, *row.reference_ratio);
        }
    }
    const int low_power = std::max(-6, static_cast<int>(std::floor(std::log2(low / 1.05))));
    const int high_power = std::min(12, static_cast<int>(std::ceil(std::log2(high * 1.05))));

    const double view_width = 960, view_height = 460;
    const double left = 64, right = 16, top_margin = 44, bottom = 70;
    const double plot_width = view_width - left - right;
    const double plot_height = view_height - top_margin - bottom;
    const double band = strides.empty() ? plot_width : plot_width / strides.size();
    const auto y_of = [&](double ratio) {
        const double power = std::clamp(std::log2(ratio), static_cast<double>(low_power),
                                        static_cast<double>(high_power));
        return top_margin + plot_height -
               (power - low_power) / (high_power - low_power) * plot_height;
    };
    const auto x_of = [&](std::size_t index) { return left + (index + 0.5) * band; };

    html << "<svg id=\"ratio-chart\" viewBox=\"0 0 " << view_width << ' ' << view_height
         << "\" width=\"" << view_width << "\" height=\"" << view_height
         << "\" role=\"img\" aria-label=\"" << escape_html(title)
         << ": each student, the reference kernel and the model\" data-numbers=\""
         << (numbers == Numbers::timed     ? "timed"
             : numbers == Numbers::modeled ? "modeled"
             : numbers == Numbers::mixed   ? "mixed"
                                           : "none")
         << "\">\n";
    for (int power = low_power; power <= high_power; ++power) {
        const double y = y_of(std::ldexp(1.0, power));
        html << "<line class=\"grid\" x1=\"" << left << "\" x2=\"" << left + plot_width
             << "\" y1=\"" << svg_number(y) << "\" y2=\"" << svg_number(y) << "\"/>"
             << "<text x=\"" << left - 8 << "\" y=\"" << svg_number(y + 4)
             << "\" text-anchor=\"end\">" << format_number(std::ldexp(1.0, power), 4)
             << "</text>\n";
    }
    for (std::size_t i = 0; i < strides.size(); ++i) {
        const StrideSummary& column = summary.strides[i];
        html << "<text x=\"" << svg_number(x_of(i)) << "\" y=\"" << top_margin + plot_height + 18
             << "\" text-anchor=\"middle\">"
             << (sweep ? std::to_string(column.stride) : escape_html(column.label)) << "</text>";
        if (sweep || column.degree > 0) {
            html << "<text x=\"" << svg_number(x_of(i)) << "\" y=\""
                 << top_margin + plot_height + 34
                 << "\" text-anchor=\"middle\" style=\"fill:#8e24aa;font-size:11px\">"
                 << (sweep ? "gcd " : "degree ") << column.degree << "</text>";
        }
        html << "\n";
    }
    html << "<line class=\"axis\" x1=\"" << left << "\" x2=\"" << left + plot_width << "\" y1=\""
         << top_margin + plot_height << "\" y2=\"" << top_margin + plot_height << "\"/>"
         << "<line class=\"axis\" x1=\"" << left << "\" x2=\"" << left << "\" y1=\"" << top_margin
         << "\" y2=\"" << top_margin + plot_height << "\"/>\n"
         << "<text class=\"axis-title\" x=\"" << left + plot_width / 2 << "\" y=\""
         << view_height - 10
         << "\" text-anchor=\"middle\">"
         << (sweep ? "stride (words); under it the model's conflict degree gcd(stride, 32)"
                   : "kernel; under it the conflict degree the exercise gives its tile")
         << "</text>\n"
         << "<text class=\"axis-title\" id=\"ratio-axis\" transform=\"translate(18 "
         << top_margin + plot_height / 2 << ") rotate(-90)\" text-anchor=\"middle\">" << axis
         << "</text>\n";
    if (strides.empty()) {
        html << "<text class=\"no-data\" x=\"" << left + plot_width / 2 << "\" y=\""
             << top_margin + plot_height / 2 << "\" text-anchor=\"middle\">No data: no kernel "
             << "was timed or modeled in this class, so there is no ratio to plot.</text>\n";
    }

    // The model: the conflict degree on the same axis, which is the ratio a kernel whose time
    // were all bank requests would show. Strides are categories, so nothing joins the marks. A
    // kernel's degree is no model of its time against another kernel: not drawn there.
    for (std::size_t i = 0; sweep && i < strides.size(); ++i) {
        const double y = y_of(conflict_degree(strides[i]));
        html << "<rect class=\"model-point\" x=\"" << svg_number(x_of(i) - 5) << "\" y=\""
             << svg_number(y - 5)
             << "\" width=\"10\" height=\"10\" fill=\"none\" stroke=\"#8e24aa\" "
             << "stroke-width=\"1.5\"><title>model: stride " << strides[i] << ", degree "
             << conflict_degree(strides[i]) << "</title></rect>\n";
    }

    for (const ClassEntry* entry : sorted) {
        const bool is_modeled = modeled(entry->report);
        for (const ReportRow& row : entry->report.rows) {
            if (row.kernel != kStudentKernel || !row.ratio || !plottable(*row.ratio)) {
                continue;
            }
            const std::size_t index = column_of(row);
            if (index >= strides.size()) {
                continue;
            }
            const double x = x_of(index) + jitter(entry->student_folder, row.stride) * band * 0.5;
            const char* color = verdict_color(entry->report.verdict);
            // Where a class mixes both, a modeled dot is hollow.
            const bool hollow = is_modeled && numbers == Numbers::mixed;
            html << "<circle class=\"student-dot\" data-verdict=\""
                 << to_string(entry->report.verdict) << "\" data-numbers=\""
                 << (is_modeled ? "modeled" : "timed") << "\" cx=\"" << svg_number(x) << "\" cy=\""
                 << svg_number(y_of(*row.ratio)) << "\" r=\"3.5\" fill=\""
                 << (hollow ? "none" : color) << "\" stroke=\"" << color
                 << "\" fill-opacity=\"0.7\"><title>" << escape_html(entry->student_folder)
                 << ": "
                 << (sweep ? "stride " + std::to_string(row.stride) : escape_html(row.label))
                 << ", " << (is_modeled ? "modeled " : "timed ")
                 << "ratio " << format_number(*row.ratio, 3) << "</title></circle>\n";
        }
    }

    // The reference on top: a bar across the stride's band, the mark students should sit on.
    for (std::size_t i = 0; i < summary.strides.size(); ++i) {
        if (summary.strides[i].reference_ratio) {
            const double y = y_of(*summary.strides[i].reference_ratio);
            html << "<line class=\"reference-point\" x1=\"" << svg_number(x_of(i) - band * 0.38)
                 << "\" x2=\"" << svg_number(x_of(i) + band * 0.38) << "\" y1=\"" << svg_number(y)
                 << "\" y2=\"" << svg_number(y) << "\" stroke=\"#1565c0\" stroke-width=\"2.5\">"
                 << "<title>"
                 << (sweep ? "reference: stride " + std::to_string(strides[i])
                           : escape_html(summary.strides[i].label) + ", median of the grades")
                 << ", ratio "
                 << format_number(*summary.strides[i].reference_ratio, 3) << "</title></line>\n";
        }
    }

    // Legend, one row above the plot.
    double legend_x = left;
    const double legend_y = 16;
    const auto legend_text = [&](const std::string& label, double advance) {
        html << "<text x=\"" << svg_number(legend_x + 20) << "\" y=\"" << svg_number(legend_y + 4)
             << "\">" << label << "</text>\n";
        legend_x += advance;
    };
    html << "<g id=\"ratio-legend\">\n";
    for (Verdict verdict : {Verdict::pass, Verdict::fail, Verdict::ungradable}) {
        html << "<circle cx=\"" << svg_number(legend_x + 8) << "\" cy=\"" << legend_y
             << "\" r=\"4\" fill=\"" << verdict_color(verdict) << "\"/>";
        legend_text(std::string("student, ") + to_string(verdict),
                    verdict == Verdict::ungradable ? 160 : 120);
    }
    html << "<line x1=\"" << svg_number(legend_x) << "\" x2=\"" << svg_number(legend_x + 16)
         << "\" y1=\"" << legend_y << "\" y2=\"" << legend_y
         << "\" stroke=\"#1565c0\" stroke-width=\"2.5\"/>";
    legend_text(sweep ? "reference kernel (median of the grades)"
                      : "the exercise's kernel (median of the grades)",
                265);
    if (sweep) {
        html << "<rect x=\"" << svg_number(legend_x + 3) << "\" y=\"" << legend_y - 5
             << "\" width=\"10\" height=\"10\" fill=\"none\" stroke=\"#8e24aa\" "
                "stroke-width=\"1.5\"/>";
        legend_text("model: degree gcd(stride, 32)", 0);
    }
    html << "</g>\n</svg>\n";

    html << "<p class=\"note\" id=\"ratio-note\">";
    if (!sweep) {
        html << (numbers == Numbers::modeled
                     ? "No GPU timed these numbers: the class was graded on the PTX simulator, and "
                       "each dot is one student's kernel as the simulator modeled it"
                     : numbers == Numbers::mixed
                           ? "This class mixes grades timed on a GPU (filled dots) and grades "
                             "modeled on the PTX simulator (hollow dots); each dot is one "
                             "student's kernel"
                           : "Each dot is one student's kernel, timed on a GPU in that student's "
                             "grade")
             << ", over the " << escape_html(base)
             << " in the same grade (dots are spread sideways so they do not hide each other). "
                "The blue bars are the exercise's own kernels in the same grades (median over "
                "the grades). Under each kernel, the conflict degree of its tile's column read; "
                "a kernel's time is not that degree times another's, since global memory costs "
                "too.</p>\n";
    } else {
        switch (numbers) {
            case Numbers::timed:
                html << "Each dot is one student's kernel at one stride, timed on a GPU in that "
                        "student's grade: its time over its own time at stride 1";
                break;
            case Numbers::modeled:
                html << "No GPU timed these numbers: the class was graded on the PTX simulator. Each "
                        "dot is one student's kernel at one stride, as the simulator modeled it in "
                        "that student's grade: its modeled cost (instructions plus 20 per "
                        "shared-memory wavefront) over its own modeled cost at stride 1";
                break;
            case Numbers::mixed:
                html << "This class mixes grades timed on a GPU (filled dots) and grades modeled on "
                        "the PTX simulator (hollow dots: modeled costs, not times); each student's "
                        "kind is in the table below. Each dot is one student's kernel at one stride, "
                        "over its own value at stride 1";
                break;
            case Numbers::none:
                html << "Each dot would be one student's kernel at one stride, over its own value at "
                        "stride 1";
                break;
        }
        html << " (dots are spread sideways so they do not hide each other). The blue bar is the "
                "reference kernel in the same grades (median over the grades). The square is the "
                "model's conflict degree gcd(stride, 32) on the same axis: the ratio a kernel would "
                "show if its cost were all bank requests. Ratios can sit below it where stride 1 has "
                "costs of its own; the grade compares each student with the reference, not with the "
                "degree.</p>\n";
    }

    // Strides across, so the table stays short however many strides the class drew.
    bool header_row = true;
    const auto cells = [&](const char* heading, const auto& cell) {
        const char* tag = header_row ? "th" : "td";
        html << "<tr><th>" << heading << "</th>";
        for (const StrideSummary& row : summary.strides) {
            html << '<' << tag << " class=\"number\">" << cell(row) << "</" << tag << '>';
        }
        html << "</tr>\n";
        header_row = false;
    };
    const auto spread = [](const StrideSummary& row, double RatioSpread::*field) {
        return row.student_ratio ? format_number((*row.student_ratio).*field, 2) : "–";
    };
    html << "<div class=\"scroll\"><table id=\"stride-table\" class=\"compact\">\n<thead>\n";
    if (sweep) {
        cells("stride", [](const StrideSummary& row) { return std::to_string(row.stride); });
    } else {
        cells("kernel", [](const StrideSummary& row) { return escape_html(row.label); });
    }
    html << "</thead>\n<tbody>\n";
    cells("degree", [](const StrideSummary& row) {
        return row.degree > 0 ? std::to_string(row.degree) : std::string("–");
    });
    cells(sweep ? "reference" : "exercise's kernel", [](const StrideSummary& row) {
        return row.reference_ratio ? format_number(*row.reference_ratio, 2) : "–";
    });
    cells("students", [](const StrideSummary& row) { return std::to_string(row.student_count); });
    cells("student min", [&](const StrideSummary& row) { return spread(row, &RatioSpread::min); });
    cells("student median",
          [&](const StrideSummary& row) { return spread(row, &RatioSpread::median); });
    cells("student max", [&](const StrideSummary& row) { return spread(row, &RatioSpread::max); });
    html << "</tbody>\n</table></div>\n</section>\n";
}

void write_failure_reasons(std::ostringstream& html, const ClassSummary& summary) {
    html << "<section class=\"card\" aria-labelledby=\"failure-reasons-title\">\n"
         << "<h2 id=\"failure-reasons-title\">Failure reasons, by root cause</h2>\n"
         << "<table id=\"failure-reasons\">\n<thead><tr><th class=\"number\">#</th>"
         << "<th>root cause</th><th class=\"number\">submissions</th><th>folders</th></tr>"
         << "</thead>\n<tbody>\n";
    constexpr std::size_t kFoldersShown = 12;
    std::size_t rank = 0;
    for (const FailureReason& reason : summary.failure_reasons) {
        html << "<tr class=\"failure-reason\" data-key=\"" << escape_html(reason.key)
             << "\"><td class=\"number\">" << ++rank << "</td><td>" << escape_html(reason.reason)
             << "</td><td class=\"number\">" << reason.folders.size()
             << "</td><td class=\"folders\">";
        for (std::size_t i = 0; i < reason.folders.size() && i < kFoldersShown; ++i) {
            html << (i > 0 ? ", " : "") << escape_html(reason.folders[i]);
        }
        if (reason.folders.size() > kFoldersShown) {
            html << " and " << reason.folders.size() - kFoldersShown << " more";
        }
        html << "</td></tr>\n";
    }
    if (summary.failure_reasons.empty()) {
        html << "<tr><td colspan=\"4\">No graded submission lost a point.</td></tr>\n";
    }
    html << "</tbody>\n</table>\n<p class=\"note\">Each submission counts once, under the first "
            "stage that failed: the answers file, the compile, the kernel stopping, then the "
            "checks in the exercise's order. Checks that did not run because of it are not "
            "failures of their own (see the checks below); ungradable submissions are listed "
            "apart.</p>\n</section>\n";
}

void write_checks(std::ostringstream& html, const ClassSummary& summary) {
    html << "<section class=\"card\" aria-labelledby=\"checks-title\">\n"
         << "<h2 id=\"checks-title\">Checks</h2>\n"
         << "<table id=\"checks\" class=\"compact\">\n<thead><tr><th>check</th>"
         << "<th class=\"number\">passed</th><th class=\"number\">failed</th>"
         << "<th class=\"number\">not run</th><th class=\"number\">points</th></tr></thead>\n"
         << "<tbody>\n";
    for (const CheckSummary& check : summary.checks) {
        html << "<tr class=\"check-row\" data-check=\"" << escape_html(check.id) << "\"><td>"
             << escape_html(check.title.empty() ? check.id : check.title)
             << "</td><td class=\"number\">" << check.passed << "</td><td class=\"number\">"
             << check.failed << "</td><td class=\"number\">" << check.not_run
             << "</td><td class=\"number\">" << format_number(check.max_points, 2)
             << "</td></tr>\n";
    }
    html << "</tbody>\n</table>\n<p class=\"note\">A check that did not run had no input: the "
            "kernel did not compile, or grading stopped before it.</p>\n</section>\n";
}

void write_not_graded(std::ostringstream& html, const ClassSummary& summary) {
    html << "<section class=\"card\" aria-labelledby=\"not-graded-title\">\n"
         << "<h2 id=\"not-graded-title\">Not graded</h2>\n"
         << "<table id=\"not-graded\">\n<thead><tr><th>folder</th><th>why</th></tr></thead>\n"
         << "<tbody>\n";
    for (const NotGraded& entry : summary.not_graded) {
        html << "<tr class=\"not-graded-row\"><td class=\"folder\">" << escape_html(entry.folder)
             << "</td><td class=\"reason\">" << escape_html(entry.reason) << "</td></tr>\n";
    }
    if (summary.not_graded.empty()) {
        html << "<tr><td colspan=\"2\">Every submission was graded.</td></tr>\n";
    }
    html << "</tbody>\n</table>\n<p class=\"note\">The machine or the grader stopped these "
            "grades: they are not failures, carry no score, and should be graded again.</p>\n"
            "</section>\n";
}

void write_review(std::ostringstream& html, const std::vector<const ClassEntry*>& sorted,
                  const std::map<std::string, SubmissionFlags>& flags) {
    html << "<section class=\"card\" aria-labelledby=\"review-title\">\n"
         << "<h2 id=\"review-title\">To look at twice</h2>\n"
         << "<table id=\"review\">\n<thead><tr><th>folder</th><th>student id</th><th>why</th>"
         << "</tr></thead>\n<tbody>\n";
    for (const ClassEntry* entry : sorted) {
        const auto mine = flags.find(entry->student_folder);
        if (mine == flags.end()) {
            continue;
        }
        html << "<tr class=\"review-row\"><td class=\"folder\">"
             << escape_html(entry->student_folder) << "</td><td class=\"student\">"
             << escape_html(entry->report.student_id) << "</td><td class=\"flags\">";
        const auto lines = mine->second.lines();
        for (std::size_t i = 0; i < lines.size(); ++i) {
            html << (i > 0 ? "; " : "") << escape_html(lines[i]);
        }
        html << "</td></tr>\n";
    }
    if (flags.empty()) {
        html << "<tr><td colspan=\"3\">Every student id is distinct, and every sentence is "
                "given and the student's own.</td></tr>\n";
    }
    html << "</tbody>\n</table>\n<p class=\"note\">Ids compare without case or surrounding "
            "spaces; sentences compare without case, spacing or punctuation, against each other "
            "and the starter kit's example.</p>\n</section>\n";
}

void write_skipped(std::ostringstream& html, const std::vector<SkippedEntry>& skipped) {
    html << "<section class=\"card\" aria-labelledby=\"skipped-title\">\n"
         << "<h2 id=\"skipped-title\">Skipped in the class folder</h2>\n"
         << "<table id=\"skipped\">\n<thead><tr><th>name</th><th>why</th></tr></thead>\n"
         << "<tbody>\n";
    for (const SkippedEntry& entry : skipped) {
        html << "<tr class=\"skipped-row\"><td class=\"name\">" << escape_html(entry.name)
             << "</td><td class=\"reason\">" << escape_html(entry.reason) << "</td></tr>\n";
    }
    if (skipped.empty()) {
        html << "<tr><td colspan=\"2\">Nothing: every entry of the class folder was graded."
             << "</td></tr>\n";
    }
    html << "</tbody>\n</table>\n</section>\n";
}

void write_students(std::ostringstream& html, const std::vector<const ClassEntry*>& sorted,
                    const std::map<std::string, SubmissionFlags>& flags) {
    html << "<section class=\"card\" aria-labelledby=\"students-title\">\n"
         << "<h2 id=\"students-title\">Students</h2>\n"
         << "<table id=\"students\">\n<thead><tr><th>folder</th><th>student id</th>"
         << "<th>verdict</th><th class=\"number\">score</th><th>numbers</th><th>flags</th>"
         << "<th>reason</th><th>report</th></tr></thead>\n<tbody>\n";
    for (const ClassEntry* entry : sorted) {
        const Report& report = entry->report;
        const char* verdict = to_string(report.verdict);
        html << "<tr class=\"student-row\"><td class=\"folder\">"
             << escape_html(entry->student_folder) << "</td><td class=\"student\">"
             << escape_html(report.student_id) << "</td><td><span class=\"badge " << verdict
             << "\">" << verdict << "</span></td><td class=\"number\">"
             << (report.verdict == Verdict::ungradable ? "–" : format_number(report.score, 2))
             << " / " << format_number(report.max_score, 2) << "</td><td class=\"numbers\">"
             << escape_html(numbers_source(report)) << "</td><td class=\"flags\">";
        const auto mine = flags.find(entry->student_folder);
        if (mine != flags.end()) {
            const auto lines = mine->second.lines();
            for (std::size_t i = 0; i < lines.size(); ++i) {
                html << (i > 0 ? "; " : "") << escape_html(lines[i]);
            }
        }
        html << "</td><td class=\"reason\">" << escape_html(class_reason(report)) << "</td><td>";
        if (entry->report_link.empty()) {
            html << "–";
        } else {
            html << "<a href=\"" << escape_html(text::url_path(entry->report_link))
                 << "\">report</a>";
        }
        html << "</td></tr>\n";
    }
    html << "</tbody>\n</table>\n</section>\n";
}

}  // namespace

std::string write_class_report_html(const std::vector<ClassEntry>& entries,
                                    const ClassReportOptions& options) {
    const ClassSummary summary = summarize_class(entries);
    const std::vector<const ClassEntry*> sorted = sorted_by_folder(entries);
    const auto flags = flag_submissions(entries, options);
    const std::string exercise_id =
        options.exercise_id.empty() ? summary.exercise_id : options.exercise_id;
    const std::string exercise_title =
        options.exercise_title.empty() ? summary.exercise_title : options.exercise_title;
    const std::string heading = exercise_title.empty() ? exercise_id : exercise_title;

    std::ostringstream html;
    html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         // Nothing on this page may be fetched: a student string that slipped past escaping
         // still could not load anything.
         << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'\">\n"
         << "<title>Class report: " << escape_html(heading);
    if (!options.generated_at.empty()) {
        html << " (" << escape_html(options.generated_at) << ")";
    }
    html << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n<main>\n"
         << "<h1>Class report: " << escape_html(heading) << "</h1>\n<p class=\"meta\">";
    if (!exercise_id.empty()) {
        html << "Exercise <code>" << escape_html(exercise_id) << "</code>";
    }
    if (!options.generated_at.empty()) {
        html << " · generated " << escape_html(options.generated_at);
    }
    html << " · " << summary.submissions << " submissions";
    html << "</p>\n<p class=\"meta\" id=\"numbers-source\">";
    if (summary.timed > 0) {
        html << "Timed on ";
        for (std::size_t i = 0; i < summary.timed_on.size(); ++i) {
            html << (i > 0 ? ", " : "") << escape_html(summary.timed_on[i]);
        }
        if (summary.timed_on.empty()) {
            html << "a GPU";
        }
        html << " (" << summary.timed << (summary.timed == 1 ? " submission" : " submissions")
             << ")";
    }
    if (summary.modeled > 0) {
        html << (summary.timed > 0 ? "; " : "") << "modeled on the PTX simulator, no GPU ("
             << summary.modeled << (summary.modeled == 1 ? " submission" : " submissions")
             << "): its costs are modeled, not times";
    }
    if (summary.timed == 0 && summary.modeled == 0) {
        html << "No kernel was timed or modeled.";
    }
    html << "</p>\n";

    write_verdict_counts(html, summary);
    write_score_histogram(html, summary);
    write_ratio_chart(html, summary, sorted);
    write_failure_reasons(html, summary);
    write_checks(html, summary);
    write_not_graded(html, summary);
    write_review(html, sorted, flags);
    write_skipped(html, options.skipped);
    write_students(html, sorted, flags);
    html << "</main>\n</body>\n</html>\n";
    return html.str();
}

}  // namespace grader
