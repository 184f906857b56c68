#include "device/remote_device.hpp"

#include <algorithm>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "compile/compile.hpp"
#include "device/wire.hpp"
#include "exercise/exercise.hpp"
#include "model/measurements.hpp"

namespace grader {
namespace {

using namespace std::chrono_literals;
namespace rq = requests;

class RemoteKernel final : public LoadedKernel {
public:
    rq::Handle handle = 0;
};

// How long a grade that stops waits, at its release, for the replies to what it had sent ahead:
// well inside the shortest limit of the stage it stopped in. The server answers them at once
// after a launch that did not complete; only a kernel still running takes longer.
constexpr std::chrono::milliseconds kSentAheadWait{500};

rq::Handle handle_of(const LoadedKernel& kernel) {
    return static_cast<const RemoteKernel&>(kernel).handle;
}

rq::Launch wire_launch(const LaunchCase& launch) {
    return rq::Launch{handle_of(*launch.kernel), launch.stride, launch.outputs_read,
                      launch.reusable};
}

rq::Run run_args(const LaunchCase& launch, const InputSpec& input, const LaunchGeometry& geometry) {
    return rq::Run{wire_launch(launch), input.id, geometry};
}

rq::Launches launches_args(const std::vector<LaunchCase>& launches, const InputSpec& input,
                           const LaunchGeometry& geometry) {
    rq::Launches args;
    for (const LaunchCase& launch : launches) {
        args.launches.push_back(wire_launch(launch));
    }
    args.input = input.id;
    args.geometry = geometry;
    return args;
}

rq::Reload reload_args(const std::vector<LoadedKernel*>& kernels) {
    rq::Reload args;
    for (const LoadedKernel* kernel : kernels) {
        args.handles.push_back(handle_of(*kernel));
    }
    return args;
}

class RemoteDevice final : public Device {
public:
    RemoteDevice(std::filesystem::path socket, std::uint64_t seed,
                 std::chrono::milliseconds reconnect)
        : socket_(std::move(socket)), seed_(seed), reconnect_(reconnect) {}
    ~RemoteDevice() override { server_.close(); }
    RemoteDevice(const RemoteDevice&) = delete;
    RemoteDevice& operator=(const RemoteDevice&) = delete;

private:
    DeviceCapabilities do_capabilities() const override { return capabilities_; }
    void do_set_shared_poison(const CompiledKernel& poison) override { poison_ = poison; }

    // A server that stops after a fault drops the grades waiting in its queue, and the batch
    // starts it again on the same socket within a second or two: until the session has begun
    // (nothing of this grade has run yet), connecting is tried again for a while.
    std::string do_acquire() override {
        const rq::Begin begin{seed_, poison_};
        const auto deadline = std::chrono::steady_clock::now() + reconnect_;
        for (;;) {
            if (const int fd = wire::connect_to(socket_); fd >= 0) {
                server_ = rq::Connection(fd);
                try {
                    const rq::Begun begun = server_.call(rq::kBegin, begin);
                    capabilities_ = begun.capabilities;
                    capabilities_.locks = true;
                    return begun.bus_id;
                } catch (const std::runtime_error&) {
                    server_.close();  // dropped from the queue of a server that stopped
                }
            }
            if (std::chrono::steady_clock::now() >= deadline) {
                break;
            }
            std::this_thread::sleep_for(50ms);
        }
        throw DeviceUnavailable("This GPU's device server did not answer within " +
                                std::to_string(reconnect_.count()) +
                                " ms, so this grade made a context of its own.");
    }

    void do_release() override {
        if (server_.open() && replies_dropped_within(kSentAheadWait)) {
            try {
                server_.call(rq::kRelease, rq::Nothing{});
            } catch (const std::runtime_error&) {
                // A server that stopped after a fault has released everything already.
            }
        }
        // Else the grade stopped with a run still going that nobody reads: the connection goes,
        // and the server with it, as for a kernel that hangs.
        server_.close();
        ahead_.clear();
    }

    void do_describe(Environment& environment) override {
        environment = server_.call(rq::kDescribe, rq::Describe{environment});
    }

    LoadResult do_load(const KernelSpec& spec, const CompiledKernel& compiled) override {
        const rq::Loaded loaded = server_.call(rq::kLoad, rq::Load{spec.id, compiled});
        LoadResult result;
        result.problem = loaded.problem;
        result.unsupported = loaded.unsupported;
        if (loaded.handle) {
            auto kernel = std::make_unique<RemoteKernel>();
            kernel->id = spec.id;
            kernel->handle = *loaded.handle;
            kernel->param_sizes = loaded.param_sizes;
            kernel->param_source = loaded.param_source;
            kernel->static_shared_bytes = loaded.static_shared_bytes;
            kernel->registers = loaded.registers;
            result.kernel = std::move(kernel);
        }
        return result;
    }

    LaunchGeometry do_geometry(const LoadedKernel& sizing_kernel) override {
        return server_.call(rq::kGeometry, rq::Sizing{handle_of(sizing_kernel)});
    }

    // Sent while nothing is asked for ahead (Device: inputs come before the plan), so that the
    // server is reading while the words go.
    void do_put_input(const InputSpec& input, InputWords words) override {
        if (!ahead_.empty()) {
            throw std::runtime_error("input '" + input.id +
                                     "' was given after the grade's plan began");
        }
        server_.call(rq::kInput, rq::Input{input.id, std::move(words)});
    }

    // Every request of the plan goes now: the server answers each while the grade reads the
    // replies before it, and never waits for the grade between them.
    void do_follow(const LaunchPlan& plan) override {
        for (const PlannedRun& run : plan.runs) {
            send_ahead(rq::kRun, run_args(run.launch, *run.input, plan.geometry));
        }
        if (!plan.timed.empty()) {
            send_ahead(rq::kReload, reload_args(plan.reloaded));
            send_ahead(rq::kTime, launches_args(plan.timed, *plan.timing_input, plan.geometry));
        }
        if (!plan.counted.empty()) {
            send_ahead(rq::kReload, reload_args(plan.reloaded));
            send_ahead(rq::kCount, launches_args(plan.counted, *plan.timing_input, plan.geometry));
        }
    }

    DeviceLaunch do_run(const LaunchCase& launch, const InputSpec& input,
                        const LaunchGeometry& geometry) override {
        return ask(rq::kRun, run_args(launch, input, geometry));
    }
    void do_reload(const std::vector<LoadedKernel*>& kernels) override {
        ask(rq::kReload, reload_args(kernels));
    }
    TimingSamples do_time(const std::vector<LaunchCase>& launches, const InputSpec& input,
                          const LaunchGeometry& geometry) override {
        return ask(rq::kTime, launches_args(launches, input, geometry));
    }
    HardwareCounts do_count(const std::vector<LaunchCase>& launches, const InputSpec& input,
                            const LaunchGeometry& geometry) override {
        return ask(rq::kCount, launches_args(launches, input, geometry));
    }

    template <typename A, typename R>
    void send_ahead(const rq::Request<A, R>& request, const A& args) {
        server_.send(request, args);
        ahead_.push(request.name, args);
    }

    // The reply to this request: sent ahead by follow(), or sent now.
    template <typename A, typename R>
    R ask(const rq::Request<A, R>& request, const A& args) {
        if (!ahead_.take(request.name, args)) {
            server_.send(request, args);
        }
        return server_.receive(request);
    }

    // Whether the replies to what was sent ahead came within `wait`, read and dropped, so that
    // the connection can be used again.
    bool replies_dropped_within(std::chrono::milliseconds wait) {
        const auto deadline = std::chrono::steady_clock::now() + wait;
        try {
            while (!ahead_.empty()) {
                const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now());
                if (!server_.drop_reply(ahead_.front().op, std::max(left, 0ms))) {
                    return false;
                }
                ahead_.pop();
            }
        } catch (const std::runtime_error&) {
            return false;  // the server stopped (after a fault): nothing more to say to it
        }
        return true;
    }

    std::filesystem::path socket_;
    std::uint64_t seed_;
    std::chrono::milliseconds reconnect_;
    std::optional<CompiledKernel> poison_;
    rq::Connection server_;
    SentAhead ahead_;
    DeviceCapabilities capabilities_{true, false, false};
};

}  // namespace

bool SentAhead::take(std::string_view op, const Args& args) {
    if (steps_.empty()) {
        return false;
    }
    const Step& front = steps_.front();
    if (front.op != op || !(front.args == args)) {
        throw std::runtime_error("the grade asked for '" + std::string(op) +
                                 "' where its plan had sent '" + std::string(front.op) + "' ahead");
    }
    steps_.pop_front();
    return true;
}

std::unique_ptr<Device> open_remote_device(std::filesystem::path socket, std::uint64_t seed,
                                           std::chrono::milliseconds reconnect) {
    return std::make_unique<RemoteDevice>(std::move(socket), seed, reconnect);
}

}  // namespace grader
