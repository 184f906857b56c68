// Reading a class folder and an output folder: which entries are submissions, the names their
// reports are filed under, and the reports a batch already wrote.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "batch/batch.hpp"
#include "batch/merge.hpp"
#include "batch/shard.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "model/json.hpp"
#include "model/report.hpp"
#include "report/class_outputs.hpp"
#include "report/writers.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace {

// A report.json larger than this is not one the grader wrote.
constexpr std::size_t kReportJsonMaxBytes = std::size_t{64} << 20;

std::string hash_suffix(const std::string& bytes) {
    // Stable across runs and machines, so a resumed batch finds the same folder.
    const std::uint64_t hash = fnv1a(bytes);
    char text[17];
    std::snprintf(text, sizeof text, "%08llx",
                  static_cast<unsigned long long>(hash & 0xffffffffull));
    return text;
}

}  // namespace

std::string student_folder_name(const std::string& folder_name) {
    const bool keep = !folder_name.empty() && folder_name != "." && folder_name != ".." &&
                      folder_name.find('/') == std::string::npos &&
                      text::visible_line(folder_name) == folder_name;
    if (keep) {
        return folder_name;
    }
    std::string safe;
    for (const char c : folder_name) {
        const auto byte = static_cast<unsigned char>(c);
        const bool plain = (byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') ||
                           (byte >= '0' && byte <= '9') || c == '-' || c == '_' || c == '.';
        safe += plain ? c : '_';
    }
    if (!safe.empty() && safe[0] == '.') {
        safe[0] = '_';
    }
    return safe.substr(0, 64) + "-" + hash_suffix(folder_name);
}

std::string submission_key(const std::string& folder_name) {
    if (!folder_name.empty() && text::visible_line(folder_name) == folder_name) {
        return folder_name;
    }
    return text::visible_line(folder_name) + " [" + hex_bytes(folder_name) + "]";
}

const std::set<std::string>& class_output_names() {
    static const std::set<std::string> names = {kGradebookFile,     kSummaryFile,
                                                kClassReportFile,   kLocksFolder,
                                                kShardManifestFile, kPrairieLearnScoresFile};
    return names;
}

bool system_leftover(const std::string& name) {
    return name == "__MACOSX" || (!name.empty() && name[0] == '.');
}

namespace {

// Whether a folder holds a submission's files itself: an answers file or a .cu source (not a
// Mac's AppleDouble "._probe.cu", which holds only the file's Finder metadata).
bool holds_submission_files(const std::filesystem::path& folder) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
        const std::filesystem::file_status status = entry.symlink_status(error);
        const auto name = entry.path().filename();
        if (std::filesystem::is_regular_file(status) && !system_leftover(name.string()) &&
            (name == "submission.yaml" || name.extension() == ".cu")) {
            return true;
        }
    }
    return false;
}

// A student who zipped the folder rather than its files has them one level down: grade that
// folder where it is the only one and theirs hold none, as the Gradescope entry script does.
// Links are never followed.
std::filesystem::path folder_to_grade(const std::filesystem::path& folder) {
    if (holds_submission_files(folder)) {
        return folder;
    }
    std::error_code error;
    std::vector<std::filesystem::path> inner;
    for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
        if (std::filesystem::is_directory(entry.symlink_status(error)) &&
            !system_leftover(entry.path().filename().string()) &&
            holds_submission_files(entry.path())) {
            inner.push_back(entry.path());
        }
    }
    return inner.size() == 1 ? inner.front() : folder;
}

}  // namespace

bool listed_as_submission(const std::string& name) {
    return !name.empty() && !system_leftover(name) && name.find('/') == std::string::npos &&
           name.find('\0') == std::string::npos;
}

void name_submissions(std::vector<BatchSubmission>& submissions,
                      const std::set<std::string>& also_reserved, const std::string& where) {
    // A folder named like a class output ("gradebook.csv") would have its reports where the
    // gradebook goes: it gets a suffix, as an odd name does.
    for (auto& submission : submissions) {
        submission.student = student_folder_name(submission.folder_name);
        if (class_output_names().count(submission.student) != 0 ||
            also_reserved.count(submission.student) != 0) {
            submission.student += "-" + hash_suffix(submission.folder_name);
        }
    }
    // Two folders that end up with the same output name (a real folder named like another's
    // renamed output) or the same gradebook key would file one student's grade under the other's
    // name: refused, naming both.
    std::map<std::string, const BatchSubmission*> by_output;
    std::map<std::string, const BatchSubmission*> by_key;
    for (const auto& submission : submissions) {
        const auto output = by_output.emplace(submission.student, &submission);
        const auto key = by_key.emplace(submission_key(submission.folder_name), &submission);
        const BatchSubmission* other = !output.second ? output.first->second
                                       : !key.second  ? key.first->second
                                                      : nullptr;
        if (other != nullptr) {
            throw BatchError(
                "the submission folders '" + submission_key(other->folder_name) + "' and '" +
                submission_key(submission.folder_name) + "' would share " +
                (!output.second
                     ? "the output folder '" + text::visible_line(submission.student) + "'"
                     : std::string("a row of the gradebook")) +
                ": one student's grade would be filed under the other's name; rename one of "
                "them in " +
                text::visible_line(where));
        }
    }
}

ClassFolder find_submissions(const std::filesystem::path& submissions_dir,
                             const std::set<std::string>& also_reserved) {
    std::error_code error;
    std::filesystem::directory_iterator entries(submissions_dir, error);
    if (error) {
        throw BatchError("cannot read the class folder " + submissions_dir.string() + ": " +
                         error.message());
    }
    ClassFolder found;
    for (const auto& entry : entries) {
        const std::string name = entry.path().filename().string();
        if (system_leftover(name)) {
            found.skipped.push_back({name, kSystemLeftoverReason});
            continue;
        }
        // The entry itself, never what a link names: a student's folder that is a link would
        // hand the grader any folder of the machine (and whether it exists) as a submission.
        const std::filesystem::file_status status = entry.symlink_status(error);
        if (std::filesystem::is_symlink(status)) {
            found.skipped.push_back(
                {name, "a symbolic link, not followed: a submission is a folder of its own"});
            continue;
        }
        if (!std::filesystem::is_directory(status)) {
            found.skipped.push_back(
                {name, std::filesystem::is_regular_file(status)
                           ? "a file, not a submission folder"
                           : "neither a folder nor a file (a device, a FIFO or a socket)"});
            continue;
        }
        found.submissions.push_back({name, {}, folder_to_grade(entry.path())});
    }
    std::sort(found.submissions.begin(), found.submissions.end(),
              [](const BatchSubmission& a, const BatchSubmission& b) {
                  return a.folder_name < b.folder_name;
              });
    std::sort(found.skipped.begin(), found.skipped.end(),
              [](const SkippedEntry& a, const SkippedEntry& b) { return a.name < b.name; });
    name_submissions(found.submissions, also_reserved, submissions_dir.string());
    return found;
}

bool output_has_reports(const std::filesystem::path& output_dir) {
    std::error_code error;
    for (const char* file : {kGradebookFile, kSummaryFile, kClassReportFile}) {
        if (std::filesystem::exists(output_dir / file, error)) {
            return true;
        }
    }
    std::filesystem::directory_iterator entries(output_dir, error);
    if (error) {
        return false;
    }
    for (const auto& entry : entries) {
        if (entry.is_directory(error) &&
            std::filesystem::exists(entry.path() / report_file_name(Format::json, true), error)) {
            return true;
        }
    }
    return false;
}

std::optional<Report> read_report_json(const std::filesystem::path& file) {
    return read_report_json(file.parent_path(), file.filename());
}

std::optional<Report> read_report_json(const std::filesystem::path& folder,
                                       const std::filesystem::path& name) {
    std::string why;
    const auto text = read_file_beneath(folder, name, kReportJsonMaxBytes, why);
    if (!text) {
        return std::nullopt;
    }
    const auto json = nlohmann::json::parse(*text, nullptr, false);
    if (json.is_discarded() || !json.is_object()) {
        return std::nullopt;
    }
    try {
        return json.get<Report>();
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

std::vector<ClassEntry> entries_in_output(const std::filesystem::path& output_dir) {
    std::error_code error;
    std::filesystem::directory_iterator folders(output_dir, error);
    if (error) {
        throw BatchError("cannot read " + text::visible_line(output_dir.string()) + ": " +
                         error.message());
    }
    std::vector<ClassEntry> entries;
    for (const auto& folder : folders) {
        const std::string name = folder.path().filename().string();
        if (system_leftover(name) || !folder.is_directory(error) || folder.is_symlink(error)) {
            continue;
        }
        auto report = read_report_json(folder.path() / report_file_name(Format::json, true));
        if (!report) {
            continue;
        }
        ClassEntry entry;
        entry.student_folder = name;
        entry.submission_folder = name;
        entry.report_link = name + "/" + report_file_name(Format::text, true);
        entry.report = std::move(*report);
        entries.push_back(std::move(entry));
    }
    std::sort(entries.begin(), entries.end(), [](const ClassEntry& a, const ClassEntry& b) {
        return a.student_folder < b.student_folder;
    });
    return entries;
}

std::optional<std::string> run_exercise_id(const std::filesystem::path& output_dir,
                                           const std::vector<ClassEntry>& entries) {
    std::string why;
    if (const auto text = read_file_bounded(output_dir / kSummaryFile, kReportJsonMaxBytes, why)) {
        const auto summary = nlohmann::json::parse(*text, nullptr, false);
        if (summary.is_object() && summary.contains("exercise_id") &&
            summary["exercise_id"].is_string() &&
            !summary["exercise_id"].get<std::string>().empty()) {
            return summary["exercise_id"].get<std::string>();
        }
    }
    std::optional<std::string> id;
    std::string first_folder;
    for (const ClassEntry& entry : entries) {
        if (entry.report.exercise_id.empty()) {
            continue;
        }
        if (!id) {
            id = entry.report.exercise_id;
            first_folder = entry.student_folder;
        } else if (*id != entry.report.exercise_id) {
            throw BatchError(text::visible_line(output_dir.string()) +
                             " holds reports of two "
                             "exercises: " +
                             text::visible_line(first_folder) + "'s of " + text::visible_line(*id) +
                             " and " + text::visible_line(entry.student_folder) + "'s of " +
                             text::visible_line(entry.report.exercise_id) +
                             ": give each exercise a run of its own");
        }
    }
    if (!id) {
        if (const auto manifest = read_manifest(output_dir);
            manifest && !manifest->exercise_id.empty()) {
            id = manifest->exercise_id;
        }
    }
    return id;
}

}  // namespace grader
