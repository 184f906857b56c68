// The GPU's lock (harness/device/device_lock.hpp) as a hostile local user meets it: a folder of
// the grading user's alone, a lock file that is never a link followed or a FIFO opened, a bounded
// wait that names who holds the GPU, and one user's own grades still taking turns. The cases that
// need another user (a squatted folder, a lock another uid tries to open) run as root, and are
// skipped, visibly, elsewhere.

#include <doctest/doctest.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "device/device_lock.hpp"
#include "test_paths.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using grader::DeviceLock;
using grader::DeviceLockError;
using grader::LockFolder;

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;

fs::path scratch(const std::string& name) {
    const auto dir = grader::testing::scratch_root("device_lock") / name;
    fs::remove_all(dir);
    fs::create_directories(dir.parent_path());
    return dir;
}

unsigned mode_of(const fs::path& path) {
    struct stat status {};
    REQUIRE(::lstat(path.c_str(), &status) == 0);
    return status.st_mode & 07777;
}

// The message DeviceLock throws, or "" where it took the lock.
std::string refusal(const LockFolder& folder, std::chrono::milliseconds wait = 100ms) {
    try {
        DeviceLock lock(folder, "gpu-0000-18-00.0.lock", wait);
        CHECK(lock.held());
        return {};
    } catch (const DeviceLockError& error) {
        return error.what();
    }
}

// `flock -x FILE sleep 30` in a process group of its own, as a user holding the GPU would run it;
// returns once the lock is held.
pid_t hold_with_flock(const fs::path& file) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::setpgid(0, 0);
        ::execlp("flock", "flock", "-x", file.c_str(), "sleep", "30", static_cast<char*>(nullptr));
        ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    for (;;) {
        const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
        const bool held = fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0;
        if (fd >= 0) {
            ::close(fd);
        }
        if (held) {
            return pid;
        }
        REQUIRE(std::chrono::steady_clock::now() < deadline);
        std::this_thread::sleep_for(10ms);
    }
}

void stop_group(pid_t pid) {
    ::kill(-pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
}

// Runs `body` in a child as nobody:nogroup; returns the child's exit status.
template <typename Body>
int as_nobody(Body body) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        if (::setgroups(0, nullptr) != 0 || ::setgid(kNogroup) != 0 || ::setuid(kNobody) != 0) {
            ::_exit(99);
        }
        ::_exit(body());
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

const bool kNotRoot = ::geteuid() != 0;

}  // namespace

TEST_CASE("the lock folder is made this user's, mode 0700, with lock files of mode 0600") {
    const auto folder = scratch("made") / "locks";
    ::umask(0);  // the modes are the grader's, whatever the umask
    CHECK(refusal({folder, false}).empty());
    ::umask(022);
    CHECK(mode_of(folder) == 0700);
    CHECK(mode_of(folder / "gpu-0000-18-00.0.lock") == 0600);

    SUBCASE("a folder of this user's that others could read is closed to them") {
        fs::permissions(folder, fs::perms::owner_all | fs::perms::group_read |
                                    fs::perms::group_exec | fs::perms::others_read |
                                    fs::perms::others_exec);
        CHECK(refusal({folder, false}).empty());
        CHECK(mode_of(folder) == 0700);
    }
    SUBCASE("a folder others could write in is refused: anyone may have left a lock there") {
        fs::permissions(folder, fs::perms::all);
        const std::string why = refusal({folder, false});
        CHECK(why.find("may be written by other users (mode 0777)") != std::string::npos);
    }
}

TEST_CASE("a lock folder that is a link or a file is refused, naming it") {
    const auto root = scratch("not-a-folder");
    fs::create_directories(root / "elsewhere");
    fs::create_directory_symlink(root / "elsewhere", root / "link");
    std::ofstream(root / "file") << "x";

    std::string why = refusal({root / "link", false});
    CHECK(why.find((root / "link").string() + " is a symbolic link, not a folder") !=
          std::string::npos);
    CHECK(fs::is_empty(root / "elsewhere"));  // nothing made through the link
    why = refusal({root / "file", false});
    CHECK(why.find((root / "file").string() + " is not a folder") != std::string::npos);
}

TEST_CASE("a lock file that is a link, a FIFO or a folder is refused at once, never opened") {
    const auto folder = scratch("lock-files") / "locks";
    CHECK(refusal({folder, false}).empty());
    const auto lock = folder / "gpu-0000-18-00.0.lock";
    fs::remove(lock);

    SUBCASE("a link to a file elsewhere: not followed, and the file is left as it was") {
        const auto target = folder.parent_path() / "target";
        std::ofstream(target) << "the instructor's file";
        fs::create_symlink(target, lock);
        CHECK(refusal({folder, false}).find("is a symbolic link") != std::string::npos);
        std::ifstream in(target);
        std::string content;
        std::getline(in, content);
        CHECK(content == "the instructor's file");
    }
    SUBCASE("a FIFO, which would hang a grade that opened it") {
        REQUIRE(::mkfifo(lock.c_str(), 0600) == 0);
        const auto began = std::chrono::steady_clock::now();
        CHECK(refusal({folder, false}).find("is a named pipe (FIFO), not a lock file") !=
              std::string::npos);
        CHECK(std::chrono::steady_clock::now() - began < 5s);
    }
    SUBCASE("a folder") {
        fs::create_directory(lock);
        CHECK(refusal({folder, false}).find("is a folder, not a lock file") != std::string::npos);
    }
}

TEST_CASE("a held GPU is waited for a bounded time, and the refusal names the holder's process") {
    const auto folder = scratch("held") / "locks";
    CHECK(refusal({folder, false}).empty());
    const pid_t holder = hold_with_flock(folder / "gpu-0000-18-00.0.lock");
    const auto began = std::chrono::steady_clock::now();
    const std::string why = refusal({folder, false}, 300ms);
    const auto waited = std::chrono::steady_clock::now() - began;
    stop_group(holder);
    INFO(why);
    CHECK(waited >= 300ms);
    CHECK(waited < 5s);
    CHECK(why.find("stayed busy for the whole wait of 0.3 s") != std::string::npos);
    CHECK(why.find("is held by process " + std::to_string(holder) + " (flock -x ") !=
          std::string::npos);
    CHECK(why.find("sleep 30) of user " + std::to_string(::geteuid())) != std::string::npos);
    CHECK(why.find("GRADER_GPU_LOCK_WAIT") != std::string::npos);
    // Once the holder has gone, the lock is there to take.
    CHECK(refusal({folder, false}).empty());
}

TEST_CASE("one user's grades take turns on one GPU (two batches, or --devices 0,0)") {
    const auto folder = scratch("turns") / "locks";
    std::optional<DeviceLock> first(std::in_place, LockFolder{folder, false},
                                    "gpu-0000-18-00.0.lock", 0ms);
    SUBCASE("while one holds it, the other waits, and gives up at its bound") {
        CHECK(refusal({folder, false}, 50ms).find("stayed busy") != std::string::npos);
    }
    SUBCASE("once the first lets go, the waiting one takes it") {
        std::thread release([&first] {
            std::this_thread::sleep_for(200ms);
            first.reset();
        });
        const auto began = std::chrono::steady_clock::now();
        CHECK(refusal({folder, false}, 10s).empty());
        CHECK(std::chrono::steady_clock::now() - began >= 150ms);
        release.join();
    }
}

TEST_CASE("the lock's place and wait come from the environment, and a bad wait is refused") {
    ::unsetenv("GRADER_GPU_LOCK_DIR");
    ::unsetenv("GRADER_GPU_LOCK_WAIT");
    CHECK(grader::gpu_lock_folder().path ==
          fs::path("/tmp/grader-gpu-locks-" + std::to_string(::geteuid())));
    CHECK_FALSE(grader::gpu_lock_folder().shared);
    CHECK(grader::gpu_lock_wait() == 600s);
    CHECK(grader::gpu_lock_name("0000:18:00.0") == "gpu-0000-18-00.0.lock");
    CHECK(grader::gpu_lock_name("../x") == "gpu-..-x.lock");

    ::setenv("GRADER_GPU_LOCK_DIR", "/srv/course-locks", 1);
    ::setenv("GRADER_GPU_LOCK_WAIT", "2.5", 1);
    CHECK(grader::gpu_lock_folder().path == "/srv/course-locks");
    CHECK(grader::gpu_lock_folder().shared);
    CHECK(grader::gpu_lock_wait() == 2500ms);
    for (const char* bad : {"soon", "-1", "1e9", "5s"}) {
        CAPTURE(bad);
        ::setenv("GRADER_GPU_LOCK_WAIT", bad, 1);
        CHECK_THROWS_WITH_AS(grader::gpu_lock_wait(), doctest::Contains("not a number of seconds"),
                             DeviceLockError);
    }
    ::unsetenv("GRADER_GPU_LOCK_DIR");
    ::unsetenv("GRADER_GPU_LOCK_WAIT");

    SUBCASE("a team's folder named on purpose must exist, and be given as an absolute path") {
        const auto missing = scratch("team-missing");
        CHECK(refusal({missing, true}).find("does not exist") != std::string::npos);
        CHECK(refusal({"relative/locks", true}).find("is not an absolute path") !=
              std::string::npos);
    }
}

TEST_SUITE("other_user" * doctest::skip(kNotRoot)) {
    TEST_CASE("another user can neither open this user's lock nor take it") {
        const auto folder = scratch("other-user") / "locks";
        fs::create_directories(folder.parent_path());
        fs::permissions(folder.parent_path(),
                        fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
        CHECK(refusal({folder, false}).empty());
        const auto lock = folder / "gpu-0000-18-00.0.lock";
        // As nobody: opening the lock to flock it, and putting a FIFO or a link in its place.
        CHECK(as_nobody([&] { return ::open(lock.c_str(), O_RDONLY) < 0 && errno == EACCES; }) ==
              1);
        CHECK(as_nobody([&] { return ::unlink(lock.c_str()) != 0 && errno == EACCES; }) == 1);
        CHECK(as_nobody([&] { return ::mkfifo((folder / "x").c_str(), 0666) != 0; }) == 1);
        // Nobody's own grades lock elsewhere, and refuse root's folder if pointed at it.
        CHECK(as_nobody([] {
                  return grader::gpu_lock_folder().path == fs::path("/tmp/grader-gpu-locks-65534");
              }) == 1);
        CHECK(as_nobody([&] {
                  return refusal({folder, false}).find("belongs to user 0 (root)") !=
                         std::string::npos;
              }) == 1);
    }

    TEST_CASE("a lock folder another user made first is refused, naming that user") {
        const auto folder = scratch("squatted");
        fs::create_directory(folder);
        fs::permissions(folder, fs::perms::owner_all);
        REQUIRE(::chown(folder.c_str(), kNobody, kNogroup) == 0);
        const std::string why = refusal({folder, false});
        CHECK(why.find(folder.string() + " belongs to user 65534 (nobody), not to this user") !=
              std::string::npos);

        SUBCASE("its lock file too, where the folder was left open to others") {
            const auto mine = scratch("planted") / "locks";
            CHECK(refusal({mine, false}).empty());
            REQUIRE(::chown((mine / "gpu-0000-18-00.0.lock").c_str(), kNobody, kNogroup) == 0);
            CHECK(refusal({mine, false}).find("belongs to user 65534 (nobody), who may hold it") !=
                  std::string::npos);
        }
    }

    TEST_CASE("a course team's folder is used where its group is this user's and no one else's") {
        const auto folder = scratch("team");
        fs::create_directory(folder);
        REQUIRE(::chown(folder.c_str(), kNobody, ::getegid()) == 0);
        REQUIRE(::chmod(folder.c_str(), 02770) == 0);
        CHECK(refusal({folder, true}).empty());
        struct stat status {};
        REQUIRE(::stat((folder / "gpu-0000-18-00.0.lock").c_str(), &status) == 0);
        CHECK((status.st_mode & 0777) == 0640);  // the team reads it, which is all flock needs
        CHECK(status.st_gid == ::getegid());

        SUBCASE("writable by anyone: refused") {
            REQUIRE(::chmod(folder.c_str(), 0777) == 0);
            CHECK(refusal({folder, true}).find("may be written by any user (mode 0777)") !=
                  std::string::npos);
        }
        SUBCASE("of a group this user is not in: refused") {
            REQUIRE(::chown(folder.c_str(), kNobody, kNogroup) == 0);
            CHECK(refusal({folder, true}).find("which this user is not in") != std::string::npos);
        }
    }
}
