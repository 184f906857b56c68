#include "cli/locations.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include "batch/batch.hpp"
#include "common/version.hpp"
#include "exercise/exercise.hpp"
#include "grade/grade.hpp"
#include "text/text_safety.hpp"

namespace grader::cli {

std::filesystem::path default_exercise_dir() {
    const std::filesystem::path relative = "exercises/day15-bank-conflicts";
    std::error_code error;
    const auto executable_dir = current_executable().parent_path();
    for (const auto& candidate : {executable_dir.parent_path() / "share/grader" / relative,
                                  std::filesystem::path(kSourceDir) / relative}) {
        if (std::filesystem::exists(candidate / "exercise.yaml", error)) {
            return candidate;
        }
    }
    return std::filesystem::path(kSourceDir) / relative;
}

std::vector<std::filesystem::path> exercise_roots() {
    std::vector<std::filesystem::path> roots;
    std::error_code error;
    const auto executable_dir = current_executable().parent_path();
    for (const auto& candidate : {executable_dir.parent_path() / "share/grader/exercises",
                                  std::filesystem::path(kSourceDir) / "exercises"}) {
        if (std::filesystem::is_directory(candidate, error)) {
            roots.push_back(candidate);
        }
    }
    return roots;
}

std::vector<std::string> bundled_exercise_ids() {
    std::vector<std::string> ids;
    std::error_code error;
    for (const auto& root : exercise_roots()) {
        for (const auto& entry : std::filesystem::directory_iterator(root, error)) {
            if (std::filesystem::exists(entry.path() / "exercise.yaml", error)) {
                ids.push_back(entry.path().filename().string());
            }
        }
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
}

std::optional<std::filesystem::path> find_exercise(const std::string& given) {
    std::error_code error;
    if (given.empty()) {
        return std::nullopt;
    }
    if (std::filesystem::is_directory(given, error)) {
        return std::filesystem::path(given);
    }
    const bool bare_id = given.find('/') == std::string::npos && given != "." && given != "..";
    if (!bare_id) {
        return std::nullopt;
    }
    for (const auto& root : exercise_roots()) {
        if (std::filesystem::exists(root / given / "exercise.yaml", error)) {
            return root / given;
        }
    }
    return std::nullopt;
}

CLI::Validator exercise_locator() {
    return CLI::Validator(
        [](std::string& value) -> std::string {
            if (const auto found = find_exercise(value)) {
                value = found->string();
                return {};
            }
            std::string ids;
            for (const auto& id : bundled_exercise_ids()) {
                ids += (ids.empty() ? "" : ", ") + id;
            }
            return "no exercise folder or bundled exercise named '" + value +
                   "'; the bundled exercises are: " + (ids.empty() ? "(none found)" : ids);
        },
        "FOLDER or ID");
}

std::optional<std::string> other_exercise_of(const std::filesystem::path& submission,
                                             const std::string& this_exercise_source) {
    std::error_code error;
    if (std::filesystem::exists(submission / this_exercise_source, error)) {
        return std::nullopt;
    }
    for (const auto& id : bundled_exercise_ids()) {
        const auto folder = find_exercise(id);
        if (!folder) {
            continue;
        }
        try {
            const Exercise other = load_exercise(*folder);
            if (other.submission_source != this_exercise_source &&
                std::filesystem::exists(submission / other.submission_source, error)) {
                return id;
            }
        } catch (const std::exception&) {
            // A broken bundled exercise names nothing; grading the chosen one still reports.
        }
    }
    return std::nullopt;
}

std::string other_exercise_message(const std::filesystem::path& submission,
                                   const std::string& this_exercise_source,
                                   const std::string& other_id, const std::string& command) {
    const std::string folder = text::visible_line(submission.string());
    const bool plain = folder.find_first_not_of(
                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                           "0123456789/._-") == std::string::npos;
    return folder + " has no " + this_exercise_source + " but has the files of exercise " +
           other_id + "; " + command + " it with:\n  grader " + command + " " +
           (plain ? folder : "'" + folder + "'") + " --exercise " + other_id;
}

std::map<std::string, std::string> other_exercise_sources(const Exercise& exercise) {
    std::map<std::string, std::string> sources;
    for (const auto& id : bundled_exercise_ids()) {
        const auto folder = find_exercise(id);
        if (!folder || id == exercise.id) {
            continue;
        }
        try {
            const Exercise other = load_exercise(*folder);
            if (other.submission_source != exercise.submission_source) {
                sources.emplace(id, other.submission_source);
            }
        } catch (const std::exception&) {
            // A broken bundled exercise names nothing; grading the chosen one still reports.
        }
    }
    return sources;
}

std::optional<std::filesystem::path> exercise_for_run(
    const std::filesystem::path& given, const std::optional<std::string>& run_exercise_id,
    const std::string& run_shown, std::string& why) {
    if (!run_exercise_id) {
        return given.empty() ? default_exercise_dir() : given;
    }
    const std::string& id = *run_exercise_id;
    if (!given.empty()) {
        const Exercise chosen = load_exercise(given);
        if (chosen.id != id) {
            why = run_shown + " graded exercise " + text::visible_line(id) + ", not " +
                  text::visible_line(chosen.id) +
                  " as --exercise says: leave --exercise out (the run's own is taken)";
            return std::nullopt;
        }
        return given;
    }
    if (const auto found = find_exercise(id)) {
        return *found;
    }
    why = run_shown + " graded exercise " + text::visible_line(id) +
          ", which this grader does not bundle: give its folder with --exercise";
    return std::nullopt;
}

std::optional<ClassExercise> other_exercise_of_class(const std::filesystem::path& class_dir,
                                                     const Exercise& exercise) {
    ClassFolder found;
    try {
        found = find_submissions(class_dir);
    } catch (const BatchError&) {
        return std::nullopt;  // the batch says why it cannot read the folder
    }
    std::map<std::string, std::size_t> others;
    std::error_code error;
    for (const BatchSubmission& submission : found.submissions) {
        if (std::filesystem::exists(submission.directory / exercise.submission_source, error)) {
            return std::nullopt;
        }
        if (const auto other =
                other_exercise_of(submission.directory, exercise.submission_source)) {
            ++others[*other];
        }
    }
    if (others.size() != 1) {
        return std::nullopt;
    }
    return ClassExercise{others.begin()->first, others.begin()->second};
}

bool use_color(int fd) {
    const char* no_color = std::getenv("NO_COLOR");
    return ::isatty(fd) == 1 && (no_color == nullptr || *no_color == '\0');
}

}  // namespace grader::cli
