// The grader executable as a user meets it, on a machine without a GPU (as CI is): help,
// version, exit statuses, and a report file written in every outcome.

#include <doctest/doctest.h>

#include <fstream>

#include "grader_run.hpp"

using namespace grader::testing;

namespace {

const std::filesystem::path kFixtures = std::filesystem::path(GRADER_FIXTURES_DIR);
const std::filesystem::path kSource = std::filesystem::path(GRADER_SOURCE_DIR);

std::filesystem::path scratch(const std::string& name) {
    const auto dir = std::filesystem::temp_directory_path() / "grader-test-cli";
    std::filesystem::create_directories(dir);
    return dir / name;
}

bool has_gpu_driver() { return std::filesystem::exists("/dev/nvidiactl"); }

}  // namespace

TEST_CASE("--help names every subcommand and --version prints the version") {
    const GraderRun help = run_grader({"--help"});
    CHECK(help.exit_code == 0);
    CHECK(help.output.find("grade") != std::string::npos);
    CHECK(help.output.find("sweep") != std::string::npos);
    CHECK(help.output.find("__worker") == std::string::npos);
    const GraderRun version = run_grader({"--version"});
    CHECK(version.exit_code == 0);
    CHECK(version.output.find("grader 0.") != std::string::npos);
}

TEST_CASE("a usage error exits 2 and says what was wrong") {
    const GraderRun no_folder = run_grader({"grade", "/no/such/folder"});
    CHECK(no_folder.exit_code == 2);
    CHECK(no_folder.output.find("/no/such/folder") != std::string::npos);
    const GraderRun bad_format =
        run_grader({"grade", (kSource / "student").string(), "--format", "pdf"});
    CHECK(bad_format.exit_code == 2);
    CHECK(bad_format.output.find("pdf") != std::string::npos);
}

TEST_CASE("a broken exercise file is the instructor's error: exit 2 with file, line and field") {
    const auto exercises = kFixtures / "exercises";
    REQUIRE(std::filesystem::exists(exercises));
    bool tried = false;
    for (const auto& entry : std::filesystem::directory_iterator(exercises)) {
        if (!std::filesystem::exists(entry.path() / "exercise.yaml") ||
            entry.path().filename() == "valid_copy") {
            continue;
        }
        tried = true;
        CAPTURE(entry.path().string());
        const GraderRun run = run_grader(
            {"grade", (kSource / "student").string(), "--exercise", entry.path().string()});
        CHECK(run.exit_code == 2);
        CHECK(run.output.find("exercise.yaml:") != std::string::npos);
    }
    CHECK(tried);
}

TEST_CASE("without a GPU the example is ungradable, exit 3, and the report still says why") {
    if (has_gpu_driver()) {
        MESSAGE("this machine has a GPU driver: the no-GPU path is not exercised here");
        return;
    }
    const auto report = scratch("student.json");
    const GraderRun run = run_grader({"grade", (kSource / "student").string(), "--format", "json",
                                      "--output", report.string(), "--quiet"},
                                     report);
    CHECK(run.exit_code == 3);
    REQUIRE(run.report.is_object());
    CHECK(run.report["verdict"] == "ungradable");
    CHECK(run.report["summary"].get<std::string>().find("GPU is needed for timing") !=
          std::string::npos);
    // What needs no GPU still ran: the answers, the vetting, the compile, the signature.
    CHECK((*find_check(run.report, "submission_file"))["passed"] == true);
    CHECK((*find_check(run.report, "compile_abi"))["passed"] == true);
    CHECK((*find_check(run.report, "predicted_degrees"))["passed"] == true);
}

TEST_CASE("without a GPU a compile error, a wrong signature and a forbidden include are reported") {
    if (has_gpu_driver()) {
        return;
    }
    struct Case {
        const char* fixture;
        const char* expected;
    };
    for (const Case& c : {Case{"compile_error", "probe.cu(14)"},
                          Case{"wrong_signature", "parameter 3"},
                          Case{"forbidden_include", "not allowed"},
                          Case{"missing_probe", "probe.cu"}}) {
        CAPTURE(c.fixture);
        const auto report = scratch(std::string(c.fixture) + ".json");
        const GraderRun run =
            run_grader({"grade", (kFixtures / "submissions" / c.fixture).string(), "--format",
                        "json", "--output", report.string(), "--quiet"},
                       report);
        CHECK(run.exit_code == 3);
        REQUIRE(run.report.is_object());
        const auto* check = find_check(run.report, "compile_abi");
        REQUIRE(check);
        CHECK((*check)["passed"] == false);
        CHECK(check_text(*check).find(c.expected) != std::string::npos);
        CHECK(run.report_text.find("root:x:") == std::string::npos);
    }
}

TEST_CASE("a malformed answers file is the student's, named by file and line") {
    if (has_gpu_driver()) {
        return;
    }
    const auto report = scratch("malformed.json");
    const GraderRun run =
        run_grader({"grade", (kFixtures / "submissions/malformed_yaml").string(), "--format",
                    "json", "--output", report.string(), "--quiet"},
                   report);
    REQUIRE(run.report.is_object());
    const auto* check = find_check(run.report, "submission_file");
    REQUIRE(check);
    CHECK((*check)["passed"] == false);
    CHECK(check_text(*check).find("submission.yaml, line 5") != std::string::npos);
}

TEST_CASE("every report format is written, also when grading is ungradable") {
    for (const std::string format : {"text", "json", "markdown", "gradescope", "prairielearn", "junit"}) {
        CAPTURE(format);
        const auto report = scratch("every-format." + format);
        const GraderRun run = run_grader({"grade", (kSource / "student").string(), "--format",
                                          format, "--output", report.string(), "--quiet"});
        CHECK((run.exit_code == 0 || run.exit_code == 3));
        REQUIRE(std::filesystem::exists(report));
        CHECK(std::filesystem::file_size(report) > 100);
    }
}
