#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <cmath>

#include "checks/checks.hpp"
#include "model/bank_model.hpp"

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
    for (const auto& [stride, ratio] : std::vector<std::pair<int, double>>{{3, 1.0}, {8, 7.8}, {16, 15.6}}) {
        SubmissionRow row;
        row.subject = Case{"student", stride};
        row.key = std::to_string(stride);
        row.predicted_degree = static_cast<int>(conflict_degree(stride));
        row.measured = ratio;
        s.rows.push_back(row);
    }
    s.sentence = "Stride 3 shares no factor with 32, so it is conflict free.";
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

}  // namespace

TEST_CASE("a correct submission on a GPU that shows the model passes with every point") {
    const Report report = evaluate(day15(), correct_answers(), measured(h200_like_ratio), "alice/");
    CHECK(report.verdict == Verdict::pass);
    CHECK(report.score == doctest::Approx(report.max_score));
    CHECK(report.max_score > 0);
    CHECK(exit_code(report.verdict) == 0);
    // Every ratio is reported, the student's and the reference's.
    const auto student_rows = std::count_if(report.rows.begin(), report.rows.end(),
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

TEST_CASE("a stride sniffer fails the consistency at every seed, not only where an even stride "
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
        for (const auto& kernel : {std::function<double(int)>(sniffing),
                                   std::function<double(int)>(odd_honest)}) {
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
    CHECK(any_detail_contains(c, "stride 8: thread 1234 (block 4, thread 210) holds 1024, expected 2048"));
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
    m.interruption = Interruption{StopKind::no_gpu, "compile",
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
    m.runs.erase(std::remove_if(m.runs.begin(), m.runs.end(),
                                [](const KernelRun& r) { return r.kernel == "student" && r.stride > 3; }),
                 m.runs.end());
    for (auto& run : m.runs) {
        run.timing.reset();
        run.ratio.reset();
    }
    m.interruption = Interruption{StopKind::fault, "run student stride 4",
                                  "probeSharedStride (student) failed at stride 4: CUDA_ERROR_ILLEGAL_ADDRESS",
                                  true};
    const Report report = evaluate(day15(), correct_answers(), m, "i");
    CHECK(report.verdict == Verdict::fail);
    CHECK(any_detail_contains(check(report, "accumulator"), "stride 4"));
    CHECK(check(report, "predicted_degrees").passed());
    CHECK(check(report, "ordering").not_run());
}

TEST_CASE("a compile failure fails every kernel check with the reason, and nothing else is lost") {
    Measurements m;
    m.environment.backend = "cuda";
    m.environment.gpu_available = true;
    m.student.attempted = true;
    m.student.ok = false;
    m.student.log = "probe.cu(14): error: expected a \";\"";
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
    CHECK(report.summary.find("Compile and ABI") != std::string::npos);
    CHECK(check(report, "predicted_degrees").passed());
    CHECK(report.compile_log.find("probe.cu(14)") != std::string::npos);
}

TEST_CASE("ordering rules read as the lesson says them") {
    OrderingRule closer;
    closer.kind = OrderingRule::Kind::closer_to;
    closer.subject = {"student", 3};
    closer.near = {"student", 1};
    closer.far = {"student", 4};
    const auto ratios = [](double r3) {
        return [r3](const Case& c) -> std::optional<double> {
            if (c.stride == 1) return 1.0;
            if (c.stride == 3) return r3;
            if (c.stride == 4) return 3.16;
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
    CHECK(any_detail_contains(c, "stride 16: the shared loads counted 1 wavefronts per request; "
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

TEST_CASE("an instruction the simulator lacks, after a check already failed, reports that failure") {
    Measurements m = measured(h200_like_ratio);
    m.environment.backend = "sim";
    m.runs.erase(std::remove_if(m.runs.begin(), m.runs.end(),
                                [](const KernelRun& r) { return r.kernel == "student" && r.stride > 1; }),
                 m.runs.end());
    m.run("student", 1)->outputs[0].ok = false;
    m.run("student", 1)->outputs[0].bad_elements = 512;
    // The exercise's own kernel stopped on an instruction the simulator lacks: the machine's.
    m.interruption = Interruption{StopKind::unsupported, "run reference stride 3",
                                  "the simulator does not support shfl.sync.idx.b32", false};
    const Report report = evaluate(day15(), correct_answers(), m, "r");
    CHECK(report.verdict == Verdict::fail);
    CHECK(report.summary.find("Accumulator check") != std::string::npos);
    SUBCASE("without a failure before it, it is the machine's: ungradable") {
        m.run("student", 1)->outputs[0].ok = true;
        m.run("student", 1)->outputs[0].bad_elements = 0;
        CHECK(evaluate(day15(), correct_answers(), m, "s").verdict == Verdict::ungradable);
    }
}

TEST_CASE("the starter kit's example sentence is flagged for review, an empty one fails review") {
    Submission answers = correct_answers();
    answers.sentence = "  the CONFLICT degree is gcd(stride, 32) -- not a function of the stride's size: " +
                       day15().example_sentence.substr(
                           day15().example_sentence.find("3 shares"));
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
