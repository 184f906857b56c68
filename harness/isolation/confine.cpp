#include "isolation/confine.hpp"

#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <system_error>

namespace grader {
namespace {

// Landlock's interface, written out here: Debian 12's linux/landlock.h stops at ABI 2, and the
// values are a stable kernel ABI (include/uapi/linux/landlock.h). The syscall numbers are the
// same on every architecture.
constexpr long kLandlockCreateRuleset = 444;
constexpr long kLandlockRestrictSelf = 446;
constexpr std::uint32_t kLandlockCreateRulesetVersion = 1U << 0;

struct LandlockRulesetAttr {
    std::uint64_t handled_access_fs = 0;
    std::uint64_t handled_access_net = 0;  // ABI 4
    std::uint64_t scoped = 0;              // ABI 6
};

// Every filesystem right the ABI knows: ABI 1 has bits 0 (execute) to 12 (make symlink), ABI 2
// adds refer, ABI 3 truncate, ABI 5 ioctl on devices. ABI 4 adds TCP bind and connect, ABI 6
// the abstract-unix-socket and signal scopes. ABI 7 adds logging only.
LandlockRulesetAttr everything_of(int abi) {
    LandlockRulesetAttr attr;
    attr.handled_access_fs = (std::uint64_t{1} << 13) - 1;
    if (abi >= 2) {
        attr.handled_access_fs |= std::uint64_t{1} << 13;
    }
    if (abi >= 3) {
        attr.handled_access_fs |= std::uint64_t{1} << 14;
    }
    if (abi >= 5) {
        attr.handled_access_fs |= std::uint64_t{1} << 15;
    }
    if (abi >= 4) {
        attr.handled_access_net = 0x3;
    }
    if (abi >= 6) {
        attr.scoped = 0x3;
    }
    return attr;
}

int probe_landlock_abi() {
    const long abi = ::syscall(kLandlockCreateRuleset, nullptr, 0, kLandlockCreateRulesetVersion);
    return abi > 0 ? static_cast<int>(abi) : 0;
}

// Why Landlock is missing, as far as the probe's errno tells: a seccomp filter (an older
// Docker's default profile) answers EPERM, a kernel without it ENOSYS or EOPNOTSUPP.
std::string why_no_landlock_abi(int error_number) {
    if (error_number == EPERM) {
        return "the landlock system calls were refused (EPERM): a seccomp filter, such as the "
               "default profile of Docker before 20.10.18, blocks them; allow landlock_* in it";
    }
    if (error_number == EOPNOTSUPP) {
        return "this kernel has Landlock but it is disabled: add landlock to the lsm= boot "
               "option";
    }
    return "this kernel offers no Landlock (Linux 5.13 or later has it)";
}

std::string errno_text(int error_number) {
    return std::system_category().message(error_number);
}

// Everything the empty root needs, computed before any fork so that the steps themselves are
// plain system calls (async-signal-safe: the probe runs them in a forked child).
struct EmptyRootPlan {
    char uid_map[64] = {};
    char gid_map[64] = {};
};

EmptyRootPlan plan_empty_root() {
    EmptyRootPlan plan;
    std::snprintf(plan.uid_map, sizeof plan.uid_map, "0 %u 1\n", static_cast<unsigned>(::getuid()));
    std::snprintf(plan.gid_map, sizeof plan.gid_map, "0 %u 1\n", static_cast<unsigned>(::getgid()));
    return plan;
}

bool write_proc_file(const char* path, const char* text) {
    const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    const std::size_t length = std::strlen(text);
    const bool written = ::write(fd, text, length) == static_cast<ssize_t>(length);
    const int saved = errno;
    ::close(fd);
    errno = saved;
    return written;
}

// Returns nullptr on success, else the step that failed (errno holds why).
const char* enter_empty_root(const EmptyRootPlan& plan) {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
        return "unshare of a user and mount namespace";
    }
    // setgroups must be denied before an unprivileged process may write its gid_map.
    if (!write_proc_file("/proc/self/setgroups", "deny\n") ||
        !write_proc_file("/proc/self/uid_map", plan.uid_map) ||
        !write_proc_file("/proc/self/gid_map", plan.gid_map)) {
        return "writing the namespace's id maps";
    }
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
        return "making the mounts private";
    }
    // Any existing directory will do as the place to mount the new root before pivoting to it.
    const char* mounted = nullptr;
    for (const char* point : {"/tmp", "/proc", "/dev", "/"}) {
        if (::mount("grader-empty-root", point, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                    "size=4k,nr_inodes=2,mode=0555") == 0) {
            mounted = point;
            break;
        }
    }
    if (mounted == nullptr) {
        return "mounting an empty tmpfs";
    }
    // pivot_root(".", ".") stacks the old root under the new one; detaching it leaves only the
    // empty tmpfs reachable.
    if (::chdir(mounted) != 0) {
        return "entering the empty tmpfs";
    }
    if (::syscall(SYS_pivot_root, ".", ".") != 0) {
        return "pivot_root to the empty tmpfs";
    }
    if (::umount2(".", MNT_DETACH) != 0) {
        return "detaching the old root";
    }
    if (::chdir("/") != 0) {
        return "entering the new root";
    }
    ::mount(nullptr, "/", nullptr,
            MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
    return nullptr;
}

bool probe_user_namespaces() {
    const EmptyRootPlan plan = plan_empty_root();
    const pid_t pid = ::fork();
    if (pid < 0) {
        return false;
    }
    if (pid == 0) {
        ::_exit(enter_empty_root(plan) == nullptr ? 0 : 1);
    }
    int status = 0;
    pid_t waited;
    do {
        waited = ::waitpid(pid, &status, 0);
    } while (waited < 0 && errno == EINTR);
    return waited == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Returns the ABI whose rights were all denied, or 0 and sets why.
int restrict_with_landlock(std::string& why) {
    const int abi = probe_landlock_abi();
    if (abi == 0) {
        why = why_no_landlock_abi(errno);
        return 0;
    }
    const LandlockRulesetAttr attr = everything_of(abi);
    const long ruleset = ::syscall(kLandlockCreateRuleset, &attr, sizeof attr, 0);
    if (ruleset < 0) {
        why = "landlock_create_ruleset failed: " + errno_text(errno);
        return 0;
    }
    const int ruleset_fd = static_cast<int>(ruleset);
    const long restricted = ::syscall(kLandlockRestrictSelf, ruleset_fd, 0);
    const int saved = errno;
    ::close(ruleset_fd);
    if (restricted != 0) {
        why = "landlock_restrict_self failed: " + errno_text(saved);
        return 0;
    }
    return abi;
}

}  // namespace

const ConfinementSupport& confinement_support() {
    static std::once_flag once;
    static ConfinementSupport support;
    std::call_once(once, [] {
        support.landlock_abi = probe_landlock_abi();
        support.user_namespaces = probe_user_namespaces();
    });
    return support;
}

std::string confinement_warning(const ConfinementSupport& support) {
    if (support.confines()) {
        return {};
    }
    return "the student's compile is not confined: this kernel offers neither Landlock nor "
           "unprivileged user namespaces, so only the include vetting keeps NVRTC from reading "
           "the grading machine's files; grade on Linux 5.13 or later with Landlock enabled";
}

Confinement confine_to_no_files(const ConfineOptions& options) {
    Confinement confinement;
    std::string why_no_landlock = "not asked for";
    std::string why_no_empty_root = "not asked for";
    // Landlock (and the kernel, for a process that is not privileged) requires it; it also keeps
    // a set-user-id program from regaining what the confinement takes away.
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);

    if (options.empty_root) {
        const EmptyRootPlan plan = plan_empty_root();
        if (const char* failed = enter_empty_root(plan); failed == nullptr) {
            confinement.empty_root = true;
        } else {
            why_no_empty_root = std::string(failed) + " failed: " + errno_text(errno);
        }
    }
    if (options.landlock) {
        confinement.landlock_abi = restrict_with_landlock(why_no_landlock);
    }

    const std::string landlock = "Landlock ABI " + std::to_string(confinement.landlock_abi);
    if (confinement.landlock_abi > 0 && confinement.empty_root) {
        confinement.description = landlock +
                                  " and an empty mount namespace: the student's compile could "
                                  "open no file and see no path of the host";
    } else if (confinement.landlock_abi > 0) {
        confinement.description = landlock +
                                  ": the student's compile could open no file (no empty mount "
                                  "namespace: " +
                                  why_no_empty_root + ")";
    } else if (confinement.empty_root) {
        confinement.description =
            "an empty mount namespace: the student's compile could see no file of the host (no "
            "Landlock: " +
            why_no_landlock + ")";
    } else {
        confinement.description =
            "no confinement: this kernel offers neither Landlock nor user namespaces, so the "
            "student's compile relied on the include vetting alone (Landlock: " +
            why_no_landlock + "; namespace: " + why_no_empty_root + ")";
    }
    return confinement;
}

}  // namespace grader
