#include "batch/merge.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <exception>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <system_error>
#include <type_traits>
#include <utility>

#include "batch/shard.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "common/version.hpp"
#include "model/measurements.hpp"
#include "model/report.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace {

// A student's file in a shard larger than this is not one a batch wrote.
constexpr std::size_t kCopiedMaxBytes = std::size_t{64} << 20;

std::string joined(const std::vector<std::string>& parts, const std::string& separator) {
    std::string text;
    for (const auto& part : parts) {
        text += (text.empty() ? "" : separator) + part;
    }
    return text;
}

std::string utc_now() {
    const std::time_t seconds = std::time(nullptr);
    std::tm parts{};
    ::gmtime_r(&seconds, &parts);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
    return text;
}

// True when `inner` is `outer` or lies inside it (both made absolute and normal first).
bool within(const std::filesystem::path& inner, const std::filesystem::path& outer) {
    const auto a = std::filesystem::weakly_canonical(std::filesystem::absolute(inner));
    const auto b = std::filesystem::weakly_canonical(std::filesystem::absolute(outer));
    auto part = a.begin();
    for (const auto& piece : b) {
        if (piece.empty()) {
            continue;
        }
        if (part == a.end() || *part != piece) {
            return false;
        }
        ++part;
    }
    return true;
}

struct LoadedShard {
    std::filesystem::path dir;
    ShardManifest manifest;
};

// Where a student's numbers came from, for "which GPU model graded whom".
std::string grading_device(const Report& report) {
    if (report.environment.backend == "sim") {
        return "the PTX simulator";
    }
    if (!report.environment.device_name.empty()) {
        return report.environment.device_name;
    }
    return "no GPU (ungradable)";
}

// Copies the files a batch writes for one student, report.json last, as a batch writes them. The
// shard's files are read without following a link (reports_by_student refused any already).
void copy_student(const std::filesystem::path& shard, const std::string& student,
                  const std::filesystem::path& to) {
    create_output_folders(to);
    remove_interrupted_writes(to);
    const auto names = submission_file_names();
    std::filesystem::remove(to / names.back());
    for (const auto& name : names) {
        std::error_code error;
        if (!std::filesystem::exists(
                std::filesystem::symlink_status(shard / student / name, error))) {
            continue;
        }
        std::string why;
        const auto content =
            read_file_beneath(shard, std::filesystem::path(student) / name, kCopiedMaxBytes, why);
        if (!content) {
            throw std::runtime_error("cannot read " + (shard / student / name).string() + ": " +
                                     why);
        }
        write_file_atomically(to / name, *content);
    }
}

// Why what a shard holds for a student is not read: a link or something else than the folder and
// the regular files a batch writes. Empty where it is fine, or absent.
std::string shard_entry_problem(const std::filesystem::path& shard, const std::string& student) {
    std::error_code error;
    const auto folder = shard / student;
    const auto status = std::filesystem::symlink_status(folder, error);
    if (!std::filesystem::exists(status)) {
        return {};
    }
    if (std::filesystem::is_symlink(status) || !std::filesystem::is_directory(status)) {
        return folder.string() + (std::filesystem::is_symlink(status)
                                      ? " is a symbolic link, not followed"
                                      : " is not a folder");
    }
    for (const auto& name : submission_file_names()) {
        const auto file = std::filesystem::symlink_status(folder / name, error);
        if (std::filesystem::exists(file) && !std::filesystem::is_regular_file(file)) {
            return (folder / name).string() + (std::filesystem::is_symlink(file)
                                                   ? " is a symbolic link, not followed"
                                                   : " is not a regular file");
        }
    }
    return {};
}

// Where the merged files go for a student: absent, or a folder (a link there would carry the
// writes elsewhere).
std::string output_entry_problem(const std::filesystem::path& output_dir,
                                 const std::string& student) {
    std::error_code error;
    const auto folder = output_dir / student;
    const auto status = std::filesystem::symlink_status(folder, error);
    if (!std::filesystem::exists(status) || std::filesystem::is_directory(status)) {
        return {};
    }
    return "--output's " + folder.string() +
           (std::filesystem::is_symlink(status) ? " is a symbolic link" : " is not a folder") +
           ": the merge writes no student's files through it; remove it";
}

// Refuses shards that graded another class, exercise, grader or backend, or of another split.
void refuse_disagreeing(const Exercise& exercise, const std::vector<LoadedShard>& shards,
                        std::vector<std::string>& problems) {
    const ShardManifest& first = shards.front().manifest;
    const std::string first_name = shards.front().dir.string();
    const std::string digest = exercise_digest(exercise);
    bool disagree = false;
    const auto compare = [&](const std::string& what, const std::string& mine,
                             const std::string& theirs, const std::string& where) {
        if (mine != theirs) {
            problems.push_back("the shards disagree on " + what + ": " + first_name + " says '" +
                               text::visible_line(mine) + "', " + where + " says '" +
                               text::visible_line(theirs) + "'");
            disagree = true;
        }
    };
    for (const auto& shard : shards) {
        const ShardManifest& manifest = shard.manifest;
        const std::string where = shard.dir.string();
        compare("the class list (its digest)", first.class_digest, manifest.class_digest, where);
        compare("the exercise (its digest)", first.exercise_digest, manifest.exercise_digest,
                where);
        compare("the grader's version", first.grader_version, manifest.grader_version, where);
        compare("the backend", first.backend, manifest.backend, where);
        compare("the number of shards", std::to_string(first.shard.count),
                std::to_string(manifest.shard.count), where);
    }
    if (!disagree && digest != first.exercise_digest) {
        problems.push_back("the shards graded another exercise than " +
                           exercise.directory.string() + " (digest " + first.exercise_digest +
                           ", this one " + digest + "): pass the same --exercise");
        disagree = true;
    }
    if (disagree) {
        throw MergeRefused(problems, {});
    }
}

// Which shard holds each student's report. Problems (a shard given twice or missing, a student
// with no report or with two) are added to `problems`, with the shard indexes to run again.
std::map<std::string, std::vector<const LoadedShard*>> reports_by_student(
    const std::vector<LoadedShard>& shards, std::vector<std::string>& problems,
    std::set<int>& rerun) {
    const ShardManifest& first = shards.front().manifest;
    const int count = first.shard.count;
    std::map<int, std::vector<std::string>> dirs_of_index;
    for (const auto& shard : shards) {
        dirs_of_index[shard.manifest.shard.index].push_back(shard.dir.string());
    }
    for (const auto& [index, dirs] : dirs_of_index) {
        if (dirs.size() > 1) {
            problems.push_back("shard " + std::to_string(index) + " of " + std::to_string(count) +
                               " is given twice: " + joined(dirs, ", "));
        }
    }
    std::vector<int> missing_shards;
    for (int index = 0; index < count; ++index) {
        if (dirs_of_index.count(index) == 0) {
            missing_shards.push_back(index);
            rerun.insert(index);
        }
    }
    if (missing_shards.size() == 1) {
        problems.push_back("shard " + std::to_string(missing_shards.front()) + " of " +
                           std::to_string(count) + " is missing (no folder given holds it)");
    } else if (!missing_shards.empty()) {
        problems.push_back(
            std::to_string(missing_shards.size()) + " shards of " + std::to_string(count) +
            " are missing (no folder given holds them): " + array_ranges(missing_shards, 20));
    }
    std::map<std::string, std::vector<const LoadedShard*>> holders;
    for (const auto& shard : shards) {
        for (const auto& student : first.class_students) {
            if (std::string problem = shard_entry_problem(shard.dir, student); !problem.empty()) {
                problems.push_back(problem);  // and the student's report, if any, still counts
            }
            if (read_report_json(shard.dir, std::filesystem::path(student) / "report.json")) {
                holders[student].push_back(&shard);
            }
        }
    }
    std::vector<std::string> missing;
    for (std::size_t i = 0; i < first.class_students.size(); ++i) {
        const std::string& student = first.class_students[i];
        const auto found = holders.find(student);
        if (found == holders.end()) {
            missing.push_back(text::visible_line(student));
            rerun.insert(static_cast<int>(i % static_cast<std::size_t>(count)));
        } else if (found->second.size() > 1) {
            std::vector<std::string> where;
            for (const LoadedShard* shard : found->second) {
                where.push_back(shard->dir.string());
            }
            problems.push_back("'" + text::visible_line(student) +
                               "' has a report in more than one shard: " + joined(where, ", "));
        }
    }
    if (!missing.empty()) {
        const std::size_t shown = std::min<std::size_t>(missing.size(), 20);
        std::vector<std::string> names(missing.begin(), missing.begin() + shown);
        problems.push_back(std::to_string(missing.size()) + " of " +
                           std::to_string(first.class_students.size()) +
                           " students have no report in any shard: " + joined(names, ", ") +
                           (missing.size() > shown ? ", ..." : ""));
    }
    return holders;
}

// Every shard's manifest from its folder; a folder without one, or whose manifest does not read,
// is a problem. Refused where the shard folders overlap the output folder.
std::vector<LoadedShard> read_shards(const MergeOptions& options,
                                     std::vector<std::string>& problems) {
    for (const auto& dir : options.shard_dirs) {
        if (within(options.output_dir, dir) || within(dir, options.output_dir)) {
            throw BatchError("--output " + options.output_dir.string() + " and the shard " +
                             dir.string() +
                             " overlap: write the merged class into a folder of its own");
        }
    }
    std::vector<LoadedShard> shards;
    for (const auto& dir : options.shard_dirs) {
        try {
            if (auto manifest = read_manifest(dir)) {
                shards.push_back({dir, std::move(*manifest)});
            } else {
                problems.push_back(dir.string() + " holds no " + kShardManifestFile +
                                   ": its task never started, or this is not a shard's folder");
            }
        } catch (const std::exception& error) {
            problems.push_back(text::visible_line(error.what()));
        }
    }
    return shards;
}

// Who was graded where, how many are ungradable, and which shards to grade again for them.
void count_grades(const std::vector<LoadedShard>& shards, MergeResult& result) {
    std::set<int> ungradable_indexes;
    std::map<std::string, int> index_of;
    for (const auto& shard : shards) {
        for (const auto& student : shard.manifest.assigned) {
            index_of[student] = shard.manifest.shard.index;
        }
    }
    for (const ClassEntry& entry : result.entries) {
        result.graded_on[grading_device(entry.report)].push_back(entry.student_folder);
        if (entry.report.verdict == Verdict::ungradable) {
            ++result.ungradable;
            const auto index = index_of.find(entry.student_folder);
            if (index != index_of.end()) {
                ungradable_indexes.insert(index->second);
            }
        }
    }
    result.rerun_ungradable.assign(ungradable_indexes.begin(), ungradable_indexes.end());
}

// The merged class's run information, as one batch of the whole class writes it.
nlohmann::json merged_run_info(const std::vector<LoadedShard>& shards, const MergeResult& result,
                               const std::string& started_at, const std::string& finished_at,
                               const ClassStageResult& stage) {
    const ShardManifest& first = shards.front().manifest;
    nlohmann::json shard_list = nlohmann::json::array();
    for (const auto& shard : shards) {
        nlohmann::json entry = manifest_to_json(shard.manifest);
        entry.erase("class");  // the same in every shard
        entry["folder"] = shard.dir.string();
        shard_list.push_back(entry);
    }
    std::sort(shard_list.begin(), shard_list.end(),
              [](const nlohmann::json& a, const nlohmann::json& b) {
                  return a["shard"]["index"] < b["shard"]["index"];
              });
    return nlohmann::json{
        {"grader_version", kGraderVersion},
        {"merged", true},
        {"started_at", started_at},
        {"finished_at", finished_at},
        {"wall_seconds", result.wall_seconds},
        {"backend", first.backend},
        {"counts",
         {{"submissions", result.students},
          {"reports", result.entries.size()},
          {"ungradable", result.ungradable},
          {"skipped", first.skipped.size()},
          {"flagged", stage.flagged},
          {"reports_rewritten", stage.reports_rewritten}}},
        {"graded_on", result.graded_on},
        {"shards", shard_list},
    };
}

}  // namespace

MergeRefused::MergeRefused(const std::vector<std::string>& problems, std::vector<int> rerun)
    : std::runtime_error(joined(problems, "\n")), problems_(problems), rerun_(std::move(rerun)) {}

MergeResult merge_shards(const Exercise& exercise, const MergeOptions& options) {
    const auto began = std::chrono::steady_clock::now();
    std::vector<std::string> problems;
    std::set<int> rerun;
    // Every manifest, and the first one as the class's description.
    const std::vector<LoadedShard> shards = read_shards(options, problems);
    if (shards.empty()) {
        problems.push_back("no shard to merge");
        throw MergeRefused(problems, {});
    }
    const ShardManifest& first = shards.front().manifest;
    refuse_disagreeing(exercise, shards, problems);
    const int count = first.shard.count;
    const auto holders = reports_by_student(shards, problems, rerun);
    for (const auto& student : first.class_students) {
        if (std::string problem = output_entry_problem(options.output_dir, student);
            !problem.empty()) {
            problems.push_back(problem);
        }
    }
    if (!problems.empty()) {
        throw MergeRefused(problems, std::vector<int>(rerun.begin(), rerun.end()));
    }

    // The class is whole: copy each student's files as their shard wrote them, then the stage
    // one batch of the whole class ends with.
    MergeResult result;
    result.students = first.class_students.size();
    result.shard_count = count;
    result.backend = first.backend;
    const std::string started_at = utc_now();
    create_output_folders(options.output_dir);
    remove_interrupted_writes(options.output_dir);
    for (const auto& student : first.class_students) {
        copy_student(holders.at(student).front()->dir, student, options.output_dir / student);
    }
    std::vector<BatchSubmission> class_list;
    for (std::size_t i = 0; i < first.class_students.size(); ++i) {
        class_list.push_back({first.class_folders[i], first.class_students[i], {}});
    }
    result.entries = collect_class_entries(class_list, options.output_dir);
    count_grades(shards, result);

    const std::string finished_at = utc_now();
    result.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    const auto run = [&](const ClassStageResult& stage) {
        return merged_run_info(shards, result, started_at, finished_at, stage);
    };
    result.stage = write_class_stage(exercise, result.entries, first.skipped, options.output_dir,
                                     run, finished_at, false, {}, options.prairielearn_qid);
    result.prairielearn_scores = options.output_dir / kPrairieLearnScoresFile;
    return result;
}

}  // namespace grader
