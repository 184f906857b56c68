#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
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

#include "common/files.hpp"
#include "common/kernel_ids.hpp"
#include "common/text.hpp"
#include "exercise/exercise.hpp"
#include "exercise/yaml_file.hpp"
#include "model/finding.hpp"

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

// A number a teacher reads without doubt though it is not written as asked: a decimal comma
// ("7,41" is 7.41), a times sign after a ratio ("7.8x", "7.8 x", "7.8×"), a percent sign after a
// percentage ("236%"). Text that is no such number, or that reads two ways ("1,234": 1.234 or
// 1234?), is not read.
struct MeantNumber {
    double value = 0.0;
    std::string how;  // what was read past: "a decimal comma", "the 'x' left out"
};

std::optional<MeantNumber> number_as_meant(const std::string& scalar, bool percent) {
    std::string text = trim(scalar);
    std::vector<std::string> set_aside;
    const std::vector<std::string> units =
        percent ? std::vector<std::string>{"%"} : std::vector<std::string>{"x", "X", "\xC3\x97"};
    for (const std::string& unit : units) {
        if (text.size() > unit.size() &&
            text.compare(text.size() - unit.size(), unit.size(), unit) == 0) {
            text = trim(text.substr(0, text.size() - unit.size()));
            set_aside.push_back(percent ? "the '%' sign left out" : "the 'x' left out");
            break;
        }
    }
    if (const std::size_t comma = text.find(','); comma != std::string::npos) {
        const std::string whole = text.substr(0, comma);
        const std::string fraction = text.substr(comma + 1);
        const auto digits = [](const std::string& part) {
            return !part.empty() && std::all_of(part.begin(), part.end(),
                                                [](char c) { return c >= '0' && c <= '9'; });
        };
        // "1,234" may be a thousands separator: read neither way.
        if (!digits(whole) || !digits(fraction) || fraction.size() == 3) {
            return std::nullopt;
        }
        text = whole + "." + fraction;
        set_aside.insert(set_aside.begin(), "a decimal comma");
    }
    const auto value = parse_number(text);
    if (!value || set_aside.empty()) {
        return std::nullopt;
    }
    return MeantNumber{*value, join_list(set_aside, ", and ")};
}

// A student id the student has not made their own: the README's "your-id" and its spellings,
// "student-id", "TODO", "xxx", "<your id>". Compared by letters and digits alone, case aside.
bool is_placeholder_id(const std::string& id) {
    std::string letters;
    for (const unsigned char c : id) {
        if (std::isalnum(c)) {
            letters += static_cast<char>(std::tolower(c));
        }
    }
    static const std::set<std::string> placeholders = {
        "yourid",   "youridhere", "yourstudentid", "studentid", "myid",
        "id",       "todo",       "tbd",           "changeme",  "fixme",
        "yourname", "name",       "insertid",      "enterid",   "youridgoeshere"};
    const bool only_x = !letters.empty() && letters.find_first_not_of('x') == std::string::npos;
    return placeholders.count(letters) != 0 || only_x;
}

class SubmissionReader {
public:
    SubmissionReader(std::string shown_path, bool percent, Submission& submission)
        : shown_path_(std::move(shown_path)), percent_(percent), submission_(submission) {}

    void problem(const YAML::Mark& mark, const std::string& field, const std::string& message,
                 FindingKind kind = FindingKind::answer_malformed) {
        submission_.problems.push_back({location_of(shown_path_, mark), field, kind, message});
    }

    void note(const YAML::Mark& mark, const std::string& field, const std::string& message) {
        submission_.notes.push_back(
            {location_of(shown_path_, mark), field, FindingKind::answer_read_as_meant, message});
    }

    void count_answer() { ++submission_.answers_given; }

    // A measured value written as "7,41" or "7.8x": read, with a note saying how to write it.
    std::optional<double> read_as_meant(const YAML::Mark& mark, const std::string& field,
                                        const std::string& written) {
        const auto meant = number_as_meant(written, percent_);
        if (!meant || meant->value <= 0.0) {
            return std::nullopt;
        }
        const std::string plain = format_number(meant->value, 6);
        note(mark, field,
             trim(written) + " read as " + plain + " (" + meant->how + "); next time write " +
                 plain + ", a plain number with a decimal point");
        return meant->value;
    }

    void keys(const YAML::Node& map, const std::string& field,
              const std::vector<std::string>& known) {
        for (const auto& complaint : key_complaints(map, field, known)) {
            problem(complaint.mark, complaint.field, complaint.message);
        }
    }

    void blank(const YAML::Node& node, const std::string& field, const std::string& what_it_is) {
        problem(node.Mark(), field, what_it_is, FindingKind::answer_blank);
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
        if (!value && node.IsScalar()) {
            if (const auto meant = read_as_meant(node.Mark(), field, node.Scalar())) {
                return meant;
            }
        }
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
    bool percent_;
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

// In a flow map "{ ..., measured_ratio: 7,91 }" YAML reads 7 as the value and 91 as a key of its
// own: a decimal comma, read as 7.91 where a measurement was asked for, and never an unknown key
// '91'. By the key whose value it splits, where it is and what was written ("7,91"); each split
// key joins `row_keys`, the keys the row may have.
using CommaValues = std::map<std::string, std::pair<YAML::Mark, std::string>>;
CommaValues comma_values_of(const YAML::Node& row, std::vector<std::string>& row_keys) {
    CommaValues comma_values;
    std::string previous_key;
    std::string previous_value;
    for (const auto& entry : row) {
        const std::string name = entry.first.IsScalar() ? entry.first.Scalar() : "";
        const bool digits_only = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
            return c >= '0' && c <= '9';
        });
        if (digits_only && is_blank(entry.second) && parse_integer(previous_value)) {
            comma_values[previous_key] = {entry.first.Mark(), previous_value + "," + name};
            row_keys.push_back(name);
        }
        previous_key = name;
        previous_value = entry.second.IsScalar() ? entry.second.Scalar() : "";
    }
    return comma_values;
}

// The row's key (its stride, or its kernel's key), where it has one that reads.
std::optional<std::string> read_row_key(SubmissionReader& reader, const YAML::Node& row,
                                        const std::string& field, const AnswersSpec& answers,
                                        const RowKeys& keys) {
    if (answers.key_field == "stride") {
        if (const auto stride =
                reader.positive_int(row, field, "stride", "the stride of this row")) {
            return std::to_string(*stride);
        }
        return std::nullopt;
    }
    const YAML::Node node = find_value(row, answers.key_field);
    if (!node.IsDefined() || !node.IsScalar() || is_blank(node)) {
        reader.problem(row.Mark(), field + "." + answers.key_field, "expected one of " + keys.what);
        return std::nullopt;
    }
    return trim(node.Scalar());
}

// The row's predicted degree and measurement (`about` says what they are for), and where each
// is; every answer given is counted, right or wrong.
SubmissionRow read_row_answers(SubmissionReader& reader, const YAML::Node& row,
                               const std::string& field, const AnswersSpec& answers,
                               const CommaValues& comma_values, const std::string& about) {
    SubmissionRow parsed;
    parsed.predicted_degree = reader.positive_int(row, field, answers.predicted_field,
                                                  "the conflict degree you predict for " + about);
    if (const auto comma = comma_values.find(answers.predicted_field);
        comma != comma_values.end()) {
        // A degree counts lanes: 8,5 is no whole number however it is read.
        reader.problem(
            comma->second.first, field + "." + answers.predicted_field,
            comma->second.second + " has a decimal comma; a degree is a whole number of lanes");
        parsed.predicted_degree.reset();
    }
    if (const auto comma = comma_values.find(answers.measured_field); comma != comma_values.end()) {
        const std::string measured = field + "." + answers.measured_field;
        parsed.measured = reader.read_as_meant(comma->second.first, measured, comma->second.second);
        if (!parsed.measured) {
            reader.problem(comma->second.first, measured,
                           comma->second.second +
                               " has a comma: write it with a decimal "
                               "point, or without the comma");
        }
    } else {
        parsed.measured = reader.positive_number(row, field, answers.measured_field,
                                                 answers.measured_description + " (" + about + ")");
    }
    for (auto [key_name, location] :
         {std::pair{&answers.predicted_field, &parsed.predicted_location},
          std::pair{&answers.measured_field, &parsed.measured_location}}) {
        const YAML::Node value = find_value(row, *key_name);
        *location = reader.location(value.IsDefined() ? value : row);
        if (value.IsDefined() && !is_blank(value)) {
            reader.count_answer();  // the student's, right or wrong
        }
    }
    return parsed;
}

// One row of the answers, added to the submission where its key was asked for and not given
// before (field_of_key: each key given so far, and in which row).
void read_row(SubmissionReader& reader, const YAML::Node& row, const std::string& field,
              const Exercise& exercise, const RowKeys& keys,
              std::map<std::string, std::string>& field_of_key, Submission& submission) {
    const AnswersSpec& answers = exercise.answers;
    const bool by_stride = answers.key_field == "stride";
    if (!row.IsMap()) {
        reader.problem(row.Mark(), field,
                       "expected { " + answers.key_field + ": ..., " + answers.predicted_field +
                           ": ..., " + answers.measured_field + ": ... }, got " + describe(row));
        return;
    }
    std::vector<std::string> row_keys = {answers.key_field, answers.predicted_field,
                                         answers.measured_field};
    const CommaValues comma_values = comma_values_of(row, row_keys);
    reader.keys(row, field, row_keys);
    const std::optional<std::string> key = read_row_key(reader, row, field, answers, keys);
    // Degree and measurement are read even when the key is bad, so every mistake is reported.
    const std::string about =
        key ? answers.key_field + " " + *key : std::string(by_stride ? "this stride" : "this row");
    SubmissionRow parsed = read_row_answers(reader, row, field, answers, comma_values, about);
    if (!key) {
        return;
    }
    const YAML::Node key_node = find_value(row, answers.key_field);
    const auto asked = std::find(keys.expected.begin(), keys.expected.end(), *key);
    if (asked == keys.expected.end()) {
        reader.problem(
            key_node.Mark(), field + "." + answers.key_field,
            answers.key_field + " " + *key + " was not asked for; the rows are for " + keys.what);
        return;
    }
    const auto [previous, inserted] = field_of_key.emplace(*key, field);
    if (!inserted) {
        reader.problem(key_node.Mark(), field + "." + answers.key_field,
                       answers.key_field + " " + *key + " is listed twice (first in " +
                           previous->second + "); keep one row per " + answers.key_field);
        return;
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

void read_rows(SubmissionReader& reader, const YAML::Node& root, const Exercise& exercise,
               Submission& submission) {
    const AnswersSpec& answers = exercise.answers;
    const RowKeys keys = row_keys(exercise);
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
    std::map<std::string, std::string> field_of_key;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        read_row(reader, rows[i], index_field("rows", i), exercise, keys, field_of_key, submission);
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
        const std::string meant =
            parsed.not_found ? meant_file_hint(directory, exercise.submission_answers) : "";
        // A file not read at all (at line 0) gets its fix from the diagnosis: start again from
        // the starter kit's (report/diagnosis_text.cpp).
        message += meant;
        submission.problems.push_back(
            {*parsed.failure_location, "", FindingKind::answer_malformed, message});
        submission.unreadable = !parsed.not_found;
        submission.missing = parsed.not_found;
        return submission;
    }
    const YAML::Node& root = *parsed.root;
    SubmissionReader reader(shown_path, exercise.ratios.as_percent, submission);
    reader.keys(root, "", {"student_id", "gpu", "rows", "sentence"});
    submission.student_id =
        reader.text(root, "student_id", true, "your student id, in quotes").value_or("");
    if (is_placeholder_id(submission.student_id)) {
        // The README's form reads student_id: "your-id": an id left so joins no gradebook.
        reader.problem(find_value(root, "student_id").Mark(), "student_id",
                       quote(submission.student_id), FindingKind::answer_placeholder);
    }
    submission.gpu_name =
        reader.text(root, "gpu", false, "the GPU you measured on, e.g. \"Tesla T4\"").value_or("");
    read_rows(reader, root, exercise, submission);
    // The sentence is the sentence check's to judge: blank or left out, it costs what that check
    // is worth (nothing, in the shipped exercises), never the answers file's point.
    if (const YAML::Node sentence = find_value(root, "sentence");
        sentence.IsDefined() && !is_blank(sentence)) {
        submission.sentence = reader
                                  .text(root, "sentence", false,
                                        "one sentence, as asked: " + exercise.sentence_prompt)
                                  .value_or("");
    }
    return submission;
}

}  // namespace grader
