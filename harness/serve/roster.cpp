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

std::vector<RosterStudent> parse_roster(std::string_view text, const std::string& source) {
    std::vector<int> lines;
    const auto records = read_csv_records(text, source, &lines);
    if (records.empty()) {
        throw RosterError(source +
                          ": the roster is empty: one student a row is expected, the "
                          "id first (or under a header such as student_id)");
    }
    int id_column =
        column_named(records[0], {"student_id", "student id", "login", "login_id", "sis login id",
                                  "username", "user", "id", "email", "sis user id", "student"});
    int name_column = column_named(
        records[0], {"name", "full name", "full_name", "student name", "display name", "student"});
    std::size_t first = 1;
    if (id_column < 0) {
        id_column = 0;
        name_column = 1;
        first = 0;  // no header: every row is a student
    }
    if (name_column == id_column) {
        name_column = -1;
    }
    std::vector<RosterStudent> students;
    std::map<std::string, int> seen;  // id_key -> line
    for (std::size_t r = first; r < records.size(); ++r) {
        const auto& record = records[r];
        const std::string where = source + ":" + std::to_string(lines[r]);
        RosterStudent student;
        student.line = lines[r];
        student.id = static_cast<std::size_t>(id_column) < record.size() ? trim(record[id_column])
                                                                         : std::string();
        if (name_column >= 0 && static_cast<std::size_t>(name_column) < record.size()) {
            student.name = trim(record[name_column]);
        }
        if (student.id.empty()) {
            throw RosterError(where + ": no student id in column " + std::to_string(id_column + 1));
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
        students.push_back(std::move(student));
    }
    if (students.empty()) {
        throw RosterError(source + ": the roster has a header and no student");
    }
    return students;
}

std::vector<RosterStudent> read_roster(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        throw RosterError(text::visible_line(file.string()) + ": cannot be read");
    }
    std::ostringstream text;
    text << in.rdbuf();
    return parse_roster(text.str(), text::visible_line(file.string()));
}

}  // namespace grader::serve
