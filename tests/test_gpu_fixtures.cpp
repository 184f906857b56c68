// Every fixture submission through `grader grade`, on a real GPU: the verdict, the exit status,
// which checks pass and fail, and what the messages say. Skipped (exit 77) without a GPU.

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "checks/checks.hpp"
#include "cuda/driver_api.hpp"
#include "cuda/resources.hpp"
#include "fixture_expectations.hpp"
#include "grader_run.hpp"

using namespace grader;
using namespace grader::testing;

namespace {

void skip_without_gpu() {
    try {
        cuda::query_device(0);
    } catch (const std::exception& error) {
        std::cout << "SKIPPED: no GPU here (" << error.what() << ")\n";
        std::exit(77);
    }
}



}  // namespace

TEST_CASE("every fixture submission gets the verdict and messages its expected.yaml names") {
    skip_without_gpu();
    const std::filesystem::path fixtures = std::filesystem::path(GRADER_FIXTURES_DIR) / "submissions";
    const Exercise exercise =
        load_exercise(std::filesystem::path(GRADER_SOURCE_DIR) / "exercises/day15-bank-conflicts");
    const auto scratch = std::filesystem::temp_directory_path() / "grader-gpu-fixtures";
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
        const std::uint64_t seed = seed_for(exercise, expected);
        const GraderRun run = run_grader({"grade", folder.string(), "--format", "json", "--output",
                                          report_file.string(), "--seed", std::to_string(seed),
                                          "--timeout", "5", "--quiet"},
                                         report_file);
        CAPTURE(run.output);
        REQUIRE_MESSAGE(run.report.is_object(), "no report was written for " << name);
        const std::string verdict = expected["verdict"].as<std::string>();
        // What each fixture got, printed so the GPU transcript shows it.
        std::cout << name << ": " << run.report.value("verdict", "?") << " "
                  << run.report.value("score", 0.0) << "/" << run.report.value("max_score", 0.0)
                  << " in " << run.report.value("wall_seconds", 0.0)
                  << " s: " << run.report.value("summary", "") << std::endl;
        if (verdict == "any") {
            CHECK((run.exit_code == 0 || run.exit_code == 1));
        } else {
            CHECK(run.report.value("verdict", "") == verdict);
            CHECK(run.exit_code == expected["exit_code"].as<int>());
        }
        std::string failing_text;
        for (const auto& id : strings(expected["failed_checks"])) {
            const auto* check = find_check(run.report, id);
            REQUIRE_MESSAGE(check != nullptr, id);
            CHECK_MESSAGE(!(*check)["passed"].get<bool>(), id << " should fail: " << check_text(*check));
            failing_text += check_text(*check) + "\n";
        }
        for (const auto& id : strings(expected["passed_checks"])) {
            const auto* check = find_check(run.report, id);
            REQUIRE_MESSAGE(check != nullptr, id);
            CHECK_MESSAGE((*check)["passed"].get<bool>(), id << " should pass: " << check_text(*check));
        }
        for (const auto& text : strings(expected["message_contains"])) {
            CHECK_MESSAGE(failing_text.find(text) != std::string::npos,
                          "'" << text << "' not in: " << failing_text);
        }
        for (const auto& text : strings(expected["must_not_contain"])) {
            CHECK(run.report_text.find(text) == std::string::npos);
            CHECK(run.output.find(text) == std::string::npos);
        }
        if (const auto limit = expected["kernel_output_max_bytes"]) {
            CHECK(run.report.value("kernel_output", "").size() <= limit.as<std::size_t>() + 64);
        }
    }
}
