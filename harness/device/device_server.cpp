// The device server's sessions (device_server.hpp): one grade at a time, each on a device of its
// own that answers through the server's ClassCache.

#include "device/device_server.hpp"

#include <malloc.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "device/requests.hpp"
#include "device/wire.hpp"
#include "model/measurements.hpp"

namespace grader {
namespace {

using wire::Frame;
using Clock = std::chrono::steady_clock;
namespace rq = requests;

double seconds_between(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

// While a request runs, a client that goes away (its worker was killed at the grade's deadline)
// may leave a kernel running on the device: the process exits, and the context goes with it.
class ClientWatch {
public:
    explicit ClientWatch(int fd) : fd_(fd), thread_([this] { watch(); }) {}
    ~ClientWatch() {
        stop_ = true;
        thread_.join();
    }
    ClientWatch(const ClientWatch&) = delete;
    ClientWatch& operator=(const ClientWatch&) = delete;
    void busy(bool busy) { busy_ = busy; }

private:
    void watch() {
        while (!stop_) {
            pollfd watched{fd_, POLLRDHUP, 0};
            const int ready = ::poll(&watched, 1, 50);
            if (ready > 0 && (watched.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
                if (busy_) {
                    ::_exit(3);
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
        }
    }
    int fd_;
    std::atomic<bool> stop_{false};
    std::atomic<bool> busy_{false};
    std::thread thread_;
};

bool is_launch(const std::string& op) {
    return op == rq::kRun.name || op == rq::kTime.name || op == rq::kCount.name;
}

// One grade's session: its device, its loaded kernels by handle, and a handler for each request,
// bound once.
class Session {
public:
    Session(int fd, const Exercise& exercise, ClassStore& store)
        : fd_(fd), exercise_(exercise), store_(store) {
        bind_requests();
    }
    ~Session() { release(); }
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // Empty where the session ended as sessions do; else why the server must stop.
    std::string serve(const SessionDevice& session_device, SessionAccount& account) {
        std::optional<Frame> first = wire::receive(fd_);
        if (!first) {
            return {};
        }
        if (rq::op_of(*first) == rq::kStop.name) {
            send(Frame{});
            return "asked to stop";
        }
        const auto setting_up = Clock::now();
        rq::Begin begin;
        rq::read(*first, begin);
        device_ = std::make_unique<ClassCache>(store_, session_device(begin.seed));
        if (begin.poison) {
            device_->set_shared_poison(*begin.poison);
        }
        rq::Begun begun;
        begun.bus_id = device_->acquire();
        begun.capabilities = device_->capabilities();
        const auto held_from = Clock::now();
        // Every way out of the session's requests says how long it held the device.
        const auto held = [&account, held_from](std::string stop) {
            account.held_seconds = seconds_between(held_from, Clock::now());
            return stop;
        };
        Frame reply;
        rq::write(begun, reply);
        send(reply);
        account.setup_seconds = seconds_between(setting_up, Clock::now());
        ClientWatch watch(fd_);
        auto waiting_from = Clock::now();
        while (std::optional<Frame> request = wire::receive(fd_)) {
            const auto answering_from = Clock::now();
            const std::string op = rq::op_of(*request);
            const double waited = seconds_between(waiting_from, answering_from);
            account.waiting_seconds += waited;
            account.waiting_before[op] += waited;
            if (op == rq::kRelease.name) {
                release();
                send(Frame{});
                return held({});
            }
            watch.busy(true);
            try {
                reply = answer(op, *request);
            } catch (const std::exception& error) {
                // The harness's own failure outside any kernel: the grade is ungradable, and the
                // device may be in any state, so the server goes with it.
                watch.busy(false);
                send(rq::error_reply(error.what()));
                return held(std::string("the device failed: ") + error.what());
            }
            watch.busy(false);
            send(reply);
            waiting_from = Clock::now();
            account.request_seconds[op] += seconds_between(answering_from, waiting_from);
            if (lost_) {
                return held("a kernel faulted, which leaves the device's context unusable");
            }
        }
        return held({});  // the client went away between requests; the device is released below
    }

private:
    void send(const Frame& frame) { wire::send(fd_, frame); }

    // A launch asked for after one that did not complete was asked for ahead of the grade's
    // stop: it is not run.
    Frame answer(const std::string& op, const Frame& request) {
        if (failed_ && is_launch(op)) {
            return rq::error_reply("not run: an earlier launch of this grade did not complete");
        }
        return table_.answer(request);
    }

    // How a launch ended: a fault loses the device, any other end stops the grade's launches.
    void ended(DeviceLaunch::End end) {
        lost_ = lost_ || end == DeviceLaunch::End::fault;
        failed_ = failed_ || end != DeviceLaunch::End::completed;
    }

    void bind_requests() {
        table_.bind(rq::kDescribe, [this](rq::Describe args) {
            device_->describe(args.environment);
            return args.environment;
        });
        table_.bind(rq::kLoad, [this](rq::Load args) {
            LoadResult result = device_->load(exercise_.kernel(args.kernel), args.compiled);
            rq::Loaded loaded;
            loaded.problem = result.problem;
            loaded.unsupported = result.unsupported;
            if (result.kernel) {
                const LoadedKernel& kernel = *result.kernel;
                loaded.handle = kernels_.size();
                loaded.param_sizes = kernel.param_sizes;
                loaded.param_source = kernel.param_source;
                loaded.static_shared_bytes = kernel.static_shared_bytes;
                loaded.registers = kernel.registers;
                kernels_.push_back(std::move(result.kernel));
            }
            return loaded;
        });
        table_.bind(rq::kGeometry,
                    [this](rq::Sizing args) { return device_->geometry(kernel_at(args.handle)); });
        table_.bind(rq::kInput, [this](rq::Input args) {
            device_->put_input(input_of(args.input), std::move(args.words));
            return rq::Nothing{};
        });
        table_.bind(rq::kRun, [this](rq::Run args) {
            DeviceLaunch launch =
                device_->run(launch_of(args.launch), input_of(args.input), args.geometry);
            ended(launch.end);
            return launch;
        });
        table_.bind(rq::kReload, [this](rq::Reload args) {
            std::vector<LoadedKernel*> kernels;
            for (const rq::Handle handle : args.handles) {
                kernels.push_back(&kernel_at(handle));
            }
            device_->reload(kernels);
            return rq::Nothing{};
        });
        table_.bind(rq::kTime, [this](rq::Launches args) {
            TimingSamples samples =
                device_->time(launches_of(args), input_of(args.input), args.geometry);
            ended(samples.end);
            return samples;
        });
        table_.bind(rq::kCount, [this](rq::Launches args) {
            HardwareCounts counts =
                device_->count(launches_of(args), input_of(args.input), args.geometry);
            ended(counts.end);
            return counts;
        });
    }

    void release() {
        kernels_.clear();
        if (device_) {
            device_->release();  // where it was acquired (Device::held)
        }
        device_.reset();
    }

    LoadedKernel& kernel_at(rq::Handle handle) const {
        if (handle >= kernels_.size() || !kernels_[handle]) {
            throw std::runtime_error("no kernel is loaded as handle " + std::to_string(handle));
        }
        return *kernels_[handle];
    }

    const InputSpec& input_of(const std::string& id) const {
        for (const InputSpec& input : exercise_.inputs) {
            if (input.id == id) {
                return input;
            }
        }
        throw std::runtime_error("the exercise has no input '" + id + "'");
    }

    LaunchCase launch_of(const rq::Launch& launch) const {
        return LaunchCase{&kernel_at(launch.handle), launch.stride, launch.outputs_read,
                          launch.reusable};
    }

    std::vector<LaunchCase> launches_of(const rq::Launches& args) const {
        std::vector<LaunchCase> launches;
        for (const rq::Launch& launch : args.launches) {
            launches.push_back(launch_of(launch));
        }
        return launches;
    }

    int fd_;
    const Exercise& exercise_;
    ClassStore& store_;
    rq::RequestTable table_;
    std::unique_ptr<Device> device_;
    std::vector<std::unique_ptr<LoadedKernel>> kernels_;
    bool failed_ = false;  // a launch did not complete: the grade stops
    bool lost_ = false;    // a launch faulted: the device's context is unusable
};

}  // namespace

void keep_large_buffers_in_heap() {
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

bool stop_device_server(const std::filesystem::path& path) {
    const int fd = wire::connect_to(path);
    if (fd < 0) {
        return false;
    }
    rq::Connection server(fd);
    try {
        server.call(rq::kStop, rq::Nothing{});
    } catch (const std::runtime_error&) {
        // It is stopping anyway.
    }
    return true;
}

std::string serve_device_sessions(int listen_fd, const Exercise& exercise,
                                  const SessionDevice& session_device, ClassStore& store,
                                  const SessionEnded& ended) {
    auto idle_from = Clock::now();
    for (;;) {
        const int client = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (client < 0) {
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }
            return std::string("accepting a grade failed: ") + std::strerror(errno);
        }
        std::string stop;
        SessionAccount account;
        account.idle_seconds = seconds_between(idle_from, Clock::now());
        std::optional<Clock::time_point> served;
        try {
            Session session(client, exercise, store);
            stop = session.serve(session_device, account);
            served = Clock::now();
        } catch (const wire::WireError&) {
            // The grade went away between requests: its session is over, the device is fine.
        } catch (const std::exception& error) {
            stop = std::string("a session failed: ") + error.what();
        }
        ::close(client);
        idle_from = Clock::now();
        if (served) {
            account.teardown_seconds = seconds_between(*served, idle_from);
        }
        if (ended && account.held_seconds > 0.0) {
            ended(account);
        }
        if (!stop.empty()) {
            return stop;
        }
    }
}

}  // namespace grader
