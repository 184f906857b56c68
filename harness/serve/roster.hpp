#pragma once

// The instructor's roster: a CSV file with one student a row, from which `grader tokens issue`
// makes one token per student. A header row naming an id column ("student_id", "login", "SIS
// Login ID", "username", "id", "email", ...) is used where there is one; else the first column is
// the id and the second, if any, the name.

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

// Reads a roster. Throws RosterError for a file that cannot be read, an empty roster, an empty
// or over-long id, an id with control characters or invalid UTF-8, and two rows whose ids
// compare equal (text::id_key: "Ann" and "ANN" would be one student), naming the lines.
std::vector<RosterStudent> read_roster(const std::filesystem::path& file);
std::vector<RosterStudent> parse_roster(std::string_view text, const std::string& source);

}  // namespace grader::serve
