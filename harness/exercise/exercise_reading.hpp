// The exercise file's reader: every fault is the instructor's, thrown at once as an ExerciseError
// (the CLI exits 2 with its file, line, column and field). Internal to exercise/: the reader of one
// value and the readers of the file's sections, which exercise_reader.cpp puts together.
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "exercise/exercise.hpp"
#include "exercise/yaml_file.hpp"

namespace grader::exercise_reading {

namespace fs = std::filesystem;
using namespace yaml_file;

// The reader of one value: each fault thrown at once, with the file, line, column and field.
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

// The names the file gives parameter roles and check kinds.
const std::vector<std::pair<std::string, ParameterRole>>& role_names();
const std::vector<std::pair<std::string, CheckKind>>& check_kind_names();

template <typename Enum>
Enum parse_name(const ExerciseReader& reader, const YAML::Node& node, const std::string& field,
                const std::vector<std::pair<std::string, Enum>>& names, const std::string& what) {
    const std::string name = reader.text(node, field);
    std::vector<std::string> all;
    for (const auto& [candidate, value] : names) {
        if (name == candidate) {
            return value;
        }
        all.push_back(candidate);
    }
    reader.fail(
        node.Mark(), field,
        "unknown " + what + " " + quote(name) + "; the " + what + "s are: " + join_list(all, ", "));
}

// The cases the grade times: what rules may name.
class TimedCases {
public:
    explicit TimedCases(const Exercise& exercise) : exercise_(exercise) {}

    bool has_kernel(const std::string& id) const {
        return std::any_of(exercise_.kernels.begin(), exercise_.kernels.end(),
                           [&](const KernelSpec& k) { return k.id == id; });
    }

    // Why a case is not timed, or empty when it is.
    std::string why_not_timed(const Case& c) const {
        if (!has_kernel(c.kernel)) {
            return "there is no kernel " + quote(c.kernel) + " (the kernels are " + kernel_ids() +
                   ")";
        }
        if (!exercise_.has_sweep()) {
            return {};
        }
        const std::vector<int>& strides =
            c.kernel == kStudentKernel ? student_timed() : exercise_.reference_strides;
        if (std::find(strides.begin(), strides.end(), c.stride) == strides.end()) {
            return "stride " + std::to_string(c.stride) + " is not in " +
                   (c.kernel == kStudentKernel ? "strides.reference or strides.student"
                                               : "strides.reference") +
                   ", so it is never timed";
        }
        return {};
    }

private:
    std::vector<int> student_timed() const {
        std::vector<int> strides = exercise_.reference_strides;
        strides.insert(strides.end(), exercise_.student_strides.begin(),
                       exercise_.student_strides.end());
        return strides;
    }

    std::string kernel_ids() const {
        std::vector<std::string> ids;
        for (const auto& k : exercise_.kernels) {
            ids.push_back(k.id);
        }
        return join_list(ids, ", ");
    }

    const Exercise& exercise_;
};

// What runs (exercise_kernels.cpp).
void read_kernel(const ExerciseReader& reader, const YAML::Node& kernel, Exercise& exercise);
void read_references(const ExerciseReader& reader, const YAML::Node& list, Exercise& exercise);
void read_compile(const ExerciseReader& reader, const YAML::Node& compile, Exercise& exercise);
void read_launch(const ExerciseReader& reader, const YAML::Node& launch, Exercise& exercise);
void read_buffers(const ExerciseReader& reader, const YAML::Node& buffers, Exercise& exercise);
void read_inputs(const ExerciseReader& reader, const YAML::Node& list, Exercise& exercise);

// What is timed and how (exercise_timing.cpp).
void read_strides(const ExerciseReader& reader, const YAML::Node& strides, Exercise& exercise);
void read_ratios(const ExerciseReader& reader, const YAML::Node& ratios, Exercise& exercise);
// A list of ordering rules whose operands must be timed. `kernel` is the kernel a rule is about
// where it names none.
std::vector<OrderingRule> read_rules(const ExerciseReader& reader, const YAML::Node& list,
                                     const std::string& field, const Exercise& exercise,
                                     const std::string& kernel, bool empty_allowed);
void read_calibration(const ExerciseReader& reader, const YAML::Node& calibration,
                      Exercise& exercise);
void read_timing(const ExerciseReader& reader, const YAML::Node& timing, TimingSpec& spec);
void read_limits(const ExerciseReader& reader, const YAML::Node& limits, LimitsSpec& spec);

// What is asked and checked (exercise_checks.cpp).
void read_answers(const ExerciseReader& reader, const YAML::Node& answers, Exercise& exercise);
void read_checks(const ExerciseReader& reader, const YAML::Node& checks, Exercise& exercise);

}  // namespace grader::exercise_reading
