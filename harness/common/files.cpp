#include "common/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <utility>
#include <vector>

#include "common/text.hpp"

namespace grader {
namespace {

class Descriptor {
public:
    explicit Descriptor(int fd) : fd_(fd) {}
    Descriptor(Descriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Descriptor& operator=(Descriptor&& other) noexcept {
        if (this != &other) {
            reset();
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;
    ~Descriptor() { reset(); }

    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }

private:
    void reset() {
        if (fd_ >= 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }
    int fd_;
};

std::string errno_text(int error_number) {
    return std::system_category().message(error_number);
}

// Why a file of this kind is not accepted; empty for a regular file with one link.
std::string refusal(const struct stat& status) {
    if (S_ISLNK(status.st_mode)) {
        return "it is a symbolic link; submit the file itself";
    }
    if (S_ISDIR(status.st_mode)) {
        return "it is a folder, not a file";
    }
    if (S_ISFIFO(status.st_mode)) {
        return "it is a named pipe, not a regular file; submit the file itself";
    }
    if (S_ISCHR(status.st_mode) || S_ISBLK(status.st_mode)) {
        return "it is a device, not a regular file; submit the file itself";
    }
    if (S_ISSOCK(status.st_mode)) {
        return "it is a socket, not a regular file; submit the file itself";
    }
    if (!S_ISREG(status.st_mode)) {
        return "it is not a regular file; submit the file itself";
    }
    if (status.st_nlink != 1) {
        return "it is a hard link (the same file has " + std::to_string(status.st_nlink) +
               " names); submit a copy of its own";
    }
    return {};
}

std::string too_big(std::size_t size, std::size_t max_bytes) {
    return "it is " + std::to_string(size) + " bytes, more than the limit of " +
           std::to_string(max_bytes);
}

}  // namespace

std::optional<std::string> read_student_file(const std::filesystem::path& folder,
                                             const std::filesystem::path& name,
                                             std::size_t max_bytes, std::string& why) {
    std::vector<std::string> parts;
    for (const auto& part : name.relative_path().lexically_normal()) {
        parts.push_back(part.string());
    }
    if (parts.empty() || parts.back().empty() || parts.front() == "..") {
        why = "its name " + name.string() + " does not name a file inside the submission folder";
        return std::nullopt;
    }
    Descriptor directory(
        ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!directory.valid()) {
        why = errno == ENOENT ? "not found"
                              : "the submission folder cannot be opened: " + errno_text(errno);
        return std::nullopt;
    }
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        Descriptor next(::openat(directory.get(), parts[i].c_str(),
                                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!next.valid()) {
            why = errno == ENOENT ? "not found"
                                  : "the folder " + parts[i] +
                                        " on its way is a link or not a "
                                        "folder; submit plain folders";
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
    if (std::string refused = refusal(before); !refused.empty()) {
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
        why = errno == ELOOP    ? "it is a symbolic link; submit the file itself"
              : errno == ENOENT ? "not found"
                                : "it cannot be read: " + errno_text(errno);
        return std::nullopt;
    }
    struct stat opened {};
    if (::fstat(file.get(), &opened) != 0) {
        why = "it cannot be examined: " + errno_text(errno);
        return std::nullopt;
    }
    if (std::string refused = refusal(opened); !refused.empty()) {
        why = std::move(refused);
        return std::nullopt;
    }
    if (opened.st_dev != before.st_dev || opened.st_ino != before.st_ino) {
        why = "it was replaced while it was being read; submit it again unchanged";
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
