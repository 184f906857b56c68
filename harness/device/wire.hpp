#pragma once

// The frames the device server (device_server.hpp) and its clients exchange over a Unix socket:
// a JSON head and raw byte blobs beside it (a kernel's cubin, an output buffer of a million
// floats), each length-prefixed, so that no float crosses as text. What each request carries is
// requests.hpp's.

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace grader::wire {

// The connection broke, or the peer sent what is not a frame.
class WireError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct Frame {
    nlohmann::json head = nlohmann::json::object();
    std::vector<std::string> blobs;
};

// A listening Unix socket at `path` (which must not exist), or throws std::runtime_error.
int listen_on(const std::filesystem::path& path);
// A connection to what listens at `path`, or -1 where nothing does (no server, or one that
// stopped).
int connect_to(const std::filesystem::path& path);

// Both throw WireError; receive() returns nullopt where the peer closed between frames.
void send(int fd, const Frame& frame);
std::optional<Frame> receive(int fd);

std::string blob_of(const std::vector<float>& values);
std::vector<float> floats_of(const std::string& blob);

}  // namespace grader::wire
