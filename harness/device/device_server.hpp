#pragma once

// One GPU serving a whole class. Without it every grade's worker makes the GPU's context and sets
// up the profiler (CUPTI) for itself, and times and counts the exercise's own kernels again, all
// while it holds the machine's lock of that GPU. A device server (`grader __device-server`,
// started by `grader batch`; gpu_server.hpp) does those once: it keeps one context and one open
// counter for its life, keeps what the class shares (class_cache.hpp), and serves the grades one
// at a time over a Unix socket, each a session of its own with fresh buffers, modules,
// shared-memory poison and the GPU's lock. A grade's worker reaches it through RemoteDevice
// (remote_device.hpp), which the grading pipeline sees as any other Device; what they say to each
// other is requests.hpp's.
//
// Isolation stays per grade where a kernel can reach it: a kernel that faults poisons the context,
// so the session answers the fault and the server exits (the batch starts a new one); a kernel
// that hangs outlives its worker, which the grade's deadline kills, and the server exits as soon
// as its client is gone mid-request, taking the hung kernel's context with it
// (tests/test_gpu_isolation.cpp on a GPU; tests/test_pipeline.cpp through a fake).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "device/class_cache.hpp"
#include "device/device.hpp"
#include "device/session_account.hpp"
#include "exercise/exercise.hpp"

namespace grader {

// `grader __device-server`'s subcommand and flags, spelled here once: cli/device_server_command.cpp
// binds them, batch/device_servers.cpp starts a server with them.
struct DeviceServerFlags {
    static constexpr const char* command = "__device-server";
    static constexpr const char* exercise = "--exercise";
    static constexpr const char* device = "--device";
    static constexpr const char* socket = "--socket";
};

// The device of one session (one grade), from the grade's seed: the GPU's, sharing the server's
// context and counter.
using SessionDevice = std::function<std::unique_ptr<Device>(std::uint64_t seed)>;
using SessionEnded = std::function<void(const SessionAccount&)>;

// Serves sessions on the listening socket one at a time, in the order their clients connect,
// until one asks it to stop, a session ends with a launch that faulted (the context is lost) or
// `listen_fd` fails. Returns why it stopped, one sentence. Exits the process (_exit) where a client
// goes away in the middle of a request, which is where a kernel may still be running. Each
// session's device answers through a ClassCache of `store`. `ended` hears of every session that
// ends as sessions do.
std::string serve_device_sessions(int listen_fd, const Exercise& exercise,
                                  const SessionDevice& session_device, ClassStore& store,
                                  const SessionEnded& ended = {});

// Asks the server at `path` to stop, and waits for its answer; false where none listens.
bool stop_device_server(const std::filesystem::path& path);

// The allocator's policy for a process that moves a grade's large buffers (Part 2: 64 MB of input,
// and of outputs at every launch): freed, they stay in the heap for the next one's to reuse,
// where glibc would map each block above 32 MB afresh and fault its pages in again. A device
// server then holds one grade's peak for the whole class (tests/test_device.cpp: 67 MiB after
// the first and after the thirtieth grade of a quarter-size Part 2 class, in half the time and
// a tenth of the system time of mapping them afresh). Process-wide: the server's and the
// worker's commands call it first.
void keep_large_buffers_in_heap();

}  // namespace grader
