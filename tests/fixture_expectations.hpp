#pragma once

// What the fixture tests share: finding the fixture folders, reading expected.yaml, the exercise
// and the seed a fixture needs, and asserting a grade against its expectations.

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checks/checks.hpp"
#include "exercise/exercise.hpp"
#include "grader_run.hpp"
#include "test_paths.hpp"

namespace grader::testing {

inline std::vector<std::string> strings(const YAML::Node& node) {
    std::vector<std::string> out;
    if (node && node.IsSequence()) {
        for (const auto& item : node) {
            out.push_back(item.as<std::string>());
        }
    }
    return out;
}

// The folders under tests/fixtures/<group> that hold an expected.yaml, sorted.
inline std::vector<std::filesystem::path> fixture_folders(const std::string& group) {
    std::vector<std::filesystem::path> folders;
    for (const auto& entry :
         std::filesystem::directory_iterator(std::filesystem::path(GRADER_FIXTURES_DIR) / group)) {
        if (std::filesystem::exists(entry.path() / "expected.yaml")) {
            folders.push_back(entry.path());
        }
    }
    std::sort(folders.begin(), folders.end());
    return folders;
}

// The exercise folder that grades a fixture: exercises/<its `exercise:` key>, Day 15 Part 1 by
// default.
inline std::filesystem::path exercise_dir(const YAML::Node& expected) {
    const std::string id =
        expected["exercise"] ? expected["exercise"].as<std::string>() : "day15-bank-conflicts";
    return std::filesystem::path(GRADER_SOURCE_DIR) / "exercises" / id;
}

// What the fixture waits for before its expectations can hold (the `awaits:` key), or "".
inline std::string awaits(const YAML::Node& expected) {
    return expected["awaits"] ? expected["awaits"].as<std::string>() : std::string();
}

// A fixed seed, or the first one whose unnamed strides include one the fixture asks for
// (stride-sniffing shows only at a stride whose degree is not 1).
inline std::uint64_t seed_for(const Exercise& exercise, const YAML::Node& expected) {
    const auto wanted = expected["seed_must_draw_any_of"];
    if (!wanted) {
        return 20261202;
    }
    std::vector<int> strides;
    for (const auto& s : wanted) {
        strides.push_back(s.as<int>());
    }
    for (std::uint64_t seed = 1;; ++seed) {
        const auto drawn = draw_unnamed_strides(exercise, seed);
        if (std::any_of(drawn.begin(), drawn.end(), [&](int s) {
                return std::find(strides.begin(), strides.end(), s) != strides.end();
            })) {
            return seed;
        }
    }
}

// A field of expected.yaml, from the mapping named `overrides` (`sim`, `no_gpu`) where that
// mapping has it.
inline YAML::Node field(const YAML::Node& expected, const char* overrides, const char* key) {
    const YAML::Node special = overrides ? expected[overrides] : YAML::Node();
    if (special && special.IsMap() && special[key]) {
        return special[key];
    }
    return expected[key];
}

// Asserts a JSON grade against expected.yaml: verdict, exit status, the checks that must pass
// and fail, what the failing checks say, what nothing may say, the root cause (`cause`), the
// interruption and the kernel output's size. `overrides` names the mapping whose fields replace the
// GPU's (nullptr: none).
inline void check_grade(const GraderRun& run, const YAML::Node& expected, const char* overrides) {
    REQUIRE_MESSAGE(run.report.is_object(), "no report was written: " << run.output);
    const std::string verdict = field(expected, overrides, "verdict").as<std::string>();
    if (verdict == "any") {
        CHECK((run.exit_code == 0 || run.exit_code == 1));
    } else {
        CHECK(run.report.value("verdict", "") == verdict);
        CHECK(run.exit_code == field(expected, overrides, "exit_code").as<int>());
    }
    std::string failing_text;
    for (const auto& id : strings(field(expected, overrides, "failed_checks"))) {
        const auto* check = find_check(run.report, id);
        REQUIRE_MESSAGE(check != nullptr, id);
        CHECK_MESSAGE(!(*check)["passed"].get<bool>(),
                      id << " should fail: " << check_text(*check));
        failing_text += check_text(*check) + "\n";
    }
    for (const auto& id : strings(field(expected, overrides, "passed_checks"))) {
        const auto* check = find_check(run.report, id);
        REQUIRE_MESSAGE(check != nullptr, id);
        CHECK_MESSAGE((*check)["passed"].get<bool>(), id << " should pass: " << check_text(*check));
    }
    for (const auto& text : strings(field(expected, overrides, "message_contains"))) {
        CHECK_MESSAGE(failing_text.find(text) != std::string::npos,
                      "'" << text << "' not in: " << failing_text);
    }
    for (const auto& text : strings(field(expected, overrides, "must_not_contain"))) {
        CHECK_MESSAGE(run.report_text.find(text) == std::string::npos,
                      "'" << text << "' in report");
        CHECK_MESSAGE(run.output.find(text) == std::string::npos, "'" << text << "' in output");
    }
    if (const YAML::Node cause = field(expected, overrides, "cause")) {
        // The root cause the grade comes down to, or none for full marks.
        const std::string want = cause.as<std::string>();
        const nlohmann::json& diagnosis = run.report["diagnosis"];
        if (want == "none") {
            CHECK_MESSAGE(diagnosis.is_null(), "a diagnosis for full marks: " << diagnosis.dump());
        } else {
            REQUIRE_MESSAGE(diagnosis.is_object(),
                            "no diagnosis; the summary: " << run.report.value("summary", ""));
            CHECK_MESSAGE(diagnosis.value("cause", "") == want,
                          "the summary: " << run.report.value("summary", ""));
        }
    }
    // The reason the student reads (the summary: the diagnosis and its fix), what it must say
    // and what it must not.
    const std::string reason = run.report.value("summary", "");
    for (const auto& text : strings(field(expected, overrides, "reason_contains"))) {
        CHECK_MESSAGE(reason.find(text) != std::string::npos,
                      "'" << text << "' not in the reason: " << reason);
    }
    for (const auto& text : strings(field(expected, overrides, "reason_must_not_contain"))) {
        CHECK_MESSAGE(reason.find(text) == std::string::npos,
                      "'" << text << "' in the reason: " << reason);
    }
    if (const YAML::Node stop = field(expected, overrides, "interruption")) {
        const nlohmann::json& interruption = run.report["interruption"];
        REQUIRE_MESSAGE(interruption.is_object(), "the grade was not interrupted");
        if (stop["kind"]) {
            CHECK(interruption.value("kind", "") == stop["kind"].as<std::string>());
        }
        if (stop["stage"]) {  // a prefix: "run student" for any stride
            CHECK(interruption.value("stage", "").rfind(stop["stage"].as<std::string>(), 0) == 0);
        }
        if (stop["students_fault"]) {
            CHECK(interruption.value("students_fault", false) == stop["students_fault"].as<bool>());
        }
    }
    if (const auto score = field(expected, overrides, "score")) {
        CHECK(run.report.value("score", -1.0) == doctest::Approx(score.as<double>()));
    }
    if (const auto limit = field(expected, overrides, "kernel_output_max_bytes")) {
        CHECK(run.report.value("kernel_output", "").size() <= limit.as<std::size_t>() + 64);
    }
}

}  // namespace grader::testing
