#pragma once

// Times several launches against each other on one stream the harness owns.

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cuda/resources.hpp"
#include "exercise/exercise.hpp"
#include "measure/statistics.hpp"

namespace grader {

struct TimedLaunch {
    std::string label;                      // "student stride 8", for messages
    std::function<void(CUstream)> enqueue;  // enqueues exactly one launch
};

struct RowSamples {
    std::vector<double> per_launch_ms;  // one per round, in round order
    int launches_per_sample = 1;
};

struct InterleavedTiming {
    std::vector<RowSamples> rows;  // in the order of the launches given
    int rounds = 0;
    double seconds = 0.0;
    StopReason stop = StopReason::keep_going;
};

// Warms each row up, sizes its samples so launch overhead is noise, then samples every row once
// per round in a freshly shuffled order (so drift such as clocks ramping hits every row alike)
// until should_stop() says so. A kernel fault surfaces as cuda::DriverError.
InterleavedTiming time_interleaved(const std::vector<TimedLaunch>& launches, const TimingSpec& spec,
                                   std::uint64_t seed, const cuda::Stream& stream);

}  // namespace grader
