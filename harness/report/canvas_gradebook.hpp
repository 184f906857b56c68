#pragma once

// Canvas's gradebook import CSV (Grades, Import): the student columns of the course's gradebook
// export, Student, ID, SIS User ID, SIS Login ID and Section, then one assignment's column, with
// a "Points Possible" row first. Canvas finds each student by ID (then SIS User ID, SIS Login
// ID, then name) and the assignment by the "(id)" its column title ends with, else by its title;
// a title it does not know makes a new assignment worth the points possible.

#include <string>
#include <vector>

namespace grader {

// A student as the course's gradebook export names them.
struct CanvasRosterRow {
    std::string student;  // "Doe, Jane"
    std::string id;       // Canvas's user id
    std::string sis_user_id;
    std::string sis_login_id;
    std::string section;
};

struct CanvasScore {
    CanvasRosterRow student;
    double points = 0.0;
};

// The import file: RFC 4180 with CRLF line ends and a byte-order mark, every cell through
// text::csv_field (the ids as keys, so they still match Canvas's).
std::string write_canvas_gradebook_csv(const std::string& assignment, double points_possible,
                                       const std::vector<CanvasScore>& scores);

}  // namespace grader
