// The exercise file's sections on what is timed and how: the strides, the ratios and their ordering
// rules, the calibration, the timing and the limits.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "common/kernel_ids.hpp"
#include "exercise/exercise.hpp"
#include "exercise/exercise_reading.hpp"
#include "exercise/yaml_file.hpp"

namespace grader::exercise_reading {

void read_strides(const ExerciseReader& reader, const YAML::Node& strides, Exercise& exercise) {
    reader.expect_map(strides, "strides",
                      {"reference", "student", "unnamed_pool", "unnamed_per_grade"});
    const YAML::Node reference = reader.required(strides, "strides", "reference");
    exercise.reference_strides = reader.strides(reference, "strides.reference", false);
    exercise.student_strides =
        reader.strides(reader.required(strides, "strides", "student"), "strides.student", false);
    if (const YAML::Node pool = find_value(strides, "unnamed_pool"); pool.IsDefined()) {
        exercise.unnamed_stride_pool = reader.strides(pool, "strides.unnamed_pool", true);
    }
    exercise.unnamed_strides_per_grade =
        static_cast<int>(std::min<std::size_t>(2, exercise.unnamed_stride_pool.size()));
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
    }
}

void read_ratios(const ExerciseReader& reader, const YAML::Node& ratios, Exercise& exercise) {
    reader.expect_map(ratios, "ratios", {"to_stride", "to_kernel", "as_percent"});
    const YAML::Node stride = find_value(ratios, "to_stride");
    const YAML::Node kernel = find_value(ratios, "to_kernel");
    if (exercise.has_sweep()) {
        if (!stride.IsDefined() || kernel.IsDefined()) {
            reader.fail(ratios.Mark(), "ratios",
                        "an exercise with strides takes ratios to a stride: { to_stride: 1 }");
        }
        exercise.ratios.to_stride = reader.positive_int(stride, "ratios.to_stride");
        if (std::find(exercise.reference_strides.begin(), exercise.reference_strides.end(),
                      exercise.ratios.to_stride) == exercise.reference_strides.end()) {
            reader.fail(stride.Mark(), "ratios.to_stride",
                        "stride " + std::to_string(exercise.ratios.to_stride) +
                            " must be in strides.reference: it is the baseline every ratio is "
                            "taken against");
        }
    } else {
        if (!kernel.IsDefined() || stride.IsDefined()) {
            reader.fail(
                ratios.Mark(), "ratios",
                "an exercise without strides takes ratios to a kernel: { to_kernel: copy }");
        }
        exercise.ratios.to_stride = 0;
        exercise.ratios.to_kernel = reader.nonempty_text(kernel, "ratios.to_kernel");
        const bool known =
            std::any_of(exercise.kernels.begin(), exercise.kernels.end(), [&](const KernelSpec& k) {
                return !k.is_student() && k.id == exercise.ratios.to_kernel;
            });
        if (!known) {
            reader.fail(kernel.Mark(), "ratios.to_kernel",
                        "no reference kernel has the id " + quote(exercise.ratios.to_kernel));
        }
    }
    if (const YAML::Node percent = find_value(ratios, "as_percent"); percent.IsDefined()) {
        exercise.ratios.as_percent = reader.boolean(percent, "ratios.as_percent");
    }
}

namespace {

// A rule's operand: a number names a stride of the rule's kernel, a word another kernel (at the
// rule's stride).
Case read_operand(const ExerciseReader& reader, const YAML::Node& node, const std::string& field,
                  const Case& subject, bool sweep) {
    if (!node.IsScalar()) {
        reader.fail(node.Mark(), field, "expected a stride or a kernel id, got " + describe(node));
    }
    if (const auto stride = parse_integer(node.Scalar())) {
        if (!sweep || *stride <= 0 || *stride > std::numeric_limits<int>::max()) {
            reader.fail(node.Mark(), field,
                        sweep ? "expected a positive stride, got " + describe(node)
                              : "this exercise has no strides; name a kernel here");
        }
        return Case{subject.kernel, static_cast<int>(*stride)};
    }
    return Case{reader.nonempty_text(node, field), subject.stride};
}

// The rule's kind, and the keys of the cases it compares ("near", "far"; "than"); fails where
// the rule has a key its kind does not take.
std::vector<std::string> read_rule_kind(const ExerciseReader& reader, const YAML::Node& node,
                                        const std::string& rule_field, OrderingRule& rule) {
    const YAML::Node kind = reader.required(node, rule_field, "kind");
    const std::string kind_name = reader.text(kind, rule_field + ".kind");
    std::vector<std::string> known = {"id", "kind", "kernel", "stride", "description"};
    std::vector<std::string> operand_keys;
    if (kind_name == "closer_to") {
        rule.kind = OrderingRule::Kind::closer_to;
        operand_keys = {"near", "far"};
    } else if (kind_name == "slower_than") {
        rule.kind = OrderingRule::Kind::slower_than;
        operand_keys = {"than"};
        known.push_back("factor");
    } else if (kind_name == "at_most") {
        rule.kind = OrderingRule::Kind::at_most;
        known.push_back("limit");
    } else {
        reader.fail(kind.Mark(), rule_field + ".kind",
                    "unknown rule kind " + quote(kind_name) +
                        "; the kinds are: closer_to, slower_than, at_most");
    }
    known.insert(known.end(), operand_keys.begin(), operand_keys.end());
    for (const auto& entry : node) {
        const std::string& key = entry.first.Scalar();
        if (std::find(known.begin(), known.end(), key) == known.end()) {
            reader.fail(entry.first.Mark(), rule_field + "." + key,
                        quote(key) + " does not apply to a " + kind_name +
                            " rule; it takes: " + join_list(known, ", "));
        }
    }
    return operand_keys;
}

}  // namespace

std::vector<OrderingRule> read_rules(const ExerciseReader& reader, const YAML::Node& list,
                                     const std::string& field, const Exercise& exercise,
                                     const std::string& kernel, bool empty_allowed) {
    if (!list.IsSequence()) {
        reader.fail(list.Mark(), field, "expected a list of rules, got " + describe(list));
    }
    if (list.size() == 0 && !empty_allowed) {
        reader.fail(list.Mark(), field, "expected at least one rule, got an empty list");
    }
    const TimedCases timed(exercise);
    const bool sweep = exercise.has_sweep();
    std::vector<OrderingRule> rules;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string rule_field = index_field(field, i);
        const YAML::Node node = list[i];
        // Typos first, against every key a rule can have; then the keys this kind takes.
        reader.expect_map(node, rule_field,
                          {"id", "kind", "kernel", "stride", "description", "near", "far", "than",
                           "factor", "limit"});
        OrderingRule rule;
        rule.location = reader.location(node);
        const std::vector<std::string> operand_keys =
            read_rule_kind(reader, node, rule_field, rule);
        rule.id = reader.nonempty_text(reader.required(node, rule_field, "id"), rule_field + ".id");
        for (const auto& earlier : rules) {
            if (earlier.id == rule.id) {
                reader.fail(find_value(node, "id").Mark(), rule_field + ".id",
                            "rule id " + quote(rule.id) + " is used twice in " + field);
            }
        }
        rule.description = reader.nonempty_text(reader.required(node, rule_field, "description"),
                                                rule_field + ".description");
        rule.subject.kernel = kernel;
        if (const YAML::Node value = find_value(node, "kernel"); value.IsDefined()) {
            rule.subject.kernel = reader.nonempty_text(value, rule_field + ".kernel");
        }
        const YAML::Node stride = find_value(node, "stride");
        if (sweep) {
            rule.subject.stride = reader.positive_int(reader.required(node, rule_field, "stride"),
                                                      rule_field + ".stride");
        } else if (stride.IsDefined()) {
            reader.fail(stride.Mark(), rule_field + ".stride",
                        "this exercise has no strides; a rule names kernels");
        }
        const auto check_timed = [&](const Case& c, const YAML::Node& where,
                                     const std::string& key) {
            const std::string why = timed.why_not_timed(c);
            if (!why.empty()) {
                reader.fail(where.Mark(), rule_field + "." + key, why);
            }
        };
        check_timed(rule.subject, sweep ? find_value(node, "stride") : node,
                    sweep ? "stride" : "kernel");
        for (const auto& key : operand_keys) {
            const YAML::Node value = reader.required(node, rule_field, key);
            const Case operand =
                read_operand(reader, value, rule_field + "." + key, rule.subject, sweep);
            check_timed(operand, value, key);
            if (key == "near") {
                rule.near = operand;
            } else if (key == "far") {
                rule.far = operand;
            } else {
                rule.than = operand;
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

void read_calibration(const ExerciseReader& reader, const YAML::Node& calibration,
                      Exercise& exercise) {
    reader.expect_map(calibration, "calibration", {"decides", "rules"});
    if (const YAML::Node decides = find_value(calibration, "decides"); decides.IsDefined()) {
        exercise.calibration_decides = reader.boolean(decides, "calibration.decides");
    }
    const KernelSpec* oracle = exercise.oracle();
    exercise.calibration = read_rules(reader, reader.required(calibration, "calibration", "rules"),
                                      "calibration.rules", exercise, oracle->id, true);
    for (std::size_t i = 0; i < exercise.calibration.size(); ++i) {
        const OrderingRule& rule = exercise.calibration[i];
        for (const Case* c : {&rule.subject, &rule.near, &rule.far, &rule.than}) {
            if (c->kernel == kStudentKernel) {
                reader.fail(calibration.Mark(), index_field("calibration.rules", i),
                            "a calibration rule is about the exercise's own kernels, not the "
                            "student's");
            }
        }
    }
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

}  // namespace grader::exercise_reading
