#pragma once

// Files in and out, the one place the grader opens them by hand.
//
// In: a student's files are read once, through a descriptor that cannot lead anywhere else: a
// submission is hostile, and a probe.cu that is a link to /etc/passwd or to another student's
// file must not be read as if it were the student's.
//
// Out: every file the grader writes goes through write_file_atomically and every folder it
// makes through create_output_folders, so who may read them is decided here once: the grading
// user alone (files 0600, folders 0700), whatever the umask, unless the process asked for its
// group to read them too (`--group-readable`: 0640 and 0750), for a course team's shared folder.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace grader {

// A file descriptor, closed when it goes.
class Descriptor {
public:
    Descriptor() = default;
    explicit Descriptor(int fd) : fd_(fd) {}
    Descriptor(Descriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Descriptor& operator=(Descriptor&& other) noexcept;
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;
    ~Descriptor() { reset(); }

    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    void reset();

private:
    int fd_ = -1;
};

// Who may read what the grader writes.
enum class Sharing {
    owner_only,      // files 0600, folders 0700
    group_readable,  // files 0640, folders 0750: the folder's group reads, nobody else
};

// The sharing of every output of this process, owner_only until set: set once, before anything
// is written (the CLI does it from --group-readable).
void set_output_sharing(Sharing sharing);
Sharing output_sharing();
unsigned file_mode(Sharing sharing);
unsigned folder_mode(Sharing sharing);

// Writes content to path through a temporary file in the same folder and a rename, so a reader
// never sees half a report, and an interrupted write leaves the old file or none. The file gets
// file_mode(sharing) whatever the umask, and whatever mode the file it replaces had. Throws
// std::system_error naming the path.
void write_file_atomically(const std::filesystem::path& path, std::string_view content,
                           Sharing sharing = output_sharing());

// Puts on the disk what was made, renamed or removed in `folder` (its own entries: fsync of the
// folder), so that a file written durably is also found after a crash. A file system that cannot
// sync a folder (EINVAL) is left as it is. Throws std::system_error naming the folder.
void sync_folder(const std::filesystem::path& folder);

// Removes the temporaries that write_file_atomically leaves in `folder` when its process is
// killed between writing and renaming (a batch's SIGKILL, a Slurm task cancelled midway). Only
// the writer's own names (".NAME.XXXXXX") go, and only plain files; call it while holding the
// lock of the output folder, so that no live writer's temporary is taken.
void remove_interrupted_writes(const std::filesystem::path& folder);

// Makes `folder` and every missing folder above it, each new one folder_mode(sharing) whatever
// the umask; folders that exist keep their mode (the user chose them). Throws std::system_error
// naming the folder that could not be made.
void create_output_folders(const std::filesystem::path& folder, Sharing sharing = output_sharing());

// A folder of this user's alone, opened (O_DIRECTORY, the last component not followed): made
// (with its missing parents, mode 0700) where missing, and made 0700 where it is this user's and
// others could only read it. An invalid Descriptor and `why` ("/tmp/x is a symbolic link, not a
// folder", "... belongs to user 65534 (nobody), ...") where it is not a folder, is another user's,
// or others could write in it (and so may have left anything there).
Descriptor open_private_folder(const std::filesystem::path& folder, std::string& why);

// The name of the user with this id where the system knows it, as "65534 (nobody)".
std::string describe_user(unsigned uid);

// Reads `name` (a path relative to folder, e.g. "probe.cu") from the submission folder: every
// component is opened with O_NOFOLLOW relative to the one before, and the file must be a regular
// file with exactly one link and at most max_bytes; it is read through the descriptor that was
// checked. The folder itself may be reached through links (the operator names it).
// Returns nullopt and sets why to a sentence for the student: "not found" where the file (or a
// folder on its way) does not exist, else e.g. "it is a symbolic link; submit the file itself".
std::optional<std::string> read_student_file(const std::filesystem::path& folder,
                                             const std::filesystem::path& name,
                                             std::size_t max_bytes, std::string& why);

// Where `name` is not in the folder, the entry of the folder that was most likely meant for it:
// the same name in another case ("Probe.cu"), with a suffix an editor or a browser adds
// ("probe.cu.txt", "probe (1).cu"), or a typo away ("submission.yml", "prob.cu"), by the same
// rule as every "did you mean" (nearest_name). Only names are looked at, never a file's content;
// dot-files are left out. Nullopt where `name` is there, or nothing is near it.
std::optional<std::string> meant_file(const std::filesystem::path& folder, const std::string& name);

// "; the folder holds Probe.cu: did you mean it? Rename it probe.cu" where meant_file finds one;
// empty otherwise. The file name is the student's text: writers escape it.
std::string meant_file_hint(const std::filesystem::path& folder, const std::string& name);

// The same reading, for a file the grader wrote into a folder that others may have touched since
// (a shard's report, read by `grader merge`): `why` is a sentence for the instructor ("it is a
// symbolic link, not followed").
std::optional<std::string> read_file_beneath(const std::filesystem::path& folder,
                                             const std::filesystem::path& name,
                                             std::size_t max_bytes, std::string& why);

}  // namespace grader
