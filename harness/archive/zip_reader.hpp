#pragma once

// A zip a student handed in (to `grader serve`, or on Canvas), read in memory: its files, or a
// refusal naming the entry at fault. One reader, with one set of limits, for every way a zip
// reaches the grader.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace grader {

struct ZipLimits {
    std::size_t max_files = 8;                      // files kept from a zip
    std::size_t max_zip_entries = 64;               // entries a zip may list, ignored ones included
    std::size_t max_file_bytes = 512 * 1024;        // one file, once unzipped
    std::size_t max_total_bytes = 2 * 1024 * 1024;  // all files, once unzipped
};

struct ZippedFile {
    std::string name;  // a plain file name: no folder, no "..", printable
    std::string bytes;
};

// Why a zip is not taken; what() names the zip and the entry, for the student.
class ZipRefused : public std::runtime_error {
public:
    enum class Why { refused, too_large };  // too_large: over a size limit once unzipped
    ZipRefused(Why why, const std::string& message) : std::runtime_error(message), why_(why) {}
    Why why() const noexcept { return why_; }

private:
    Why why_;
};

// The files of a zip. Folders are walked: files all under one top folder (a zipped folder) are
// taken from it; hidden files and macOS's __MACOSX/ are left out. Throws ZipRefused, naming the
// entry: a symbolic link or any entry that is not a plain file, an absolute name or one with
// "..", an encrypted entry, files in more than one folder (naming two of them), more entries or
// files than the limits, a file larger once unzipped than the limit (whatever its header
// claims), and an archive that does not read as a zip. `zip_name` is how messages name the zip.
std::vector<ZippedFile> read_zip_files(std::string_view bytes, const std::string& zip_name,
                                       const ZipLimits& limits);

// Whether bytes or a name are a zip's: a name ending in ".zip" (any case), or a zip's signature.
bool looks_like_zip(const std::string& name, std::string_view bytes);

// Whether a name is a plain file name a folder can hold: not empty, at most 255 bytes, UTF-8 with
// no control character, not "." or "..", no '/', '\\' or ':'.
bool plain_file_name(std::string_view name);

// "12 KB", "2.5 MB": a size as the refusals say it.
std::string zip_size_text(std::size_t bytes);

}  // namespace grader
