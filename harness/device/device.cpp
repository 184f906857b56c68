// What every device shares: the checks and bookkeeping around each call of the Device interface,
// the kernel's arguments from their roles, and a launch's output size.

#include "device/device.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "exercise/exercise.hpp"

namespace grader {

std::string Device::acquire() {
    if (held_) {
        throw std::logic_error("the device was acquired again before it was released");
    }
    std::string bus_id = do_acquire();
    held_ = true;
    return bus_id;
}

void Device::release() {
    if (!held_) {
        return;
    }
    held_ = false;
    given_.clear();  // the inputs went with what the device held
    do_release();
}

void Device::put_input(const InputSpec& input, InputWords words) {
    if (!words) {
        throw std::invalid_argument("input '" + input.id + "' was given without its words");
    }
    do_put_input(input, std::move(words));
    given_.insert(input.id);
}

void Device::check_launch(const LaunchCase& launch, const InputSpec& input) const {
    if (launch.kernel == nullptr) {
        throw std::invalid_argument("a launch at stride " + std::to_string(launch.stride) +
                                    " with input '" + input.id + "' names no loaded kernel");
    }
    if (given_.count(input.id) == 0) {
        throw std::runtime_error("input '" + input.id + "' was launched with before it was given");
    }
}

void Device::follow(const LaunchPlan& plan) {
    for (const PlannedRun& run : plan.runs) {
        check_launch(run.launch, *run.input);
    }
    for (const std::vector<LaunchCase>* launches : {&plan.timed, &plan.counted}) {
        for (const LaunchCase& launch : *launches) {
            check_launch(launch, *plan.timing_input);
        }
    }
    do_follow(plan);
}

DeviceLaunch Device::run(const LaunchCase& launch, const InputSpec& input,
                         const LaunchGeometry& geometry) {
    check_launch(launch, input);
    return do_run(launch, input, geometry);
}

void Device::reload(const std::vector<LoadedKernel*>& kernels) {
    if (std::find(kernels.begin(), kernels.end(), nullptr) != kernels.end()) {
        throw std::invalid_argument("a reload names no loaded kernel");
    }
    do_reload(kernels);
}

TimingSamples Device::time(const std::vector<LaunchCase>& launches, const InputSpec& input,
                           const LaunchGeometry& geometry) {
    for (const LaunchCase& launch : launches) {
        check_launch(launch, input);
    }
    TimingSamples samples = do_time(launches, input, geometry);
    // The grade reads a row for each launch: a device that answers for fewer failed.
    if (samples.end == DeviceLaunch::End::completed &&
        (samples.per_round_ms.size() != launches.size() ||
         samples.launches_per_sample.size() != launches.size())) {
        throw std::runtime_error("the device timed " + std::to_string(samples.per_round_ms.size()) +
                                 " of " + std::to_string(launches.size()) + " launches");
    }
    return samples;
}

HardwareCounts Device::count(const std::vector<LaunchCase>& launches, const InputSpec& input,
                             const LaunchGeometry& geometry) {
    for (const LaunchCase& launch : launches) {
        check_launch(launch, input);
    }
    if (capabilities().counts_as_it_runs) {
        HardwareCounts none;
        none.reason = "the simulator counts as it runs";
        return none;
    }
    HardwareCounts counts = do_count(launches, input, geometry);
    // Counts that do not name every launch name none: the environment section says why.
    if (counts.counted && counts.counts.size() != launches.size()) {
        counts.counted = false;
        counts.reason = "the counters answered for " + std::to_string(counts.counts.size()) +
                        " of " + std::to_string(launches.size()) + " launches";
    }
    return counts;
}

HardwareCounts Device::do_count(const std::vector<LaunchCase>&, const InputSpec&,
                                const LaunchGeometry&) {
    HardwareCounts none;
    none.reason = "this device has no counter of shared-memory traffic";
    return none;
}

std::vector<std::vector<std::byte>> kernel_arguments(const Exercise& exercise,
                                                     std::uint64_t input_address,
                                                     std::uint64_t output_address,
                                                     std::uint64_t output_elements, int stride) {
    std::vector<std::vector<std::byte>> arguments;
    for (const KernelParameter& parameter : exercise.parameters) {
        std::uint64_t value = 0;
        switch (parameter.role) {
            case ParameterRole::input:
                value = input_address;
                break;
            case ParameterRole::output:
                value = output_address;
                break;
            case ParameterRole::count:
                value = output_elements;
                break;
            case ParameterRole::stride:
                value = static_cast<std::uint64_t>(static_cast<std::int64_t>(stride));
                break;
            case ParameterRole::constant:
                value = static_cast<std::uint64_t>(parameter.value);
                break;
        }
        // Little-endian: the low size_bytes bytes of value are the parameter.
        std::vector<std::byte> bytes(parameter.size_bytes);
        std::memcpy(bytes.data(), &value, std::min<std::size_t>(bytes.size(), sizeof value));
        arguments.push_back(std::move(bytes));
    }
    return arguments;
}

std::uint64_t output_elements(const Exercise& exercise, const LaunchGeometry& geometry) {
    const OutputLayout& layout = exercise.buffers.output;
    return layout.kind == OutputLayout::Kind::matrix ? layout.rows * layout.columns
                                                     : geometry.threads();
}

}  // namespace grader
