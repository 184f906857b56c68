// Every fixture submission through `grader grade`, on a real GPU: the verdict, the exit status,
// which checks pass and fail, and what the messages say. Skipped (exit 77) without a GPU.

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checks/checks.hpp"
#include "cuda/driver_api.hpp"
#include "cuda/resources.hpp"
#include "exercise/exercise.hpp"
#include "fixture_expectations.hpp"
#include "grader_run.hpp"
#include "test_paths.hpp"

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
    const auto scratch = grader::testing::scratch_root("gpu_fixtures");
    std::filesystem::create_directories(scratch);
    int graded = 0;
    for (const char* group : {"submissions", "padding", "sim_fidelity"}) {
        for (const auto& folder : fixture_folders(group)) {
            const std::string name = std::string(group) + "/" + folder.filename().string();
            CAPTURE(name);
            const YAML::Node expected = YAML::LoadFile((folder / "expected.yaml").string());
            const Exercise exercise = load_exercise(exercise_dir(expected));
            const auto report_file = scratch / (folder.filename().string() + ".json");
            const std::uint64_t seed = seed_for(exercise, expected);
            const GraderRun run =
                run_grader({"grade", folder.string(), "--exercise", exercise_dir(expected).string(),
                            "--format", "json", "--output", report_file.string(), "--seed",
                            std::to_string(seed), "--timeout", "5", "--quiet"},
                           report_file);
            CAPTURE(run.output);
            ++graded;
            // What each fixture got, printed so the GPU transcript shows it.
            std::cout << name << ": " << run.report.value("verdict", "?") << " "
                      << run.report.value("score", 0.0) << "/" << run.report.value("max_score", 0.0)
                      << " in " << run.report.value("wall_seconds", 0.0)
                      << " s: " << run.report.value("summary", "") << std::endl;
            check_grade(run, expected, nullptr);
        }
    }
    CHECK(graded >= 24);
}
