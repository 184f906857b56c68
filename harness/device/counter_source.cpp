#include "device/counter_source.hpp"

#include <cxxabi.h>

#include <exception>
#include <functional>
#include <future>
#include <optional>
#include <system_error>
#include <type_traits>
#include <utility>

#include "cuda/driver_api.hpp"

namespace grader {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point from) {
    return std::chrono::duration<double>(Clock::now() - from).count();
}

// The GPU's counter, learning at its first count whether this user may count.
counters::SharedMemoryCounter open_counter(CUcontext context, int ordinal,
                                           counters::SharedMemoryCounter::Probe probe) {
    return counters::SharedMemoryCounter::open(context, ordinal,
                                               counters::InstructionCounter::hardware, probe);
}

// open_counter() on a thread of its own, once CUPTI's `libraries` are loaded, with `context`
// made current there: beside what does not need it (a grade's timing, a server's first grade).
std::future<counters::SharedMemoryCounter> open_counter_beside(
    std::shared_future<void> libraries, CUcontext context, int ordinal,
    counters::SharedMemoryCounter::Probe probe) {
    return std::async(std::launch::async,
                      [libraries = std::move(libraries), context, ordinal, probe] {
                          libraries.get();
                          cuda::driver().cuCtxSetCurrent(context);
                          return open_counter(context, ordinal, probe);
                      });
}

class OwnCounter final : public CounterSource {
public:
    OwnCounter(int ordinal, StepTrace trace) : ordinal_(ordinal), trace_(std::move(trace)) {
        libraries_ = std::async(std::launch::async, [this] {
                         const auto loading = Clock::now();
                         counters::load_counter_libraries();
                         libraries_seconds_ = seconds_since(loading);
                     }).share();
    }
    ~OwnCounter() override {
        close();
        libraries_.wait();
    }

    void timing_begins(CUcontext context) override {
        if (!opening_.valid() && !opened_) {
            opening_ = open_counter_beside(libraries_, context, ordinal_,
                                           counters::SharedMemoryCounter::Probe::at_first_count);
        }
    }

    counters::SharedMemoryCounter* counter(CUcontext context) override {
        if (opened_) {
            return &*opened_;
        }
        const auto began = Clock::now();
        libraries_.get();
        const double waited = seconds_since(began);
        const auto readying = Clock::now();
        // It counts at once: a user without the counters learns it from that count.
        opened_.emplace(opening_.valid()
                            ? opening_.get()
                            : open_counter(context, ordinal_,
                                           counters::SharedMemoryCounter::Probe::at_first_count));
        if (trace_) {
            trace_("count: open: " + opened_->open_steps());
            trace_("count: CUPTI's libraries loaded in " + std::to_string(libraries_seconds_) +
                   " s (waited " + std::to_string(waited) + " s for them), the counter ready in " +
                   std::to_string(seconds_since(readying)) + " s");
        }
        return &*opened_;
    }

    const std::string& why_not() const override { return why_not_; }

    // Before anything is timed again and before the context goes: CUPTI's profiler stays
    // initialised in the process while a counter exists.
    void close() override {
        if (opening_.valid()) {
            // A grade that stopped before its count: the counter goes before the context. Its
            // open never throws for the environment; nothing else of it matters now.
            try {
                (void)opening_.get();
            } catch (const std::exception&) {
            }
        }
        if (opened_) {
            const auto closing = Clock::now();
            opened_.reset();
            if (trace_) {
                trace_("count: the counter closed in " + std::to_string(seconds_since(closing)) +
                       " s");
            }
        }
    }

private:
    int ordinal_;
    StepTrace trace_;
    std::shared_future<void> libraries_;
    double libraries_seconds_ = 0.0;  // how long loading them took
    std::future<counters::SharedMemoryCounter> opening_;
    std::optional<counters::SharedMemoryCounter> opened_;
    std::string why_not_;
};

class ServerCounter final : public CounterSource {
public:
    ServerCounter(CUcontext context, int ordinal) {
        std::shared_future<void> libraries =
            std::async(std::launch::async, [] { counters::load_counter_libraries(); }).share();
        opening_ = open_counter_beside(std::move(libraries), context, ordinal,
                                       counters::SharedMemoryCounter::Probe::at_first_count);
    }

    // One that has not opened within kCounterOpenWait, or failed to, leaves this count to the
    // simulator's witness (the next count waits again, where the open is still under way):
    // never the grade's failure, nor a wait the count stage's limit could blame on the student.
    counters::SharedMemoryCounter* counter(CUcontext) override {
        if (!opened_ && opening_.valid()) {
            if (opening_.wait_for(kCounterOpenWait) != std::future_status::ready) {
                why_not_ = "CUPTI's counter had not opened within " +
                           std::to_string(kCounterOpenWait.count()) +
                           " s of the count in this GPU's device server";
                return nullptr;
            }
            try {
                opened_.emplace(opening_.get());
            } catch (const std::exception& error) {
                why_not_ =
                    std::string("CUPTI's counter failed to open in this GPU's device server: ") +
                    error.what();
                return nullptr;
            }
            // One profiling session for every count of the server's life: a session's first
            // pass costs what a hundred later passes in it do (counters.hpp).
            opened_->keep_session(true);
        }
        return opened_ ? &*opened_ : nullptr;
    }

    const std::string& why_not() const override { return why_not_; }

private:
    std::future<counters::SharedMemoryCounter> opening_;
    std::optional<counters::SharedMemoryCounter> opened_;
    std::string why_not_;
};

}  // namespace

std::shared_ptr<CounterSource> own_counter(int ordinal, StepTrace trace) {
    return std::make_shared<OwnCounter>(ordinal, std::move(trace));
}

std::shared_ptr<CounterSource> server_counter(CUcontext context, int ordinal) {
    return std::make_shared<ServerCounter>(context, ordinal);
}

}  // namespace grader
