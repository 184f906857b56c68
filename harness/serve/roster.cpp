#include "serve/roster.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <utility>

#include "text/text_safety.hpp"

namespace grader::serve {
namespace {

constexpr std::size_t kMaxIdBytes = 128;
constexpr std::size_t kMaxNameBytes = 256;

std::string trim(std::string_view text) {
    std::size_t begin = 0;
    std::size_t end = text.size();
    while (begin < end && std::isspace(static_cast<unsigned char>(text[begin])) != 0) {
        ++begin;
    }
    while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1])) != 0) {
        --end;
    }
    return std::string(text.substr(begin, end - begin));
}

std::string lower(std::string text) {
    for (char& c : text) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return text;
}

bool has_control(std::string_view text) {
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7f) {
            return true;
        }
    }
    return text::visible_line(text) != text;  // C1 controls, bidirectional overrides
}

// The column of the first header name found, in the order of preference.
int column_named(const std::vector<std::string>& header, std::initializer_list<const char*> names) {
    for (const char* name : names) {
        for (std::size_t c = 0; c < header.size(); ++c) {
            if (lower(trim(header[c])) == name) {
                return static_cast<int>(c);
            }
        }
    }
    return -1;
}

}  // namespace

std::vector<std::vector<std::string>> read_csv_records(std::string_view text,
                                                       const std::string& source,
                                                       std::vector<int>* record_lines) {
    if (text.substr(0, 3) == "\xEF\xBB\xBF") {
        text.remove_prefix(3);
    }
    std::vector<std::vector<std::string>> records;
    std::vector<std::string> record;
    std::string field;
    bool quoted = false;
    bool field_started = false;
    int line = 1;
    int record_line = 1;
    const auto end_record = [&] {
        record.push_back(field);
        field.clear();
        field_started = false;
        const bool blank = record.size() == 1 && record[0].empty();
        if (!blank) {
            records.push_back(record);
            if (record_lines != nullptr) {
                record_lines->push_back(record_line);
            }
        }
        record.clear();
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"') {
                if (i + 1 < text.size() && text[i + 1] == '"') {
                    field += '"';
                    ++i;
                } else {
                    quoted = false;
                }
            } else {
                line += c == '\n' ? 1 : 0;
                field += c;
            }
            continue;
        }
        if (c == '"' && !field_started) {
            quoted = true;
            field_started = true;
        } else if (c == ',') {
            record.push_back(field);
            field.clear();
            field_started = false;
        } else if (c == '\n' || c == '\r') {
            if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
                ++i;
            }
            end_record();
            ++line;
            record_line = line;
        } else {
            field += c;
            field_started = true;
        }
    }
    if (quoted) {
        throw RosterError(source + ":" + std::to_string(record_line) +
                          ": a quoted field is never closed (a \" is missing)");
    }
    if (field_started || !record.empty()) {
        end_record();
    }
    return records;
}

namespace {

// Which platform's export a header is, and where its columns are.
struct RosterLayout {
    std::string format = "a CSV roster";
    int id = -1;
    int name = -1;
    int first_name = -1;  // Moodle's and Canvas's first and last names, joined
    int last_name = -1;
    int role = -1;        // PrairieLearn's Role: only Student rows are students
    bool canvas = false;  // Canvas's special rows and its users with no login are left out
};

RosterLayout layout_of(const std::vector<std::string>& header) {
    RosterLayout layout;
    const auto at = [&](std::initializer_list<const char*> names) {
        return column_named(header, names);
    };
    const bool canvas =
        (at({"student"}) >= 0 || (at({"lastname"}) >= 0 && at({"firstname"}) >= 0)) &&
        at({"id"}) >= 0 && at({"sis login id"}) >= 0 && at({"section"}) >= 0;
    const bool moodle =
        at({"first name"}) >= 0 && at({"last name", "surname"}) >= 0 && at({"email address"}) >= 0;
    const bool prairielearn =
        at({"uid"}) >= 0 && at({"uin"}) >= 0 && at({"name"}) >= 0 && at({"role"}) >= 0;
    if (canvas) {
        layout.format = "Canvas's gradebook export";
        layout.canvas = true;
        layout.id = at({"sis login id"});
        layout.name = at({"student"});
        layout.last_name = at({"lastname"});
        layout.first_name = at({"firstname"});
    } else if (moodle) {
        layout.format = "Moodle's grade export";
        layout.id = at({"username", "email address"});
        layout.first_name = at({"first name"});
        layout.last_name = at({"last name", "surname"});
    } else if (prairielearn) {
        layout.format = "PrairieLearn's gradebook";
        layout.id = at({"uid"});
        layout.name = at({"name"});
        layout.role = at({"role"});
    } else {
        layout.id = at({"student_id", "student id", "login", "login_id", "sis login id", "username",
                        "user", "id", "email", "sis user id", "student"});
        layout.name =
            at({"name", "full name", "full_name", "student name", "display name", "student"});
        if (layout.name == layout.id) {
            layout.name = -1;
        }
    }
    return layout;
}

std::string cell_at(const std::vector<std::string>& record, int column) {
    return column >= 0 && static_cast<std::size_t>(column) < record.size() ? trim(record[column])
                                                                           : std::string();
}

// Canvas writes a name that starts with = as ="name", so that a spreadsheet shows it as text.
std::string unguarded(const std::string& cell) {
    if (cell.size() >= 3 && cell.rfind("=\"", 0) == 0 && cell.back() == '"') {
        return cell.substr(2, cell.size() - 3);
    }
    return cell;
}

// Why a row of Canvas's export is not a student, or empty where it is one.
std::string canvas_row_left_out(const std::vector<std::string>& record, const RosterLayout& layout,
                                const std::string& id) {
    const std::string first = record.empty() ? std::string() : trim(record[0]);
    if (first == "Points Possible") {
        return "Canvas's Points Possible row";
    }
    const bool no_user =
        std::all_of(record.begin(), record.begin() + std::min<std::size_t>(record.size(), 4),
                    [](const std::string& cell) { return trim(cell).empty(); });
    if (no_user) {
        return "Canvas's row of assignments posted by hand (Manual Posting)";
    }
    if (id.empty()) {
        return "'" + text::visible_line(cell_at(record, layout.name >= 0 ? layout.name : 0)) +
               "' has no SIS Login ID (Canvas's Test Student has none): no token";
    }
    return {};
}

}  // namespace

Roster parse_roster(std::string_view text, const std::string& source) {
    std::vector<int> lines;
    const auto records = read_csv_records(text, source, &lines);
    if (records.empty()) {
        throw RosterError(source +
                          ": the roster is empty: one student a row is expected, the "
                          "id first (or under a header such as student_id)");
    }
    RosterLayout layout = layout_of(records[0]);
    std::size_t first = 1;
    if (layout.id < 0) {
        layout.id = 0;
        layout.name = 1;
        first = 0;  // no header: every row is a student
    }
    Roster roster;
    roster.format = layout.format;
    std::map<std::string, int> seen;  // id_key -> line
    for (std::size_t r = first; r < records.size(); ++r) {
        const auto& record = records[r];
        const std::string where = source + ":" + std::to_string(lines[r]);
        RosterStudent student;
        student.line = lines[r];
        student.id = cell_at(record, layout.id);
        if (layout.first_name >= 0 || layout.last_name >= 0) {
            const std::string first_name = unguarded(cell_at(record, layout.first_name));
            const std::string last_name = unguarded(cell_at(record, layout.last_name));
            student.name =
                first_name + (first_name.empty() || last_name.empty() ? "" : " ") + last_name;
        } else {
            student.name = unguarded(cell_at(record, layout.name));
        }
        if (layout.canvas) {
            if (std::string why = canvas_row_left_out(record, layout, student.id); !why.empty()) {
                roster.left_out.push_back({student.line, std::move(why)});
                continue;
            }
        }
        if (layout.role >= 0) {
            const std::string role = cell_at(record, layout.role);
            if (role != "Student") {
                roster.left_out.push_back(
                    {student.line,
                     "'" + text::visible_line(student.id) + "' is " +
                         (role == "Staff" ? std::string("staff")
                                          : "of no role in the course (Role '" +
                                                text::visible_line(role) + "')") +
                         ", not a student: no token (`grader tokens instructor` makes an "
                         "instructor's)"});
                continue;
            }
        }
        if (student.id.empty()) {
            throw RosterError(where + ": no student id in column " + std::to_string(layout.id + 1) +
                              (records[0].size() > static_cast<std::size_t>(layout.id) && first == 1
                                   ? " ('" + text::visible_line(trim(records[0][layout.id])) + "')"
                                   : std::string()));
        }
        if (text::first_invalid_utf8(student.id) != std::string::npos ||
            text::first_invalid_utf8(student.name) != std::string::npos) {
            throw RosterError(where + ": not UTF-8 text (save the roster as UTF-8 CSV)");
        }
        if (has_control(student.id) || has_control(student.name)) {
            throw RosterError(where + ": the id or name holds a control character: '" +
                              text::visible_line(student.id) + "'");
        }
        if (student.id.size() > kMaxIdBytes || student.name.size() > kMaxNameBytes) {
            throw RosterError(where + ": the id is longer than " + std::to_string(kMaxIdBytes) +
                              " bytes, or the name than " + std::to_string(kMaxNameBytes));
        }
        const auto [at, inserted] = seen.emplace(text::id_key(student.id), student.line);
        if (!inserted) {
            throw RosterError(where + ": student '" + text::visible_line(student.id) +
                              "' is the same id as line " + std::to_string(at->second) +
                              "'s (ids are compared as text::id_key does: case and look-alike "
                              "letters aside)");
        }
        roster.students.push_back(std::move(student));
    }
    if (roster.students.empty()) {
        throw RosterError(source + ": the roster has a header and no student");
    }
    return roster;
}

Roster read_roster(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        throw RosterError(text::visible_line(file.string()) + ": cannot be read");
    }
    std::ostringstream text;
    text << in.rdbuf();
    return parse_roster(text.str(), text::visible_line(file.string()));
}

}  // namespace grader::serve
