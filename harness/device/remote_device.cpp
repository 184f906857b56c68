// The grade's side of the device server (device_server.hpp): every call of the Device interface
// as a request on the server's socket, or, where no server answered, on a device of its own.

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "compile/compile.hpp"
#include "device/device.hpp"
#include "device/device_server.hpp"
#include "device/wire.hpp"
#include "exercise/exercise.hpp"
#include "model/json.hpp"
#include "model/measurements.hpp"

namespace grader {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using wire::Frame;

class RemoteKernel final : public LoadedKernel {
public:
    std::size_t handle = 0;
};

// How long a grade that stops waits, at its release, for the runs it had asked for ahead: well
// inside the shortest limit of the stage it stopped in (a student's run: at least 1 s).
constexpr std::chrono::milliseconds kQueuedRunsWait{500};

std::size_t handle_of(const LoadedKernel& kernel) {
    return static_cast<const RemoteKernel&>(kernel).handle;
}

// A request about several launches with one input: "time" or "count".
Frame launches_request(const char* op, const std::vector<TimedCase>& launches,
                       const InputSpec& input, const LaunchGeometry& geometry) {
    json cases = json::array();
    for (const TimedCase& c : launches) {
        cases.push_back(
            {{"handle", handle_of(*c.kernel)}, {"stride", c.stride}, {"reusable", c.reusable}});
    }
    return Frame{json{{"op", op},
                      {"cases", cases},
                      {"input", input.id},
                      {"geometry", wire::geometry_json(geometry)}},
                 {}};
}

class RemoteDevice final : public Device {
public:
    RemoteDevice(std::filesystem::path socket, std::uint64_t seed,
                 std::function<std::unique_ptr<Device>()> local,
                 std::chrono::milliseconds reconnect)
        : socket_(std::move(socket)),
          seed_(seed),
          make_local_(std::move(local)),
          reconnect_(reconnect) {}
    ~RemoteDevice() override { disconnect(); }
    RemoteDevice(const RemoteDevice&) = delete;
    RemoteDevice& operator=(const RemoteDevice&) = delete;

    bool locks() const override { return true; }
    bool held() const override { return local_ ? local_->held() : fd_ >= 0; }
    double open_seconds() const override { return local_ ? local_->open_seconds() : 0.0; }
    bool times() const override { return local_ ? local_->times() : times_; }
    bool counts_as_it_runs() const override {
        return local_ ? local_->counts_as_it_runs() : counts_as_it_runs_;
    }
    void set_shared_poison(const CompiledKernel& poison) override { poison_ = poison; }

    // A server that stops after a fault drops the grades waiting in its queue, and the batch
    // starts it again on the same socket within a second or two: until the session has begun
    // (nothing of this grade has run yet), connecting is tried again for a while before the
    // grade opens a device of its own.
    std::string acquire() override {
        Frame begin{json{{"op", "begin"}, {"seed", seed_}}, {}};
        if (poison_) {
            begin.head["poison"] = poison_->outcome;
            begin.blobs.push_back(poison_->cubin);
        }
        const auto deadline = std::chrono::steady_clock::now() + reconnect_;
        for (;;) {
            fd_ = connect_to(socket_);
            if (fd_ >= 0) {
                try {
                    const Frame reply = call(begin);
                    times_ = reply.head.at("times").get<bool>();
                    counts_as_it_runs_ = reply.head.at("counts_as_it_runs").get<bool>();
                    return reply.head.at("bus_id").get<std::string>();
                } catch (const std::runtime_error&) {
                    disconnect();  // dropped from the queue of a server that stopped
                }
            }
            if (std::chrono::steady_clock::now() >= deadline) {
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        local_ = make_local_();
        if (poison_) {
            local_->set_shared_poison(*poison_);
        }
        return local_->acquire();
    }

    void release() override {
        if (local_) {
            local_->release();
            return;
        }
        if (fd_ >= 0 && settled_within(kQueuedRunsWait)) {  // what was asked for ahead
            try {
                call(Frame{json{{"op", "release"}}, {}});
            } catch (const std::exception&) {
                // A server that stopped after a fault has released everything already.
            }
        }
        // Else the grade stopped (a refused launch) with a run still going that nobody asked
        // for: the connection goes, and the server with it, as for a kernel that hangs.
        disconnect();
    }

    void describe(Environment& environment) const override {
        if (local_) {
            local_->describe(environment);
            environment.notes.push_back("This GPU's device server did not answer within " +
                                        std::to_string(reconnect_.count()) +
                                        " ms, so this grade made a context of its own.");
            return;
        }
        const Frame reply = call(Frame{json{{"op", "describe"}, {"environment", environment}}, {}});
        environment = reply.head.at("environment").get<Environment>();
    }

    LoadResult load(const KernelSpec& spec, const CompiledKernel& compiled) override {
        if (local_) {
            return local_->load(spec, compiled);
        }
        const Frame reply =
            call(Frame{json{{"op", "load"}, {"kernel", spec.id}, {"outcome", compiled.outcome}},
                       {compiled.cubin}});
        const json& head = reply.head;
        LoadResult result;
        result.problem = head.at("problem").get<std::string>();
        result.unsupported = head.at("unsupported").get<bool>();
        if (head.contains("handle")) {
            auto kernel = std::make_unique<RemoteKernel>();
            kernel->id = spec.id;
            kernel->handle = head.at("handle").get<std::size_t>();
            kernel->param_sizes = head.at("param_sizes").get<std::vector<std::size_t>>();
            kernel->param_source = head.at("param_source").get<std::string>();
            kernel->static_shared_bytes = head.at("static_shared_bytes").get<int>();
            kernel->registers = head.at("registers").get<int>();
            result.kernel = std::move(kernel);
        }
        return result;
    }

    LaunchGeometry geometry(const LoadedKernel& sizing_kernel) override {
        if (local_) {
            return local_->geometry(sizing_kernel);
        }
        return wire::geometry_of(
            call(Frame{json{{"op", "geometry"}, {"handle", handle_of(sizing_kernel)}}, {}}).head);
    }

    DeviceLaunch run(const LoadedKernel& kernel, const InputSpec& input,
                     const std::vector<float>& input_words, int stride,
                     const LaunchGeometry& geometry) override {
        if (local_) {
            return local_->run(kernel, input, input_words, stride, geometry);
        }
        return wire::launch_of(call(run_request(kernel, input, input_words, stride, geometry)));
    }

    // The requests go now: the server answers them while this grade reads the replies before
    // (on the H200, run 27: the server waited 22 ms a grade between runs, and 9 ms before the
    // reloads).
    void queue_run(const LoadedKernel& kernel, const InputSpec& input,
                   const std::vector<float>& input_words, int stride,
                   const LaunchGeometry& geometry) override {
        if (!local_) {
            ahead(run_request(kernel, input, input_words, stride, geometry));
        }
    }
    void queue_count(const std::vector<LoadedKernel*>& kernels,
                     const std::vector<TimedCase>& launches, const InputSpec& input,
                     const std::vector<float>& input_words,
                     const LaunchGeometry& geometry) override {
        if (!local_) {
            ahead(reload_request(kernels));
            ahead(with_input(launches_request("count", launches, input, geometry), input,
                             input_words));
        }
    }

    TimingSamples time(const std::vector<TimedCase>& launches, const InputSpec& input,
                       const std::vector<float>& input_words,
                       const LaunchGeometry& geometry) override {
        if (local_) {
            return local_->time(launches, input, input_words, geometry);
        }
        return wire::samples_of(call(
            with_input(launches_request("time", launches, input, geometry), input, input_words)));
    }

    void reload(const std::vector<LoadedKernel*>& kernels) override {
        if (local_) {
            local_->reload(kernels);
            return;
        }
        call(reload_request(kernels));
    }

    HardwareCounts count(const std::vector<TimedCase>& launches, const InputSpec& input,
                         const std::vector<float>& input_words,
                         const LaunchGeometry& geometry) override {
        if (local_) {
            return local_->count(launches, input, input_words, geometry);
        }
        return wire::counts_of(call(with_input(launches_request("count", launches, input, geometry),
                                               input, input_words))
                                   .head);
    }

private:
    // The server's answer, or std::runtime_error (the harness's fault: the grade is ungradable)
    // where it failed or went away in the middle of the grade.
    Frame call(const Frame& request) const {
        const std::string op = request.head.at("op").get<std::string>();
        if (fd_ < 0) {
            throw std::runtime_error("the device server is not connected for '" + op + "'");
        }
        if (!queued_.empty() && queued_.front().head == request.head) {
            // Asked for ahead (ahead()): sent then, or held until now.
            Ahead front = std::move(queued_.front());
            queued_.pop_front();
            if (front.held) {
                send_or_throw(*front.held, op);
            }
            Frame reply = reply_to(op);
            send_held();
            return reply;
        }
        (void)drop_queued(std::nullopt);  // asked for ahead, and not asked for now
        send_or_throw(request, op);
        return reply_to(op);
    }

    void send_or_throw(const Frame& request, const std::string& op) const {
        try {
            wire::send(fd_, request);
        } catch (const wire::WireError& error) {
            throw std::runtime_error(std::string(error.what()) + " during '" + op + "'");
        }
    }

    // The server's next reply, to a request `op` sent before; std::runtime_error as call().
    Frame reply_to(const std::string& op) const {
        std::optional<Frame> reply;
        try {
            reply = wire::receive(fd_);
        } catch (const wire::WireError& error) {
            throw std::runtime_error(std::string(error.what()) + " during '" + op + "'");
        }
        if (!reply) {
            throw std::runtime_error("this GPU's device server stopped during '" + op + "'");
        }
        if (reply->head.contains("error")) {
            throw std::runtime_error("this GPU's device server failed during '" + op +
                                     "': " + reply->head.at("error").get<std::string>());
        }
        return std::move(*reply);
    }

    void disconnect() {
        if (fd_ >= 0) {
            ::close(fd_);
            fd_ = -1;
        }
        inputs_sent_.clear();
        queued_.clear();
    }

    // Sends `request` now, for the call with the same head to read its reply (call()), unless
    // it must wait (held: sent by send_held() or by that call). A request with blobs (an input's
    // words) waits while the server has a reply to send: both sides writing a large message at
    // once, neither reading, would wait on each other for ever. What comes after a held request
    // waits too, to keep the order. A request that cannot be sent is left for that call, which
    // says why.
    void ahead(Frame request) {
        if (fd_ < 0) {
            return;
        }
        // Held requests are the queue's last (send_held() sends them from its front).
        const bool held_before = !queued_.empty() && queued_.back().held;
        if (held_before || (!request.blobs.empty() && !queued_.empty())) {
            json head = request.head;
            queued_.push_back({std::move(head), std::move(request)});
            return;
        }
        try {
            wire::send(fd_, request);
        } catch (const wire::WireError&) {
            unsent(request);
            return;
        }
        queued_.push_back({request.head, std::nullopt});
    }

    // Drops what was asked for ahead: the held requests unsent, the replies of those sent read
    // and dropped (std::runtime_error as call()). With `within`, false where a reply did not
    // come in that time.
    bool drop_queued(std::optional<std::chrono::milliseconds> within) const {
        const auto deadline = std::chrono::steady_clock::now() + within.value_or(0ms);
        while (!queued_.empty()) {
            const Ahead dropped = std::move(queued_.front());
            queued_.pop_front();
            if (dropped.held) {
                unsent(*dropped.held);
                continue;
            }
            if (within) {
                const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now());
                pollfd readable{fd_, POLLIN, 0};
                if (::poll(&readable, 1, static_cast<int>(std::max<long long>(0, left.count()))) <=
                    0) {
                    return false;
                }
            }
            (void)reply_to(dropped.head.at("op").get<std::string>());
        }
        return true;
    }

    // Whether what was asked for ahead was answered within `wait`, so that the connection can
    // be used again.
    bool settled_within(std::chrono::milliseconds wait) const {
        try {
            return drop_queued(wait);
        } catch (const std::runtime_error&) {
            return false;  // the server stopped (after a fault): nothing more to say to it
        }
    }

    // A request that never reached the server: the input's words it carried are not there.
    void unsent(const Frame& request) const {
        if (!request.blobs.empty() && request.head.contains("input")) {
            inputs_sent_.erase(request.head.at("input").get<std::string>());
        }
    }

    // After a reply is read: the held requests that may go now, in order. One with blobs goes
    // only where no reply is outstanding (every request before it answered).
    void send_held() const {
        bool outstanding = false;
        for (Ahead& queued : queued_) {
            if (!queued.held) {
                outstanding = true;
                continue;
            }
            if (outstanding && !queued.held->blobs.empty()) {
                return;
            }
            try {
                wire::send(fd_, *queued.held);
            } catch (const wire::WireError&) {
                return;  // its call sends it again, and says why
            }
            queued.held.reset();
            outstanding = true;
        }
    }

    static Frame reload_request(const std::vector<LoadedKernel*>& kernels) {
        json handles = json::array();
        for (const LoadedKernel* kernel : kernels) {
            handles.push_back(handle_of(*kernel));
        }
        return Frame{json{{"op", "reload"}, {"handles", handles}}, {}};
    }

    Frame run_request(const LoadedKernel& kernel, const InputSpec& input,
                      const std::vector<float>& input_words, int stride,
                      const LaunchGeometry& geometry) {
        return with_input(Frame{json{{"op", "run"},
                                     {"handle", handle_of(kernel)},
                                     {"input", input.id},
                                     {"stride", stride},
                                     {"geometry", wire::geometry_json(geometry)}},
                                {}},
                          input, input_words);
    }

    // The input's words go to the server once a session (Part 2's are 64 MB); later requests
    // name the input only.
    Frame with_input(Frame request, const InputSpec& input, const std::vector<float>& words) {
        if (inputs_sent_.insert(input.id).second) {
            request.blobs.push_back(wire::blob_of(words));
        }
        return request;
    }

    std::filesystem::path socket_;
    std::uint64_t seed_;
    std::function<std::unique_ptr<Device>()> make_local_;
    std::chrono::milliseconds reconnect_;
    std::unique_ptr<Device> local_;
    std::optional<CompiledKernel> poison_;
    int fd_ = -1;
    mutable std::set<std::string> inputs_sent_;  // this session's inputs the server has
    // Requests asked for ahead (ahead()), not yet asked for: sent, or held until they may go.
    struct Ahead {
        json head;
        std::optional<Frame> held;
    };
    mutable std::deque<Ahead> queued_;
    bool times_ = true;
    bool counts_as_it_runs_ = false;
};

}  // namespace

std::unique_ptr<Device> open_remote_device(std::filesystem::path socket, std::uint64_t seed,
                                           std::function<std::unique_ptr<Device>()> local,
                                           std::chrono::milliseconds reconnect) {
    return std::make_unique<RemoteDevice>(std::move(socket), seed, std::move(local), reconnect);
}

}  // namespace grader
