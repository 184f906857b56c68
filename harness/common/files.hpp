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

// Where `name` is not in the folder, the entry of the folder that was most likely meant for it:
// the same name in another case ("Probe.cu"), with a suffix an editor or a browser adds
// ("probe.cu.txt", "probe (1).cu"), or a typo away ("submission.yml", "prob.cu"), by the same
// rule as every "did you mean" (nearest_name). Only names are looked at, never a file's content;
// dot-files are left out. Nullopt where `name` is there, or nothing is near it.
std::optional<std::string> meant_file(const std::filesystem::path& folder, const std::string& name);

// "; the folder holds Probe.cu: did you mean it? Rename it probe.cu" where meant_file finds one;
// empty otherwise. The file name is the student's text: writers escape it.
std::string meant_file_hint(const std::filesystem::path& folder, const std::string& name);

}  // namespace grader
