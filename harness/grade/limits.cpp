#include "grade/limits.hpp"

#include <algorithm>
#include <numeric>

#include "common/text.hpp"
#include "measure/statistics.hpp"

namespace grader {
namespace {

std::string factor_text() {
    return format_number(kStudentTimeFactor, 0) + " times";
}

}  // namespace

Allowance run_allowance(double reference_ms, const std::string& reference) {
    return Allowance{kStudentTimeFactor * reference_ms / 1000.0,
                     factor_text() + " " + reference + "'s " + format_number(reference_ms, 3) +
                         " ms for the same launches on this device"};
}

Allowance timing_allowance(const TimingSpec& timing, const std::vector<TimedRow>& rows) {
    // A row's launches: its warm-up launches and the one that sizes its samples, one more where
    // the clocks' warm-up pass overshoots, and min_samples + 1 samples of launches_per_sample
    // launches each (the rounds stop at the first round past the time cap once every row has its
    // minimum, or earlier).
    double student_ms = 0.0;
    double exercise_ms = 0.0;
    for (const TimedRow& row : rows) {
        const double ms = std::max(row.reference_ms, 0.0);
        const int per_sample = launches_per_sample(ms, timing.min_sample_ms);
        const double row_ms =
            (timing.warmup_launches + 2) * ms + (timing.min_samples + 1) * per_sample * ms;
        (row.students ? student_ms : exercise_ms) += row_ms;
    }
    const double own = timing.warmup_ms / 1000.0 + timing.max_seconds;
    return Allowance{own + exercise_ms / 1000.0 + kStudentTimeFactor * student_ms / 1000.0,
                     "the rounds' own " + format_number(own, 2) + " s, and " + factor_text() +
                         " the exercise's own time for the student's launches (" +
                         format_number(student_ms / 1000.0, 3) + " s)"};
}

Allowance count_allowance(const std::vector<double>& student_reference_ms) {
    constexpr int kMostPasses = 2;
    const double ms = kMostPasses * std::accumulate(student_reference_ms.begin(),
                                                    student_reference_ms.end(), 0.0);
    return Allowance{kCounterStartSeconds + kStudentTimeFactor * ms / 1000.0,
                     "the counter's start (" + format_number(kCounterStartSeconds, 1) +
                         " s), and " + factor_text() +
                         " the exercise's own time for the counted launches (" +
                         format_number(ms / 1000.0, 3) + " s)"};
}

StageLimit StudentBudget::limit(const Allowance& allowance) const {
    const double seconds = allowance.seconds + margin_left_;
    if (seconds >= run_limit_) {
        return StageLimit{run_limit_};
    }
    return StageLimit{seconds, allowance.basis + ", and " + format_number(margin_left_, 2) +
                                   " s left of the " + format_number(kStudentMarginSeconds, 1) +
                                   " s the student's launches may take beyond that in a grade"};
}

void StudentBudget::spent(double seconds, const Allowance& allowance) {
    margin_left_ = std::max(0.0, margin_left_ - std::max(0.0, seconds - allowance.seconds));
}

}  // namespace grader
