// `grader canvas unpack DOWNLOAD CLASS` files Canvas's submissions download into a class folder,
// one folder per student; `grader canvas grades RUN --roster EXPORT.csv` writes the gradebook
// import Canvas reads back from a batch's (or a merge's) reports.

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "batch/batch.hpp"
#include "batch/canvas.hpp"
#include "cli/commands.hpp"
#include "cli/locations.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "exercise/exercise.hpp"
#include "model/report.hpp"
#include "report/canvas_gradebook.hpp"
#include "report/class_outputs.hpp"
#include "text/text_safety.hpp"

namespace grader::cli {
namespace {

struct CanvasCommandOptions {
    std::filesystem::path download;
    std::filesystem::path class_dir;
    std::filesystem::path run;
    std::filesystem::path roster;
    std::filesystem::path output;
    std::filesystem::path exercise;
    std::string assignment;
    double points = 0.0;
};

Exercise exercise_of(const CanvasCommandOptions& options) {
    return load_exercise(options.exercise.empty() ? default_exercise_dir() : options.exercise);
}

// Up to a few names, then how many more.
std::string some_of(const std::vector<std::string>& names) {
    constexpr std::size_t kShown = 5;
    std::string text;
    for (std::size_t i = 0; i < names.size() && i < kShown; ++i) {
        text += (i > 0 ? ", " : "") + text::visible_line(names[i]);
    }
    if (names.size() > kShown) {
        text += " and " + std::to_string(names.size() - kShown) + " more";
    }
    return text;
}

int run_unpack(const CanvasCommandOptions& options, const GlobalOptions& global) {
    const Exercise exercise = exercise_of(options);
    CanvasUnpackOptions unpack;
    unpack.download = options.download;
    unpack.class_dir = options.class_dir;
    unpack.expected_files = {exercise.submission_source, exercise.submission_answers};
    CanvasUnpackResult result;
    try {
        result = unpack_canvas_download(unpack);
    } catch (const BatchError& error) {
        spdlog::error("{}", text::visible_line(error.what()));
        return kExitUsage;
    }
    for (const auto& skipped : result.skipped) {
        spdlog::warn("skipped '{}' in the download: {}", text::visible_line(skipped.name),
                     skipped.reason);
    }
    for (const auto& renamed : result.renamed) {
        spdlog::warn("{}", renamed);
    }
    if (!result.zipped.empty()) {
        spdlog::warn(
            "{} students handed in a zip ({}): unzip each into its folder before "
            "grading",
            result.zipped.size(), some_of(result.zipped));
    }
    if (!result.anonymous.empty()) {
        spdlog::warn(
            "{} folders are an anonymous assignment's: Canvas names no user, so "
            "`grader canvas grades` cannot match them to the roster",
            result.anonymous.size());
    }
    if (!global.quiet) {
        std::printf(
            "filed %zu files into %zu student folders in %s (%zu marked late by Canvas: "
            "their folders say _LATE_)\n",
            result.files, result.folders.size(),
            text::visible_line(options.class_dir.string()).c_str(), result.late.size());
        std::printf("next: grader batch %s -o RUN%s\n",
                    text::visible_line(options.class_dir.string()).c_str(),
                    options.exercise.empty()
                        ? ""
                        : (" --exercise " + text::visible_line(exercise.id)).c_str());
        std::fflush(stdout);
    }
    return result.folders.empty() ? kExitUsage : kExitPass;
}

int run_grades(const CanvasCommandOptions& options, const GlobalOptions& global) {
    const Exercise exercise = exercise_of(options);
    CanvasRoster roster;
    std::vector<ClassEntry> entries;
    try {
        roster = read_canvas_roster(options.roster);
        entries = entries_in_output(options.run);
    } catch (const BatchError& error) {
        spdlog::error("{}", text::visible_line(error.what()));
        return kExitUsage;
    }
    double max_score = 0.0;
    for (const ClassEntry& entry : entries) {
        max_score = std::max(max_score, entry.report.max_score);
    }
    const double points = options.points > 0.0 ? options.points : max_score;
    // The roster's own column for the exercise where it has one ("Day 15 (12345)"): Canvas
    // finds the assignment by its id. A title of its own makes a new assignment.
    std::string assignment = options.assignment.empty() ? exercise.title : options.assignment;
    for (const std::string& column : roster.assignments) {
        if (column == assignment || column.rfind(assignment + " (", 0) == 0) {
            assignment = column;
            break;
        }
    }
    const CanvasGrades grades = match_canvas_grades(roster, entries, points);
    write_file_atomically(options.output,
                          write_canvas_gradebook_csv(assignment, points, grades.scores));
    for (const NotGraded& left : grades.not_written) {
        spdlog::warn("not written: {}: {}", text::visible_line(left.folder), left.reason);
    }
    if (!grades.missing.empty()) {
        spdlog::warn(
            "{} students of the roster have no graded folder and are left as Canvas has "
            "them: {}",
            grades.missing.size(), some_of(grades.missing));
    }
    if (!global.quiet) {
        const bool known = assignment.size() > 1 && assignment.back() == ')';
        std::printf("wrote %s: %zu students' scores out of %s points in the column '%s'%s\n",
                    text::visible_line(options.output.string()).c_str(), grades.scores.size(),
                    format_number(points, 2).c_str(), text::visible_line(assignment).c_str(),
                    known ? ""
                          : " (not a column of the roster: Canvas will make a new assignment; "
                            "give --assignment the roster's column to fill that one)");
        std::printf("import it in Canvas: Grades, Import, then check the changes it shows\n");
        std::fflush(stdout);
    }
    return kExitPass;
}

}  // namespace

void add_canvas_command(CLI::App& app, const GlobalOptions& global, Runner& run) {
    auto options = std::make_shared<CanvasCommandOptions>();
    CLI::App* canvas = app.add_subcommand("canvas",
                                          "Canvas in and out: its submissions "
                                          "download in, its gradebook import out");
    canvas->require_subcommand(1);
    const auto add_exercise = [&](CLI::App* command) {
        command
            ->add_option("--exercise", options->exercise,
                         "The exercise: its folder or bundled id, e.g. day15-padding (default: "
                         "day15-bank-conflicts)")
            ->transform(exercise_locator());
    };

    CLI::App* unpack = canvas->add_subcommand(
        "unpack", "File Canvas's submissions download into a class folder, a folder a student");
    unpack
        ->add_option("DOWNLOAD", options->download,
                     "The unzipped download (Canvas: Assignments, Download Submissions)")
        ->required();
    unpack->add_option("CLASS", options->class_dir, "The class folder to make (new or empty)")
        ->required();
    add_exercise(unpack);
    unpack->footer(
        "Example:\n  unzip submissions.zip -d download\n  grader canvas unpack download class\n"
        "makes class/smithjane_123456/probe.cu, ... (class/smithjane_LATE_123456/ where Canvas "
        "marked the submission late).");
    unpack->callback([options, &global, &run] {
        run = [options, &global] { return run_unpack(*options, global); };
    });

    CLI::App* grades = canvas->add_subcommand(
        "grades", "Write Canvas's gradebook import from a batch's reports and the course roster");
    grades->add_option("RUN", options->run, "The batch's (or merge's) output folder")->required();
    grades
        ->add_option("--roster", options->roster,
                     "The course's gradebook export (Canvas: Grades, Export, CSV)")
        ->required();
    grades
        ->add_option("-o,--output", options->output,
                     "The import file to write (Canvas: Grades, Import)")
        ->required();
    grades->add_option("--assignment", options->assignment,
                       "The assignment's column: its title in the roster (default: the "
                       "exercise's title; a title the roster lacks makes a new assignment)");
    grades
        ->add_option("--points", options->points,
                     "The assignment's points possible: scores are scaled to it (default: the "
                     "exercise's points)")
        ->check(CLI::PositiveNumber);
    add_exercise(grades);
    grades->footer(
        "Example:\n  grader canvas grades run --roster export.csv --assignment \"Day 15\" -o "
        "canvas-import.csv");
    grades->callback([options, &global, &run] {
        run = [options, &global] { return run_grades(*options, global); };
    });
}

}  // namespace grader::cli
