#pragma once

// `grader __device-server`'s work (device_server.hpp): GPU `ordinal`'s context and counter,
// opened once for the server's life, then the sessions of serve_device_sessions() on `socket`.

#include <filesystem>
#include <functional>
#include <string>

#include "device/device_server.hpp"
#include "exercise/exercise.hpp"

namespace grader {

// Serves until a session ends with a fault, or the server is asked to stop, and returns why it
// stopped, leaving the context and the profiler to the process's end (a kernel's fault may have
// lost the context). `ready` is called once the socket listens, `ended` after each session.
std::string serve_gpu(const Exercise& exercise, int ordinal, const std::filesystem::path& socket,
                      const std::function<void()>& ready, const SessionEnded& ended);

}  // namespace grader
