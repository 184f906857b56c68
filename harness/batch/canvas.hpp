#pragma once

// Canvas both ways. In: its "Download Submissions" zip, unzipped, is one flat folder of files
// named as Canvas's ContentZipper names them (canvas-lms lib/content_zipper.rb):
//     <name>[_LATE]_<user id>_<attachment id>_<file name>     an uploaded file
//     <name>[_LATE]_<user id>_text.html, ..._link.html        a text entry, a URL
// where <name> is the student's sortable name, lower case, with everything but letters, digits
// and '_' removed, and an anonymous assignment has "anon_<anonymous id>" for <name>_<user id>.
// unpack_canvas_download() files each into a folder of its own per student, named
// <name>[_LATE]_<user id> (the late mark kept where everyone sees it), ready for `grader batch`.
// Out: Canvas's gradebook import CSV (canvas-lms app/models/gradebook_importer.rb reads it): the
// columns Student, ID, SIS User ID, SIS Login ID and Section of the course's gradebook export,
// then the assignment's column, one row per graded student.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "batch/batch.hpp"
#include "report/canvas_gradebook.hpp"
#include "report/class_outputs.hpp"

namespace grader {

// One file of a Canvas download, its name taken apart.
struct CanvasFileName {
    std::string folder;     // <name>[_LATE]_<user id>, or [LATE_]anon_<id>: the student's folder
    std::string user_id;    // Canvas's user id; empty for an anonymous assignment
    bool late = false;      // Canvas marked the submission late
    std::string file_name;  // the file as the student named it ("text.html" for a text entry)
};

// The name taken apart, or nullopt where it is not one Canvas's download gives.
std::optional<CanvasFileName> parse_canvas_file_name(const std::string& name);

// A folder unpack_canvas_download() made: its user id and late mark, or nullopt for another name.
struct CanvasFolder {
    std::string user_id;  // empty: an anonymous assignment's
    bool late = false;
};
std::optional<CanvasFolder> parse_canvas_folder_name(const std::string& folder);

struct CanvasUnpackOptions {
    std::filesystem::path download;   // the unzipped download: one flat folder of files
    std::filesystem::path class_dir;  // created; must not exist or be empty
    // The files a submission must hold (the exercise's source and answers file): a file that
    // Canvas renamed when the student handed it in again ("probe-1.cu") is given its name back
    // where the student has no file of that name.
    std::vector<std::string> expected_files;
};

struct CanvasUnpackResult {
    std::size_t files = 0;               // filed into a student's folder
    std::vector<std::string> folders;    // one per student, sorted
    std::vector<std::string> late;       // the folders Canvas marked late
    std::vector<SkippedEntry> skipped;   // in the download, not filed, with why
    std::vector<std::string> renamed;    // "smithjohn_LATE_123: probe-1.cu is probe.cu"
    std::vector<std::string> zipped;     // folders that hold a zip the student handed in
    std::vector<std::string> anonymous;  // folders of an anonymous assignment (no user id)
};

// Files every file of the download into its student's folder under class_dir. Throws BatchError
// where the download cannot be read, class_dir is not empty, or two files of one student would
// take one name; what is not a Canvas file (a __MACOSX, a file of another name, a link, a
// folder) is skipped, and said.
CanvasUnpackResult unpack_canvas_download(const CanvasUnpackOptions& options);

// The roster: the course's gradebook export (Grades, Export, CSV), as Canvas writes it, with a
// comma or a semicolon between cells. Throws BatchError naming the file and what is missing
// where it has no header of Canvas's (Student, ID, ..., Section).
struct CanvasRoster {
    std::vector<CanvasRosterRow> rows;
    std::vector<std::string> assignments;  // its assignment columns, "Day 15 (12345)"
};
CanvasRoster read_canvas_roster(const std::filesystem::path& file);

// The class's grades matched to the roster by Canvas user id (the folders' names): who is
// written, and who is not, with why.
struct CanvasGrades {
    std::vector<CanvasScore> scores;     // in the roster's order
    std::vector<std::string> missing;    // roster students with no graded folder: "Doe, Jane (123)"
    std::vector<NotGraded> not_written;  // folders not written, with why
};
// Scores in points out of points_possible (the report's score scaled from its max_score).
CanvasGrades match_canvas_grades(const CanvasRoster& roster, const std::vector<ClassEntry>& entries,
                                 double points_possible);

}  // namespace grader
