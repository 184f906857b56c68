// The counters where the toolkit the grader was built with has no CUDA 13 profiling headers
// (Debian's packaged CUDA 12.4, say): every counter says why not, and the simulator's count of
// the same source stands in, as it does where counters are not permitted.

#include <cuda.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "counters/counters.hpp"

namespace grader::counters {

struct SharedMemoryCounter::Impl {
    std::string reason =
        "this grader was built with a CUDA toolkit whose CUPTI lacks the range profiler "
        "(cupti_range_profiler.h, CUDA 12.6 or later), so it cannot read the GPU's counters";
    std::string description;
};

std::string_view to_string(CounterAvailability availability) {
    switch (availability) {
        case CounterAvailability::available:
            return "available";
        case CounterAvailability::not_permitted:
            return "not_permitted";
        case CounterAvailability::no_cupti:
            return "no_cupti";
        case CounterAvailability::unsupported_device:
            return "unsupported_device";
        case CounterAvailability::in_use:
            return "in_use";
        case CounterAvailability::failed:
            return "failed";
    }
    return "failed";
}

void load_counter_libraries() {}

SharedMemoryCounter::SharedMemoryCounter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SharedMemoryCounter::SharedMemoryCounter(SharedMemoryCounter&&) noexcept = default;
SharedMemoryCounter& SharedMemoryCounter::operator=(SharedMemoryCounter&&) noexcept = default;
SharedMemoryCounter::~SharedMemoryCounter() = default;

CounterAvailability SharedMemoryCounter::availability() const {
    return CounterAvailability::no_cupti;
}
const std::string& SharedMemoryCounter::reason() const {
    return impl_->reason;
}
const std::string& SharedMemoryCounter::description() const {
    return impl_->description;
}
int SharedMemoryCounter::passes() const {
    return 0;
}

SharedMemoryCounter SharedMemoryCounter::open(CUcontext, int, InstructionCounter, Probe) {
    return SharedMemoryCounter(std::make_unique<Impl>());
}

namespace {

template <typename T>
CountResult<T> not_counted(const std::string& reason) {
    CountResult<T> result;
    result.availability = CounterAvailability::no_cupti;
    result.reason = reason;
    return result;
}

}  // namespace

CountResult<SharedMemoryCounts> SharedMemoryCounter::count(const Launch&) {
    return not_counted<SharedMemoryCounts>(impl_->reason);
}

CountResult<std::vector<SharedMemoryCounts>> SharedMemoryCounter::count_each(
    const std::vector<Launch>&) {
    return not_counted<std::vector<SharedMemoryCounts>>(impl_->reason);
}

CountResult<SourceLineCounts> SharedMemoryCounter::count_by_line(std::string_view,
                                                                 const std::string&,
                                                                 const Launch&) {
    return not_counted<SourceLineCounts>(impl_->reason);
}

void SharedMemoryCounter::keep_session(bool) {}

}  // namespace grader::counters
