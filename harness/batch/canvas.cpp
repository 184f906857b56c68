// Canvas both ways: its submissions download filed into a class folder, and its gradebook export
// read as the roster of the gradebook import (canvas.hpp).

#include "batch/canvas.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <exception>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <system_error>
#include <type_traits>
#include <utility>

#include "batch/batch.hpp"
#include "common/text.hpp"
#include "model/report.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace {

namespace fs = std::filesystem;

// ContentZipper's names. <name> is [[:word:]] characters (letters of any script, digits and '_')
// without "_<digits>_", so the first "_<digits>_<digits>_" is the user's id and the file's.
// Uploads first: a file the student named "text.html" is an upload with two ids before it.
const std::regex kUpload(R"(^(.*?)(_LATE)?_([0-9]+)_([0-9]+)_(.+)$)");
const std::regex kTextOrLink(R"(^(.*?)(_LATE)?_([0-9]+)_(text|link)\.html$)");
const std::regex kAnonymousUpload(R"(^(LATE_)?anon_([A-Za-z0-9]+)_([0-9]+)_(.+)$)");
const std::regex kAnonymousTextOrLink(R"(^(LATE_)?anon_([A-Za-z0-9]+)_(text|link)\.html$)");
const std::regex kFolder(R"(^(.*?)(_LATE)?_([0-9]+)$)");
const std::regex kAnonymousFolder(R"(^(LATE_)?anon_([A-Za-z0-9]+)$)");

// Longer than any name Canvas writes: not parsed (std::regex recurses on long input).
constexpr std::size_t kMaxNameBytes = 1024;

// The name's own part, before the user id: what Canvas made of the student's name.
bool canvas_name(const std::string& name) {
    return std::all_of(name.begin(), name.end(), [](char c) {
        const auto byte = static_cast<unsigned char>(c);
        return byte >= 0x80 || std::isalnum(byte) != 0 || c == '_';
    });
}

struct PlannedFile {
    fs::path source;
    std::string file_name;
    unsigned long long attachment = 0;  // Canvas's attachment id: a later upload is larger
};

unsigned long long attachment_id(const std::string& digits) {
    try {
        return std::stoull(digits);
    } catch (const std::exception&) {
        return 0;
    }
}

// Canvas names a file handed in again "probe-1.cu" where the student's files already hold a
// "probe.cu"; a browser may save it "probe (1).cu". The number, where `name` is `expected` so
// renamed; nullopt otherwise.
std::optional<unsigned long long> renamed_copy(const std::string& name,
                                               const std::string& expected) {
    const fs::path path(expected);
    const std::string stem = path.stem().string();
    const std::string extension = path.extension().string();
    for (const auto& [before, after] : {std::pair<std::string, std::string>{"-", ""},
                                        std::pair<std::string, std::string>{" (", ")"}}) {
        const std::string head = stem + before;
        const std::string tail = after + extension;
        if (name.size() <= head.size() + tail.size() || name.rfind(head, 0) != 0 ||
            name.compare(name.size() - tail.size(), tail.size(), tail) != 0) {
            continue;
        }
        const std::string digits =
            name.substr(head.size(), name.size() - head.size() - tail.size());
        if (digits.size() <= 6 && std::all_of(digits.begin(), digits.end(), [](char c) {
                return std::isdigit(static_cast<unsigned char>(c)) != 0;
            })) {
            return std::stoull(digits);
        }
    }
    return std::nullopt;
}

// Gives an expected file its name back in one student's files, where Canvas renamed it.
void restore_renamed(const std::string& folder, std::vector<PlannedFile>& files,
                     const std::vector<std::string>& expected, CanvasUnpackResult& result) {
    for (const std::string& wanted : expected) {
        const bool present = std::any_of(files.begin(), files.end(), [&](const PlannedFile& f) {
            return f.file_name == wanted;
        });
        if (present) {
            continue;
        }
        PlannedFile* latest = nullptr;
        for (PlannedFile& file : files) {
            if (renamed_copy(file.file_name, wanted) &&
                (latest == nullptr || file.attachment > latest->attachment)) {
                latest = &file;
            }
        }
        if (latest != nullptr) {
            result.renamed.push_back(text::visible_line(folder) + ": " +
                                     text::visible_line(latest->file_name) + " is " + wanted +
                                     " (Canvas renames a file handed in again)");
            latest->file_name = wanted;
        }
    }
}

bool folder_is_empty(const fs::path& folder) {
    std::error_code error;
    return fs::is_empty(folder, error) && !error;
}

}  // namespace

std::optional<CanvasFileName> parse_canvas_file_name(const std::string& name) {
    if (name.size() > kMaxNameBytes || text::visible_line(name) != name) {
        return std::nullopt;
    }
    std::smatch match;
    CanvasFileName parsed;
    if (std::regex_match(name, match, kAnonymousUpload)) {
        parsed.late = match[1].matched;
        parsed.folder = std::string(parsed.late ? "LATE_" : "") + "anon_" + match[2].str();
        parsed.file_name = match[4].str();
    } else if (std::regex_match(name, match, kAnonymousTextOrLink)) {
        parsed.late = match[1].matched;
        parsed.folder = std::string(parsed.late ? "LATE_" : "") + "anon_" + match[2].str();
        parsed.file_name = match[3].str() + ".html";
    } else if (std::regex_match(name, match, kUpload) ||
               std::regex_match(name, match, kTextOrLink)) {
        if (!canvas_name(match[1].str())) {
            return std::nullopt;
        }
        parsed.late = match[2].matched;
        parsed.user_id = match[3].str();
        parsed.folder = match[1].str() + (parsed.late ? "_LATE_" : "_") + parsed.user_id;
        // An upload's match has the file's name after its id; a text entry's, "text" or "link".
        parsed.file_name = match.size() == 6 ? match[5].str() : match[4].str() + ".html";
    } else {
        return std::nullopt;
    }
    if (parsed.file_name.empty() || parsed.file_name == "." || parsed.file_name == "..") {
        return std::nullopt;
    }
    return parsed;
}

std::optional<CanvasFolder> parse_canvas_folder_name(const std::string& folder) {
    if (folder.size() > kMaxNameBytes) {
        return std::nullopt;
    }
    std::smatch match;
    if (std::regex_match(folder, match, kAnonymousFolder)) {
        return CanvasFolder{"", match[1].matched};
    }
    if (std::regex_match(folder, match, kFolder) && canvas_name(match[1].str())) {
        return CanvasFolder{match[3].str(), match[2].matched};
    }
    return std::nullopt;
}

CanvasUnpackResult unpack_canvas_download(const CanvasUnpackOptions& options) {
    std::error_code error;
    fs::directory_iterator entries(options.download, error);
    if (error) {
        throw BatchError("cannot read the Canvas download " +
                         text::visible_line(options.download.string()) + ": " + error.message() +
                         " (unzip Canvas's submissions.zip into a folder first)");
    }
    if (fs::exists(options.class_dir, error) && !folder_is_empty(options.class_dir)) {
        throw BatchError(text::visible_line(options.class_dir.string()) +
                         " is not empty: unpack a Canvas download into a new folder, so that no "
                         "other student's files mix with it");
    }
    CanvasUnpackResult result;
    std::map<std::string, std::vector<PlannedFile>> by_folder;
    std::map<std::string, bool> late;
    std::map<std::string, bool> anonymous;
    for (const auto& entry : entries) {
        const std::string name = entry.path().filename().string();
        const fs::file_status status = entry.symlink_status(error);
        if (system_leftover(name)) {
            result.skipped.push_back({name, kSystemLeftoverReason});
            continue;
        }
        if (fs::is_symlink(status)) {
            result.skipped.push_back({name, "a symbolic link, not followed"});
            continue;
        }
        if (!fs::is_regular_file(status)) {
            result.skipped.push_back(
                {name, fs::is_directory(status)
                           ? "a folder: Canvas's download is one flat folder of files"
                           : "neither a file nor a folder"});
            continue;
        }
        const std::optional<CanvasFileName> parsed = parse_canvas_file_name(name);
        if (!parsed) {
            result.skipped.push_back({name,
                                      "not named as Canvas names a submission's file "
                                      "(name_userid_fileid_filename, or name_LATE_userid_...)"});
            continue;
        }
        std::smatch match;
        unsigned long long attachment = 0;
        if (std::regex_match(name, match, kUpload)) {
            attachment = attachment_id(match[4].str());
        } else if (std::regex_match(name, match, kAnonymousUpload)) {
            attachment = attachment_id(match[3].str());
        }
        by_folder[parsed->folder].push_back({entry.path(), parsed->file_name, attachment});
        late[parsed->folder] = parsed->late;
        anonymous[parsed->folder] = parsed->user_id.empty();
    }
    // One student whose submission Canvas marked late and, in the same download, not late:
    // two downloads mixed, which one folder per student cannot say.
    std::map<std::string, std::string> user_folder;
    for (const auto& [folder, files] : by_folder) {
        const auto parsed = parse_canvas_folder_name(folder);
        if (parsed && !parsed->user_id.empty()) {
            const auto [other, fresh] = user_folder.emplace(parsed->user_id, folder);
            if (!fresh) {
                throw BatchError("the download holds Canvas user " + parsed->user_id +
                                 " under two names, " + text::visible_line(other->second) +
                                 " and " + text::visible_line(folder) +
                                 ": unzip one download of Canvas's into an empty folder");
            }
        }
    }
    fs::create_directories(options.class_dir);
    for (auto& [folder, files] : by_folder) {
        // Two uploads of one name in one submission: the later upload is the one handed in.
        std::sort(files.begin(), files.end(), [](const PlannedFile& a, const PlannedFile& b) {
            return a.file_name != b.file_name ? a.file_name < b.file_name
                                              : a.attachment > b.attachment;
        });
        std::vector<PlannedFile> kept;
        for (const PlannedFile& file : files) {
            if (!kept.empty() && kept.back().file_name == file.file_name) {
                result.skipped.push_back({file.source.filename().string(),
                                          "an earlier upload of " + file.file_name +
                                              " by the same student: the later one is kept"});
                continue;
            }
            kept.push_back(file);
        }
        restore_renamed(folder, kept, options.expected_files, result);
        const fs::path into = options.class_dir / folder;
        fs::create_directory(into);
        bool zipped = false;
        std::set<std::string> names;
        for (const PlannedFile& file : kept) {
            if (!names.insert(file.file_name).second) {
                // A renamed copy given a name another file already has: never overwrite.
                throw BatchError("two files of " + text::visible_line(folder) + " would be " +
                                 text::visible_line(file.file_name));
            }
            fs::copy_file(file.source, into / file.file_name);
            ++result.files;
            zipped = zipped || fs::path(file.file_name).extension() == ".zip";
        }
        result.folders.push_back(folder);
        if (late[folder]) {
            result.late.push_back(folder);
        }
        if (anonymous[folder]) {
            result.anonymous.push_back(folder);
        }
        if (zipped) {
            result.zipped.push_back(folder);
        }
    }
    std::sort(result.skipped.begin(), result.skipped.end(),
              [](const SkippedEntry& a, const SkippedEntry& b) { return a.name < b.name; });
    return result;
}

namespace {

// RFC 4180 records with `separator` between cells; a leading byte-order mark is not part of the
// first cell. A quote inside an unquoted cell is kept as a character, as spreadsheets read it.
std::vector<std::vector<std::string>> csv_records(const std::string& text, char separator) {
    std::vector<std::vector<std::string>> records;
    std::vector<std::string> record;
    std::string cell;
    bool quoted = false;
    bool any = false;
    const std::size_t start = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
    for (std::size_t i = start; i < text.size(); ++i) {
        const char c = text[i];
        any = true;
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
                cell += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                cell += c;
            }
        } else if (c == '"' && cell.empty()) {
            quoted = true;
        } else if (c == separator) {
            record.push_back(cell);
            cell.clear();
        } else if (c == '\r' || c == '\n') {
            if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
                ++i;
            }
            record.push_back(cell);
            records.push_back(record);
            record.clear();
            cell.clear();
            any = false;
        } else {
            cell += c;
        }
    }
    if (any) {
        record.push_back(cell);
        records.push_back(record);
    }
    return records;
}

// Canvas's export guards a name that starts with = as ="name", so a spreadsheet shows it as text.
std::string unguarded(const std::string& cell) {
    if (cell.size() >= 3 && cell.rfind("=\"", 0) == 0 && cell.back() == '"') {
        return cell.substr(2, cell.size() - 3);
    }
    return cell;
}

std::string trimmed(const std::string& cell) {
    const std::size_t first = cell.find_first_not_of(" \t");
    if (first == std::string::npos) {
        return {};
    }
    return cell.substr(first, cell.find_last_not_of(" \t") - first + 1);
}

// A row Canvas's export writes that is not a student: points possible, or manual posting.
bool not_a_student(const std::vector<std::string>& row) {
    if (!row.empty() && row[0].find("Points Possible") != std::string::npos) {
        return true;
    }
    return std::all_of(row.begin(), row.end(), [](const std::string& cell) {
        const std::string value = trimmed(cell);
        return value.empty() || value == "Muted" || value.rfind("Manual Posting", 0) == 0;
    });
}

}  // namespace

CanvasRoster read_canvas_roster(const fs::path& file) {
    std::string why;
    const std::optional<std::string> text = read_file_bounded(file, std::size_t{64} << 20, why);
    const std::string shown = text::visible_line(file.string());
    if (!text) {
        throw BatchError("cannot read the Canvas roster " + shown + ": " + why);
    }
    // Canvas writes ';' between cells where its user asked for it, as its importer reads either.
    const std::string first_line = text->substr(0, text->find_first_of("\r\n"));
    const char separator = std::count(first_line.begin(), first_line.end(), ';') >
                                   std::count(first_line.begin(), first_line.end(), ',')
                               ? ';'
                               : ',';
    const std::vector<std::vector<std::string>> records = csv_records(*text, separator);
    if (records.empty()) {
        throw BatchError("the Canvas roster " + shown +
                         " is empty: export the course's "
                         "gradebook (Grades, Export, CSV)");
    }
    const std::vector<std::string>& header = records.front();
    const auto column = [&](const std::string& name) -> std::optional<std::size_t> {
        const auto found = std::find_if(header.begin(), header.end(),
                                        [&](const std::string& h) { return trimmed(h) == name; });
        if (found == header.end()) {
            return std::nullopt;
        }
        return static_cast<std::size_t>(found - header.begin());
    };
    const auto student = column("Student");
    const auto last_name = column("LastName");
    const auto first_name = column("FirstName");
    const auto id = column("ID");
    const auto section = column("Section");
    if ((!student && !(last_name && first_name)) || !id || !section) {
        throw BatchError("the Canvas roster " + shown +
                         " has no header of Canvas's gradebook export (Student, ID, SIS User ID, "
                         "SIS Login ID, Section, then the assignments): export the course's "
                         "gradebook (Grades, Export, CSV) and give that file");
    }
    const auto sis_user = column("SIS User ID");
    const auto sis_login = column("SIS Login ID");
    CanvasRoster roster;
    // Assignment columns follow Section and end with their id, "Day 15 (12345)".
    static const std::regex kAssignment(R"(^.*\([0-9]+\)$)");
    for (std::size_t c = *section + 1; c < header.size(); ++c) {
        if (std::regex_match(trimmed(header[c]), kAssignment)) {
            roster.assignments.push_back(trimmed(header[c]));
        }
    }
    const auto cell = [](const std::vector<std::string>& row, std::optional<std::size_t> at) {
        return at && *at < row.size() ? trimmed(unguarded(row[*at])) : std::string();
    };
    for (std::size_t r = 1; r < records.size(); ++r) {
        const std::vector<std::string>& row = records[r];
        if (not_a_student(row)) {
            continue;
        }
        CanvasRosterRow student_row;
        student_row.student =
            student ? cell(row, student) : cell(row, last_name) + ", " + cell(row, first_name);
        student_row.id = cell(row, id);
        student_row.sis_user_id = cell(row, sis_user);
        student_row.sis_login_id = cell(row, sis_login);
        student_row.section = cell(row, section);
        roster.rows.push_back(student_row);
    }
    return roster;
}

CanvasGrades match_canvas_grades(const CanvasRoster& roster, const std::vector<ClassEntry>& entries,
                                 double points_possible) {
    CanvasGrades grades;
    std::map<std::string, const ClassEntry*> by_user;
    std::set<std::string> twice;
    for (const ClassEntry& entry : entries) {
        const std::string& folder =
            entry.submission_folder.empty() ? entry.student_folder : entry.submission_folder;
        const auto parsed = parse_canvas_folder_name(folder);
        if (!parsed) {
            grades.not_written.push_back(
                {folder,
                 "no Canvas user id in the folder's name (`grader canvas unpack` names "
                 "each folder name_userid)"});
        } else if (parsed->user_id.empty()) {
            grades.not_written.push_back(
                {folder,
                 "an anonymous assignment's folder: Canvas's download names no user; "
                 "enter its grade in SpeedGrader"});
        } else if (entry.report.verdict == Verdict::ungradable) {
            grades.not_written.push_back(
                {folder, "ungradable, so no score: grade it again, then write the file again"});
        } else if (!by_user.emplace(parsed->user_id, &entry).second) {
            twice.insert(parsed->user_id);
        }
    }
    for (const std::string& user : twice) {
        grades.not_written.push_back(
            {by_user[user]->student_folder,
             "Canvas user " + user + " has two graded folders: keep one and write the file again"});
        by_user.erase(user);
    }
    std::set<std::string> in_roster;
    for (const CanvasRosterRow& row : roster.rows) {
        in_roster.insert(row.id);
        const auto found = by_user.find(row.id);
        if (found == by_user.end()) {
            grades.missing.push_back(row.student + " (" + row.id + ")");
            continue;
        }
        const Report& report = found->second->report;
        const double points =
            report.max_score > 0.0 ? report.score / report.max_score * points_possible : 0.0;
        grades.scores.push_back({row, points});
    }
    for (const auto& [user, entry] : by_user) {
        if (in_roster.count(user) == 0) {
            grades.not_written.push_back(
                {entry->student_folder, "Canvas user " + user +
                                            " is not in the roster (dropped the course, or "
                                            "another section's export?)"});
        }
    }
    std::sort(grades.not_written.begin(), grades.not_written.end(),
              [](const NotGraded& a, const NotGraded& b) { return a.folder < b.folder; });
    return grades;
}

}  // namespace grader
