#include <doctest/doctest.h>

#include <cmath>

#include "measure/accumulator.hpp"
#include "measure/statistics.hpp"

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

TEST_CASE("with reads equal to the tile, every thread sums the whole tile at any stride") {
    std::vector<float> tile(2048);
    double total = 0;
    for (std::size_t i = 0; i < tile.size(); ++i) {
        tile[i] = static_cast<float>(i % 16);
        total += tile[i];
    }
    for (const int stride : {1, 3, 8, 16, 32, 33}) {
        const auto sums = expected_sums(tile, 256, stride, 2048);
        CHECK(sums[0] == total);
        CHECK(sums[255] == total);
    }
}

TEST_CASE("fewer reads than the tile sum the circular window each thread starts at") {
    std::vector<float> tile(8);
    for (int i = 0; i < 8; ++i) {
        tile[i] = static_cast<float>(1 << i);
    }
    // tid 3 at stride 2 starts at word 6 and reads 6, 7, 0.
    const auto sums = expected_sums(tile, 4, 2, 3);
    CHECK(sums[3] == 64 + 128 + 1);
    CHECK(sums[0] == 1 + 2 + 4);
}

TEST_CASE("the first wrong thread is named by global index, block and thread") {
    std::vector<float> outputs(1024, 2048.0f);
    outputs[600] = 1024.0f;
    outputs[900] = std::nanf("");
    const AccumulatorResult result = compare_outputs(outputs, std::vector<double>(256, 2048.0), 256);
    CHECK_FALSE(result.ok);
    CHECK(result.bad_threads == 2);
    REQUIRE(result.first_bad_thread);
    CHECK(*result.first_bad_thread == 600);
    CHECK(result.first_bad_block == 2);
    CHECK(result.first_bad_thread_in_block == 88);
    CHECK(result.first_bad_value == 1024.0);
    CHECK(result.first_bad_expected == 2048.0);
}

TEST_CASE("a NaN never passes the accumulator check") {
    std::vector<float> outputs(256, std::nanf(""));
    const AccumulatorResult result = compare_outputs(outputs, std::vector<double>(256, 2048.0), 256);
    CHECK(result.bad_threads == 256);
}

TEST_CASE("the hidden tile is fresh per seed and within its range") {
    const auto a = hidden_tile(2048, 15, 1);
    const auto b = hidden_tile(2048, 15, 2);
    CHECK(a != b);
    CHECK(a == hidden_tile(2048, 15, 1));
    for (const float v : a) {
        CHECK((v >= 0.0f && v <= 15.0f && v == std::floor(v)));
    }
}
