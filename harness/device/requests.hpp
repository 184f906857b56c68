#pragma once

// The device server's requests (device_server.hpp), each spelled here once: its name, what it
// carries and what it answers, and how both cross the socket. The server binds a handler to each
// name once (RequestTable::bind, as clangd's LSPBinder binds its methods); a client sends them
// through a Connection, which reads each reply as the request's reply type.
//
// A request is a frame whose head has "op": the request's name, beside what its arguments wrote;
// a reply is the frame its reply's value wrote, or a head {"error": "..."} where the server
// failed to answer. tests/test_device.cpp sends each across a socket and reads it back.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "compile/compile.hpp"
#include "device/device.hpp"
#include "device/wire.hpp"
#include "model/measurements.hpp"

namespace grader::requests {

// A kernel loaded in a session, as the server numbers them.
using Handle = std::size_t;

// What a request without arguments carries, and what one without an answer replies.
struct Nothing {};

struct Begin {
    std::uint64_t seed = 0;
    std::optional<CompiledKernel> poison;  // the shared-memory poison kernel, where compiled
};
struct Begun {
    std::string bus_id;  // what the session locked
    DeviceCapabilities capabilities;
};

struct Describe {
    Environment environment;  // the grade's, for the device to add to
};

struct Load {
    std::string kernel;  // the KernelSpec id
    CompiledKernel compiled;
};
struct Loaded {
    std::string problem;  // LoadResult's
    bool unsupported = false;
    std::optional<Handle> handle;  // where it loaded, with what the device says of it
    std::vector<std::size_t> param_sizes;
    std::string param_source;
    int static_shared_bytes = -1;
    int registers = -1;
};

struct Sizing {
    Handle handle = 0;  // the kernel geometry() sizes the grade's launch from
};

struct Input {
    std::string input;  // the InputSpec id
    InputWords words;
};

// A LaunchCase with its kernel named by handle.
struct Launch {
    Handle handle = 0;
    int stride = 0;
    bool outputs_read = true;
    bool reusable = false;
};

struct Run {
    Launch launch;
    std::string input;
    LaunchGeometry geometry;
};

struct Launches {
    std::vector<Launch> launches;
    std::string input;
    LaunchGeometry geometry;
};

struct Reload {
    std::vector<Handle> handles;
};

// Whether two requests ask for the same launches (a reply read for a request sent ahead is that
// request's: remote_device.hpp's SentAhead).
bool operator==(const Launch& a, const Launch& b);
bool operator==(const Run& a, const Run& b);
bool operator==(const Launches& a, const Launches& b);
bool operator==(const Reload& a, const Reload& b);

template <typename ArgsT, typename ReplyT>
struct Request {
    using Args = ArgsT;
    using Reply = ReplyT;
    std::string_view name;
};

// The session's first request, on a new connection: the server makes the grade's device and
// takes its lock. A "stop" in its place asks the server to stop.
inline constexpr Request<Begin, Begun> kBegin{"begin"};
inline constexpr Request<Nothing, Nothing> kStop{"stop"};
inline constexpr Request<Describe, Environment> kDescribe{"describe"};
inline constexpr Request<Load, Loaded> kLoad{"load"};
inline constexpr Request<Sizing, LaunchGeometry> kGeometry{"geometry"};
inline constexpr Request<Input, Nothing> kInput{"input"};
inline constexpr Request<Run, DeviceLaunch> kRun{"run"};
inline constexpr Request<Reload, Nothing> kReload{"reload"};
inline constexpr Request<Launches, TimingSamples> kTime{"time"};
inline constexpr Request<Launches, HardwareCounts> kCount{"count"};
// The session's last request: the server releases the device and its lock.
inline constexpr Request<Nothing, Nothing> kRelease{"release"};

// How each value crosses: fields of the frame's head, float buffers and images as its blobs.
// read() throws wire::WireError or nlohmann's exceptions for a frame that does not hold one.
void write(const Nothing& value, wire::Frame& frame);
void read(const wire::Frame& frame, Nothing& value);
void write(const Begin& value, wire::Frame& frame);
void read(const wire::Frame& frame, Begin& value);
void write(const Begun& value, wire::Frame& frame);
void read(const wire::Frame& frame, Begun& value);
void write(const Describe& value, wire::Frame& frame);
void read(const wire::Frame& frame, Describe& value);
void write(const Environment& value, wire::Frame& frame);
void read(const wire::Frame& frame, Environment& value);
void write(const Load& value, wire::Frame& frame);
void read(const wire::Frame& frame, Load& value);
void write(const Loaded& value, wire::Frame& frame);
void read(const wire::Frame& frame, Loaded& value);
void write(const Sizing& value, wire::Frame& frame);
void read(const wire::Frame& frame, Sizing& value);
void write(const LaunchGeometry& value, wire::Frame& frame);
void read(const wire::Frame& frame, LaunchGeometry& value);
void write(const Input& value, wire::Frame& frame);
void read(const wire::Frame& frame, Input& value);
void write(const Run& value, wire::Frame& frame);
void read(const wire::Frame& frame, Run& value);
void write(const DeviceLaunch& value, wire::Frame& frame);
void read(const wire::Frame& frame, DeviceLaunch& value);
void write(const Reload& value, wire::Frame& frame);
void read(const wire::Frame& frame, Reload& value);
void write(const Launches& value, wire::Frame& frame);
void read(const wire::Frame& frame, Launches& value);
void write(const TimingSamples& value, wire::Frame& frame);
void read(const wire::Frame& frame, TimingSamples& value);
void write(const HardwareCounts& value, wire::Frame& frame);
void read(const wire::Frame& frame, HardwareCounts& value);

// The request's frame: its arguments, and its name as "op".
template <typename A, typename R>
wire::Frame request_frame(const Request<A, R>& request, const A& args) {
    wire::Frame frame;
    write(args, frame);
    frame.head["op"] = std::string(request.name);
    return frame;
}

// The name a request frame carries ("" where it has none).
std::string op_of(const wire::Frame& frame);

// The server's side: a handler bound to each request's name, each reading its arguments and
// writing its reply as the request's types say.
class RequestTable {
public:
    // `handler` takes the request's Args and returns its Reply.
    template <typename A, typename R, typename Handler>
    void bind(const Request<A, R>& request, Handler handler) {
        handlers_[std::string(request.name)] = [handler =
                                                    std::move(handler)](const wire::Frame& frame) {
            A args;
            read(frame, args);
            wire::Frame reply;
            write(static_cast<const R&>(handler(std::move(args))), reply);
            return reply;
        };
    }
    // The reply to a request frame; std::runtime_error for a name nothing is bound to, and
    // whatever the handler throws.
    wire::Frame answer(const wire::Frame& request) const;

private:
    std::map<std::string, std::function<wire::Frame(const wire::Frame&)>, std::less<>> handlers_;
};

// A reply that says the server failed to answer (its head holds only "error").
wire::Frame error_reply(const std::string& message);

// The client's side of one connection: requests sent, and their replies read in the order they
// were sent. Every failure (the connection broke, the server went away or said it failed) is a
// std::runtime_error naming the request: the harness's fault, never the kernel's.
class Connection {
public:
    Connection() = default;
    explicit Connection(int fd) : fd_(fd) {}  // takes the descriptor
    ~Connection() { close(); }
    Connection(Connection&& other) noexcept;
    Connection& operator=(Connection&& other) noexcept;
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    bool open() const { return fd_ >= 0; }
    void close();

    template <typename A, typename R>
    void send(const Request<A, R>& request, const A& args) {
        send_frame(request_frame(request, args), request.name);
    }
    template <typename A, typename R>
    R receive(const Request<A, R>& request) {
        const wire::Frame reply = receive_frame(request.name);
        R value;
        try {
            read(reply, value);
        } catch (const std::exception& error) {
            throw std::runtime_error("this GPU's device server answered '" +
                                     std::string(request.name) +
                                     "' with what is not its reply: " + error.what());
        }
        return value;
    }
    template <typename A, typename R>
    R call(const Request<A, R>& request, const A& args) {
        send(request, args);
        return receive(request);
    }

    // Reads the reply to request `name` sent before and drops it, waiting at most `wait` for it
    // to begin: false where it did not come in that time. Throws as receive() does where the
    // connection broke; an error reply is dropped as any other.
    bool drop_reply(std::string_view name, std::chrono::milliseconds wait);

private:
    void send_frame(const wire::Frame& frame, std::string_view name);
    wire::Frame read_frame(std::string_view name);     // an error reply too
    wire::Frame receive_frame(std::string_view name);  // an error reply throws
    int fd_ = -1;
};

}  // namespace grader::requests
