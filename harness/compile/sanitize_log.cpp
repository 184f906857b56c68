// Compile logs go back to students; NVRTC quotes the lines of any file it opened, so a log is
// cut down to diagnostics about the student's own file and the provided headers.

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <string_view>
#include <system_error>
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
// parenthesis, or at the start of the line.
const std::regex& absolute_path_pattern() {
    static const std::regex pattern(R"((^|[\s"'(<=,])(/[^\s"'()<>,:;]+))");
    return pattern;
}

class LogSanitizer {
public:
    LogSanitizer(std::string_view source_name, const std::vector<std::string>& header_names)
        : cwd_(current_directory()) {
        allowed_.emplace_back(source_name);
        allowed_.insert(allowed_.end(), header_names.begin(), header_names.end());
    }

    // The student's file and the headers, under whatever directory NVRTC gave them: only
    // vetted includes reach NVRTC, so no other file of the same name can be opened.
    bool is_allowed_file(const std::string& file) const {
        const std::string name = base_name(file);
        return std::find(allowed_.begin(), allowed_.end(), name) != allowed_.end();
    }

    // Paths become base names. In quoted source lines (quoted == true) only paths of two or
    // more parts are touched, so that `x = a /2;` stays as the student wrote it.
    std::string shorten_paths(std::string line, bool quoted) const {
        if (!cwd_.empty() && cwd_ != "/") {
            replace_all(line, cwd_ + "/", "");
        }
        std::string result;
        auto begin = std::sregex_iterator(line.begin(), line.end(), absolute_path_pattern());
        std::size_t copied = 0;
        for (auto it = begin; it != std::sregex_iterator(); ++it) {
            const std::smatch& match = *it;
            const std::string path = match[2].str();
            const bool several_parts = path.find('/', 1) != std::string::npos;
            if (quoted && !several_parts && !is_allowed_file(path)) {
                continue;
            }
            const std::size_t at = static_cast<std::size_t>(match.position(2));
            result += line.substr(copied, at - copied);
            result += base_name(path);
            copied = at + path.size();
        }
        result += line.substr(copied);
        return result;
    }

    // True where the line names, by absolute path, a file the student may not see.
    bool names_other_file(const std::string& line) const {
        auto begin = std::sregex_iterator(line.begin(), line.end(), absolute_path_pattern());
        for (auto it = begin; it != std::sregex_iterator(); ++it) {
            if (!is_allowed_file((*it)[2].str())) {
                return true;
            }
        }
        return false;
    }

private:
    std::string cwd_;
    std::vector<std::string> allowed_;
};

// "file(12): error: ..." / "file(3): warning #177-D: ..." / "file(1): catastrophic error: ...".
const std::regex& diagnostic_pattern() {
    static const std::regex pattern(R"(^([^\s(][^(]*)\((\d+)\): )");
    return pattern;
}

bool is_indented_or_blank(const std::string& line) {
    return line.empty() || line[0] == ' ' || line[0] == '\t' || line == "\r";
}

}  // namespace

std::string sanitize_log(std::string_view log, std::string_view source_name,
                         const std::vector<std::string>& header_names) {
    const LogSanitizer sanitizer(source_name, header_names);
    const std::vector<std::string> lines = split_lines(log);
    std::string result;
    bool in_dropped_block = false;
    bool in_kept_block = false;
    for (const std::string& line : lines) {
        std::smatch match;
        if (std::regex_search(line, match, diagnostic_pattern())) {
            const bool allowed = sanitizer.is_allowed_file(match[1].str());
            in_dropped_block = !allowed;
            in_kept_block = allowed;
            if (allowed) {
                result += sanitizer.shorten_paths(line, false) + "\n";
            }
            continue;
        }
        if ((in_dropped_block || in_kept_block) && is_indented_or_blank(line)) {
            if (in_kept_block) {
                result += sanitizer.shorten_paths(line, true) + "\n";
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
