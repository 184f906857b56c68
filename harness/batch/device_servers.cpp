// The GPUs a batch grades on: which the machine shows, how many grades run at once on them, and
// the device servers that hold them (device_servers.hpp).

#include "batch/device_servers.hpp"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

#include "common/text.hpp"
#include "device/device_server.hpp"
#include "device/session_account.hpp"
#include "isolation/child.hpp"
#include "text/text_safety.hpp"

namespace grader {

struct DeviceServers::State {
    // One GPU's server: a thread that runs it, and runs it again when it stops, on one socket.
    struct Server {
        std::filesystem::path socket;
        bool ready = false;     // listening now
        bool given_up = false;  // three starts in a row ended before listening
        std::string why_not;    // how the last start that ended before listening ended
        int starts = 0;
        double starting_seconds = 0.0;  // from each start to listening, summed
        int sessions = 0;
        SessionAccount served;  // summed over the sessions
        std::thread thread;
    };
    std::filesystem::path executable;
    std::filesystem::path exercise_dir;
    std::function<void(const std::string&)> notice;
    std::filesystem::path folder;  // private: mode 0700
    std::mutex mutex;
    std::condition_variable changed;
    bool stopping = false;
    std::map<int, Server> servers;
};

namespace {

using State = DeviceServers::State;

constexpr const char* kFolderPrefix = "grader-device-servers-";

// A batch killed with SIGKILL cannot remove its folder: the next batch of the same user removes
// those whose batch (the process id in the name) is gone.
void remove_abandoned_folders(const std::filesystem::path& base) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(base, error)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind(kFolderPrefix, 0) != 0) {
            continue;
        }
        struct stat info {};
        if (::lstat(entry.path().c_str(), &info) != 0 || !S_ISDIR(info.st_mode) ||
            info.st_uid != ::getuid()) {
            continue;
        }
        const long pid = std::strtol(name.c_str() + std::strlen(kFolderPrefix), nullptr, 10);
        if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
            std::error_code ignored;
            std::filesystem::remove_all(entry.path(), ignored);
        }
    }
}

// Unix socket paths are short (108 bytes): the folder goes under the temporary folder where that
// leaves room, else under /tmp.
std::filesystem::path private_folder() {
    std::filesystem::path base = std::filesystem::temp_directory_path();
    if (base.string().size() > 60) {
        base = "/tmp";
    }
    remove_abandoned_folders(base);
    std::string pattern =
        (base / (kFolderPrefix + std::to_string(::getpid()) + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) {  // mode 0700
        throw std::runtime_error("cannot make a folder for the device servers under " +
                                 base.string());
    }
    return pattern;
}

// How a server's process ended, in a few words: its status and its last line of output.
std::string how_it_ended(const ChildResult& ended) {
    std::string how = ended.end == ChildResult::End::exited
                          ? "exit status " + std::to_string(ended.exit_code)
                          : std::string(to_string(ended.end));
    if (ended.end == ChildResult::End::signaled) {
        how += " " + std::to_string(ended.signal);
    }
    if (ended.end == ChildResult::End::spawn_failed) {
        how += ": " + ended.error;
    }
    std::string output = ended.output;
    while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) {
        output.pop_back();
    }
    if (const std::size_t last = output.rfind('\n'); last != std::string::npos) {
        output.erase(0, last + 1);
    }
    if (!output.empty()) {
        how += ": " + text::shorten(output, 300);
    }
    return how;
}

// Runs GPU `device`'s server until the batch stops, starting it again whenever it ends (a kernel
// faulted, or one hung and its grade's worker was killed).
void keep_serving(const std::shared_ptr<State>& state, int device) {
    std::unique_lock lock(state->mutex);
    State::Server& server = state->servers[device];
    int failed_in_a_row = 0;
    while (!state->stopping && failed_in_a_row < 3) {
        ++server.starts;
        const std::filesystem::path socket = server.socket;
        lock.unlock();
        std::error_code ignored;
        std::filesystem::remove(socket, ignored);
        ChildLimits limits;
        limits.seconds = 365.0 * 24 * 3600;  // as long as the batch
        limits.memory_bytes = std::size_t{32} << 30;
        bool listened = false;
        const auto started = std::chrono::steady_clock::now();
        const auto on_message = [&](const std::string& line) {
            const nlohmann::json message = nlohmann::json::parse(line, nullptr, false);
            if (!message.is_object()) {
                return 0.0;
            }
            const std::string type = message.value("type", "");
            const std::lock_guard guard(state->mutex);
            if (type == "ready") {
                server.ready = true;
                server.starting_seconds +=
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
                        .count();
                listened = true;
                state->changed.notify_all();
            } else if (type == "session") {
                ++server.sessions;
                server.served.add(session_account_of(message));
            }
            return 0.0;
        };
        const ChildResult ended = run_child(
            {state->executable.string(), DeviceServerFlags::command, DeviceServerFlags::exercise,
             state->exercise_dir.string(), DeviceServerFlags::device, std::to_string(device),
             DeviceServerFlags::socket, socket.string()},
            limits, on_message);
        std::filesystem::remove(socket, ignored);
        lock.lock();
        server.ready = false;
        failed_in_a_row = listened ? 0 : failed_in_a_row + 1;
        if (!listened) {
            server.why_not = how_it_ended(ended);
        }
        state->changed.notify_all();
    }
    server.given_up = !state->stopping;
    if (server.given_up && state->notice) {
        // The batch goes on, each grade with a context of its own (as --own-contexts): slower,
        // and said at once.
        const std::string notice =
            "GPU " + std::to_string(device) + "'s device server could not start (" +
            server.why_not +
            "); each grade now makes a context of its own, about three times slower";
        lock.unlock();
        state->notice(notice);
        lock.lock();
    }
    state->changed.notify_all();
}

}  // namespace

DeviceServers::DeviceServers(std::filesystem::path grader_executable,
                             std::filesystem::path exercise_dir,
                             std::function<void(const std::string&)> notice)
    : state_(std::make_shared<State>()) {
    state_->executable = std::move(grader_executable);
    state_->exercise_dir = std::move(exercise_dir);
    state_->notice = std::move(notice);
    state_->folder = private_folder();
}

std::vector<std::string> DeviceServers::accounts() const {
    const std::lock_guard lock(state_->mutex);
    std::vector<std::string> lines;
    for (const auto& [device, server] : state_->servers) {
        if (server.given_up && server.sessions == 0) {
            lines.push_back("GPU " + std::to_string(device) + "'s device server could not start (" +
                            server.why_not + "): each grade made a context of its own");
            continue;
        }
        const SessionAccount& served = server.served;
        const auto by_op = [](const std::map<std::string, double>& seconds_by_op,
                              const char* prefix) {
            std::string listed;
            for (const auto& [op, seconds] : seconds_by_op) {
                listed += (listed.empty() ? "" : ", ") + std::string(prefix) + op + " " +
                          format_number(seconds, 2) + " s";
            }
            return listed;
        };
        double answering = 0.0;
        for (const auto& [op, seconds] : served.request_seconds) {
            answering += seconds;
        }
        const std::string requests = by_op(served.request_seconds, "");
        const std::string waits = by_op(served.waiting_before, "before ");
        lines.push_back("GPU " + std::to_string(device) +
                        "'s device server: " + std::to_string(server.sessions) +
                        " grades held the GPU " + format_number(served.held_seconds, 1) +
                        " s: answering " + format_number(answering, 1) + " s (" + requests +
                        "), waiting for their workers " + format_number(served.waiting_seconds, 1) +
                        " s" + (waits.empty() ? "" : " (" + waits + ")") +
                        "; between grades, setting one up " +
                        format_number(served.setup_seconds, 1) + " s, ending one " +
                        format_number(served.teardown_seconds, 1) + " s, idle " +
                        format_number(served.idle_seconds, 1) + " s; started " +
                        std::to_string(server.starts) + " time" + (server.starts == 1 ? "" : "s") +
                        " (" + format_number(server.starting_seconds, 1) +
                        " s to listening in all; a kernel that faults or hangs ends its server)" +
                        (server.given_up ? "; then it could not start again (" + server.why_not +
                                               "): the grades after made contexts of their own"
                                         : ""));
    }
    return lines;
}

DeviceServers::~DeviceServers() {
    stop();
}

void DeviceServers::stop() {
    std::unique_lock lock(state_->mutex);
    if (state_->stopping) {
        return;
    }
    state_->stopping = true;
    for (auto& [device, server] : state_->servers) {
        if (server.ready) {
            stop_device_server(server.socket);
        }
    }
    // A server still busy with an abandoned grade (an interrupted batch) dies with this process
    // (its PR_SET_PDEATHSIG); its thread holds the state, not this object.
    const auto all_stopped = [this] {
        for (const auto& [device, server] : state_->servers) {
            if (server.ready) {
                return false;
            }
        }
        return true;
    };
    const bool stopped = state_->changed.wait_for(lock, std::chrono::seconds(5), all_stopped);
    for (auto& [device, server] : state_->servers) {
        if (stopped) {
            lock.unlock();
            server.thread.join();
            lock.lock();
        } else {
            server.thread.detach();
        }
    }
    lock.unlock();
    if (stopped) {
        std::error_code ignored;
        std::filesystem::remove_all(state_->folder, ignored);
    }
}

std::filesystem::path DeviceServers::socket_for(int device) {
    std::unique_lock lock(state_->mutex);
    auto [found, added] = state_->servers.try_emplace(device);
    State::Server& server = found->second;
    if (added) {
        server.socket = state_->folder / ("gpu" + std::to_string(device) + ".sock");
        server.thread = std::thread(keep_serving, state_, device);
    }
    // The first start takes a few seconds (the context, the profiler); a grade waits for it
    // rather than opening the GPU beside it. After that the socket stays the same through
    // restarts, and the grade's own connection waits for the next server.
    if (server.starts <= 1) {
        state_->changed.wait_for(lock, std::chrono::seconds(120),
                                 [&server] { return server.ready || server.given_up; });
    }
    return server.given_up ? std::filesystem::path{} : server.socket;
}

int default_jobs(const std::string& backend, std::size_t devices, bool device_server) {
    const int gpus = static_cast<int>(devices);
    if (backend == "cuda" && device_server) {
        const int half_cores = static_cast<int>(std::thread::hardware_concurrency() / 2);
        return std::max(2, std::min(4 * gpus, half_cores));
    }
    return std::max(2, gpus + 1);
}

std::vector<int> visible_devices() {
    std::vector<int> devices;
    if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
        // CUDA numbers the listed devices from 0 and stops at the first entry it cannot use;
        // "-1" (or nothing) hides them all.
        std::string list = visible;
        std::size_t start = 0;
        while (start <= list.size()) {
            const std::size_t comma = std::min(list.find(',', start), list.size());
            const std::string entry = list.substr(start, comma - start);
            if (entry.empty() || entry[0] == '-') {
                break;
            }
            devices.push_back(static_cast<int>(devices.size()));
            start = comma + 1;
        }
        return devices;
    }
    std::error_code error;
    std::filesystem::directory_iterator nodes("/dev", error);
    if (error) {
        return devices;
    }
    std::size_t count = 0;
    for (const auto& node : nodes) {
        const std::string name = node.path().filename().string();
        if (name.size() > 6 && name.compare(0, 6, "nvidia") == 0 &&
            std::all_of(name.begin() + 6, name.end(),
                        [](char c) { return c >= '0' && c <= '9'; })) {
            ++count;
        }
    }
    for (std::size_t i = 0; i < count; ++i) {
        devices.push_back(static_cast<int>(i));
    }
    return devices;
}

}  // namespace grader
