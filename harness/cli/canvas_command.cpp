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
#include <optional>
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

// Every bundled exercise's files: a file Canvas renamed ("transpose-1.cu") gets its name back
// whichever exercise the download is of, where the student has none of that name.
std::vector<std::string> every_exercise_file(const Exercise& chosen) {
    std::vector<std::string> files = {chosen.submission_source, chosen.submission_answers};
    for (const auto& id : bundled_exercise_ids()) {
        const auto folder = find_exercise(id);
        if (!folder) {
            continue;
        }
        try {
            const Exercise other = load_exercise(*folder);
            for (const std::string& file : {other.submission_source, other.submission_answers}) {
                if (std::find(files.begin(), files.end(), file) == files.end()) {
                    files.push_back(file);
                }
            }
        } catch (const std::exception&) {
            // A broken bundled exercise names nothing.
        }
    }
    return files;
}

int run_unpack(const CanvasCommandOptions& options, const GlobalOptions& global) {
    const Exercise exercise =
        load_exercise(options.exercise.empty() ? default_exercise_dir() : options.exercise);
    CanvasUnpackOptions unpack;
    unpack.download = options.download;
    unpack.class_dir = options.class_dir;
    unpack.expected_files =
        options.exercise.empty()
            ? every_exercise_file(exercise)
            : std::vector<std::string>{exercise.submission_source, exercise.submission_answers};
    CanvasRoster roster;
    CanvasUnpackResult result;
    try {
        if (!options.roster.empty()) {
            roster = read_canvas_roster(options.roster);
            unpack.roster = &roster;
        }
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
    for (const auto& read : result.read_by_roster) {
        spdlog::info("{}", read);
    }
    for (const auto& refused : result.zip_refused) {
        spdlog::warn("{}: the zip handed in is not unpacked, so the folder is graded as it is: {}",
                     text::visible_line(refused.folder), text::visible_line(refused.reason));
    }
    if (!result.text_entries.empty()) {
        spdlog::warn(
            "{} students handed in a text entry or a URL, not files ({}): each folder holds "
            "only its text.html or link.html, and is graded as missing the exercise's files",
            result.text_entries.size(), some_of(result.text_entries));
    }
    if (!result.anonymous.empty()) {
        spdlog::warn(
            "{} folders are an anonymous assignment's: Canvas names no user, so "
            "`grader canvas grades` cannot match them to the roster",
            result.anonymous.size());
    }
    // Where --exercise was left out, the work the folders hold names the exercise to grade.
    std::string exercise_id = options.exercise.empty() ? std::string() : exercise.id;
    if (options.exercise.empty()) {
        if (const auto other = other_exercise_of_class(options.class_dir, exercise)) {
            exercise_id = other->id;
        }
    }
    if (!global.quiet) {
        std::printf(
            "filed %zu files into %zu student folders in %s (%zu marked late by Canvas: "
            "their folders say _LATE_; %zu zips unpacked)\n",
            result.files, result.folders.size(),
            text::visible_line(options.class_dir.string()).c_str(), result.late.size(),
            result.unzipped.size());
        std::printf(
            "next: grader batch %s -o RUN%s\n",
            text::visible_line(options.class_dir.string()).c_str(),
            exercise_id.empty() ? "" : (" --exercise " + text::visible_line(exercise_id)).c_str());
        std::fflush(stdout);
    }
    return result.folders.empty() ? kExitUsage : kExitPass;
}

int run_grades(const CanvasCommandOptions& options, const GlobalOptions& global) {
    CanvasRoster roster;
    std::vector<ClassEntry> entries;
    std::optional<std::string> run_id;
    try {
        roster = read_canvas_roster(options.roster);
        entries = entries_in_output(options.run);
        run_id = run_exercise_id(options.run, entries);
    } catch (const BatchError& error) {
        spdlog::error("{}", text::visible_line(error.what()));
        return kExitUsage;
    }
    // The run's exercise, never a default: its title names the column the scores go into.
    std::string why;
    const auto exercise_dir =
        exercise_for_run(options.exercise, run_id, text::visible_line(options.run.string()), why);
    if (!exercise_dir) {
        spdlog::error("{}", why);
        return kExitUsage;
    }
    const Exercise exercise = load_exercise(*exercise_dir);
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
        std::printf(
            "%s graded exercise %s (%s)\n", text::visible_line(options.run.string()).c_str(),
            text::visible_line(exercise.id).c_str(), text::visible_line(exercise.title).c_str());
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
    const auto add_exercise = [&](CLI::App* command, const char* help) {
        command->add_option("--exercise", options->exercise, help)->transform(exercise_locator());
    };

    CLI::App* unpack = canvas->add_subcommand(
        "unpack", "File Canvas's submissions download into a class folder, a folder a student");
    unpack
        ->add_option("DOWNLOAD", options->download,
                     "The unzipped download (Canvas: Assignments, Download Submissions)")
        ->required();
    unpack->add_option("CLASS", options->class_dir, "The class folder to make (new or empty)")
        ->required();
    unpack->add_option(
        "--roster", options->roster,
        "The course's gradebook export (Canvas: Grades, Export, CSV): tells whose a "
        "file is where Canvas's name for it reads two ways (a name ending in digits)");
    add_exercise(unpack,
                 "The exercise: its folder or bundled id, e.g. day15-padding (default: the one "
                 "whose files the students handed in)");
    unpack->footer(
        "Example:\n  unzip submissions.zip -d download\n"
        "  grader canvas unpack download class --roster export.csv\n"
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
                     "exercise's points, as the run's reports give them)")
        ->check(CLI::PositiveNumber);
    add_exercise(grades,
                 "The exercise the run graded: its folder or bundled id (default: the run's own; "
                 "another is refused)");
    grades->footer(
        "Example:\n  grader canvas grades run --roster export.csv --assignment \"Day 15\" -o "
        "canvas-import.csv");
    grades->callback([options, &global, &run] {
        run = [options, &global] { return run_grades(*options, global); };
    });
}

}  // namespace grader::cli
