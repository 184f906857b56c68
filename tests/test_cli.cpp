// The grader executable as a user meets it, on a machine without a GPU (as CI is): help,
// version, exit statuses, and a report file written in every outcome.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "exercise_mutations.hpp"
#include "grader_run.hpp"
#include "test_paths.hpp"

using namespace grader::testing;

namespace {

const std::filesystem::path kFixtures = std::filesystem::path(GRADER_FIXTURES_DIR);
const std::filesystem::path kSource = std::filesystem::path(GRADER_SOURCE_DIR);

std::filesystem::path scratch(const std::string& name) {
    const auto dir = scratch_root("cli");
    std::filesystem::create_directories(dir);
    return dir / name;
}

}  // namespace

TEST_CASE("--help names every subcommand and --version prints the version") {
    const GraderRun help = run_grader({"--help"});
    CHECK(help.exit_code == 0);
    CHECK(help.output.find("grade") != std::string::npos);
    CHECK(help.output.find("sweep") != std::string::npos);
    CHECK(help.output.find("explain") != std::string::npos);
    CHECK(help.output.find("__worker") == std::string::npos);
    CHECK(help.output.find("__launch") == std::string::npos);
    const GraderRun version = run_grader({"--version"});
    CHECK(version.exit_code == 0);
    CHECK(version.output.find("grader 0.") != std::string::npos);
}

TEST_CASE("grader help SUBCOMMAND and -V answer as --help and --version do") {
    const GraderRun help = run_grader({"help", "grade"});
    CHECK(help.exit_code == 0);
    CHECK(help.output.find("Usage: grader grade [OPTIONS] SUBMISSION") != std::string::npos);
    CHECK(help.output == run_grader({"grade", "--help"}).output);
    const GraderRun all = run_grader({"help"});
    CHECK(all.exit_code == 0);
    CHECK(all.output == run_grader({"--help"}).output);
    const GraderRun unknown = run_grader({"help", "grdae"});
    CHECK(unknown.exit_code == 2);
    CHECK(unknown.output.find("did you mean 'grade'?") != std::string::npos);
    const GraderRun version = run_grader({"-V"});
    CHECK(version.exit_code == 0);
    CHECK(version.output == run_grader({"--version"}).output);
}

TEST_CASE("a number that is no count or no time limit is refused in a line, with what to give") {
    const std::string example = (kSource / "student" / "example").string();
    for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
             {{"batch", example, "--jobs", "0"},
              "--jobs: 0 is not a number of jobs; give a whole number, 1 or more"},
             {{"batch", example, "--jobs", "-3"}, "-3 is not a number of jobs"},
             {{"batch", example, "--jobs", "2.5"}, "2.5 is not a number of jobs"},
             {{"batch", example, "--timeout", "-1"},
              "--timeout: -1 is not a time limit; give seconds above 0, e.g. 30"},
             {{"grade", example, "--timeout", "-1"}, "-1 is not a time limit"},
             {{"grade", example, "--timeout", "0"}, "0 is not a time limit"},
             {{"grade", example, "--timeout", "inf"}, "inf is not a time limit"},
             {{"grade", example, "--device", "-1"}, "-1 is not a GPU index; give 0 or more"},
         }) {
        const std::string last = args.back();  // a named copy: clang captures no binding
        CAPTURE(last);
        const GraderRun run = run_grader(args, {}, kNoGpu);
        CHECK(run.exit_code == 2);
        CHECK(run.output.find(says) != std::string::npos);
        // Said in a line or two: never CLI11's range up to 1.8e308, 300 digits long.
        CHECK(run.output.size() < 300);
        CHECK(run.output.find("179769313") == std::string::npos);
    }
}

TEST_CASE("explain on another exercise's folder gives the command for it, not \"not found\"") {
    const auto folder = (kSource / "student" / "padding" / "example").string();
    const GraderRun run = run_grader({"explain", folder}, {}, kNoGpu);
    CHECK(run.exit_code == 2);
    CHECK(run.output.find("has no probe.cu but has the files of exercise day15-padding; explain it "
                          "with:\n  grader explain " +
                          folder + " --exercise day15-padding") != std::string::npos);
    CHECK(run.output.find("was not found") == std::string::npos);
}

TEST_CASE("a file handed in under another name is named with what was meant") {
    struct Case {
        const char* from;
        const char* to;
    };
    for (const Case& misnamed :
         {Case{"probe.cu", "Probe.cu"}, Case{"probe.cu", "probe.cu.txt"},
          Case{"probe.cu", "probe (1).cu"}, Case{"submission.yaml", "submission.yml"},
          Case{"submission.yaml", "Submission.YAML"}}) {
        CAPTURE(misnamed.to);
        const auto folder = scratch(std::string("misnamed-") +
                                    std::to_string(std::hash<std::string>{}(misnamed.to)));
        std::filesystem::remove_all(folder);
        std::filesystem::create_directories(folder);
        for (const char* file : {"probe.cu", "submission.yaml"}) {
            std::filesystem::copy_file(
                kSource / "student" / "example" / file,
                folder / (file == std::string(misnamed.from) ? misnamed.to : file));
        }
        const auto report = scratch("misnamed.json");
        const GraderRun run = run_grader({"grade", folder.string(), "--backend", "sim", "--format",
                                          "json", "-o", report.string()},
                                         report, kNoGpu);
        CHECK(run.exit_code == 1);
        CHECK(run.report["folder_problem"].value("kind", "") == "misnamed_file");
        CHECK(run.report["diagnosis"].value("cause", "") == "misnamed_file");
        CHECK(run.report.value("summary", "") ==
              std::string("fail: the folder holds ") + misnamed.to + ", not " + misnamed.from +
                  ": rename " + misnamed.to + " to " + misnamed.from +
                  " (file names are exact, case included)");
        // The check that missed the file says so too, where the student reads it.
        CHECK(run.report.dump().find(std::string("the folder holds ") + misnamed.to +
                                     ": did you mean it? Rename it " + misnamed.from) !=
              std::string::npos);
    }
}

TEST_CASE("a student id left as the README's placeholder is named, not passed silently") {
    const auto folder = scratch("placeholder-id");
    std::filesystem::remove_all(folder);
    std::filesystem::create_directories(folder);
    std::filesystem::copy_file(kSource / "student" / "example" / "probe.cu", folder / "probe.cu");
    std::string answers = read_text(kSource / "student" / "example" / "submission.yaml");
    answers.replace(answers.find("\"example-student\""), 17, "\"your-id\"");
    write_text(folder / "submission.yaml", answers);
    const auto report = scratch("placeholder-id.json");
    const GraderRun run = run_grader(
        {"grade", folder.string(), "--backend", "sim", "--format", "json", "-o", report.string()},
        report, kNoGpu);
    CHECK(run.exit_code == 1);
    CHECK(run.report.value("summary", "").find("still the placeholder 'your-id'") !=
          std::string::npos);
    CHECK(run.report["diagnosis"].value("cause", "") == "blank_answers");
    // The slip costs the answers' point and nothing of the kernel's.
    CHECK(run.report.value("score", 0.0) == doctest::Approx(14.0));
}

TEST_CASE("a usage error exits 2 and says what was wrong") {
    const GraderRun no_folder = run_grader({"grade", "/no/such/folder"});
    CHECK(no_folder.exit_code == 2);
    CHECK(no_folder.output.find("/no/such/folder") != std::string::npos);
    const GraderRun bad_format =
        run_grader({"grade", (kSource / "student" / "example").string(), "--format", "pdf"});
    CHECK(bad_format.exit_code == 2);
    CHECK(bad_format.output.find("pdf") != std::string::npos);
}

TEST_CASE("a report that cannot be written is a usage error (exit 2), said before the grade") {
    const auto file = scratch("output-parent-is-a-file");
    { std::ofstream(file) << "a file\n"; }
    for (const auto& output :
         {file / "report.json", std::filesystem::path("/no/such/dir/r.json")}) {
        CAPTURE(output);
        const GraderRun run = run_grader({"grade", (kSource / "student" / "example").string(),
                                          "--format", "json", "--output", output.string()});
        CHECK(run.exit_code == 2);
        CHECK(run.output.find("cannot be written by this user") != std::string::npos);
        CHECK(run.output.find("internal error") == std::string::npos);
    }
}

TEST_CASE("no writable temporary folder is the machine's fault: exit 3, saying what to do") {
    // A read-only root without --tmpfs /tmp in Docker; here, TMPDIR naming a file or nothing.
    const auto not_a_folder = scratch("tmpdir-is-a-file");
    { std::ofstream(not_a_folder) << "a file\n"; }
    for (const std::string& tmpdir : {not_a_folder.string(), std::string("/no/such/tmpdir")}) {
        CAPTURE(tmpdir);
        const auto report = scratch("no-tmpdir.json");
        const GraderRun run = run_grader({"grade", (kSource / "student" / "example").string(),
                                          "--format", "json", "--output", report.string()},
                                         {}, {"TMPDIR=" + tmpdir});
        CHECK(run.exit_code == 3);
        CHECK(run.output.find("internal error") == std::string::npos);
        REQUIRE(std::filesystem::exists(report));
        std::ifstream in(report);
        const std::string text((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
        CHECK(text.find("cannot make its work folder") != std::string::npos);
        CHECK(text.find("--tmpfs /tmp") != std::string::npos);
        CHECK(text.find("\"students_fault\": false") != std::string::npos);
    }
}

TEST_CASE("no NVRTC is the machine's fault: ungradable, naming the library and what to install") {
    // The grader loads NVRTC on first use: without it, it starts, and the grade says why it
    // could not compile (GRADER_LIBNVRTC stands for a machine whose toolkit lacks the library).
    const auto report = scratch("no-nvrtc.json");
    std::vector<std::string> environment = kNoGpu;
    environment.push_back("GRADER_LIBNVRTC=/nonexistent/libnvrtc.so.13");
    const GraderRun run = run_grader({"grade", (kSource / "student" / "example").string(),
                                      "--format", "json", "--output", report.string()},
                                     report, environment);
    CHECK(run.exit_code == 3);
    REQUIRE(run.report.is_object());
    CHECK(run.report["verdict"] == "ungradable");
    const std::string text = run.report.dump();
    CHECK(text.find("NVRTC could not be loaded") != std::string::npos);
    CHECK(text.find("/nonexistent/libnvrtc.so.13") != std::string::npos);
    CHECK(text.find("install the CUDA toolkit's NVRTC") != std::string::npos);
    CHECK(run.report["interruption"]["students_fault"] == false);
    CHECK(text.find("has..") == std::string::npos);  // one full stop where the reason has its own
    CHECK(run.output.find("internal error") == std::string::npos);
    // The commands that never compile start without it.
    const GraderRun help = run_grader({"--version"}, {}, environment);
    CHECK(help.exit_code == 0);
}

TEST_CASE("a typo'd subcommand or flag suggests the right one") {
    const GraderRun subcommand = run_grader({"grdae", "student/example"});
    CHECK(subcommand.exit_code == 2);
    CHECK(subcommand.output.find("'grdae' is not a subcommand") != std::string::npos);
    CHECK(subcommand.output.find("did you mean 'grade'?") != std::string::npos);
    CHECK(subcommand.output.find("A subcommand is required") == std::string::npos);
    const GraderRun batch = run_grader({"bacth"});
    CHECK(batch.output.find("did you mean 'batch'?") != std::string::npos);
    const GraderRun flag = run_grader(
        {"grade", (kSource / "student" / "example").string(), "--exercice", "day15-padding"});
    CHECK(flag.exit_code == 2);
    CHECK(flag.output.rfind("grader: '--exercice' is not an option of 'grade'; did you mean "
                            "'--exercise'?",
                            0) == 0);
    CHECK(flag.output.find("not expected") == std::string::npos);
    // The wrong flag is named first even where the folder is wrong too.
    const GraderRun both = run_grader({"grade", "/no/such/folder", "--fromat", "json"});
    CHECK(both.exit_code == 2);
    CHECK(both.output.rfind("grader: '--fromat' is not an option of 'grade'; did you mean "
                            "'--format'?",
                            0) == 0);
    const GraderRun unknown = run_grader({"grade", "student/example", "--xyzzy"});
    CHECK(unknown.exit_code == 2);
    CHECK(unknown.output.find("'--xyzzy' is not an option of 'grade'") != std::string::npos);
    CHECK(unknown.output.find("did you mean") == std::string::npos);
    // Nothing near: no suggestion rather than a wrong one.
    const GraderRun far = run_grader({"frobnicate"});
    CHECK(far.exit_code == 2);
    CHECK(far.output.find("did you mean") == std::string::npos);
}

TEST_CASE("--format with an unknown name lists the formats there are") {
    const GraderRun xml =
        run_grader({"grade", (kSource / "student" / "example").string(), "--format", "xml"});
    CHECK(xml.exit_code == 2);
    for (const char* format : {"text", "json", "markdown", "gradescope", "prairielearn", "junit"}) {
        CAPTURE(format);
        CHECK(xml.output.find(format) != std::string::npos);
    }
}

TEST_CASE("help says grader, not the binary's path, and shows defaults and an example") {
    for (const char* command : {"grade", "batch", "sweep", "explain", "merge"}) {
        CAPTURE(command);
        const GraderRun help = run_grader({command, "--help"});
        CHECK(help.exit_code == 0);
        CHECK(help.output.find(std::string("grader ") + command) != std::string::npos);
        CHECK(help.output.find("harness/cli") == std::string::npos);
        CHECK(help.output.find("Example") != std::string::npos);
        // Its own example, not the top level's.
        CHECK(help.output.find(std::string("\n  grader ") + command + " ") != std::string::npos);
        CHECK(help.output.find("default") != std::string::npos);
    }
    const GraderRun top = run_grader({"--help"});
    CHECK(top.output.find("harness/cli") == std::string::npos);
    CHECK(top.output.find("Usage: grader") != std::string::npos);
}

TEST_CASE("a bundled exercise is found by its id; an unknown id lists the ids there are") {
    const GraderRun unknown = run_grader(
        {"grade", (kSource / "student" / "example").string(), "--exercise", "day15-padd"});
    CHECK(unknown.exit_code == 2);
    CHECK(unknown.output.find("day15-padding") != std::string::npos);
    CHECK(unknown.output.find("day15-bank-conflicts") != std::string::npos);
    // The id resolves: the starter kit of Part 2 is graded as Part 2 (its answers check names
    // Part 2's blanks), not refused as a missing folder.
    const auto report = scratch("by-id.json");
    const GraderRun by_id =
        run_grader({"grade", (kSource / "student" / "padding").string(), "--exercise",
                    "day15-padding", "--backend", "sim", "--format", "json", "-o", report.string()},
                   report, kNoGpu);
    CHECK(by_id.exit_code != 2);
    REQUIRE(by_id.report.contains("exercise"));
    CHECK(by_id.report["exercise"].value("id", "") == "day15-padding");
    // Part 2 is timed on the simulator by its modeled cost, global memory's sectors included.
    CHECK(by_id.output.find("Kernels (% of copy, no transpose, modeled)") != std::string::npos);
}

TEST_CASE("a Part 2 folder graded as Part 1 says so and gives the exact command") {
    const auto folder = (kSource / "student" / "padding" / "example").string();
    const GraderRun run = run_grader({"grade", folder, "--backend", "sim"}, {}, kNoGpu);
    CHECK(run.exit_code == 1);
    CHECK(run.output.find("has the files of exercise day15-padding") != std::string::npos);
    CHECK(run.output.find("grader grade " + folder + " --exercise day15-padding") !=
          std::string::npos);
    // And the reverse: Part 1's folder under Part 2.
    const auto probe = (kSource / "student" / "example").string();
    const GraderRun reverse =
        run_grader({"grade", probe, "--exercise", "day15-padding", "--backend", "sim"}, {}, kNoGpu);
    CHECK(reverse.output.find("grader grade " + probe + " --exercise day15-bank-conflicts") !=
          std::string::npos);
    // The report itself says so (Gradescope and the class page read it, not the terminal).
    const auto report = scratch("other-exercise.json");
    const GraderRun graded =
        run_grader({"grade", folder, "--backend", "sim", "--format", "json", "-o", report.string()},
                   report, kNoGpu);
    CHECK(graded.report.value("summary", "") ==
          "fail: this folder holds transpose.cu, the kernel file of exercise day15-padding, and "
          "no probe.cu: it is another exercise's work; grade it with: grader grade " +
              folder + " --exercise day15-padding");
    CHECK(graded.report["folder_problem"].value("kind", "") == "other_exercise");
    CHECK(graded.report["missing_files"] == nlohmann::json::array({"probe.cu"}));
}

TEST_CASE("an empty folder and files one folder down are each named with what to do") {
    const auto empty = scratch("empty-submission");
    std::filesystem::remove_all(empty);
    std::filesystem::create_directories(empty);
    const auto report = scratch("folder-problem.json");
    const GraderRun nothing = run_grader(
        {"grade", empty.string(), "--backend", "sim", "--format", "json", "-o", report.string()},
        report, kNoGpu);
    CHECK(nothing.exit_code == 1);
    CHECK(nothing.report.value("summary", "") ==
          "fail: the folder is empty: hand in probe.cu and submission.yaml in it");

    const auto zipped = scratch("zipped-submission");
    std::filesystem::remove_all(zipped);
    std::filesystem::create_directories(zipped / "day15");
    for (const char* file : {"probe.cu", "submission.yaml"}) {
        std::filesystem::copy_file(kSource / "student" / "example" / file, zipped / "day15" / file);
    }
    const GraderRun down = run_grader(
        {"grade", zipped.string(), "--backend", "sim", "--format", "json", "-o", report.string()},
        report, kNoGpu);
    CHECK(down.exit_code == 1);
    CHECK(down.report.value("summary", "")
              .rfind("fail: the files are one folder down, in day15/: hand in probe.cu and "
                     "submission.yaml themselves",
                     0) == 0);
    CHECK(down.report["folder_problem"].value("detail", "") == "day15");
}

TEST_CASE("batching an empty class warns that the class outputs are empty") {
    const auto empty = scratch("empty-class");
    std::filesystem::remove_all(empty);
    std::filesystem::create_directories(empty);
    const auto output = scratch("empty-class-out");
    std::filesystem::remove_all(output);
    const GraderRun run = run_grader(
        {"batch", empty.string(), "-o", output.string(), "--backend", "sim"}, {}, kNoGpu);
    CHECK(run.exit_code == 0);
    CHECK(run.output.find("holds no submission folder") != std::string::npos);
}

TEST_CASE("a batch resumed into another exercise's output grades that one, and refuses another") {
    const auto empty = scratch("empty-class-2");
    std::filesystem::create_directories(empty);
    const auto output = scratch("other-exercise-out");
    std::filesystem::remove_all(output);
    std::filesystem::create_directories(output);
    write_text(output / "summary.json", R"({"exercise_id": "day15-padding"})");
    // Without --exercise: the run's own (it warned before, and graded the default into it).
    const GraderRun run =
        run_grader({"batch", empty.string(), "-o", output.string(), "--backend", "sim", "--resume"},
                   {}, kNoGpu);
    CHECK(run.exit_code == 0);
    CHECK(run.output.find("graded exercise day15-padding: resumed as that exercise") !=
          std::string::npos);
    // Another exercise than the run's: refused in one line.
    const GraderRun other = run_grader({"batch", empty.string(), "-o", output.string(), "--backend",
                                        "sim", "--resume", "--exercise", "day15-bank-conflicts"},
                                       {}, kNoGpu);
    CHECK(other.exit_code == 2);
    CHECK(other.output.find("graded exercise day15-padding, not day15-bank-conflicts as "
                            "--exercise says") != std::string::npos);
    // The same exercise: nothing to say.
    write_text(output / "summary.json", R"({"exercise_id": "day15-bank-conflicts"})");
    const GraderRun same =
        run_grader({"batch", empty.string(), "-o", output.string(), "--backend", "sim", "--resume"},
                   {}, kNoGpu);
    CHECK(same.exit_code == 0);
    CHECK(same.output.find("graded exercise") == std::string::npos);
}

TEST_CASE("a broken exercise file is the instructor's error: exit 2 with file, line and field") {
    for (const ExerciseMutation& mutation : exercise_mutations()) {
        CAPTURE(mutation.name);
        const std::filesystem::path exercise =
            write_mutated_exercise(mutation, scratch("broken-exercises"));
        const GraderRun run = run_grader(
            {"grade", (kSource / "student" / "example").string(), "--exercise", exercise.string()});
        CHECK(run.exit_code == 2);
        CHECK(run.output.find("exercise.yaml:") != std::string::npos);
    }
}

TEST_CASE(
    "with --backend cuda and no GPU the example is ungradable, exit 3, and the report says why") {
    const auto report = scratch("student.json");
    const GraderRun run =
        run_grader({"grade", (kSource / "student" / "example").string(), "--backend", "cuda",
                    "--format", "json", "--output", report.string(), "--quiet"},
                   report, kNoGpu);
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

TEST_CASE(
    "with --backend cuda and no GPU a compile error, a wrong signature and a forbidden include "
    "fail") {
    struct Case {
        const char* fixture;
        const char* expected;
    };
    for (const Case& c :
         {Case{"compile_error", "probe.cu:14:"}, Case{"wrong_signature", "parameter 3"},
          Case{"forbidden_include", "not allowed"}, Case{"missing_probe", "probe.cu"}}) {
        CAPTURE(c.fixture);
        const auto report = scratch(std::string(c.fixture) + ".json");
        const GraderRun run =
            run_grader({"grade", (kFixtures / "submissions" / c.fixture).string(), "--backend",
                        "cuda", "--format", "json", "--output", report.string(), "--quiet"},
                       report, kNoGpu);
        // The student's mistake is found without a GPU and is a graded failure, not
        // "ungradable": it fails wherever the work runs.
        CHECK(run.exit_code == 1);
        REQUIRE(run.report.is_object());
        CHECK(run.report["verdict"] == "fail");
        const auto* check = find_check(run.report, "compile_abi");
        REQUIRE(check);
        CHECK((*check)["passed"] == false);
        CHECK(check_text(*check).find(c.expected) != std::string::npos);
        CHECK(run.report_text.find("root:x:") == std::string::npos);
    }
}

TEST_CASE(
    "an exercise with compile_error_gradable: false makes a compile error not gradable on "
    "PrairieLearn, and only a compile error") {
    // The day15 exercise, its paths made absolute, with the option set to false.
    const std::filesystem::path exercise = scratch("strict-compile-exercise");
    std::filesystem::remove_all(exercise);
    std::filesystem::copy(kSource / "exercises" / "day15-bank-conflicts", exercise);
    std::string yaml = read_text(exercise / "exercise.yaml");
    for (std::size_t at = yaml.find("../../"); at != std::string::npos;
         at = yaml.find("../../", at)) {
        yaml.replace(at, 6, kSource.string() + "/");
    }
    const std::string option = "compile_error_gradable: true";
    REQUIRE(yaml.find(option) != std::string::npos);
    yaml.replace(yaml.find(option), option.size(), "compile_error_gradable: false");
    write_text(exercise / "exercise.yaml", yaml);

    const auto grade = [&](const std::string& fixture) {
        const auto results = scratch(std::string("strict-") + fixture + ".json");
        return run_grader({"grade", (kFixtures / "submissions" / fixture).string(), "--exercise",
                           exercise.string(), "--backend", "sim", "--format", "prairielearn",
                           "--output", results.string(), "--quiet"},
                          results, kNoGpu);
    };
    const GraderRun compile = grade("compile_error");
    REQUIRE(compile.report.is_object());
    CHECK(compile.report["gradable"] == false);
    REQUIRE(compile.report["format_errors"].is_array());
    const std::string reason = compile.report["format_errors"][0].get<std::string>();
    CHECK(reason.rfind("probe.cu did not compile: probe.cu:14:", 0) == 0);
    CHECK(reason.find("this attempt does not count") != std::string::npos);
    // A refused #include and a wrong signature are still grades.
    for (const std::string fixture : {"forbidden_include", "wrong_signature"}) {
        CAPTURE(fixture);
        const GraderRun other = grade(fixture);
        REQUIRE(other.report.is_object());
        CHECK(other.report["gradable"] == true);
    }
}

TEST_CASE("a malformed answers file is the student's, named by file and line") {
    const auto report = scratch("malformed.json");
    const GraderRun run = run_grader({"grade", (kFixtures / "submissions/malformed_yaml").string(),
                                      "--format", "json", "--output", report.string(), "--quiet"},
                                     report, kNoGpu);
    REQUIRE(run.report.is_object());
    const auto* check = find_check(run.report, "submission_file");
    REQUIRE(check);
    CHECK((*check)["passed"] == false);
    CHECK(check_text(*check).find("submission.yaml:5:") != std::string::npos);
}

TEST_CASE("every report format is written, also when grading is ungradable") {
    for (const std::string format :
         {"text", "json", "markdown", "gradescope", "prairielearn", "junit"}) {
        CAPTURE(format);
        const auto report = scratch("every-format." + format);
        const GraderRun run =
            run_grader({"grade", (kSource / "student" / "example").string(), "--backend", "cuda",
                        "--format", format, "--output", report.string(), "--quiet"},
                       {}, kNoGpu);
        CHECK(run.exit_code == 3);
        REQUIRE(std::filesystem::exists(report));
        CHECK(std::filesystem::file_size(report) > 100);
    }
}

TEST_CASE("without a GPU, grade runs on the simulator: the example passes, exit 0, modeled costs") {
    for (const std::vector<std::string>& backend :
         {std::vector<std::string>{"--backend", "sim"}, std::vector<std::string>{}}) {
        CAPTURE(backend.size());
        const auto report = scratch("student-sim.json");
        std::vector<std::string> args{"grade",    (kSource / "student" / "example").string(),
                                      "--format", "json",
                                      "--output", report.string(),
                                      "--quiet"};
        args.insert(args.end(), backend.begin(), backend.end());
        const GraderRun run = run_grader(args, report, kNoGpu);
        CHECK(run.exit_code == 0);
        REQUIRE(run.report.is_object());
        CHECK(run.report["verdict"] == "pass");
        CHECK(run.report["environment"]["backend"] == "sim");
        CHECK(run.report["environment"]["gpu_available"] == false);
        bool counted = false;
        for (const auto& row : run.report["rows"]) {
            if (row["kernel"] == "student" && row["stride"] == 16) {
                counted = row["counted_degree"] == 16.0;
            }
        }
        CHECK(counted);
    }
}

TEST_CASE("on the simulator a wrong signature fails the student, exit 1, naming the parameter") {
    const auto report = scratch("wrong_signature-sim.json");
    const GraderRun run =
        run_grader({"grade", (kFixtures / "submissions/wrong_signature").string(), "--backend",
                    "sim", "--format", "json", "--output", report.string(), "--quiet"},
                   report);
    CHECK(run.exit_code == 1);
    REQUIRE(run.report.is_object());
    CHECK(check_text(*find_check(run.report, "compile_abi")).find("parameter 3") !=
          std::string::npos);
}

TEST_CASE("the text report on the simulator says so and shows the counted degree") {
    const GraderRun run =
        run_grader({"grade", (kSource / "student" / "example").string(), "--backend", "sim"});
    CHECK(run.exit_code == 0);
    CHECK(run.output.find("simulator") != std::string::npos);
    CHECK(run.output.find("counted") != std::string::npos);
}

TEST_CASE("sweep --backend sim prints the reference's modeled table and passes calibration") {
    const GraderRun run = run_grader({"sweep", "--backend", "sim"});
    CHECK(run.exit_code == 0);
    CHECK(run.output.find("PTX simulator") != std::string::npos);
    CHECK(run.output.find("[FAIL]") == std::string::npos);
}

TEST_CASE("sweep for Part 2 on the simulator models the lesson's table and passes calibration") {
    // The modeled cost counts global memory's sectors (issue 31): the copy and the padded tile
    // wait on them, the 32 x 32 tile on its 32-way column read, as on a GPU.
    const GraderRun run =
        run_grader({"sweep", "--backend", "sim", "--exercise", "day15-padding"}, {}, kNoGpu);
    CHECK(run.exit_code == 0);
    CHECK(run.output.find("times are modeled costs") != std::string::npos);
    CHECK(run.output.find("transpose tile[32][32]") != std::string::npos);
    CHECK(run.output.find("241.0") != std::string::npos);
    CHECK(run.output.find("[ ok ] the 32 x 32 tile is clearly slower than the padded one") !=
          std::string::npos);
    CHECK(run.output.find("[FAIL]") == std::string::npos);
}

TEST_CASE("explain shows stride 3 in 32 distinct banks and stride 16 as 16 lanes in 2 banks") {
    const GraderRun run =
        run_grader({"explain", (kSource / "student" / "example").string(), "--strides", "3,16"});
    CHECK(run.exit_code == 0);
    const auto stride3 = run.output.find("stride 3");
    const auto stride16 = run.output.find("stride 16");
    REQUIRE(stride3 != std::string::npos);
    REQUIRE(stride16 != std::string::npos);
    const std::string part3 = run.output.substr(stride3, stride16 - stride3);
    const std::string part16 = run.output.substr(stride16);
    CHECK(part3.find("32 lanes in 32 distinct banks") != std::string::npos);
    CHECK(part3.find("lane    word  bank") != std::string::npos);
    CHECK(part16.find("16 lanes in each of 2 banks") != std::string::npos);
    CHECK(part16.find("16-way conflict") != std::string::npos);
    // Lane 1 reads word 16, bank 16, with the other odd lanes.
    CHECK(part16.find("         1      16    16  lanes 3,5,7,") != std::string::npos);
}

TEST_CASE("__launch --sim prints the simulator's shared counts under Nsight Compute's names") {
    const GraderRun run = run_grader(
        {"__launch", "--kernel", (kSource / "reference/probe_shared_stride.cu").string(), "--name",
         "probeSharedStride", "--stride", "8", "--grid", "4", "--block", "256", "--sim"});
    CHECK(run.exit_code == 0);
    // 4 blocks of 8 warps, 2048 reads each, 8 wavefronts a read at stride 8.
    CHECK(run.output.find("smsp__sass_inst_executed_op_shared_ld.sum,65536\n") !=
          std::string::npos);
    CHECK(run.output.find("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,524288\n") !=
          std::string::npos);
    const GraderRun transpose = run_grader(
        {"__launch", "--kernel", (kFixtures / "kernels/transpose_tile32.cu").string(), "--name",
         "transposeTiled", "--grid", "2,2", "--block", "32,8", "--arg", "buf=16384", "--arg",
         "buf=16384", "--arg", "i32=64", "--sim", "--sim-blocks", "0"});
    CHECK(transpose.exit_code == 0);
    // 4 blocks of 8 warps, 4 column reads each at 32 wavefronts.
    CHECK(transpose.output.find("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,4096\n") !=
          std::string::npos);
}

TEST_CASE("on the simulator a student's kernel it cannot execute fails, exit 1, naming the call") {
    const auto folder = scratch("calls-noinline");
    std::filesystem::create_directories(folder);
    std::filesystem::copy_file(kFixtures / "kernels/probe_calls_noinline_function.cu",
                               folder / "probe.cu",
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(kSource / "student/example/submission.yaml",
                               folder / "submission.yaml",
                               std::filesystem::copy_options::overwrite_existing);
    const auto report = scratch("calls-noinline.json");
    const GraderRun run = run_grader({"grade", folder.string(), "--backend", "sim", "--format",
                                      "json", "--output", report.string(), "--quiet"},
                                     report);
    // Where there is no GPU the simulator is the grade: what it cannot run is the student's to
    // change, or any wrong kernel could end "ungradable" by reaching such an instruction first.
    CHECK(run.exit_code == 1);
    REQUIRE(run.report.is_object());
    CHECK(run.report["verdict"] == "fail");
    CHECK(run.report["interruption"]["students_fault"] == true);
    CHECK(run.report["interruption"]["kind"] == "unsupported");
    const std::string summary = run.report["summary"].get<std::string>();
    CHECK(summary.find("the simulator does not support call") != std::string::npos);
    CHECK(summary.find("(at probe.cu:23:") != std::string::npos);
    CHECK(summary.find("write the kernel without it, or ask for a grade on a GPU") !=
          std::string::npos);
}

TEST_CASE("the untouched starter kit fails kindly: its answers check names every blank") {
    const auto report = scratch("starter-kit.json");
    const GraderRun run = run_grader({"grade", (kSource / "student").string(), "--format", "json",
                                      "--output", report.string(), "--quiet"},
                                     report, kNoGpu);
    CHECK(run.exit_code == 1);
    REQUIRE(run.report.is_object());
    CHECK(run.report["verdict"] == "fail");
    const std::string answers = check_text(*find_check(run.report, "submission_file"));
    CHECK(answers.find("8 blanks of the starter kit's submission.yaml still to fill in") !=
          std::string::npos);
    CHECK(answers.find("rows[2].predicted_degree: still blank: fill in the conflict degree you "
                       "predict for stride 16") != std::string::npos);
    // The blank sentence is its own check's, worth what that check is (0 points).
    CHECK(check_text(*find_check(run.report, "sentence")).find("No sentence was given") !=
          std::string::npos);
    // The kernel is the lesson's and still runs: nothing else fails for the blanks.
    CHECK((*find_check(run.report, "accumulator"))["passed"] == true);
    // But it is not the student's work: no majority of the points (it took 10 of 15 before).
    CHECK(run.report["score"].get<double>() < run.report["max_score"].get<double>() / 2);
    CHECK(answers.find("the kernel's checks earn 50% of their points") != std::string::npos);
}

TEST_CASE("on the simulator a kernel that never ends stops at the instruction budget, exit 1") {
    const auto report = scratch("never_ends-sim.json");
    const GraderRun run =
        run_grader({"grade", (kFixtures / "submissions/never_ends").string(), "--backend", "sim",
                    "--format", "json", "--output", report.string(), "--quiet"},
                   report);
    CHECK(run.exit_code == 1);
    REQUIRE(run.report.is_object());
    CHECK(run.report["interruption"]["kind"] == "timeout");
    CHECK(run.report["summary"].get<std::string>().find("instruction budget") != std::string::npos);
}

namespace {

// The line of student/README.md's code blocks that holds `needle`, without its indent.
std::string readme_quote(const std::string& needle) {
    std::istringstream readme(read_text(kSource / "student" / "README.md"));
    for (std::string line; std::getline(readme, line);) {
        if (line.find(needle) != std::string::npos) {
            return line.substr(line.find_first_not_of(' '));
        }
    }
    return "(no line of student/README.md holds " + needle + ")";
}

// The starter kit of Part 1 filled in, in a scratch folder: stride 8's ratio as given, and
// probe.cu's read without its ";" where asked.
std::filesystem::path filled_kit(const std::string& name, const std::string& ratio8,
                                 bool drop_semicolon, bool drop_barrier = false) {
    const auto folder = scratch(name);
    std::filesystem::remove_all(folder);
    std::filesystem::create_directories(folder);
    std::string answers = read_text(kSource / "student" / "submission.yaml");
    const auto replace = [](std::string& text, const std::string& from, const std::string& to) {
        const std::size_t at = text.find(from);
        REQUIRE(at != std::string::npos);
        text.replace(at, from.size(), to);
    };
    replace(answers, "student_id: \"\"", "student_id: \"ada\"");
    replace(answers, "gpu: \"\"", "gpu: \"Tesla T4\"");
    replace(answers, "{ stride: 3,  predicted_degree: , measured_ratio: }",
            "{ stride: 3,  predicted_degree: 1, measured_ratio: 1.02 }");
    replace(answers, "{ stride: 8,  predicted_degree: , measured_ratio: }",
            "{ stride: 8,  predicted_degree: 8, measured_ratio: " + ratio8 + " }");
    replace(answers, "{ stride: 16, predicted_degree: , measured_ratio: }",
            "{ stride: 16, predicted_degree: 16, measured_ratio: 15.6 }");
    replace(answers, "sentence: \"\"", "sentence: \"Stride 3 shares no factor with 32.\"");
    write_text(folder / "submission.yaml", answers);
    std::string probe = read_text(kSource / "student" / "probe.cu");
    if (drop_semicolon) {
        replace(probe, "& kProbeMask];", "& kProbeMask]");
    }
    if (drop_barrier) {
        replace(probe, "    __syncthreads();\n", "");
    }
    write_text(folder / "probe.cu", probe);
    return folder;
}

}  // namespace

TEST_CASE("student/README.md quotes report lines as the grader prints them") {
    SUBCASE("a decimal comma in the starter kit's answers file") {
        const GraderRun run = run_grader(
            {"grade", filled_kit("readme-comma", "7,91", false).string(), "--backend", "sim"}, {},
            kNoGpu);
        const std::string quote = readme_quote("7,91 read as 7.91 (a decimal comma)");
        CAPTURE(quote);
        CHECK(unwrapped(run.output).find(quote) != std::string::npos);
        CHECK(run.exit_code == 0);  // read as meant: a note, not a mistake
    }
    SUBCASE("a wrong prediction, pointed at by line") {
        const auto folder = filled_kit("readme-prediction", "7.91", false);
        std::string answers = read_text(folder / "submission.yaml");
        const std::string eight = "{ stride: 8,  predicted_degree: 8,";
        REQUIRE(answers.find(eight) != std::string::npos);
        answers.replace(answers.find(eight), eight.size(), "{ stride: 8,  predicted_degree: 4,");
        write_text(folder / "submission.yaml", answers);
        const GraderRun run =
            run_grader({"grade", folder.string(), "--backend", "sim"}, {}, kNoGpu);
        const std::string quote = readme_quote(": stride 8: you predicted 4; gcd(8, 32) is 8");
        CAPTURE(quote);
        CHECK(unwrapped(run.output).find(quote) != std::string::npos);
        CHECK(run.exit_code == 0);  // an honest wrong prediction fails no one
    }
    SUBCASE("a dropped ';' in the starter kit's probe.cu") {
        const GraderRun run = run_grader(
            {"grade", filled_kit("readme-semicolon", "7.91", true).string(), "--backend", "sim"},
            {}, kNoGpu);
        const std::string quote = readme_quote("probe.cu did not compile:");
        CAPTURE(quote);
        CHECK(unwrapped(run.output).find(quote) != std::string::npos);
    }
    SUBCASE("the kit's __syncthreads() deleted: the race, once, with its fix") {
        const GraderRun run =
            run_grader({"grade", filled_kit("readme-race", "7.91", false, true).string(),
                        "--backend", "sim", "--seed", "1"},
                       {}, kNoGpu);
        CAPTURE(run.output);
        std::string quote = readme_quote("... with no __syncthreads() completed before the read");
        quote = quote.substr(quote.find("with no __syncthreads()"));
        CAPTURE(quote);
        CHECK(unwrapped(run.output).find(quote) != std::string::npos);
        // The line under the verdict: the diagnosis and its fix, as the README quotes it.
        const std::string diagnosis = readme_quote("fail: Missing __syncthreads() (a race): ");
        CAPTURE(diagnosis);
        CHECK(unwrapped(run.output).find("\n" + diagnosis + "\n") != std::string::npos);
    }
    SUBCASE("an inverted ratio") {
        const GraderRun run = run_grader(
            {"grade", filled_kit("readme-inverted", "0.128", false).string(), "--backend", "sim"},
            {}, kNoGpu);
        const std::string quote = readme_quote("this looks inverted");
        CAPTURE(quote);
        CHECK(unwrapped(run.output).find(quote) != std::string::npos);
    }
    SUBCASE("half the reads skipped, and the footer's seed line") {
        const GraderRun run =
            run_grader({"grade", (kFixtures / "submissions" / "skips_half_the_reads").string(),
                        "--backend", "sim", "--seed", "1"},
                       {}, kNoGpu);
        CAPTURE(run.output);
        const std::string quote = readme_quote("holds 1024, expected 2048");
        CAPTURE(quote);
        CHECK(unwrapped(run.output).find(quote) != std::string::npos);
        std::string footer = readme_quote("seed 1 (--seed 1 repeats this grade)");
        footer = footer.substr(0, footer.find(", NVRTC"));  // NVRTC's version is the machine's
        CAPTURE(footer);
        CHECK(unwrapped(run.output).find(footer) != std::string::npos);
    }
}
