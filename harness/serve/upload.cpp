#include "serve/upload.hpp"

#include <ioapi.h>
#include <sys/stat.h>
#include <unzip.h>
#include <zconf.h>

#include <algorithm>
#include <cctype>
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

std::string size_text(std::size_t bytes) {
    if (bytes >= 1024 * 1024) {
        return std::to_string(bytes / (1024 * 1024)) + "." +
               std::to_string(bytes % (1024 * 1024) * 10 / (1024 * 1024)) + " MB";
    }
    return std::to_string((bytes + 1023) / 1024) + " KB";
}

bool is_zip(const std::string& name, std::string_view bytes) {
    const std::string lowered = lower(name);
    return (lowered.size() > 4 && lowered.compare(lowered.size() - 4, 4, ".zip") == 0) ||
           bytes.substr(0, 4) == std::string_view("PK\x03\x04", 4) ||
           bytes.substr(0, 4) == std::string_view("PK\x05\x06", 4);
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

// A zip read from memory through minizip's file functions.
struct MemoryZip {
    std::string_view bytes;
    std::size_t position = 0;
};

voidpf ZCALLBACK zip_open(voidpf opaque, const void*, int) {
    return opaque;
}
uLong ZCALLBACK zip_read(voidpf, voidpf stream, void* buffer, uLong size) {
    auto* zip = static_cast<MemoryZip*>(stream);
    const std::size_t count =
        std::min<std::size_t>(size, zip->bytes.size() - std::min(zip->position, zip->bytes.size()));
    std::memcpy(buffer, zip->bytes.data() + zip->position, count);
    zip->position += count;
    return static_cast<uLong>(count);
}
uLong ZCALLBACK zip_write(voidpf, voidpf, const void*, uLong) {
    return 0;
}
ZPOS64_T ZCALLBACK zip_tell(voidpf, voidpf stream) {
    return static_cast<MemoryZip*>(stream)->position;
}
long ZCALLBACK zip_seek(voidpf, voidpf stream, ZPOS64_T offset, int origin) {
    auto* zip = static_cast<MemoryZip*>(stream);
    std::size_t base = 0;
    if (origin == ZLIB_FILEFUNC_SEEK_CUR) {
        base = zip->position;
    } else if (origin == ZLIB_FILEFUNC_SEEK_END) {
        base = zip->bytes.size();
    }
    if (offset > zip->bytes.size() || base + offset > zip->bytes.size()) {
        return -1;
    }
    zip->position = base + static_cast<std::size_t>(offset);
    return 0;
}
int ZCALLBACK zip_close(voidpf, voidpf) {
    return 0;
}
int ZCALLBACK zip_error(voidpf, voidpf) {
    return 0;
}

class OpenZip {
public:
    explicit OpenZip(MemoryZip& memory) {
        zlib_filefunc64_def functions{};
        functions.zopen64_file = zip_open;
        functions.zread_file = zip_read;
        functions.zwrite_file = zip_write;
        functions.ztell64_file = zip_tell;
        functions.zseek64_file = zip_seek;
        functions.zclose_file = zip_close;
        functions.zerror_file = zip_error;
        functions.opaque = &memory;
        handle_ = unzOpen2_64("upload.zip", &functions);
    }
    ~OpenZip() {
        if (handle_ != nullptr) {
            unzClose(handle_);
        }
    }
    OpenZip(const OpenZip&) = delete;
    OpenZip& operator=(const OpenZip&) = delete;
    unzFile get() const { return handle_; }

private:
    unzFile handle_ = nullptr;
};

std::vector<std::string> split_path(const std::string& name) {
    std::vector<std::string> parts;
    std::string part;
    for (const char c : name) {
        if (c == '/' || c == '\\') {
            parts.push_back(part);
            part.clear();
        } else {
            part += c;
        }
    }
    parts.push_back(part);
    return parts;
}

}  // namespace

bool plain_file_name(std::string_view name) {
    if (name.empty() || name.size() > 255 || name == "." || name == ".." ||
        name.find_first_of("/\\:") != std::string_view::npos) {
        return false;
    }
    return text::first_invalid_utf8(name) == std::string_view::npos &&
           text::visible_line(name) == name;
}

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
        if (is_zip(name, content)) {
            for (UploadedFile& file : read_zip(content, name, limits)) {
                total += file.bytes.size();
                add_file(std::move(file));
            }
        } else {
            if (content.size() > limits.max_file_bytes) {
                throw UploadError(413, shown(name) + " is " + size_text(content.size()) +
                                           ": a file may be at most " +
                                           size_text(limits.max_file_bytes));
            }
            total += content.size();
            add_file({name, std::string(content)});
        }
        if (total > limits.max_total_bytes) {
            throw UploadError(413, "the files add up to more than " +
                                       size_text(limits.max_total_bytes) + ", the most taken");
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
    const std::string zip = shown(zip_name);
    MemoryZip memory{bytes, 0};
    OpenZip archive(memory);
    unz_global_info64 global{};
    if (archive.get() == nullptr || unzGetGlobalInfo64(archive.get(), &global) != UNZ_OK) {
        throw UploadError(400, zip + " cannot be read as a zip archive");
    }
    if (global.number_entry > limits.max_zip_entries) {
        throw UploadError(400, zip + " lists " + std::to_string(global.number_entry) +
                                   " entries: too many files (at most " +
                                   std::to_string(limits.max_zip_entries) + ")");
    }
    struct Entry {
        std::vector<std::string> folders;
        UploadedFile file;
    };
    std::vector<Entry> entries;
    std::size_t total = 0;
    int status = unzGoToFirstFile(archive.get());
    for (std::uint64_t index = 0; status == UNZ_OK;
         ++index, status = unzGoToNextFile(archive.get())) {
        unz_file_info64 info{};
        char raw_name[1024];
        if (unzGetCurrentFileInfo64(archive.get(), &info, raw_name, sizeof raw_name, nullptr, 0,
                                    nullptr, 0) != UNZ_OK) {
            throw UploadError(400,
                              zip + ": entry " + std::to_string(index + 1) + " cannot be read");
        }
        const std::string name(raw_name,
                               std::min<std::size_t>(info.size_filename, sizeof raw_name - 1));
        const std::string entry = zip + ": " + shown(name);
        if (name.empty() || name[0] == '/' || name[0] == '\\' ||
            (name.size() > 1 && name[1] == ':')) {
            throw UploadError(400, entry +
                                       " has an absolute name: a zip may only hold names "
                                       "relative to itself");
        }
        std::vector<std::string> parts = split_path(name);
        if (std::find(parts.begin(), parts.end(), "..") != parts.end()) {
            throw UploadError(400, entry + " climbs out of the zip with '..': refused");
        }
        const bool is_folder = name.back() == '/' || name.back() == '\\';
        // Unix's file type, where the zip was made on a Unix (made-by host 3).
        const unsigned host = static_cast<unsigned>(info.version >> 8);
        const unsigned mode = static_cast<unsigned>(info.external_fa >> 16);
        if (host == 3 && (mode & S_IFMT) != 0) {
            if ((mode & S_IFMT) == S_IFLNK) {
                throw UploadError(400, entry +
                                           " is a symbolic link: a zip may only hold "
                                           "plain files (zip it with the files themselves)");
            }
            if ((mode & S_IFMT) != S_IFREG && (mode & S_IFMT) != S_IFDIR) {
                throw UploadError(400, entry + " is not a plain file");
            }
        }
        if (is_folder || (host == 3 && (mode & S_IFMT) == S_IFDIR)) {
            continue;
        }
        std::string base = parts.back();
        parts.pop_back();
        const bool hidden = base.empty() || base[0] == '.' ||
                            std::any_of(parts.begin(), parts.end(), [](const std::string& part) {
                                return part == "__MACOSX" || (!part.empty() && part[0] == '.');
                            });
        if (hidden) {
            continue;  // .DS_Store, __MACOSX/._probe.cu: what an archiver adds, not the student
        }
        if (!plain_file_name(base)) {
            throw UploadError(400, entry + " is not a plain file name");
        }
        if ((info.flag & 1u) != 0) {
            throw UploadError(400, entry + " is encrypted: zip it without a password");
        }
        if (info.uncompressed_size > limits.max_file_bytes) {
            throw UploadError(413, entry + " is " + size_text(info.uncompressed_size) +
                                       " unzipped: a file may be at most " +
                                       size_text(limits.max_file_bytes));
        }
        if (unzOpenCurrentFile(archive.get()) != UNZ_OK) {
            throw UploadError(400, entry + " cannot be unzipped");
        }
        std::string content;
        char buffer[16384];
        int got = 0;
        // The header's size is a claim: reading stops one byte past the limit, whatever it said.
        while ((got = unzReadCurrentFile(archive.get(), buffer, sizeof buffer)) > 0) {
            content.append(buffer, static_cast<std::size_t>(got));
            if (content.size() > limits.max_file_bytes) {
                unzCloseCurrentFile(archive.get());
                throw UploadError(413, entry +
                                           " is larger unzipped than its header says, and "
                                           "more than " +
                                           size_text(limits.max_file_bytes));
            }
        }
        const int closed = unzCloseCurrentFile(archive.get());
        if (got < 0 || closed != UNZ_OK) {
            throw UploadError(400, entry +
                                       " cannot be unzipped (a damaged archive: its CRC "
                                       "or its data is wrong)");
        }
        total += content.size();
        if (total > limits.max_total_bytes) {
            throw UploadError(413, zip + " unzips to more than " +
                                       size_text(limits.max_total_bytes) + ", the most taken");
        }
        entries.push_back({parts, {base, std::move(content)}});
        if (entries.size() > limits.max_files) {
            throw UploadError(400, zip + " holds too many files: at most " +
                                       std::to_string(limits.max_files) + " are taken");
        }
    }
    if (status != UNZ_END_OF_LIST_OF_FILE) {
        throw UploadError(400, zip + " cannot be read to its end (a damaged archive)");
    }
    std::vector<UploadedFile> files;
    for (Entry& entry : entries) {
        if (entry.folders != entries.front().folders) {
            throw UploadError(400, zip + " holds files in more than one folder (" +
                                       shown(entries.front().file.name) + " and " +
                                       shown(entry.file.name) +
                                       "): zip the files, or the one folder holding them");
        }
        files.push_back(std::move(entry.file));
    }
    if (files.empty()) {
        throw UploadError(400, zip + " holds no file");
    }
    return files;
}

}  // namespace grader::serve
