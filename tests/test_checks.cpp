#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "checks/checks.hpp"
#include "exercise/exercise.hpp"
#include "model/bank_model.hpp"
#include "model/diagnosis.hpp"
#include "model/finding.hpp"
#include "model/measurements.hpp"
#include "model/observations.hpp"
#include "model/report.hpp"
#include "report/findings_text.hpp"
#include "test_paths.hpp"

using namespace grader;

namespace {

const Exercise& day15() {
    static const Exercise exercise =
        load_exercise(std::filesystem::path(GRADER_SOURCE_DIR) / "exercises/day15-bank-conflicts");
    return exercise;
}

// Ratios like the H200's: about 0.77 per extra degree above 1, odd strides at 1.
double h200_like_ratio(int stride) {
    return 1.0 + 0.77 * (static_cast<double>(conflict_degree(stride)) - 1.0);
}

OutputComparison good(const std::string& input, double expected) {
    OutputComparison r;
    r.input = input;
    r.ran = true;
    r.ok = true;
    r.expected = expected;
    r.elements = 270336;
    return r;
}

SharedAccessCounts counted(int stride) {
    SharedAccessCounts counts;
    counts.load_requests = 16384;
    counts.load_wavefronts = 16384 * conflict_degree(stride);
    counts.store_requests = 64;
    counts.store_wavefronts = 64;
    return counts;
}

KernelRun timed_run(const std::string& kernel, int stride, double ratio) {
    KernelRun run;
    run.kernel = kernel;
    run.stride = stride;
    run.outputs = {good("ones", 2048.0), good("hidden", 15000.0)};
    run.counts = counted(stride);
    run.count_source = "simulator";
    TimingStats stats;
    stats.median_ms = 0.087 * ratio;
    stats.min_ms = stats.median_ms * 0.99;
    stats.max_ms = stats.median_ms * 1.01;
    stats.samples = 12;
    run.timing = stats;
    if (stride != 1) {
        run.ratio = ratio;
        run.ratio_min = ratio * 0.99;
        run.ratio_max = ratio * 1.01;
    }
    return run;
}

// A correct submission timed on an H200-like GPU, with the student's kernel's ratios from
// student_ratio (the reference always follows the model).
Measurements measured(const std::function<double(int)>& student_ratio) {
    Measurements m;
    m.seed = 42;
    m.environment.backend = "cuda";
    m.environment.gpu_available = true;
    m.environment.device_name = "NVIDIA H200";
    m.unnamed_strides = draw_unnamed_strides(day15(), m.seed);
    m.student.attempted = m.student.ok = true;
    m.student.arch = "sm_90";
    m.student.signature = "probeSharedStride(float const*, float*, unsigned long, int)";
    m.references["reference"] = m.student;
    for (const int s : student_strides_to_run(day15(), m.unnamed_strides)) {
        m.runs.push_back(timed_run("student", s, student_ratio(s)));
    }
    for (const int s : reference_strides_to_run(day15(), m.unnamed_strides)) {
        m.runs.push_back(timed_run("reference", s, h200_like_ratio(s)));
    }
    return m;
}

Submission correct_answers() {
    Submission s;
    s.student_id = "alice";
    s.gpu_name = "Tesla T4";
    for (const auto& [stride, ratio] :
         std::vector<std::pair<int, double>>{{3, 1.0}, {8, 7.8}, {16, 15.6}}) {
        SubmissionRow row;
        row.subject = Case{"student", stride};
        row.key = std::to_string(stride);
        row.predicted_degree = static_cast<int>(conflict_degree(stride));
        row.measured = ratio;
        s.rows.push_back(row);
    }
    s.sentence = "Stride 3 shares no factor with 32, so it is conflict free.";
    s.answers_given = 6;
    return s;
}

// `id` is a plain string: with a std::string parameter, GCC 13 and 14 take the returned
// reference for one to that temporary (-Wdangling-reference).
const CheckResult& check(const Report& report, const char* id) {
    const auto found = std::find_if(report.checks.begin(), report.checks.end(),
                                    [&](const CheckResult& c) { return c.id == id; });
    REQUIRE(found != report.checks.end());
    return *found;
}

bool any_detail_contains(const CheckResult& c, const std::string& text) {
    return std::any_of(c.details.begin(), c.details.end(),
                       [&](const std::string& d) { return d.find(text) != std::string::npos; });
}

// Every thread of the grid's 270336 wrong from thread 0 on, holding `value` (a NaN the kernel
// wrote where `wrote_nan`).
void every_thread_wrong(OutputComparison& output, double value, bool wrote_nan, double expected) {
    output.ok = false;
    output.bad_elements = 270336;
    output.first_bad = 0;
    output.first_bad_value = value;
    output.first_bad_wrote_nan = wrote_nan;
    output.first_bad_expected = expected;
}

}  // namespace

TEST_CASE("a correct submission on a GPU that shows the model passes with every point") {
    const Report report = evaluate(day15(), correct_answers(), measured(h200_like_ratio), "alice/");
    CHECK(report.verdict == Verdict::pass);
    CHECK(report.score == doctest::Approx(report.max_score));
    CHECK(report.max_score > 0);
    CHECK(exit_code(report.verdict) == 0);
    // Every ratio is reported, the student's and the reference's.
    const auto student_rows =
        std::count_if(report.rows.begin(), report.rows.end(),
                      [](const ReportRow& r) { return r.kernel == "student"; });
    CHECK(student_rows >= 5);
    for (const auto& row : report.rows) {
        CHECK(row.ratio.has_value());
    }
    CHECK(check(report, "sentence").review);
}

TEST_CASE("ratios are not expected to equal the degree, only to order as it predicts") {
    // The H200 reads about 24.6 at stride 32 and 12.3 at stride 16: still a pass.
    const Report report = evaluate(day15(), correct_answers(), measured(h200_like_ratio), "a");
    CHECK(check(report, "ordering").passed());
    CHECK(check(report, "consistency").passed());
}

TEST_CASE("a kernel that ignores the stride fails the ordering and the consistency") {
    const Report report =
        evaluate(day15(), correct_answers(), measured([](int) { return 1.0; }), "b");
    CHECK(report.verdict == Verdict::fail);
    CHECK_FALSE(check(report, "ordering").passed());
    CHECK(any_detail_contains(check(report, "ordering"), "stride 16"));
    CHECK_FALSE(check(report, "consistency").passed());
    CHECK(exit_code(report.verdict) == 1);
}

TEST_CASE("a kernel that special-cases the named strides is caught at a stride it did not name") {
    const auto sniffing = [](int stride) {
        return (stride == 3 || stride == 8 || stride == 16 || stride == 4) ? h200_like_ratio(stride)
                                                                           : 1.0;
    };
    // Find a seed that draws an even unnamed stride, where sniffing shows.
    Measurements m;
    for (std::uint64_t seed = 1; seed < 100; ++seed) {
        const auto drawn = draw_unnamed_strides(day15(), seed);
        if (std::any_of(drawn.begin(), drawn.end(), [](int s) { return s % 2 == 0; })) {
            m = measured(sniffing);
            m.seed = seed;
            break;
        }
    }
    m.unnamed_strides = draw_unnamed_strides(day15(), m.seed);
    m.runs.clear();
    for (const int s : student_strides_to_run(day15(), m.unnamed_strides)) {
        m.runs.push_back(timed_run("student", s, sniffing(s)));
    }
    for (const int s : reference_strides_to_run(day15(), m.unnamed_strides)) {
        m.runs.push_back(timed_run("reference", s, h200_like_ratio(s)));
    }
    const Report report = evaluate(day15(), correct_answers(), m, "c");
    CHECK(check(report, "ordering").passed());
    CHECK_FALSE(check(report, "consistency").passed());
    CHECK(any_detail_contains(check(report, "consistency"), "a stride you did not name"));
}

TEST_CASE(
    "a stride sniffer fails the consistency at every seed, not only where an even stride "
    "happens to be drawn") {
    // Honest at the strides the checks name, stride 1 elsewhere; the variant is also honest at
    // the odd unnamed strides, whose degree is 1 anyway.
    const auto sniffing = [](int stride) {
        return (stride == 3 || stride == 8 || stride == 16 || stride == 4) ? h200_like_ratio(stride)
                                                                           : 1.0;
    };
    const auto odd_honest = [](int stride) {
        return (stride % 2 == 1 || stride == 8 || stride == 16 || stride == 4)
                   ? h200_like_ratio(stride)
                   : 1.0;
    };
    for (std::uint64_t seed = 0; seed < 60; ++seed) {
        const auto drawn = draw_unnamed_strides(day15(), seed);
        CHECK(std::any_of(drawn.begin(), drawn.end(), [](int s) { return std::gcd(s, 32) > 1; }));
        for (const auto& kernel :
             {std::function<double(int)>(sniffing), std::function<double(int)>(odd_honest)}) {
            Measurements m = measured(kernel);
            m.seed = seed;
            m.unnamed_strides = drawn;
            m.runs.clear();
            for (const int s : student_strides_to_run(day15(), m.unnamed_strides)) {
                m.runs.push_back(timed_run("student", s, kernel(s)));
            }
            for (const int s : reference_strides_to_run(day15(), m.unnamed_strides)) {
                m.runs.push_back(timed_run("reference", s, h200_like_ratio(s)));
            }
            const Report report = evaluate(day15(), correct_answers(), m, "c");
            INFO("seed " << seed);
            CHECK_FALSE(check(report, "consistency").passed());
        }
    }
}

TEST_CASE("the unnamed strides are never ones the student named, and follow the seed") {
    for (std::uint64_t seed = 0; seed < 50; ++seed) {
        const auto drawn = draw_unnamed_strides(day15(), seed);
        CHECK(drawn.size() == static_cast<std::size_t>(day15().unnamed_strides_per_grade));
        for (const int s : drawn) {
            CHECK(std::find(day15().student_strides.begin(), day15().student_strides.end(), s) ==
                  day15().student_strides.end());
        }
        CHECK(drawn == draw_unnamed_strides(day15(), seed));
    }
}

TEST_CASE("a wrong accumulator names the stride, the thread, its block and its value") {
    Measurements m = measured(h200_like_ratio);
    KernelRun* run = m.run("student", 8);
    REQUIRE(run);
    OutputComparison& ones = run->outputs[0];
    ones.ok = false;
    ones.bad_elements = 270336;
    ones.first_bad = 1234;
    ones.first_bad_block = 4;
    ones.first_bad_thread_in_block = 210;
    ones.first_bad_value = 1024.0;
    ones.first_bad_expected = 2048.0;
    const Report report = evaluate(day15(), correct_answers(), m, "d");
    const CheckResult& c = check(report, "accumulator");
    CHECK_FALSE(c.passed());
    CHECK(any_detail_contains(
        c, "stride 8: thread 1234 (block 4, thread 210) holds 1024, expected 2048"));
    CHECK(any_detail_contains(c, "270336 of 270336 threads wrong"));
    CHECK(report.verdict == Verdict::fail);
    CHECK(report.summary.find("thread 1234") != std::string::npos);
}

TEST_CASE("a wrong prediction costs its share of the points and names the stride") {
    Submission answers = correct_answers();
    answers.rows[0].predicted_degree = 3;
    const Report report = evaluate(day15(), answers, measured(h200_like_ratio), "e");
    const CheckResult& c = check(report, "predicted_degrees");
    CHECK_FALSE(c.passed());
    CHECK(c.points == doctest::Approx(c.max_points * 2.0 / 3.0));
    CHECK(any_detail_contains(c, "stride 3: you predicted 3; gcd(3, 32) is 1"));
}

TEST_CASE("without a GPU the verdict is ungradable and says a GPU is needed for timing") {
    Measurements m;
    m.environment.backend = "cuda";
    m.student.attempted = m.student.ok = true;
    m.references["reference"] = m.student;
    m.interruption =
        Interruption{StopKind::no_gpu, "compile",
                     "no GPU: libcuda.so.1 could not be loaded. A GPU is needed for timing", false};
    const Report report = evaluate(day15(), correct_answers(), m, "f");
    CHECK(report.verdict == Verdict::ungradable);
    CHECK(exit_code(report.verdict) == 3);
    CHECK(report.summary.find("GPU is needed for timing") != std::string::npos);
    CHECK(check(report, "compile_abi").passed());
    CHECK(check(report, "predicted_degrees").passed());
}

TEST_CASE("a GPU whose reference kernel does not show the model is unfit, not the student") {
    Measurements m = measured(h200_like_ratio);
    for (auto& run : m.runs) {
        if (run.kernel == "reference" && run.stride == 32) {
            run.ratio = *m.run("reference", 16)->ratio;  // stride 32 no slower than 16
        }
    }
    const Report report = evaluate(day15(), correct_answers(), m, "g");
    CHECK(report.verdict == Verdict::ungradable);
    CHECK(report.summary.find("stride 32") != std::string::npos);
}

TEST_CASE("on an unfit GPU a kernel that fails its accumulator still fails") {
    Measurements m = measured(h200_like_ratio);
    for (auto& run : m.runs) {
        if (run.kernel == "reference" && run.stride == 32) {
            run.ratio = 1.0;
        }
    }
    m.run("student", 3)->outputs[0].ok = false;
    m.run("student", 3)->outputs[0].bad_elements = 1;
    const Report report = evaluate(day15(), correct_answers(), m, "h");
    CHECK(report.verdict == Verdict::fail);
}

TEST_CASE("a kernel fault is the student's failure and keeps what ran before it") {
    Measurements m = measured(h200_like_ratio);
    m.runs.erase(
        std::remove_if(m.runs.begin(), m.runs.end(),
                       [](const KernelRun& r) { return r.kernel == "student" && r.stride > 3; }),
        m.runs.end());
    for (auto& run : m.runs) {
        run.timing.reset();
        run.ratio.reset();
    }
    m.interruption = Interruption{
        StopKind::fault, "run student stride 4",
        "probeSharedStride (student) failed at stride 4: CUDA_ERROR_ILLEGAL_ADDRESS", true};
    const Report report = evaluate(day15(), correct_answers(), m, "i");
    CHECK(report.verdict == Verdict::fail);
    CHECK(any_detail_contains(check(report, "accumulator"), "stride 4"));
    CHECK(check(report, "predicted_degrees").passed());
    CHECK(check(report, "ordering").not_run());
}

TEST_CASE("a grade the kernel stopped scores alike on both backends: no counted degree on either") {
    // The traps fixture: stride 1 runs, stride 3 traps. A GPU counts after timing, which the
    // grade never reached; the simulator had counted stride 1 as it ran. Both score 6 of 15.
    for (const std::string backend : {"cuda", "sim"}) {
        CAPTURE(backend);
        Measurements m = measured(h200_like_ratio);
        m.environment.backend = backend;
        m.environment.gpu_available = backend == "cuda";
        m.runs.erase(std::remove_if(
                         m.runs.begin(), m.runs.end(),
                         [](const KernelRun& r) { return r.kernel == "student" && r.stride > 1; }),
                     m.runs.end());
        for (auto& run : m.runs) {
            run.timing.reset();
            run.ratio.reset();
            if (backend == "cuda") {
                run.counts.reset();
            }
        }
        m.interruption = Interruption{
            StopKind::fault, "run student stride 3",
            "probeSharedStride (student) failed at stride 3: the kernel executed trap", true};
        const Report report = evaluate(day15(), correct_answers(), m, "t");
        CHECK(report.verdict == Verdict::fail);
        CHECK(check(report, "counted_degrees").not_run());
        CHECK(report.score == doctest::Approx(6.0));
    }
}

TEST_CASE("a compile failure fails every kernel check with the reason, and nothing else is lost") {
    Measurements m;
    m.environment.backend = "cuda";
    m.environment.gpu_available = true;
    m.student.attempted = true;
    m.student.ok = false;
    m.student.log = "probe.cu:14:5: error: expected a \";\"";
    m.references["reference"].attempted = m.references["reference"].ok = true;
    for (const int s : reference_strides_to_run(day15(), {})) {
        m.runs.push_back(timed_run("reference", s, h200_like_ratio(s)));
    }
    const Report report = evaluate(day15(), correct_answers(), m, "j");
    CHECK(report.verdict == Verdict::fail);
    CHECK_FALSE(check(report, "compile_abi").passed());
    CHECK(check(report, "accumulator").message.find("did not compile") != std::string::npos);
    // What did not run is "not run", not a failure of its own: the root cause is the compile.
    CHECK(check(report, "accumulator").not_run());
    CHECK(check(report, "ordering").not_run());
    CHECK(check(report, "counted_degrees").not_run());
    // The summary is the diagnosis: a compile error by kind, where it is, and what to do.
    CHECK(report.summary.rfind("fail: Compile error: syntax: probe.cu did not compile", 0) == 0);
    REQUIRE(report.diagnosis);
    CHECK(report.diagnosis->cause == Cause::compile_syntax_error);
    CHECK(report.diagnosis->where == "probe.cu:14:5");
    CHECK(report.diagnosis->check == "compile_abi");
    CHECK(check(report, "predicted_degrees").passed());
    CHECK(report.compile_log.find("probe.cu:14:5") != std::string::npos);
    // The check's first line names the failure, not the fixed ABI.
    CHECK(check(report, "compile_abi").message ==
          "probe.cu did not compile: probe.cu:14:5: error: expected a \";\"");
    // What a platform may treat apart (PrairieLearn's compile_error_gradable).
    CHECK(report.compile_error);
}

TEST_CASE("a wrong signature keeps the fixed ABI's sentence; a refused include says refused") {
    Measurements m;
    m.student.attempted = true;
    m.student.ok = true;
    m.student.abi_problem = "parameter 3 is int, expected size_t";
    const Report abi = evaluate(day15(), correct_answers(), m, "abi");
    CHECK(check(abi, "compile_abi").message.find("fixed ABI") != std::string::npos);
    CHECK_FALSE(abi.compile_error);
    Measurements vetted;
    // The compile child reports a refused source as a compile that did not succeed.
    vetted.student.attempted = true;
    vetted.student.vetting_problems.push_back({1, 10, "#include \"/etc/passwd\" is not allowed"});
    const Report refused = evaluate(day15(), correct_answers(), vetted, "vet");
    CHECK(check(refused, "compile_abi").message.rfind("probe.cu was refused before compiling", 0) ==
          0);
    CHECK_FALSE(refused.compile_error);
    CHECK(std::any_of(
        check(refused, "compile_abi").details.begin(), check(refused, "compile_abi").details.end(),
        [](const std::string& d) { return d.rfind("probe.cu:1:10: #include", 0) == 0; }));
}

TEST_CASE("ordering rules read as the lesson says them") {
    OrderingRule closer;
    closer.kind = OrderingRule::Kind::closer_to;
    closer.subject = {"student", 3};
    closer.near = {"student", 1};
    closer.far = {"student", 4};
    const auto ratios = [](double r3) {
        return [r3](const Case& c) -> std::optional<double> {
            if (c.stride == 1)
                return 1.0;
            if (c.stride == 3)
                return r3;
            if (c.stride == 4)
                return 3.16;
            return std::nullopt;
        };
    };
    CHECK(evaluate_rule(day15(), closer, ratios(0.99)).passed);
    CHECK(evaluate_rule(day15(), closer, ratios(2.0)).passed);
    CHECK_FALSE(evaluate_rule(day15(), closer, ratios(2.2)).passed);
    CHECK(evaluate_rule(day15(), closer, ratios(0.99)).detail ==
          "stride 3 at 0.99x is closer to stride 1 (1x) than to stride 4 (3.16x)");
    OrderingRule missing = closer;
    missing.far = {"student", 64};
    CHECK_FALSE(evaluate_rule(day15(), missing, ratios(1.0)).evaluated);
}

TEST_CASE("a slower_than rule states the factor it observed beside the threshold") {
    OrderingRule slower;
    slower.kind = OrderingRule::Kind::slower_than;
    slower.subject = {"student", 16};
    slower.than = {"student", 8};
    slower.factor = 1.25;
    const auto ratios = [](double r16) {
        return [r16](const Case& c) -> std::optional<double> {
            if (c.stride == 8)
                return 6.3;
            if (c.stride == 16)
                return r16;
            return std::nullopt;
        };
    };
    // 12.35 / 6.3 is 1.96: the line once said "1.25 times slower" here.
    const RuleOutcome holds = evaluate_rule(day15(), slower, ratios(12.35));
    CHECK(holds.passed);
    CHECK(holds.detail ==
          "stride 16 at 12.35x is 1.96 times stride 8 (6.3x); more than 1.25 times is required");
    const RuleOutcome fails = evaluate_rule(day15(), slower, ratios(7.0));
    CHECK_FALSE(fails.passed);
    CHECK(fails.detail ==
          "stride 16 at 7x is 1.11 times stride 8 (6.3x); it must be more than 1.25 times");
}

TEST_CASE("the student's own measured ratios must tell the lesson's story, row by row") {
    SUBCASE("a T4's or an H200's ratios are plausible") {
        for (const double scale : {1.0, 0.78}) {
            Submission answers = correct_answers();
            for (auto& row : answers.rows) {
                row.measured = 1.0 + scale * (conflict_degree(row.subject.stride) - 1.0);
            }
            const Report report = evaluate(day15(), answers, measured(h200_like_ratio), "k");
            CHECK(check(report, "measured_ratios").passed());
        }
    }
    SUBCASE("999 at every stride is not a measurement of this probe") {
        Submission answers = correct_answers();
        for (auto& row : answers.rows) {
            row.measured = 999.0;
        }
        const Report report = evaluate(day15(), answers, measured(h200_like_ratio), "l");
        const CheckResult& c = check(report, "measured_ratios");
        CHECK_FALSE(c.passed());
        CHECK(report.verdict == Verdict::fail);
        CHECK(any_detail_contains(c, "stride 3: you measured 999x"));
        CHECK(any_detail_contains(c, "stride 16: you measured 999x; for a 16-way conflict"));
    }
    SUBCASE("stride 16 no slower than stride 8 is named with both rows") {
        Submission answers = correct_answers();
        answers.rows[2].measured = 7.9;  // stride 16
        const Report report = evaluate(day15(), answers, measured(h200_like_ratio), "m");
        const CheckResult& c = check(report, "measured_ratios");
        CHECK_FALSE(c.passed());
        CHECK(any_detail_contains(c, "your stride 16 is clearly slower than your stride 8"));
        CHECK(any_detail_contains(c, "stride 8 (7.8x)"));
    }
    SUBCASE("a missing stride-16 ratio never passes") {
        Submission answers = correct_answers();
        answers.rows[2].measured.reset();  // stride 16
        const Report report = evaluate(day15(), answers, measured(h200_like_ratio), "m2");
        const CheckResult& c = check(report, "measured_ratios");
        CHECK_FALSE(c.passed());
        CHECK(any_detail_contains(c, "stride 16: submission.yaml gives no measured value"));
        CHECK(any_detail_contains(c,
                                  "your stride 16 is clearly slower than your stride 8: "
                                  "stride 16 is not in submission.yaml"));
    }
    SUBCASE("missing stride-3 and stride-8 ratios are both named") {
        Submission answers = correct_answers();
        answers.rows[0].measured.reset();  // stride 3
        answers.rows[1].measured.reset();  // stride 8
        const Report report = evaluate(day15(), answers, measured(h200_like_ratio), "m3");
        const CheckResult& c = check(report, "measured_ratios");
        CHECK_FALSE(c.passed());
        CHECK(any_detail_contains(c, "stride 3 and stride 8 are not in submission.yaml"));
    }
    SUBCASE("the report shows the student's ratio beside the grader's") {
        const Report report = evaluate(day15(), correct_answers(), measured(h200_like_ratio), "n");
        const auto row = std::find_if(report.rows.begin(), report.rows.end(), [](const auto& r) {
            return r.kernel == "student" && r.stride == 16;
        });
        REQUIRE(row != report.rows.end());
        CHECK(row->claimed_ratio == doctest::Approx(15.6));
        CHECK(row->ratio == doctest::Approx(h200_like_ratio(16)));
    }
}

TEST_CASE("the counted degree must be the model's at every stride the grade runs") {
    Measurements m = measured(h200_like_ratio);
    CHECK(check(evaluate(day15(), correct_answers(), m, "o"), "counted_degrees").passed());
    // A kernel that reads conflict free whatever the stride, and spins to fake the time.
    for (auto& run : m.runs) {
        if (run.kernel == "student") {
            run.counts = counted(1);
        }
    }
    const Report report = evaluate(day15(), correct_answers(), m, "p");
    const CheckResult& c = check(report, "counted_degrees");
    CHECK_FALSE(c.passed());
    CHECK(any_detail_contains(c,
                              "stride 16: the shared loads counted 1 wavefronts per request; "
                              "the model's degree is gcd(16, 32) = 16"));
    CHECK(report.verdict == Verdict::fail);
}

TEST_CASE("a required check the machine could not run makes the grade ungradable, not a pass") {
    Measurements m = measured(h200_like_ratio);
    for (auto& run : m.runs) {
        run.counts.reset();
    }
    const Report report = evaluate(day15(), correct_answers(), m, "q");
    CHECK(check(report, "counted_degrees").not_run());
    CHECK(report.verdict == Verdict::ungradable);
    CHECK(report.summary.find("Counted conflict degree could not be checked") != std::string::npos);
}

TEST_CASE(
    "an instruction the simulator lacks, after a check already failed, reports that failure") {
    Measurements m = measured(h200_like_ratio);
    m.environment.backend = "sim";
    m.runs.erase(
        std::remove_if(m.runs.begin(), m.runs.end(),
                       [](const KernelRun& r) { return r.kernel == "student" && r.stride > 1; }),
        m.runs.end());
    m.run("student", 1)->outputs[0].ok = false;
    m.run("student", 1)->outputs[0].bad_elements = 512;
    // The exercise's own kernel stopped on an instruction the simulator lacks: the machine's.
    m.interruption = Interruption{StopKind::unsupported, "run reference stride 3",
                                  "the simulator does not support shfl.sync.idx.b32", false};
    const Report report = evaluate(day15(), correct_answers(), m, "r");
    CHECK(report.verdict == Verdict::fail);
    REQUIRE(report.diagnosis);
    CHECK(report.diagnosis->check == "accumulator");
    CHECK(report.summary.rfind("fail: Wrong outputs: ", 0) == 0);
    SUBCASE("without a failure before it, it is the machine's: ungradable") {
        m.run("student", 1)->outputs[0].ok = true;
        m.run("student", 1)->outputs[0].bad_elements = 0;
        CHECK(evaluate(day15(), correct_answers(), m, "s").verdict == Verdict::ungradable);
    }
}

TEST_CASE("the starter kit's example sentence is flagged for review, an empty one fails review") {
    Submission answers = correct_answers();
    answers.sentence =
        "  the CONFLICT degree is gcd(stride, 32) -- not a function of the stride's size: " +
        day15().example_sentence.substr(day15().example_sentence.find("3 shares"));
    Report report = evaluate(day15(), answers, measured(h200_like_ratio), "t");
    CHECK(any_detail_contains(check(report, "sentence"), "flagged for review"));
    answers.sentence = "Odd strides share no factor with 32.";
    report = evaluate(day15(), answers, measured(h200_like_ratio), "u");
    CHECK_FALSE(any_detail_contains(check(report, "sentence"), "flagged"));
    answers.sentence = "   ";
    report = evaluate(day15(), answers, measured(h200_like_ratio), "v");
    CHECK(check(report, "sentence").status == CheckStatus::failed);
    CHECK(report.verdict == Verdict::pass);  // a review item, not a required check
}

TEST_CASE("a kernel with no shared access fails the counted degree: it has no shared tile") {
    Measurements m = measured(h200_like_ratio);
    for (auto& run : m.runs) {
        if (run.kernel == "student") {
            run.counts = SharedAccessCounts{};  // counted, and not one shared load or store
        }
    }
    const Report report = evaluate(day15(), correct_answers(), m, "no-tile");
    const CheckResult& c = check(report, "counted_degrees");
    CHECK(c.status == CheckStatus::failed);
    CHECK(c.message.find("Your kernel has no shared tile") != std::string::npos);
    CHECK(report.verdict == Verdict::fail);
    SUBCASE("while counts that the machine never made stay 'not run'") {
        for (auto& run : m.runs) {
            run.counts.reset();
        }
        const Report unrun = evaluate(day15(), correct_answers(), m, "no-counts");
        CHECK(check(unrun, "counted_degrees").not_run());
        CHECK(unrun.verdict == Verdict::ungradable);
    }
}

namespace {

FindingThread lane(std::uint32_t thread) {
    FindingThread t;
    t.thread = {thread, 0, 0};
    t.warp = thread / 32;
    t.lane = thread % 32;
    return t;
}

// A race as the simulator reports it: the later access first, the earlier second.
Finding race(FindingKind kind, int stride, FindingPlace later, FindingPlace earlier,
             std::uint32_t later_thread = 35, std::uint32_t earlier_thread = 3) {
    Finding f;
    f.kind = kind;
    f.strides = {stride};
    f.lines = {std::move(later), std::move(earlier)};
    f.threads = {lane(later_thread), lane(earlier_thread)};
    f.word = SharedWord{35, "tile", 35};
    return f;
}

FindingPlace at(const char* file, int line, int column = 0) {
    return FindingPlace{file, line, column, 0};
}

}  // namespace

TEST_CASE("one diagnosis, once: a race at every stride is one line with its count and its fix") {
    Measurements m = measured(h200_like_ratio);
    std::size_t strides = 0;
    for (auto& run : m.runs) {
        if (run.kernel != "student") {
            continue;
        }
        ++strides;
        for (std::uint32_t warp = 1; warp <= 3; ++warp) {
            run.findings.push_back(race(FindingKind::race_read_after_write, run.stride,
                                        at("probe.cu", 34, 13), at("probe.cu", 25, 9),
                                        32 * warp + 3, 3));
        }
        Finding counted;
        counted.kind = FindingKind::races_counted;
        counted.strides = {run.stride};
        counted.count = 84;
        run.findings.push_back(counted);
    }
    REQUIRE(strides > 3);
    const Report report = evaluate(day15(), correct_answers(), m, "race");
    const CheckResult& c = check(report, "accumulator");
    CHECK_FALSE(c.passed());
    INFO(c.details.size());
    CHECK(c.details.size() <= 4);
    std::size_t fixes = 0;
    for (const auto& detail : c.details) {
        if (detail.find("put __syncthreads() between probe.cu:25:9 and probe.cu:34:13") !=
            std::string::npos) {
            ++fixes;
            CHECK(detail.find("strides") != std::string::npos);
        }
    }
    CHECK(fixes == 1);
    CHECK(any_detail_contains(
        c, std::to_string(84 * strides) + " warp-wide shared-memory accesses raced in all"));
    SUBCASE("the other output check says it once more only by reference") {
        const CheckResult& hidden = check(report, "hidden_input");
        REQUIRE(!hidden.findings.empty());
        CHECK(same_finding(hidden.findings.front(), c.findings.front()));
    }
}

TEST_CASE("races merge by the barrier they miss, in source order, whichever side found them") {
    const Wording words = wording(day15());
    SUBCASE("a write racing a read and the read racing the write are one fix") {
        CheckResult both;
        both.findings = {race(FindingKind::race_write_after_read, 3, at("transpose.cu", 16),
                              at("transpose.cu", 22)),
                         race(FindingKind::race_read_after_write, 3, at("transpose.cu", 22),
                              at("transpose.cu", 16))};
        collapse_details(both, words);
        REQUIRE(both.details.size() == 1);
        CHECK(both.details[0].find("put __syncthreads() between transpose.cu:16 and "
                                   "transpose.cu:22") != std::string::npos);
    }
    SUBCASE("the fix names the places in source order, by line and then column") {
        // As text, "probe.cu:9:30" sorts after "probe.cu:25:5" and its column exceeds the
        // other's; the barrier still goes after line 9.
        CheckResult lines;
        lines.findings = {race(FindingKind::race_read_after_write, 3, at("probe.cu", 25, 5),
                               at("probe.cu", 9, 30))};
        collapse_details(lines, words);
        REQUIRE(lines.details.size() == 1);
        CHECK(lines.details[0].find("; put __syncthreads() between probe.cu:9:30 and "
                                    "probe.cu:25:5") != std::string::npos);
        CheckResult columns;
        columns.findings = {race(FindingKind::race_write_after_read, 3, at("probe.cu", 25, 20),
                                 at("probe.cu", 25, 5))};
        collapse_details(columns, words);
        REQUIRE(columns.details.size() == 1);
        CHECK(columns.details[0].find("; put __syncthreads() between probe.cu:25:5 and "
                                      "probe.cu:25:20") != std::string::npos);
    }
    SUBCASE("reads of words nothing wrote are one line per place, whichever thread read") {
        CheckResult unwritten;
        for (const int stride : {1, 3, 8, 16}) {
            for (const std::uint32_t block : {0u, 70u}) {
                Finding read;
                read.kind = FindingKind::unwritten_shared_read;
                read.strides = {stride};
                read.lines = {at("probe.cu", 19)};
                read.threads = {lane(static_cast<std::uint32_t>(32 / stride))};
                read.threads.front().block = {block, 0, 0};
                read.word = SharedWord{32, "tile", 32};
                read.count = 1;
                unwritten.findings.push_back(read);
            }
        }
        Finding other = unwritten.findings.front();
        other.lines = {at("probe.cu", 21)};
        unwritten.findings.push_back(other);
        collapse_details(unwritten, words);
        REQUIRE(unwritten.details.size() == 2);
        CHECK(unwritten.details[0].find("at probe.cu:19 before any thread of its block wrote it "
                                        "(shared memory holds whatever was left there) (at "
                                        "strides 1, 3, 8 and 16)") != std::string::npos);
        CHECK(unwritten.details[1].find("at probe.cu:21") != std::string::npos);
    }
    SUBCASE("a write other warps read still names where the barrier goes") {
        CheckResult one;
        Finding written =
            race(FindingKind::race_write_after_read, 3, at("probe.cu", 30), at("probe.cu", 12));
        written.threads[1].any_warp = true;
        one.findings = {written};
        collapse_details(one, words);
        REQUIRE(one.details.size() == 1);
        CHECK(one.details[0].find("which other warps read") != std::string::npos);
        CHECK(one.details[0].find("; put __syncthreads() between probe.cu:12 and probe.cu:30") !=
              std::string::npos);
    }
}

TEST_CASE("a check keeps at most a dozen details of bounded length, saying what was cut") {
    CheckResult c;
    for (int i = 0; i < 5000; ++i) {
        Finding stop;
        stop.kind = FindingKind::kernel_stopped;
        stop.text = "detail number " + std::to_string(i) + std::string(4000, 'x');
        c.findings.push_back(stop);
    }
    c.message = std::string(100000, 'm');
    collapse_details(c, wording(day15()));
    REQUIRE(c.details.size() == kMaxDetailsPerCheck + 1);
    for (const auto& detail : c.details) {
        CHECK(detail.size() <= kMaxDetailBytes);
    }
    CHECK(c.details.back() == "and 4988 more details (cut: a check lists at most 12)");
    CHECK(c.message.size() <= 2 * kMaxDetailBytes);
    SUBCASE("the same finding at several strides is one line naming them") {
        CheckResult same;
        for (const int stride : {3, 5, 8, 9}) {
            Finding lucky;
            lucky.kind = FindingKind::right_by_warp_order;
            lucky.strides = {stride};
            same.findings.push_back(lucky);
        }
        collapse_details(same, wording(day15()));
        REQUIRE(same.details.size() == 1);
        CHECK(same.details[0] ==
              "every value came out right in the order the warps ran here, but a GPU may run "
              "them in another order (at strides 3, 5, 8 and 9)");
    }
}

TEST_CASE("measurement slips are named with what to write instead") {
    SUBCASE("an inverted ratio (stride 1's time over this one's)") {
        Submission answers = correct_answers();
        answers.rows[1].measured = 1.0 / 7.8;  // stride 8
        const Report report = evaluate(day15(), answers, measured(h200_like_ratio), "inv");
        const CheckResult& c = check(report, "measured_ratios");
        CHECK_FALSE(c.passed());
        CHECK(any_detail_contains(c, "stride 8: you measured 0.13x"));
        CHECK(any_detail_contains(c, "this looks inverted"));
        CHECK(any_detail_contains(c, "stride 1's, 7.8x"));
    }
    SUBCASE("a percentage where a ratio is asked") {
        Submission answers = correct_answers();
        answers.rows[2].measured = 1560.0;  // stride 16, as 1560%
        const Report report = evaluate(day15(), answers, measured(h200_like_ratio), "pct");
        const CheckResult& c = check(report, "measured_ratios");
        CHECK(any_detail_contains(c, "this looks like a percentage: write the ratio, 15.6x"));
    }
    SUBCASE("a raw time in milliseconds") {
        Submission answers = correct_answers();
        answers.rows[2].measured = 0.042;  // stride 16, a time
        const Report report = evaluate(day15(), answers, measured(h200_like_ratio), "ms");
        const CheckResult& c = check(report, "measured_ratios");
        CHECK(any_detail_contains(c,
                                  "if this is a time in milliseconds, write instead this "
                                  "stride's time divided by stride 1's"));
    }
}

TEST_CASE("Part 2: the lesson's bandwidth as % of copy is named as the trap it is") {
    static const Exercise padding =
        load_exercise(std::filesystem::path(GRADER_SOURCE_DIR) / "exercises/day15-padding");
    Submission answers;
    answers.student_id = "bo";
    for (const auto& [key, kernel, percent] :
         std::vector<std::tuple<std::string, std::string, double>>{{"32x32", "unpadded", 57.1},
                                                                   {"yours", "student", 82.5}}) {
        SubmissionRow row;
        row.subject = Case{kernel, 0};
        row.key = key;
        row.predicted_degree = kernel == "student" ? 1 : 32;
        row.measured = percent;
        answers.rows.push_back(row);
    }
    const Report report = evaluate(padding, answers, Measurements{}, "bo");
    const auto found =
        std::find_if(report.checks.begin(), report.checks.end(),
                     [](const CheckResult& c) { return c.id == "measured_percentages"; });
    REQUIRE(found != report.checks.end());
    CHECK_FALSE(found->passed());
    CHECK(any_detail_contains(*found,
                              "tile 32x32: you wrote 57%; 57.1 looks like the lesson's "
                              "bandwidth as a percentage of the copy's"));
    CHECK(any_detail_contains(*found, "100 / 57.1 x 100 = 175%"));
    CHECK(any_detail_contains(*found, "82.5 looks like the lesson's bandwidth"));
}

TEST_CASE("the exercise's points policy: answers all blank halve the kernel's points") {
    Submission blanks = correct_answers();
    blanks.answers_given = 0;  // the untouched kit: every predicted and measured value blank
    SubmissionProblem blank;
    blank.location = SourceLocation{"submission.yaml", 5, 30};
    blank.field = "rows[1].predicted_degree";
    blank.kind = FindingKind::answer_blank;
    blank.message = "the degree";
    blanks.problems.push_back(blank);
    const Report full = evaluate(day15(), correct_answers(), measured(h200_like_ratio), "full");
    const Report kit = evaluate(day15(), blanks, measured(h200_like_ratio), "kit");
    CHECK(full.score == doctest::Approx(full.max_score));
    CHECK(check(kit, "accumulator").points ==
          doctest::Approx(check(full, "accumulator").points / 2));
    CHECK(check(kit, "predicted_degrees").points == check(full, "predicted_degrees").points);
    CHECK(any_detail_contains(check(kit, "submission_file"), "earn 50% of their points"));
    // At 1 the exercise leaves the kernel's points alone.
    Exercise lenient = day15();
    lenient.kernel_points_without_answers = 1.0;
    const Report kept = evaluate(lenient, blanks, measured(h200_like_ratio), "kept");
    CHECK(check(kept, "accumulator").points == check(full, "accumulator").points);
}

TEST_CASE("a slip in the answers costs the answers' own points, never the kernel's") {
    const Report full = evaluate(day15(), correct_answers(), measured(h200_like_ratio), "full");
    REQUIRE(full.score == doctest::Approx(full.max_score));
    const auto kernel_points = [](const Report& report) {
        double points = 0.0;
        for (const char* id : {"compile_abi", "accumulator", "hidden_input", "ordering",
                               "consistency", "counted_degrees"}) {
            points += check(report, id).points;
        }
        return points;
    };
    SUBCASE("a blank sentence, worth 0 points: a pass at full marks, the sentence check says so") {
        Submission answers = correct_answers();
        answers.sentence.clear();
        const Report report = evaluate(day15(), answers, measured(h200_like_ratio), "blank");
        CHECK(report.verdict == Verdict::pass);
        CHECK(report.score == doctest::Approx(full.score));
        CHECK(check(report, "submission_file").passed());
        CHECK_FALSE(check(report, "sentence").passed());
        REQUIRE(report.diagnosis);
        CHECK(report.diagnosis->cause == Cause::blank_sentence);
        CHECK(report.summary.find("no sentence") != std::string::npos);
    }
    SUBCASE("a value that is no number: the answers' points go, the kernel's stay") {
        Submission answers = correct_answers();
        answers.rows[1].measured.reset();
        answers.problems.push_back({SourceLocation{"submission.yaml", 17, 57},
                                    "rows[1].measured_ratio", FindingKind::answer_malformed,
                                    "expected this stride's time divided by stride 1's (a number "
                                    "greater than 0), got 'fast'"});
        const Report report = evaluate(day15(), answers, measured(h200_like_ratio), "slip");
        CHECK(report.verdict == Verdict::fail);  // the answers file is required
        CHECK(kernel_points(report) == doctest::Approx(kernel_points(full)));
        CHECK(check(report, "submission_file").points == 0.0);
        REQUIRE(report.diagnosis);
        CHECK(report.diagnosis->cause == Cause::malformed_answers);
        CHECK(report.diagnosis->where == "submission.yaml:17:57");
        CHECK(report.diagnosis->fix.empty());  // the value's own line says what was expected
    }
    SUBCASE("a file not read at all: the diagnosis says to start again from the kit's, once") {
        Submission answers;
        answers.unreadable = true;
        answers.problems.push_back({SourceLocation{"submission.yaml", 0, 0}, "",
                                    FindingKind::answer_malformed,
                                    "submission.yaml is not UTF-8 text"});
        const Report report = evaluate(day15(), answers, measured(h200_like_ratio), "unread");
        REQUIRE(report.diagnosis);
        CHECK(report.diagnosis->cause == Cause::malformed_answers);
        CHECK(report.diagnosis->fix ==
              "start from the starter kit's submission.yaml and fill in every blank");
        const std::string summary = report.summary;
        CHECK(summary.find("starter kit's") == summary.rfind("starter kit's"));
    }
    SUBCASE("a value read as meant passes the answers check with a note") {
        Submission answers = correct_answers();
        answers.notes.push_back({SourceLocation{"submission.yaml", 17, 57},
                                 "rows[1].measured_ratio", FindingKind::answer_read_as_meant,
                                 "7,8 read as 7.8 (a decimal comma); next time write 7.8"});
        const Report report = evaluate(day15(), answers, measured(h200_like_ratio), "note");
        CHECK(report.score == doctest::Approx(full.score));
        CHECK(check(report, "submission_file").passed());
        CHECK(any_detail_contains(check(report, "submission_file"),
                                  "submission.yaml:17:57: rows[1].measured_ratio: 7,8 read as"));
        CHECK_FALSE(report.diagnosis);
    }
}

TEST_CASE("an honest wrong prediction costs its points, fails no one, and points at the answer") {
    Submission answers = correct_answers();
    answers.rows[1].predicted_degree = 4;
    answers.rows[1].predicted_location = SourceLocation{"/tmp/x/submission.yaml", 17, 39};
    const Report report = evaluate(day15(), answers, measured(h200_like_ratio), "honest");
    const CheckResult& c = check(report, "predicted_degrees");
    CHECK_FALSE(c.passed());
    CHECK_FALSE(c.required);  // the shipped exercise's own choice, in exercise.yaml
    CHECK(any_detail_contains(c,
                              "submission.yaml:17:39: stride 8: you predicted 4; gcd(8, 32) "
                              "is 8"));
    CHECK(report.verdict == Verdict::pass);
    CHECK(report.score == doctest::Approx(report.max_score - 1.0));
    REQUIRE(report.diagnosis);
    CHECK(report.diagnosis->cause == Cause::wrong_prediction);
    CHECK(report.diagnosis->where == "submission.yaml:17:39");
    CHECK(report.summary.rfind("pass, with one thing to fix: A wrong predicted degree: "
                               "submission.yaml:17:39: stride 8: you predicted 4; gcd(8, 32) is 8",
                               0) == 0);
    SUBCASE("an exercise that requires it fails the work") {
        Exercise strict = day15();
        for (auto& spec : strict.checks) {
            spec.required = spec.required || spec.kind == CheckKind::predicted;
        }
        CHECK(evaluate(strict, answers, measured(h200_like_ratio), "strict").verdict ==
              Verdict::fail);
    }
}

TEST_CASE("the diagnosis names the root cause and its fix, not the symptom") {
    SUBCASE("a missing barrier: the race, with where the barrier goes") {
        Measurements m = measured(h200_like_ratio);
        for (auto& run : m.runs) {
            if (run.kernel == "student") {
                run.outputs[0].ok = false;
                run.outputs[0].bad_elements = 40;
                run.outputs[0].first_bad = 3;
                run.outputs[0].first_bad_value = std::nan("");
                run.outputs[0].first_bad_wrote_nan = true;
                run.outputs[0].first_bad_expected = 2048;
                run.findings.push_back(race(FindingKind::race_read_after_write, run.stride,
                                            at("probe.cu", 34, 9), at("probe.cu", 25, 9)));
            }
        }
        const Report report = evaluate(day15(), correct_answers(), m, "barrier");
        REQUIRE(report.diagnosis);
        CHECK(report.diagnosis->cause == Cause::missing_barrier);
        CHECK(report.diagnosis->fix ==
              "put __syncthreads() between probe.cu:25:9 and probe.cu:34:9");
        CHECK(report.diagnosis->where == "probe.cu:34:9");
        CHECK(report.summary.find("holds NaN") == std::string::npos);
        CHECK(report.summary.rfind("fail: Missing __syncthreads() (a race): ", 0) == 0);
        CHECK(report.summary.find("; put __syncthreads() between probe.cu:25:9 and "
                                  "probe.cu:34:9") != std::string::npos);
        REQUIRE(check(report, "accumulator").diagnosis);
        CHECK(check(report, "accumulator").diagnosis->cause == Cause::missing_barrier);
    }
    SUBCASE("tile words never written: the poisoned input's NaN names them, whichever fails") {
        // What an H200 gave half_tile_unwritten: the ones hold what the SM held before (a finite
        // wrong sum), the hidden input's runs, after the NaN poison, hold NaN.
        Measurements m = measured(h200_like_ratio);
        for (auto& run : m.runs) {
            if (run.kernel == "student") {
                every_thread_wrong(run.outputs[0], 8687, false, 2048);
                every_thread_wrong(run.outputs[1], std::nan(""), true, 15000);
            }
        }
        const Report report = evaluate(day15(), correct_answers(), m, "unwritten");
        REQUIRE(report.diagnosis);
        CHECK(report.diagnosis->cause == Cause::unwritten_tile);
        REQUIRE(check(report, "accumulator").diagnosis);
        CHECK(check(report, "accumulator").diagnosis->cause == Cause::unwritten_tile);
        CHECK(report.diagnosis->fix ==
              "write every word of the tile, then __syncthreads(), then read it");
    }
    SUBCASE("a kernel that writes NaN itself: its NaN, not an unwritten tile") {
        // writes_nan on an H200: NaN on both inputs, the ones' too, which no poison reaches.
        Measurements m = measured(h200_like_ratio);
        for (auto& run : m.runs) {
            if (run.kernel == "student") {
                for (OutputComparison& output : run.outputs) {
                    every_thread_wrong(output, std::nan(""), true, 2048);
                }
            }
        }
        const Report report = evaluate(day15(), correct_answers(), m, "nan");
        REQUIRE(report.diagnosis);
        CHECK(report.diagnosis->cause != Cause::unwritten_tile);
        CHECK(report.summary.find("a NaN the kernel wrote") != std::string::npos);
    }
    SUBCASE("the grid's last thread never writes: an off-by-one output guard") {
        Measurements m = measured(h200_like_ratio);
        m.environment.grid_blocks = 528;
        m.environment.block_size = 256;
        OutputComparison& ones = m.run("student", 8)->outputs[0];
        ones.ok = false;
        ones.bad_elements = 1;
        ones.first_bad = 528 * 256 - 1;
        ones.first_bad_value = std::nan("");
        ones.first_bad_expected = 2048;
        const Report report = evaluate(day15(), correct_answers(), m, "guard");
        REQUIRE(report.diagnosis);
        CHECK(report.diagnosis->cause == Cause::off_by_one_guard);
        CHECK(report.diagnosis->fix.find("t < n") != std::string::npos);
    }
    SUBCASE("a thread that holds 1024 of 2048 ones skipped half its reads") {
        Measurements m = measured(h200_like_ratio);
        OutputComparison& ones = m.run("student", 3)->outputs[0];
        ones.ok = false;
        ones.bad_elements = 270336;
        ones.first_bad = 0;
        ones.first_bad_value = 1024;
        ones.first_bad_expected = 2048;
        const Report report = evaluate(day15(), correct_answers(), m, "skips");
        REQUIRE(report.diagnosis);
        CHECK(report.diagnosis->cause == Cause::skipped_reads);
        CHECK(report.diagnosis->what.find("1024 of its 2048 reads") != std::string::npos);
    }
    SUBCASE("compile errors by kind") {
        for (const auto& [log, cause] : std::vector<std::pair<std::string, Cause>>{
                 {"probe.cu(14): error: identifier \"__syncthread\" is undefined",
                  Cause::compile_undefined_name},
                 {"probe.cu(9): error: a value of type \"int *\" cannot be used to initialize an "
                  "entity of type \"float *\"",
                  Cause::compile_type_error},
                 {"probe.cu:35:5: error: expected a \";\"", Cause::compile_syntax_error},
                 {"probe.cu(2): error: this declaration has no storage class or type specifier",
                  Cause::compile_error}}) {
            const std::string shown = log;  // a named copy: clang captures no binding
            CAPTURE(shown);
            Measurements m;
            m.environment.backend = "sim";
            m.student.attempted = true;
            m.student.log = log;
            const Report report = evaluate(day15(), correct_answers(), m, "compile");
            REQUIRE(report.diagnosis);
            CHECK(report.diagnosis->cause == cause);
            CHECK(report.diagnosis->where.rfind("probe.cu:", 0) == 0);
        }
    }
    SUBCASE("a wrong signature, with the signature to keep") {
        Measurements m = measured(h200_like_ratio);
        m.student.abi_problem = "parameter 3 (n) is 4 bytes; the ABI says size_t, 8 bytes";
        const Report report = evaluate(day15(), correct_answers(), m, "abi");
        REQUIRE(report.diagnosis);
        CHECK(report.diagnosis->cause == Cause::wrong_signature);
        CHECK(report.diagnosis->fix.find("probeSharedStride(const float*, float*, size_t, int)") !=
              std::string::npos);
    }
    SUBCASE("a kernel that ignores the stride") {
        Measurements m = measured([](int) { return 1.0; });
        for (auto& run : m.runs) {
            if (run.kernel == "student") {
                run.counts = counted(1);
            }
        }
        const Report report = evaluate(day15(), correct_answers(), m, "ignores");
        REQUIRE(report.diagnosis);
        CHECK(report.diagnosis->cause == Cause::ignores_stride);
    }
    SUBCASE("a fault stops the kernel: the stop is the cause") {
        Measurements m = measured(h200_like_ratio);
        m.interruption = Interruption{StopKind::fault, "run student stride 4",
                                      "CUDA_ERROR_ILLEGAL_ADDRESS", true};
        const Report report = evaluate(day15(), correct_answers(), m, "fault");
        REQUIRE(report.diagnosis);
        CHECK(report.diagnosis->cause == Cause::kernel_fault);
        CHECK(report.diagnosis->what == "at run student stride 4: CUDA_ERROR_ILLEGAL_ADDRESS");
    }
    SUBCASE("the machine's causes: no GPU, an unfit GPU") {
        Measurements none;
        none.environment.backend = "cuda";
        none.interruption =
            Interruption{StopKind::no_gpu, "open device", "no CUDA device was found", false};
        const Report no_gpu = evaluate(day15(), correct_answers(), none, "none");
        REQUIRE(no_gpu.diagnosis);
        CHECK(no_gpu.diagnosis->cause == Cause::no_gpu);
        CHECK(area_of(no_gpu.diagnosis->cause) == CauseArea::machine);
        Measurements unfit = measured(h200_like_ratio);
        unfit.run("reference", 32)->ratio = *unfit.run("reference", 16)->ratio;
        const Report report = evaluate(day15(), correct_answers(), unfit, "unfit");
        CHECK(report.verdict == Verdict::ungradable);
        REQUIRE(report.diagnosis);
        CHECK(report.diagnosis->cause == Cause::machine_unfit);
    }
    SUBCASE("a kernel's cause comes before an answer's") {
        Submission answers = correct_answers();
        answers.rows[0].predicted_degree = 3;
        answers.sentence.clear();
        Measurements m = measured(h200_like_ratio);
        m.run("student", 3)->outputs[1].ok = false;
        m.run("student", 3)->outputs[1].bad_elements = 1;
        const Report report = evaluate(day15(), answers, m, "order");
        REQUIRE(report.diagnosis);
        CHECK(report.diagnosis->check == "hidden_input");
        CHECK(check(report, "predicted_degrees").diagnosis->cause == Cause::wrong_prediction);
        CHECK(check(report, "sentence").diagnosis->cause == Cause::blank_sentence);
    }
    SUBCASE("full marks have no diagnosis") {
        CHECK_FALSE(
            evaluate(day15(), correct_answers(), measured(h200_like_ratio), "ok").diagnosis);
    }
}
