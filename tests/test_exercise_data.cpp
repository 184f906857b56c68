// An exercise is data: Part 1 with every id and name changed (tests/fixtures/renamed_probe) grades
// exactly as Part 1 does, submission by submission, at the same seed on the simulator. A writer or
// a check that keyed on one of Part 1's ids (a check called "sentence", a kernel called
// "reference", a file called probe.cu) would grade the renamed copy differently.

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "exercise/exercise.hpp"
#include "grader_run.hpp"
#include "test_paths.hpp"

using namespace grader::testing;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kSource = GRADER_SOURCE_DIR;
const fs::path kFixtures = GRADER_FIXTURES_DIR;
const fs::path kRenamed = kFixtures / "renamed_probe";

// Names inside texts: the renamed exercise's on the left, Part 1's on the right.
const std::vector<std::pair<std::string, std::string>> kNames = {
    {"stridedProbe", "probeSharedStride"}, {"lessonProbe", "probeSharedStride"},
    {"stride_probe.h", "day15_probe.h"},   {"kernel.cu", "probe.cu"},
    {"answers.yaml", "submission.yaml"},   {"guessed_degree", "predicted_degree"},
    {"timed_ratio", "measured_ratio"},     {"the probe renamed", "reference probe"},
};

// Whole values that are ids: kernels, inputs and checks.
const std::vector<std::pair<std::string, std::string>> kIds = {
    {"lesson", "reference"},
    {"c_answers", "submission_file"},
    {"c_builds", "compile_abi"},
    {"c_ones", "accumulator"},
    {"c_secret", "hidden_input"},
    {"c_guesses", "predicted_degrees"},
    {"c_own_times", "measured_ratios"},
    {"c_order", "ordering"},
    {"c_same_as_lesson", "consistency"},
    {"c_counted", "counted_degrees"},
    {"c_why", "sentence"},
};

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

std::string to_part1_names(std::string text) {
    for (const auto& [renamed, original] : kNames) {
        text = replaced(text, renamed, original);
    }
    return text;
}

// The renamed report in Part 1's names, without what differs between any two runs.
void to_part1(json& value) {
    if (value.is_string()) {
        std::string text = value.get<std::string>();
        for (const auto& [renamed, original] : kIds) {
            if (text == renamed) {
                text = original;
            }
        }
        value = to_part1_names(text);
    } else if (value.is_structured()) {
        for (auto& item : value) {
            to_part1(item);
        }
    }
}

void drop_run_specific(json& report) {
    for (const char* key : {"exercise", "submission", "wall_seconds", "stage_seconds"}) {
        report.erase(key);
    }
    json& environment = report["environment"];
    std::vector<std::string> timed;
    for (const auto& item : environment.items()) {
        if (item.key().find("seconds") != std::string::npos ||
            item.key().rfind("gpu_held", 0) == 0) {
            timed.push_back(item.key());
        }
    }
    for (const auto& key : timed) {
        environment.erase(key);
    }
}

// A copy of a Part 1 submission folder as the renamed exercise asks for it.
fs::path renamed_copy(const fs::path& folder, const fs::path& into) {
    fs::create_directories(into);
    const std::vector<std::pair<std::string, std::string>> files = {
        {"probe.cu", "kernel.cu"}, {"submission.yaml", "answers.yaml"}};
    for (const auto& [original, renamed] : files) {
        if (!fs::exists(folder / original)) {
            continue;
        }
        std::string text = read_text(folder / original);
        for (const auto& [renamed_name, original_name] : kNames) {
            if (original_name != "reference probe") {
                text = replaced(text, original_name, renamed_name);
            }
        }
        write_text(into / renamed, text);
    }
    return into;
}

json graded(const fs::path& folder, const std::vector<std::string>& exercise, const fs::path& out) {
    std::vector<std::string> args{"grade",  folder.string(), "--backend", "sim",      "--seed",
                                  "7",      "--format",      "json",      "--output", out.string(),
                                  "--quiet"};
    args.insert(args.end(), exercise.begin(), exercise.end());
    const GraderRun run = run_grader(args, out, kNoGpu);
    INFO(run.output);
    REQUIRE(run.report.is_object());
    json report = run.report;
    report["exit_code"] = run.exit_code;
    return report;
}

}  // namespace

TEST_CASE("the renamed starter example is Part 1's, renamed") {
    // The fixture's own example must stay Part 1's example under the renaming, or the sentence
    // flag compared below would compare different sentences.
    CHECK(read_text(kRenamed / "example" / "kernel.cu") ==
          read_text(renamed_copy(kSource / "student" / "example",
                                 scratch_root("exercise_data") / "example") /
                    "kernel.cu"));
    CHECK(read_text(kRenamed / "example" / "answers.yaml") ==
          read_text(scratch_root("exercise_data") / "example" / "answers.yaml"));
}

TEST_CASE("Part 1 with every id and name changed grades exactly as Part 1") {
    const fs::path scratch = scratch_root("exercise_data");
    const std::vector<std::pair<fs::path, std::string>> submissions = {
        {kSource / "student" / "example", "pass"},
        {kFixtures / "submissions" / "skips_half_the_reads", "fail"},  // its output check
        {kFixtures / "submissions" / "compile_error", "fail"},  // stops before the kernel runs
        {kFixtures / "submissions" / "missing_answers", "fail"},
    };
    for (const auto& [folder, verdict] : submissions) {
        const std::string name = folder.filename().string();
        CAPTURE(name);
        json part1 = graded(folder, {}, scratch / (name + "-part1.json"));
        json renamed =
            graded(renamed_copy(folder, scratch / ("renamed-" + name)),
                   {"--exercise", kRenamed.string()}, scratch / (name + "-renamed.json"));
        CHECK(renamed["exercise"]["id"] == "renamed-probe");
        to_part1(renamed);
        drop_run_specific(part1);
        drop_run_specific(renamed);
        CHECK(renamed.dump(1) == part1.dump(1));
        CHECK(part1["verdict"] == verdict);
    }
}

TEST_CASE("the modeled ratios Part 1 keeps for the copy flag are the simulator's own") {
    const grader::Exercise exercise =
        grader::load_exercise(kSource / "exercises" / "day15-bank-conflicts");
    REQUIRE_FALSE(exercise.simulator.modeled_ratios.empty());
    const fs::path scratch = scratch_root("exercise_data");
    fs::create_directories(scratch);
    const json report =
        graded(kSource / "student" / "example", {}, scratch / "modeled-ratios.json");
    for (const auto& [stride, kept] : exercise.simulator.modeled_ratios) {
        const int shown = stride;  // a named copy: clang captures no binding
        CAPTURE(shown);
        bool found = false;
        for (const json& row : report["rows"]) {
            if (row["kernel"] == "reference" && row["stride"] == stride) {
                found = true;
                // As `grader grade` prints it: two decimals.
                CHECK(std::abs(row["ratio"].get<double>() - kept) <= 0.005);
            }
        }
        CHECK(found);
    }
}
