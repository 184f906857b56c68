#include "exercise/yaml_file.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string_view>
#include <system_error>
#include <utility>

#include "common/files.hpp"
#include "common/text.hpp"
#include "text/text_safety.hpp"

namespace grader::yaml_file {

namespace fs = std::filesystem;

namespace {

// yaml-cpp builds nodes recursively, so nesting is bounded before the parser sees the text. Both
// files are three or four levels deep.
constexpr int kMaxNesting = 64;

}  // namespace

SourceLocation location_of(const std::string& file, const YAML::Mark& mark) {
    if (mark.is_null()) {
        return {file, 0, 0};
    }
    // yaml-cpp counts from 0.
    return {file, mark.line + 1, mark.column + 1};
}

std::string join_field(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
}

std::string index_field(const std::string& parent, std::size_t index) {
    return parent + "[" + std::to_string(index) + "]";
}

// A value as a message quotes it: on one line, control characters shown, long text cut.
std::string quote(const std::string& text) {
    constexpr std::size_t kMaxShown = 40;
    return "'" + text::shorten(text::visible_line(text), kMaxShown + 3) + "'";
}

namespace {

// The line and column (in characters, as an editor counts them) of a byte offset.
TextPosition position_of(std::string_view text, std::size_t offset) {
    const std::string_view before = text.substr(0, offset);
    const std::size_t line_start = before.rfind('\n') + 1;  // 0 where there is none
    return TextPosition{static_cast<int>(std::count(before.begin(), before.end(), '\n')) + 1,
                        static_cast<int>(text::display_width(before.substr(line_start))) + 1};
}
}  // namespace

std::string describe(const YAML::Node& node) {
    switch (node.Type()) {
        case YAML::NodeType::Scalar:
            return quote(node.Scalar());
        case YAML::NodeType::Sequence:
            return "a list";
        case YAML::NodeType::Map:
            return "a map";
        case YAML::NodeType::Null:
            return "nothing";
        case YAML::NodeType::Undefined:
            break;
    }
    return "nothing";
}

std::string join_list(const std::vector<std::string>& items, const std::string& separator) {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) {
        out += (i == 0 ? "" : separator) + items[i];
    }
    return out;
}

// Integers as YAML writes them in a plain scalar: an optional sign and decimal digits.
std::optional<long long> parse_integer(const std::string& text) {
    std::string_view digits(text);
    if (!digits.empty() && digits.front() == '+') {
        digits.remove_prefix(1);
    }
    if (digits.empty() || digits.front() == '+') {
        return std::nullopt;
    }
    long long value = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (error != std::errc() || end != digits.data() + digits.size()) {
        return std::nullopt;
    }
    return value;
}

// A finite decimal number; YAML's .inf and .nan are no answer to anything here.
std::optional<double> parse_number(const std::string& text) {
    std::string_view digits(text);
    if (!digits.empty() && digits.front() == '+') {
        digits.remove_prefix(1);
    }
    if (digits.empty() || digits.front() == '+') {
        return std::nullopt;
    }
    double value = 0.0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (error != std::errc() || end != digits.data() + digits.size() || !std::isfinite(value)) {
        return std::nullopt;
    }
    return value;
}

std::optional<bool> parse_bool(const std::string& text) {
    if (text == "true" || text == "True" || text == "TRUE") {
        return true;
    }
    if (text == "false" || text == "False" || text == "FALSE") {
        return false;
    }
    return std::nullopt;
}

std::string trim(const std::string& text) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) {
        return {};
    }
    const auto last = text.find_last_not_of(" \t\r\n");
    return text.substr(first, last - first + 1);
}

namespace {

// "unknown key 'tile_word' (did you mean 'tile_words'?); the keys here are: ..."
std::string unknown_key_message(const std::string& key, const std::vector<std::string>& known) {
    std::string message = "unknown key " + quote(key);
    if (const auto closest = nearest_name(key, known)) {
        message += " (did you mean '" + *closest + "'?)";
    }
    return message + "; the keys allowed here are: " + join_list(known, ", ");
}
}  // namespace

// Unknown, duplicated and non-text keys of a map.
std::vector<Complaint> key_complaints(const YAML::Node& map, const std::string& field,
                                      const std::vector<std::string>& known) {
    std::vector<Complaint> complaints;
    std::map<std::string, YAML::Mark> seen;
    for (const auto& entry : map) {
        const YAML::Node& key = entry.first;
        if (!key.IsScalar()) {
            complaints.push_back({key.Mark(), field, "expected a plain key, got " + describe(key)});
            continue;
        }
        const std::string& name = key.Scalar();
        const auto [previous, inserted] = seen.emplace(name, key.Mark());
        if (!inserted) {
            complaints.push_back({key.Mark(), join_field(field, name),
                                  "key " + quote(name) + " appears twice (first on line " +
                                      std::to_string(previous->second.line + 1) + ")"});
            continue;
        }
        if (std::find(known.begin(), known.end(), name) == known.end()) {
            complaints.push_back(
                {key.Mark(), join_field(field, name), unknown_key_message(name, known)});
        }
    }
    return complaints;
}

// The value under key, or an undefined node. Keys are looked up by walking the map so a
// duplicate or a non-text key never confuses the lookup.
YAML::Node find_value(const YAML::Node& map, const std::string& key) {
    for (const auto& entry : map) {
        if (entry.first.IsScalar() && entry.first.Scalar() == key) {
            return entry.second;
        }
    }
    return YAML::Node(YAML::NodeType::Undefined);
}

namespace {

// The first place where brackets and indentation nest deeper than max_depth, found on the raw
// text so that the recursive parser never sees such a file. Quoted text, comments and block
// scalars do not count; the count is an estimate that is exact for ordinary files.
std::optional<TextPosition> first_excessive_nesting(std::string_view text, int max_depth) {
    std::vector<int> indents;  // indentation of the enclosing block collections
    int flow_depth = 0;
    int block_scalar_indent = -1;  // >= 0 while inside a '|' or '>' scalar
    char quote_char = 0;           // inside a quoted scalar that may span lines
    int line_number = 0;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) {
            end = text.size();
        }
        const std::string_view line = text.substr(start, end - start);
        ++line_number;
        start = end + 1;

        const std::size_t first = line.find_first_not_of(" \t\r");
        if (first == std::string_view::npos) {
            if (end == text.size()) {
                break;
            }
            continue;
        }
        const int indent = static_cast<int>(first);
        if (block_scalar_indent >= 0) {
            if (indent > block_scalar_indent) {
                continue;
            }
            block_scalar_indent = -1;
        }
        std::size_t i = first;
        int sequence_depth = 0;
        if (quote_char == 0 && flow_depth == 0) {
            if (line[first] == '#') {
                continue;
            }
            while (!indents.empty() && indents.back() >= indent) {
                indents.pop_back();
            }
            indents.push_back(indent);
            // "- - - x" opens a sequence per dash on one line.
            while (i < line.size() && line[i] == '-' &&
                   (i + 1 == line.size() || line[i + 1] == ' ')) {
                ++sequence_depth;
                i = line.find_first_not_of(' ', i + 1);
                if (i == std::string_view::npos) {
                    i = line.size();
                }
            }
        }
        std::size_t content_end = line.size();
        for (; i < line.size(); ++i) {
            const char c = line[i];
            if (quote_char != 0) {
                if (quote_char == '"' && c == '\\') {
                    ++i;
                } else if (c == quote_char) {
                    quote_char = 0;
                }
                continue;
            }
            if (c == '"' || c == '\'') {
                quote_char = c;
            } else if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
                content_end = i;
                break;
            } else if (c == '[' || c == '{') {
                ++flow_depth;
            } else if (c == ']' || c == '}') {
                flow_depth = std::max(0, flow_depth - 1);
            }
            const int depth = static_cast<int>(indents.size()) + sequence_depth + flow_depth;
            if (depth > max_depth) {
                return TextPosition{line_number, static_cast<int>(i) + 1};
            }
        }
        if (static_cast<int>(indents.size()) + sequence_depth > max_depth) {
            return TextPosition{line_number, indent + 1};
        }
        // "key: |" or "- >-": the lines below, more indented, are text.
        if (quote_char == 0) {
            std::string_view content = line.substr(0, content_end);
            const auto last = content.find_last_not_of(" \t\r");
            if (last != std::string_view::npos) {
                content = content.substr(0, last + 1);
                const auto indicator = content.find_last_of("|>");
                if (indicator != std::string_view::npos &&
                    content.find_first_not_of("+-0123456789", indicator + 1) ==
                        std::string_view::npos &&
                    (indicator == 0 || content[indicator - 1] == ' ')) {
                    block_scalar_indent = indent;
                }
            }
        }
        if (end == text.size()) {
            break;
        }
    }
    return std::nullopt;
}

// The line of a "---" that starts a second document, if any. Document markers sit at the start
// of a line, and YAML forbids them inside quoted text.
std::optional<int> second_document_line(std::string_view text) {
    bool seen_content = false;
    bool seen_marker = false;
    int line_number = 0;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) {
            end = text.size();
        }
        const std::string_view line = text.substr(start, end - start);
        ++line_number;
        start = end + 1;
        const bool marker = line.compare(0, 3, "---") == 0 && (line.size() == 3 || line[3] == ' ' ||
                                                               line[3] == '\t' || line[3] == '\r');
        if (marker) {
            if (seen_content || seen_marker) {
                return line_number;
            }
            seen_marker = true;
            const auto rest = line.find_first_not_of(" \t\r", 3);
            seen_content = rest != std::string_view::npos && line[rest] != '#';
            continue;
        }
        const auto first = line.find_first_not_of(" \t\r");
        if (first != std::string_view::npos && line[first] != '#' && line[first] != '%') {
            seen_content = true;
        }
    }
    return std::nullopt;
}

// Where the first thing that is not a comment or blank begins; line 0 when there is none.
TextPosition first_content(std::string_view text) {
    int line_number = 0;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) {
            end = text.size();
        }
        const std::string_view line = text.substr(start, end - start);
        ++line_number;
        start = end + 1;
        const auto first = line.find_first_not_of(" \t\r");
        if (first != std::string_view::npos && line[first] != '#') {
            return TextPosition{line_number, static_cast<int>(first) + 1};
        }
    }
    return TextPosition{0, 0};
}
}  // namespace

ParsedFile parse_yaml_file(const fs::path& path, const std::string& shown_path,
                           std::size_t max_bytes, const std::string& what_it_is,
                           const fs::path& student_folder, const fs::path& student_name) {
    ParsedFile parsed;
    std::string why;
    const std::optional<std::string> content =
        student_name.empty() ? read_file_bounded(path, max_bytes, why)
                             : read_student_file(student_folder, student_name, max_bytes, why);
    if (!content) {
        parsed.failure_location = SourceLocation{shown_path, 0, 0};
        parsed.failure = "cannot read the " + what_it_is + ": " + why;
        parsed.not_found = why == "not found";
        return parsed;
    }
    if (const std::size_t bad = text::first_invalid_utf8(*content); bad != std::string_view::npos) {
        const TextPosition position = position_of(*content, bad);
        parsed.failure_location = SourceLocation{shown_path, position.line, position.column};
        parsed.failure = "the " + what_it_is + " is not UTF-8 text (first bad byte here)";
        return parsed;
    }
    if (const auto deep = first_excessive_nesting(*content, kMaxNesting)) {
        parsed.failure_location = SourceLocation{shown_path, deep->line, deep->column};
        parsed.failure = "the " + what_it_is + " nests more than " + std::to_string(kMaxNesting) +
                         " levels deep here, far more than it can need";
        return parsed;
    }
    if (const auto second = second_document_line(*content)) {
        parsed.failure_location = SourceLocation{shown_path, *second, 1};
        parsed.failure = "the " + what_it_is + " holds more than one YAML document; expected one";
        return parsed;
    }
    // YAML::Load, not LoadAll: yaml-cpp 0.7's LoadAll never returns on some malformed input
    // (a line that starts with ','), growing until memory runs out.
    YAML::Node document;
    try {
        document = YAML::Load(*content);
    } catch (const YAML::Exception& error) {
        parsed.failure_location = location_of(shown_path, error.mark);
        parsed.failure = "YAML syntax error: " + error.msg;
        return parsed;
    }
    if (document.IsNull()) {
        const TextPosition content_start = first_content(*content);
        if (content_start.line == 0) {
            parsed.failure_location = SourceLocation{shown_path, 1, 1};
            parsed.failure = "the " + what_it_is + " is empty; expected a map of keys";
        } else {
            parsed.failure_location =
                SourceLocation{shown_path, content_start.line, content_start.column};
            parsed.failure = "no YAML value could be read from the " + what_it_is +
                             " here; expected a map of keys";
        }
        return parsed;
    }
    if (!document.IsMap()) {
        parsed.failure_location = location_of(shown_path, document.Mark());
        parsed.failure = "expected a map of keys at the top of the " + what_it_is + ", got " +
                         describe(document);
        return parsed;
    }
    parsed.root = document;
    return parsed;
}

}  // namespace grader::yaml_file
