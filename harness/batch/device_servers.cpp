#include "batch/device_servers.hpp"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "device/device_server.hpp"
#include "device/wire.hpp"
#include "isolation/child.hpp"

namespace grader {

struct DeviceServers::State {
    struct Server {
        std::filesystem::path socket;
        bool running = false;  // from its start to its end
        bool ready = false;    // listening
        int starts = 0;
        int failed_starts = 0;  // ended before listening
        std::thread thread;
    };
    std::filesystem::path executable;
    std::filesystem::path exercise_dir;
    std::filesystem::path folder;  // private: mode 0700
    std::mutex mutex;
    std::condition_variable changed;
    std::map<int, Server> servers;
};

namespace {

// Unix socket paths are short (108 bytes): the folder goes under the temporary folder where that
// leaves room, else under /tmp.
std::filesystem::path private_folder() {
    std::filesystem::path base = std::filesystem::temp_directory_path();
    if (base.string().size() > 60) {
        base = "/tmp";
    }
    std::string pattern = (base / "grader-device-servers-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
        throw std::runtime_error("cannot make a folder for the device servers under " +
                                 base.string());
    }
    return pattern;
}

void start(const std::shared_ptr<DeviceServers::State>& state, int device,
           DeviceServers::State::Server& server) {
    if (server.thread.joinable()) {
        server.thread.join();  // the earlier server has ended: running is false
    }
    ++server.starts;
    server.socket = state->folder / ("gpu" + std::to_string(device) + "-" +
                                     std::to_string(server.starts) + ".sock");
    server.running = true;
    server.ready = false;
    server.thread = std::thread([state, device, socket = server.socket] {
        ChildLimits limits;
        limits.seconds = 365.0 * 24 * 3600;  // as long as the batch
        limits.memory_bytes = std::size_t{32} << 30;
        const auto on_message = [&](const std::string& line) {
            if (line.find("\"ready\"") != std::string::npos) {
                const std::lock_guard lock(state->mutex);
                DeviceServers::State::Server& s = state->servers[device];
                if (s.socket == socket) {
                    s.ready = true;
                }
                state->changed.notify_all();
            }
            return 0.0;
        };
        run_child({state->executable.string(), "__device-server", "--exercise",
                   state->exercise_dir.string(), "--device", std::to_string(device), "--socket",
                   socket.string()},
                  limits, on_message);
        const std::lock_guard lock(state->mutex);
        DeviceServers::State::Server& s = state->servers[device];
        if (s.socket == socket) {
            s.failed_starts += s.ready ? 0 : 1;
            s.running = false;
            s.ready = false;
        }
        std::error_code ignored;
        std::filesystem::remove(socket, ignored);
        state->changed.notify_all();
    });
}

}  // namespace

DeviceServers::DeviceServers(std::filesystem::path grader_executable,
                             std::filesystem::path exercise_dir)
    : state_(std::make_shared<State>()) {
    state_->executable = std::move(grader_executable);
    state_->exercise_dir = std::move(exercise_dir);
    state_->folder = private_folder();  // mkdtemp makes it 0700
}

DeviceServers::~DeviceServers() {
    std::unique_lock lock(state_->mutex);
    for (auto& [device, server] : state_->servers) {
        if (!server.running || !server.ready) {
            continue;
        }
        const int fd = connect_to(server.socket);
        if (fd >= 0) {
            try {
                wire::send(fd, wire::Frame{nlohmann::json{{"op", "stop"}}, {}});
            } catch (const wire::WireError&) {
                // It is stopping anyway.
            }
            ::close(fd);
        }
    }
    // A server still busy with an abandoned grade (an interrupted batch) dies with this process.
    state_->changed.wait_for(lock, std::chrono::seconds(10), [this] {
        for (const auto& [device, server] : state_->servers) {
            if (server.running) {
                return false;
            }
        }
        return true;
    });
    for (auto& [device, server] : state_->servers) {
        if (server.thread.joinable()) {
            if (server.running) {
                server.thread.detach();  // it holds the state, not this object
            } else {
                server.thread.join();
            }
        }
    }
    lock.unlock();
    std::error_code ignored;
    std::filesystem::remove_all(state_->folder, ignored);
}

std::filesystem::path DeviceServers::socket_for(int device) {
    std::unique_lock lock(state_->mutex);
    State::Server& server = state_->servers[device];
    if (!server.running) {
        if (server.failed_starts >= 3) {
            return {};
        }
        start(state_, device, server);
    }
    state_->changed.wait_for(lock, std::chrono::seconds(120),
                             [&server] { return server.ready || !server.running; });
    return server.ready ? server.socket : std::filesystem::path{};
}

int DeviceServers::starts() const {
    const std::lock_guard lock(state_->mutex);
    int starts = 0;
    for (const auto& [device, server] : state_->servers) {
        starts += server.starts;
    }
    return starts;
}

}  // namespace grader
