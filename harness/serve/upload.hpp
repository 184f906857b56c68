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

#include "archive/zip_reader.hpp"

namespace grader::serve {

// The limits of a zip apply to the form's files as well.
using UploadLimits = ZipLimits;

class UploadError : public std::runtime_error {
public:
    UploadError(int status, const std::string& message)
        : std::runtime_error(message), status_(status) {}
    int status() const noexcept { return status_; }

private:
    int status_;
};

using UploadedFile = ZippedFile;

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

// The files of a zip (read_zip_files), a refusal being an UploadError: 413 for a size over the
// limits, 400 for anything else.
std::vector<UploadedFile> read_zip(std::string_view bytes, const std::string& zip_name,
                                   const UploadLimits& limits);

using grader::plain_file_name;

}  // namespace grader::serve
