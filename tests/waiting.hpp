#pragma once

// Polling for what another thread or process brings about, with a deadline, for the tests.

#include <chrono>
#include <thread>

namespace grader::testing {

// Waits until `done()` or `seconds` pass, asking every `period`; whether it was done.
template <typename Condition>
bool wait_until(Condition done, double seconds,
                std::chrono::milliseconds period = std::chrono::milliseconds(100)) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<long>(seconds * 1000));
    while (std::chrono::steady_clock::now() < deadline) {
        if (done()) {
            return true;
        }
        std::this_thread::sleep_for(period);
    }
    return done();
}

}  // namespace grader::testing
