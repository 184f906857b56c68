#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "exercise/exercise.hpp"
#include "exercise_mutations.hpp"
#include "test_paths.hpp"

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

const fs::path& scratch() {
    return grader::testing::scratch_root("exercise");
}

// The error load_exercise throws for a broken exercise; fails the test when none is thrown.
ExerciseError exercise_error(const fs::path& folder) {
    try {
        grader::load_exercise(folder);
    } catch (const ExerciseError& error) {
        return error;
    }
    FAIL("exercise " << folder.string() << " loaded without an error");
    return ExerciseError({}, "", "");
}

const grader::Exercise& day15() {
    static const grader::Exercise exercise = grader::load_exercise(kDay15);
    return exercise;
}

// A temporary folder of this test program's scratch folder.
struct TemporaryFolder {
    fs::path path;
    explicit TemporaryFolder(const std::string& name) : path(scratch() / name) {
        fs::create_directories(path);
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
    CHECK(
        fs::equivalent(exercise.kernels[1].file, kSourceDir / "reference/probe_shared_stride.cu"));
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

TEST_CASE(
    "the Part 2 exercise is data: kernels without a sweep, a matrix output, ratios to a copy") {
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
    CHECK(exercise.simulator.modeled_timing);  // global memory is modeled (issue 31)
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
    const grader::testing::ExerciseMutation& block = grader::testing::exercise_mutations().front();
    REQUIRE(block.name == "block_not_a_number");
    const fs::path folder = grader::testing::write_mutated_exercise(block, scratch());
    const ExerciseError error = exercise_error(folder);
    const std::string file = (folder / "exercise.yaml").string();
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
    // Each is one mutation of a good file (tests/exercise_mutations.hpp).
    for (const grader::testing::ExerciseMutation& mutation :
         grader::testing::exercise_mutations()) {
        CAPTURE(mutation.name);
        const fs::path folder = grader::testing::write_mutated_exercise(mutation, scratch());
        const ExerciseError error = exercise_error(folder);
        CAPTURE(error.what());
        CHECK(error.location().file == (folder / "exercise.yaml").string());
        if (mutation.column == 0) {  // where on the line, or on which of two, is the parser's
            CHECK(error.location().line >= mutation.line - 1);
            CHECK(error.location().line <= mutation.line);
            CHECK(error.location().column > 0);
        } else {
            CHECK(error.location().line == mutation.line);
            CHECK(error.location().column == mutation.column);
        }
        CHECK(error.field() == mutation.field);
        CHECK(contains(error.what(), mutation.message_part));
    }
}

TEST_CASE("the good file the mutations start from loads, and a mutation not in it is refused") {
    CHECK_NOTHROW(grader::load_exercise(kFixtures / "exercises" / "valid_copy"));
    const grader::testing::ExerciseMutation absent{"absent", "no such text", "", 1, 1, "", ""};
    CHECK_THROWS_AS(grader::testing::write_mutated_exercise(absent, scratch()), std::logic_error);
}

TEST_CASE("a source location prints as file:line:column and leaves out what is unknown") {
    CHECK(grader::to_string({"a/submission.yaml", 3, 7}) == "a/submission.yaml:3:7");
    CHECK(grader::to_string({"a/submission.yaml", 3, 0}) == "a/submission.yaml:3");
    CHECK(grader::to_string({"a/submission.yaml", 0, 0}) == "a/submission.yaml");
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
    SUBCASE("the example's measured values are read as ratios, by the case each row is about") {
        const grader::Exercise exercise =
            load_with("starter_example: " + (kSourceDir / "student/example").string() + "\n");
        using Ratio = std::pair<grader::Case, double>;
        CHECK(exercise.example_ratios == std::vector<Ratio>{{{"student", 3}, 1.0},
                                                            {{"student", 8}, 7.83},
                                                            {{"student", 16}, 15.6}});
        const grader::Exercise part2 =
            grader::load_exercise(kSourceDir / "exercises/day15-padding");
        REQUIRE(part2.example_ratios.size() == 2);
        CHECK(part2.example_ratios[0].second == doctest::Approx(1.753));  // 175.3 % of the copy
    }
    SUBCASE("the lesson's solution and the simulator's modeled ratios, as written") {
        const grader::Exercise exercise = load_with(
            "lesson_solution:\n  - \"It is a divisibility question.\"\n"
            "  - \"3 shares nothing with 32.\"\n");
        CHECK(exercise.lesson_solution == std::vector<std::string>{"It is a divisibility question.",
                                                                   "3 shares nothing with 32."});
        CHECK(day15().simulator.modeled_ratios ==
              std::map<int, double>{{3, 1.00}, {8, 6.30}, {16, 12.35}});
        CHECK(day15().lesson_solution.size() == 4);
        CHECK_THROWS_AS(load_with("lesson_solution: \"one string\"\n"), ExerciseError);
        CHECK_THROWS_AS(load_with("lesson_solution: []\n"), ExerciseError);
    }
    SUBCASE("a modeled ratio at a stride the student does not name is refused, naming it") {
        std::string file = base;
        const std::string from = "  modeled_timing: true\n";
        const std::size_t at = file.find(from);
        REQUIRE(at != std::string::npos);
        file.replace(at, from.size(), from + "  modeled_ratios: { 3: 1.00, 4: 3.27 }\n");
        std::ofstream(folder.path / "exercise.yaml") << file;
        try {
            grader::load_exercise(folder.path);
            FAIL("a modeled ratio at stride 4 was accepted");
        } catch (const ExerciseError& error) {
            CHECK(error.field() == "simulator.modeled_ratios.4");
            CHECK(contains(error.what(), "stride 4 is not one the student names"));
        }
    }
}
