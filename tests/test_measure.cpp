#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "exercise/exercise.hpp"
#include "measure/outputs.hpp"
#include "measure/statistics.hpp"
#include "model/measurements.hpp"
#include "model/observations.hpp"
#include "report/describe.hpp"
#include "test_paths.hpp"

using namespace grader;

TEST_CASE("the median of an even count is the mean of the middle two") {
    CHECK(median({4.0, 1.0, 3.0, 2.0}) == doctest::Approx(2.5));
    CHECK(median({5.0, 1.0, 3.0}) == doctest::Approx(3.0));
    CHECK(std::isnan(median({})));
}

TEST_CASE("one preempted sample moves neither the median nor the spread much") {
    std::vector<double> samples(20, 1.0);
    samples[7] = 50.0;
    const TimingStats stats = summarize(samples, 4);
    CHECK(stats.median_ms == doctest::Approx(1.0));
    CHECK(stats.max_ms == doctest::Approx(50.0));
    CHECK(stats.spread < 0.001);
    CHECK(stats.launches_per_sample == 4);
    CHECK(stats.samples == 20);
}

TEST_CASE("a paired ratio cancels drift that hits both rows in the same round") {
    // The clock ramps up across rounds: both rows speed up together.
    const std::vector<double> stride1 = {2.0, 1.5, 1.0, 1.0};
    const std::vector<double> stride32 = {50.0, 37.5, 25.0, 25.0};
    const auto ratio = paired_ratio(stride32, stride1);
    REQUIRE(ratio);
    CHECK(ratio->median == doctest::Approx(25.0));
    CHECK(ratio->min == doctest::Approx(25.0));
    CHECK(ratio->max == doctest::Approx(25.0));
}

TEST_CASE("sampling stops once every row is converged, and not before its minimum") {
    TimingSpec spec;
    spec.min_samples = 10;
    spec.max_samples = 50;
    spec.target_spread = 0.01;
    spec.max_seconds = 1.0;
    std::vector<std::vector<double>> rows = {std::vector<double>(9, 1.0),
                                             std::vector<double>(9, 2.0)};
    CHECK(should_stop(rows, spec, 0.1) == StopReason::keep_going);
    CHECK(should_stop(rows, spec, 5.0) == StopReason::keep_going);  // minimum first
    rows[0].push_back(1.0);
    rows[1].push_back(2.0);
    CHECK(should_stop(rows, spec, 0.1) == StopReason::converged);
}

TEST_CASE("a noisy row keeps sampling until the time cap or the sample cap") {
    TimingSpec spec;
    spec.min_samples = 4;
    spec.max_samples = 8;
    spec.target_spread = 0.001;
    spec.max_seconds = 1.0;
    std::vector<std::vector<double>> rows = {{1.0, 1.2, 0.9, 1.1, 0.8}};
    CHECK(should_stop(rows, spec, 0.5) == StopReason::keep_going);
    CHECK(should_stop(rows, spec, 1.5) == StopReason::time_cap);
    rows[0] = {1.0, 1.2, 0.9, 1.1, 0.8, 1.3, 0.7, 1.0};
    CHECK(should_stop(rows, spec, 0.5) == StopReason::max_samples);
}

TEST_CASE("samples are sized so that launch overhead is noise") {
    CHECK(launches_per_sample(0.087, 0.5) == 6);
    CHECK(launches_per_sample(2.1, 0.5) == 1);
    CHECK(launches_per_sample(0.0001, 0.5, 64) == 64);
}

namespace {

const float kPoison = [] {
    float value;
    const std::uint32_t bits = grader::kOutputPoison;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}();

grader::OutputPlacement per_thread(std::uint64_t block) {
    return {grader::OutputLayout{}, block};
}

}  // namespace

TEST_CASE("the first wrong thread is named by global index, block and thread") {
    std::vector<float> outputs(1024, 2048.0f);
    outputs[600] = 1024.0f;
    outputs[900] = std::nanf("");
    const std::vector<float> expected(1024, 2048.0f);
    const OutputComparison result = compare_outputs("ones", outputs, expected, per_thread(256));
    CHECK_FALSE(result.ok);
    CHECK(result.input == "ones");
    CHECK(result.expected == 2048.0);
    CHECK(result.elements == 1024);
    CHECK(result.bad_elements == 2);
    REQUIRE(result.first_bad);
    CHECK(*result.first_bad == 600);
    CHECK(result.first_bad_block == 2);
    CHECK(result.first_bad_thread_in_block == 88);
    CHECK(result.first_bad_value == 1024.0);
    CHECK(result.first_bad_expected == 2048.0);
}

TEST_CASE("a NaN never passes, and an element left at the poison is never written") {
    std::vector<float> outputs(256, std::nanf(""));
    outputs[7] = kPoison;
    const OutputComparison result =
        compare_outputs("ones", outputs, std::vector<float>(256, 2048.0f), per_thread(256));
    CHECK(result.bad_elements == 256);
    CHECK(std::isnan(result.first_bad_value));
}

TEST_CASE(
    "where the oracle ran a few blocks, values are compared there and every element written") {
    // The simulator: the kernel ran every block of four; the oracle, block 2.
    std::vector<float> expected(1024, kPoison);
    std::vector<float> outputs(1024, 1.0f);
    for (int t = 512; t < 768; ++t) {
        expected[t] = 3.0f;
        outputs[t] = 3.0f;
    }
    grader::OutputPlacement sampled = per_thread(256);
    sampled.oracle_blocks = 1;
    sampled.grid_blocks = 4;
    OutputComparison result = compare_outputs("hidden", outputs, expected, sampled);
    CHECK(result.ok);
    CHECK(result.elements == 256);
    CHECK(result.compared_blocks == 1);
    SUBCASE("an element no block wrote is wrong, wherever it lies, and says so") {
        outputs[10] = kPoison;
        result = compare_outputs("hidden", outputs, expected, sampled);
        CHECK_FALSE(result.ok);
        CHECK(*result.first_bad == 10);
        CHECK(result.unwritten == 1);
        CHECK(result.elements == 257);
        CHECK(grader::describe_wrong_output(0, result) ==
              "thread 10 (block 0, thread 10) was never written: no block of the grid wrote it; "
              "1 of 257 threads wrong in the 1 of the grid's 4 blocks the simulator compared");
    }
    SUBCASE("a wrong value where the oracle wrote is wrong, whichever block wrote it") {
        outputs[600] = 2.0f;
        result = compare_outputs("hidden", outputs, expected, sampled);
        CHECK_FALSE(result.ok);
        CHECK(*result.first_bad == 600);
        CHECK(result.first_bad_expected == 3.0);
    }
    SUBCASE("on a GPU the oracle ran every block: where it wrote nothing, nothing is expected") {
        std::vector<float> none(1024, kPoison);
        const OutputComparison gpu = compare_outputs("hidden", none, none, per_thread(256));
        CHECK(gpu.elements == 0);
        CHECK(gpu.unwritten == 0);
    }
}

TEST_CASE("a long output is counted alike where it agrees and where it does not") {
    // Thousands of elements: agreeing stretches are counted whole, the others one by one.
    std::vector<float> expected(5000, kPoison);
    for (std::size_t e = 1500; e < 5000; ++e)
        expected[e] = static_cast<float>(e);
    std::vector<float> outputs = expected;
    for (std::size_t e = 0; e < 1500; ++e)
        outputs[e] = 1.0f;  // written where the oracle ran no block: not compared
    outputs[4100] = -1.0f;
    outputs[4900] = kPoison;
    expected[2500] = -0.0f;  // equal to 0.0f, as floats compare
    outputs[2500] = 0.0f;
    grader::OutputPlacement sampled = per_thread(100);
    sampled.oracle_blocks = 35;
    sampled.grid_blocks = 50;
    const OutputComparison result = compare_outputs("hidden", outputs, expected, sampled);
    CHECK_FALSE(result.ok);
    CHECK(result.elements == 3500);
    CHECK(result.expected == 1500.0);
    CHECK(result.bad_elements == 2);
    CHECK(result.unwritten == 1);
    REQUIRE(result.first_bad);
    CHECK(*result.first_bad == 4100);
    CHECK(result.first_bad_block == 41);
    CHECK(result.first_bad_value == -1.0);
    CHECK(result.first_bad_expected == 4100.0);
    outputs[4100] = 4100.0f;
    outputs[4900] = 4900.0f;
    const OutputComparison right = compare_outputs("hidden", outputs, expected, sampled);
    CHECK(right.ok);
    CHECK(right.elements == 3500);
    CHECK(right.expected == 1500.0);
    SUBCASE("an element no block wrote is wrong where the oracle ran no block too") {
        outputs[700] = kPoison;
        const OutputComparison unwritten = compare_outputs("hidden", outputs, expected, sampled);
        CHECK(unwritten.bad_elements == 1);
        CHECK(unwritten.unwritten == 1);
        CHECK(*unwritten.first_bad == 700);
    }
    SUBCASE("a NaN the kernel wrote is wrong where the oracle's NaN stands too") {
        expected[3500] = std::nanf("");
        outputs[3500] = std::nanf("");
        const OutputComparison nan = compare_outputs("hidden", outputs, expected, sampled);
        CHECK(nan.bad_elements == 1);
        CHECK(*nan.first_bad == 3500);
    }
}

TEST_CASE("a matrix output names the first wrong element by row and column") {
    grader::OutputLayout matrix;
    matrix.kind = grader::OutputLayout::Kind::matrix;
    matrix.rows = 64;
    matrix.columns = 32;
    std::vector<float> expected(64 * 32);
    for (std::size_t i = 0; i < expected.size(); ++i) {
        expected[i] = static_cast<float>(i) * 0.5f;
    }
    std::vector<float> outputs = expected;
    outputs[17 * 32 + 3] = -1.0f;
    const OutputComparison result = compare_outputs("random", outputs, expected, {matrix, 256});
    CHECK(result.matrix);
    CHECK(result.first_bad_row == 17);
    CHECK(result.first_bad_column == 3);
    CHECK(grader::describe_wrong_output(0, result) ==
          "row 17, column 3 holds -1, expected 273.5; 1 of 2048 elements wrong");
}

TEST_CASE("the random inputs follow the seed and stay in their range") {
    grader::InputSpec integers;
    integers.id = "hidden";
    integers.fill = grader::InputSpec::Fill::random_integers;
    integers.value = 15;
    const auto a = make_input(integers, 2048, 1);
    CHECK(a != make_input(integers, 2048, 2));
    CHECK(a == make_input(integers, 2048, 1));
    for (const float v : a) {
        CHECK((v >= 0.0f && v <= 15.0f && v == std::floor(v)));
    }
    grader::InputSpec floats;
    floats.fill = grader::InputSpec::Fill::random_floats;
    const auto f = make_input(floats, 4096, 7);
    CHECK(std::all_of(f.begin(), f.end(), [](float v) { return std::isfinite(v); }));
    CHECK(std::set<float>(f.begin(), f.end()).size() > 4000);
    grader::InputSpec ones;
    CHECK(make_input(ones, 4, 9) == std::vector<float>(4, 1.0f));
}

TEST_CASE("the random floats are std::mt19937_64's draws through uniform_int_distribution") {
    // make_input draws them a state at a time; the hidden input must stay what the standard
    // library's engine and distribution gave (every report's expected values depend on it).
    grader::InputSpec floats;
    floats.fill = grader::InputSpec::Fill::random_floats;
    for (const std::uint64_t seed : {0ull, 7ull, 20261207ull, 0xffffffffffffffffull}) {
        for (const std::uint64_t words : {1ull, 311ull, 312ull, 313ull, 100000ull}) {
            CAPTURE(seed);
            CAPTURE(words);
            std::mt19937_64 rng(seed ^ 0xf10a75ULL);
            std::uniform_int_distribution<std::int32_t> value(-(1 << 23), (1 << 23) - 1);
            std::vector<float> expected(words);
            for (auto& word : expected)
                word = static_cast<float>(value(rng)) / 8388.608f;
            CHECK(make_input(floats, words, seed) == expected);
        }
    }
}
