#include "common/files.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

#include "common/text.hpp"

namespace grader {
namespace {

std::string errno_text(int error_number) {
    return std::system_category().message(error_number);
}

// Who a refusal is for: a student (who is told what to submit instead) or the instructor.
enum class Reader { student, instructor };

std::string advice(Reader reader, const char* for_student) {
    return reader == Reader::student ? std::string("; ") + for_student : std::string();
}

// Why a file of this kind is not accepted; empty for a regular file with one link.
std::string refusal(const struct stat& status, Reader reader) {
    if (S_ISLNK(status.st_mode)) {
        return reader == Reader::student ? "it is a symbolic link; submit the file itself"
                                         : "it is a symbolic link, not followed";
    }
    if (S_ISDIR(status.st_mode)) {
        return "it is a folder, not a file";
    }
    const std::string submit = advice(reader, "submit the file itself");
    if (S_ISFIFO(status.st_mode)) {
        return "it is a named pipe, not a regular file" + submit;
    }
    if (S_ISCHR(status.st_mode) || S_ISBLK(status.st_mode)) {
        return "it is a device, not a regular file" + submit;
    }
    if (S_ISSOCK(status.st_mode)) {
        return "it is a socket, not a regular file" + submit;
    }
    if (!S_ISREG(status.st_mode)) {
        return "it is not a regular file" + submit;
    }
    if (status.st_nlink != 1) {
        return "it is a hard link (the same file has " + std::to_string(status.st_nlink) +
               " names)" + advice(reader, "submit a copy of its own");
    }
    return {};
}

std::string too_big(std::size_t size, std::size_t max_bytes) {
    return "it is " + std::to_string(size) + " bytes, more than the limit of " +
           std::to_string(max_bytes);
}

std::optional<std::string> read_beneath(const std::filesystem::path& folder,
                                        const std::filesystem::path& name, std::size_t max_bytes,
                                        std::string& why, Reader reader) {
    const std::string where = reader == Reader::student ? "the submission folder" : folder.string();
    std::vector<std::string> parts;
    for (const auto& part : name.relative_path().lexically_normal()) {
        parts.push_back(part.string());
    }
    if (parts.empty() || parts.back().empty() || parts.front() == "..") {
        why = "its name " + name.string() + " does not name a file inside " + where;
        return std::nullopt;
    }
    Descriptor directory(
        ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!directory.valid()) {
        why = errno == ENOENT ? "not found" : where + " cannot be opened: " + errno_text(errno);
        return std::nullopt;
    }
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        Descriptor next(::openat(directory.get(), parts[i].c_str(),
                                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!next.valid()) {
            why = errno == ENOENT
                      ? "not found"
                      : "the folder " + parts[i] + " on its way is a link or not a folder" +
                            advice(reader, "submit plain folders");
            return std::nullopt;
        }
        directory = std::move(next);
    }
    const char* const file_name = parts.back().c_str();

    // Looked at before opening, so that a FIFO or a device is never opened at all (opening one
    // can block or have effects); looked at again through the descriptor, which is what is read.
    struct stat before {};
    if (::fstatat(directory.get(), file_name, &before, AT_SYMLINK_NOFOLLOW) != 0) {
        why = errno == ENOENT ? "not found" : "it cannot be examined: " + errno_text(errno);
        return std::nullopt;
    }
    if (std::string refused = refusal(before, reader); !refused.empty()) {
        why = std::move(refused);
        return std::nullopt;
    }
    if (static_cast<std::size_t>(before.st_size) > max_bytes) {
        why = too_big(static_cast<std::size_t>(before.st_size), max_bytes);
        return std::nullopt;
    }
    const Descriptor file(::openat(directory.get(), file_name,
                                   O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (!file.valid()) {
        why = errno == ELOOP    ? refusal(before, reader)
              : errno == ENOENT ? "not found"
                                : "it cannot be read: " + errno_text(errno);
        return std::nullopt;
    }
    struct stat opened {};
    if (::fstat(file.get(), &opened) != 0) {
        why = "it cannot be examined: " + errno_text(errno);
        return std::nullopt;
    }
    if (std::string refused = refusal(opened, reader); !refused.empty()) {
        why = std::move(refused);
        return std::nullopt;
    }
    if (opened.st_dev != before.st_dev || opened.st_ino != before.st_ino) {
        why =
            "it was replaced while it was being read" + advice(reader, "submit it again unchanged");
        return std::nullopt;
    }

    // Read to one byte past the limit, whatever the size said: the file may grow meanwhile.
    std::string content;
    content.resize(std::min(max_bytes, static_cast<std::size_t>(opened.st_size)) + 1);
    std::size_t length = 0;
    while (true) {
        if (length == content.size()) {
            if (content.size() > max_bytes) {
                why = too_big(content.size(), max_bytes);
                return std::nullopt;
            }
            content.resize(std::min(max_bytes + 1, content.size() * 2));
        }
        const ssize_t got = ::read(file.get(), content.data() + length, content.size() - length);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            why = "it cannot be read: " + errno_text(errno);
            return std::nullopt;
        }
        if (got == 0) {
            break;
        }
        length += static_cast<std::size_t>(got);
    }
    if (length > max_bytes) {
        why = too_big(length, max_bytes);
        return std::nullopt;
    }
    content.resize(length);
    return content;
}

}  // namespace

Descriptor& Descriptor::operator=(Descriptor&& other) noexcept {
    if (this != &other) {
        reset();
        fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
}

void Descriptor::reset() {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

std::optional<std::string> read_student_file(const std::filesystem::path& folder,
                                             const std::filesystem::path& name,
                                             std::size_t max_bytes, std::string& why) {
    return read_beneath(folder, name, max_bytes, why, Reader::student);
}

std::optional<std::string> read_file_beneath(const std::filesystem::path& folder,
                                             const std::filesystem::path& name,
                                             std::size_t max_bytes, std::string& why) {
    return read_beneath(folder, name, max_bytes, why, Reader::instructor);
}

namespace {

// Read by every writer, set once before the first: an atomic is enough.
std::atomic<Sharing> g_output_sharing{Sharing::owner_only};

}  // namespace

void set_output_sharing(Sharing sharing) {
    g_output_sharing = sharing;
}

Sharing output_sharing() {
    return g_output_sharing;
}

unsigned file_mode(Sharing sharing) {
    return sharing == Sharing::group_readable ? 0640 : 0600;
}

unsigned folder_mode(Sharing sharing) {
    return sharing == Sharing::group_readable ? 0750 : 0700;
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content,
                           Sharing sharing) {
    const auto folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    std::string temporary = (folder / ("." + path.filename().string() + ".XXXXXX")).string();
    const auto failed = [&path](int error) {
        return std::system_error(error, std::generic_category(), "cannot write " + path.string());
    };
    const int fd = ::mkstemp(temporary.data());  // mode 0600 from the start
    if (fd < 0) {
        throw failed(errno);
    }
    std::size_t written = 0;
    while (written < content.size()) {
        const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            const int error = errno;
            ::close(fd);
            ::unlink(temporary.c_str());
            throw failed(error);
        }
        written += static_cast<std::size_t>(n);
    }
    if (::fchmod(fd, static_cast<mode_t>(file_mode(sharing))) != 0 || ::fsync(fd) != 0 ||
        ::close(fd) != 0) {
        const int error = errno;
        ::unlink(temporary.c_str());
        throw failed(error);
    }
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
        const int error = errno;
        ::unlink(temporary.c_str());
        throw failed(error);
    }
}

void sync_folder(const std::filesystem::path& folder) {
    const Descriptor opened(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!opened.valid() || (::fsync(opened.get()) != 0 && errno != EINVAL)) {
        throw std::system_error(errno, std::generic_category(),
                                "cannot sync the folder " + folder.string());
    }
}

namespace {

// ".NAME.XXXXXX": the name write_file_atomically gives mkstemp, with mkstemp's six letters.
bool is_interrupted_write(const std::string& name) {
    constexpr std::size_t kSuffix = 7;  // ".XXXXXX"
    if (name.size() < kSuffix + 2 || name.front() != '.' || name[name.size() - kSuffix] != '.') {
        return false;
    }
    for (std::size_t i = name.size() - kSuffix + 1; i < name.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(name[i]);
        if (!std::isalnum(c)) {
            return false;
        }
    }
    return true;
}

}  // namespace

void remove_interrupted_writes(const std::filesystem::path& folder) {
    std::error_code error;
    std::filesystem::directory_iterator entries(folder, error);
    if (error) {
        return;  // no folder yet: nothing was interrupted there
    }
    for (const auto& entry : entries) {
        const auto name = entry.path().filename().string();
        if (is_interrupted_write(name) && entry.is_regular_file(error) &&
            !entry.is_symlink(error)) {
            std::filesystem::remove(entry.path(), error);
        }
    }
}

void create_output_folders(const std::filesystem::path& folder, Sharing sharing) {
    std::filesystem::path made;
    for (const auto& part : folder.lexically_normal()) {
        if (part.empty()) {
            continue;  // the trailing "" of "out/"
        }
        made /= part;
        struct stat status {};
        if (::stat(made.c_str(), &status) == 0 && S_ISDIR(status.st_mode)) {
            continue;
        }
        const auto mode = static_cast<mode_t>(folder_mode(sharing));
        if (::mkdir(made.c_str(), mode) != 0) {
            int error = errno;
            if (error == EEXIST) {
                if (::stat(made.c_str(), &status) == 0 && S_ISDIR(status.st_mode)) {
                    continue;  // made meanwhile by another writer
                }
                error = ENOTDIR;  // a file of that name is in the way
            }
            throw std::system_error(error, std::generic_category(),
                                    "cannot make the folder " + made.string());
        }
        // mkdir's mode is masked by the umask; the folder just made is set through a descriptor
        // that did not follow a link put in its place.
        const Descriptor opened(
            ::open(made.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!opened.valid() || ::fchmod(opened.get(), mode) != 0) {
            throw std::system_error(errno, std::generic_category(),
                                    "cannot set the mode of the folder " + made.string());
        }
    }
}

std::string describe_user(unsigned uid) {
    std::string text = std::to_string(uid);
    passwd entry{};
    passwd* found = nullptr;
    std::vector<char> buffer(16384);
    if (::getpwuid_r(static_cast<uid_t>(uid), &entry, buffer.data(), buffer.size(), &found) == 0 &&
        found != nullptr && found->pw_name != nullptr) {
        text += std::string(" (") + found->pw_name + ")";
    }
    return text;
}

Descriptor open_private_folder(const std::filesystem::path& folder, std::string& why) {
    struct stat status {};
    if (::lstat(folder.c_str(), &status) != 0) {
        if (errno != ENOENT) {
            why = folder.string() + " cannot be examined: " + errno_text(errno);
            return Descriptor();
        }
        try {
            create_output_folders(folder, Sharing::owner_only);
        } catch (const std::system_error& error) {
            why = error.what();
            return Descriptor();
        }
        // What was made, examined as a found folder is (its owner is checked below: before, the
        // zeroed status said root, and every other user's new folder was refused as root's).
        if (::lstat(folder.c_str(), &status) != 0) {
            why = folder.string() + " cannot be examined: " + errno_text(errno);
            return Descriptor();
        }
    }
    if (S_ISLNK(status.st_mode)) {
        why = folder.string() + " is a symbolic link, not a folder";
        return Descriptor();
    } else if (!S_ISDIR(status.st_mode)) {
        why = folder.string() + " is not a folder";
        return Descriptor();
    }
    // Said before opening, which another user's folder of mode 0700 would refuse as "denied".
    const auto foreign = [&folder](const struct stat& found) {
        return folder.string() + " belongs to user " + describe_user(found.st_uid) +
               ", not to this user, " + describe_user(::geteuid());
    };
    if (status.st_uid != ::geteuid()) {
        why = foreign(status);
        return Descriptor();
    }
    Descriptor opened(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!opened.valid() || ::fstat(opened.get(), &status) != 0) {
        why = folder.string() + " cannot be opened as a folder: " + errno_text(errno);
        return Descriptor();
    }
    if (status.st_uid != ::geteuid()) {
        why = foreign(status);
        return Descriptor();
    }
    if ((status.st_mode & 022) != 0) {
        // Whoever could write in it may have left anything there, to be trusted as this user's.
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(status.st_mode & 07777));
        why = folder.string() + " may be written by other users (mode " + mode +
              "), who may have left anything there: remove it, or make it 0700 and empty it";
        return Descriptor();
    }
    if ((status.st_mode & 077) != 0 && ::fchmod(opened.get(), 0700) != 0) {
        why = folder.string() +
              " is open to other users, and its mode cannot be set to 0700: " + errno_text(errno);
        return Descriptor();
    }
    return opened;
}

}  // namespace grader

namespace grader {
namespace {

// A file name as a student's tools may have changed it, set back: lower case, without an
// extension an editor or a browser added ("probe.cu.txt", "probe.cu.download") and without a
// copy's mark ("probe (1).cu", "probe.cu (2)").
std::string folded_file_name(std::string name) {
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) {
        return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    });
    for (const std::string added : {".txt", ".download", ".crdownload", ".bak"}) {
        if (name.size() > added.size() + 1 &&
            name.compare(name.size() - added.size(), added.size(), added) == 0) {
            name.erase(name.size() - added.size());
            break;
        }
    }
    // " (1)", "(12)": a browser's mark for a second download of the same name.
    for (std::size_t open = name.rfind('('); open != std::string::npos && open > 0;
         open = open > 0 ? name.rfind('(', open - 1) : std::string::npos) {
        const std::size_t close = name.find(')', open);
        if (close == std::string::npos || close == open + 1 ||
            name.find_first_not_of("0123456789", open + 1) != close) {
            continue;
        }
        const std::size_t start = open > 0 && name[open - 1] == ' ' ? open - 1 : open;
        name.erase(start, close + 1 - start);
        break;
    }
    return name;
}

}  // namespace

std::optional<std::string> meant_file(const std::filesystem::path& folder,
                                      const std::string& name) {
    std::error_code error;
    if (std::filesystem::symlink_status(folder / name, error).type() !=
        std::filesystem::file_type::not_found) {
        return std::nullopt;
    }
    std::vector<std::string> entries;
    for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
        const std::string entry_name = entry.path().filename().string();
        if (!entry_name.empty() && entry_name[0] != '.') {
            entries.push_back(entry_name);
        }
    }
    if (error) {
        return std::nullopt;
    }
    std::sort(entries.begin(), entries.end());
    const std::string wanted = folded_file_name(name);
    std::vector<std::string> folded;
    for (const std::string& entry : entries) {
        folded.push_back(folded_file_name(entry));
        if (folded.back() == wanted) {
            return entry;
        }
    }
    if (const auto near = nearest_name(wanted, folded)) {
        return entries[static_cast<std::size_t>(std::find(folded.begin(), folded.end(), *near) -
                                                folded.begin())];
    }
    return std::nullopt;
}

std::string meant_file_hint(const std::filesystem::path& folder, const std::string& name) {
    const auto meant = meant_file(folder, name);
    if (!meant) {
        return {};
    }
    return "; the folder holds " + *meant + ": did you mean it? Rename it " + name;
}

}  // namespace grader
