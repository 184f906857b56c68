#include "device/wire.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>

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

}  // namespace

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

}  // namespace grader::wire
