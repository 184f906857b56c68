#pragma once

// An exclusive flock() on a file, held until destruction or the process's end: batch workers that
// share a GPU compile side by side but time one at a time.

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <stdexcept>
#include <utility>

namespace grader {

class DeviceLock {
public:
    DeviceLock() = default;
    explicit DeviceLock(const std::filesystem::path& path)
        : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
        if (fd_ < 0) {
            throw std::runtime_error("cannot open the device lock " + path.string());
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
    DeviceLock(const DeviceLock&) = delete;
    DeviceLock& operator=(const DeviceLock&) = delete;

private:
    int fd_ = -1;
};

}  // namespace grader
