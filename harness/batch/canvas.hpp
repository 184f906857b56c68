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

#include "archive/zip_reader.hpp"
#include "batch/batch.hpp"
#include "report/canvas_gradebook.hpp"
#include "report/class_outputs.hpp"

namespace grader {

// One file of a Canvas download, its name taken apart one way.
struct CanvasFileName {
    std::string folder;     // <name>[_LATE]_<user id>, or [LATE_]anon_<id>: the student's folder
    std::string user_id;    // Canvas's user id; empty for an anonymous assignment
    std::string name_part;  // <name>: what Canvas made of the student's sortable name
    bool late = false;      // Canvas marked the submission late
    std::string file_name;  // the file as the student named it ("text.html" for a text entry)
    unsigned long long attachment = 0;  // Canvas's attachment id; 0 for a text entry or a URL
    bool anonymous = false;             // [LATE_]anon_<id>: an anonymous assignment's
};

// Every way a name can be read as Canvas writes them (ContentZipper#get_filename and
// #add_upload_submission, canvas-lms lib/content_zipper.rb at 05e9653c). Canvas joins the parts
// with '_' and removes "_<digits>_" from the sortable name so that the first two numbers are the
// user's id and the file's (its own reader, AbstractAssignment#infer_comment_context_from_filename,
// takes those two and checks them against its database). Yet a name ending in "_<digits>"
// ("minh_2"), or one whose "_<digits>_" appears only once Canvas has removed its other characters
// ("x_2 _y"), or a file named "2_probe.cu", reads more than one way: each is returned, and the
// caller decides with the roster (choose_canvas_reading). Empty: not a name Canvas's download
// gives.
std::vector<CanvasFileName> canvas_file_readings(const std::string& name);

// The one reading of a name that reads one way only; nullopt for none, or for several.
std::optional<CanvasFileName> parse_canvas_file_name(const std::string& name);

// The <name> part Canvas writes for a user with this sortable name (the gradebook export's
// Student column): "_<digits>_" made "<digits>", lower case, every character but letters, marks,
// digits and '_' removed (Ruby's [[:word:]]). Lower case and [[:word:]] are Unicode's in Ruby;
// here they are exact for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic letters and the
// common punctuation blocks, which is what a name read two ways is checked against.
std::string canvas_name_in_files(const std::string& sortable_name);

// A folder unpack_canvas_download() made: its user id and late mark, or nullopt for another name.
struct CanvasFolder {
    std::string user_id;  // empty: an anonymous assignment's
    bool late = false;
};
std::optional<CanvasFolder> parse_canvas_folder_name(const std::string& folder);

// The roster: the course's gradebook export (Grades, Export, CSV), as Canvas writes it, with a
// comma or a semicolon between cells. Throws BatchError naming the file and what is missing
// where it has no header of Canvas's (Student, ID, ..., Section).
struct CanvasRoster {
    std::vector<CanvasRosterRow> rows;
    std::vector<std::string> assignments;  // its assignment columns, "Day 15 (12345)"
};
CanvasRoster read_canvas_roster(const std::filesystem::path& file);

// The reading a file is filed by: the only one; of several, the one the roster confirms (its
// user listed with a sortable name Canvas writes as the reading's <name>), where exactly one is.
// nullopt otherwise, with `why` naming the readings and what to do.
std::optional<CanvasFileName> choose_canvas_reading(const std::vector<CanvasFileName>& readings,
                                                    const CanvasRoster* roster, std::string& why);

struct CanvasUnpackOptions {
    std::filesystem::path download;   // the unzipped download: one flat folder of files
    std::filesystem::path class_dir;  // created; must not exist or be empty
    // The files a submission must hold (the exercise's source and answers file): a file that
    // Canvas renamed when the student handed it in again ("probe-1.cu") is given its name back
    // where the student has no file of that name.
    std::vector<std::string> expected_files;
    // The course's gradebook export: a file whose name reads two ways is the student's whose id
    // the roster lists under the name the file starts with. Without it, such a file is skipped.
    const CanvasRoster* roster = nullptr;
    // A zip a student handed in is unpacked into their folder within these limits: those of
    // `grader serve`'s uploads, through the one zip reader.
    ZipLimits zip_limits;
};

struct CanvasZipRefusal {
    std::string folder;  // the student's
    std::string reason;  // the zip reader's refusal, naming the zip and the entry
};

struct CanvasUnpackResult {
    std::size_t files = 0;                      // filed into a student's folder
    std::vector<std::string> folders;           // one per student, sorted
    std::vector<std::string> late;              // the folders Canvas marked late
    std::vector<SkippedEntry> skipped;          // in the download, not filed, with why
    std::vector<std::string> renamed;           // "smithjohn_LATE_123: probe-1.cu is probe.cu"
    std::vector<std::string> unzipped;          // folders whose zip was unpacked into them
    std::vector<CanvasZipRefusal> zip_refused;  // zips not unpacked, with why
    std::vector<std::string> text_entries;      // folders of a text entry or a URL, no file
    std::vector<std::string> read_by_roster;    // "minh_2_123456_9000003_probe.cu: user 123456's"
    std::vector<std::string> anonymous;         // folders of an anonymous assignment (no user id)
};

// Files every file of the download into its student's folder under class_dir, and unpacks each
// zip a student handed in there. Throws BatchError where the download cannot be read, class_dir
// is not empty, or two files of one student would take one name; what is not a Canvas file (a
// __MACOSX, a file of another name, a link, a folder) or reads as two students' is skipped, and
// said; a zip that cannot be taken is said per student, its folder graded as it is.
CanvasUnpackResult unpack_canvas_download(const CanvasUnpackOptions& options);

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
