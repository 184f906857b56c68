#include "grade/correctness_runs.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include "common/kernel_ids.hpp"
#include "grade/launches.hpp"
#include "measure/outputs.hpp"
#include "model/finding.hpp"
#include "text/text_safety.hpp"

namespace grader {

bool CorrectnessRuns::run(std::vector<KernelRun>& runs) {
    for (case_ = 0; case_ < plan_.cases.size(); ++case_) {
        const PlannedCase& planned = plan_.cases[case_];
        const Stage stage{Stage::Kind::run, planned.kernel, planned.stride};
        enter(case_, stage);
        current_ = Pending{};
        current_.run.kernel = planned.kernel;
        current_.run.stride = planned.stride;
        for (std::size_t r = planned.first_run; r < planned.first_run + planned.run_count; ++r) {
            if (!launch(r, stage, runs)) {
                return false;
            }
        }
        pending_.push_back(std::move(current_));
        report(false, runs);
    }
    report(true, runs);
    return true;
}

void CorrectnessRuns::enter(std::size_t index, const Stage& stage) {
    if (stage.kernel == kStudentKernel) {
        stages_.enter_students(stage, slots_.student_run(index),
                               slots_.untimed_run_limit(stage.stride, stages_.run_limit()));
    } else {
        stages_.enter(stage, stages_.run_limit());
    }
}

bool CorrectnessRuns::launch(std::size_t run, const Stage& stage, std::vector<KernelRun>& runs) {
    const PlannedRun& planned = plan_.launches.runs[run];
    const InputSpec& input = *planned.input;
    DeviceLaunch launch;
    try {
        launch = device_.run(planned.launch, input, plan_.launches.geometry);
    } catch (const std::runtime_error&) {
        report_all(runs);  // the device failed (Device::run says so)
        throw;
    }
    current_.run.findings.insert(current_.run.findings.end(), launch.findings.begin(),
                                 launch.findings.end());
    if (launch.end != DeviceLaunch::End::completed) {
        report_all(runs);
        const KernelRun& failed = current_.run;
        stages_.stop(stage, ending_of(launch.end),
                     kernel_title(exercise_, failed.kernel) + " failed" +
                         (failed.stride > 0 ? " at stride " + std::to_string(failed.stride) : "") +
                         ": " + text::shorten(launch.message, kMaxLaunchLineBytes));
        return false;
    }
    keep_observations(input, launch);
    if (current_.run.kernel == kStudentKernel) {
        compare_with_oracle(case_, input, launch);
    } else {
        keep_in_slot(run, launch);
    }
    return true;
}

void CorrectnessRuns::keep_observations(const InputSpec& input, const DeviceLaunch& launch) {
    KernelRun& run = current_.run;
    if (&input == &exercise_.inputs.front() && launch.counts) {
        run.counts = launch.counts;
        run.count_source = "simulator";
    }
}

void CorrectnessRuns::keep_in_slot(std::size_t run, DeviceLaunch& launch) {
    RunSlot& slot = slots_[run];
    slot.kernel_ms = launch.kernel_ms;
    slot.block_instructions = launch.block_instructions;
    if (current_.run.kernel == exercise_.oracle()->id) {
        slot.outputs = std::move(launch.outputs);
        slot.blocks_run = launch.blocks_run;
    }
}

void CorrectnessRuns::compare_with_oracle(std::size_t index, const InputSpec& input,
                                          DeviceLaunch& launch) {
    // The oracle's runs all came first: nothing writes its slot meanwhile.
    static const std::vector<float> no_outputs;
    const RunSlot* oracle = slots_.oracle_run(index, input);
    const std::vector<float>& oracle_words = oracle == nullptr ? no_outputs : oracle->outputs;
    current_.outputs.push_back(
        std::async(std::launch::async, [id = input.id, words = std::move(launch.outputs),
                                        &oracle_words, placement = slots_.placement(oracle)] {
            return compare_outputs(id, words, oracle_words, placement);
        }));
}

void CorrectnessRuns::report(bool wait, std::vector<KernelRun>& runs) {
    while (!pending_.empty()) {
        Pending& front = pending_.front();
        const bool ready =
            std::all_of(front.outputs.begin(), front.outputs.end(), [](const auto& f) {
                return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
            });
        if (!ready && !wait) {
            return;
        }
        for (auto& output : front.outputs) {
            front.run.outputs.push_back(output.get());
        }
        runs.push_back(front.run);
        sink_.run(front.run);
        pending_.pop_front();
    }
}

void CorrectnessRuns::report_all(std::vector<KernelRun>& runs) {
    report(true, runs);
    for (auto& output : current_.outputs) {
        current_.run.outputs.push_back(output.get());
    }
    sink_.run(current_.run);
}

}  // namespace grader
