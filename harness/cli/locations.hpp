#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "exercise/exercise.hpp"

namespace grader::cli {

// The bundled exercise: beside the installed binary (share/grader/exercises/...), else in the
// source tree the binary was built from.
std::filesystem::path default_exercise_dir();

// The folders holding the bundled exercises, each named by its id: share/grader/exercises beside
// the installed binary, then the source tree's exercises/. Only those that exist.
std::vector<std::filesystem::path> exercise_roots();

// The ids of the bundled exercises (their folder names), sorted, without repeats.
std::vector<std::string> bundled_exercise_ids();

// For --exercise: an existing folder is taken as it is; a bare id ("day15-padding") is looked up
// among the bundled exercises, wherever the grader is installed. Returns the folder, or nullopt.
std::optional<std::filesystem::path> find_exercise(const std::string& given);

// A CLI11 validator for --exercise: rewrites an id to its folder, and refuses anything else with
// the ids there are.
CLI::Validator exercise_locator();

// Where a submission folder holds not this exercise's kernel file but another bundled exercise's
// (Part 1's probe.cu graded as Part 2, or the reverse): that exercise's id. The caller names it
// with the exact command.
std::optional<std::string> other_exercise_of(const std::filesystem::path& submission,
                                             const std::string& this_exercise_source);

// What to say of such a folder: "part2 has no probe.cu but has the files of exercise
// day15-padding; explain it with:\n  grader explain part2 --exercise day15-padding".
std::string other_exercise_message(const std::filesystem::path& submission,
                                   const std::string& this_exercise_source,
                                   const std::string& other_id, const std::string& command);

// The bundled exercises other than `exercise`, by id, with their kernel file: what a grade names
// when a folder holds another exercise's work (GradeOptions::other_exercise_sources).
std::map<std::string, std::string> other_exercise_sources(const Exercise& exercise);

// The exercise of a command that reads a run (a batch's output, a merge's shards): the one the run
// graded (`run_exercise_id`, as its summary, reports or manifests say), with `given` (--exercise,
// a folder) taken only where it is that exercise. Where the run says nothing, `given`, else the
// default. nullopt with `why` (one line) where `given` is another exercise, or the run's
// exercise is not one this grader has.
std::optional<std::filesystem::path> exercise_for_run(
    const std::filesystem::path& given, const std::optional<std::string>& run_exercise_id,
    const std::string& run_shown, std::string& why);

// The bundled exercise a class folder's work is for, where --exercise was left out: where no
// submission holds `exercise`'s kernel file and some hold another bundled exercise's (one
// exercise only), that exercise's id and how many folders hold its file; nullopt otherwise.
struct ClassExercise {
    std::string id;
    std::size_t folders = 0;
};
std::optional<ClassExercise> other_exercise_of_class(const std::filesystem::path& class_dir,
                                                     const Exercise& exercise);

// Whether to colour text for this stream: a terminal, and NO_COLOR unset (no-color.org).
bool use_color(int fd);

}  // namespace grader::cli
