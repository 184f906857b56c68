// The answers reader: a student's answers file, read against the exercise. Every mistake in it is
// the student's, recorded as a problem with its file, line and field (the answers check grades
// them); nothing a student writes there throws.

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exercise/exercise.hpp"
#include "model/finding.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path kSourceDir = GRADER_SOURCE_DIR;
const fs::path kFixtures = GRADER_FIXTURES_DIR;

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

const grader::Exercise& day15() {
    static const grader::Exercise exercise =
        grader::load_exercise(kSourceDir / "exercises" / "day15-bank-conflicts");
    return exercise;
}

grader::Case stride(int value) {
    return grader::Case{"student", value};
}

grader::Submission answers(const std::string& fixture) {
    return grader::load_submission(kFixtures / "answers" / fixture, day15());
}

// A temporary folder of this test program's scratch folder.
struct TemporaryFolder {
    fs::path path;
    explicit TemporaryFolder(const std::string& name)
        : path(grader::testing::scratch_root("answers") / name) {
        fs::create_directories(path);
    }
};

}  // namespace

TEST_CASE("the untouched starter kit's answers name every blank still to fill in, nothing else") {
    const grader::Submission submission = grader::load_submission(kSourceDir / "student", day15());
    std::vector<std::string> fields;
    for (const auto& problem : submission.problems) {
        CAPTURE(problem.message);
        CHECK(problem.kind == grader::FindingKind::answer_blank);
        CHECK(problem.location.line > 0);
        fields.push_back(problem.field);
    }
    CHECK(fields == std::vector<std::string>{"student_id", "gpu", "rows[0].predicted_degree",
                                             "rows[0].measured_ratio", "rows[1].predicted_degree",
                                             "rows[1].measured_ratio", "rows[2].predicted_degree",
                                             "rows[2].measured_ratio"});
    // The blank sentence is the sentence check's to report, worth what that check is.
    CHECK(submission.problems[2].message == "the conflict degree you predict for stride 3");
    REQUIRE(submission.rows.size() == 3);
    CHECK_FALSE(submission.rows[0].predicted_degree);
    CHECK_FALSE(submission.rows[0].measured);
}

TEST_CASE("the filled-in example beside the starter kit loads with no problems") {
    const grader::Submission submission =
        grader::load_submission(kSourceDir / "student" / "example", day15());
    for (const auto& problem : submission.problems) {
        CAPTURE(problem.field);
        CAPTURE(problem.message);
        CHECK(false);
    }
    CHECK(submission.student_id == "example-student");
    CHECK(submission.gpu_name == "Tesla T4");
    REQUIRE(submission.rows.size() == 3);
    const grader::SubmissionRow* stride8 = submission.row(stride(8));
    REQUIRE(stride8 != nullptr);
    CHECK(stride8->predicted_degree == 8);
    CHECK(stride8->measured == doctest::Approx(7.83));
    CHECK(stride8->location.line > 0);
    CHECK(submission.row(stride(16))->predicted_degree == 16);
    CHECK(submission.row(stride(16))->measured == doctest::Approx(15.6));
    CHECK(submission.row(stride(3))->predicted_degree == 1);
    CHECK(submission.row(stride(4)) == nullptr);
    CHECK(contains(submission.sentence, "gcd(stride, 32)"));
    CHECK(submission.sentence.back() != '\n');
}

TEST_CASE("every mistake in an answers file is a problem with its line and field") {
    struct Expected {
        int line;
        const char* field;
        const char* message_part;
    };
    struct Case {
        const char* fixture;
        std::vector<Expected> problems;
        std::size_t rows_kept;
    };
    const std::vector<Case> cases = {
        {"missing_student_id_and_sentence", {{2, "student_id", "missing student_id"}}, 3},
        {"placeholder_id", {{2, "student_id", "'your-id'"}}, 3},
        {"missing_rows", {{2, "rows", "missing rows"}}, 0},
        {"stride_16_missing", {{4, "rows", "no row for stride 16"}}, 2},
        {"stride_listed_twice", {{6, "rows[2].stride", "stride 8 is listed twice"}}, 3},
        {"stride_not_asked_for", {{5, "rows[1].stride", "stride 4 was not asked for"}}, 3},
        {"bad_predicted_degrees",
         {{4, "rows[0].predicted_degree", "missing predicted_degree"},
          {7, "rows[1].predicted_degree", "got 'eight'"},
          {10, "rows[2].predicted_degree", "got '-16'"}},
         3},
        {"bad_measured_ratios",
         {{4, "rows[0].measured_ratio", "missing measured_ratio"},
          {5, "rows[1].measured_ratio", "got 'fast'"},
          {6, "rows[2].measured_ratio", "got '0'"}},
         3},
        {"degree_not_whole",
         {{5, "rows[1].predicted_degree", "got '8.5': it must be a whole number"}},
         3},
        {"thousands_comma",
         {{4, "rows[0].measured_ratio", "1,234 has a comma: write it with a decimal point"}},
         3},
        {"percent_sign", {{5, "rows[1].measured_ratio", "without the '%' sign"}}, 3},
        {"time_unit", {{6, "rows[2].measured_ratio", "a time; write the ratio asked for"}}, 3},
        {"misspelt_keys",
         {{7, "sentense", "did you mean 'sentence'"},
          {5, "rows[1].measured_ration", "did you mean 'measured_ratio'"},
          {5, "rows[1].measured_ratio", "missing measured_ratio"}},
         3},
        {"row_not_a_map", {{5, "rows[1]", "got a list"}, {4, "rows", "no row for stride 8"}}, 2},
        {"not_utf8", {{7, "", "not UTF-8"}}, 0},
        {"top_level_list", {{2, "", "expected a map"}}, 0},
        {"empty_file", {{1, "", "is empty"}}, 0},
        {"starts_with_comma", {{2, "", "no YAML value could be read"}}, 0},
        {"two_documents", {{8, "", "more than one YAML document"}}, 0},
        {"deeply_nested", {{3, "", "nests more than 64 levels"}}, 0},
        {"deeply_nested_blocks", {{66, "", "nests more than 64 levels"}}, 0},
    };
    for (const Case& expected : cases) {
        CAPTURE(expected.fixture);
        grader::Submission submission;
        CHECK_NOTHROW(submission = answers(expected.fixture));
        REQUIRE(submission.problems.size() == expected.problems.size());
        for (std::size_t i = 0; i < expected.problems.size(); ++i) {
            const grader::SubmissionProblem& problem = submission.problems[i];
            CAPTURE(problem.message);
            CHECK(problem.location.file ==
                  (kFixtures / "answers" / expected.fixture / "submission.yaml").string());
            CHECK(problem.location.line == expected.problems[i].line);
            CHECK(problem.location.column > 0);
            CHECK(problem.field == expected.problems[i].field);
            CHECK(contains(problem.message, expected.problems[i].message_part));
        }
        CHECK(submission.rows.size() == expected.rows_kept);
    }
}

TEST_CASE("the rows that parsed stay usable when others in the file are wrong") {
    const grader::Submission degrees = answers("bad_predicted_degrees");
    REQUIRE(degrees.row(stride(8)) != nullptr);
    CHECK_FALSE(degrees.row(stride(8))->predicted_degree.has_value());
    CHECK(degrees.row(stride(8))->measured == doctest::Approx(7.83));
    CHECK(degrees.sentence == "3 shares no factor with 32.");

    const grader::Submission twice = answers("stride_listed_twice");
    CHECK(twice.row(stride(8))->predicted_degree == 8);  // the first row for a stride counts
    CHECK(twice.row(stride(8))->location.line == 5);

    // "measured_ratio: 1,234" in a flow map: YAML reads 1 and a key 234, and the comma reads two
    // ways; the row keeps no measurement, so no check judges a 1 the student never wrote.
    const grader::Submission comma = answers("thousands_comma");
    REQUIRE(comma.row(stride(3)) != nullptr);
    CHECK_FALSE(comma.row(stride(3))->measured.has_value());
    CHECK(comma.row(stride(3))->predicted_degree == 1);
    CHECK(comma.row(stride(16))->measured == doctest::Approx(15.6));

    const grader::Submission extra = answers("stride_not_asked_for");
    CHECK(extra.row(stride(4)) == nullptr);
    CHECK(extra.row(stride(16))->measured == doctest::Approx(15.6));
}

TEST_CASE("a YAML syntax error in the answers file is a problem, not an exception") {
    const grader::Submission submission = answers("yaml_syntax_error");
    REQUIRE(submission.problems.size() == 1);
    CHECK(submission.problems[0].location.line >= 4);
    CHECK(submission.problems[0].location.line <= 5);
    CHECK(contains(submission.problems[0].message, "YAML syntax error"));
    CHECK(submission.rows.empty());
}

// Where to start (the starter kit's file) is the diagnosis's fix, said once: the problem says what
// is wrong (report/diagnosis_text.cpp words the fix).
TEST_CASE("a folder without an answers file yields one problem that says it was not found") {
    const grader::Submission submission = answers("no_such_folder");
    REQUIRE(submission.problems.size() == 1);
    CHECK(submission.problems[0].location.file ==
          (kFixtures / "answers" / "no_such_folder" / "submission.yaml").string());
    CHECK(submission.problems[0].location.line == 0);
    CHECK(contains(submission.problems[0].message, "not found"));
    CHECK(!contains(submission.problems[0].message, "starter kit"));
}

TEST_CASE("an answers file larger than 64 KiB is refused unread") {
    const TemporaryFolder folder("large");
    {
        std::ofstream out(folder.path / "submission.yaml", std::ios::binary);
        out << "student_id: \"s1\"\n";
        out << "# " << std::string(70 * 1024, 'x') << "\n";
    }
    const grader::Submission submission = grader::load_submission(folder.path, day15());
    REQUIRE(submission.problems.size() == 1);
    CHECK(contains(submission.problems[0].message, "more than the limit of 65536"));
    CHECK(submission.student_id.empty());
}

TEST_CASE("quoted numbers, a numeric student id and a missing gpu are not mistakes") {
    const grader::Submission submission = answers("quoted_numbers_no_gpu");
    CHECK(submission.problems.empty());
    CHECK(submission.student_id == "20417");
    CHECK(submission.gpu_name.empty());
    REQUIRE(submission.row(stride(3)) != nullptr);
    CHECK(submission.row(stride(3))->predicted_degree == 1);
    CHECK(submission.row(stride(3))->measured == doctest::Approx(1.02));
    CHECK(submission.row(stride(16))->measured == doctest::Approx(15.6));
    CHECK(submission.sentence ==
          "Because 3 shares no factor with 32, the lanes spread over all 32 banks.");
}

TEST_CASE("what a teacher reads without doubt is read, with a note saying how to write it") {
    struct Reading {
        const char* fixture;
        int stride;
        double value;
        int line;
        const char* field;
        const char* note;
    };
    for (const Reading& expected : std::vector<Reading>{
             {"decimal_comma_flow", 8, 7.91, 5, "rows[1].measured_ratio",
              "7,91 read as 7.91 (a decimal comma); next time write 7.91"},
             {"decimal_comma_block", 16, 15.6, 8, "rows[2].measured_ratio",
              "15,6 read as 15.6 (a decimal comma)"},
             {"unit_after_ratio", 3, 1.0, 4, "rows[0].measured_ratio",
              "1.0\u00d7 read as 1 (the 'x' left out)"},
             {"unit_after_ratio", 8, 7.83, 5, "rows[1].measured_ratio",
              "7.83x read as 7.83 (the 'x' left out)"},
             {"unit_after_ratio", 16, 15.6, 8, "rows[2].measured_ratio",
              "15,6 X read as 15.6 (a decimal comma, and the 'x' left out)"},
         }) {
        CAPTURE(expected.fixture);
        CAPTURE(expected.stride);
        const grader::Submission submission = answers(expected.fixture);
        CHECK(submission.problems.empty());
        REQUIRE(submission.row(stride(expected.stride)) != nullptr);
        CHECK(submission.row(stride(expected.stride))->measured == doctest::Approx(expected.value));
        const auto note = std::find_if(
            submission.notes.begin(), submission.notes.end(),
            [&](const grader::SubmissionProblem& n) { return n.field == expected.field; });
        REQUIRE(note != submission.notes.end());
        CAPTURE(note->message);
        CHECK(note->location.line == expected.line);
        CHECK(contains(note->message, expected.note));
    }
}

TEST_CASE("a blank sentence is the sentence check's, not a mistake of the answers file") {
    for (const char* fixture : {"empty_sentence", "missing_student_id_and_sentence"}) {
        CAPTURE(fixture);
        const grader::Submission submission = answers(fixture);
        CHECK(submission.sentence.empty());
        for (const auto& problem : submission.problems) {
            CHECK(problem.field != "sentence");
        }
    }
    CHECK(answers("empty_sentence").problems.empty());
}

TEST_CASE("each answer keeps where it is written, and the answers given are counted") {
    const grader::Submission example = answers("empty_sentence");
    REQUIRE(example.row(stride(8)) != nullptr);
    CHECK(example.row(stride(8))->predicted_location.line == 5);
    CHECK(example.row(stride(8))->predicted_location.column > 20);
    CHECK(example.row(stride(8))->measured_location.line == 5);
    CHECK(example.row(stride(8))->measured_location.column >
          example.row(stride(8))->predicted_location.column);
    CHECK(example.answers_given == 6);

    const grader::Submission kit =
        grader::load_submission(kSourceDir / "student", day15());  // every answer blank
    CHECK(kit.answers_given == 0);
    CHECK_FALSE(kit.unreadable);
    CHECK_FALSE(kit.missing);
    CHECK(answers("no_such_folder").missing);
    CHECK(answers("yaml_syntax_error").unreadable);
}

TEST_CASE("a student id left as a placeholder is a blank to fill in, in any spelling") {
    for (const char* id : {"your-id", "YOUR ID", "<your id>", "student_id", "TODO", "xxxx"}) {
        CAPTURE(id);
        const TemporaryFolder folder(std::string("placeholder-") +
                                     std::to_string(std::hash<std::string>{}(id)));
        std::ofstream(folder.path / "submission.yaml")
            << "student_id: \"" << id << "\"\nrows:\n"
            << "  - { stride: 3, predicted_degree: 1, measured_ratio: 1.0 }\n"
            << "  - { stride: 8, predicted_degree: 8, measured_ratio: 7.83 }\n"
            << "  - { stride: 16, predicted_degree: 16, measured_ratio: 15.6 }\n"
            << "sentence: \"3 shares no factor with 32.\"\n";
        const grader::Submission submission = grader::load_submission(folder.path, day15());
        REQUIRE(submission.problems.size() == 1);
        CHECK(submission.problems[0].kind == grader::FindingKind::answer_placeholder);
    }
    for (const char* id : {"ada", "s1234567", "idris", "yourid2"}) {
        CAPTURE(id);
        const TemporaryFolder folder(std::string("own-id-") + id);
        std::ofstream(folder.path / "submission.yaml")
            << "student_id: \"" << id << "\"\nrows:\n"
            << "  - { stride: 3, predicted_degree: 1, measured_ratio: 1.0 }\n"
            << "  - { stride: 8, predicted_degree: 8, measured_ratio: 7.83 }\n"
            << "  - { stride: 16, predicted_degree: 16, measured_ratio: 15.6 }\n"
            << "sentence: \"3 shares no factor with 32.\"\n";
        CHECK(grader::load_submission(folder.path, day15()).problems.empty());
    }
}

TEST_CASE("Part 2's percentages may carry their '%' sign; a ratio's 'x' is not read there") {
    const grader::Exercise padding =
        grader::load_exercise(kSourceDir / "exercises" / "day15-padding");
    const TemporaryFolder folder("percent-sign");
    std::ofstream(folder.path / "submission.yaml")
        << "student_id: \"ada\"\ngpu: \"Tesla T4\"\nrows:\n"
        << "  - { tile: \"32x32\", predicted_degree: 32, percent_of_copy: 175% }\n"
        << "  - { tile: \"yours\", predicted_degree: 1, percent_of_copy: 1.2x }\n"
        << "sentence: \"33 is coprime with 32.\"\n";
    const grader::Submission submission = grader::load_submission(folder.path, padding);
    REQUIRE(submission.notes.size() == 1);
    CHECK(contains(submission.notes[0].message, "175% read as 175 (the '%' sign left out)"));
    REQUIRE(submission.problems.size() == 1);
    CHECK(submission.problems[0].field == "rows[1].percent_of_copy");
}
