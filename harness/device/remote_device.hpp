#pragma once

// The grade's side of the device server (device_server.hpp): every call of the Device interface
// as a request on the server's socket (requests.hpp). The grade's inputs go by an explicit call
// (put_input) before its plan; the plan's requests (follow) go at once, and each call reads its
// own reply: no request sent ahead carries an input's words (a grade's plan is a few kilobytes,
// far inside a socket's buffer), so the grade and the server never both wait to write
// (tests/test_pipeline.cpp grades with two 16 MB inputs and 4 MB of outputs a launch through a
// server).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <string_view>
#include <utility>
#include <variant>

#include "device/device.hpp"
#include "device/requests.hpp"

namespace grader {

// The requests a connection sent ahead, in order, for the calls that read their replies: each
// call takes its own from the front.
class SentAhead {
public:
    using Args = std::variant<requests::Run, requests::Reload, requests::Launches>;
    struct Step {
        std::string_view op;
        Args args;
    };

    void push(std::string_view op, Args args) { steps_.push_back({op, std::move(args)}); }
    // True where the front is this request, which it takes; false where nothing was sent ahead;
    // std::runtime_error where something else was (the grade left its plan).
    bool take(std::string_view op, const Args& args);
    bool empty() const { return steps_.empty(); }
    std::size_t size() const { return steps_.size(); }
    const Step& front() const { return steps_.front(); }
    void pop() { steps_.pop_front(); }
    void clear() { steps_.clear(); }

private:
    std::deque<Step> steps_;
};

// A Device whose session begins on the server at `socket` at acquire(), where one answers within
// `reconnect` (a server starts again on the same socket after a fault, in a second or two);
// acquire() throws DeviceUnavailable otherwise, saying so.
std::unique_ptr<Device> open_remote_device(
    std::filesystem::path socket, std::uint64_t seed,
    std::chrono::milliseconds reconnect = std::chrono::seconds(30));

}  // namespace grader
