#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/kernel_ids.hpp"
#include "exercise/exercise.hpp"
#include "exercise/yaml_file.hpp"

// The answers file: every fault is the student's, recorded as a SubmissionProblem with its line
// and field and graded by the answers check; nothing here throws for what a student wrote.

namespace grader {

namespace fs = std::filesystem;
using namespace yaml_file;

namespace {

// The answers file holds three rows and a sentence.
constexpr std::size_t kMaxSubmissionBytes = 64 * 1024;

// ---------------------------------------------------------------------------------------------
// The submission: every fault is the student's and is recorded, never thrown.

// A value the student has not filled in yet: the template's "key:" with nothing after it, or "".
bool is_blank(const YAML::Node& node) {
    return node.IsNull() || (node.IsScalar() && trim(node.Scalar()).empty());
}

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

    void blank(const YAML::Node& node, const std::string& field, const std::string& what_it_is) {
        problem(node.Mark(), field, "still blank: fill in " + what_it_is);
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
        if (is_blank(node)) {
            // Present but empty is the template's blank, even for an optional key.
            blank(node, key, what_it_is);
            return std::nullopt;
        }
        if (!node.IsScalar()) {
            problem(node.Mark(), key,
                    key + " is not text: expected " + what_it_is + ", got " + describe(node));
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
        if (is_blank(node)) {
            blank(node, field, what_it_is);
            return std::nullopt;
        }
        const auto value = node.IsScalar() ? parse_integer(node.Scalar()) : std::nullopt;
        if (!value || *value <= 0 || *value > std::numeric_limits<int>::max()) {
            const auto fraction = node.IsScalar() ? parse_number(node.Scalar()) : std::nullopt;
            problem(node.Mark(), field,
                    "expected " + what_it_is + " (a positive whole number), got " + describe(node) +
                        (fraction ? ": it must be a whole number, with no fraction" : ""));
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
        if (is_blank(node)) {
            blank(node, field, what_it_is);
            return std::nullopt;
        }
        const auto value = node.IsScalar() ? parse_number(node.Scalar()) : std::nullopt;
        if (!value || *value <= 0.0) {
            problem(node.Mark(), field,
                    "expected " + what_it_is + " (a number greater than 0), got " + describe(node) +
                        (node.IsScalar() ? number_slip(node.Scalar()) : std::string()));
            return std::nullopt;
        }
        return value;
    }

    SourceLocation location(const YAML::Node& node) const {
        return location_of(shown_path_, node.Mark());
    }

    // What a number that did not parse most likely is: "; write 7.91, with a decimal point".
    static std::string number_slip(const std::string& scalar) {
        std::string text = trim(scalar);
        if (const auto comma = text.find(','); comma != std::string::npos) {
            std::string dotted = text;
            dotted[comma] = '.';
            if (parse_number(dotted)) {
                return ": a decimal comma; write " + dotted + ", with a decimal point";
            }
        }
        for (const std::string unit : {"%", "ms", "us", "s"}) {
            if (text.size() > unit.size() &&
                text.compare(text.size() - unit.size(), unit.size(), unit) == 0 &&
                parse_number(trim(text.substr(0, text.size() - unit.size())))) {
                return unit == "%" ? ": write the number without the '%' sign"
                                   : ": a time; write the ratio asked for, a plain number";
            }
        }
        return {};
    }

private:
    std::string shown_path_;
    Submission& submission_;
};

// The keys the answers file's rows must have, in the order the student reads them.
struct RowKeys {
    std::vector<std::string> expected;  // as written: "3, 8, 16" or "32x32, yours"
    std::string what;                   // "strides 3, 8, 16" or "tile 32x32, yours"
};

RowKeys row_keys(const Exercise& exercise) {
    RowKeys keys;
    if (exercise.answers.key_field == "stride") {
        for (const int stride : exercise.student_strides) {
            keys.expected.push_back(std::to_string(stride));
        }
        keys.what = "strides " + join_list(keys.expected, ", ");
    } else {
        for (const auto& row : exercise.answers.rows) {
            keys.expected.push_back(row.key);
        }
        keys.what = exercise.answers.key_field + " " + join_list(keys.expected, ", ");
    }
    return keys;
}

void read_rows(SubmissionReader& reader, const YAML::Node& root, const Exercise& exercise,
               Submission& submission) {
    const AnswersSpec& answers = exercise.answers;
    const RowKeys keys = row_keys(exercise);
    const bool by_stride = answers.key_field == "stride";
    const YAML::Node rows = find_value(root, "rows");
    if (!rows.IsDefined()) {
        reader.problem(root.Mark(), "rows",
                       "missing rows: expected one row for each of " + keys.what);
        return;
    }
    if (!rows.IsSequence() || rows.size() == 0) {
        reader.problem(
            rows.Mark(), "rows",
            "expected a list with one row for each of " + keys.what + ", got " + describe(rows));
        return;
    }
    const std::string example = "{ " + answers.key_field + ": ..., " + answers.predicted_field +
                                ": ..., " + answers.measured_field + ": ... }";
    std::map<std::string, std::string> field_of_key;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::string field = index_field("rows", i);
        const YAML::Node row = rows[i];
        if (!row.IsMap()) {
            reader.problem(row.Mark(), field, "expected " + example + ", got " + describe(row));
            continue;
        }
        std::vector<std::string> row_keys = {answers.key_field, answers.predicted_field,
                                             answers.measured_field};
        // In a flow map "{ ..., measured_ratio: 7,91 }" YAML reads 7 as the value and 91 as a
        // key of its own: name the decimal comma, not an unknown key '91'.
        std::string previous_key;
        std::string previous_value;
        std::set<std::string> comma_keys;  // their value is only the part before the comma
        for (const auto& entry : row) {
            const std::string name = entry.first.IsScalar() ? entry.first.Scalar() : "";
            const bool digits_only =
                !name.empty() &&
                std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
            if (digits_only && is_blank(entry.second) && parse_integer(previous_value)) {
                reader.problem(entry.first.Mark(), field + "." + previous_key,
                               previous_value + "," + name + " has a decimal comma; write " +
                                   previous_value + "." + name + ", with a decimal point");
                row_keys.push_back(name);
                comma_keys.insert(previous_key);
            }
            previous_key = name;
            previous_value = entry.second.IsScalar() ? entry.second.Scalar() : "";
        }
        reader.keys(row, field, row_keys);
        std::optional<std::string> key;
        if (by_stride) {
            if (const auto stride =
                    reader.positive_int(row, field, "stride", "the stride of this row")) {
                key = std::to_string(*stride);
            }
        } else {
            const YAML::Node node = find_value(row, answers.key_field);
            if (!node.IsDefined() || !node.IsScalar() || is_blank(node)) {
                reader.problem(row.Mark(), field + "." + answers.key_field,
                               "expected one of " + keys.what);
            } else {
                key = trim(node.Scalar());
            }
        }
        // Degree and measurement are read even when the key is bad, so every mistake is reported.
        const std::string about = key ? answers.key_field + " " + *key
                                      : std::string(by_stride ? "this stride" : "this row");
        SubmissionRow parsed;
        parsed.predicted_degree = reader.positive_int(
            row, field, answers.predicted_field, "the conflict degree you predict for " + about);
        parsed.measured = reader.positive_number(row, field, answers.measured_field,
                                                 answers.measured_description + " (" + about + ")");
        // 7,91 was reported above; 7 is not what the student measured, so no check may use it.
        if (comma_keys.count(answers.predicted_field) != 0) {
            parsed.predicted_degree.reset();
        }
        if (comma_keys.count(answers.measured_field) != 0) {
            parsed.measured.reset();
        }
        if (!key) {
            continue;
        }
        const YAML::Node key_node = find_value(row, answers.key_field);
        const auto asked = std::find(keys.expected.begin(), keys.expected.end(), *key);
        if (asked == keys.expected.end()) {
            reader.problem(key_node.Mark(), field + "." + answers.key_field,
                           answers.key_field + " " + *key +
                               " was not asked for; the rows are for " + keys.what);
            continue;
        }
        const auto [previous, inserted] = field_of_key.emplace(*key, field);
        if (!inserted) {
            reader.problem(key_node.Mark(), field + "." + answers.key_field,
                           answers.key_field + " " + *key + " is listed twice (first in " +
                               previous->second + "); keep one row per " + answers.key_field);
            continue;
        }
        parsed.key = *key;
        if (by_stride) {
            parsed.subject = Case{std::string(kStudentKernel), std::stoi(*key)};
        } else {
            const auto spec = static_cast<std::size_t>(asked - keys.expected.begin());
            parsed.subject = Case{answers.rows[spec].kernel, 0};
        }
        parsed.location = reader.location(row);
        submission.rows.push_back(parsed);
    }
    for (const auto& key : keys.expected) {
        if (field_of_key.count(key) == 0) {
            reader.problem(rows.Mark(), "rows",
                           "no row for " + answers.key_field + " " + key +
                               "; expected one row for each of " + keys.what);
        }
    }
}

}  // namespace

const SubmissionRow* Submission::row(const Case& subject) const {
    for (const auto& candidate : rows) {
        if (candidate.subject == subject) {
            return &candidate;
        }
    }
    return nullptr;
}

Submission load_submission(const fs::path& directory, const Exercise& exercise) {
    Submission submission;
    submission.directory = directory;
    const fs::path file = directory / exercise.submission_answers;
    const std::string shown_path = file.string();
    const ParsedFile parsed = parse_yaml_file(file, shown_path, kMaxSubmissionBytes, "answers file",
                                              directory, exercise.submission_answers);
    if (!parsed.root) {
        std::string message = parsed.failure;
        if (parsed.failure_location->line == 0) {
            message += "; start from the starter kit's " + exercise.submission_answers +
                       " and fill in every blank";
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
