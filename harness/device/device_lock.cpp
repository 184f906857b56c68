#include "device/device_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>
#include <vector>

#include "common/text.hpp"

namespace grader {
namespace {

using Clock = std::chrono::steady_clock;

// How often a waiting grade tries the lock again: a blocking flock() could not be given up at a
// deadline without signals, and a try every few milliseconds costs nothing beside a grade.
constexpr std::chrono::milliseconds kRetryEvery{5};

std::string mode_text(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

std::string kind_of(mode_t mode) {
    if (S_ISLNK(mode)) {
        return "a symbolic link";
    }
    if (S_ISDIR(mode)) {
        return "a folder";
    }
    if (S_ISFIFO(mode)) {
        return "a named pipe (FIFO)";
    }
    if (S_ISSOCK(mode)) {
        return "a socket";
    }
    if (S_ISCHR(mode) || S_ISBLK(mode)) {
        return "a device";
    }
    return "not a regular file";
}

bool in_my_groups(gid_t group) {
    if (group == ::getegid()) {
        return true;
    }
    const int count = ::getgroups(0, nullptr);
    std::vector<gid_t> groups(static_cast<std::size_t>(count > 0 ? count : 0));
    if (count > 0 && ::getgroups(count, groups.data()) == count) {
        for (const gid_t member : groups) {
            if (member == group) {
                return true;
            }
        }
    }
    return false;
}

// A course team's folder, named on purpose: it must exist, be no link, and be writable by no one
// outside its group; where it is not this user's, its group must be one of this user's.
Descriptor open_shared_folder(const std::filesystem::path& folder, std::string& why) {
    const std::string named = "GRADER_GPU_LOCK_DIR=" + folder.string();
    if (!folder.is_absolute()) {
        why = named + " is not an absolute path";
        return Descriptor();
    }
    struct stat status {};
    if (::lstat(folder.c_str(), &status) != 0) {
        why =
            named + (errno == ENOENT ? " does not exist: a course team's lock folder is made "
                                       "once, by hand (docs/security.md)"
                                     : std::string(" cannot be examined: ") + std::strerror(errno));
        return Descriptor();
    }
    if (!S_ISDIR(status.st_mode)) {
        why = named + " is " + kind_of(status.st_mode) + ", not a folder";
        return Descriptor();
    }
    Descriptor opened(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!opened.valid() || ::fstat(opened.get(), &status) != 0) {
        why = named + " cannot be opened: " + std::strerror(errno);
        return Descriptor();
    }
    if ((status.st_mode & S_IWOTH) != 0) {
        why = named + " may be written by any user (mode " + mode_text(status.st_mode) +
              "): anyone could take or replace its locks; make it writable by the team's group "
              "alone (chmod 2770)";
        return Descriptor();
    }
    if (status.st_uid != ::geteuid() && !in_my_groups(status.st_gid)) {
        why = named + " belongs to user " + describe_user(status.st_uid) + " and to group " +
              std::to_string(status.st_gid) + ", which this user is not in";
        return Descriptor();
    }
    return opened;
}

// The lock file `name` in the folder open as `folder`, created where missing: never a link
// followed, never a FIFO or a device opened (opening one can block or have effects).
Descriptor open_lock_file(int folder, const std::filesystem::path& path, const std::string& name,
                          bool shared, gid_t group, std::string& why) {
    // flock() needs no write permission: the team's members read their shared locks.
    const mode_t mode = shared ? 0640 : 0600;
    for (int attempt = 0; attempt < 100; ++attempt) {
        Descriptor file;
        struct stat before {};
        if (::fstatat(folder, name.c_str(), &before, AT_SYMLINK_NOFOLLOW) == 0) {
            if (!S_ISREG(before.st_mode)) {
                why = path.string() + " is " + kind_of(before.st_mode) +
                      ", not a lock file: remove it";
                return Descriptor();
            }
            file = Descriptor(::openat(folder, name.c_str(),
                                       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
            if (!file.valid() && errno == ENOENT) {
                continue;  // removed meanwhile
            }
        } else if (errno == ENOENT) {
            file = Descriptor(::openat(
                folder, name.c_str(),
                O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
                mode));
            if (!file.valid() && errno == EEXIST) {
                continue;  // made meanwhile by another grade
            }
            if (file.valid()) {
                ::fchmod(file.get(), mode);  // the umask masked O_CREAT's mode
                if (shared) {
                    (void)!::fchown(file.get(), static_cast<uid_t>(-1), group);
                }
            }
        } else {
            why = path.string() + " cannot be examined: " + std::strerror(errno);
            return Descriptor();
        }
        if (!file.valid()) {
            why = path.string() + (errno == ELOOP
                                       ? " is a symbolic link, not a lock file: remove it"
                                       : " cannot be opened: " + std::string(std::strerror(errno)));
            return Descriptor();
        }
        struct stat opened {};
        if (::fstat(file.get(), &opened) != 0 || !S_ISREG(opened.st_mode)) {
            why = path.string() + " is " + kind_of(opened.st_mode) + ", not a lock file: remove it";
            return Descriptor();
        }
        if (!shared && opened.st_uid != ::geteuid()) {
            why = path.string() + " belongs to user " + describe_user(opened.st_uid) +
                  ", who may hold it open for ever: remove it";
            return Descriptor();
        }
        return file;
    }
    why = path.string() + " kept being replaced while it was opened";
    return Descriptor();
}

std::string read_small_file(const std::string& path, std::size_t limit) {
    const Descriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    std::string text;
    if (!file.valid()) {
        return text;
    }
    char buffer[4096];
    while (text.size() < limit) {
        const ssize_t got = ::read(file.get(), buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            break;
        }
        text.append(buffer, static_cast<std::size_t>(got));
    }
    return text.substr(0, limit);
}

// A process as `ps` would show it: its command line, cut short, with no control character.
std::string describe_process(long pid) {
    const std::string folder = "/proc/" + std::to_string(pid);
    std::string command = read_small_file(folder + "/cmdline", 160);
    if (command.empty()) {
        command = read_small_file(folder + "/comm", 64);
    }
    while (!command.empty() && (command.back() == '\0' || command.back() == '\n')) {
        command.pop_back();
    }
    for (char& c : command) {
        const auto byte = static_cast<unsigned char>(c);
        c = byte == 0 ? ' ' : (byte < 0x20 || byte == 0x7f) ? '?' : c;
    }
    std::string text = "process " + std::to_string(pid);
    if (!command.empty()) {
        text += " (" + command + ")";
    }
    struct stat status {};
    if (::stat(folder.c_str(), &status) == 0) {
        text += " of user " + describe_user(status.st_uid);
    }
    return text;
}

}  // namespace

LockFolder gpu_lock_folder() {
    if (const char* named = std::getenv("GRADER_GPU_LOCK_DIR"); named != nullptr && *named != 0) {
        return {named, true};
    }
    return {"/tmp/grader-gpu-locks-" + std::to_string(::geteuid()), false};
}

std::chrono::milliseconds gpu_lock_wait() {
    const char* text = std::getenv("GRADER_GPU_LOCK_WAIT");
    if (text == nullptr || *text == 0) {
        return kGpuLockWait;
    }
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (end == text || *end != 0 || !(seconds >= 0.0) || seconds > 1e7) {
        throw DeviceLockError(std::string("GRADER_GPU_LOCK_WAIT=") + text +
                              " is not a number of seconds to wait for a GPU");
    }
    return std::chrono::milliseconds(static_cast<long long>(seconds * 1000.0));
}

std::string gpu_lock_name(const std::string& bus_id) {
    std::string name = "gpu-";
    for (const char c : bus_id) {
        const bool plain =
            (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.';
        name += plain ? c : '-';
    }
    return name + ".lock";
}

std::string lock_holder(int fd) {
    struct stat status {};
    if (::fstat(fd, &status) != 0) {
        return {};
    }
    // "12: FLOCK  ADVISORY  WRITE 4242 fd:00:408225 0 EOF"; a waiter's line has "->" after the
    // number. The device is the superblock's, in hex, and may differ from st_dev on overlays,
    // so the inode alone decides where the device does not match.
    const std::string locks = read_small_file("/proc/locks", std::size_t{4} << 20);
    char device[32];
    std::snprintf(device, sizeof device, "%02x:%02x:", major(status.st_dev), minor(status.st_dev));
    const std::string inode = std::to_string(status.st_ino);
    long by_inode = -1;
    std::istringstream lines(locks);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream fields(line);
        std::string number, kind, mode, access, pid, where;
        fields >> number >> kind;
        if (kind != "FLOCK") {
            continue;  // a POSIX lock, or a waiter ("->")
        }
        fields >> mode >> access >> pid >> where;
        const auto last_colon = where.rfind(':');
        if (last_colon == std::string::npos || where.substr(last_colon + 1) != inode) {
            continue;
        }
        const long holder = std::strtol(pid.c_str(), nullptr, 10);
        if (where.compare(0, last_colon + 1, device) == 0) {
            by_inode = holder;
            break;
        }
        by_inode = holder;
    }
    if (by_inode < 0) {
        return {};
    }
    if (by_inode == 0) {
        return "a process this one cannot see (in another PID namespace: a container?)";
    }
    return describe_process(by_inode);
}

DeviceLock::DeviceLock(const LockFolder& folder, const std::string& name,
                       std::chrono::milliseconds wait) {
    std::string why;
    const Descriptor opened = folder.shared ? open_shared_folder(folder.path, why)
                                            : open_private_folder(folder.path, why);
    if (!opened.valid()) {
        throw DeviceLockError("the GPU's lock folder cannot be used: " + why);
    }
    struct stat status {};
    ::fstat(opened.get(), &status);
    const auto path = folder.path / name;
    file_ = open_lock_file(opened.get(), path, name, folder.shared, status.st_gid, why);
    if (!file_.valid()) {
        throw DeviceLockError("the GPU's lock cannot be used: " + why);
    }
    const auto deadline = Clock::now() + wait;
    while (::flock(file_.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno == EINTR) {
            continue;
        }
        if (errno != EWOULDBLOCK) {
            throw DeviceLockError("cannot lock " + path.string() + ": " + std::strerror(errno));
        }
        if (Clock::now() >= deadline) {
            const std::string holder = lock_holder(file_.get());
            throw DeviceLockError(
                "the GPU stayed busy for the whole wait of " +
                format_number(std::chrono::duration<double>(wait).count(), 1) + " s: its lock " +
                path.string() + " is held by " + (holder.empty() ? "another process" : holder) +
                ". Let that finish or stop it, or wait longer with GRADER_GPU_LOCK_WAIT=<seconds>");
        }
        std::this_thread::sleep_for(kRetryEvery);
    }
}

}  // namespace grader
