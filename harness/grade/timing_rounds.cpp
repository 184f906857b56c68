#include "grade/timing_rounds.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

#include "common/kernel_ids.hpp"
#include "exercise/exercise.hpp"
#include "grade/launches.hpp"
#include "grade/stage.hpp"
#include "measure/outputs.hpp"
#include "measure/statistics.hpp"

namespace grader {

bool TimingRounds::time(Device& device, const GradePlan& plan, const RunSlots& slots,
                        GradeStages& stages, std::vector<KernelRun>& runs, Environment& environment,
                        GradeFigures& figures, ProgressSink& sink) {
    const std::vector<LaunchCase>& timed = plan.launches.timed;
    if (timed.empty() || runs.size() != timed.size()) {
        return true;
    }
    const bool student_timed = std::any_of(timed.begin(), timed.end(), [](const LaunchCase& c) {
        return c.kernel->id == kStudentKernel;
    });
    const Stage stage{Stage::Kind::time, student_timed ? std::string(kStudentKernel) : ""};
    if (student_timed) {
        stages.enter_students(stage, slots.timing(), stages.run_limit());
    } else {
        stages.enter(stage, stages.run_limit());
    }
    device.reload(plan.launches.reloaded);
    TimingSamples samples = device.time(timed, *plan.launches.timing_input, plan.launches.geometry);
    if (!samples.notes.empty()) {
        environment.notes.insert(environment.notes.end(), samples.notes.begin(),
                                 samples.notes.end());
        sink.environment(environment);
    }
    if (samples.end != DeviceLaunch::End::completed) {
        stages.stop(stage, ending_of(samples.end),
                    "a kernel failed during the timing rounds: " + samples.message);
        return false;
    }
    record_timings(samples, plan, runs);
    check_outputs(samples, plan, slots, runs);
    for (const KernelRun& run : runs) {
        sink.run(run);
    }
    figures.timing_rounds = samples.rounds;
    figures.timing_seconds = samples.seconds;
    return true;
}

void TimingRounds::record_timings(const TimingSamples& samples, const GradePlan& plan,
                                  std::vector<KernelRun>& runs) {
    for (std::size_t i = 0; i < runs.size(); ++i) {
        if (samples.per_round_ms[i].empty()) {
            continue;
        }
        runs[i].timing = summarize(samples.per_round_ms[i], samples.launches_per_sample[i]);
        runs[i].timing->modeled = samples.modeled;
    }
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const auto base = plan.cases[i].base;
        if (!base || !runs[i].timing || !runs[*base].timing) {
            continue;
        }
        if (const auto ratio = paired_ratio(samples.per_round_ms[i], samples.per_round_ms[*base])) {
            runs[i].ratio = ratio->median;
            runs[i].ratio_min = ratio->min;
            runs[i].ratio_max = ratio->max;
        }
    }
}

void TimingRounds::check_outputs(TimingSamples& samples, const GradePlan& plan,
                                 const RunSlots& slots, const std::vector<KernelRun>& runs) {
    // The oracle's words when it has no run with the timing input at the stride.
    static const std::vector<float> no_outputs;
    const InputSpec& input = *plan.launches.timing_input;
    for (std::size_t i = 0; i < samples.final_outputs.size() && i < runs.size(); ++i) {
        if (runs[i].kernel != kStudentKernel) {
            continue;
        }
        const RunSlot* oracle = slots.oracle_run(i, input);
        checks_.emplace_back(
            i, std::async(std::launch::async,
                          [id = input.id, words = std::move(samples.final_outputs[i]),
                           &oracle_words = oracle == nullptr ? no_outputs : oracle->outputs,
                           placement = slots.placement(oracle)] {
                              OutputComparison timed =
                                  compare_outputs(id, words, oracle_words, placement);
                              timed.timed = true;
                              return timed;
                          }));
    }
}

void TimingRounds::collect_checks(std::vector<KernelRun>& runs, ProgressSink& sink) {
    for (auto& [i, check] : checks_) {
        runs[i].outputs.push_back(check.get());
        sink.run(runs[i]);
    }
    checks_.clear();
}

}  // namespace grader
