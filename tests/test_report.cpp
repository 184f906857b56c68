#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/text.hpp"
#include "grader_run.hpp"
#include "model/explanation.hpp"
#include "model/finding.hpp"
#include "model/json.hpp"
#include "model/measurements.hpp"
#include "model/observations.hpp"
#include "model/report.hpp"
#include "report/describe.hpp"
#include "report/findings_text.hpp"
#include "report/writers.hpp"
#include "test_paths.hpp"
#include "text/text_safety.hpp"

using grader::CheckResult;
using grader::OutputComparison;
using grader::Report;
using grader::ReportRow;
using grader::Verdict;
using grader::testing::unwrapped;
using nlohmann::json;

namespace {

// ---------------------------------------------------------------------------------------------
// Reports as the grader would build them.

OutputComparison all_right(const char* input, double expected) {
    OutputComparison result;
    result.input = input;
    result.ran = true;
    result.ok = true;
    result.expected = expected;
    result.elements = 270336;
    return result;
}

grader::TimingStats timing(double median_ms, bool modeled = false) {
    grader::TimingStats stats;
    stats.median_ms = median_ms;
    stats.min_ms = median_ms * 0.99;
    stats.max_ms = median_ms * 1.02;
    stats.spread = 0.004;
    stats.samples = 30;
    stats.modeled = modeled;
    return stats;
}

ReportRow row(const char* kernel, int stride, double ratio, double median_ms) {
    ReportRow r;
    r.kernel = kernel;
    r.stride = stride;
    r.degree = static_cast<unsigned>(std::gcd(stride, 32));
    r.timing = timing(median_ms);
    r.ratio = ratio;
    r.ratio_min = ratio - 0.02;
    r.ratio_max = ratio + 0.03;
    r.label = std::string(kernel) == "student" ? "your kernel" : "reference probe";
    r.outputs = {all_right("ones", 2048.0), all_right("hidden", 15000.0)};
    return r;
}

CheckResult check(const char* id, const char* title, bool passed, double points, double max,
                  const char* message) {
    CheckResult c;
    c.id = id;
    c.title = title;
    c.status = passed ? grader::CheckStatus::passed : grader::CheckStatus::failed;
    c.points = points;
    c.max_points = max;
    c.message = message;
    // Part 1's kinds, by its check ids.
    const std::map<std::string, std::string> kinds = {{"submission_file", "answers_file"},
                                                      {"compile_abi", "compile_abi"},
                                                      {"accumulator", "output"},
                                                      {"hidden_input", "output"},
                                                      {"predicted_degrees", "predicted"},
                                                      {"measured_ratios", "measured"},
                                                      {"ordering", "ordering"},
                                                      {"consistency", "consistency"},
                                                      {"counted_degrees", "counted_degree"},
                                                      {"sentence", "sentence"}};
    const auto kind = kinds.find(id);
    c.kind = kind == kinds.end() ? "" : kind->second;
    return c;
}

// The numbers an H200 showed (docs: shared/notes/h200-measurements.md).
Report passing_report() {
    Report report;
    report.exercise_id = "day15-bank-conflicts";
    report.exercise_title = "Day 15: shared memory bank conflicts";
    report.submission = "student/";
    report.student_id = "example-student";
    report.claimed_gpu = "Tesla T4";
    report.verdict = Verdict::pass;
    report.summary = "Every required check passed.";
    report.score = 11;
    report.max_score = 13;
    report.environment.backend = "cuda";
    report.environment.gpu_available = true;
    report.environment.device_name = "NVIDIA H200";
    report.environment.compute_capability = "9.0";
    report.environment.sm_count = 132;
    report.environment.driver_version = "13.0";
    report.environment.nvrtc_version = "13.0";
    report.environment.grader_version = "0.1.0";
    report.environment.grid_blocks = 1056;
    report.environment.block_size = 256;
    report.environment.blocks_per_sm = 8;
    report.seed = 12345678901234567ULL;
    report.timing_rounds = 5;
    report.wall_seconds = 3.2;
    report.sentence =
        "Stride 3 is odd, so it shares no factor with 32 and hits 32 different banks.";

    const struct {
        int stride;
        int predicted;
        double claimed;
        double ratio;
        double ms;
        double reference;
    } named[] = {{3, 1, 0.98, 0.99, 0.0857, 0.986},
                 {8, 8, 7.85, 6.21, 0.5391, 6.211},
                 {16, 16, 15.40, 12.34, 1.0705, 12.336}};
    ReportRow baseline = row("student", 1, 1.0, 0.0868);
    baseline.reference_ratio = 1.0;
    report.rows.push_back(baseline);
    for (const auto& n : named) {
        ReportRow r = row("student", n.stride, n.ratio, n.ms);
        r.named = true;
        r.predicted_degree = n.predicted;
        r.claimed_ratio = n.claimed;
        r.reference_ratio = n.reference;
        report.rows.push_back(r);
    }
    ReportRow unnamed = row("student", 12, 3.17, 0.2751);
    unnamed.unnamed = true;
    unnamed.reference_ratio = 3.158;
    report.rows.push_back(unnamed);

    const double reference[][3] = {{1, 1.000, 0.0868},   {2, 1.630, 0.1414}, {3, 0.986, 0.0855},
                                   {4, 3.158, 0.2739},   {8, 6.211, 0.5388}, {16, 12.336, 1.0702},
                                   {32, 24.581, 2.1324}, {33, 1.048, 0.0909}};
    for (const auto& r : reference) {
        report.rows.push_back(row("reference", static_cast<int>(r[0]), r[1], r[2]));
    }

    report.checks = {
        check("submission_file", "Answers file", true, 1, 1,
              "submission.yaml has every field, for strides 3, 8 and 16."),
        check("compile_abi", "Compile and ABI", true, 1, 1,
              "probeSharedStride compiled for sm_90 and has the ABI probeSharedStride(const "
              "float*, float*, size_t, int)."),
        check("accumulator", "Accumulator check", true, 2, 2,
              "Every thread held exactly 2048 at every stride."),
        check("hidden_input", "Hidden-input check", true, 2, 2,
              "With a tile of random integers, every thread held the sum of the words it was "
              "meant to read."),
        check("predicted_degrees", "Predicted degrees", true, 3, 3,
              "Every predicted degree is gcd(stride, 32)."),
        check("ordering", "Ordering the degrees predict", true, 2, 2,
              "Your kernel's timings follow the order the degrees predict."),
        check("consistency", "Consistency with the reference", false, 0, 2,
              "At some strides your ratio is not the reference kernel's."),
        check("sentence", "Why stride 3 is not between 2 and 4", true, 0, 0,
              "Recorded for your instructor's review."),
    };
    report.checks[6].details = {"stride 12: your ratio 3.17 against the reference's 3.16"};
    report.checks[6].required = false;
    report.checks[7].review = true;
    report.checks[7].required = false;
    return report;
}

ReportRow* find_row(Report& report, const char* kernel, int stride) {
    for (auto& r : report.rows) {
        if (r.kernel == kernel && r.stride == stride) {
            return &r;
        }
    }
    return nullptr;
}

// Stride 8 skipped half its reads: thread 1234 (block 4, thread 210 of 256) held 1024.
Report failing_accumulator_report() {
    Report report = passing_report();
    report.verdict = Verdict::fail;
    report.summary = "A required check failed: Accumulator check.";
    report.score = 9;
    OutputComparison& bad = find_row(report, "student", 8)->outputs[0];
    bad.ok = false;
    bad.bad_elements = 135168;
    bad.first_bad = 1234;
    bad.first_bad_block = 4;
    bad.first_bad_thread_in_block = 210;
    bad.first_bad_value = 1024.0;
    bad.first_bad_expected = 2048.0;
    report.checks[2] = check("accumulator", "Accumulator check", false, 0, 2,
                             "Some threads did not hold exactly 2048: a read was skipped, "
                             "repeated or lost.");
    return report;
}

Report ungradable_report() {
    Report report;
    report.exercise_id = "day15-bank-conflicts";
    report.exercise_title = "Day 15: shared memory bank conflicts";
    report.submission = "student/";
    report.student_id = "example-student";
    report.verdict = Verdict::ungradable;
    report.summary = "No GPU: the submission was compiled but could not be run.";
    report.max_score = 13;
    report.environment.backend = "cuda";
    report.environment.gpu_available = false;
    report.environment.nvrtc_version = "13.0";
    report.wall_seconds = 0.4;
    report.checks = {check("submission_file", "Answers file", true, 1, 1, "complete"),
                     check("compile_abi", "Compile and ABI", true, 1, 1, "compiled for sm_75")};
    report.interruption = grader::Interruption{grader::StopKind::no_gpu, "open device",
                                               "no CUDA device was found", false};
    return report;
}

Report compile_failure_report() {
    Report report = ungradable_report();
    report.verdict = Verdict::fail;
    report.summary = "A required check failed: Compile and ABI.";
    report.environment.gpu_available = true;
    report.environment.device_name = "NVIDIA H200";
    report.environment.compute_capability = "9.0";
    report.interruption.reset();
    report.score = 1;
    report.checks = {
        check("submission_file", "Answers file", true, 1, 1, "complete"),
        check("compile_abi", "Compile and ABI", false, 0, 1,
              "probe.cu did not compile: probe.cu:12:5: error: identifier \"tile\" is "
              "undefined"),
    };
    report.checks[1].details = {
        "NVRTC could not compile probe.cu: probe.cu:12:5: error: identifier \"tile\" is "
        "undefined"};
    report.compile_log =
        "probe.cu:12:5: error: identifier \"tile\" is undefined\n"
        "      acc += tile[(tid * stride + k) & 2047];\n"
        "1 error detected in the compilation of \"probe.cu\".\n";
    return report;
}

// The kernel did not compile: the checks that needed it did not run.
Report not_run_report() {
    Report report = compile_failure_report();
    for (const char* id : {"accumulator", "ordering"}) {
        CheckResult c = check(id, id, false, 0, 2, "Not run: the kernel did not compile.");
        c.status = grader::CheckStatus::not_run;
        report.checks.push_back(c);
    }
    report.compile_error = true;
    return report;
}

// No sentence: the review item failed, and is still worth no points.
Report empty_sentence_report() {
    Report report = passing_report();
    report.sentence.clear();
    report.checks[7].status = grader::CheckStatus::failed;
    report.checks[7].message = "No sentence was given.";
    return report;
}

Report simulated_report() {
    Report report = passing_report();
    report.environment.backend = "sim";
    report.environment.gpu_available = false;
    report.environment.device_name = "H200 bank model";
    for (auto& r : report.rows) {
        r.timing->modeled = true;
    }
    report.checks.clear();
    return report;
}

// ---------------------------------------------------------------------------------------------
// Helpers to read what a writer wrote.

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        lines.push_back(line);
    }
    return lines;
}

std::string two_decimals(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.2f", value);
    return buffer;
}

std::string text_of(const Report& report, bool color = false, bool verbose = false) {
    return grader::write_text(report, grader::TextOptions{color, verbose});
}

// The JUnit files are checked by xmllint (Debian's libxml2-utils) against the schema the Jenkins
// xUnit plugin validates JUnit input with, and read back through XPath: no reader of our own
// that could share the writer's mistakes.
const std::string kJenkinsSchema =
    std::string(GRADER_FIXTURES_DIR) + "/schemas/jenkins-xunit-junit-10.xsd";

std::string shell_quote(const std::string& text) {
    std::string out = "'";
    for (const char c : text) {
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return out + "'";
}

struct CommandOutput {
    int status = -1;
    std::string output;
};

CommandOutput run_command(const std::string& command) {
    CommandOutput result;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) {
        return result;
    }
    char buffer[4096];
    std::size_t got = 0;
    while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) {
        result.output.append(buffer, got);
    }
    result.status = ::pclose(pipe);
    return result;
}

// A JUnit file on disk for xmllint, removed when the test is done with it.
class JunitFile {
public:
    explicit JunitFile(const std::string& xml) {
        static int counter = 0;
        path_ =
            std::filesystem::temp_directory_path() / ("test_report_" + std::to_string(::getpid()) +
                                                      "_" + std::to_string(++counter) + ".xml");
        std::ofstream(path_, std::ios::binary) << xml;
    }
    ~JunitFile() { std::filesystem::remove(path_); }
    JunitFile(const JunitFile&) = delete;
    JunitFile& operator=(const JunitFile&) = delete;

    // xmllint's value of an XPath expression: a string(), a count(), or "" where it finds nothing.
    std::string xpath(const std::string& expression) const {
        CommandOutput out = run_command("xmllint --xpath " + shell_quote(expression) + " " +
                                        shell_quote(path_.string()) + " 2>/dev/null");
        if (out.status != 0) {
            return {};
        }
        if (!out.output.empty() && out.output.back() == '\n') {
            out.output.pop_back();  // the line end xmllint adds after the value
        }
        return out.output;
    }
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

bool have_xmllint() {
    return std::system("command -v xmllint >/dev/null 2>&1") == 0;
}

// The file passes the Jenkins xUnit plugin's junit-10.xsd, which that plugin checks before it
// reads a file, and drops the file if it fails.
void valid_for_jenkins(const std::string& xml) {
    REQUIRE_MESSAGE(have_xmllint(), "xmllint is needed (apt-get install libxml2-utils)");
    const JunitFile file(xml);
    const CommandOutput out =
        run_command("xmllint --noout --schema " + shell_quote(kJenkinsSchema) + " " +
                    shell_quote(file.path().string()) + " 2>&1");
    INFO(xml);
    CHECK_MESSAGE(out.status == 0, out.output);
}

}  // namespace

// -------------------------------------------------------------------------------------------------
TEST_CASE("the text report opens with verdict, score, student, exercise and device") {
    const auto lines = lines_of(text_of(passing_report()));
    REQUIRE_FALSE(lines.empty());
    CHECK(lines[0] ==
          "PASS  11/13  example-student  day15-bank-conflicts  on NVIDIA H200 (sm_90, cuda)");
    CHECK(lines[1] == "Every required check passed.");
}

TEST_CASE("the text report shows every ratio: the student's, the harness's and the reference's") {
    const Report report = passing_report();
    const std::string text = text_of(report);
    for (const auto& r : report.rows) {
        INFO(r.kernel << " stride " << r.stride);
        CHECK(text.find(two_decimals(*r.ratio)) != std::string::npos);
        CHECK(text.find(two_decimals(*r.ratio_min) + "–" + two_decimals(*r.ratio_max)) !=
              std::string::npos);
        if (r.claimed_ratio) {
            CHECK(text.find(two_decimals(*r.claimed_ratio)) != std::string::npos);
        }
        if (r.reference_ratio) {
            CHECK(text.find(two_decimals(*r.reference_ratio)) != std::string::npos);
        }
    }
    // The lesson's 31.10 keeps its trailing zero; an H200's stride-1 time keeps its digits.
    CHECK(text.find("15.40") != std::string::npos);
    CHECK(text.find("0.08680") != std::string::npos);
    CHECK(text.find("Reference probe, same compiler and options") != std::string::npos);
    CHECK(text.find("* drawn for this grade") != std::string::npos);
}

TEST_CASE("the stride-8 row of the text table reads across as the lesson's columns do") {
    // A terminal's 100 columns: the spread is the column the table spares; -v shows it.
    const std::string text = text_of(passing_report());
    const std::regex stride8(
        R"(\n +8  +8 +8 +7\.85 +6\.21 +6\.19–6\.24 +6\.21 +0\.5391 +ok +ok\n)");
    CHECK(std::regex_search(text, stride8));
    for (const std::string& line : lines_of(text)) {
        CAPTURE(line);
        CHECK(grader::text::display_width(line) <= 100);
    }
    const std::regex verbose8(
        R"(\n +8  +8 +8 +7\.85 +6\.21 +6\.19–6\.24 +6\.21 +0\.5391 +0\.4 +30 +— +ok +ok\n)");
    const std::string verbose = text_of(passing_report(), false, true);
    CAPTURE(verbose);
    CHECK(std::regex_search(verbose, verbose8));
}

TEST_CASE("each check is one line with its mark, title and points, then its message") {
    const std::string text = text_of(passing_report());
    CHECK(text.find("[PASS]    Compile and ABI  1/1\n") != std::string::npos);
    CHECK(text.find("[FAIL]    Consistency with the reference  0/2  (optional)\n") !=
          std::string::npos);
    CHECK(text.find("[REVIEW]  Why stride 3 is not between 2 and 4  0/0  (for review)\n") !=
          std::string::npos);
    CHECK(text.find("\n              stride 12: your ratio 3.17 against the reference's 3.16\n") !=
          std::string::npos);
    CHECK(text.find("Your sentence\n  Stride 3 is odd") != std::string::npos);
}

TEST_CASE("a failing accumulator names the stride, the thread, its value and how many are wrong") {
    const std::string expected_line =
        "ones input, stride 8: thread 1234 (block 4, thread 210) holds 1024, expected 2048; 135168 "
        "of 270336 threads wrong";
    SUBCASE("the checks did not name the thread: the writer does") {
        const std::string text = unwrapped(text_of(failing_accumulator_report()));
        CHECK(text.rfind("FAIL  9/13  example-student", 0) == 0);
        CHECK(text.find(expected_line) != std::string::npos);
        CHECK(text.find("[FAIL]    Accumulator check  0/2") != std::string::npos);
        CHECK(text.find("bad (135168)") != std::string::npos);
    }
    SUBCASE("the check's finding names the thread: the text says it once") {
        Report report = failing_accumulator_report();
        const auto& bad = find_row(report, "student", 8)->outputs[0];
        grader::Finding wrong;
        wrong.kind = grader::FindingKind::wrong_output;
        wrong.strides = {8};
        wrong.output = bad;
        report.checks[2].findings = {wrong};
        report.checks[2].details = {grader::finding_line(wrong, grader::Wording{})};
        CHECK("ones input, " + report.checks[2].details[0] == expected_line);
        const std::string text = unwrapped(text_of(report));
        CAPTURE(text);
        const std::size_t first = text.find(report.checks[2].details[0]);
        REQUIRE(first != std::string::npos);
        CHECK(text.find(report.checks[2].details[0], first + 1) == std::string::npos);
    }
}

TEST_CASE("a wrong thread a check's finding names, at one stride or several, is not listed again") {
    Report report = failing_accumulator_report();
    const auto& bad = find_row(report, "student", 8)->outputs[0];
    grader::Finding wrong;
    wrong.kind = grader::FindingKind::wrong_output;
    wrong.strides = {16, 8};  // merged: the same wrong thread at two strides
    wrong.output = bad;
    report.checks[2].findings = {wrong};
    report.checks[2].details = {grader::finding_line(wrong, grader::Wording{})};
    CHECK(text_of(report).find("Outputs that held the wrong value") == std::string::npos);

    // A finding about another stride leaves stride 8's thread to the list.
    wrong.strides = {16, 4};
    report.checks[2].findings = {wrong};
    report.checks[2].details = {grader::finding_line(wrong, grader::Wording{})};
    CHECK(text_of(report).find(
              "Outputs that held the wrong value\n  ones input, stride 8: thread 1234") !=
          std::string::npos);
}

TEST_CASE("a value that was never written reads as never written, never as nan") {
    Report report = failing_accumulator_report();
    OutputComparison& hidden = find_row(report, "student", 16)->outputs[1];
    hidden.ok = false;
    hidden.bad_elements = 256;
    hidden.first_bad = 0;
    hidden.first_bad_value = std::nan("");
    hidden.first_bad_expected = 14237;
    for (const auto& text : {unwrapped(text_of(report)), grader::write_markdown(report)}) {
        CHECK(text.find("hidden input, stride 16: thread 0 (block 0, thread 0) was never "
                        "written: no block of the grid wrote it (expected 14237); 256 of "
                        "270336 threads wrong") != std::string::npos);
        CHECK_FALSE(std::regex_search(text, std::regex(R"(\bnan\b)")));
    }
}

TEST_CASE("colors appear only when asked for") {
    const Report report = failing_accumulator_report();
    CHECK(text_of(report, false).find('\x1b') == std::string::npos);
    const std::string colored = text_of(report, true);
    CHECK(colored.find("\x1b[1;31mFAIL\x1b[0m") != std::string::npos);
    CHECK(colored.find("\x1b[1;32m[PASS]\x1b[0m") != std::string::npos);
}

TEST_CASE("what a kernel prints cannot drive the terminal or fake a verdict") {
    Report report = passing_report();
    report.kernel_output = "\x1b[2J\x1b[1;32mPASS 13/13\r\nthread 7 says hi\rX\x9b\xff\n";
    report.sentence = "fine\x1b]0;title\x07";
    const std::string text = text_of(report);
    CHECK(text.find('\x1b') == std::string::npos);
    CHECK(text.find('\r') == std::string::npos);
    CHECK(text.find('\x07') == std::string::npos);
    CHECK(text.find("  \\x1b[2J\\x1b[1;32mPASS 13/13\n  thread 7 says hi\\x0dX") !=
          std::string::npos);
    CHECK(text.find("What the kernel printed") != std::string::npos);
    CHECK(grader::text::first_invalid_utf8(text) == std::string::npos);
}

TEST_CASE("an ungradable report says so and why, and blames no one") {
    const std::string text = text_of(ungradable_report());
    CHECK(
        text.rfind("UNGRADABLE  0/13  example-student  day15-bank-conflicts  on the cuda backend, "
                   "with no GPU found\n",
                   0) == 0);
    CHECK(text.find("at open device: no CUDA device was found (no_gpu)") != std::string::npos);
    CHECK(text.find("not the submission") != std::string::npos);
    CHECK(text.find("no rows: your kernel did not run") != std::string::npos);
}

TEST_CASE("the first line names the backend actually used, or that none ran") {
    Report report = ungradable_report();
    report.environment.backend = "sim";
    report.environment.compute_capability = "7.5";
    CHECK(lines_of(text_of(report))[0].find("on the PTX simulator (sm_75, sim), ") !=
          std::string::npos);
    // The worker resolves "auto"; a grade that stopped before it did never learnt which.
    report.environment.backend = "auto";
    report.environment.compute_capability.clear();
    const std::string first = lines_of(text_of(report))[0];
    CHECK(first.find("before any backend ran (auto)") != std::string::npos);
    CHECK(first.find("with no GPU") == std::string::npos);
    CHECK(grader::write_markdown(report).find("before any backend ran (auto)") !=
          std::string::npos);
}

TEST_CASE("a newline in the student id cannot forge a verdict line") {
    Report report = failing_accumulator_report();
    report.student_id = "mallory\nPASS  13/13  mallory";
    report.summary = "fail: Accumulator check\nPASS  13/13";
    const auto has_forged_line = [](const std::string& text) {
        for (const auto& line : lines_of(text)) {
            if (line.rfind("PASS", 0) == 0) {
                return true;
            }
        }
        return false;
    };
    const std::string text = text_of(report);
    CHECK_FALSE(has_forged_line(text));
    CHECK(lines_of(text)[0].find("mallory\\nPASS  13/13  mallory") != std::string::npos);
    const json gradescope = json::parse(grader::write_gradescope(report));
    CHECK_FALSE(has_forged_line(gradescope["output"].get<std::string>()));
    CHECK_FALSE(has_forged_line(
        json::parse(grader::write_prairielearn(report))["output"].get<std::string>()));
}

TEST_CASE("a check that did not run says so, and is not a failure") {
    const std::string text = text_of(not_run_report());
    CHECK(text.find("[NOT RUN] accumulator  0/2\n") != std::string::npos);
    CHECK(text.find("Not run: the kernel did not compile.") != std::string::npos);
    CHECK(grader::write_markdown(not_run_report()).find("**NOT RUN** accumulator") !=
          std::string::npos);
}

TEST_CASE("an empty sentence is a failed review item, worth no points") {
    const Report report = empty_sentence_report();
    CHECK(text_of(report).find("[FAIL]    Why stride 3 is not between 2 and 4  0/0  (for review)\n"
                               "            No sentence was given.") != std::string::npos);
    CHECK(grader::write_markdown(report).find("- ❌ **FAIL** Why stride 3") != std::string::npos);
    const json gradescope = json::parse(grader::write_gradescope(report));
    CHECK(gradescope["tests"][7]["status"] == "failed");
    CHECK(gradescope["tests"][7]["max_score"] == 0);
    CHECK(gradescope["score"] == 11);
}

TEST_CASE("a sentence flagged in the batch says so in every report the student reads") {
    Report report = passing_report();
    report.sentence_review.same_as_example = true;
    report.sentence_review.same_as_others = 2;
    const std::string expected =
        "set apart for your instructor's review: the same as the starter kit's example, and the "
        "same or nearly the same as 2 other submissions' in this class";
    const std::string text = unwrapped(text_of(report));
    CAPTURE(text);
    CHECK(text.find(expected) != std::string::npos);
    CHECK(grader::write_markdown(report).find(expected) != std::string::npos);
    CHECK(
        json::parse(grader::write_gradescope(report))["tests"][7]["output"].get<std::string>().find(
            expected) != std::string::npos);
    CHECK(json::parse(grader::write_prairielearn(report))["tests"][7]["output"]
              .get<std::string>()
              .find(expected) != std::string::npos);
    // Only how many: never who.
    CHECK(text_of(report).find("alice") == std::string::npos);
    CHECK(text_of(passing_report()).find("set apart") == std::string::npos);
}

TEST_CASE("a flagged sentence is found by its check's kind, whatever the exercise calls it") {
    for (const std::string id : {"sentence", "why_stride_3"}) {
        CAPTURE(id);
        Report report = passing_report();
        report.sentence_review.same_as_example = true;
        report.checks[7].id = id;
        REQUIRE(report.checks[7].kind == "sentence");
        const std::string flag = "the same as the starter kit's example";
        CHECK(json::parse(grader::write_gradescope(report))["tests"][7]["output"]
                  .get<std::string>()
                  .find(flag) != std::string::npos);
        CHECK(json::parse(grader::write_prairielearn(report))["tests"][7]["output"]
                  .get<std::string>()
                  .find(flag) != std::string::npos);
        const std::string junit_flag = "The sentence was set apart for your instructor";
        CHECK(grader::write_junit(report).find(junit_flag) != std::string::npos);
        // A check of another kind under the sentence's id is not the sentence.
        report.checks[7].kind = "output";
        CHECK(grader::write_junit(report).find(junit_flag) == std::string::npos);
    }
}

TEST_CASE("a compile failure shows the compile log") {
    const std::string text = text_of(compile_failure_report());
    CHECK(text.find("Compile log\n  probe.cu:12:5: error: identifier \"tile\" is undefined\n") !=
          std::string::npos);
    CHECK(text.find("[FAIL]    Compile and ABI  0/1") != std::string::npos);
}

TEST_CASE("a long log is cut in the plain text and whole in verbose text") {
    Report report = compile_failure_report();
    report.compile_log.clear();
    for (int i = 0; i < 100; ++i) {
        report.compile_log += "warning " + std::to_string(i) + "\n";
    }
    const std::string plain = text_of(report);
    CHECK(plain.find("warning 59\n") != std::string::npos);
    CHECK(plain.find("warning 60\n") == std::string::npos);
    CHECK(plain.find("40 more lines") != std::string::npos);
    const std::string verbose = text_of(report, false, true);
    CHECK(verbose.find("warning 99\n") != std::string::npos);
    CHECK(verbose.find("seed 12345678901234567") == std::string::npos);  // not this report's
    CHECK(text_of(passing_report(), false, true).find("seed 12345678901234567") !=
          std::string::npos);
}

TEST_CASE("on the simulator the text speaks of modeled costs and never of times") {
    const std::string text = text_of(simulated_report());
    const auto lines = lines_of(text);
    CHECK(lines[0] ==
          "PASS  11/13  example-student  day15-bank-conflicts  on the PTX simulator (sm_90, sim), "
          "modeled costs");
    CHECK(lines[0].size() <= 100);
    CHECK(text.find("modeled cost") != std::string::npos);
    std::string lower = text;
    for (auto& c : lower) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    CHECK(lower.find("time") == std::string::npos);
    CHECK_FALSE(std::regex_search(lower, std::regex(R"(\bms\b)")));
    const std::string markdown = grader::write_markdown(simulated_report());
    CHECK(markdown.find("modeled cost") != std::string::npos);
    CHECK(markdown.find("median ms") == std::string::npos);
}

TEST_CASE("the simulator's environment section names no driver and no SMs it does not have") {
    Report report = simulated_report();
    report.environment.driver_version.clear();
    report.environment.sm_count = 0;
    report.environment.blocks_per_sm = 0;
    report.environment.nvrtc_version = "13.0";
    const std::string verbose = text_of(report, false, true);
    CHECK(verbose.find("Environment") != std::string::npos);
    CHECK(verbose.find("  NVRTC 13.0, grader ") != std::string::npos);
    CHECK(verbose.find("driver ,") == std::string::npos);
    CHECK(verbose.find("0 SMs") == std::string::npos);
    CHECK(verbose.find("0 blocks per SM") == std::string::npos);
}

TEST_CASE("on the simulator a grade whose rows have no modeled cost does not claim modeled costs") {
    // An exercise whose timing needs a GPU (simulator.modeled_timing: false): no row carries a
    // ratio on the simulator.
    Report report = simulated_report();
    for (auto& row : report.rows) {
        row.ratio.reset();
    }
    const auto lines = lines_of(text_of(report));
    CHECK(lines[0].find("on the PTX simulator (sm_90, sim), not timed") != std::string::npos);
    CHECK(lines[0].find("modeled costs") == std::string::npos);
}

// -------------------------------------------------------------------------------------------------
TEST_CASE("the JSON report is the schema, indented by two, and reads back to the same report") {
    Report report = failing_accumulator_report();
    find_row(report, "student", 16)->outputs[1].ok = false;
    find_row(report, "student", 16)->outputs[1].first_bad = 7;
    find_row(report, "student", 16)->outputs[1].first_bad_value = std::nan("");
    report.interruption =
        grader::Interruption{grader::StopKind::timeout, "run student stride 32", "30 s", true};
    report.folder_problem = grader::FolderProblem{grader::FolderProblem::Kind::other_exercise,
                                                  "day15-padding", "grade it with ..."};
    const std::string text = grader::write_json(report);
    CHECK(text.back() == '\n');
    CHECK(text.rfind("{\n  \"", 0) == 0);
    const json parsed = json::parse(text);
    CHECK(parsed["schema"] == "gpu-course-grader/report");
    CHECK(parsed["schema_version"] == 3);
    CHECK(parsed["verdict"] == "fail");
    CHECK(parsed["score"] == 9);
    const Report back = parsed.get<Report>();
    CHECK(json(back) == json(report));
    CHECK(back.rows.size() == report.rows.size());
    const auto* hidden = &back.rows[3].outputs[1];
    REQUIRE(back.rows[3].stride == 16);
    CHECK(std::isnan(hidden->first_bad_value));
    CHECK(back.seed == 12345678901234567ULL);
    CHECK(parsed["folder_problem"]["kind"] == "other_exercise");
    REQUIRE(back.folder_problem.has_value());
    CHECK(back.folder_problem->detail == "day15-padding");
}

TEST_CASE("bytes that are not UTF-8 do not stop any writer, and every JSON stays valid") {
    Report report = passing_report();
    report.kernel_output = "ok \xff\xfe \xc3\x28 \xed\xa0\x80 end";
    report.compile_log = std::string("nul\0byte", 8);
    for (const auto& text : {grader::write_json(report), grader::write_gradescope(report),
                             grader::write_prairielearn(report)}) {
        const json parsed = json::parse(text);  // throws on invalid JSON
        CHECK(parsed.is_object());
        CHECK(grader::text::first_invalid_utf8(text) == std::string::npos);
    }
    CHECK(grader::text::first_invalid_utf8(text_of(report)) == std::string::npos);
    CHECK(grader::text::first_invalid_utf8(grader::write_markdown(report)) == std::string::npos);
}

TEST_CASE(
    "no JSON format writes a bidi, C1 or separator character raw, and each reads back exact") {
    // The red team's id: an override and an isolate (they reorder what a terminal shows), NEL (a
    // C1 control) and LINE SEPARATOR (which ends a line in JavaScript).
    const std::string hostile =
        "\x1b[31mPASS 15/15\x1b[0m\xe2\x80\xae\xe2\x81\xa6x\nFORGED\r"
        "\xc2\x85\xe2\x80\xa8\xe2\x80\xa9\x7f Jos\xc3\xa9";
    Report report = failing_accumulator_report();
    report.student_id = hostile;
    report.sentence = hostile;
    report.compile_log = hostile;
    report.kernel_output = hostile;
    for (const auto& text : {grader::write_json(report), grader::write_gradescope(report),
                             grader::write_prairielearn(report)}) {
        for (const char* raw : {"\xe2\x80\xae", "\xe2\x81\xa6", "\xc2\x85", "\xe2\x80\xa8",
                                "\xe2\x80\xa9", "\x7f", "\x1b", "\r"}) {
            CHECK(text.find(raw) == std::string::npos);
        }
        CHECK(text.find("Jos\xc3\xa9") != std::string::npos);  // other letters stay readable
    }
    const std::string written = grader::write_json(report);
    CHECK(written.find("\\u202e\\u2066x\\nFORGED\\r\\u0085\\u2028\\u2029\\u007f") !=
          std::string::npos);
    const json parsed = json::parse(written);
    CHECK(parsed["student_id"] == hostile);
    CHECK(parsed["kernel_output"] == hostile);
    CHECK(json(parsed.get<Report>()) == json(report));
}

TEST_CASE("a JSON report written by an earlier grader still reads and shows the failing thread") {
    std::ifstream in(std::string(GRADER_FIXTURES_DIR) + "/reports/failing_accumulator.json");
    REQUIRE(in.good());
    const Report report = json::parse(in).get<Report>();
    CHECK(report.verdict == Verdict::fail);
    CHECK(text_of(report).find("stride 8: thread 1234 (block 4, thread 210) holds 1024, expected "
                               "2048") != std::string::npos);
}

// -------------------------------------------------------------------------------------------------
TEST_CASE("the markdown report has a heading, the tables and the checks as a list") {
    const std::string markdown = grader::write_markdown(failing_accumulator_report());
    CHECK(markdown.rfind("## FAIL — 9/13 — Day 15: shared memory bank conflicts\n", 0) == 0);
    CHECK(markdown.find("| stride | degree (model) | your prediction |") != std::string::npos);
    CHECK(markdown.find("|---:|") != std::string::npos);
    CHECK(markdown.find("- ❌ **FAIL** Accumulator check — 0/2") != std::string::npos);
    CHECK(markdown.find("- 📝 **REVIEW**") != std::string::npos);
    CHECK(markdown.find("stride 8: thread 1234 (block 4, thread 210) holds 1024") !=
          std::string::npos);
    CHECK(markdown.find("| 8 | 8 | 8 | 7.85 | 6.21 |") != std::string::npos);
    CHECK(markdown.find("\x1b") == std::string::npos);
}

TEST_CASE("a student's text cannot break the markdown table or close the log's fence") {
    Report report = compile_failure_report();
    report.student_id = "eve|<img src=x>";
    report.compile_log = "```\n# not a heading\n````";
    const std::string markdown = grader::write_markdown(report);
    CHECK(markdown.find("eve\\|\\<img src=x\\>") != std::string::npos);
    CHECK(markdown.find("`````text\n```\n# not a heading\n````\n`````\n") != std::string::npos);
}

// -------------------------------------------------------------------------------------------------
TEST_CASE(
    "the Gradescope results carry the score, the fields Gradescope reads and one test per "
    "check") {
    const Report report = failing_accumulator_report();
    const json results = json::parse(grader::write_gradescope(report));
    CHECK(results["score"].is_number());
    CHECK(results["score"] == 9);
    CHECK(results["max_score"] == 13);
    CHECK(results["execution_time"].is_number_integer());
    CHECK(results["execution_time"] == 4);
    CHECK(results["output_format"] == "text");
    CHECK(results["visibility"] == "visible");
    CHECK(results["stdout_visibility"] == "hidden");
    const std::string output = results["output"];
    CHECK(output.rfind("FAIL  9/13  example-student", 0) == 0);
    CHECK(output.find("6.21") != std::string::npos);
    CHECK(output.find("stride 8: thread 1234") != std::string::npos);
    REQUIRE(results["tests"].size() == report.checks.size());
    double total = 0;
    for (const auto& test : results["tests"]) {
        CHECK(test["name"].is_string());
        CHECK(test["score"].is_number());
        CHECK(test["max_score"].is_number());
        CHECK((test["status"] == "passed" || test["status"] == "failed"));
        CHECK(test["output"].is_string());
        CHECK(test["visibility"] == "visible");
        total += test["score"].get<double>();
    }
    CHECK(total == doctest::Approx(report.score));
    const json& accumulator = results["tests"][2];
    CHECK(accumulator["status"] == "failed");
    CHECK(accumulator["max_score"] == 2);
    const json& review = results["tests"][7];
    CHECK(review["status"] == "passed");
    CHECK(review["score"] == 0);
    CHECK(review["max_score"] == 0);
    CHECK(review["output"].get<std::string>().find("review") != std::string::npos);
}

TEST_CASE("an ungradable report gives Gradescope a 0 that says it is no grade, and why") {
    const json results = json::parse(grader::write_gradescope(ungradable_report()));
    CHECK(results["score"] == 0);
    const std::string output = results["output"];
    CHECK(output.rfind("UNGRADABLE", 0) == 0);
    CHECK(output.find("no CUDA device was found") != std::string::npos);
    CHECK(output.find("Gradescope has no \"ungradable\"") != std::string::npos);
    for (const auto& test : results["tests"]) {
        CHECK(test["score"] == 0);
    }
}

// -------------------------------------------------------------------------------------------------
TEST_CASE("the PrairieLearn results give a score in [0, 1] and one test per check") {
    const Report report = failing_accumulator_report();
    const json results = json::parse(grader::write_prairielearn(report));
    CHECK(results["gradable"] == true);
    CHECK(results["score"].get<double>() == doctest::Approx(9.0 / 13.0));
    CHECK(results["message"].get<std::string>().rfind("FAIL 9/13", 0) == 0);
    CHECK(results["output"].get<std::string>().find("12.34") != std::string::npos);
    REQUIRE(results["tests"].size() == report.checks.size());
    for (const auto& test : results["tests"]) {
        for (const char* key : {"name", "description", "message", "output"}) {
            CHECK(test[key].is_string());
        }
        CHECK(test["points"].is_number());
        CHECK(test["max_points"].is_number());
    }
    CHECK(results["tests"][2]["points"] == 0);
    CHECK(results["tests"][2]["max_points"] == 2);
    CHECK(results["tests"].back()["max_points"] == 0);

    Report over = passing_report();
    over.score = 20;  // points beyond the maximum still score 1
    CHECK(json::parse(grader::write_prairielearn(over))["score"] == 1.0);
}

TEST_CASE("an ungradable report is not gradable on PrairieLearn, and says why") {
    const json results = json::parse(grader::write_prairielearn(ungradable_report()));
    CHECK(results["gradable"] == false);
    CHECK(results["score"] == 0.0);
    REQUIRE(results["format_errors"].is_array());
    CHECK(results["format_errors"][0].get<std::string>().find("no CUDA device was found") !=
          std::string::npos);
}

TEST_CASE("an ungradable result on PrairieLearn puts no points at stake, passed checks included") {
    const Report report = ungradable_report();
    REQUIRE(report.checks[0].passed());
    const json results = json::parse(grader::write_prairielearn(report));
    REQUIRE(results["tests"].size() == report.checks.size());
    for (const auto& test : results["tests"]) {
        CAPTURE(test["name"]);
        CHECK(test["points"] == 0);
        CHECK(test["max_points"] == 0);  // neutral, not a red 0/1
    }
}

TEST_CASE("the exercise decides whether a compile error or a missing file is gradable") {
    Report compile = not_run_report();
    Report missing = compile_failure_report();
    missing.compile_log.clear();
    missing.missing_files = {"probe.cu"};
    SUBCASE("by default both are graded, as failures") {
        for (const Report* report : {&compile, &missing}) {
            const json results = json::parse(grader::write_prairielearn(*report));
            CHECK(results["gradable"] == true);
            CHECK(results["tests"][0]["max_points"] == 1);
        }
    }
    SUBCASE("gradable: false where the exercise says so, with every test neutral") {
        grader::PrairieLearnOptions strict;
        strict.compile_error_gradable = false;
        strict.missing_file_gradable = false;
        const json compiled = json::parse(grader::write_prairielearn(compile, strict));
        CHECK(compiled["gradable"] == false);
        // The reason names the error where it is, and says the attempt is not counted.
        const std::string reason = compiled["format_errors"][0].get<std::string>();
        CHECK(reason.rfind("probe.cu did not compile: probe.cu:12:5: error: identifier", 0) == 0);
        CHECK(reason.find("this attempt does not count") != std::string::npos);
        for (const auto& test : compiled["tests"]) {
            CHECK(test["points"] == 0);
            CHECK(test["max_points"] == 0);
        }
        const json absent = json::parse(grader::write_prairielearn(missing, strict));
        CHECK(absent["gradable"] == false);
        CHECK(absent["format_errors"][0].get<std::string>().find("missing probe.cu") !=
              std::string::npos);
        for (const auto& test : absent["tests"]) {
            CHECK(test["max_points"] == 0);
        }
        // A report that is neither stays a grade under the same policy.
        CHECK(json::parse(grader::write_prairielearn(failing_accumulator_report(),
                                                     strict))["gradable"] == true);
        grader::ReportOptions options;
        options.prairielearn = strict;
        CHECK(grader::write_report(compile, grader::Format::prairielearn, options) ==
              grader::write_prairielearn(compile, strict));
    }
}

// -------------------------------------------------------------------------------------------------
TEST_CASE("every JUnit file passes the Jenkins xUnit plugin's junit-10.xsd") {
    Report hostile = failing_accumulator_report();
    hostile.exercise_id = "day15 <\"bank\" & 'conflicts'>";
    hostile.student_id = "eve\x1b[2J\nPASS";
    hostile.checks[2].message = "a < b \x01\x08\x1b[31m\x7f \xff\xfe \xef\xbf\xbf";
    hostile.kernel_output = "</system-out><evil/>\x0c";
    hostile.wall_seconds = -1.0;  // a clock that went backwards still writes a valid time
    const std::vector<std::pair<const char*, Report>> reports = {
        {"pass", passing_report()},
        {"fail", failing_accumulator_report()},
        {"ungradable", ungradable_report()},
        {"compile failure, later checks not run", not_run_report()},
        {"simulated", simulated_report()},
        {"an empty sentence", empty_sentence_report()},
        {"hostile text", hostile}};
    for (const auto& entry : reports) {
        const auto& what = entry.first;
        const auto& report = entry.second;
        CAPTURE(what);
        valid_for_jenkins(grader::write_junit(report));
    }
}

TEST_CASE("the JUnit XML has a failure for each failed check and skipped for a review item") {
    REQUIRE(have_xmllint());
    const JunitFile file(grader::write_junit(failing_accumulator_report()));
    CHECK(file.xpath("string(/testsuites/@tests)") == "8");
    CHECK(file.xpath("count(/testsuites/@skipped)") == "0");
    CHECK(file.xpath("string(//testsuite[@name='day15-bank-conflicts']/@failures)") == "2");
    CHECK(file.xpath("string(//testsuite/@errors)") == "0");
    CHECK(file.xpath("string(//testsuite/@skipped)") == "1");
    CHECK(file.xpath("string(//testsuite/@time)") == "3.200");
    CHECK(file.xpath("string(//testcase[@name='accumulator']/@classname)") ==
          "day15-bank-conflicts");
    CHECK(file.xpath("string(//testcase[@name='accumulator']/failure/@message)")
              .find("did not hold exactly 2048") != std::string::npos);
    CHECK(file.xpath("count(//testcase[@name='compile_abi']/*)") == "0");
    CHECK(file.xpath("count(//testcase[@name='sentence']/skipped)") == "1");
    const std::string out = file.xpath("string(//system-out)");
    CHECK(out.find("stride 8: thread 1234 (block 4, thread 210) holds 1024") != std::string::npos);
    CHECK(out.find("12.34") != std::string::npos);
}

TEST_CASE("checks that did not run are skipped in JUnit, not failures") {
    REQUIRE(have_xmllint());
    const JunitFile file(grader::write_junit(not_run_report()));
    CHECK(file.xpath("string(//testsuite/@failures)") == "1");  // the compile alone
    CHECK(file.xpath("string(//testsuite/@skipped)") == "2");
    CHECK(file.xpath("count(//testcase[@name='compile_abi']/failure)") == "1");
    for (const char* id : {"accumulator", "ordering"}) {
        CAPTURE(id);
        CHECK(file.xpath(std::string("count(//testcase[@name='") + id + "']/failure)") == "0");
        CHECK(file.xpath(std::string("string(//testcase[@name='") + id + "']/skipped/@message)")
                  .rfind("Not run:", 0) == 0);
    }
}

TEST_CASE("an empty sentence is a failed review item in JUnit") {
    REQUIRE(have_xmllint());
    const JunitFile file(grader::write_junit(empty_sentence_report()));
    CHECK(file.xpath("string(//testcase[@name='sentence']/failure/@type)") == "review");
    CHECK(file.xpath("string(//testsuite/@failures)") == "2");
}

TEST_CASE("an ungradable report is a JUnit error naming the interruption") {
    REQUIRE(have_xmllint());
    const JunitFile file(grader::write_junit(ungradable_report()));
    CHECK(file.xpath("string(//testsuite/@errors)") == "1");
    CHECK(file.xpath("string(//testcase[@name='grading']/error/@type)") == "no_gpu");
    CHECK(file.xpath("string(//testcase[@name='grading']/error/@message)") ==
          "no CUDA device was found");
}

TEST_CASE("markup, quotes and control characters come back as text, never as XML") {
    REQUIRE(have_xmllint());
    Report report = failing_accumulator_report();
    report.exercise_id = "day15 <\"bank\" & 'conflicts'>";
    report.checks[2].message = "a < b && c > d \"quoted\" ]]> \x01\x08\x1b[31m\x7f";
    report.checks[2].details = {"line\nbreak\ttab\rreturn", "bad \xff\xfe\xc0\xaf bytes"};
    report.kernel_output = "</system-out><evil/>\x0c";
    const std::string xml = grader::write_junit(report);
    CHECK(xml.find('\x1b') == std::string::npos);
    const JunitFile file(xml);
    CHECK(file.xpath("string(//testsuite/@name)") == report.exercise_id);
    const std::string message = file.xpath("string(//testcase[3]/failure/@message)");
    CHECK(message.rfind("a < b && c > d \"quoted\" ]]> \\x01\\x08\\x1b[31m\\x7f", 0) == 0);
    CHECK(file.xpath("string(//testcase[3]/failure)").find("line\nbreak\ttab\\x0dreturn") !=
          std::string::npos);
    CHECK(file.xpath("count(//evil)") == "0");
    CHECK(file.xpath("string(//system-out)").find("</system-out><evil/>\\x0c") !=
          std::string::npos);
}

// -------------------------------------------------------------------------------------------------
TEST_CASE("formats are named, parsed and written under their conventional file names") {
    using grader::Format;
    for (const Format format : {Format::text, Format::json, Format::markdown, Format::gradescope,
                                Format::prairielearn, Format::junit}) {
        CHECK(grader::parse_format(grader::to_string(format)) == format);
    }
    CHECK_FALSE(grader::parse_format("xml").has_value());
    CHECK_FALSE(grader::parse_format("JSON").has_value());
    CHECK(grader::report_file_name(Format::text, false) == "report.txt");
    CHECK(grader::report_file_name(Format::json, true) == "report.json");
    CHECK(grader::report_file_name(Format::markdown, false) == "report.md");
    CHECK(grader::report_file_name(Format::gradescope, false) == "results.json");
    CHECK(grader::report_file_name(Format::gradescope, true) == "gradescope-results.json");
    CHECK(grader::report_file_name(Format::prairielearn, false) == "results.json");
    CHECK(grader::report_file_name(Format::prairielearn, true) == "prairielearn-results.json");
    CHECK(grader::report_file_name(Format::junit, true) == "junit.xml");

    const Report report = passing_report();
    const grader::TextOptions color{true, false};
    CHECK(grader::write_report(report, Format::text, color) == grader::write_text(report, color));
    CHECK(grader::write_report(report, Format::json, color) == grader::write_json(report));
    CHECK(grader::write_report(report, Format::junit, color) == grader::write_junit(report));
    CHECK(grader::write_report(report, Format::gradescope, color) ==
          grader::write_gradescope(report));
}

TEST_CASE("the schema document's example reads as a report and has every field the grader writes") {
    std::ifstream in(std::string(GRADER_SOURCE_DIR) + "/docs/report-schema.md");
    REQUIRE(in.good());
    const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::size_t start = doc.find("```json\n");
    REQUIRE(start != std::string::npos);
    const std::size_t end = doc.find("\n```", start + 8);
    const json example = json::parse(doc.substr(start + 8, end - start - 8));
    const Report read_back = example.get<Report>();
    CHECK(read_back.verdict == Verdict::fail);
    CHECK(text_of(read_back).find("stride 8: thread 1234 (block 4, thread 210) holds 1024") !=
          std::string::npos);

    // Every object in the example has exactly the keys json.cpp writes.
    Report written = failing_accumulator_report();
    written.interruption = grader::Interruption{grader::StopKind::timeout, "run", "slow", true};
    const json actual = json(written);
    const auto keys = [](const json& object) {
        std::vector<std::string> names;
        for (const auto& item : object.items()) {
            names.push_back(item.key());
        }
        return names;
    };
    CHECK(keys(example) == keys(actual));
    CHECK(keys(example["checks"][0]) == keys(actual["checks"][0]));
    CHECK(keys(example["rows"][0]) == keys(actual["rows"][0]));
    CHECK(keys(example["rows"][0]["timing"]) == keys(actual["rows"][0]["timing"]));
    CHECK(keys(example["rows"][0]["outputs"][0]) == keys(actual["rows"][0]["outputs"][0]));
    CHECK(keys(example["environment"]) == keys(actual["environment"]));
    CHECK(keys(example["exercise"]) == keys(actual["exercise"]));
}

TEST_CASE("the seed and the machine are one footer line by default, so a grade can be repeated") {
    const auto lines = lines_of(unwrapped(text_of(passing_report())));
    REQUIRE_FALSE(lines.empty());
    CHECK(lines.back().rfind("seed 12345678901234567 (--seed 12345678901234567 repeats this "
                             "grade), cuda on NVIDIA H200",
                             0) == 0);
    // Verbose output has the whole Environment section instead.
    const auto verbose = lines_of(text_of(passing_report(), false, true));
    CHECK(verbose.back().find("repeats this grade") == std::string::npos);
}

TEST_CASE("the simulator's table says modeled, and shows no min-max spread of one number") {
    const std::string text = text_of(simulated_report());
    CHECK(text.find("modeled") != std::string::npos);
    CHECK(text.find("measured ") == std::string::npos);
    for (const ReportRow& row : simulated_report().rows) {
        if (row.ratio_min && row.ratio_max && *row.ratio_min == *row.ratio_max) {
            const std::string twice =
                two_decimals(*row.ratio_min) + "–" + two_decimals(*row.ratio_max);
            CHECK(text.find(twice) == std::string::npos);
        }
    }
}

TEST_CASE("explain's lane table of a 128-bit access states the width's rule, words and banks") {
    // The column read of a float4 tile[32][32]: lane L reads words 128L..128L+3, banks 0-3 for
    // every lane; a quarter-warp's 8 lanes are served together, so each shares its banks with the
    // 7 others of its quarter: 32 wavefronts where 4 is the fewest.
    grader::ExplainedWarp warp;
    warp.wavefronts = 32;
    warp.ideal_wavefronts = 4;
    warp.bytes_per_lane = 16;
    warp.rule = "128-bit accesses: a wavefront carries 8 lanes' 128 bytes";
    warp.banks =
        "32 lanes of 128 bits (128 words in 4 banks) in 32 wavefronts, where 4 is the "
        "fewest: 8-way conflict";
    for (std::uint32_t lane = 0; lane < 32; ++lane) {
        warp.lanes.push_back({true, 128ull * lane, 0, 0xffu << (lane / 8 * 8)});
    }
    grader::ExplainedLine line;
    line.counts = {"transpose.cu", 27, false, 16, 64, 64 * 32, 64 * 4, 8.0};
    line.max_degree = 8.0;
    line.representative = warp;
    grader::ExplainedStride stride;
    stride.load_degree = 8.0;
    stride.lines.push_back(line);
    grader::Explanation explanation;
    explanation.kernel_name = "transposeTiled";
    explanation.source_name = "transpose.cu";
    explanation.strides.push_back(stride);
    const std::string text = grader::write_explanation_text(explanation, false);
    CHECK(text.find("transpose.cu:27 (load, 128-bit): 8-way conflict, 32.00 wavefronts per "
                    "request over 64 requests (4 at the fewest)") != std::string::npos);
    CHECK(text.find("32 wavefronts, 4 at the fewest") != std::string::npos);
    CHECK(text.find("128-bit accesses: a wavefront carries 8 lanes' 128 bytes") !=
          std::string::npos);
    CHECK(text.find("shares a bank in its quarter-warp with") != std::string::npos);
    // Lane 9: words 1152-1155 in banks 0-3, beside the 7 other lanes of its quarter.
    CHECK(text.find("   9      1152-1155      0-3  lanes 8,10,11,12,13,14,15") !=
          std::string::npos);
}
