#include "grade/run_slots.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>

#include "common/kernel_ids.hpp"
#include "device/sim_budget.hpp"

namespace grader {
namespace {

// "the reference probe": the kernel the student's stands for.
std::string oracle_name(const Exercise& exercise) {
    const KernelSpec& oracle = *exercise.oracle();
    return "the " + (oracle.label.empty() ? oracle.name : oracle.label);
}

}  // namespace

const RunSlot* RunSlots::oracle_run(std::size_t index, const InputSpec& input) const {
    const auto oracle = plan_.cases.at(index).oracle;
    const auto run = oracle ? plan_.run_of(*oracle, input) : std::nullopt;
    return run ? &slots_[*run] : nullptr;
}

OutputPlacement RunSlots::placement(const RunSlot* oracle) const {
    return OutputPlacement{exercise_.buffers.output, geometry_.block.count(),
                           oracle == nullptr ? 0 : oracle->blocks_run, geometry_.grid.count()};
}

std::optional<double> RunSlots::kernel_ms(std::optional<std::size_t> index,
                                          const InputSpec& input) const {
    const auto run = index ? plan_.run_of(*index, input) : std::nullopt;
    return run ? slots_[*run].kernel_ms : std::nullopt;
}

std::optional<Allowance> RunSlots::student_run(std::size_t index) const {
    double ms = 0.0;
    for (const InputSpec& input : exercise_.inputs) {
        const auto oracle = kernel_ms(plan_.cases[index].oracle, input);
        if (!oracle) {
            return std::nullopt;
        }
        ms += *oracle;
    }
    return run_allowance(ms, oracle_name(exercise_));
}

double RunSlots::untimed_run_limit(int stride, double run_limit) const {
    const bool counted = std::any_of(slots_.begin(), slots_.end(), [](const RunSlot& slot) {
        return slot.block_instructions > 0;
    });
    if (!counted) {
        return run_limit;
    }
    double seconds = 0.0;
    for (const InputSpec& input : exercise_.inputs) {
        std::uint64_t per_block = 0;
        for (std::size_t i = 0; i < plan_.cases.size(); ++i) {
            const auto run = plan_.run_of(i, input);
            if (run && plan_.cases[i].stride == stride && plan_.cases[i].kernel != kStudentKernel) {
                per_block = std::max(per_block, slots_[*run].block_instructions);
            }
        }
        seconds += static_cast<double>(sim_student_budget(per_block, geometry_.grid.count())) /
                   kSimSlowestWarpInstructionsPerSecond;
    }
    return std::max(run_limit, seconds);
}

std::optional<Allowance> RunSlots::timing() const {
    const InputSpec& input = *plan_.launches.timing_input;
    double slowest = 0.0;
    for (std::size_t i = 0; i < plan_.cases.size(); ++i) {
        if (plan_.cases[i].kernel != kStudentKernel) {
            slowest = std::max(slowest, kernel_ms(i, input).value_or(0.0));
        }
    }
    std::vector<TimedRow> rows;
    for (std::size_t i = 0; i < plan_.launches.timed.size(); ++i) {
        const bool students = plan_.cases[i].kernel == kStudentKernel;
        const auto ms = kernel_ms(students ? plan_.cases[i].oracle : i, input);
        if (students && !ms) {
            return std::nullopt;
        }
        // An exercise row the grade did not run (a stride of the reference's own): at most the
        // slowest launch that ran.
        rows.push_back({ms.value_or(slowest), students});
    }
    return timing_allowance(exercise_.timing, rows);
}

std::optional<Allowance> RunSlots::count() const {
    std::vector<double> ms;
    for (const std::size_t index : plan_.student_cases()) {
        const auto oracle = kernel_ms(plan_.cases[index].oracle, *plan_.launches.timing_input);
        if (!oracle) {
            return std::nullopt;
        }
        ms.push_back(*oracle);
    }
    return count_allowance(ms);
}

}  // namespace grader
