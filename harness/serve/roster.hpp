#pragma once

// The instructor's roster: a CSV file with one student a row, from which `grader tokens issue`
// makes one token per student. The course platforms' own exports are read as they are:
//   - Canvas's gradebook export (Grades, Export: canvas-lms lib/gradebook_exporter.rb at
//     0140a2ef): Student (or LastName, FirstName), ID, [SIS User ID,] SIS Login ID, ..., Section,
//     then the assignments. The login is SIS Login ID; its "Manual Posting" row and its
//     "    Points Possible" row are no students, nor is a user with no login (its Test Student).
//   - Moodle's grade export (Grades, Export, Plain text file: "First name", "Last name" (older
//     versions "Surname"), "ID number", "Institution", "Department", "Email address", the grade
//     items, "Last downloaded from this course"; moodle/moodle
//     grade/import/csv/tests/load_data_test.php): the login is "Username" where the export has
//     it, else "Email address"; the name is the first and last names.
//   - PrairieLearn's gradebook download (UID, UIN, Name, Role, the assessments:
//     apps/prairielearn/src/pages/instructorGradebook/instructorGradebook.tsx): the login is UID;
//     a row whose Role is Staff or None is no student.
// Otherwise a header row naming an id column ("student_id", "login", "SIS Login ID", "username",
// "id", "email", ...) is used where there is one; else the first column is the id and the
// second, if any, the name.

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace grader::serve {

// The roster cannot be used; what() names the file and line.
class RosterError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct RosterStudent {
    std::string id;    // the login the service knows the student by
    std::string name;  // may be empty
    int line = 0;      // in the file, for messages
};

// RFC 4180 records: quoted fields may hold commas, quotes ("") and newlines; a UTF-8 byte-order
// mark is skipped; CR LF and LF both end a record. Throws RosterError naming `source` and the
// line of an unterminated quote.
std::vector<std::vector<std::string>> read_csv_records(std::string_view text,
                                                       const std::string& source,
                                                       std::vector<int>* record_lines = nullptr);

// A row that is no student of the export (its special rows, staff, a user with no login).
struct RosterRowLeftOut {
    int line = 0;
    std::string why;
};

struct Roster {
    std::string format;  // "Canvas's gradebook export", ..., or "a CSV roster"
    std::vector<RosterStudent> students;
    std::vector<RosterRowLeftOut> left_out;
};

// Reads a roster. Throws RosterError for a file that cannot be read, an empty roster, an empty
// or over-long id (where the export's own rows are not the reason), an id with control
// characters or invalid UTF-8, and two rows whose ids compare equal (text::id_key: "Ann" and
// "ANN" would be one student), naming the lines.
Roster read_roster(const std::filesystem::path& file);
Roster parse_roster(std::string_view text, const std::string& source);

}  // namespace grader::serve
