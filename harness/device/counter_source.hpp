#pragma once

// Where a GPU device's counter comes from (CudaDevice counts with whatever it is handed): a
// grade's own, opened beside its timing and closed at its release, or a device server's, open on
// the server's context for the server's life, with one profiling session kept for every count.

#include <cuda.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "counters/counters.hpp"
#include "device/device.hpp"

namespace grader {

class CounterSource {
public:
    virtual ~CounterSource() = default;
    // Launches that will be counted are about to be timed on `context`: a counter that is not
    // open yet may begin to open beside the timing (no profiling session runs while it opens).
    virtual void timing_begins(CUcontext) {}
    // The counter to count with on `context` (current on this thread), or null with why_not()
    // saying why. It may wait for an open begun before.
    virtual counters::SharedMemoryCounter* counter(CUcontext context) = 0;
    virtual const std::string& why_not() const = 0;
    // The grade is over: what this source opened for it goes, before the context does. Never
    // throws.
    virtual void close() {}
};

// A grade's own: CUPTI's libraries load on a thread of their own from here (beside the compile),
// the counter opens beside the timing (timing_begins), or at the count where nothing was timed,
// and learns at its first count whether this user may count.
std::shared_ptr<CounterSource> own_counter(int ordinal, StepTrace trace = {});

// How long a device server's count waits for the counter that opens beside its first grades
// before the simulator's witness stands in for that count: inside the count stage's own start
// (grade/limits.hpp's kCounterStartSeconds), so that the wait is never the student's timeout.
inline constexpr std::chrono::seconds kCounterOpenWait{1};

// A device server's, on its `context`: the libraries load and the counter opens on a thread from
// here, beside the server's first grades.
std::shared_ptr<CounterSource> server_counter(CUcontext context, int ordinal);

}  // namespace grader
