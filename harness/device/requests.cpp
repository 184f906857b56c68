#include "device/requests.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "exercise/exercise.hpp"
#include "model/finding.hpp"
#include "model/json.hpp"

namespace grader::requests {
namespace {

using nlohmann::json;
using wire::Frame;

json dim_json(const Dim3Spec& d) {
    return json::array({d.x, d.y, d.z});
}

Dim3Spec dim_of(const json& d) {
    return Dim3Spec{d.at(0).get<std::uint32_t>(), d.at(1).get<std::uint32_t>(),
                    d.at(2).get<std::uint32_t>()};
}

json geometry_json(const LaunchGeometry& geometry) {
    return {{"grid", dim_json(geometry.grid)}, {"block", dim_json(geometry.block)}};
}

LaunchGeometry geometry_of(const json& j) {
    return LaunchGeometry{dim_of(j.at("grid")), dim_of(j.at("block"))};
}

json end_json(DeviceLaunch::End end) {
    return static_cast<int>(end);
}

DeviceLaunch::End end_of(const json& j) {
    const int end = j.get<int>();
    if (end < 0 || end > static_cast<int>(DeviceLaunch::End::unsupported)) {
        throw wire::WireError("an unknown launch ending " + std::to_string(end));
    }
    return static_cast<DeviceLaunch::End>(end);
}

json launch_json(const Launch& launch) {
    return {{"handle", launch.handle},
            {"stride", launch.stride},
            {"outputs_read", launch.outputs_read},
            {"reusable", launch.reusable}};
}

Launch launch_of(const json& j) {
    Launch launch;
    launch.handle = j.at("handle").get<Handle>();
    launch.stride = j.at("stride").get<int>();
    launch.outputs_read = j.at("outputs_read").get<bool>();
    launch.reusable = j.at("reusable").get<bool>();
    return launch;
}

const std::string& blob_at(const Frame& frame, std::size_t index) {
    if (index >= frame.blobs.size()) {
        throw wire::WireError("a frame without its blob " + std::to_string(index));
    }
    return frame.blobs[index];
}

}  // namespace

bool operator==(const Launch& a, const Launch& b) {
    return a.handle == b.handle && a.stride == b.stride && a.outputs_read == b.outputs_read &&
           a.reusable == b.reusable;
}

bool operator==(const Run& a, const Run& b) {
    return a.launch == b.launch && a.input == b.input && a.geometry == b.geometry;
}

bool operator==(const Launches& a, const Launches& b) {
    return a.launches == b.launches && a.input == b.input && a.geometry == b.geometry;
}

bool operator==(const Reload& a, const Reload& b) {
    return a.handles == b.handles;
}

void write(const Nothing&, Frame&) {}
void read(const Frame&, Nothing&) {}

void write(const Begin& value, Frame& frame) {
    frame.head["seed"] = value.seed;
    if (value.poison) {
        frame.head["poison"] = value.poison->outcome;
        frame.blobs.push_back(value.poison->cubin);
    }
}
void read(const Frame& frame, Begin& value) {
    value.seed = frame.head.at("seed").get<std::uint64_t>();
    if (frame.head.contains("poison")) {
        CompiledKernel poison;
        poison.outcome = frame.head.at("poison").get<CompileOutcome>();
        poison.cubin = blob_at(frame, 0);
        value.poison = std::move(poison);
    }
}

void write(const Begun& value, Frame& frame) {
    frame.head["bus_id"] = value.bus_id;
    frame.head["locks"] = value.capabilities.locks;
    frame.head["times"] = value.capabilities.times;
    frame.head["counts_as_it_runs"] = value.capabilities.counts_as_it_runs;
}
void read(const Frame& frame, Begun& value) {
    value.bus_id = frame.head.at("bus_id").get<std::string>();
    value.capabilities.locks = frame.head.at("locks").get<bool>();
    value.capabilities.times = frame.head.at("times").get<bool>();
    value.capabilities.counts_as_it_runs = frame.head.at("counts_as_it_runs").get<bool>();
}

void write(const Describe& value, Frame& frame) {
    frame.head["environment"] = value.environment;
}
void read(const Frame& frame, Describe& value) {
    value.environment = frame.head.at("environment").get<Environment>();
}

void write(const Environment& value, Frame& frame) {
    frame.head["environment"] = value;
}
void read(const Frame& frame, Environment& value) {
    value = frame.head.at("environment").get<Environment>();
}

void write(const Load& value, Frame& frame) {
    frame.head["kernel"] = value.kernel;
    frame.head["outcome"] = value.compiled.outcome;
    frame.blobs.push_back(value.compiled.cubin);
}
void read(const Frame& frame, Load& value) {
    value.kernel = frame.head.at("kernel").get<std::string>();
    value.compiled.outcome = frame.head.at("outcome").get<CompileOutcome>();
    value.compiled.cubin = blob_at(frame, 0);
}

void write(const Loaded& value, Frame& frame) {
    frame.head["problem"] = value.problem;
    frame.head["unsupported"] = value.unsupported;
    if (value.handle) {
        frame.head["handle"] = *value.handle;
        frame.head["param_sizes"] = value.param_sizes;
        frame.head["param_source"] = value.param_source;
        frame.head["static_shared_bytes"] = value.static_shared_bytes;
        frame.head["registers"] = value.registers;
    }
}
void read(const Frame& frame, Loaded& value) {
    const json& head = frame.head;
    value.problem = head.at("problem").get<std::string>();
    value.unsupported = head.at("unsupported").get<bool>();
    if (head.contains("handle")) {
        value.handle = head.at("handle").get<Handle>();
        value.param_sizes = head.at("param_sizes").get<std::vector<std::size_t>>();
        value.param_source = head.at("param_source").get<std::string>();
        value.static_shared_bytes = head.at("static_shared_bytes").get<int>();
        value.registers = head.at("registers").get<int>();
    }
}

void write(const Sizing& value, Frame& frame) {
    frame.head["handle"] = value.handle;
}
void read(const Frame& frame, Sizing& value) {
    value.handle = frame.head.at("handle").get<Handle>();
}

void write(const LaunchGeometry& value, Frame& frame) {
    frame.head["geometry"] = geometry_json(value);
}
void read(const Frame& frame, LaunchGeometry& value) {
    value = geometry_of(frame.head.at("geometry"));
}

void write(const Input& value, Frame& frame) {
    frame.head["input"] = value.input;
    frame.blobs.push_back(value.words ? wire::blob_of(*value.words) : std::string());
}
void read(const Frame& frame, Input& value) {
    value.input = frame.head.at("input").get<std::string>();
    value.words = std::make_shared<const std::vector<float>>(wire::floats_of(blob_at(frame, 0)));
}

void write(const Run& value, Frame& frame) {
    frame.head["launch"] = launch_json(value.launch);
    frame.head["input"] = value.input;
    frame.head["geometry"] = geometry_json(value.geometry);
}
void read(const Frame& frame, Run& value) {
    value.launch = launch_of(frame.head.at("launch"));
    value.input = frame.head.at("input").get<std::string>();
    value.geometry = geometry_of(frame.head.at("geometry"));
}

void write(const DeviceLaunch& value, Frame& frame) {
    frame.head["end"] = end_json(value.end);
    frame.head["message"] = value.message;
    frame.head["findings"] = value.findings;
    if (value.counts) {
        frame.head["counts"] = *value.counts;
    }
    if (value.kernel_ms) {
        frame.head["kernel_ms"] = *value.kernel_ms;
    }
    frame.head["block_instructions"] = value.block_instructions;
    frame.head["blocks_run"] = value.blocks_run;
    frame.blobs.push_back(wire::blob_of(value.outputs));
}
void read(const Frame& frame, DeviceLaunch& value) {
    const json& head = frame.head;
    value.end = end_of(head.at("end"));
    value.message = head.at("message").get<std::string>();
    value.findings = head.at("findings").get<std::vector<Finding>>();
    if (head.contains("counts")) {
        value.counts = head.at("counts").get<SharedAccessCounts>();
    }
    if (head.contains("kernel_ms")) {
        value.kernel_ms = head.at("kernel_ms").get<double>();
    }
    value.block_instructions = head.at("block_instructions").get<std::uint64_t>();
    value.blocks_run = head.at("blocks_run").get<std::uint64_t>();
    if (frame.blobs.size() != 1) {
        throw wire::WireError("a launch's answer without its output");
    }
    value.outputs = wire::floats_of(frame.blobs.front());
}

void write(const Reload& value, Frame& frame) {
    frame.head["handles"] = value.handles;
}
void read(const Frame& frame, Reload& value) {
    value.handles = frame.head.at("handles").get<std::vector<Handle>>();
}

void write(const Launches& value, Frame& frame) {
    json launches = json::array();
    for (const Launch& launch : value.launches) {
        launches.push_back(launch_json(launch));
    }
    frame.head["launches"] = std::move(launches);
    frame.head["input"] = value.input;
    frame.head["geometry"] = geometry_json(value.geometry);
}
void read(const Frame& frame, Launches& value) {
    value.launches.clear();
    for (const json& launch : frame.head.at("launches")) {
        value.launches.push_back(launch_of(launch));
    }
    value.input = frame.head.at("input").get<std::string>();
    value.geometry = geometry_of(frame.head.at("geometry"));
}

void write(const TimingSamples& value, Frame& frame) {
    frame.head["per_round_ms"] = value.per_round_ms;
    frame.head["launches_per_sample"] = value.launches_per_sample;
    frame.head["rounds"] = value.rounds;
    frame.head["seconds"] = value.seconds;
    frame.head["modeled"] = value.modeled;
    frame.head["notes"] = value.notes;
    frame.head["end"] = end_json(value.end);
    frame.head["message"] = value.message;
    for (const std::vector<float>& outputs : value.final_outputs) {
        frame.blobs.push_back(wire::blob_of(outputs));
    }
}
void read(const Frame& frame, TimingSamples& value) {
    const json& j = frame.head;
    value.per_round_ms = j.at("per_round_ms").get<std::vector<std::vector<double>>>();
    value.launches_per_sample = j.at("launches_per_sample").get<std::vector<int>>();
    value.rounds = j.at("rounds").get<int>();
    value.seconds = j.at("seconds").get<double>();
    value.modeled = j.at("modeled").get<bool>();
    value.notes = j.at("notes").get<std::vector<std::string>>();
    value.end = end_of(j.at("end"));
    value.message = j.at("message").get<std::string>();
    value.final_outputs.clear();
    for (const std::string& blob : frame.blobs) {
        value.final_outputs.push_back(wire::floats_of(blob));
    }
}

void write(const HardwareCounts& value, Frame& frame) {
    frame.head["counted"] = value.counted;
    frame.head["reason"] = value.reason;
    frame.head["description"] = value.description;
    frame.head["counts"] = value.counts;
    frame.head["end"] = end_json(value.end);
    frame.head["message"] = value.message;
}
void read(const Frame& frame, HardwareCounts& value) {
    const json& j = frame.head;
    value.counted = j.at("counted").get<bool>();
    value.reason = j.at("reason").get<std::string>();
    value.description = j.at("description").get<std::string>();
    value.counts = j.at("counts").get<std::vector<SharedAccessCounts>>();
    value.end = end_of(j.at("end"));
    value.message = j.at("message").get<std::string>();
}

std::string op_of(const Frame& frame) {
    const auto op = frame.head.find("op");
    return op != frame.head.end() && op->is_string() ? op->get<std::string>() : std::string();
}

Frame RequestTable::answer(const Frame& request) const {
    const std::string op = op_of(request);
    const auto handler = handlers_.find(op);
    if (handler == handlers_.end()) {
        throw std::runtime_error("an unknown request '" + op + "'");
    }
    return handler->second(request);
}

Frame error_reply(const std::string& message) {
    return Frame{json{{"error", message}}, {}};
}

Connection::Connection(Connection&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

Connection& Connection::operator=(Connection&& other) noexcept {
    if (this != &other) {
        close();
        fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
}

void Connection::close() {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

void Connection::send_frame(const Frame& frame, std::string_view name) {
    if (fd_ < 0) {
        throw std::runtime_error("the device server is not connected for '" + std::string(name) +
                                 "'");
    }
    try {
        wire::send(fd_, frame);
    } catch (const wire::WireError& error) {
        throw std::runtime_error(std::string(error.what()) + " during '" + std::string(name) + "'");
    }
}

Frame Connection::read_frame(std::string_view name) {
    const std::string op(name);
    if (fd_ < 0) {
        throw std::runtime_error("the device server is not connected for '" + op + "'");
    }
    std::optional<Frame> reply;
    try {
        reply = wire::receive(fd_);
    } catch (const wire::WireError& error) {
        throw std::runtime_error(std::string(error.what()) + " during '" + op + "'");
    }
    if (!reply) {
        throw std::runtime_error("this GPU's device server stopped during '" + op + "'");
    }
    return std::move(*reply);
}

Frame Connection::receive_frame(std::string_view name) {
    Frame reply = read_frame(name);
    if (const auto error = reply.head.find("error"); error != reply.head.end()) {
        throw std::runtime_error("this GPU's device server failed during '" + std::string(name) +
                                 "': " + (error->is_string() ? error->get<std::string>() : ""));
    }
    return reply;
}

bool Connection::drop_reply(std::string_view name, std::chrono::milliseconds wait) {
    if (fd_ < 0) {
        return false;
    }
    pollfd readable{fd_, POLLIN, 0};
    if (::poll(&readable, 1, static_cast<int>(std::max<long long>(0, wait.count()))) <= 0) {
        return false;
    }
    (void)read_frame(name);
    return true;
}

}  // namespace grader::requests
