#pragma once

// Reading a YAML file that may be hostile (an instructor's exercise file, a student's answers
// file): bounded in size, UTF-8 checked, nesting bounded before yaml-cpp's recursive parser sees
// the text, every value found with its file, line and column. This layer has no error policy of
// its own: it returns what is wrong, and the exercise reader throws it (the instructor's
// mistake) while the answers reader records it (the student's).

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "exercise/exercise.hpp"

namespace grader::yaml_file {

// Where a node is: yaml-cpp's 0-based mark as a 1-based file:line:column.
SourceLocation location_of(const std::string& file, const YAML::Mark& mark);

// "launch.block", "rows[1]": a field's name as messages show it.
std::string join_field(const std::string& parent, const std::string& key);
std::string index_field(const std::string& parent, std::size_t index);

// A value as a message quotes it: on one line, control characters shown, long text cut.
std::string quote(const std::string& text);
// A node as a message names it: "'abc'", "a list", "a map", "nothing".
std::string describe(const YAML::Node& node);
std::string join_list(const std::vector<std::string>& items, const std::string& separator);

// Plain scalars read strictly: an integer, a finite decimal number, true or false.
std::optional<long long> parse_integer(const std::string& text);
std::optional<double> parse_number(const std::string& text);
std::optional<bool> parse_bool(const std::string& text);
std::string trim(const std::string& text);

// A complaint about one node, before the caller decides whether it is thrown or recorded.
struct Complaint {
    YAML::Mark mark;
    std::string field;
    std::string message;
};

// Unknown (with the nearest known key suggested), duplicated and non-text keys of a map.
std::vector<Complaint> key_complaints(const YAML::Node& map, const std::string& field,
                                      const std::vector<std::string>& known);

// The value under key, or an undefined node. Keys are looked up by walking the map so a
// duplicate or a non-text key never confuses the lookup.
YAML::Node find_value(const YAML::Node& map, const std::string& key);

// The text of a YAML file, checked for size, encoding and nesting, then parsed. A failure is
// returned as a complaint with no field.
struct ParsedFile {
    std::optional<YAML::Node> root;
    std::optional<SourceLocation> failure_location;
    std::string failure;
    bool not_found = false;  // the failure is that there is no such file
};

// A student's file (student_name given) is opened without following links: see read_student_file.
ParsedFile parse_yaml_file(const std::filesystem::path& path, const std::string& shown_path,
                           std::size_t max_bytes, const std::string& what_it_is,
                           const std::filesystem::path& student_folder = {},
                           const std::filesystem::path& student_name = {});

}  // namespace grader::yaml_file
