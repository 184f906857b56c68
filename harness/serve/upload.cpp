#include "serve/upload.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <utility>

#include "text/text_safety.hpp"

namespace grader::serve {
namespace {

std::string shown(std::string_view name) {
    return "'" + text::shorten(text::visible_line(name), 120) + "'";
}

std::string lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}

// A header's parameter: name="value" or name=value, from a Content-Disposition line.
std::string parameter(std::string_view header, std::string_view name) {
    std::size_t at = 0;
    while ((at = header.find(name, at)) != std::string_view::npos) {
        const bool starts = at == 0 || header[at - 1] == ' ' || header[at - 1] == ';';
        const std::size_t after = at + name.size();
        if (!starts || after >= header.size() || header[after] != '=') {
            at = after;
            continue;
        }
        std::size_t begin = after + 1;
        if (begin < header.size() && header[begin] == '"') {
            ++begin;
            const std::size_t end = header.find('"', begin);
            return std::string(header.substr(
                begin, end == std::string_view::npos ? std::string_view::npos : end - begin));
        }
        const std::size_t end = header.find(';', begin);
        return std::string(header.substr(
            begin, end == std::string_view::npos ? std::string_view::npos : end - begin));
    }
    return {};
}

// Browsers write '"' in a file name as %22 and a newline as %0A, and nothing else that way.
std::string browser_unescape(std::string_view value) {
    std::string out;
    for (std::size_t i = 0; i < value.size(); ++i) {
        if (value[i] == '%' && i + 2 < value.size()) {
            const std::string_view code = value.substr(i, 3);
            if (code == "%22" || code == "%0A" || code == "%0D") {
                out += code == "%22" ? '"' : (code == "%0A" ? '\n' : '\r');
                i += 2;
                continue;
            }
        }
        out += value[i];
    }
    return out;
}

}  // namespace

std::string multipart_boundary(std::string_view content_type) {
    const std::string lowered = lower(content_type);
    if (lowered.rfind("multipart/form-data", 0) != 0) {
        throw UploadError(415,
                          "an upload is sent as multipart/form-data (a form with the files, "
                          "as the page and `grader submit` send it), not as " +
                              shown(content_type.substr(0, content_type.find(';'))));
    }
    const std::string boundary = parameter(content_type, "boundary");
    if (boundary.empty() || boundary.size() > 200) {
        throw UploadError(400, "the upload's Content-Type names no multipart boundary");
    }
    return boundary;
}

Upload parse_multipart(std::string_view body, std::string_view boundary,
                       const UploadLimits& limits) {
    const std::string delimiter = "--" + std::string(boundary);
    Upload upload;
    std::size_t at = body.find(delimiter);
    if (at == std::string_view::npos) {
        throw UploadError(400, "the upload's body is not the multipart form its header says");
    }
    std::set<std::string> names;
    std::size_t parts = 0;
    const auto add_file = [&](UploadedFile file) {
        if (!names.insert(file.name).second) {
            throw UploadError(400,
                              "two files are named " + shown(file.name) + ": send each file once");
        }
        if (upload.files.size() + 1 > limits.max_files) {
            throw UploadError(400, "too many files: at most " + std::to_string(limits.max_files) +
                                       " are taken (the exercise's files, or a zip of them)");
        }
        upload.files.push_back(std::move(file));
    };
    std::size_t total = 0;
    for (;;) {
        at += delimiter.size();
        if (body.substr(at, 2) == "--") {
            break;  // the closing delimiter
        }
        if (body.substr(at, 2) != "\r\n") {
            throw UploadError(400, "the upload's multipart body is not well-formed");
        }
        at += 2;
        const std::size_t headers_end = body.find("\r\n\r\n", at);
        if (headers_end == std::string_view::npos) {
            throw UploadError(400, "a part of the upload has no end to its headers");
        }
        const std::string_view headers = body.substr(at, headers_end - at);
        const std::size_t content_begin = headers_end + 4;
        const std::size_t next = body.find("\r\n" + delimiter, content_begin);
        if (next == std::string_view::npos) {
            throw UploadError(400, "the upload ends before its last part does (was it cut off?)");
        }
        const std::string_view content = body.substr(content_begin, next - content_begin);
        at = next + 2;
        if (++parts > limits.max_files + 4) {
            throw UploadError(400, "too many files: at most " + std::to_string(limits.max_files) +
                                       " are taken (the exercise's files, or a zip of them)");
        }

        std::string disposition;
        std::size_t line_start = 0;
        while (line_start <= headers.size()) {
            const std::size_t line_end = std::min(headers.find("\r\n", line_start), headers.size());
            const std::string_view line = headers.substr(line_start, line_end - line_start);
            if (lower(line.substr(0, 20)) == "content-disposition:") {
                disposition = std::string(line.substr(20));
            }
            line_start = line_end + 2;
        }
        const std::string field = parameter(disposition, "name");
        const bool is_file = disposition.find("filename=") != std::string::npos;
        if (!is_file) {
            if (field.empty() || content.size() > 200 || upload.fields.count(field) != 0) {
                throw UploadError(400, "the upload has a form field that is not understood");
            }
            upload.fields[field] = std::string(content);
            continue;
        }
        std::string name = browser_unescape(parameter(disposition, "filename"));
        if (name.empty() && content.empty()) {
            continue;  // a file input left empty
        }
        // Old browsers send the whole path; the file's own name is what counts.
        const std::size_t slash = name.find_last_of("/\\");
        if (slash != std::string::npos && name.find("..") == std::string::npos) {
            name = name.substr(slash + 1);
        }
        if (!plain_file_name(name)) {
            throw UploadError(400, "the file name " + shown(name) +
                                       " is not a plain file name (no folder, no '..', no "
                                       "control character)");
        }
        if (looks_like_zip(name, content)) {
            for (UploadedFile& file : read_zip(content, name, limits)) {
                total += file.bytes.size();
                add_file(std::move(file));
            }
        } else {
            if (content.size() > limits.max_file_bytes) {
                throw UploadError(413, shown(name) + " is " + zip_size_text(content.size()) +
                                           ": a file may be at most " +
                                           zip_size_text(limits.max_file_bytes));
            }
            total += content.size();
            add_file({name, std::string(content)});
        }
        if (total > limits.max_total_bytes) {
            throw UploadError(413, "the files add up to more than " +
                                       zip_size_text(limits.max_total_bytes) + ", the most taken");
        }
        at = next + 2;
    }
    if (upload.files.empty()) {
        throw UploadError(400,
                          "the upload holds no file: choose the exercise's files (or a zip "
                          "of them) first");
    }
    return upload;
}

std::vector<UploadedFile> read_zip(std::string_view bytes, const std::string& zip_name,
                                   const UploadLimits& limits) {
    try {
        return read_zip_files(bytes, zip_name, limits);
    } catch (const ZipRefused& refused) {
        throw UploadError(refused.why() == ZipRefused::Why::too_large ? 413 : 400, refused.what());
    }
}

}  // namespace grader::serve
