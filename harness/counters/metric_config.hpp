#pragma once

// The host side of counting, which needs CUPTI but no GPU: the metric names, the range profiler's
// configuration image for a chip, the evaluation of a decoded counter-data image, and the SASS
// metrics' ids. Kept apart so that the tests check the names against GH100 (the H100's and the
// H200's chip) without a GPU (test_counters: "the counted metrics are valid for the H200's chip").
// Every failure throws CuptiFailure (counters/cupti_status.hpp).

#include <cupti_profiler_host.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "counters/counters.hpp"
#include "counters/cupti_library.hpp"

namespace grader::counters {

// The range profiler's metrics, in the order SharedMemoryCounts lists them.
const std::vector<const char*>& shared_memory_metrics(InstructionCounter instructions);
SharedMemoryCounts counts_from_values(const std::vector<double>& values);

// Per-instruction metrics of the SASS metrics API (names without a rollup).
enum class SassMetric { shared_loads, shared_stores, shared_wavefronts, shared_ideal_wavefronts };
const std::vector<std::pair<SassMetric, const char*>>& shared_memory_sass_metrics();

// The metric ids of shared_memory_sass_metrics() for `chip` ("GH100"), in the same order.
std::vector<std::uint64_t> sass_metric_ids(const CuptiApi& api, const std::string& chip);

// CUPTI's profiler host object for one chip: builds configuration images and evaluates counter
// data. `counter_availability` is the device's image (cuptiProfilerGetCounterAvailability), or
// empty for a configuration made without a device.
//
// CUPTI keeps pointers to what it is given (Kineto found it so for the range profiler's
// configuration image), so the chip name, the availability image and the metric names live here,
// as long as the host object, and the object does not move.
class ProfilerHost {
public:
    ProfilerHost(const CuptiApi& api, std::string chip,
                 std::vector<std::uint8_t> counter_availability);
    ~ProfilerHost();
    ProfilerHost(ProfilerHost&&) = delete;
    ProfilerHost& operator=(ProfilerHost&&) = delete;
    ProfilerHost(const ProfilerHost&) = delete;
    ProfilerHost& operator=(const ProfilerHost&) = delete;

    // Adds `metrics` to this host object (once per object) and returns the configuration image.
    std::vector<std::uint8_t> config_image(const std::vector<const char*>& metrics);
    std::size_t passes(std::vector<std::uint8_t>& config_image) const;
    std::vector<double> evaluate(const std::vector<std::uint8_t>& counter_data, std::size_t range,
                                 const std::vector<const char*>& metrics) const;

private:
    const CuptiApi* api_;
    const std::string chip_;
    const std::vector<std::uint8_t> counter_availability_;
    std::vector<const char*> metric_names_;
    CUpti_Profiler_Host_Object* host_ = nullptr;
};

}  // namespace grader::counters
