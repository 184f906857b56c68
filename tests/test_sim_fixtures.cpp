// Every fixture submission of both Day 15 exercises (tests/fixtures/submissions and
// tests/fixtures/padding) through `grader grade --backend sim`: the verdict, the exit status,
// which checks pass and fail, and what the messages say, with no GPU. Where the simulator must
// conclude differently from a GPU, the fixture's expected.yaml says so in a `sim:` mapping.

#include <doctest/doctest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checks/checks.hpp"
#include "exercise/exercise.hpp"
#include "fixture_expectations.hpp"
#include "grader_run.hpp"
#include "model/json.hpp"
#include "model/report.hpp"
#include "report/writers.hpp"
#include "test_paths.hpp"
#include "text/text_safety.hpp"

using namespace grader;
using namespace grader::testing;

namespace {

// The lines of a text report's first screen: up to the rule under which a failing report's
// rest follows, or the whole report where there is none. Lines are at most 100 columns.
std::vector<std::string> first_screen(const std::string& text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        const std::string line = text.substr(start, end - start);
        if (line == std::string(100, '-')) {
            break;
        }
        lines.push_back(line);
        start = end + 1;
    }
    return lines;
}

}  // namespace

TEST_CASE(
    "every fixture submission gets its verdict and messages on the simulator, without a GPU") {
    const auto scratch = grader::testing::scratch_root("sim_fixtures");
    std::filesystem::create_directories(scratch);
    int graded = 0;
    for (const char* group : {"submissions", "padding"}) {
        for (const auto& folder : fixture_folders(group)) {
            const std::string name = std::string(group) + "/" + folder.filename().string();
            CAPTURE(name);
            const YAML::Node expected = YAML::LoadFile((folder / "expected.yaml").string());
            const Exercise exercise = load_exercise(exercise_dir(expected));
            const auto report_file = scratch / (folder.filename().string() + ".json");
            const GraderRun run = run_grader(
                {"grade", folder.string(), "--exercise", exercise_dir(expected).string(),
                 "--backend", "sim", "--format", "json", "--output", report_file.string(), "--seed",
                 std::to_string(seed_for(exercise, expected)), "--timeout", "20", "--quiet"},
                report_file);
            CAPTURE(run.output);
            ++graded;
            std::cout << name << ": " << run.report.value("verdict", "?") << " in "
                      << run.report.value("wall_seconds", 0.0)
                      << " s: " << run.report.value("summary", "") << std::endl;
            CHECK(run.report["environment"].value("backend", "") == "sim");
            check_grade(run, expected, "sim");
            // What a student reads first of a report that does not pass fits one screen: the
            // verdict, the diagnosis and its fix, the table that shows it and the checks, in 40
            // lines of 100 columns. A pass has no failure to lead with: its tables are the report.
            const std::string text = write_text(run.report.get<Report>(), TextOptions{});
            const std::vector<std::string> screen = first_screen(text);
            CAPTURE(text);
            if (run.report.value("verdict", "") != "pass") {
                CHECK(screen.size() <= 40);
            }
            if (run.report.value("verdict", "") == "fail") {
                // The rest follows under the rule.
                CHECK(text.find("\n" + std::string(100, '-') + "\n") != std::string::npos);
                // The diagnosis and its fix lead, in the first 4 lines (the verdict's line may
                // wrap where the submission's name is long).
                const std::string summary = run.report.value("summary", "");
                const std::string lead =
                    summary.substr(0, std::min<std::size_t>(summary.size(), 30));
                bool leads = false;
                for (std::size_t i = 0; i < std::min<std::size_t>(screen.size(), 4); ++i) {
                    leads = leads || screen[i].rfind(lead, 0) == 0;
                }
                CHECK(leads);
            }
            for (const std::string& line : screen) {
                CHECK(text::display_width(line) <= 100);
            }
        }
    }
    CHECK(graded >= 24);
}

// tests/fixtures/sim_fidelity: ordinary boundary slips (the last thread, the first and last
// blocks, the output's last row and column, a block or a warp in the middle of the grid), kernels
// that tell the simulator from a GPU by what they observe (a __device__ counter, shared memory's
// initial contents, %warpid and %nwarpid, .ftz, block order) or hide their conflicts in shared
// atomics, and correct kernels whose blocks compute other parts of the output than the oracle's
// (NVIDIA's diagonal transpose, a 64 x 64 tile per block, grid-stride loops). Each must get its
// GPU verdict and score at every seed, not at most of them: graded here at three seeds each.
TEST_CASE("every simulator-fidelity fixture gets the GPU's verdict at each of several seeds") {
    const auto scratch = std::filesystem::temp_directory_path() /
                         ("grader-sim-fidelity-" + std::to_string(::getpid()));
    std::filesystem::create_directories(scratch);
    int graded = 0;
    for (const auto& folder : fixture_folders("sim_fidelity")) {
        const std::string name = folder.filename().string();
        const YAML::Node expected = YAML::LoadFile((folder / "expected.yaml").string());
        for (const std::uint64_t seed : {20261202ull, 7ull, 1234567ull}) {
            CAPTURE(name);
            CAPTURE(seed);
            const auto report_file = scratch / (name + "-" + std::to_string(seed) + ".json");
            const GraderRun run = run_grader(
                {"grade", folder.string(), "--exercise", exercise_dir(expected).string(),
                 "--backend", "sim", "--format", "json", "--output", report_file.string(), "--seed",
                 std::to_string(seed), "--timeout", "20", "--quiet"},
                report_file);
            CAPTURE(run.output);
            ++graded;
            std::cout << "sim_fidelity/" << name << " seed " << seed << ": "
                      << run.report.value("verdict", "?") << " in "
                      << run.report.value("wall_seconds", 0.0)
                      << " s: " << run.report.value("summary", "") << std::endl;
            check_grade(run, expected, "sim");
        }
    }
    std::filesystem::remove_all(scratch);
    CHECK(graded >= 3 * 17);
}
