#include "device/wire.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <utility>

#include "exercise/exercise.hpp"
#include "model/json.hpp"
#include "model/measurements.hpp"

namespace grader::wire {
namespace {

// A head is a few kilobytes; a blob at most a kernel's image or an output buffer.
constexpr std::uint64_t kMaxHeadBytes = 64ull << 20;
constexpr std::uint64_t kMaxBlobBytes = 1ull << 30;
constexpr std::uint64_t kMaxBlobs = 4096;

void write_all(int fd, const void* data, std::size_t size) {
    const auto* bytes = static_cast<const char*>(data);
    while (size > 0) {
        // MSG_NOSIGNAL: a peer that died is an error here, not a SIGPIPE for the process.
        const ssize_t wrote = ::send(fd, bytes, size, MSG_NOSIGNAL);
        if (wrote < 0) {
            if (errno == EINTR) {
                continue;
            }
            throw WireError(std::string("the device server's connection broke: ") +
                            std::strerror(errno));
        }
        bytes += wrote;
        size -= static_cast<std::size_t>(wrote);
    }
}

// False where the peer closed before the first byte (and `eof_allowed`).
bool read_all(int fd, void* data, std::size_t size, bool eof_allowed) {
    auto* bytes = static_cast<char*>(data);
    std::size_t got = 0;
    while (got < size) {
        const ssize_t read = ::read(fd, bytes + got, size - got);
        if (read < 0) {
            if (errno == EINTR) {
                continue;
            }
            throw WireError(std::string("the device server's connection broke: ") +
                            std::strerror(errno));
        }
        if (read == 0) {
            if (got == 0 && eof_allowed) {
                return false;
            }
            throw WireError("the device server's connection closed in the middle of a message");
        }
        got += static_cast<std::size_t>(read);
    }
    return true;
}

void write_size(int fd, std::uint64_t size) {
    write_all(fd, &size, sizeof size);
}

std::uint64_t read_size(int fd, std::uint64_t limit, const char* what) {
    std::uint64_t size = 0;
    read_all(fd, &size, sizeof size, false);
    if (size > limit) {
        throw WireError(std::string("the device server's peer sent a ") + what + " of " +
                        std::to_string(size) + " bytes");
    }
    return size;
}

}  // namespace

void send(int fd, const Frame& frame) {
    const std::string head = frame.head.dump();
    write_size(fd, head.size());
    write_all(fd, head.data(), head.size());
    write_size(fd, frame.blobs.size());
    for (const std::string& blob : frame.blobs) {
        write_size(fd, blob.size());
        write_all(fd, blob.data(), blob.size());
    }
}

std::optional<Frame> receive(int fd) {
    std::uint64_t head_size = 0;
    if (!read_all(fd, &head_size, sizeof head_size, true)) {
        return std::nullopt;
    }
    if (head_size > kMaxHeadBytes) {
        throw WireError("the device server's peer sent a head of " + std::to_string(head_size) +
                        " bytes");
    }
    std::string head(head_size, '\0');
    read_all(fd, head.data(), head.size(), false);
    Frame frame;
    frame.head = nlohmann::json::parse(head, nullptr, false);
    if (frame.head.is_discarded() || !frame.head.is_object()) {
        throw WireError("the device server's peer sent a head that is not a JSON object");
    }
    const std::uint64_t blobs = read_size(fd, kMaxBlobs, "blob count");
    for (std::uint64_t i = 0; i < blobs; ++i) {
        std::string blob(read_size(fd, kMaxBlobBytes, "blob"), '\0');
        read_all(fd, blob.data(), blob.size(), false);
        frame.blobs.push_back(std::move(blob));
    }
    return frame;
}

std::string blob_of(const std::vector<float>& values) {
    std::string blob(values.size() * sizeof(float), '\0');
    if (!values.empty()) {
        std::memcpy(blob.data(), values.data(), blob.size());
    }
    return blob;
}

std::vector<float> floats_of(const std::string& blob) {
    if (blob.size() % sizeof(float) != 0) {
        throw WireError("a float buffer of " + std::to_string(blob.size()) + " bytes");
    }
    std::vector<float> values(blob.size() / sizeof(float));
    if (!values.empty()) {
        std::memcpy(values.data(), blob.data(), blob.size());
    }
    return values;
}

nlohmann::json geometry_json(const LaunchGeometry& geometry) {
    const auto dim = [](const Dim3Spec& d) { return nlohmann::json::array({d.x, d.y, d.z}); };
    return {{"grid", dim(geometry.grid)}, {"block", dim(geometry.block)}};
}

LaunchGeometry geometry_of(const nlohmann::json& j) {
    const auto dim = [](const nlohmann::json& d) {
        return Dim3Spec{d.at(0).get<std::uint32_t>(), d.at(1).get<std::uint32_t>(),
                        d.at(2).get<std::uint32_t>()};
    };
    return LaunchGeometry{dim(j.at("grid")), dim(j.at("block"))};
}

nlohmann::json end_json(DeviceLaunch::End end) {
    return static_cast<int>(end);
}

DeviceLaunch::End end_of(const nlohmann::json& j) {
    const int end = j.get<int>();
    if (end < 0 || end > static_cast<int>(DeviceLaunch::End::unsupported)) {
        throw WireError("an unknown launch ending " + std::to_string(end));
    }
    return static_cast<DeviceLaunch::End>(end);
}

Frame launch_frame(const DeviceLaunch& launch) {
    Frame frame;
    frame.head = {{"end", end_json(launch.end)},
                  {"message", launch.message},
                  {"notes", launch.notes},
                  {"races", launch.races}};
    if (launch.counts) {
        frame.head["counts"] = *launch.counts;
    }
    if (launch.kernel_ms) {
        frame.head["kernel_ms"] = *launch.kernel_ms;
    }
    frame.blobs.push_back(blob_of(launch.outputs));
    return frame;
}

DeviceLaunch launch_of(const Frame& frame) {
    DeviceLaunch launch;
    launch.end = end_of(frame.head.at("end"));
    launch.message = frame.head.at("message").get<std::string>();
    launch.notes = frame.head.at("notes").get<std::vector<std::string>>();
    launch.races = frame.head.at("races").get<std::vector<std::string>>();
    if (frame.head.contains("counts")) {
        launch.counts = frame.head.at("counts").get<SharedAccessCounts>();
    }
    if (frame.head.contains("kernel_ms")) {
        launch.kernel_ms = frame.head.at("kernel_ms").get<double>();
    }
    if (frame.blobs.size() != 1) {
        throw WireError("a launch's answer without its output");
    }
    launch.outputs = floats_of(frame.blobs.front());
    return launch;
}

Frame samples_frame(const TimingSamples& samples) {
    Frame frame;
    frame.head = {{"per_round_ms", samples.per_round_ms},
                  {"launches_per_sample", samples.launches_per_sample},
                  {"rounds", samples.rounds},
                  {"seconds", samples.seconds},
                  {"modeled", samples.modeled},
                  {"notes", samples.notes},
                  {"end", end_json(samples.end)},
                  {"message", samples.message}};
    for (const std::vector<float>& outputs : samples.final_outputs) {
        frame.blobs.push_back(blob_of(outputs));
    }
    return frame;
}

TimingSamples samples_of(const Frame& frame) {
    TimingSamples samples;
    const nlohmann::json& j = frame.head;
    samples.per_round_ms = j.at("per_round_ms").get<std::vector<std::vector<double>>>();
    samples.launches_per_sample = j.at("launches_per_sample").get<std::vector<int>>();
    samples.rounds = j.at("rounds").get<int>();
    samples.seconds = j.at("seconds").get<double>();
    samples.modeled = j.at("modeled").get<bool>();
    samples.notes = j.at("notes").get<std::vector<std::string>>();
    samples.end = end_of(j.at("end"));
    samples.message = j.at("message").get<std::string>();
    for (const std::string& blob : frame.blobs) {
        samples.final_outputs.push_back(floats_of(blob));
    }
    return samples;
}

nlohmann::json counts_json(const HardwareCounts& counts) {
    return {{"counted", counts.counted},         {"reason", counts.reason},
            {"description", counts.description}, {"counts", counts.counts},
            {"end", end_json(counts.end)},       {"message", counts.message}};
}

HardwareCounts counts_of(const nlohmann::json& j) {
    HardwareCounts counts;
    counts.counted = j.at("counted").get<bool>();
    counts.reason = j.at("reason").get<std::string>();
    counts.description = j.at("description").get<std::string>();
    counts.counts = j.at("counts").get<std::vector<SharedAccessCounts>>();
    counts.end = end_of(j.at("end"));
    counts.message = j.at("message").get<std::string>();
    return counts;
}

nlohmann::json session_json(const SessionAccount& account) {
    return {{"type", "session"},
            {"held_seconds", account.held_seconds},
            {"waiting_seconds", account.waiting_seconds},
            {"request_seconds", account.request_seconds},
            {"waiting_before", account.waiting_before},
            {"idle_seconds", account.idle_seconds},
            {"setup_seconds", account.setup_seconds},
            {"teardown_seconds", account.teardown_seconds}};
}

SessionAccount session_of(const nlohmann::json& j) {
    const auto seconds_at = [](const nlohmann::json& value) {
        return value.is_number() ? value.get<double>() : 0.0;
    };
    SessionAccount account;
    if (!j.is_object()) {
        return account;
    }
    const std::pair<const char*, double*> totals[] = {
        {"held_seconds", &account.held_seconds},
        {"waiting_seconds", &account.waiting_seconds},
        {"idle_seconds", &account.idle_seconds},
        {"setup_seconds", &account.setup_seconds},
        {"teardown_seconds", &account.teardown_seconds}};
    for (const auto& [key, into] : totals) {
        if (const auto found = j.find(key); found != j.end()) {
            *into = seconds_at(*found);
        }
    }
    // Kept in a variable while ranged over: items() of a temporary reads it after its end.
    const auto by_op = [&j, &seconds_at](const char* key, std::map<std::string, double>& into) {
        if (const auto found = j.find(key); found != j.end() && found->is_object()) {
            for (const auto& [op, seconds] : found->items()) {
                into[op] = seconds_at(seconds);
            }
        }
    };
    by_op("request_seconds", account.request_seconds);
    by_op("waiting_before", account.waiting_before);
    return account;
}

}  // namespace grader::wire
