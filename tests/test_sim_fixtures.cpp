// Every fixture submission through `grader grade --backend sim`: the verdict, the exit status,
// which checks pass and fail, and what the messages say, with no GPU. Where the simulator must
// conclude differently from a GPU, the fixture's expected.yaml says so in a `sim:` mapping.

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <iostream>

#include "checks/checks.hpp"
#include "fixture_expectations.hpp"
#include "grader_run.hpp"

using namespace grader;
using namespace grader::testing;

namespace {


// A field of expected.yaml, from its `sim:` mapping where that has it.
YAML::Node field(const YAML::Node& expected, const char* key) {
    const YAML::Node sim = expected["sim"];
    if (sim && sim.IsMap() && sim[key]) {
        return sim[key];
    }
    return expected[key];
}


}  // namespace

TEST_CASE(
    "every fixture submission gets its verdict and messages on the simulator, without a GPU") {
    const std::filesystem::path fixtures =
        std::filesystem::path(GRADER_FIXTURES_DIR) / "submissions";
    const Exercise exercise =
        load_exercise(std::filesystem::path(GRADER_SOURCE_DIR) / "exercises/day15-bank-conflicts");
    const auto scratch = std::filesystem::temp_directory_path() / "grader-sim-fixtures";
    std::filesystem::create_directories(scratch);

    std::vector<std::filesystem::path> folders;
    for (const auto& entry : std::filesystem::directory_iterator(fixtures)) {
        if (std::filesystem::exists(entry.path() / "expected.yaml")) {
            folders.push_back(entry.path());
        }
    }
    std::sort(folders.begin(), folders.end());
    REQUIRE(folders.size() >= 15);

    for (const auto& folder : folders) {
        const std::string name = folder.filename().string();
        CAPTURE(name);
        const YAML::Node expected = YAML::LoadFile((folder / "expected.yaml").string());
        const auto report_file = scratch / (name + ".json");
        const GraderRun run =
            run_grader({"grade", folder.string(), "--backend", "sim", "--format", "json",
                        "--output", report_file.string(), "--seed",
                        std::to_string(seed_for(exercise, expected)), "--timeout", "20", "--quiet"},
                       report_file);
        CAPTURE(run.output);
        REQUIRE_MESSAGE(run.report.is_object(), "no report was written for " << name);
        std::cout << name << ": " << run.report.value("verdict", "?") << " in "
                  << run.report.value("wall_seconds", 0.0)
                  << " s: " << run.report.value("summary", "") << std::endl;
        CHECK(run.report["environment"].value("backend", "") == "sim");
        const std::string verdict = field(expected, "verdict").as<std::string>();
        if (verdict == "any") {
            CHECK((run.exit_code == 0 || run.exit_code == 1));
        } else {
            CHECK(run.report.value("verdict", "") == verdict);
            CHECK(run.exit_code == field(expected, "exit_code").as<int>());
        }
        std::string failing_text;
        for (const auto& id : strings(field(expected, "failed_checks"))) {
            const auto* check = find_check(run.report, id);
            REQUIRE_MESSAGE(check != nullptr, id);
            CHECK_MESSAGE(!(*check)["passed"].get<bool>(),
                          id << " should fail: " << check_text(*check));
            failing_text += check_text(*check) + "\n";
        }
        for (const auto& id : strings(field(expected, "passed_checks"))) {
            const auto* check = find_check(run.report, id);
            REQUIRE_MESSAGE(check != nullptr, id);
            CHECK_MESSAGE((*check)["passed"].get<bool>(),
                          id << " should pass: " << check_text(*check));
        }
        for (const auto& text : strings(field(expected, "message_contains"))) {
            CHECK_MESSAGE(failing_text.find(text) != std::string::npos,
                          "'" << text << "' not in: " << failing_text);
        }
        for (const auto& text : strings(field(expected, "must_not_contain"))) {
            CHECK(run.report_text.find(text) == std::string::npos);
            CHECK(run.output.find(text) == std::string::npos);
        }
    }
}
