#include "grade/stages.hpp"

namespace grader {

void GradeStages::enter(const Stage& stage, const StageLimit& limit) {
    spend_students_stage();
    stage_ = stage;
    sink_.stage(stage, limit);
}

void GradeStages::enter_students(const Stage& stage, const std::optional<Allowance>& allowance,
                                 double otherwise) {
    if (!allowance) {
        return enter(stage, otherwise);
    }
    // The stage before is spent first: its limit is what the margin has left after it.
    spend_students_stage();
    enter(stage, budget_.limit(*allowance));
    students_stage_.emplace(Clock::now(), *allowance);
}

void GradeStages::stop(const Stage& stage, Ending ending, const std::string& message) {
    sink_.interruption(blame(stage, ending, message));
}

void GradeStages::spend_students_stage() {
    if (students_stage_) {
        budget_.spent(std::chrono::duration<double>(Clock::now() - students_stage_->first).count(),
                      students_stage_->second);
        students_stage_.reset();
    }
}

}  // namespace grader
