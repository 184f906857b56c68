// The exercise file's sections on what is asked and checked: the answers file's rows and the checks
// with their parameters and diagnoses.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/kernel_ids.hpp"
#include "common/text.hpp"
#include "exercise/exercise.hpp"
#include "exercise/exercise_reading.hpp"
#include "exercise/yaml_file.hpp"
#include "model/diagnosis.hpp"

namespace grader::exercise_reading {

const std::vector<std::pair<std::string, CheckKind>>& check_kind_names() {
    static const std::vector<std::pair<std::string, CheckKind>> kKinds = {
        {"answers_file", CheckKind::answers_file},
        {"compile_abi", CheckKind::compile_abi},
        {"output", CheckKind::output},
        {"predicted", CheckKind::predicted},
        {"ordering", CheckKind::ordering},
        {"consistency", CheckKind::consistency},
        {"measured", CheckKind::measured},
        {"counted_degree", CheckKind::counted_degree},
        {"sentence", CheckKind::sentence}};
    return kKinds;
}

void read_answers(const ExerciseReader& reader, const YAML::Node& answers, Exercise& exercise) {
    reader.expect_map(answers, "answers",
                      {"key", "rows", "predicted", "measured", "measured_description"});
    const YAML::Node key = reader.required(answers, "answers", "key");
    exercise.answers.key_field = reader.nonempty_text(key, "answers.key");
    const YAML::Node rows = find_value(answers, "rows");
    if (exercise.answers.key_field == "stride") {
        if (!exercise.has_sweep()) {
            reader.fail(key.Mark(), "answers.key",
                        "this exercise has no strides; key the rows by a name and list them "
                        "under answers.rows");
        }
        if (rows.IsDefined()) {
            reader.fail(rows.Mark(), "answers.rows",
                        "rows keyed by stride are the strides of strides.student");
        }
    } else {
        if (!rows.IsDefined() || !rows.IsSequence() || rows.size() == 0) {
            reader.fail(rows.IsDefined() ? rows.Mark() : answers.Mark(), "answers.rows",
                        "expected a list of { key, kernel }: one answer row per kernel");
        }
        const TimedCases timed(exercise);
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const std::string field = index_field("answers.rows", i);
            reader.expect_map(rows[i], field, {"key", "kernel"});
            AnswerRowSpec row;
            row.key = reader.nonempty_text(reader.required(rows[i], field, "key"), field + ".key");
            const YAML::Node kernel = reader.required(rows[i], field, "kernel");
            row.kernel = reader.nonempty_text(kernel, field + ".kernel");
            if (!timed.has_kernel(row.kernel)) {
                reader.fail(kernel.Mark(), field + ".kernel",
                            "there is no kernel " + quote(row.kernel));
            }
            exercise.answers.rows.push_back(row);
        }
    }
    exercise.answers.predicted_field =
        reader.nonempty_text(reader.required(answers, "answers", "predicted"), "answers.predicted");
    exercise.answers.measured_field =
        reader.nonempty_text(reader.required(answers, "answers", "measured"), "answers.measured");
    if (const YAML::Node node = find_value(answers, "measured_description"); node.IsDefined()) {
        exercise.answers.measured_description =
            reader.nonempty_text(node, "answers.measured_description");
    }
}

namespace {

std::vector<DiagnosisRule> read_diagnoses(const ExerciseReader& reader, const YAML::Node& list,
                                          const std::string& field) {
    if (!list.IsSequence()) {
        reader.fail(list.Mark(), field,
                    "expected a list of { when, message }, got " + describe(list));
    }
    std::vector<DiagnosisRule> diagnoses;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string item = index_field(field, i);
        reader.expect_map(list[i], item, {"when", "message", "cause"});
        DiagnosisRule diagnosis;
        const YAML::Node when = reader.required(list[i], item, "when");
        reader.expect_map(when, item + ".when",
                          {"counted_degree_at_least", "static_shared_bytes_above"});
        if (const YAML::Node node = find_value(when, "counted_degree_at_least"); node.IsDefined()) {
            diagnosis.counted_degree_at_least =
                reader.number(node, item + ".when.counted_degree_at_least", false);
        }
        if (const YAML::Node node = find_value(when, "static_shared_bytes_above");
            node.IsDefined()) {
            diagnosis.static_shared_bytes_above =
                reader.non_negative_int(node, item + ".when.static_shared_bytes_above");
        }
        if (!diagnosis.counted_degree_at_least && !diagnosis.static_shared_bytes_above) {
            reader.fail(when.Mark(), item + ".when", "expected at least one condition");
        }
        diagnosis.message =
            reader.nonempty_text(reader.required(list[i], item, "message"), item + ".message");
        if (const YAML::Node node = find_value(list[i], "cause"); node.IsDefined()) {
            const std::string key = reader.nonempty_text(node, item + ".cause");
            diagnosis.cause = cause_from_string(key);
            if (!diagnosis.cause) {
                std::vector<std::string> keys;
                for (const Cause cause : all_causes()) {
                    keys.push_back(std::string(to_string(cause)));
                }
                reader.fail(node.Mark(), item + ".cause",
                            "unknown cause " + quote(key) +
                                (nearest_name(key, keys)
                                     ? " (did you mean '" + *nearest_name(key, keys) + "'?)"
                                     : std::string()) +
                                "; the causes are: " + join_list(keys, ", "));
            }
        }
        diagnoses.push_back(diagnosis);
    }
    return diagnoses;
}

// The keys each kind of check takes beyond the common ones.
std::vector<std::string> check_parameter_keys(CheckKind kind) {
    switch (kind) {
        case CheckKind::output:
            return {"input"};
        case CheckKind::ordering:
            return {"kernel", "rules"};
        case CheckKind::consistency:
            return {"kernel", "against", "tolerance"};
        case CheckKind::measured:
            return {"band", "rules"};
        case CheckKind::counted_degree:
            return {"kernel", "rules", "diagnoses", "tolerance", "accesses"};
        case CheckKind::answers_file:
        case CheckKind::compile_abi:
        case CheckKind::predicted:
        case CheckKind::sentence:
            break;
    }
    return {};
}

void read_check_parameters(const ExerciseReader& reader, const YAML::Node& node,
                           const std::string& field, const Exercise& exercise, CheckSpec& spec) {
    const TimedCases timed(exercise);
    if (const YAML::Node kernel = find_value(node, "kernel"); kernel.IsDefined()) {
        spec.kernel = reader.nonempty_text(kernel, field + ".kernel");
        if (!timed.has_kernel(spec.kernel)) {
            reader.fail(kernel.Mark(), field + ".kernel",
                        "there is no kernel " + quote(spec.kernel));
        }
    }
    switch (spec.kind) {
        case CheckKind::output: {
            const YAML::Node input = reader.required(node, field, "input");
            spec.input = reader.nonempty_text(input, field + ".input");
            const bool known =
                std::any_of(exercise.inputs.begin(), exercise.inputs.end(),
                            [&](const InputSpec& candidate) { return candidate.id == spec.input; });
            if (!known) {
                reader.fail(input.Mark(), field + ".input",
                            "there is no input " + quote(spec.input) + " under inputs");
            }
            break;
        }
        case CheckKind::ordering:
            spec.rules = read_rules(reader, reader.required(node, field, "rules"), field + ".rules",
                                    exercise, spec.kernel, false);
            break;
        case CheckKind::consistency: {
            const YAML::Node against = reader.required(node, field, "against");
            spec.against = reader.nonempty_text(against, field + ".against");
            if (!timed.has_kernel(spec.against) || spec.against == spec.kernel) {
                reader.fail(against.Mark(), field + ".against",
                            "expected the id of another kernel, got " + quote(spec.against));
            }
            spec.tolerance = reader.number(reader.required(node, field, "tolerance"),
                                           field + ".tolerance", false);
            break;
        }
        case CheckKind::measured: {
            const YAML::Node band = find_value(node, "band");
            if (!band.IsDefined()) {
                if (!exercise.has_sweep() && !find_value(node, "rules").IsDefined()) {
                    reader.fail(node.Mark(), field, "expected a band, rules or both");
                }
                if (const YAML::Node rules = find_value(node, "rules"); rules.IsDefined()) {
                    spec.rules = read_rules(reader, rules, field + ".rules", exercise,
                                            std::string(kStudentKernel), true);
                }
                break;
            }
            reader.expect_map(band, field + ".band", {"low", "high", "slack"});
            spec.band_low = reader.number(reader.required(band, field + ".band", "low"),
                                          field + ".band.low", true);
            spec.band_high = reader.number(reader.required(band, field + ".band", "high"),
                                           field + ".band.high", false);
            if (const YAML::Node slack = find_value(band, "slack"); slack.IsDefined()) {
                spec.band_slack = reader.number(slack, field + ".band.slack", true);
            }
            if (spec.band_high < spec.band_low) {
                reader.fail(band.Mark(), field + ".band", "high is below low");
            }
            if (const YAML::Node rules = find_value(node, "rules"); rules.IsDefined()) {
                spec.rules = read_rules(reader, rules, field + ".rules", exercise,
                                        std::string(kStudentKernel), true);
            }
            break;
        }
        case CheckKind::counted_degree:
            if (const YAML::Node tolerance = find_value(node, "tolerance"); tolerance.IsDefined()) {
                spec.tolerance = reader.number(tolerance, field + ".tolerance", true);
            }
            if (const YAML::Node rules = find_value(node, "rules"); rules.IsDefined()) {
                spec.rules =
                    read_rules(reader, rules, field + ".rules", exercise, spec.kernel, true);
            }
            if (const YAML::Node diagnoses = find_value(node, "diagnoses"); diagnoses.IsDefined()) {
                spec.diagnoses = read_diagnoses(reader, diagnoses, field + ".diagnoses");
            }
            if (const YAML::Node accesses = find_value(node, "accesses"); accesses.IsDefined()) {
                const std::string which = reader.text(accesses, field + ".accesses");
                if (which != "all" && which != "loads") {
                    reader.fail(accesses.Mark(), field + ".accesses",
                                "expected all or loads, got " + which);
                }
                spec.accesses =
                    which == "loads" ? CheckSpec::Accesses::loads : CheckSpec::Accesses::all;
            }
            break;
        case CheckKind::answers_file:
        case CheckKind::compile_abi:
        case CheckKind::predicted:
        case CheckKind::sentence:
            break;
    }
}

}  // namespace

void read_checks(const ExerciseReader& reader, const YAML::Node& checks, Exercise& exercise) {
    if (!checks.IsMap() || checks.size() == 0) {
        reader.fail(checks.Mark(), "checks", "expected a map of checks, got " + describe(checks));
    }
    for (const auto& complaint : key_complaints(checks, "checks", {})) {
        if (complaint.message.rfind("unknown key", 0) != 0) {
            reader.fail(complaint.mark, complaint.field, complaint.message);
        }
    }
    for (const auto& entry : checks) {
        const std::string id = entry.first.Scalar();
        const std::string field = "checks." + id;
        const YAML::Node node = entry.second;
        if (!node.IsMap()) {
            reader.fail(node.Mark(), field, "expected a map, got " + describe(node));
        }
        CheckSpec spec;
        spec.id = id;
        spec.location = reader.location(node);
        spec.kind = parse_name(reader, reader.required(node, field, "kind"), field + ".kind",
                               check_kind_names(), "check kind");
        std::vector<std::string> known = {"kind",   "title", "points", "required",
                                          "review", "pass",  "fail",   "hint"};
        const auto parameters = check_parameter_keys(spec.kind);
        known.insert(known.end(), parameters.begin(), parameters.end());
        reader.expect_map(node, field, known);
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
        read_check_parameters(reader, node, field, exercise, spec);
        exercise.checks.push_back(spec);
    }
    // The answers file and the compile are read on every grade; their checks must exist.
    for (const CheckKind kind : {CheckKind::answers_file, CheckKind::compile_abi}) {
        const auto count = std::count_if(exercise.checks.begin(), exercise.checks.end(),
                                         [kind](const CheckSpec& c) { return c.kind == kind; });
        if (count != 1) {
            reader.fail(checks.Mark(), "checks",
                        "expected exactly one check of kind '" + std::string(to_string(kind)) +
                            "', got " + std::to_string(count));
        }
    }
}

}  // namespace grader::exercise_reading
