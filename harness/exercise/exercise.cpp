#include "exercise/exercise.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <system_error>
#include <utility>

#include "common/text.hpp"

namespace grader {

namespace fs = std::filesystem;

namespace {

// An exercise file is a page of text; a megabyte is already absurd.
constexpr std::size_t kMaxExerciseBytes = std::size_t{1} << 20;
// The answers file holds three rows and a sentence.
constexpr std::size_t kMaxSubmissionBytes = 64 * 1024;
// yaml-cpp builds nodes recursively, so nesting is bounded before the parser sees the text. Both
// files are three or four levels deep.
constexpr int kMaxNesting = 64;

// ---------------------------------------------------------------------------------------------
// Plain helpers over YAML nodes and text.

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

// A value as a message quotes it: control bytes escaped, long text cut.
std::string quote(const std::string& text) {
    constexpr std::size_t kMaxShown = 40;
    std::string shown;
    for (const char c : text.substr(0, kMaxShown)) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7F) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\x%02X", byte);
            shown += escaped;
        } else {
            shown += c;
        }
    }
    if (text.size() > kMaxShown) {
        shown += "...";
    }
    return "'" + shown + "'";
}

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

std::string join_ints(const std::vector<int>& values) {
    std::vector<std::string> texts;
    for (const int value : values) {
        texts.push_back(std::to_string(value));
    }
    return join_list(texts, ", ");
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

std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) {
        row[j] = j;
    }
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = above;
        }
    }
    return row[b.size()];
}

// "unknown key 'tile_word' (did you mean 'tile_words'?); the keys here are: ..."
std::string unknown_key_message(const std::string& key, const std::vector<std::string>& known) {
    std::string message = "unknown key " + quote(key);
    std::string closest;
    std::size_t best = 3;  // a typo is at most two edits away
    for (const auto& candidate : known) {
        const std::size_t distance = edit_distance(key, candidate);
        if (distance < best) {
            best = distance;
            closest = candidate;
        }
    }
    if (!closest.empty()) {
        message += " (did you mean '" + closest + "'?)";
    }
    return message + "; the keys allowed here are: " + join_list(known, ", ");
}

// A complaint about one node, before the caller decides whether it is thrown or recorded.
struct Complaint {
    YAML::Mark mark;
    std::string field;
    std::string message;
};

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

// The text of a YAML file, checked for size, encoding and nesting, then parsed. A failure is
// returned as a complaint with no field.
struct ParsedFile {
    std::optional<YAML::Node> root;
    std::optional<SourceLocation> failure_location;
    std::string failure;
};

ParsedFile parse_yaml_file(const fs::path& path, const std::string& shown_path,
                           std::size_t max_bytes, const std::string& what_it_is) {
    ParsedFile parsed;
    std::string why;
    const std::optional<std::string> content = read_file_bounded(path, max_bytes, why);
    if (!content) {
        parsed.failure_location = SourceLocation{shown_path, 0, 0};
        parsed.failure = "cannot read the " + what_it_is + ": " + why;
        return parsed;
    }
    if (const auto bad = first_invalid_utf8(*content)) {
        parsed.failure_location = SourceLocation{shown_path, bad->line, bad->column};
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

// ---------------------------------------------------------------------------------------------
// The exercise file: every fault is the instructor's and is thrown at once.

class ExerciseReader {
public:
    ExerciseReader(std::string shown_path, fs::path directory)
        : shown_path_(std::move(shown_path)), directory_(std::move(directory)) {}

    [[noreturn]] void fail(const YAML::Mark& mark, const std::string& field,
                           const std::string& message) const {
        throw ExerciseError(location_of(shown_path_, mark), field, message);
    }

    SourceLocation location(const YAML::Node& node) const {
        return location_of(shown_path_, node.Mark());
    }

    // A map with only the known keys.
    void expect_map(const YAML::Node& node, const std::string& field,
                    const std::vector<std::string>& known) const {
        if (!node.IsMap()) {
            fail(node.Mark(), field, "expected a map, got " + describe(node));
        }
        const auto complaints = key_complaints(node, field, known);
        if (!complaints.empty()) {
            fail(complaints.front().mark, complaints.front().field, complaints.front().message);
        }
    }

    YAML::Node required(const YAML::Node& map, const std::string& field,
                        const std::string& key) const {
        YAML::Node value = find_value(map, key);
        if (!value.IsDefined()) {
            fail(map.Mark(), join_field(field, key), "missing; this key is required here");
        }
        return value;
    }

    std::string text(const YAML::Node& node, const std::string& field) const {
        if (!node.IsScalar()) {
            fail(node.Mark(), field, "expected text, got " + describe(node));
        }
        return node.Scalar();
    }

    std::string nonempty_text(const YAML::Node& node, const std::string& field) const {
        std::string value = text(node, field);
        if (trim(value).empty()) {
            fail(node.Mark(), field, "expected text, got an empty string");
        }
        return value;
    }

    long long integer(const YAML::Node& node, const std::string& field, long long min,
                      long long max, const std::string& expectation) const {
        const auto value = node.IsScalar() ? parse_integer(node.Scalar()) : std::nullopt;
        if (!value || *value < min || *value > max) {
            fail(node.Mark(), field, "expected " + expectation + ", got " + describe(node));
        }
        return *value;
    }

    int positive_int(const YAML::Node& node, const std::string& field) const {
        return static_cast<int>(
            integer(node, field, 1, std::numeric_limits<int>::max(), "a positive integer"));
    }

    int non_negative_int(const YAML::Node& node, const std::string& field) const {
        return static_cast<int>(
            integer(node, field, 0, std::numeric_limits<int>::max(), "an integer of 0 or more"));
    }

    double number(const YAML::Node& node, const std::string& field, bool zero_allowed) const {
        const auto value = node.IsScalar() ? parse_number(node.Scalar()) : std::nullopt;
        if (!value || *value < 0.0 || (*value == 0.0 && !zero_allowed)) {
            fail(node.Mark(), field,
                 std::string("expected ") +
                     (zero_allowed ? "a number of 0 or more" : "a positive number") + ", got " +
                     describe(node));
        }
        return *value;
    }

    bool boolean(const YAML::Node& node, const std::string& field) const {
        const auto value = node.IsScalar() ? parse_bool(node.Scalar()) : std::nullopt;
        if (!value) {
            fail(node.Mark(), field, "expected true or false, got " + describe(node));
        }
        return *value;
    }

    // A list of distinct positive strides.
    std::vector<int> strides(const YAML::Node& node, const std::string& field,
                             bool empty_allowed) const {
        if (!node.IsSequence()) {
            fail(node.Mark(), field, "expected a list of strides, got " + describe(node));
        }
        if (node.size() == 0 && !empty_allowed) {
            fail(node.Mark(), field, "expected at least one stride, got an empty list");
        }
        std::vector<int> values;
        for (std::size_t i = 0; i < node.size(); ++i) {
            const int value = positive_int(node[i], index_field(field, i));
            if (std::find(values.begin(), values.end(), value) != values.end()) {
                fail(node[i].Mark(), index_field(field, i),
                     "stride " + std::to_string(value) + " is listed twice");
            }
            values.push_back(value);
        }
        return values;
    }

    // A file named relative to the exercise folder, which must exist.
    fs::path existing_file(const YAML::Node& node, const std::string& field) const {
        const std::string name = nonempty_text(node, field);
        const fs::path resolved = fs::absolute(directory_ / name).lexically_normal();
        std::error_code error;
        if (!fs::is_regular_file(resolved, error)) {
            fail(node.Mark(), field,
                 "file " + quote(name) + " not found (looked for " + resolved.string() + ")");
        }
        return resolved;
    }

private:
    std::string shown_path_;
    fs::path directory_;
};

const std::vector<std::pair<std::string, ParameterRole>>& role_names() {
    static const std::vector<std::pair<std::string, ParameterRole>> kRoles = {
        {"input", ParameterRole::input},
        {"output", ParameterRole::output},
        {"count", ParameterRole::count},
        {"stride", ParameterRole::stride}};
    return kRoles;
}

ParameterRole parse_role(const ExerciseReader& reader, const YAML::Node& node,
                         const std::string& field) {
    const std::string name = reader.text(node, field);
    for (const auto& [role_name, role] : role_names()) {
        if (name == role_name) {
            return role;
        }
    }
    reader.fail(
        node.Mark(), field,
        "unknown parameter role " + quote(name) + "; the roles are: input, output, count, stride");
}

void read_kernel(const ExerciseReader& reader, const YAML::Node& kernel, Exercise& exercise) {
    reader.expect_map(kernel, "kernel", {"name", "parameters", "reference", "shared_poison"});
    exercise.kernel_name =
        reader.nonempty_text(reader.required(kernel, "kernel", "name"), "kernel.name");
    const YAML::Node parameters = reader.required(kernel, "kernel", "parameters");
    if (!parameters.IsSequence() || parameters.size() == 0) {
        reader.fail(parameters.Mark(), "kernel.parameters",
                    "expected a list of parameters, got " + describe(parameters));
    }
    std::map<ParameterRole, std::string> field_of_role;
    for (std::size_t i = 0; i < parameters.size(); ++i) {
        const std::string field = index_field("kernel.parameters", i);
        const YAML::Node entry = parameters[i];
        reader.expect_map(entry, field, {"name", "type", "size", "role"});
        KernelParameter parameter;
        parameter.name =
            reader.nonempty_text(reader.required(entry, field, "name"), field + ".name");
        parameter.type =
            reader.nonempty_text(reader.required(entry, field, "type"), field + ".type");
        parameter.size_bytes = static_cast<std::size_t>(
            reader.positive_int(reader.required(entry, field, "size"), field + ".size"));
        const YAML::Node role = reader.required(entry, field, "role");
        parameter.role = parse_role(reader, role, field + ".role");
        // The harness passes one buffer, one count and one stride; two of a role is ambiguous.
        const auto [previous, inserted] = field_of_role.emplace(parameter.role, field);
        if (!inserted) {
            reader.fail(role.Mark(), field + ".role",
                        "role " + quote(role.Scalar()) + " is already taken by " +
                            previous->second + "; each role appears once");
        }
        exercise.parameters.push_back(parameter);
    }
    for (const auto& [role_name, role] : role_names()) {
        if (field_of_role.count(role) == 0) {
            reader.fail(parameters.Mark(), "kernel.parameters",
                        "no parameter has the role '" + role_name +
                            "'; the harness passes input, output, count and stride");
        }
    }
    exercise.reference_source =
        reader.existing_file(reader.required(kernel, "kernel", "reference"), "kernel.reference");
    if (const YAML::Node poison = find_value(kernel, "shared_poison"); poison.IsDefined()) {
        exercise.shared_poison_source = reader.existing_file(poison, "kernel.shared_poison");
    }
}

void read_compile(const ExerciseReader& reader, const YAML::Node& compile, Exercise& exercise) {
    reader.expect_map(compile, "compile", {"options", "default_arch", "headers"});
    if (const YAML::Node options = find_value(compile, "options"); options.IsDefined()) {
        if (!options.IsSequence()) {
            reader.fail(options.Mark(), "compile.options",
                        "expected a list of NVRTC options, got " + describe(options));
        }
        for (std::size_t i = 0; i < options.size(); ++i) {
            exercise.compile_options.push_back(
                reader.nonempty_text(options[i], index_field("compile.options", i)));
        }
    }
    if (const YAML::Node arch = find_value(compile, "default_arch"); arch.IsDefined()) {
        const std::string value = reader.text(arch, "compile.default_arch");
        const bool well_formed = value.size() > 3 && value.compare(0, 3, "sm_") == 0 &&
                                 value.find_first_not_of("0123456789", 3) == std::string::npos;
        if (!well_formed) {
            reader.fail(arch.Mark(), "compile.default_arch",
                        "expected an architecture like 'sm_75', got " + describe(arch));
        }
        exercise.default_arch = value;
    }
    if (const YAML::Node headers = find_value(compile, "headers"); headers.IsDefined()) {
        if (!headers.IsSequence()) {
            reader.fail(headers.Mark(), "compile.headers",
                        "expected a list of { include, file }, got " + describe(headers));
        }
        for (std::size_t i = 0; i < headers.size(); ++i) {
            const std::string field = index_field("compile.headers", i);
            reader.expect_map(headers[i], field, {"include", "file"});
            ProvidedHeader header;
            header.include_name = reader.nonempty_text(
                reader.required(headers[i], field, "include"), field + ".include");
            header.path =
                reader.existing_file(reader.required(headers[i], field, "file"), field + ".file");
            exercise.headers.push_back(header);
        }
    }
}

void read_probe(const ExerciseReader& reader, const YAML::Node& probe, Exercise& exercise) {
    reader.expect_map(probe, "probe",
                      {"tile_words", "reads_per_thread", "block_size", "grid", "banks",
                       "tile_value", "hidden_max_value"});
    if (const YAML::Node node = find_value(probe, "tile_words"); node.IsDefined()) {
        const int words = reader.positive_int(node, "probe.tile_words");
        // The probe masks its index with tile_words - 1.
        if ((words & (words - 1)) != 0) {
            reader.fail(node.Mark(), "probe.tile_words",
                        "expected a power of two (the probe masks with tile_words - 1), got " +
                            describe(node));
        }
        exercise.tile_words = static_cast<std::uint32_t>(words);
    }
    if (const YAML::Node node = find_value(probe, "reads_per_thread"); node.IsDefined()) {
        exercise.reads_per_thread =
            static_cast<std::uint32_t>(reader.positive_int(node, "probe.reads_per_thread"));
    }
    if (const YAML::Node node = find_value(probe, "block_size"); node.IsDefined()) {
        const int size = reader.positive_int(node, "probe.block_size");
        if (size % 32 != 0 || size > 1024) {
            reader.fail(node.Mark(), "probe.block_size",
                        "expected a multiple of 32 from 32 to 1024 (whole warps, at most a "
                        "block's limit), got " +
                            describe(node));
        }
        exercise.block_size = static_cast<std::uint32_t>(size);
    }
    if (const YAML::Node node = find_value(probe, "grid"); node.IsDefined()) {
        const std::string grid = reader.text(node, "probe.grid");
        if (grid != "occupancy") {
            reader.fail(
                node.Mark(), "probe.grid",
                "expected 'occupancy' (the only grid the harness knows), got " + describe(node));
        }
        exercise.grid = grid;
    }
    if (const YAML::Node node = find_value(probe, "banks"); node.IsDefined()) {
        exercise.banks = static_cast<unsigned>(reader.positive_int(node, "probe.banks"));
    }
    if (const YAML::Node node = find_value(probe, "tile_value"); node.IsDefined()) {
        exercise.tile_value = static_cast<float>(reader.number(node, "probe.tile_value", false));
    }
    if (const YAML::Node node = find_value(probe, "hidden_max_value"); node.IsDefined()) {
        exercise.hidden_max_value = reader.positive_int(node, "probe.hidden_max_value");
    }
}

void read_strides(const ExerciseReader& reader, const YAML::Node& strides, Exercise& exercise) {
    reader.expect_map(strides, "strides",
                      {"reference", "student", "unnamed_pool", "unnamed_per_grade"});
    const YAML::Node reference = reader.required(strides, "strides", "reference");
    exercise.reference_strides = reader.strides(reference, "strides.reference", false);
    if (std::find(exercise.reference_strides.begin(), exercise.reference_strides.end(), 1) ==
        exercise.reference_strides.end()) {
        reader.fail(reference.Mark(), "strides.reference",
                    "must include stride 1, the baseline every ratio is taken against");
    }
    exercise.student_strides =
        reader.strides(reader.required(strides, "strides", "student"), "strides.student", false);
    if (const YAML::Node pool = find_value(strides, "unnamed_pool"); pool.IsDefined()) {
        exercise.unnamed_stride_pool = reader.strides(pool, "strides.unnamed_pool", true);
    }
    if (const YAML::Node count = find_value(strides, "unnamed_per_grade"); count.IsDefined()) {
        exercise.unnamed_strides_per_grade =
            reader.non_negative_int(count, "strides.unnamed_per_grade");
        if (static_cast<std::size_t>(exercise.unnamed_strides_per_grade) >
            exercise.unnamed_stride_pool.size()) {
            reader.fail(count.Mark(), "strides.unnamed_per_grade",
                        "asks for " + std::to_string(exercise.unnamed_strides_per_grade) +
                            " strides per grade but strides.unnamed_pool has " +
                            std::to_string(exercise.unnamed_stride_pool.size()));
        }
    } else {
        exercise.unnamed_strides_per_grade =
            std::min(exercise.unnamed_strides_per_grade,
                     static_cast<int>(exercise.unnamed_stride_pool.size()));
    }
}

// ordering[] and calibration[]: the strides a rule names must be ones that are timed.
std::vector<OrderingRule> read_rules(const ExerciseReader& reader, const YAML::Node& list,
                                     const std::string& field, const std::set<int>& timed,
                                     const std::string& timed_description, bool empty_allowed) {
    if (!list.IsSequence()) {
        reader.fail(list.Mark(), field, "expected a list of rules, got " + describe(list));
    }
    if (list.size() == 0 && !empty_allowed) {
        reader.fail(list.Mark(), field, "expected at least one rule, got an empty list");
    }
    std::vector<OrderingRule> rules;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string rule_field = index_field(field, i);
        const YAML::Node node = list[i];
        // Typos first, against every key a rule can have; then the keys this kind takes.
        reader.expect_map(
            node, rule_field,
            {"id", "kind", "stride", "description", "near", "far", "than", "factor", "limit"});
        OrderingRule rule;
        rule.location = reader.location(node);
        const YAML::Node kind = reader.required(node, rule_field, "kind");
        const std::string kind_name = reader.text(kind, rule_field + ".kind");
        std::vector<std::string> known = {"id", "kind", "stride", "description"};
        std::vector<std::string> stride_keys = {"stride"};
        if (kind_name == "closer_to") {
            rule.kind = OrderingRule::Kind::closer_to;
            known.insert(known.end(), {"near", "far"});
            stride_keys.insert(stride_keys.end(), {"near", "far"});
        } else if (kind_name == "slower_than") {
            rule.kind = OrderingRule::Kind::slower_than;
            known.insert(known.end(), {"than", "factor"});
            stride_keys.push_back("than");
        } else if (kind_name == "at_most") {
            rule.kind = OrderingRule::Kind::at_most;
            known.push_back("limit");
        } else {
            reader.fail(kind.Mark(), rule_field + ".kind",
                        "unknown rule kind " + quote(kind_name) +
                            "; the kinds are: closer_to, slower_than, at_most");
        }
        for (const auto& entry : node) {
            const std::string& key = entry.first.Scalar();
            if (std::find(known.begin(), known.end(), key) == known.end()) {
                reader.fail(entry.first.Mark(), rule_field + "." + key,
                            quote(key) + " does not apply to a " + kind_name +
                                " rule; it takes: " + join_list(known, ", "));
            }
        }
        rule.id = reader.nonempty_text(reader.required(node, rule_field, "id"), rule_field + ".id");
        for (const auto& earlier : rules) {
            if (earlier.id == rule.id) {
                reader.fail(find_value(node, "id").Mark(), rule_field + ".id",
                            "rule id " + quote(rule.id) + " is used twice in " + field);
            }
        }
        rule.description = reader.nonempty_text(reader.required(node, rule_field, "description"),
                                                rule_field + ".description");
        for (const auto& key : stride_keys) {
            const std::string key_field = rule_field + "." + key;
            const YAML::Node value = reader.required(node, rule_field, key);
            const int stride = reader.positive_int(value, key_field);
            if (timed.count(stride) == 0) {
                reader.fail(value.Mark(), key_field,
                            "stride " + std::to_string(stride) + " is not in " + timed_description +
                                ", so it is never timed");
            }
            if (key == "stride") {
                rule.stride = stride;
            } else if (key == "near") {
                rule.near = stride;
            } else if (key == "far") {
                rule.far = stride;
            } else {
                rule.than = stride;
            }
        }
        if (const YAML::Node factor = find_value(node, "factor"); factor.IsDefined()) {
            rule.factor = reader.number(factor, rule_field + ".factor", false);
        }
        if (rule.kind == OrderingRule::Kind::at_most) {
            rule.limit = reader.number(reader.required(node, rule_field, "limit"),
                                       rule_field + ".limit", false);
        }
        rules.push_back(rule);
    }
    return rules;
}

void read_timing(const ExerciseReader& reader, const YAML::Node& timing, TimingSpec& spec) {
    reader.expect_map(timing, "timing",
                      {"warmup_launches", "warmup_ms", "min_sample_ms", "min_samples",
                       "max_samples", "target_spread", "max_seconds"});
    if (const YAML::Node node = find_value(timing, "warmup_launches"); node.IsDefined()) {
        spec.warmup_launches = reader.non_negative_int(node, "timing.warmup_launches");
    }
    if (const YAML::Node node = find_value(timing, "warmup_ms"); node.IsDefined()) {
        spec.warmup_ms = reader.number(node, "timing.warmup_ms", true);
    }
    if (const YAML::Node node = find_value(timing, "min_sample_ms"); node.IsDefined()) {
        spec.min_sample_ms = reader.number(node, "timing.min_sample_ms", false);
    }
    if (const YAML::Node node = find_value(timing, "min_samples"); node.IsDefined()) {
        spec.min_samples = reader.positive_int(node, "timing.min_samples");
    }
    if (const YAML::Node node = find_value(timing, "max_samples"); node.IsDefined()) {
        spec.max_samples = reader.positive_int(node, "timing.max_samples");
        if (spec.max_samples < spec.min_samples) {
            reader.fail(node.Mark(), "timing.max_samples",
                        "expected at least timing.min_samples (" +
                            std::to_string(spec.min_samples) + "), got " + describe(node));
        }
    }
    if (const YAML::Node node = find_value(timing, "target_spread"); node.IsDefined()) {
        spec.target_spread = reader.number(node, "timing.target_spread", false);
    }
    if (const YAML::Node node = find_value(timing, "max_seconds"); node.IsDefined()) {
        spec.max_seconds = reader.number(node, "timing.max_seconds", false);
    }
}

void read_limits(const ExerciseReader& reader, const YAML::Node& limits, LimitsSpec& spec) {
    reader.expect_map(limits, "limits",
                      {"compile_seconds", "run_seconds", "output_bytes", "memory_mb", "source_kb"});
    if (const YAML::Node node = find_value(limits, "compile_seconds"); node.IsDefined()) {
        spec.compile_seconds = reader.number(node, "limits.compile_seconds", false);
    }
    if (const YAML::Node node = find_value(limits, "run_seconds"); node.IsDefined()) {
        spec.run_seconds = reader.number(node, "limits.run_seconds", false);
    }
    if (const YAML::Node node = find_value(limits, "output_bytes"); node.IsDefined()) {
        spec.output_bytes =
            static_cast<std::size_t>(reader.positive_int(node, "limits.output_bytes"));
    }
    if (const YAML::Node node = find_value(limits, "memory_mb"); node.IsDefined()) {
        spec.memory_bytes = static_cast<std::size_t>(reader.positive_int(node, "limits.memory_mb"))
                            << 20;
    }
    if (const YAML::Node node = find_value(limits, "source_kb"); node.IsDefined()) {
        spec.source_bytes = static_cast<std::size_t>(reader.positive_int(node, "limits.source_kb"))
                            << 10;
    }
}

void read_checks(const ExerciseReader& reader, const YAML::Node& checks, Exercise& exercise) {
    const std::vector<std::string> known(kHarnessCheckIds.begin(), kHarnessCheckIds.end());
    if (!checks.IsMap()) {
        reader.fail(checks.Mark(), "checks", "expected a map of checks, got " + describe(checks));
    }
    for (const auto& complaint : key_complaints(checks, "checks", known)) {
        reader.fail(complaint.mark, complaint.field,
                    complaint.message.rfind("unknown key", 0) == 0
                        ? "unknown check" + complaint.message.substr(11)
                        : complaint.message);
    }
    for (const auto& id : known) {
        const std::string field = "checks." + id;
        const YAML::Node node = reader.required(checks, "checks", id);
        reader.expect_map(node, field,
                          {"title", "points", "required", "review", "pass", "fail", "hint"});
        CheckSpec spec;
        spec.id = id;
        spec.title = reader.nonempty_text(reader.required(node, field, "title"), field + ".title");
        spec.points =
            reader.number(reader.required(node, field, "points"), field + ".points", true);
        if (const YAML::Node value = find_value(node, "required"); value.IsDefined()) {
            spec.required = reader.boolean(value, field + ".required");
        }
        if (const YAML::Node value = find_value(node, "review"); value.IsDefined()) {
            spec.review = reader.boolean(value, field + ".review");
        }
        spec.pass_message =
            reader.nonempty_text(reader.required(node, field, "pass"), field + ".pass");
        spec.fail_message =
            reader.nonempty_text(reader.required(node, field, "fail"), field + ".fail");
        if (const YAML::Node value = find_value(node, "hint"); value.IsDefined()) {
            spec.hint = reader.text(value, field + ".hint");
        }
        exercise.checks.emplace(id, spec);
    }
}

// ---------------------------------------------------------------------------------------------
// The submission: every fault is the student's and is recorded, never thrown.

class SubmissionReader {
public:
    SubmissionReader(std::string shown_path, Submission& submission)
        : shown_path_(std::move(shown_path)), submission_(submission) {}

    void problem(const YAML::Mark& mark, const std::string& field, const std::string& message) {
        submission_.problems.push_back({location_of(shown_path_, mark), field, message});
    }

    void keys(const YAML::Node& map, const std::string& field,
              const std::vector<std::string>& known) {
        for (const auto& complaint : key_complaints(map, field, known)) {
            problem(complaint.mark, complaint.field, complaint.message);
        }
    }

    std::optional<std::string> text(const YAML::Node& map, const std::string& key, bool required,
                                    const std::string& what_it_is) {
        const YAML::Node node = find_value(map, key);
        if (!node.IsDefined()) {
            if (required) {
                problem(map.Mark(), key, "missing " + key + ": expected " + what_it_is);
            }
            return std::nullopt;
        }
        if (!node.IsScalar() || trim(node.Scalar()).empty()) {
            problem(node.Mark(), key,
                    (node.IsScalar() || node.IsNull() ? "empty " + key : key + " is not text") +
                        ": expected " + what_it_is + ", got " + describe(node));
            return std::nullopt;
        }
        return trim(node.Scalar());
    }

    std::optional<int> positive_int(const YAML::Node& row, const std::string& row_field,
                                    const std::string& key, const std::string& what_it_is) {
        const YAML::Node node = find_value(row, key);
        const std::string field = row_field + "." + key;
        if (!node.IsDefined()) {
            problem(row.Mark(), field, "missing " + key + ": expected " + what_it_is);
            return std::nullopt;
        }
        const auto value = node.IsScalar() ? parse_integer(node.Scalar()) : std::nullopt;
        if (!value || *value <= 0 || *value > std::numeric_limits<int>::max()) {
            problem(node.Mark(), field,
                    "expected " + what_it_is + " (a positive whole number), got " + describe(node));
            return std::nullopt;
        }
        return static_cast<int>(*value);
    }

    std::optional<double> positive_number(const YAML::Node& row, const std::string& row_field,
                                          const std::string& key, const std::string& what_it_is) {
        const YAML::Node node = find_value(row, key);
        const std::string field = row_field + "." + key;
        if (!node.IsDefined()) {
            problem(row.Mark(), field, "missing " + key + ": expected " + what_it_is);
            return std::nullopt;
        }
        const auto value = node.IsScalar() ? parse_number(node.Scalar()) : std::nullopt;
        if (!value || *value <= 0.0) {
            problem(node.Mark(), field,
                    "expected " + what_it_is + " (a number greater than 0), got " + describe(node));
            return std::nullopt;
        }
        return value;
    }

    SourceLocation location(const YAML::Node& node) const {
        return location_of(shown_path_, node.Mark());
    }

private:
    std::string shown_path_;
    Submission& submission_;
};

void read_rows(SubmissionReader& reader, const YAML::Node& root, const Exercise& exercise,
               Submission& submission) {
    const std::string asked = join_ints(exercise.student_strides);
    const YAML::Node rows = find_value(root, "rows");
    if (!rows.IsDefined()) {
        reader.problem(root.Mark(), "rows",
                       "missing rows: expected one row for each of strides " + asked);
        return;
    }
    if (!rows.IsSequence() || rows.size() == 0) {
        reader.problem(rows.Mark(), "rows",
                       "expected a list with one row for each of strides " + asked + ", got " +
                           describe(rows));
        return;
    }
    std::map<int, std::string> field_of_stride;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::string field = index_field("rows", i);
        const YAML::Node row = rows[i];
        if (!row.IsMap()) {
            reader.problem(row.Mark(), field,
                           "expected { stride: ..., predicted_degree: ..., measured_ratio: ... }, "
                           "got " +
                               describe(row));
            continue;
        }
        reader.keys(row, field, {"stride", "predicted_degree", "measured_ratio"});
        const auto stride = reader.positive_int(row, field, "stride", "the stride of this row");
        // Degree and ratio are read even when the stride is bad, so every mistake is reported.
        SubmissionRow parsed;
        parsed.predicted_degree = reader.positive_int(
            row, field, "predicted_degree", "the conflict degree you predict for this stride");
        parsed.measured_ratio = reader.positive_number(row, field, "measured_ratio",
                                                       "this stride's time divided by stride 1's");
        if (!stride) {
            continue;
        }
        const auto asked_for =
            std::find(exercise.student_strides.begin(), exercise.student_strides.end(), *stride);
        if (asked_for == exercise.student_strides.end()) {
            reader.problem(find_value(row, "stride").Mark(), field + ".stride",
                           "stride " + std::to_string(*stride) +
                               " was not asked for; the rows are for strides " + asked);
            continue;
        }
        const auto [previous, inserted] = field_of_stride.emplace(*stride, field);
        if (!inserted) {
            reader.problem(find_value(row, "stride").Mark(), field + ".stride",
                           "stride " + std::to_string(*stride) + " is listed twice (first in " +
                               previous->second + "); keep one row per stride");
            continue;
        }
        parsed.stride = *stride;
        parsed.location = reader.location(row);
        submission.rows.push_back(parsed);
    }
    for (const int stride : exercise.student_strides) {
        if (field_of_stride.count(stride) == 0) {
            reader.problem(rows.Mark(), "rows",
                           "no row for stride " + std::to_string(stride) +
                               "; expected one row for each of strides " + asked);
        }
    }
}

std::string exercise_error_text(const SourceLocation& location, const std::string& field,
                                const std::string& message) {
    std::string text = to_string(location);
    if (!field.empty()) {
        text += (text.empty() ? "" : ": ") + field;
    }
    return text + (text.empty() ? "" : ": ") + message;
}

}  // namespace

// -------------------------------------------------------------------------------------------------

std::string to_string(const SourceLocation& location) {
    std::string text = location.file;
    if (location.line > 0) {
        text += ":" + std::to_string(location.line);
        if (location.column > 0) {
            text += ":" + std::to_string(location.column);
        }
    }
    return text;
}

ExerciseError::ExerciseError(SourceLocation location, std::string field, const std::string& message)
    : std::runtime_error(exercise_error_text(location, field, message)),
      location_(std::move(location)),
      field_(std::move(field)) {}

const CheckSpec& Exercise::check(const std::string& check_id) const {
    const auto found = checks.find(check_id);
    if (found == checks.end()) {
        throw std::out_of_range("exercise '" + id + "' (" + file.string() + ") has no check '" +
                                check_id + "'");
    }
    return found->second;
}

const SubmissionRow* Submission::row(int stride) const {
    for (const auto& candidate : rows) {
        if (candidate.stride == stride) {
            return &candidate;
        }
    }
    return nullptr;
}

void read_platforms(const ExerciseReader& reader, const YAML::Node& node,
                    PrairieLearnPolicy& prairielearn) {
    reader.expect_map(node, "platforms", {"prairielearn"});
    if (const YAML::Node pl = find_value(node, "prairielearn"); pl.IsDefined()) {
        reader.expect_map(pl, "platforms.prairielearn",
                          {"compile_error_gradable", "missing_file_gradable"});
        if (const YAML::Node value = find_value(pl, "compile_error_gradable"); value.IsDefined()) {
            prairielearn.compile_error_gradable =
                reader.boolean(value, "platforms.prairielearn.compile_error_gradable");
        }
        if (const YAML::Node value = find_value(pl, "missing_file_gradable"); value.IsDefined()) {
            prairielearn.missing_file_gradable =
                reader.boolean(value, "platforms.prairielearn.missing_file_gradable");
        }
    }
}

// The starter kit's example is read as a submission is; its sentence is what a student must not
// hand in unchanged, so an example without one is the instructor's mistake.
void read_starter_example(const ExerciseReader& reader, const YAML::Node& node,
                          Exercise& exercise) {
    const std::string name = reader.nonempty_text(node, "starter_example");
    const fs::path folder = fs::absolute(exercise.directory / name).lexically_normal();
    std::error_code error;
    if (!fs::is_regular_file(folder / exercise.submission_answers, error)) {
        reader.fail(node.Mark(), "starter_example",
                    "no " + exercise.submission_answers + " in " + quote(name) + " (looked for " +
                        (folder / exercise.submission_answers).string() + ")");
    }
    const Submission example = load_submission(folder, exercise);
    if (trim(example.sentence).empty()) {
        reader.fail(node.Mark(), "starter_example",
                    "the example in " + quote(name) + " has no sentence to compare with");
    }
    exercise.example_sentence = example.sentence;
    exercise.example_student_id = example.student_id;
}

Exercise load_exercise(const fs::path& directory) {
    const fs::path file = directory / "exercise.yaml";
    const std::string shown_path = file.string();
    const ParsedFile parsed = parse_yaml_file(file, shown_path, kMaxExerciseBytes, "exercise file");
    if (!parsed.root) {
        throw ExerciseError(*parsed.failure_location, "", parsed.failure);
    }
    const YAML::Node& root = *parsed.root;

    Exercise exercise;
    exercise.directory = fs::absolute(directory).lexically_normal();
    exercise.file = fs::absolute(file).lexically_normal();
    const ExerciseReader reader(shown_path, exercise.directory);
    reader.expect_map(root, "",
                      {"schema_version", "id", "title", "kernel", "submission", "compile", "probe",
                       "strides", "ordering", "calibration", "tolerances", "timing", "limits",
                       "sentence_prompt", "checks", "starter_example", "platforms"});

    const YAML::Node version = reader.required(root, "", "schema_version");
    exercise.schema_version = reader.positive_int(version, "schema_version");
    if (exercise.schema_version != 1) {
        reader.fail(version.Mark(), "schema_version",
                    "this grader reads schema_version 1, got " + describe(version));
    }
    exercise.id = reader.nonempty_text(reader.required(root, "", "id"), "id");
    exercise.title = reader.nonempty_text(reader.required(root, "", "title"), "title");
    read_kernel(reader, reader.required(root, "", "kernel"), exercise);

    if (const YAML::Node submission = find_value(root, "submission"); submission.IsDefined()) {
        reader.expect_map(submission, "submission", {"source", "answers"});
        if (const YAML::Node node = find_value(submission, "source"); node.IsDefined()) {
            exercise.submission_source = reader.nonempty_text(node, "submission.source");
        }
        if (const YAML::Node node = find_value(submission, "answers"); node.IsDefined()) {
            exercise.submission_answers = reader.nonempty_text(node, "submission.answers");
        }
    }
    if (const YAML::Node compile = find_value(root, "compile"); compile.IsDefined()) {
        read_compile(reader, compile, exercise);
    }
    if (const YAML::Node probe = find_value(root, "probe"); probe.IsDefined()) {
        read_probe(reader, probe, exercise);
    }
    read_strides(reader, reader.required(root, "", "strides"), exercise);

    // The student's kernel is timed at the reference's strides and the student's own.
    std::set<int> reference_timed(exercise.reference_strides.begin(),
                                  exercise.reference_strides.end());
    std::set<int> student_timed = reference_timed;
    student_timed.insert(exercise.student_strides.begin(), exercise.student_strides.end());
    exercise.ordering = read_rules(reader, reader.required(root, "", "ordering"), "ordering",
                                   student_timed, "strides.reference or strides.student", false);
    exercise.calibration = read_rules(reader, reader.required(root, "", "calibration"),
                                      "calibration", reference_timed, "strides.reference", true);

    if (const YAML::Node tolerances = find_value(root, "tolerances"); tolerances.IsDefined()) {
        reader.expect_map(tolerances, "tolerances", {"consistency"});
        if (const YAML::Node node = find_value(tolerances, "consistency"); node.IsDefined()) {
            exercise.consistency_tolerance = reader.number(node, "tolerances.consistency", false);
        }
    }
    if (const YAML::Node timing = find_value(root, "timing"); timing.IsDefined()) {
        read_timing(reader, timing, exercise.timing);
    }
    if (const YAML::Node limits = find_value(root, "limits"); limits.IsDefined()) {
        read_limits(reader, limits, exercise.limits);
    }
    exercise.sentence_prompt =
        reader.nonempty_text(reader.required(root, "", "sentence_prompt"), "sentence_prompt");
    read_checks(reader, reader.required(root, "", "checks"), exercise);
    if (const YAML::Node platforms = find_value(root, "platforms"); platforms.IsDefined()) {
        read_platforms(reader, platforms, exercise.prairielearn);
    }
    if (const YAML::Node example = find_value(root, "starter_example"); example.IsDefined()) {
        read_starter_example(reader, example, exercise);
    }
    return exercise;
}

Submission load_submission(const fs::path& directory, const Exercise& exercise) {
    Submission submission;
    submission.directory = directory;
    const fs::path file = directory / exercise.submission_answers;
    const std::string shown_path = file.string();
    const ParsedFile parsed =
        parse_yaml_file(file, shown_path, kMaxSubmissionBytes, "answers file");
    if (!parsed.root) {
        std::string message = parsed.failure;
        if (parsed.failure_location->line == 0) {
            message += "; start from student/submission.yaml and fill in the values";
        }
        submission.problems.push_back({*parsed.failure_location, "", message});
        return submission;
    }
    const YAML::Node& root = *parsed.root;
    SubmissionReader reader(shown_path, submission);
    reader.keys(root, "", {"student_id", "gpu", "rows", "sentence"});
    submission.student_id =
        reader.text(root, "student_id", true, "your student id, in quotes").value_or("");
    submission.gpu_name =
        reader.text(root, "gpu", false, "the GPU you measured on, e.g. \"Tesla T4\"").value_or("");
    read_rows(reader, root, exercise, submission);
    submission.sentence =
        reader.text(root, "sentence", true, "one sentence, as asked: " + exercise.sentence_prompt)
            .value_or("");
    return submission;
}

}  // namespace grader
