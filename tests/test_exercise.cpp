#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "exercise/exercise.hpp"

namespace fs = std::filesystem;
using grader::ExerciseError;
using grader::OrderingRule;
using grader::ParameterRole;

namespace {

const fs::path kSourceDir = GRADER_SOURCE_DIR;
const fs::path kFixtures = GRADER_FIXTURES_DIR;
const fs::path kDay15 = kSourceDir / "exercises" / "day15-bank-conflicts";

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// The error load_exercise throws for a broken fixture; fails the test when none is thrown.
ExerciseError exercise_error(const std::string& fixture) {
    try {
        grader::load_exercise(kFixtures / "exercises" / fixture);
    } catch (const ExerciseError& error) {
        return error;
    }
    FAIL("exercise fixture " << fixture << " loaded without an error");
    return ExerciseError({}, "", "");
}

const grader::Exercise& day15() {
    static const grader::Exercise exercise = grader::load_exercise(kDay15);
    return exercise;
}

grader::Case stride(int value) { return grader::Case{"student", value}; }

grader::Submission answers(const std::string& fixture) {
    return grader::load_submission(kFixtures / "answers" / fixture, day15());
}

// A temporary folder removed at the end of the test.
struct TemporaryFolder {
    fs::path path;
    explicit TemporaryFolder(const std::string& name)
        : path(fs::temp_directory_path() /
               ("grader_test_exercise_" + name + "_" + std::to_string(::getpid()))) {
        fs::create_directories(path);
    }
    ~TemporaryFolder() {
        std::error_code ignored;
        fs::remove_all(path, ignored);
    }
};

}  // namespace

TEST_CASE("the Day 15 exercise file loads with the values written in it") {
    const grader::Exercise& exercise = day15();
    CHECK(exercise.schema_version == 2);
    CHECK(exercise.id == "day15-bank-conflicts");
    CHECK(exercise.title == "Day 15: shared memory bank conflicts");
    CHECK(exercise.directory.is_absolute());
    CHECK(fs::equivalent(exercise.file, kDay15 / "exercise.yaml"));
    CHECK(exercise.banks == 32);

    CHECK(exercise.kernel_name == "probeSharedStride");
    REQUIRE(exercise.parameters.size() == 4);
    CHECK(exercise.parameters[0].name == "in");
    CHECK(exercise.parameters[0].type == "const float*");
    CHECK(exercise.parameters[0].size_bytes == 8);
    CHECK(exercise.parameters[0].role == ParameterRole::input);
    CHECK(exercise.parameters[1].role == ParameterRole::output);
    CHECK(exercise.parameters[2].type == "size_t");
    CHECK(exercise.parameters[2].role == ParameterRole::count);
    CHECK(exercise.parameters[3].name == "stride");
    CHECK(exercise.parameters[3].size_bytes == 4);
    CHECK(exercise.parameters[3].role == ParameterRole::stride);

    REQUIRE(exercise.kernels.size() == 2);
    CHECK(exercise.kernels[0].is_student());
    CHECK(exercise.kernels[1].id == "reference");
    CHECK(exercise.kernels[1].oracle);
    CHECK(exercise.oracle() == &exercise.kernels[1]);
    CHECK(fs::equivalent(exercise.kernels[1].file, kSourceDir / "reference/probe_shared_stride.cu"));
    CHECK(fs::equivalent(exercise.shared_poison_source,
                         kSourceDir / "reference/poison_shared_memory.cu"));

    CHECK(exercise.submission_source == "probe.cu");
    CHECK(exercise.submission_answers == "submission.yaml");
    CHECK(exercise.compile_options == std::vector<std::string>{"-std=c++17", "-lineinfo"});
    CHECK(exercise.default_arch == "sm_75");
    REQUIRE(exercise.headers.size() == 1);
    CHECK(exercise.headers[0].include_name == "day15_probe.h");
    CHECK(fs::equivalent(exercise.headers[0].path, kDay15 / "day15_probe.h"));

    CHECK(exercise.launch.block.count() == 256);
    CHECK(exercise.launch.grid_from_occupancy);
    CHECK(exercise.buffers.input_words == 2048);
    CHECK(exercise.buffers.output.kind == grader::OutputLayout::Kind::per_thread);
    REQUIRE(exercise.inputs.size() == 2);
    CHECK(exercise.inputs[0].id == "ones");
    CHECK(exercise.inputs[0].fill == grader::InputSpec::Fill::constant);
    CHECK(exercise.inputs[0].value == 1.0);
    CHECK(exercise.inputs[1].id == "hidden");
    CHECK(exercise.inputs[1].fill == grader::InputSpec::Fill::random_integers);
    CHECK(exercise.inputs[1].value == 15.0);
    CHECK(exercise.inputs[1].poison_shared);

    CHECK(exercise.has_sweep());
    CHECK(exercise.reference_strides == std::vector<int>{1, 2, 3, 4, 8, 16, 32, 33});
    CHECK(exercise.student_strides == std::vector<int>{3, 8, 16});
    CHECK(exercise.unnamed_stride_pool == std::vector<int>{5, 6, 7, 12, 24, 31, 32, 48, 65});
    CHECK(exercise.unnamed_strides_per_grade == 2);
    CHECK(exercise.ratios.to_stride == 1);
    CHECK(exercise.model_degree({"student", 24}) == 8u);
    CHECK(exercise.model_degree({"reference", 33}) == 1u);

    CHECK(exercise.check("consistency").tolerance == doctest::Approx(0.20));
    CHECK(exercise.check("consistency").against == "reference");
    CHECK(exercise.timing.warmup_launches == 2);
    CHECK(exercise.timing.warmup_ms == doctest::Approx(30));
    CHECK(exercise.timing.min_sample_ms == doctest::Approx(0.5));
    CHECK(exercise.timing.min_samples == 10);
    CHECK(exercise.timing.max_samples == 60);
    CHECK(exercise.timing.target_spread == doctest::Approx(0.005));
    CHECK(exercise.timing.max_seconds == doctest::Approx(0.6));
    CHECK(exercise.limits.compile_seconds == doctest::Approx(30));
    CHECK(exercise.limits.run_seconds == doctest::Approx(30));
    CHECK(exercise.limits.output_bytes == 65536);
    CHECK(exercise.limits.memory_bytes == std::size_t{4096} * 1024 * 1024);
    CHECK(exercise.limits.source_bytes == std::size_t{256} * 1024);
    CHECK(exercise.simulator.modeled_timing);
    CHECK(exercise.answers.key_field == "stride");
    CHECK(exercise.answers.measured_field == "measured_ratio");
    CHECK(contains(exercise.example_sentence, "gcd(stride, 32)"));
    CHECK(exercise.sentence_prompt ==
          "Say in one sentence why stride 3 does not sit between stride 2 and stride 4.");
}

TEST_CASE("the Part 2 exercise is data: kernels without a sweep, a matrix output, ratios to a copy") {
    const grader::Exercise exercise =
        grader::load_exercise(kSourceDir / "exercises" / "day15-padding");
    CHECK(exercise.id == "day15-padding");
    CHECK(exercise.kernel_name == "transposeTiled");
    CHECK(exercise.submission_source == "transpose.cu");
    CHECK_FALSE(exercise.has_sweep());
    REQUIRE(exercise.parameters.size() == 3);
    CHECK(exercise.parameters[2].role == ParameterRole::constant);
    CHECK(exercise.parameters[2].value == 4096);
    REQUIRE(exercise.kernels.size() == 4);
    CHECK(exercise.kernel("copy").name == "copyMatrix");
    CHECK_FALSE(exercise.kernel("copy").degree);
    CHECK(exercise.kernel("unpadded").degree == 32u);
    CHECK(exercise.oracle()->id == "padded");
    CHECK(exercise.model_degree({"student", 0}) == 1u);
    CHECK(exercise.launch.block.x == 32);
    CHECK(exercise.launch.block.y == 8);
    CHECK_FALSE(exercise.launch.grid_from_occupancy);
    CHECK(exercise.launch.grid.count() == 128 * 128);
    CHECK(exercise.buffers.output.kind == grader::OutputLayout::Kind::matrix);
    CHECK(exercise.buffers.output.rows * exercise.buffers.output.columns ==
          exercise.buffers.input_words);
    CHECK(exercise.buffers.bytes_per_launch == 134217728);
    CHECK(exercise.ratios.to_kernel == "copy");
    CHECK(exercise.ratios.as_percent);
    CHECK_FALSE(exercise.simulator.modeled_timing);
    CHECK(exercise.answers.key_field == "tile");
    REQUIRE(exercise.answers.rows.size() == 2);
    CHECK(exercise.answers.rows[1].kernel == "student");
    const grader::CheckSpec& conflict_free = exercise.check("conflict_free");
    CHECK(conflict_free.kind == grader::CheckKind::counted_degree);
    REQUIRE(conflict_free.rules.size() == 1);
    CHECK(conflict_free.rules[0].near.kernel == "padded");
    CHECK(conflict_free.rules[0].far.kernel == "unpadded");
    REQUIRE(conflict_free.diagnoses.size() == 1);
    CHECK(conflict_free.diagnoses[0].static_shared_bytes_above == 4096);
}

TEST_CASE("the Day 15 rules are read with their kinds, kernels and strides") {
    const grader::Exercise& exercise = day15();
    const auto& ordering = exercise.check("ordering").rules;
    REQUIRE(ordering.size() == 2);
    const OrderingRule& closer = ordering[0];
    CHECK(closer.id == "stride3_near_stride1");
    CHECK(closer.kind == OrderingRule::Kind::closer_to);
    CHECK(closer.subject.kernel == "student");
    CHECK(closer.subject.stride == 3);
    CHECK(closer.near.stride == 1);
    CHECK(closer.far.stride == 4);
    CHECK(closer.description == "stride 3 is closer to stride 1 than to stride 4");
    CHECK(closer.location.line > 0);
    CHECK(contains(closer.location.file, "exercise.yaml"));
    const OrderingRule& slower = ordering[1];
    CHECK(slower.kind == OrderingRule::Kind::slower_than);
    CHECK(slower.subject.stride == 16);
    CHECK(slower.than.stride == 8);
    CHECK(slower.factor == doctest::Approx(1.25));
    CHECK(slower.location.line > closer.location.line);

    REQUIRE(exercise.calibration.size() == 5);
    CHECK(exercise.calibration[0].id == "odd3_near_1");
    CHECK(exercise.calibration[0].kind == OrderingRule::Kind::at_most);
    CHECK(exercise.calibration[0].subject.kernel == "reference");
    CHECK(exercise.calibration[0].subject.stride == 3);
    CHECK(exercise.calibration[0].limit == doctest::Approx(1.25));
    CHECK(exercise.calibration[4].kind == OrderingRule::Kind::slower_than);
    CHECK(exercise.calibration[4].subject.stride == 32);
    CHECK(exercise.calibration[4].than.stride == 16);
    CHECK(exercise.calibration[4].factor == doctest::Approx(1.3));
}

TEST_CASE("every check has its kind, points and messages from the exercise file, in its order") {
    const grader::Exercise& exercise = day15();
    std::vector<std::string> ids;
    for (const auto& spec : exercise.checks) {
        CAPTURE(spec.id);
        ids.push_back(spec.id);
        CHECK_FALSE(spec.title.empty());
        CHECK_FALSE(spec.pass_message.empty());
        CHECK_FALSE(spec.fail_message.empty());
    }
    CHECK(ids == std::vector<std::string>{"submission_file", "compile_abi", "accumulator",
                                          "hidden_input", "predicted_degrees", "measured_ratios",
                                          "ordering", "consistency", "counted_degrees",
                                          "sentence"});
    const grader::CheckSpec& accumulator = exercise.check("accumulator");
    CHECK(accumulator.kind == grader::CheckKind::output);
    CHECK(accumulator.input == "ones");
    CHECK(accumulator.title == "Accumulator check");
    CHECK(accumulator.points == 2);
    CHECK(accumulator.required);
    CHECK_FALSE(accumulator.review);
    CHECK(accumulator.pass_message == "Every thread held exactly {expected} at every stride.");
    CHECK(contains(accumulator.hint, "2048.0"));
    CHECK(exercise.check("predicted_degrees").points == 3);
    const grader::CheckSpec& measured = exercise.check("measured_ratios");
    CHECK(measured.kind == grader::CheckKind::measured);
    CHECK(measured.band_low == doctest::Approx(0.5));
    CHECK(measured.band_high == doctest::Approx(1.2));

    const grader::CheckSpec& sentence = exercise.check("sentence");
    CHECK(sentence.points == 0);
    CHECK_FALSE(sentence.required);
    CHECK(sentence.review);
    CHECK(sentence.hint.empty());
}

TEST_CASE("asking for a check the exercise does not have names the check") {
    try {
        day15().check("speed");
        FAIL("no exception");
    } catch (const std::out_of_range& error) {
        CHECK(contains(error.what(), "'speed'"));
        CHECK(contains(error.what(), "day15-bank-conflicts"));
    }
}

TEST_CASE("a copy of the exercise in another folder resolves its paths from that folder") {
    const grader::Exercise copy = grader::load_exercise(kFixtures / "exercises" / "valid_copy");
    CHECK(copy.kernel("reference").file == day15().kernel("reference").file);
    CHECK(copy.headers.at(0).path == day15().headers.at(0).path);
    CHECK(copy.directory ==
          fs::absolute(kFixtures / "exercises" / "valid_copy").lexically_normal());
    CHECK(copy.student_strides == day15().student_strides);
    CHECK(copy.checks.size() == day15().checks.size());
}

TEST_CASE("an exercise error reads as file:line:column: field: message") {
    const ExerciseError error = exercise_error("block_not_a_number");
    const std::string file =
        (kFixtures / "exercises" / "block_not_a_number" / "exercise.yaml").string();
    CHECK(std::string(error.what()) ==
          file + ":31:11: launch.block[0]: expected a positive integer, got 'abc'");
    CHECK(error.location().file == file);
    CHECK(error.location().line == 31);
    CHECK(error.location().column == 11);
    CHECK(error.field() == "launch.block[0]");
}

TEST_CASE("a folder without an exercise file is an exercise error naming the file") {
    const fs::path folder = kFixtures / "exercises" / "no_such_exercise";
    try {
        grader::load_exercise(folder);
        FAIL("no exception");
    } catch (const ExerciseError& error) {
        CHECK(error.location().file == (folder / "exercise.yaml").string());
        CHECK(error.location().line == 0);
        CHECK(contains(error.what(), "not found"));
    }
}

TEST_CASE("every broken exercise file is refused with the line, column and field of its mistake") {
    struct Case {
        const char* fixture;
        int line;
        int column;
        const char* field;
        const char* message_part;
    };
    const std::vector<Case> cases = {
        {"block_not_a_number", 31, 11, "launch.block[0]", "got 'abc'"},
        {"input_words_negative", 37, 16, "buffers.input_words", "got '-2048'"},
        {"block_not_whole_warps", 31, 10, "launch.block", "multiple of 32"},
        {"block_above_1024", 31, 10, "launch.block", "at most 1024"},
        {"output_layout_unknown", 38, 11, "buffers.output", "got 'per_block'"},
        {"typo_input_word", 37, 3, "buffers.input_word",
         "unknown key 'input_word' (did you mean 'input_words'?)"},
        {"unknown_rule_kind", 150, 51, "checks.ordering.rules[1].kind",
         "unknown rule kind 'faster_than'"},
        {"unknown_parameter_role", 16, 60, "kernel.parameters[2].role",
         "unknown parameter role 'scratch'"},
        {"ordering_stride_not_timed", 150, 82, "checks.ordering.rules[1].than",
         "stride 7 is not in"},
        {"calibration_stride_not_in_reference", 57, 81, "calibration.rules[2].than",
         "stride 5 is not in strides.reference"},
        {"key_not_for_rule_kind", 149, 82, "checks.ordering.rules[0].than",
         "does not apply to a closer_to rule"},
        // A missing key is reported at the map that should hold it.
        {"missing_student_strides", 45, 3, "strides.student", "missing"},
        {"output_check_unknown_input", 120, 12, "checks.hidden_input.input",
         "there is no input 'hiddn'"},
        {"check_kind_unknown", 119, 11, "checks.hidden_input.kind", "unknown check kind 'outputs'"},
        {"reference_file_missing", 20, 28, "references[0].file", "no_such_kernel.cu' not found"},
        {"header_file_missing", 28, 39, "compile.headers[0].file", "not found"},
        {"duplicate_key", 6, 1, "banks", "appears twice (first on line 5)"},
        {"points_not_a_number", 147, 13, "checks.ordering.points", "got 'many'"},
        {"required_not_a_bool", 174, 15, "checks.sentence.required", "true or false"},
        {"schema_version_1", 2, 17, "schema_version", "reads schema_version 2"},
        {"no_oracle", 20, 3, "references", "exactly one kernel with 'oracle: true'"},
        {"stride_parameter_without_strides", 2, 1, "strides", "the kernel takes a stride"},
        {"not_utf8", 4, 48, "", "not UTF-8"},
        {"top_level_list", 2, 1, "", "expected a map"},
        {"deeply_nested", 4, 72, "", "nests more than 64 levels"},
    };
    for (const Case& expected : cases) {
        CAPTURE(expected.fixture);
        const ExerciseError error = exercise_error(expected.fixture);
        CAPTURE(error.what());
        CHECK(error.location().file ==
              (kFixtures / "exercises" / expected.fixture / "exercise.yaml").string());
        CHECK(error.location().line == expected.line);
        CHECK(error.location().column == expected.column);
        CHECK(error.field() == expected.field);
        CHECK(contains(error.what(), expected.message_part));
    }
}

TEST_CASE("a YAML syntax error in the exercise file points at where the parser stopped") {
    // The flow list opened on line 25 is never closed; the parser notices on the next key.
    const ExerciseError error = exercise_error("yaml_syntax_error");
    CHECK(error.location().line >= 25);
    CHECK(error.location().line <= 26);
    CHECK(error.location().column > 0);
    CHECK(contains(error.what(), "YAML syntax error"));
}

TEST_CASE("the untouched starter kit's answers name every blank still to fill in, nothing else") {
    const grader::Submission submission = grader::load_submission(kSourceDir / "student", day15());
    std::vector<std::string> fields;
    for (const auto& problem : submission.problems) {
        CAPTURE(problem.message);
        CHECK(contains(problem.message, "still blank: fill in"));
        CHECK(problem.location.line > 0);
        fields.push_back(problem.field);
    }
    CHECK(fields == std::vector<std::string>{"student_id", "gpu", "rows[0].predicted_degree",
                                             "rows[0].measured_ratio", "rows[1].predicted_degree",
                                             "rows[1].measured_ratio", "rows[2].predicted_degree",
                                             "rows[2].measured_ratio", "sentence"});
    CHECK(submission.problems[2].message ==
          "still blank: fill in the conflict degree you predict for stride 3");
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
        {"missing_student_id_and_sentence",
         {{2, "student_id", "missing student_id"}, {2, "sentence", "missing sentence"}},
         3},
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
        {"decimal_comma_flow",
         {{5, "rows[1].measured_ratio", "7,91 has a decimal comma; write 7.91"}},
         3},
        {"decimal_comma_block",
         {{8, "rows[2].measured_ratio", "a decimal comma; write 15.6, with a decimal point"}},
         3},
        {"percent_sign", {{5, "rows[1].measured_ratio", "without the '%' sign"}}, 3},
        {"time_unit", {{6, "rows[2].measured_ratio", "a time; write the ratio asked for"}}, 3},
        {"empty_sentence", {{7, "sentence", "still blank"}}, 3},
        {"misspelt_keys",
         {{7, "sentense", "did you mean 'sentence'"},
          {5, "rows[1].measured_ration", "did you mean 'measured_ratio'"},
          {5, "rows[1].measured_ratio", "missing measured_ratio"},
          {2, "sentence", "missing sentence"}},
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

TEST_CASE("a folder without an answers file yields one problem that says where to start") {
    const grader::Submission submission = answers("no_such_folder");
    REQUIRE(submission.problems.size() == 1);
    CHECK(submission.problems[0].location.file ==
          (kFixtures / "answers" / "no_such_folder" / "submission.yaml").string());
    CHECK(submission.problems[0].location.line == 0);
    CHECK(contains(submission.problems[0].message, "not found"));
    CHECK(contains(submission.problems[0].message, "starter kit's submission.yaml"));
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

TEST_CASE("a source location prints as file:line:column and leaves out what is unknown") {
    CHECK(grader::to_string({"a/submission.yaml", 3, 7}) == "a/submission.yaml:3:7");
    CHECK(grader::to_string({"a/submission.yaml", 3, 0}) == "a/submission.yaml:3");
    CHECK(grader::to_string({"a/submission.yaml", 0, 0}) == "a/submission.yaml");
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

TEST_CASE("the starter kit's example and the platforms' policy are optional settings of the file") {
    // valid_copy, moved to a temporary folder with its paths made absolute.
    std::ifstream in(kFixtures / "exercises" / "valid_copy" / "exercise.yaml");
    std::string base((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (std::size_t at = base.find("../../../../"); at != std::string::npos;
         at = base.find("../../../../", at)) {
        base.replace(at, 12, kSourceDir.string() + "/");
    }
    // Without its own settings, so that each subcase gives them or leaves them out.
    for (const std::string& setting :
         {"starter_example: " + (kSourceDir / "student/example").string() + "\n",
          std::string("platforms:\n  prairielearn:\n    compile_error_gradable: true\n"
                      "    missing_file_gradable: true\n")}) {
        const std::size_t at = base.find(setting);
        REQUIRE(at != std::string::npos);
        base.erase(at, setting.size());
    }
    const TemporaryFolder folder("optional_settings");
    const auto load_with = [&](const std::string& extra) {
        std::ofstream(folder.path / "exercise.yaml") << base << "\n" << extra;
        return grader::load_exercise(folder.path);
    };

    SUBCASE("left out: nothing to compare with, and PrairieLearn grades everything as before") {
        const grader::Exercise exercise = load_with("");
        CHECK(exercise.example_sentence.empty());
        CHECK(exercise.prairielearn.compile_error_gradable);
        CHECK(exercise.prairielearn.missing_file_gradable);
    }
    SUBCASE("given: the example's sentence and id, and the policy as written") {
        const grader::Exercise exercise =
            load_with("starter_example: " + (kSourceDir / "student/example").string() +
                      "\nplatforms:\n  prairielearn:\n    compile_error_gradable: false\n");
        const grader::Submission example =
            grader::load_submission(kSourceDir / "student/example", day15());
        CHECK(exercise.example_sentence == example.sentence);
        CHECK(exercise.example_student_id == example.student_id);
        CHECK_FALSE(exercise.prairielearn.compile_error_gradable);
        CHECK(exercise.prairielearn.missing_file_gradable);
    }
    SUBCASE("an example that is not there, or has no sentence, is the instructor's mistake") {
        try {
            load_with("starter_example: " + (kFixtures / "answers" / "empty_sentence").string() +
                      "\n");
            FAIL("an example without a sentence was accepted");
        } catch (const ExerciseError& error) {
            CHECK(error.field() == "starter_example");
            CHECK(contains(error.what(), "no sentence"));
        }
        CHECK_THROWS_AS(load_with("starter_example: no-such-folder\n"), ExerciseError);
        CHECK_THROWS_AS(
            load_with("platforms:\n  prairielearn:\n    compile_error_gradable: maybe\n"),
            ExerciseError);
        CHECK_THROWS_AS(load_with("platforms:\n  gradescope: {}\n"), ExerciseError);
    }
    SUBCASE("the bundled exercise names the starter kit's example") {
        CHECK_FALSE(day15().example_sentence.empty());
        CHECK(day15().example_student_id == "example-student");
    }
}
