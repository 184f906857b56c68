// The device server's sessions (device_server.hpp): one grade at a time on one device that
// lives as long as the server, with the exercise's reusable launches timed once.

#include "device/device_server.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <exception>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common/kernel_ids.hpp"
#include "compile/compile.hpp"
#include "device/wire.hpp"
#include "model/json.hpp"
#include "model/measurements.hpp"

namespace grader {
namespace {

using nlohmann::json;
using wire::Frame;
using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

sockaddr_un address_of(const std::filesystem::path& path) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string text = path.string();
    if (text.size() >= sizeof address.sun_path) {
        throw std::runtime_error("the device server's socket path is too long: " + text);
    }
    std::memcpy(address.sun_path, text.c_str(), text.size() + 1);
    return address;
}

std::string utc_now() {
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    ::gmtime_r(&now, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%H:%M:%S UTC", &utc);
    return text;
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

// An input's words as a session received them, with their hash (for what is reused by input).
struct SessionInput {
    std::vector<float> words;
    std::string hash;
};

// The samples of an exercise's reusable launch, from the first grade that timed it.
struct ReusedRow {
    std::vector<double> per_round_ms;
    int launches_per_sample = 1;
    int rounds = 0;
    std::string measured_at;
};

class Session {
public:
    Session(int fd, const Exercise& exercise, std::map<std::string, ReusedRow>& reused,
            std::map<std::string, DeviceLaunch>& reused_runs)
        : fd_(fd), exercise_(exercise), reused_(reused), reused_runs_(reused_runs) {}

    // Empty where the session ended as sessions do; else why the server must stop.
    std::string serve(const SessionDevice& session_device, SessionAccount& account) {
        std::optional<Frame> begin = wire::receive(fd_);
        if (!begin) {
            return {};
        }
        if (begin->head.value("op", "") == "stop") {
            wire::send(fd_, Frame{json{{"stopping", true}}, {}});
            return "asked to stop";
        }
        const auto setting_up = Clock::now();
        device_ = session_device(begin->head.at("seed").get<std::uint64_t>());
        if (begin->head.contains("poison")) {
            CompiledKernel poison;
            poison.outcome = begin->head.at("poison").get<CompileOutcome>();
            poison.cubin = begin->blobs.at(0);
            device_->set_shared_poison(poison);
        }
        const std::string bus_id = device_->acquire();
        const auto held_from = Clock::now();
        // Every way out of the session's requests says how long it held the device.
        const auto held = [&account, held_from](std::string stop) {
            account.held_seconds = seconds_between(held_from, Clock::now());
            return stop;
        };
        wire::send(fd_, Frame{json{{"bus_id", bus_id},
                                   {"times", device_->times()},
                                   {"counts_as_it_runs", device_->counts_as_it_runs()}},
                              {}});
        account.setup_seconds = seconds_between(setting_up, Clock::now());
        ClientWatch watch(fd_);
        auto waiting_from = Clock::now();
        while (std::optional<Frame> request = wire::receive(fd_)) {
            const auto answering_from = Clock::now();
            const std::string op = request->head.at("op").get<std::string>();
            const double waited = seconds_between(waiting_from, answering_from);
            account.waiting_seconds += waited;
            account.waiting_before[op] += waited;
            if (op == "release") {
                release();
                wire::send(fd_, Frame{json::object(), {}});
                return held({});
            }
            watch.busy(true);
            bool lost = false;
            Frame reply;
            try {
                reply = answer(op, *request, lost);
            } catch (const std::exception& error) {
                // The harness's own failure outside any kernel: the grade is ungradable, and the
                // device may be in any state, so the server goes with it.
                watch.busy(false);
                wire::send(fd_, Frame{json{{"error", error.what()}}, {}});
                return held(std::string("the device failed: ") + error.what());
            }
            watch.busy(false);
            wire::send(fd_, reply);
            waiting_from = Clock::now();
            account.request_seconds[op] += seconds_between(answering_from, waiting_from);
            if (lost) {
                return held("a kernel faulted, which leaves the device's context unusable");
            }
        }
        return held({});  // the client went away between requests; the device is released below
    }

    ~Session() { release(); }
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

private:
    void release() {
        kernels_.clear();
        images_.clear();
        if (device_ && device_->held()) {
            device_->release();
        }
        device_.reset();
    }

    const LoadedKernel& kernel_at(const json& handle) const {
        const auto index = handle.get<std::size_t>();
        if (index >= kernels_.size() || !kernels_[index]) {
            throw std::runtime_error("no kernel is loaded as handle " + std::to_string(index));
        }
        return *kernels_[index];
    }

    const InputSpec& input_of(const json& id) const {
        const std::string wanted = id.get<std::string>();
        for (const InputSpec& input : exercise_.inputs) {
            if (input.id == wanted) {
                return input;
            }
        }
        throw std::runtime_error("the exercise has no input '" + wanted + "'");
    }

    // The input's words: sent with the session's first request that uses them, kept for the
    // session's later ones.
    const SessionInput& words_of(const InputSpec& input, const Frame& request) {
        if (!request.blobs.empty()) {
            SessionInput& kept = inputs_[input.id];
            kept.words = wire::floats_of(request.blobs.front());
            kept.hash = std::to_string(std::hash<std::string>{}(request.blobs.front()));
            return kept;
        }
        const auto found = inputs_.find(input.id);
        if (found == inputs_.end()) {
            throw std::runtime_error("the grade named input '" + input.id +
                                     "' without sending its words");
        }
        return found->second;
    }

    std::vector<TimedCase> cases_of(const json& cases) const {
        std::vector<TimedCase> timed;
        for (const json& c : cases) {
            const LoadedKernel& kernel = kernel_at(c.at("handle"));
            // Only the exercise's own kernels may be reused; the student's is timed every time.
            const bool reusable = c.at("reusable").get<bool>() && kernel.id != kStudentKernel;
            timed.push_back({&kernel, c.at("stride").get<int>(), reusable});
        }
        return timed;
    }

    Frame answer(const std::string& op, const Frame& request, bool& lost) {
        const json& head = request.head;
        if (op == "load") {
            CompiledKernel compiled;
            compiled.outcome = head.at("outcome").get<CompileOutcome>();
            compiled.cubin = request.blobs.at(0);
            const KernelSpec& spec = exercise_.kernel(head.at("kernel").get<std::string>());
            LoadResult result = device_->load(spec, compiled);
            json reply = {{"problem", result.problem}, {"unsupported", result.unsupported}};
            if (result.kernel) {
                const LoadedKernel& kernel = *result.kernel;
                reply["handle"] = kernels_.size();
                reply["param_sizes"] = kernel.param_sizes;
                reply["param_source"] = kernel.param_source;
                reply["static_shared_bytes"] = kernel.static_shared_bytes;
                reply["registers"] = kernel.registers;
                images_[result.kernel.get()] =
                    std::to_string(std::hash<std::string>{}(compiled.cubin));
                kernels_.push_back(std::move(result.kernel));
            }
            return Frame{reply, {}};
        }
        if (op == "geometry") {
            return Frame{wire::geometry_json(device_->geometry(kernel_at(head.at("handle")))), {}};
        }
        if (op == "describe") {
            Environment environment = head.at("environment").get<Environment>();
            device_->describe(environment);
            return Frame{json{{"environment", environment}}, {}};
        }
        if (op == "run") {
            const LoadedKernel& kernel = kernel_at(head.at("handle"));
            const InputSpec& input = input_of(head.at("input"));
            const SessionInput& words = words_of(input, request);
            const int stride = head.at("stride").get<int>();
            const LaunchGeometry geometry = wire::geometry_of(head.at("geometry"));
            // What an exercise kernel computes from the same words (an input that is no seed's,
            // such as all ones) is the same for every grade: run once per server.
            std::string key;
            if (kernel.id != kStudentKernel && !input.poison_shared) {
                key = reuse_key({&kernel, stride, true}, input, geometry) + "|" + words.hash;
                if (const auto found = reused_runs_.find(key); found != reused_runs_.end()) {
                    return wire::launch_frame(found->second);
                }
            }
            const DeviceLaunch launch = device_->run(kernel, input, words.words, stride, geometry);
            lost = launch.end == DeviceLaunch::End::fault;
            if (!key.empty() && launch.end == DeviceLaunch::End::completed) {
                reused_runs_.emplace(key, launch);
            }
            return wire::launch_frame(launch);
        }
        if (op == "time") {
            const InputSpec& input = input_of(head.at("input"));
            const TimingSamples samples =
                time(cases_of(head.at("cases")), input, words_of(input, request).words,
                     wire::geometry_of(head.at("geometry")));
            lost = samples.end == DeviceLaunch::End::fault;
            return wire::samples_frame(samples);
        }
        if (op == "count") {
            const InputSpec& input = input_of(head.at("input"));
            const HardwareCounts counts =
                device_->count(cases_of(head.at("cases")), input, words_of(input, request).words,
                               wire::geometry_of(head.at("geometry")));
            lost = counts.end == DeviceLaunch::End::fault;
            return Frame{wire::counts_json(counts), {}};
        }
        if (op == "reload") {
            std::vector<LoadedKernel*> kernels;
            for (const json& handle : head.at("handles")) {
                kernels.push_back(const_cast<LoadedKernel*>(&kernel_at(handle)));
            }
            device_->reload(kernels);
            return Frame{json::object(), {}};
        }
        throw std::runtime_error("an unknown request '" + op + "'");
    }

    std::string reuse_key(const TimedCase& c, const InputSpec& input,
                          const LaunchGeometry& geometry) const {
        return c.kernel->id + "|" + images_.at(c.kernel) + "|" + std::to_string(c.stride) + "|" +
               input.id + "|" + wire::geometry_json(geometry).dump();
    }

    // Times the launches; the reusable ones only where this server has not timed them before.
    TimingSamples time(const std::vector<TimedCase>& cases, const InputSpec& input,
                       const std::vector<float>& words, const LaunchGeometry& geometry) {
        std::vector<std::string> keys(cases.size());
        bool all_known = true;
        bool any_reusable = false;
        for (std::size_t i = 0; i < cases.size(); ++i) {
            if (cases[i].reusable) {
                any_reusable = true;
                keys[i] = reuse_key(cases[i], input, geometry);
                all_known = all_known && reused_.count(keys[i]) != 0;
            }
        }
        const bool reuse = any_reusable && all_known;
        std::vector<TimedCase> fresh;
        for (const TimedCase& c : cases) {
            if (!(reuse && c.reusable)) {
                fresh.push_back(c);
            }
        }
        TimingSamples measured;
        if (!fresh.empty()) {
            measured = device_->time(fresh, input, words, geometry);
            if (measured.end != DeviceLaunch::End::completed) {
                return measured;
            }
        }
        if (!any_reusable) {
            return measured;
        }
        TimingSamples samples;
        samples.rounds = measured.rounds;
        samples.seconds = measured.seconds;
        samples.modeled = measured.modeled;
        std::size_t next = 0;
        std::string measured_at;
        int rounds = 0;
        std::size_t reused = 0;
        for (std::size_t i = 0; i < cases.size(); ++i) {
            if (reuse && cases[i].reusable) {
                const ReusedRow& row = reused_.at(keys[i]);
                samples.per_round_ms.push_back(row.per_round_ms);
                samples.launches_per_sample.push_back(row.launches_per_sample);
                samples.final_outputs.emplace_back();
                measured_at = row.measured_at;
                rounds = row.rounds;
                ++reused;
                continue;
            }
            samples.per_round_ms.push_back(measured.per_round_ms.at(next));
            samples.launches_per_sample.push_back(measured.launches_per_sample.at(next));
            samples.final_outputs.push_back(next < measured.final_outputs.size()
                                                ? measured.final_outputs[next]
                                                : std::vector<float>{});
            if (cases[i].reusable) {
                reused_[keys[i]] =
                    ReusedRow{measured.per_round_ms[next], measured.launches_per_sample[next],
                              measured.rounds, utc_now()};
            }
            ++next;
        }
        if (reused > 0) {
            samples.notes.push_back(
                "The exercise's own " + std::to_string(reused) +
                " timed launches are the class's: this GPU's device server timed them once, at " +
                measured_at + " (" + std::to_string(rounds) +
                " rounds), and every grade it serves reuses them; the student's launches were "
                "timed for this grade.");
        }
        return samples;
    }

    int fd_;
    const Exercise& exercise_;
    std::map<std::string, ReusedRow>& reused_;
    std::map<std::string, DeviceLaunch>& reused_runs_;  // an exercise kernel's runs, by input
    std::unique_ptr<Device> device_;
    std::vector<std::unique_ptr<LoadedKernel>> kernels_;
    std::map<const LoadedKernel*, std::string> images_;  // a hash of each kernel's image
    std::map<std::string, SessionInput> inputs_;         // by input id
};

}  // namespace

void SessionAccount::add(const SessionAccount& other) {
    held_seconds += other.held_seconds;
    waiting_seconds += other.waiting_seconds;
    for (const auto& [op, seconds] : other.request_seconds) {
        request_seconds[op] += seconds;
    }
    for (const auto& [op, seconds] : other.waiting_before) {
        waiting_before[op] += seconds;
    }
    idle_seconds += other.idle_seconds;
    setup_seconds += other.setup_seconds;
    teardown_seconds += other.teardown_seconds;
}

int listen_on(const std::filesystem::path& path) {
    const sockaddr_un address = address_of(path);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        throw std::runtime_error(std::string("cannot make a socket: ") + std::strerror(errno));
    }
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(fd, 128) != 0) {
        const int error = errno;
        ::close(fd);
        throw std::runtime_error("cannot listen on " + path.string() + ": " + std::strerror(error));
    }
    return fd;
}

int connect_to(const std::filesystem::path& path) {
    const sockaddr_un address = address_of(path);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

std::string serve_device_sessions(int listen_fd, const Exercise& exercise,
                                  const SessionDevice& session_device, const SessionEnded& ended) {
    std::map<std::string, ReusedRow> reused;
    std::map<std::string, DeviceLaunch> reused_runs;
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
            Session session(client, exercise, reused, reused_runs);
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
