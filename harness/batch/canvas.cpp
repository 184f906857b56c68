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

#include "archive/zip_reader.hpp"
#include "batch/batch.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "model/report.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace {

namespace fs = std::filesystem;

// An anonymous assignment's names: "[LATE_]anon_<anonymous id>" for <name>_<user id>.
const std::regex kAnonymousUpload(R"(^(LATE_)?anon_([A-Za-z0-9]+)_([0-9]+)_(.+)$)");
const std::regex kAnonymousTextOrLink(R"(^(LATE_)?anon_([A-Za-z0-9]+)_(text|link)\.html$)");
const std::regex kFolder(R"(^(.*?)(_LATE)?_([0-9]+)$)");
const std::regex kAnonymousFolder(R"(^(LATE_)?anon_([A-Za-z0-9]+)$)");

// Longer than any name Canvas writes: not parsed (std::regex recurses on long input).
constexpr std::size_t kMaxNameBytes = 1024;

// The name's own part, before the user id: what Canvas made of the student's name. Canvas
// lowered its case, so an ASCII capital is never in it ("LATE" is Canvas's mark, not a name).
bool canvas_name(const std::string& name) {
    return std::all_of(name.begin(), name.end(), [](char c) {
        const auto byte = static_cast<unsigned char>(c);
        return byte >= 0x80 || std::islower(byte) != 0 || std::isdigit(byte) != 0 || c == '_';
    });
}

bool all_digits(const std::string& text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) != 0;
    });
}

std::vector<std::string> split_underscores(const std::string& name) {
    std::vector<std::string> parts(1);
    for (const char c : name) {
        if (c == '_') {
            parts.emplace_back();
        } else {
            parts.back() += c;
        }
    }
    return parts;
}

std::string joined(const std::vector<std::string>& parts, std::size_t from, std::size_t to) {
    std::string text;
    for (std::size_t i = from; i < to; ++i) {
        text += (i > from ? "_" : "") + parts[i];
    }
    return text;
}

unsigned long long attachment_id(const std::string& digits) {
    try {
        return std::stoull(digits);
    } catch (const std::exception&) {
        return 0;
    }
}

// <name>[_LATE]_<user id> from the parts before the user id (`name_parts`): false where they are
// not a name Canvas writes.
bool take_name(const std::vector<std::string>& parts, std::size_t name_end,
               const std::string& user_id, CanvasFileName& reading) {
    std::size_t end = name_end;
    reading.late = end >= 2 && parts[end - 1] == "LATE";
    if (reading.late) {
        --end;
    }
    reading.name_part = joined(parts, 0, end);
    if (!canvas_name(reading.name_part)) {
        return false;
    }
    reading.user_id = user_id;
    reading.folder = reading.name_part + (reading.late ? "_LATE_" : "_") + user_id;
    return true;
}

// A code point of UTF-8 text at `at` (advanced past it); 0xFFFD for a broken sequence.
char32_t next_code_point(const std::string& text, std::size_t& at) {
    const auto byte = static_cast<unsigned char>(text[at++]);
    if (byte < 0x80) {
        return byte;
    }
    const int more = byte >= 0xF0 ? 3 : byte >= 0xE0 ? 2 : byte >= 0xC0 ? 1 : -1;
    if (more < 0) {
        return 0xFFFD;
    }
    char32_t code = byte & (0x3F >> more);
    for (int i = 0; i < more; ++i) {
        if (at >= text.size() || (static_cast<unsigned char>(text[at]) & 0xC0) != 0x80) {
            return 0xFFFD;
        }
        code = (code << 6) | (static_cast<unsigned char>(text[at++]) & 0x3F);
    }
    return code;
}

void append_utf8(std::string& text, char32_t code) {
    if (code < 0x80) {
        text += static_cast<char>(code);
    } else if (code < 0x800) {
        text += static_cast<char>(0xC0 | (code >> 6));
        text += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
        text += static_cast<char>(0xE0 | (code >> 12));
        text += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        text += static_cast<char>(0x80 | (code & 0x3F));
    } else {
        text += static_cast<char>(0xF0 | (code >> 18));
        text += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
        text += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        text += static_cast<char>(0x80 | (code & 0x3F));
    }
}

// Ruby's String#downcase for the scripts of most names: ASCII, Latin-1, Latin Extended-A,
// Greek and Cyrillic capitals.
char32_t lower_case(char32_t c) {
    if ((c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xDE && c != 0xD7) ||
        (c >= 0x391 && c <= 0x3AB && c != 0x3A2) || (c >= 0x410 && c <= 0x42F)) {
        return c + 0x20;
    }
    if (c >= 0x400 && c <= 0x40F) {
        return c + 0x50;
    }
    if (c == 0x130) {
        return 'i';  // İ: Ruby gives i and a combining dot, which [[:word:]] keeps; close enough
    }
    if (c == 0x178) {
        return 0xFF;
    }
    // Latin Extended-A pairs a capital with the small letter after it, in two runs that shift
    // by one where a letter stands alone (ĸ at 0x138, ŉ at 0x149).
    if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) {
        return c % 2 == 0 ? c + 1 : c;
    }
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) {
        return c % 2 == 1 ? c + 1 : c;
    }
    return c;
}

// Ruby's [[:word:]] (a letter, a mark, a decimal digit or a connector punctuation such as '_'),
// told from the punctuation and symbols a name may hold.
bool word_character(char32_t c) {
    if (c < 0x80) {
        return std::isalnum(static_cast<int>(c)) != 0 || c == '_';
    }
    const bool punctuation_or_symbol =
        (c >= 0xA0 && c <= 0xBF && c != 0xAA && c != 0xB5 && c != 0xBA) || c == 0xD7 || c == 0xF7 ||
        (c >= 0x2000 && c <= 0x206F && c != 0x203F && c != 0x2040 && c != 0x2054) ||
        (c >= 0x20A0 && c <= 0x20CF) || (c >= 0x2190 && c <= 0x2BFF) ||
        (c >= 0x3000 && c <= 0x3004) || (c >= 0x3008 && c <= 0x3020) || c == 0x3030 ||
        (c >= 0xFE10 && c <= 0xFE1F) || (c >= 0xFE30 && c <= 0xFE4C) ||
        (c >= 0xFE50 && c <= 0xFE6F) || (c >= 0xFF01 && c <= 0xFF0F) ||
        (c >= 0xFF1A && c <= 0xFF20) || (c >= 0xFF3B && c <= 0xFF40 && c != 0xFF3F) ||
        (c >= 0xFF5B && c <= 0xFF65) || (c >= 0x1F000 && c <= 0x1FAFF) || c == 0xFFFD;
    return !punctuation_or_symbol;
}

// The readings of the roster's user `id`, where the roster lists it.
const CanvasRosterRow* roster_row(const CanvasRoster& roster, const std::string& id) {
    const auto found = std::find_if(roster.rows.begin(), roster.rows.end(),
                                    [&](const CanvasRosterRow& row) { return row.id == id; });
    return found == roster.rows.end() ? nullptr : &*found;
}

std::string describe_reading(const CanvasFileName& reading) {
    return "user " + reading.user_id + "'s " + text::visible_line(reading.file_name);
}

struct PlannedFile {
    fs::path source;
    std::string file_name;
    unsigned long long attachment = 0;  // Canvas's attachment id: a later upload is larger
};

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

// Each zip a student handed in, unpacked into their folder `into` with the limits of `grader
// serve`'s uploads, by the one zip reader. A zip that cannot be read, or whose files would take
// a name the folder already holds, is not unpacked and is said: the folder is graded as it is.
void unpack_zips(const std::string& folder, const fs::path& into,
                 const std::vector<PlannedFile>& files, const ZipLimits& limits,
                 std::set<std::string>& names, CanvasUnpackResult& result) {
    for (const PlannedFile& file : files) {
        if (!looks_like_zip(file.file_name, "")) {
            continue;
        }
        std::string why;
        const std::optional<std::string> bytes =
            read_file_bounded(into / file.file_name, limits.max_total_bytes, why);
        if (!bytes) {
            result.zip_refused.push_back(
                {folder, "'" + text::visible_line(file.file_name) + "' cannot be taken: " + why});
            continue;
        }
        std::vector<ZippedFile> unzipped;
        try {
            unzipped = read_zip_files(*bytes, file.file_name, limits);
        } catch (const ZipRefused& refused) {
            result.zip_refused.push_back({folder, refused.what()});
            continue;
        }
        const auto taken = std::find_if(unzipped.begin(), unzipped.end(), [&](const ZippedFile& f) {
            return names.count(f.name) != 0;
        });
        if (taken != unzipped.end()) {
            result.zip_refused.push_back(
                {folder, "'" + text::visible_line(file.file_name) + "' holds '" +
                             text::visible_line(taken->name) +
                             "', which the student also handed in beside it: the file handed "
                             "in is graded, the zip is not unpacked"});
            continue;
        }
        for (ZippedFile& inside : unzipped) {
            names.insert(inside.name);
            write_file_atomically(into / inside.name, inside.bytes);
            ++result.files;
        }
        result.unzipped.push_back(folder);
    }
}

}  // namespace

std::vector<CanvasFileName> canvas_file_readings(const std::string& name) {
    std::vector<CanvasFileName> readings;
    if (name.size() > kMaxNameBytes || text::visible_line(name) != name) {
        return readings;
    }
    const auto keep = [&](CanvasFileName reading) {
        if (!reading.file_name.empty() && reading.file_name != "." && reading.file_name != "..") {
            readings.push_back(std::move(reading));
        }
    };
    std::smatch match;
    if (std::regex_match(name, match, kAnonymousUpload)) {
        CanvasFileName reading;
        reading.anonymous = true;
        reading.late = match[1].matched;
        reading.folder = std::string(reading.late ? "LATE_" : "") + "anon_" + match[2].str();
        reading.attachment = attachment_id(match[3].str());
        reading.file_name = match[4].str();
        keep(reading);
    } else if (std::regex_match(name, match, kAnonymousTextOrLink)) {
        CanvasFileName reading;
        reading.anonymous = true;
        reading.late = match[1].matched;
        reading.folder = std::string(reading.late ? "LATE_" : "") + "anon_" + match[2].str();
        reading.file_name = match[3].str() + ".html";
        keep(reading);
    }
    const std::vector<std::string> parts = split_underscores(name);
    // An upload: <name>[_LATE]_<user id>_<attachment id>_<file name>, wherever two numbers
    // stand side by side with something before and after them.
    for (std::size_t user = 1; user + 2 < parts.size(); ++user) {
        CanvasFileName reading;
        if (!all_digits(parts[user]) || !all_digits(parts[user + 1]) ||
            !take_name(parts, user, parts[user], reading)) {
            continue;
        }
        reading.attachment = attachment_id(parts[user + 1]);
        reading.file_name = joined(parts, user + 2, parts.size());
        keep(reading);
    }
    // A text entry or a URL: <name>[_LATE]_<user id>_text.html, ..._link.html.
    if (parts.size() >= 3 && (parts.back() == "text.html" || parts.back() == "link.html") &&
        all_digits(parts[parts.size() - 2])) {
        CanvasFileName reading;
        if (take_name(parts, parts.size() - 2, parts[parts.size() - 2], reading)) {
            reading.file_name = parts.back();
            keep(reading);
        }
    }
    return readings;
}

std::optional<CanvasFileName> parse_canvas_file_name(const std::string& name) {
    std::vector<CanvasFileName> readings = canvas_file_readings(name);
    if (readings.size() != 1) {
        return std::nullopt;
    }
    return readings.front();
}

std::string canvas_name_in_files(const std::string& sortable_name) {
    // sanitize_user_name: "_<digits>_" becomes "<digits>", left to right, then lower case.
    std::string joined_digits;
    for (std::size_t i = 0; i < sortable_name.size(); ++i) {
        if (sortable_name[i] == '_') {
            std::size_t end = i + 1;
            while (end < sortable_name.size() &&
                   std::isdigit(static_cast<unsigned char>(sortable_name[end])) != 0) {
                ++end;
            }
            if (end > i + 1 && end < sortable_name.size() && sortable_name[end] == '_') {
                joined_digits += sortable_name.substr(i + 1, end - i - 1);
                i = end;
                continue;
            }
        }
        joined_digits += sortable_name[i];
    }
    // sanitize_file_name: every character but [[:word:]] removed.
    std::string name;
    for (std::size_t at = 0; at < joined_digits.size();) {
        const char32_t code = lower_case(next_code_point(joined_digits, at));
        if (word_character(code)) {
            append_utf8(name, code);
        }
    }
    return name;
}

std::optional<CanvasFileName> choose_canvas_reading(const std::vector<CanvasFileName>& readings,
                                                    const CanvasRoster* roster, std::string& why) {
    if (readings.size() == 1) {
        return readings.front();
    }
    std::string ways;
    for (const CanvasFileName& reading : readings) {
        ways += (ways.empty() ? "" : ", or ") + describe_reading(reading);
    }
    if (roster == nullptr) {
        why = "Canvas's name reads two ways (" + ways +
              "): give `grader canvas unpack` the gradebook export (--roster) to tell them apart";
        return std::nullopt;
    }
    std::vector<const CanvasFileName*> confirmed;
    for (const CanvasFileName& reading : readings) {
        const CanvasRosterRow* row = roster_row(*roster, reading.user_id);
        if (row != nullptr && canvas_name_in_files(row->student) == reading.name_part) {
            confirmed.push_back(&reading);
        }
    }
    if (confirmed.size() == 1) {
        return *confirmed.front();
    }
    why = "Canvas's name reads two ways (" + ways + ") and the roster lists " +
          (confirmed.empty() ? std::string("neither user under the name the file starts with")
                             : std::string("both")) +
          ": file it by hand into its student's folder";
    return std::nullopt;
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

namespace {

// A file of the download named as Canvas names a submission's, with each way its name reads.
struct FoundFile {
    fs::path path;
    std::vector<CanvasFileName> readings;
};

// The download's files named as Canvas names a submission's; every other entry is skipped, with
// why.
std::vector<FoundFile> canvas_files(fs::directory_iterator entries, CanvasUnpackResult& result) {
    std::vector<FoundFile> found;
    std::error_code error;
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
        std::vector<CanvasFileName> readings = canvas_file_readings(name);
        if (readings.empty()) {
            result.skipped.push_back({name,
                                      "not named as Canvas names a submission's file "
                                      "(name_userid_fileid_filename, or name_LATE_userid_...)"});
            continue;
        }
        found.push_back({entry.path(), std::move(readings)});
    }
    return found;
}

// Each file's student folder, from the one reading of its name that holds (the roster tells two
// apart): the files of each folder into `by_folder`, and the reading that named each folder.
// A file no reading places is skipped, with why.
std::map<std::string, CanvasFileName> place_in_folders(
    std::vector<FoundFile>& found, const CanvasRoster* roster,
    std::map<std::string, std::vector<PlannedFile>>& by_folder, CanvasUnpackResult& result) {
    // An assignment is anonymous or not as a whole: where any file is a named student's, a name
    // that starts "anon_" is a student's called Anon.
    const bool anonymous_download =
        std::all_of(found.begin(), found.end(), [](const FoundFile& file) {
            return std::any_of(file.readings.begin(), file.readings.end(),
                               [](const CanvasFileName& r) { return r.anonymous; });
        });
    std::map<std::string, CanvasFileName> folder_of;
    for (FoundFile& file : found) {
        const std::string name = file.path.filename().string();
        file.readings.erase(std::remove_if(file.readings.begin(), file.readings.end(),
                                           [&](const CanvasFileName& r) {
                                               return r.anonymous != anonymous_download;
                                           }),
                            file.readings.end());
        std::string why;
        const std::optional<CanvasFileName> chosen =
            file.readings.empty() ? std::nullopt
                                  : choose_canvas_reading(file.readings, roster, why);
        if (!chosen) {
            result.skipped.push_back(
                {name, why.empty() ? "an anonymous assignment's name in a download of named "
                                     "students', or the reverse"
                                   : why});
            continue;
        }
        if (file.readings.size() > 1) {
            result.read_by_roster.push_back(text::visible_line(name) + ": " +
                                            describe_reading(*chosen) + ", by the roster");
        }
        by_folder[chosen->folder].push_back({file.path, chosen->file_name, chosen->attachment});
        folder_of[chosen->folder] = *chosen;
    }
    return folder_of;
}

// One student whose submission Canvas marked late and, in the same download, not late: two
// downloads mixed, which one folder per student cannot say.
void check_one_folder_per_user(const std::map<std::string, CanvasFileName>& folder_of) {
    std::map<std::string, std::string> user_folder;
    for (const auto& [folder, reading] : folder_of) {
        if (!reading.user_id.empty()) {
            const auto [other, fresh] = user_folder.emplace(reading.user_id, folder);
            if (!fresh) {
                throw BatchError("the download holds Canvas user " + reading.user_id +
                                 " under two names, " + text::visible_line(other->second) +
                                 " and " + text::visible_line(folder) +
                                 ": unzip one download of Canvas's into an empty folder");
            }
        }
    }
}

// One student's folder in the class folder: the files of their submission (the later of two
// uploads of one name, renamed copies restored), their zips unpacked.
void unpack_folder(const std::string& folder, std::vector<PlannedFile>& files,
                   const CanvasFileName& reading, const CanvasUnpackOptions& options,
                   CanvasUnpackResult& result) {
    // Two uploads of one name in one submission: the later upload is the one handed in.
    std::sort(files.begin(), files.end(), [](const PlannedFile& a, const PlannedFile& b) {
        return a.file_name != b.file_name ? a.file_name < b.file_name : a.attachment > b.attachment;
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
    std::set<std::string> names;
    bool text_entry = false;
    for (const PlannedFile& file : kept) {
        if (!names.insert(file.file_name).second) {
            // A renamed copy given a name another file already has: never overwrite.
            throw BatchError("two files of " + text::visible_line(folder) + " would be " +
                             text::visible_line(file.file_name));
        }
        fs::copy_file(file.source, into / file.file_name);
        ++result.files;
        text_entry = text_entry || (file.attachment == 0 && (file.file_name == "text.html" ||
                                                             file.file_name == "link.html"));
    }
    unpack_zips(folder, into, kept, options.zip_limits, names, result);
    result.folders.push_back(folder);
    if (reading.late) {
        result.late.push_back(folder);
    }
    if (reading.anonymous) {
        result.anonymous.push_back(folder);
    }
    if (text_entry && kept.size() == 1) {
        result.text_entries.push_back(folder);
    }
}

}  // namespace

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
    std::vector<FoundFile> found = canvas_files(std::move(entries), result);
    std::map<std::string, std::vector<PlannedFile>> by_folder;
    const std::map<std::string, CanvasFileName> folder_of =
        place_in_folders(found, options.roster, by_folder, result);
    check_one_folder_per_user(folder_of);
    fs::create_directories(options.class_dir);
    for (auto& [folder, files] : by_folder) {
        unpack_folder(folder, files, folder_of.at(folder), options, result);
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
