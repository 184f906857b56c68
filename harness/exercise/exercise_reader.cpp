#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "exercise/exercise.hpp"
#include "exercise/exercise_reading.hpp"
#include "exercise/yaml_file.hpp"

// The exercise file: every fault is the instructor's, thrown at once as an ExerciseError (the CLI
// exits 2 with its file, line, column and field). Its sections are read by exercise_kernels.cpp,
// exercise_timing.cpp and exercise_checks.cpp.

namespace grader {

using namespace exercise_reading;

namespace {

// An exercise file is a page of text; a megabyte is already absurd.
constexpr std::size_t kMaxExerciseBytes = std::size_t{1} << 20;

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
    for (const SubmissionRow& row : example.rows) {
        if (row.measured) {
            exercise.example_ratios.emplace_back(
                row.subject, exercise.ratios.as_percent ? *row.measured / 100.0 : *row.measured);
        }
    }
}

// The simulator's modeled ratios, by stride: only strides a student names, each once.
void read_modeled_ratios(const ExerciseReader& reader, const YAML::Node& node, Exercise& exercise) {
    const std::string field = "simulator.modeled_ratios";
    if (!node.IsMap()) {
        reader.fail(
            node.Mark(), field,
            "expected a map of stride to ratio, e.g. { 3: 1.00, 8: 6.30 }, got " + describe(node));
    }
    for (const auto& item : node) {
        const int stride = reader.positive_int(item.first, field);
        const std::string at = field + "." + std::to_string(stride);
        if (std::find(exercise.student_strides.begin(), exercise.student_strides.end(), stride) ==
            exercise.student_strides.end()) {
            reader.fail(item.first.Mark(), at,
                        "stride " + std::to_string(stride) +
                            " is not one the student names (strides.student)");
        }
        if (!exercise.simulator.modeled_ratios
                 .emplace(stride, reader.number(item.second, at, false))
                 .second) {
            reader.fail(item.first.Mark(), at, "given twice");
        }
    }
}

// schema_version, id, title, banks and the submission's file names.
void read_identity(const ExerciseReader& reader, const YAML::Node& root, Exercise& exercise) {
    const YAML::Node version = reader.required(root, "", "schema_version");
    exercise.schema_version = reader.positive_int(version, "schema_version");
    if (exercise.schema_version != 2) {
        reader.fail(version.Mark(), "schema_version",
                    "this grader reads schema_version 2, got " + describe(version));
    }
    exercise.id = reader.nonempty_text(reader.required(root, "", "id"), "id");
    exercise.title = reader.nonempty_text(reader.required(root, "", "title"), "title");
    if (const YAML::Node banks = find_value(root, "banks"); banks.IsDefined()) {
        exercise.banks = static_cast<unsigned>(reader.positive_int(banks, "banks"));
    }
    if (const YAML::Node submission = find_value(root, "submission"); submission.IsDefined()) {
        reader.expect_map(submission, "submission", {"source", "answers"});
        if (const YAML::Node node = find_value(submission, "source"); node.IsDefined()) {
            exercise.submission_source = reader.nonempty_text(node, "submission.source");
        }
        if (const YAML::Node node = find_value(submission, "answers"); node.IsDefined()) {
            exercise.submission_answers = reader.nonempty_text(node, "submission.answers");
        }
    }
}

// The strides, which the exercise names exactly where its kernel takes a stride.
void read_sweep(const ExerciseReader& reader, const YAML::Node& root, Exercise& exercise) {
    const bool stride_parameter =
        std::any_of(exercise.parameters.begin(), exercise.parameters.end(),
                    [](const KernelParameter& p) { return p.role == ParameterRole::stride; });
    if (const YAML::Node strides = find_value(root, "strides"); strides.IsDefined()) {
        read_strides(reader, strides, exercise);
        if (!stride_parameter) {
            reader.fail(strides.Mark(), "strides",
                        "the kernel has no parameter with the role 'stride' to pass them in");
        }
    } else if (stride_parameter) {
        reader.fail(root.Mark(), "strides",
                    "missing: the kernel takes a stride, so the exercise must say which to run");
    }
}

void read_simulator(const ExerciseReader& reader, const YAML::Node& simulator, Exercise& exercise) {
    reader.expect_map(simulator, "simulator", {"modeled_timing", "modeled_ratios"});
    if (const YAML::Node node = find_value(simulator, "modeled_timing"); node.IsDefined()) {
        exercise.simulator.modeled_timing = reader.boolean(node, "simulator.modeled_timing");
    }
    if (const YAML::Node node = find_value(simulator, "modeled_ratios"); node.IsDefined()) {
        read_modeled_ratios(reader, node, exercise);
    }
}

// Without a sweep the model's degree of a kernel comes from the file: every check that compares
// with the model needs one for the kernels it judges.
void require_model_degrees(const ExerciseReader& reader, const YAML::Node& checks,
                           const Exercise& exercise) {
    if (exercise.has_sweep()) {
        return;
    }
    for (const auto& spec : exercise.checks) {
        std::vector<std::string> judged;
        if (spec.kind == CheckKind::predicted) {
            for (const auto& row : exercise.answers.rows) {
                judged.push_back(row.kernel);
            }
        } else if (spec.kind == CheckKind::counted_degree) {
            judged.push_back(spec.kernel);
        }
        for (const auto& kernel_id : judged) {
            if (!exercise.kernel(kernel_id).degree) {
                reader.fail(checks.Mark(), "checks." + spec.id,
                            "kernel " + quote(kernel_id) +
                                " has no 'degree': the model's conflict degree this check "
                                "compares with");
            }
        }
    }
}

void read_scoring(const ExerciseReader& reader, const YAML::Node& scoring, Exercise& exercise) {
    reader.expect_map(scoring, "scoring", {"kernel_points_without_answers"});
    if (const YAML::Node share = find_value(scoring, "kernel_points_without_answers");
        share.IsDefined()) {
        const std::string field = "scoring.kernel_points_without_answers";
        exercise.kernel_points_without_answers = reader.number(share, field, true);
        if (exercise.kernel_points_without_answers > 1.0) {
            reader.fail(share.Mark(), field,
                        "expected a share from 0 to 1, got " + describe(share));
        }
    }
}

void read_lesson_solution(const ExerciseReader& reader, const YAML::Node& lesson,
                          Exercise& exercise) {
    if (!lesson.IsSequence() || lesson.size() == 0) {
        reader.fail(lesson.Mark(), "lesson_solution",
                    "expected a list of the lesson's sentences, got " + describe(lesson));
    }
    for (std::size_t i = 0; i < lesson.size(); ++i) {
        exercise.lesson_solution.push_back(
            reader.nonempty_text(lesson[i], "lesson_solution[" + std::to_string(i) + "]"));
    }
}

}  // namespace

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
    reader.expect_map(root, "", {"schema_version", "id",
                                 "title",          "banks",
                                 "submission",     "kernel",
                                 "references",     "shared_poison",
                                 "compile",        "launch",
                                 "buffers",        "inputs",
                                 "strides",        "ratios",
                                 "calibration",    "simulator",
                                 "timing",         "limits",
                                 "answers",        "sentence_prompt",
                                 "checks",         "starter_example",
                                 "platforms",      "scoring",
                                 "lesson_solution"});

    read_identity(reader, root, exercise);
    read_kernel(reader, reader.required(root, "", "kernel"), exercise);
    read_references(reader, reader.required(root, "", "references"), exercise);
    if (const YAML::Node poison = find_value(root, "shared_poison"); poison.IsDefined()) {
        exercise.shared_poison_source = reader.existing_file(poison, "shared_poison");
    }
    if (const YAML::Node compile = find_value(root, "compile"); compile.IsDefined()) {
        read_compile(reader, compile, exercise);
    }
    read_launch(reader, reader.required(root, "", "launch"), exercise);
    read_buffers(reader, reader.required(root, "", "buffers"), exercise);
    read_inputs(reader, reader.required(root, "", "inputs"), exercise);
    read_sweep(reader, root, exercise);
    read_ratios(reader, reader.required(root, "", "ratios"), exercise);
    if (const YAML::Node calibration = find_value(root, "calibration"); calibration.IsDefined()) {
        read_calibration(reader, calibration, exercise);
    }
    if (const YAML::Node simulator = find_value(root, "simulator"); simulator.IsDefined()) {
        read_simulator(reader, simulator, exercise);
    }
    if (const YAML::Node timing = find_value(root, "timing"); timing.IsDefined()) {
        read_timing(reader, timing, exercise.timing);
    }
    if (const YAML::Node limits = find_value(root, "limits"); limits.IsDefined()) {
        read_limits(reader, limits, exercise.limits);
    }
    read_answers(reader, reader.required(root, "", "answers"), exercise);
    exercise.sentence_prompt =
        reader.nonempty_text(reader.required(root, "", "sentence_prompt"), "sentence_prompt");
    const YAML::Node checks = reader.required(root, "", "checks");
    read_checks(reader, checks, exercise);
    require_model_degrees(reader, checks, exercise);
    if (const YAML::Node platforms = find_value(root, "platforms"); platforms.IsDefined()) {
        read_platforms(reader, platforms, exercise.prairielearn);
    }
    if (const YAML::Node scoring = find_value(root, "scoring"); scoring.IsDefined()) {
        read_scoring(reader, scoring, exercise);
    }
    if (const YAML::Node example = find_value(root, "starter_example"); example.IsDefined()) {
        read_starter_example(reader, example, exercise);
    }
    if (const YAML::Node lesson = find_value(root, "lesson_solution"); lesson.IsDefined()) {
        read_lesson_solution(reader, lesson, exercise);
    }
    return exercise;
}

}  // namespace grader
