// Isolation on a real GPU: a kernel that faults, one that hangs and one that traps (a sticky
// error: its context is lost) graded in one batch between two correct ones, one after another on
// one GPU. The correct ones' verdicts and ratios are those each gets graded alone with the same
// seed; the broken ones fail as the student's. Skipped (exit 77) without a GPU.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "cuda/driver_api.hpp"
#include "cuda/resources.hpp"
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

std::map<std::pair<std::string, int>, double> ratios(const nlohmann::json& report) {
    std::map<std::pair<std::string, int>, double> found;
    for (const auto& row : report["rows"]) {
        if (row.contains("ratio") && row["ratio"].is_number()) {
            found[{row.value("kernel", ""), row.value("stride", 0)}] = row["ratio"].get<double>();
        }
    }
    return found;
}

}  // namespace

TEST_CASE("a faulting, a hanging and a trapping kernel between two correct ones change nothing") {
    skip_without_gpu();
    const std::filesystem::path root = scratch_root("gpu_isolation");
    const std::filesystem::path class_dir = root / "class";
    const std::filesystem::path fixtures = GRADER_FIXTURES_DIR;
    // In folder order, which is the batch's order with one job.
    const std::vector<std::pair<std::string, std::string>> students = {
        {"1-correct", "submissions/correct"},
        {"2-faults", "submissions/kernel_faults"},
        {"3-hangs", "submissions/never_ends"},
        {"4-traps", "submissions/traps"},
        {"5-correct", "submissions/correct_four_accumulators"},
    };
    for (const auto& entry : students) {
        const auto& name = entry.first;
        const auto& fixture = entry.second;
        std::filesystem::create_directories(class_dir / name);
        for (const auto& file : std::filesystem::directory_iterator(fixtures / fixture)) {
            if (file.path().filename() != "expected.yaml") {
                std::filesystem::copy_file(file.path(), class_dir / name / file.path().filename());
            }
        }
    }
    const auto out = root / "out";
    const GraderRun batch = run_grader(
        {"batch", class_dir.string(), "--output", out.string(), "--jobs", "1", "--timeout", "5"});
    CAPTURE(batch.output);
    // Through the batch's device server, which a fault or a hang ends and the batch starts
    // again: the correct grades and the faulting ones ended sessions of it (a grade that made a
    // context of its own would pass this test without testing the server).
    const std::smatch served = [&batch] {
        static const std::regex line(R"(GPU 0's device server: (\d+) grades held the GPU)");
        std::smatch match;
        std::regex_search(batch.output, match, line);
        return match;
    }();
    REQUIRE(served.size() == 2);
    CHECK(std::stoi(served[1].str()) >= 3);
    CHECK(batch.output.find("could not start") == std::string::npos);
    for (const auto& student : students) {
        const auto& name = student.first;
        CAPTURE(name);
        const auto report_file = out / name / "report.json";
        REQUIRE(std::filesystem::exists(report_file));
        const nlohmann::json in_batch = nlohmann::json::parse(read_text(report_file));
        const bool correct = name.find("correct") != std::string::npos;
        std::cout << name << ": batch " << in_batch.value("verdict", "?") << std::endl;
        if (!correct) {
            // The student's failure, never the machine's.
            CHECK(in_batch.value("verdict", "") == "fail");
            if (name == "3-hangs") {
                // Stopped at 4 times the reference's time for the same launches and the grade's
                // 1.5 s margin (grade/limits.hpp), not at the 5 s of --timeout: the GPU waits a
                // second and a half for a loop that never ends.
                const nlohmann::json& interruption = in_batch["interruption"];
                const std::string stopped =
                    interruption.is_object() ? interruption.value("message", "") : "";
                CAPTURE(stopped);
                CHECK(stopped.find("within the time limit of 1.5 s") != std::string::npos);
                CHECK(stopped.find("4 times the reference probe's") != std::string::npos);
                CHECK(in_batch.value("wall_seconds", 99.0) < 4.0);
                // Its hold on the GPU ends where its worker was stopped, and is recorded so.
                const nlohmann::json& environment = in_batch["environment"];
                const double from = environment.value("gpu_held_from", 0.0);
                const double until = environment.value("gpu_held_until", 0.0);
                CHECK(from > 0.0);
                CHECK(until >= from);
                CHECK(until - from < 4.0);
            }
            continue;
        }
        CHECK(in_batch.value("verdict", "") == "pass");
        const auto alone_file = root / (name + "-alone.json");
        const GraderRun alone =
            run_grader({"grade", (class_dir / name).string(), "--format", "json", "--output",
                        alone_file.string(), "--seed", std::to_string(in_batch.value("seed", 0ull)),
                        "--timeout", "5", "--quiet"},
                       alone_file);
        CHECK(alone.report.value("verdict", "") == in_batch.value("verdict", "?"));
        const auto batch_ratios = ratios(in_batch);
        const auto alone_ratios = ratios(alone.report);
        CHECK(batch_ratios.size() == alone_ratios.size());
        for (const auto& batch_ratio : batch_ratios) {
            const auto& key = batch_ratio.first;
            const auto& ratio = batch_ratio.second;
            const auto other = alone_ratios.find(key);
            REQUIRE(other != alone_ratios.end());
            CAPTURE(key.first);
            CAPTURE(key.second);
            CAPTURE(ratio);
            CAPTURE(other->second);
            std::cout << "  " << key.first << " stride " << key.second << ": batch " << ratio
                      << ", alone " << other->second << std::endl;
            // The timing's own spread across grades is under 0.5%; 2% is far from both.
            CHECK(std::abs(ratio - other->second) <= 0.02 * other->second);
        }
    }
}
