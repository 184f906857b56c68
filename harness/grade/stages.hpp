#pragma once

// Each stage of a grade told to the parent as it begins, with its limit (its deadline, and whose
// fault a stop in it is: stage.hpp), and the student's margin spent as their stages end
// (limits.hpp). tests/test_pipeline.cpp holds a whole grade of kernels that spin at every launch
// under the margin and half a second.

#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "grade/limits.hpp"
#include "grade/protocol.hpp"
#include "grade/stage.hpp"

namespace grader {

class GradeStages {
public:
    GradeStages(ProgressSink& sink, double run_limit_seconds)
        : sink_(sink), run_limit_(run_limit_seconds), budget_(run_limit_seconds) {}

    // The exercise's limit for a run (or the worker's override of it).
    double run_limit() const { return run_limit_; }
    // The stage entered last.
    const Stage& current() const { return stage_; }

    // `stage` begins with `limit`; what the student's stage before took of the margin is spent.
    void enter(const Stage& stage, const StageLimit& limit);
    // A stage of the student's code, with what it may take before the margin; where nothing says
    // (the device did not time the exercise's own kernels), `otherwise` seconds.
    void enter_students(const Stage& stage, const std::optional<Allowance>& allowance,
                        double otherwise);
    // The grade stops in `stage`: blame() says whose fault that is.
    void stop(const Stage& stage, Ending ending, const std::string& message);

private:
    using Clock = std::chrono::steady_clock;
    // What the student's stage that just ended took beyond its allowance comes off the margin.
    void spend_students_stage();

    ProgressSink& sink_;
    const double run_limit_;
    StudentBudget budget_;
    Stage stage_{Stage::Kind::answers};
    // The student's stage under way, from when, with what it may take before the margin.
    std::optional<std::pair<Clock::time_point, Allowance>> students_stage_;
};

}  // namespace grader
