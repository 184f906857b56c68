#include "measure/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iosfwd>
#include <utility>

namespace grader {

double median(std::vector<double> values) {
    if (values.empty()) {
        return std::nan("");
    }
    const std::size_t middle = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle),
                     values.end());
    const double upper = values[middle];
    if (values.size() % 2 == 1) {
        return upper;
    }
    const double lower =
        *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle));
    return (lower + upper) / 2.0;
}

TimingStats summarize(const std::vector<double>& samples_ms, int launches) {
    TimingStats stats;
    stats.samples = static_cast<int>(samples_ms.size());
    stats.launches_per_sample = launches;
    if (samples_ms.empty()) {
        return stats;
    }
    stats.median_ms = median(samples_ms);
    const auto [low, high] = std::minmax_element(samples_ms.begin(), samples_ms.end());
    stats.min_ms = *low;
    stats.max_ms = *high;
    std::vector<double> deviations;
    deviations.reserve(samples_ms.size());
    for (const double sample : samples_ms) {
        deviations.push_back(std::abs(sample - stats.median_ms));
    }
    stats.spread = stats.median_ms > 0.0 ? 1.4826 * median(deviations) / stats.median_ms : 0.0;
    return stats;
}

std::optional<RatioSummary> paired_ratio(const std::vector<double>& numerator_ms,
                                         const std::vector<double>& denominator_ms) {
    const std::size_t rounds = std::min(numerator_ms.size(), denominator_ms.size());
    std::vector<double> ratios;
    ratios.reserve(rounds);
    for (std::size_t r = 0; r < rounds; ++r) {
        if (denominator_ms[r] > 0.0) {
            ratios.push_back(numerator_ms[r] / denominator_ms[r]);
        }
    }
    if (ratios.empty()) {
        return std::nullopt;
    }
    const auto [low, high] = std::minmax_element(ratios.begin(), ratios.end());
    return RatioSummary{median(ratios), *low, *high};
}

StopReason should_stop(const std::vector<std::vector<double>>& samples_per_row,
                       const TimingSpec& spec, double elapsed_seconds) {
    bool all_converged = true;
    for (const auto& samples : samples_per_row) {
        if (static_cast<int>(samples.size()) >= spec.max_samples) {
            return StopReason::max_samples;
        }
        if (static_cast<int>(samples.size()) < spec.min_samples ||
            summarize(samples, 1).spread > spec.target_spread) {
            all_converged = false;
        }
    }
    if (all_converged) {
        return StopReason::converged;
    }
    // The cap applies only once every row has its minimum, so no row is reported on too few.
    bool minimum_reached = true;
    for (const auto& samples : samples_per_row) {
        minimum_reached = minimum_reached && static_cast<int>(samples.size()) >= spec.min_samples;
    }
    if (minimum_reached && elapsed_seconds >= spec.max_seconds) {
        return StopReason::time_cap;
    }
    return StopReason::keep_going;
}

const char* to_string(StopReason reason) {
    switch (reason) {
        case StopReason::keep_going:
            return "keep going";
        case StopReason::converged:
            return "converged";
        case StopReason::max_samples:
            return "max samples";
        case StopReason::time_cap:
            return "time cap";
    }
    return "?";
}

int launches_per_sample(double single_launch_ms, double min_sample_ms, int max_launches) {
    if (!(single_launch_ms > 0.0)) {
        return max_launches;
    }
    const int needed = static_cast<int>(std::ceil(min_sample_ms / single_launch_ms));
    return std::clamp(needed, 1, max_launches);
}

}  // namespace grader
