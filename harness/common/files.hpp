#pragma once

// A student's files are read once, through a descriptor that cannot lead anywhere else: a
// submission is hostile, and a probe.cu that is a link to /etc/passwd or to another student's
// file must not be read as if it were the student's.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace grader {

// Reads `name` (a path relative to folder, e.g. "probe.cu") from the submission folder: every
// component is opened with O_NOFOLLOW relative to the one before, and the file must be a regular
// file with exactly one link and at most max_bytes; it is read through the descriptor that was
// checked. The folder itself may be reached through links (the operator names it).
// Returns nullopt and sets why to a sentence for the student: "not found" where the file (or a
// folder on its way) does not exist, else e.g. "it is a symbolic link; submit the file itself".
std::optional<std::string> read_student_file(const std::filesystem::path& folder,
                                             const std::filesystem::path& name,
                                             std::size_t max_bytes, std::string& why);

}  // namespace grader
