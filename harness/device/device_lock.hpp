#pragma once

// An exclusive flock() on a file, held until destruction or the process's end: grades that share
// a GPU (the workers of one batch, two batches, a student's `grader grade` beside them) compile
// side by side but use the GPU one at a time.

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>

namespace grader {

// The lock every grade on this machine takes before using the GPU with this PCI bus id, whoever
// runs it and wherever it writes: /tmp/grader-gpu-locks/gpu-0000-18-00.0.lock. The folder is
// world-writable and sticky, as /tmp itself, so that an instructor's batch and a student's grade
// under another user meet on the same file.
inline std::filesystem::path gpu_lock_path(std::string bus_id) {
    for (char& c : bus_id) {
        if (c == ':') {
            c = '-';
        }
    }
    const std::filesystem::path folder = "/tmp/grader-gpu-locks";
    if (::mkdir(folder.c_str(), 01777) == 0) {
        ::chmod(folder.c_str(), 01777);  // mkdir's mode is masked by the umask
    }
    return folder / ("gpu-" + bus_id + ".lock");
}

class DeviceLock {
public:
    DeviceLock() = default;
    // flock() needs no write permission, so the file is opened for reading: another user's lock
    // file opens as well as one's own. It is created exclusively where missing, because a sticky
    // folder refuses O_CREAT on another user's file (fs.protected_regular).
    explicit DeviceLock(const std::filesystem::path& path) {
        for (int attempt = 0; fd_ < 0 && attempt < 100; ++attempt) {
            fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
            if (fd_ < 0 && errno == ENOENT) {
                fd_ = ::open(path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                             0644);
            }
            if (fd_ < 0 && errno != ENOENT && errno != EEXIST) {
                break;
            }
        }
        if (fd_ < 0) {
            throw std::runtime_error("cannot open the device lock " + path.string() + ": " +
                                     std::strerror(errno));
        }
        while (::flock(fd_, LOCK_EX) != 0) {
            if (errno != EINTR) {
                throw std::runtime_error("cannot lock " + path.string());
            }
        }
    }
    ~DeviceLock() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    DeviceLock(DeviceLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    DeviceLock& operator=(DeviceLock&& other) noexcept {
        if (this != &other) {
            if (fd_ >= 0) {
                ::close(fd_);
            }
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
    bool held() const { return fd_ >= 0; }
    DeviceLock(const DeviceLock&) = delete;
    DeviceLock& operator=(const DeviceLock&) = delete;

private:
    int fd_ = -1;
};

}  // namespace grader
