#pragma once

// One GPU serving a whole class. Without it every grade's worker makes the GPU's context and sets
// up the profiler (CUPTI) for itself, and times and counts the exercise's own kernels again, all
// while it holds the machine's lock of that GPU. A device server (`grader __device-server`,
// started by `grader batch`) does those once: it keeps one context and one open counter for its
// life, measures the exercise's reusable launches once, and serves the grades one at a time over a
// Unix socket, each a session of its own with fresh buffers, modules, shared-memory poison and
// the GPU's lock. A grade's worker reaches it through RemoteDevice, which the grading pipeline
// sees as any other Device.
//
// Isolation stays per grade where a kernel can reach it: a kernel that faults poisons the context,
// so the session answers the fault and the server exits (the batch starts a new one); a kernel
// that hangs outlives its worker, which the grade's deadline kills, and the server exits as soon
// as its client is gone mid-request, taking the hung kernel's context with it.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "device/device.hpp"
#include "exercise/exercise.hpp"

namespace grader {

// The device of one session (one grade), from the grade's seed: the GPU's, sharing the server's
// context and counter.
using SessionDevice = std::function<std::unique_ptr<Device>(std::uint64_t seed)>;

// Where one session's time went, for the batch's account of its GPU: the lock held from the
// grade's acquire to its release, of which answering each kind of request ("run", "time",
// "count", "load", ...) and waiting for the grade's next request (its worker's CPU work and the
// transfers).
struct SessionAccount {
    double held_seconds = 0.0;
    double waiting_seconds = 0.0;
    std::map<std::string, double> request_seconds;
    // waiting_seconds by the request that ended each wait: what the worker did in between.
    std::map<std::string, double> waiting_before;
    // Outside the time held: the server idle before the session (no grade had asked for the
    // GPU), setting it up (the grade's first message, its device, the lock), and ending it.
    double idle_seconds = 0.0;
    double setup_seconds = 0.0;
    double teardown_seconds = 0.0;

    // Adds another's figures to these (a server's sessions, summed).
    void add(const SessionAccount& other);
};
using SessionEnded = std::function<void(const SessionAccount&)>;

// Serves sessions on the listening socket one at a time, in the order their clients connect,
// until a session ends with a launch that faulted (the context is lost) or `listen_fd` fails.
// Returns why it stopped, one sentence. Exits the process (_exit) where a client goes away in the
// middle of a request, which is where a kernel may still be running.
// `ended` hears of every session that ends as sessions do.
std::string serve_device_sessions(int listen_fd, const Exercise& exercise,
                                  const SessionDevice& session_device,
                                  const SessionEnded& ended = {});

// A listening Unix socket at `path` (which must not exist), or throws std::runtime_error.
int listen_on(const std::filesystem::path& path);
// A connection to what listens at `path`, or -1 where nothing does (no server, or one that
// stopped).
int connect_to(const std::filesystem::path& path);

// The grade's side: a Device that connects to the server at `socket` when the grade takes the
// device, and otherwise behaves as the device it stands for. Where no server has begun its
// session within `reconnect` (a server starts again on the same socket after a fault, in a second
// or two), the grade makes a device of its own with `local` and says so in the environment
// section.
std::unique_ptr<Device> open_remote_device(
    std::filesystem::path socket, std::uint64_t seed,
    std::function<std::unique_ptr<Device>()> local,
    std::chrono::milliseconds reconnect = std::chrono::seconds(30));

}  // namespace grader
