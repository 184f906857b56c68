#pragma once

// An exclusive flock() on a GPU's lock file, held until destruction or the process's end: grades
// that share a GPU (the workers of one batch, two batches of one instructor, their own `grader
// grade` beside them) compile side by side but use the GPU one at a time.
//
// The lock is this user's alone. Students run `grader grade` on the same machine, and a lock any
// user could open is a lock any user could hold for ever (or replace with a FIFO that hangs every
// grade), so the folder is the grading user's, mode 0700, and a lock file is opened without
// following a link or blocking on a FIFO, and only where it is a regular file of that user's. A
// course team that shares a GPU on purpose names a folder of its group (GRADER_GPU_LOCK_DIR);
// see docs/security.md.

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "common/files.hpp"

namespace grader {

// Where this process's GPU locks live: $GRADER_GPU_LOCK_DIR where set (`shared`: a course team's
// folder, made by whoever set it up), else /tmp/grader-gpu-locks-<uid> (this user's, made here).
struct LockFolder {
    std::filesystem::path path;
    bool shared = false;
};
LockFolder gpu_lock_folder();

// How long a grade waits for its GPU before it gives up, naming who holds it: $GRADER_GPU_LOCK_WAIT
// seconds where set, else 10 minutes.
inline constexpr std::chrono::seconds kGpuLockWait{600};
std::chrono::milliseconds gpu_lock_wait();

// The lock file's name for the GPU with this PCI bus id: "gpu-0000-18-00.0.lock".
std::string gpu_lock_name(const std::string& bus_id);

// The lock could not be taken: the folder or the file is not what it must be, or it stayed held
// for the whole wait (the message names the holder's process where this machine says).
class DeviceLockError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class DeviceLock {
public:
    DeviceLock() = default;
    // Takes the lock `name` in `folder`, creating it where missing, and waits at most `wait` for
    // whoever holds it. Throws DeviceLockError.
    DeviceLock(const LockFolder& folder, const std::string& name, std::chrono::milliseconds wait);
    DeviceLock(DeviceLock&& other) noexcept = default;
    DeviceLock& operator=(DeviceLock&& other) noexcept = default;
    DeviceLock(const DeviceLock&) = delete;
    DeviceLock& operator=(const DeviceLock&) = delete;

    bool held() const { return file_.valid(); }

private:
    Descriptor file_;
};

// Who holds the flock() on the file open as `fd`, from /proc/locks: "process 4242 (grader) of
// user 1000 (alice)"; empty where no holder is listed.
std::string lock_holder(int fd);

}  // namespace grader
