#pragma once

// An upload, read before anything of it reaches the disk: a multipart/form-data body (what a
// browser's form and `grader submit` send) holding the exercise's files, or a zip of them. Every
// way it can be wrong is an UploadError with the HTTP status to answer and a sentence for the
// student; nothing is written for a refused upload.

#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace grader::serve {

struct UploadLimits {
    std::size_t max_files = 8;                      // files in the form, or kept from a zip
    std::size_t max_zip_entries = 64;               // entries a zip may list, ignored ones included
    std::size_t max_file_bytes = 512 * 1024;        // one file, once unzipped
    std::size_t max_total_bytes = 2 * 1024 * 1024;  // all files, once unzipped
};

class UploadError : public std::runtime_error {
public:
    UploadError(int status, const std::string& message)
        : std::runtime_error(message), status_(status) {}
    int status() const noexcept { return status_; }

private:
    int status_;
};

struct UploadedFile {
    std::string name;  // a plain file name: no folder, no "..", printable
    std::string bytes;
};

struct Upload {
    std::map<std::string, std::string> fields;  // form fields that are not files ("exercise")
    std::vector<UploadedFile> files;            // zips already opened, their files in place
};

// The boundary of a multipart/form-data Content-Type; throws UploadError(415) for another type.
std::string multipart_boundary(std::string_view content_type);

// Reads the body's parts. A part whose file name ends in ".zip" (or whose bytes start as a zip
// does) is opened and replaced by the files it holds (see read_zip). Throws UploadError(400) for
// a body that is not well-formed, too many files, a file name with a folder, ".." or a control
// character, two files of one name; 413 for a file over the limits.
Upload parse_multipart(std::string_view body, std::string_view boundary,
                       const UploadLimits& limits);

// The files of a zip. Folders are walked: files all under one top folder (a zipped folder) are
// taken from it; hidden files and macOS's __MACOSX/ are left out. Refused, naming the entry: a
// symbolic link or any entry that is not a plain file, an absolute name or one with "..", an
// encrypted entry, files in more than one folder, more entries or files than the limits, a file
// larger once unzipped than the limit (whatever its header claims), and an archive that does not
// read as a zip.
std::vector<UploadedFile> read_zip(std::string_view bytes, const std::string& zip_name,
                                   const UploadLimits& limits);

// Whether a name is a plain file name a folder can hold: not empty, at most 255 bytes, UTF-8 with
// no control character, not "." or "..", no '/', '\\' or ':'.
bool plain_file_name(std::string_view name);

}  // namespace grader::serve
