#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/text.hpp"
#include "model/diagnosis.hpp"
#include "model/report.hpp"
#include "report/class/class_detail.hpp"
#include "report/class_outputs.hpp"
#include "text/text_safety.hpp"

namespace grader {

using namespace class_detail;

// ---------------------------------------------------------------------------------------------
// JSON summary: its text for people (reasons, skipped names) is shown on one line as the
// gradebook shows it, so a reader that prints the strings prints no control character either.

std::string write_class_summary_json(const std::vector<ClassEntry>& entries,
                                     const nlohmann::json& run_info,
                                     const ClassReportOptions& options) {
    return write_class_summary_json(compute_class_data(entries, options), run_info, options);
}

namespace {

nlohmann::json optional_number(const std::optional<double>& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// Each check: how many reports had it, passed, failed, did not run it.
nlohmann::json checks_json(const ClassSummary& summary) {
    using nlohmann::json;
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
    return checks;
}

// Each failure reason, with the folders that failed for it.
nlohmann::json reasons_json(const ClassSummary& summary) {
    using nlohmann::json;
    json reasons = json::array();
    for (const FailureReason& reason : summary.failure_reasons) {
        reasons.push_back({{"key", text::visible_line(reason.key)},
                           {"reason", text::visible_line(reason.reason)},
                           {"cause", reason.cause.empty() ? json(nullptr) : json(reason.cause)},
                           {"area", reason.area.empty() ? json(nullptr) : json(reason.area)},
                           {"count", reason.folders.size()},
                           {"folders", reason.folders}});
    }
    return reasons;
}

// Each stride: its degree, the class's ratios and the reference's.
nlohmann::json strides_json(const ClassSummary& summary) {
    using nlohmann::json;
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
    return strides;
}

// Each folder's flags for the instructor to look at.
nlohmann::json flags_json(const ClassData& data) {
    using nlohmann::json;
    json flags = json::object();
    for (const auto& [folder, mine] : data.flags) {
        flags[folder] = {{"no_id", mine.no_id},
                         {"example_id", mine.example_id},
                         {"same_id_as", mine.same_id_as},
                         {"no_sentence", mine.no_sentence},
                         {"sentence_same_as_example", mine.sentence_same_as_example},
                         {"sentence_nearly_example", mine.sentence_nearly_example},
                         {"sentence_same_as_lesson", mine.sentence_same_as_lesson},
                         {"sentence_nearly_lesson", mine.sentence_nearly_lesson},
                         {"measured_same_as_example", mine.measured_same_as_example},
                         {"measured_same_as_modeled", mine.measured_same_as_modeled},
                         {"same_sentence_as", mine.same_sentence_as},
                         {"sentence_cluster", mine.sentence_cluster}};
    }
    return flags;
}

// Sentences shared by several students.
nlohmann::json clusters_json(const ClassData& data) {
    using nlohmann::json;
    json clusters = json::array();
    for (const SentenceCluster& cluster : data.clusters) {
        clusters.push_back({{"cluster", cluster.number},
                            {"sentence", text::visible_line(cluster.sentence)},
                            {"identical", cluster.identical},
                            {"source", cluster.source.empty() ? nlohmann::json(nullptr)
                                                              : nlohmann::json(cluster.source)},
                            {"folders", cluster.folders}});
    }
    return clusters;
}

nlohmann::json diagnoses_json(const ClassData& data) {
    using nlohmann::json;
    // Each student's diagnosis, whole, by folder: the failure reasons above group them by cause.
    json diagnoses = json::object();
    for (const ClassEntry* entry : data.sorted) {
        if (const std::optional<Diagnosis>& diagnosis = entry->report.diagnosis) {
            diagnoses[entry->student_folder] = {
                {"cause", std::string(to_string(diagnosis->cause))},
                {"title", std::string(cause_title(diagnosis->cause))},
                {"area", std::string(to_string(area_of(diagnosis->cause)))},
                {"what", text::visible_line(diagnosis->what)},
                {"fix", text::visible_line(diagnosis->fix)},
                {"where", text::visible_line(diagnosis->where)},
                {"check", diagnosis->check}};
        }
    }
    return diagnoses;
}

}  // namespace

std::string write_class_summary_json(const ClassData& data, const nlohmann::json& run_info,
                                     const ClassReportOptions& options) {
    const ClassSummary& summary = data.summary;
    using nlohmann::json;

    const json checks = checks_json(summary);
    const json reasons = reasons_json(summary);
    json not_graded = json::array();
    for (const NotGraded& entry : summary.not_graded) {
        not_graded.push_back(
            {{"folder", entry.folder}, {"reason", text::visible_line(entry.reason)}});
    }
    const json strides = strides_json(summary);
    const json flags = flags_json(data);
    const json clusters = clusters_json(data);
    const json diagnoses = diagnoses_json(data);
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
        {"diagnoses", diagnoses},
        {"not_graded", not_graded},
        {"flags", flags},
        {"interrupted", options.interrupted},
        {"unfinished", options.unfinished},
        {"sentence_clusters", clusters},
        {"skipped", skipped},
        {"strides", strides},
        {"devices", summary.timed_on},
        {"run", run_info},
    };
    // Student strings may hold bytes that are not UTF-8; they must not stop the class's summary.
    return text::json_text(out, 2) + "\n";
}

}  // namespace grader
