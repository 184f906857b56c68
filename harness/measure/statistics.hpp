#pragma once

// Summaries of timing samples, and the rule that decides when to stop sampling. Pure functions:
// the GPU loop in interleaved_timing.hpp feeds them.

#include <cstdint>
#include <optional>
#include <vector>

#include "exercise/exercise.hpp"
#include "model/measurements.hpp"

namespace grader {

double median(std::vector<double> values);

// Median, min, max and a robust relative spread (1.4826 * median absolute deviation / median,
// which estimates the relative standard deviation without letting one preempted sample dominate).
TimingStats summarize(const std::vector<double>& samples_ms, int launches_per_sample);

// The ratio of two rows sampled in the same rounds: the median over rounds of a[r] / b[r].
// Pairing by round cancels clock drift that hits both rows alike.
struct RatioSummary {
    double median = 0.0;
    double min = 0.0;
    double max = 0.0;
};
std::optional<RatioSummary> paired_ratio(const std::vector<double>& numerator_ms,
                                         const std::vector<double>& denominator_ms);

// Adaptive stop in the spirit of nvbench: every row has at least min_samples and a spread under
// target_spread, or some row reached max_samples, or the time cap is spent.
enum class StopReason { keep_going, converged, max_samples, time_cap };
StopReason should_stop(const std::vector<std::vector<double>>& samples_per_row,
                       const TimingSpec& spec, double elapsed_seconds);

const char* to_string(StopReason reason);

// Back-to-back launches per sample so that one sample lasts at least min_sample_ms.
int launches_per_sample(double single_launch_ms, double min_sample_ms, int max_launches = 64);

}  // namespace grader
