#pragma once

// How long each stage that runs the student's code may hold the device, from what the exercise's
// own kernels took for the same launches on it: kStudentTimeFactor times that, plus the
// stage's own work that does not depend on the kernel (the timing's rounds, the counter's start),
// plus what is left of one margin for the whole grade. A kernel that is slow in every stage spends
// the margin once, not once per stage: a student's whole hold on the device is bounded by a few
// times the exercise's own time and a fixed margin, and the stage where it runs out is named.
// Never more than the exercise's run limit. Where the device does not time its launches (the
// simulator, whose instruction budget stops a kernel the same on every machine), every stage has
// the run limit, and a stage running the student's kernel the time its instruction budget takes
// at the slowest simulation allowed for where that is longer (kSimSlowestWarpInstructionsPerSecond:
// the simulator runs every block of the student's grid, and a few of the exercise's).
// tests/test_pipeline.cpp grades kernels that spin at every launch through a fake that stops a
// stage at its limit: they hold the device less than 3 s in all.

#include <optional>
#include <string>
#include <vector>

#include "exercise/exercise.hpp"
#include "grade/stage.hpp"

namespace grader {

inline constexpr double kStudentTimeFactor = 4.0;
inline constexpr double kStudentMarginSeconds = 1.5;
// The count stage's own start, beside the launches it counts: the counter's open where it is not
// open yet, and a profiling session's first pass (a device server waits at most 1 s for its
// counter: counter_source.hpp).
inline constexpr double kCounterStartSeconds = 1.5;

// One timed launch, at the exercise's own speed: its time per launch on the device.
struct TimedRow {
    double reference_ms = 0.0;
    bool students = false;  // the student's row: allowed kStudentTimeFactor times as long
};

// What a stage of the student's may take before the margin: its work at kStudentTimeFactor times
// the exercise's speed (and the exercise's own rows at their own), with a sentence saying so.
struct Allowance {
    double seconds = 0.0;
    std::string basis;  // "4 times the reference probe's 8 ms for the same launches"
};

// The student's runs of one case: `reference_ms` is what `reference` (the exercise's kernel the
// student's stands for, "the reference probe") took for the same launches.
Allowance run_allowance(double reference_ms, const std::string& reference);
// The timing rounds: each row's warm-up, sizing and samples as timing.cpp's rounds make them,
// and the rounds' own time cap and warm-up.
Allowance timing_allowance(const TimingSpec& timing, const std::vector<TimedRow>& rows);
// The count: the student's launches, replayed once per pass of the counter (at most 2), and the
// counter's start.
Allowance count_allowance(const std::vector<double>& student_reference_ms);

// The margin through one grade, and each stage's limit from it.
class StudentBudget {
public:
    explicit StudentBudget(double run_limit_seconds) : run_limit_(run_limit_seconds) {}

    // The limit of a stage of the student's with `allowance`, where the margin is not spent yet.
    StageLimit limit(const Allowance& allowance) const;
    // That stage took `seconds`: what it took beyond its allowance is spent of the margin.
    void spent(double seconds, const Allowance& allowance);
    double margin_left() const { return margin_left_; }

private:
    double run_limit_;
    double margin_left_ = kStudentMarginSeconds;
};

}  // namespace grader
