#pragma once

// The frames the device server (device/device_server.hpp) and its clients exchange over a Unix
// socket: a JSON head and raw byte blobs beside it (a kernel's cubin, an output buffer of a
// million floats), each length-prefixed, so that no float crosses as text.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "device/device.hpp"
#include "device/device_server.hpp"

namespace grader::wire {

// The connection broke, or the peer sent what is not a frame.
class WireError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct Frame {
    nlohmann::json head;
    std::vector<std::string> blobs;
};

// Both throw WireError; receive() returns nullopt where the peer closed between frames.
void send(int fd, const Frame& frame);
std::optional<Frame> receive(int fd);

std::string blob_of(const std::vector<float>& values);
std::vector<float> floats_of(const std::string& blob);

// What crosses for each of the device's answers. The float buffers go as blobs: a launch's output
// is the frame's first blob, a timing's final outputs its blobs in launch order.
nlohmann::json geometry_json(const LaunchGeometry& geometry);
LaunchGeometry geometry_of(const nlohmann::json& j);
Frame launch_frame(const DeviceLaunch& launch);
DeviceLaunch launch_of(const Frame& frame);
Frame samples_frame(const TimingSamples& samples);
TimingSamples samples_of(const Frame& frame);
nlohmann::json counts_json(const HardwareCounts& counts);
HardwareCounts counts_of(const nlohmann::json& j);
nlohmann::json end_json(DeviceLaunch::End end);
DeviceLaunch::End end_of(const nlohmann::json& j);

// A server's account of one session, as it tells the batch: one JSON object a line on its message
// pipe, {"type": "session", ...}. Reading leaves out what is not a number: a batch does not stop
// over an account.
nlohmann::json session_json(const SessionAccount& account);
SessionAccount session_of(const nlohmann::json& j);

}  // namespace grader::wire
