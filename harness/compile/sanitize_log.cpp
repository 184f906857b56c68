// Compile logs go back to students; NVRTC quotes the lines of any file it opened, so a log is
// cut down to diagnostics about the student's own file and the provided headers.

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "compile/compile.hpp"

namespace grader {
namespace {

std::string current_directory() {
    std::error_code error;
    const std::filesystem::path cwd = std::filesystem::current_path(error);
    return error ? std::string() : cwd.string();
}

std::vector<std::string> split_lines(std::string_view text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) {
            lines.emplace_back(text.substr(start));
            break;
        }
        lines.emplace_back(text.substr(start, end - start));
        start = end + 1;
    }
    return lines;
}

std::string base_name(const std::string& path) {
    const std::size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
    if (from.empty()) {
        return;
    }
    for (std::size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
}

// An absolute path where a compiler message would put one: after a blank, a quote, a
// parenthesis, or at the start of the line; it runs to a blank, a quote, a bracket or : , ;.
// Found by one pass over the line (no regex: the log quotes the student's lines, and std::regex
// recurses per character).
struct PathInLine {
    std::size_t at = 0;
    std::size_t size = 0;
};

bool is_log_blank(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::vector<PathInLine> absolute_paths(std::string_view line) {
    std::vector<PathInLine> paths;
    std::size_t i = 0;
    while (i < line.size()) {
        constexpr std::string_view kBefore = "\"'(<=,";
        const bool starts = line[i] == '/' && (i == 0 || is_log_blank(line[i - 1]) ||
                                               kBefore.find(line[i - 1]) != std::string_view::npos);
        if (!starts) {
            ++i;
            continue;
        }
        std::size_t end = i + 1;
        while (end < line.size() && !is_log_blank(line[end]) &&
               std::string_view("\"'()<>,:;").find(line[end]) == std::string_view::npos) {
            ++end;
        }
        if (end > i + 1) {
            paths.push_back({i, end - i});
        }
        i = end;
    }
    return paths;
}

class LogSanitizer {
public:
    explicit LogSanitizer(const std::vector<LoggedFile>& files) : cwd_(current_directory()) {
        for (std::size_t i = 0; i < files.size(); ++i) {
            const LoggedFile& file = files[i];
            allowed_.push_back(file.name);
            names_[file.name] = &file;
            if (i == 0) {
                // The student's source: NVRTC is given "/name"; an older NVRTC prefixed the
                // working directory to a relative name.
                names_["/" + file.name] = &file;
                if (!cwd_.empty()) {
                    names_[cwd_ + "/" + file.name] = &file;
                }
            }
        }
    }

    // Only the names NVRTC was given: a host file that happens to be called probe.cu (another
    // student's, opened by a source that escaped the vetting) is not the student's.
    bool is_allowed_file(const std::string& file) const { return names_.count(file) != 0; }

    // The given file's text of the named line, without its line end; nullopt where unknown.
    std::optional<std::string_view> line_of(const std::string& file, int line) const {
        const auto found = names_.find(file);
        if (found == names_.end() || found->second->text.empty() || line < 1) {
            return std::nullopt;
        }
        std::string_view text = found->second->text;
        if (text.substr(0, 3) == "\xEF\xBB\xBF") {
            text.remove_prefix(3);
        }
        std::size_t start = 0;
        for (int n = 1; n < line; ++n) {
            start = text.find('\n', start);
            if (start == std::string_view::npos) {
                return std::nullopt;
            }
            ++start;
        }
        std::size_t end = text.find('\n', start);
        std::string_view quoted =
            text.substr(start, end == std::string_view::npos ? text.npos : end - start);
        if (!quoted.empty() && quoted.back() == '\r') {
            quoted.remove_suffix(1);
        }
        return quoted;
    }

    // True where a path in the line is an allowed file's (for paths in a summary line).
    bool is_allowed_path(const std::string& path) const {
        return is_allowed_file(path) ||
               std::find(allowed_.begin(), allowed_.end(), base_name(path)) != allowed_.end();
    }

    // Paths become base names. In quoted source lines (quoted == true) only paths of two or
    // more parts are touched, so that `x = a /2;` stays as the student wrote it.
    std::string shorten_paths(std::string line, bool quoted) const {
        if (!cwd_.empty() && cwd_ != "/") {
            replace_all(line, cwd_ + "/", "");
        }
        std::string result;
        std::size_t copied = 0;
        for (const PathInLine& found : absolute_paths(line)) {
            const std::string path = line.substr(found.at, found.size);
            const bool several_parts = path.find('/', 1) != std::string::npos;
            if (quoted && !several_parts && !is_allowed_path(path)) {
                continue;
            }
            const std::size_t at = found.at;
            result += line.substr(copied, at - copied);
            result += base_name(path);
            copied = at + path.size();
        }
        result += line.substr(copied);
        return result;
    }

    // True where the line names, by absolute path, a file the student may not see.
    bool names_other_file(const std::string& line) const {
        for (const PathInLine& found : absolute_paths(line)) {
            if (!is_allowed_file(line.substr(found.at, found.size))) {
                return true;
            }
        }
        return false;
    }

private:
    std::string cwd_;
    std::vector<std::string> allowed_;
    std::map<std::string, const LoggedFile*> names_;
};

// EDG's caret line under a quoted source line: blanks (tabs kept where the source had them) and
// one ^.
bool is_caret_line(const std::string& line) {
    const std::size_t caret = line.find_first_not_of(" \t");
    return caret != std::string::npos && line[caret] == '^' &&
           line.find_first_not_of(" \t", caret + 1) == std::string::npos;
}

// NVRTC's form: "file(12): error: ..." / "file(3): warning #177-D: ..." /
// "file(1): catastrophic error: ...", written back as "file:12:COLUMN: error: ...":
// the file (its first character neither a blank nor "(") and the line number, found at the
// line's first "(".
bool diagnostic_location(const std::string& line, std::string& file, std::string& number) {
    const std::size_t open = line.find('(');
    if (open == std::string::npos || open == 0 || is_log_blank(line[0])) {
        return false;
    }
    std::size_t end = open + 1;
    while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end])) != 0) {
        ++end;
    }
    if (end == open + 1 || line.compare(end, 3, "): ") != 0) {
        return false;
    }
    file = line.substr(0, open);
    number = line.substr(open + 1, end - open - 1);
    return true;
}

bool is_indented_or_blank(const std::string& line) {
    return line.empty() || line[0] == ' ' || line[0] == '\t' || line == "\r";
}

}  // namespace

std::string sanitize_log(std::string_view log, std::string_view source_name,
                         const std::vector<std::string>& header_names) {
    std::vector<LoggedFile> files{{std::string(source_name), {}}};
    for (const std::string& header : header_names) {
        files.push_back({header, {}});
    }
    return sanitize_log(log, files);
}

std::string sanitize_log(std::string_view log, const std::vector<LoggedFile>& files) {
    const LogSanitizer sanitizer(files);
    const std::vector<std::string> lines = split_lines(log);
    std::string result;
    bool in_dropped_block = false;
    bool in_kept_block = false;
    // The file's own line under a kept diagnostic, and then its caret line, are the student's
    // text: they come back verbatim.
    std::optional<std::string_view> quoted_source;
    bool caret_may_follow = false;
    // Where in `result` the last kept diagnostic's "file:line" ends: its caret line adds the
    // column, so every location reads FILE:LINE:COLUMN: as editors and Colab link it.
    std::size_t column_at = std::string::npos;  // npos: no diagnostic waits for its column
    for (const std::string& line : lines) {
        std::string file;
        std::string line_number;
        if (diagnostic_location(line, file, line_number)) {
            const bool allowed = sanitizer.is_allowed_file(file);
            in_dropped_block = !allowed;
            in_kept_block = allowed;
            quoted_source = allowed && line_number.size() < 9
                                ? sanitizer.line_of(file, std::stoi(line_number))
                                : std::nullopt;
            caret_may_follow = false;
            column_at = std::string::npos;
            if (allowed) {
                // NVRTC's "probe.cu(14): error" becomes "probe.cu:14: error".
                std::string shown = sanitizer.shorten_paths(line, false);
                const std::string nvrtc_form = "(" + line_number + "): ";
                if (const std::size_t at = shown.find(nvrtc_form); at != std::string::npos) {
                    shown.replace(at, nvrtc_form.size(), ":" + line_number + ": ");
                    column_at = result.size() + at + 1 + line_number.size();
                }
                result += shown + "\n";
            }
            continue;
        }
        if ((in_dropped_block || in_kept_block) && is_indented_or_blank(line)) {
            if (in_kept_block) {
                const bool own_line = quoted_source && line.size() == quoted_source->size() + 2 &&
                                      line.compare(0, 2, "  ") == 0 &&
                                      line.compare(2, line.npos, *quoted_source) == 0;
                const bool caret = caret_may_follow && is_caret_line(line);
                if (caret && column_at != std::string::npos) {
                    // The caret sits under the quoted line, both indented by two spaces.
                    const std::size_t column = line.find('^') - 1;
                    result.insert(column_at, ":" + std::to_string(column));
                    column_at = std::string::npos;
                }
                const bool verbatim = own_line || caret;
                result += verbatim ? line + "\n" : sanitizer.shorten_paths(line, true) + "\n";
                caret_may_follow = own_line;
                quoted_source.reset();
            }
            continue;
        }
        in_dropped_block = false;
        in_kept_block = false;
        if (!sanitizer.names_other_file(line)) {
            result += sanitizer.shorten_paths(line, false) + "\n";
        }
    }
    if (!log.empty() && log.back() != '\n' && !result.empty()) {
        result.pop_back();
    }
    return result;
}

}  // namespace grader
