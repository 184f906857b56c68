// Reading a zip a student handed in, in memory, through minizip: every way it can be a trap
// (a link, a name that climbs out, a bomb, an encrypted or damaged entry) refused, naming the
// entry (zip_reader.hpp).

#include "archive/zip_reader.hpp"

#include <ioapi.h>
#include <sys/stat.h>
#include <unzip.h>
#include <zconf.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "text/text_safety.hpp"

namespace grader {
namespace {

[[noreturn]] void refuse(const std::string& message) {
    throw ZipRefused(ZipRefused::Why::refused, message);
}

[[noreturn]] void refuse_as_too_large(const std::string& message) {
    throw ZipRefused(ZipRefused::Why::too_large, message);
}

std::string shown(std::string_view name) {
    return "'" + text::shorten(text::visible_line(name), 120) + "'";
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

bool looks_like_zip(const std::string& name, std::string_view bytes) {
    std::string lowered = name;
    for (char& c : lowered) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return (lowered.size() > 4 && lowered.compare(lowered.size() - 4, 4, ".zip") == 0) ||
           bytes.substr(0, 4) == std::string_view("PK\x03\x04", 4) ||
           bytes.substr(0, 4) == std::string_view("PK\x05\x06", 4);
}

std::string zip_size_text(std::size_t bytes) {
    if (bytes >= 1024 * 1024) {
        return std::to_string(bytes / (1024 * 1024)) + "." +
               std::to_string(bytes % (1024 * 1024) * 10 / (1024 * 1024)) + " MB";
    }
    return std::to_string((bytes + 1023) / 1024) + " KB";
}

bool plain_file_name(std::string_view name) {
    if (name.empty() || name.size() > 255 || name == "." || name == ".." ||
        name.find_first_of("/\\:") != std::string_view::npos) {
        return false;
    }
    return text::first_invalid_utf8(name) == std::string_view::npos &&
           text::visible_line(name) == name;
}

std::vector<ZippedFile> read_zip_files(std::string_view bytes, const std::string& zip_name,
                                       const ZipLimits& limits) {
    const std::string zip = shown(zip_name);
    MemoryZip memory{bytes, 0};
    OpenZip archive(memory);
    unz_global_info64 global{};
    if (archive.get() == nullptr || unzGetGlobalInfo64(archive.get(), &global) != UNZ_OK) {
        refuse(zip + " cannot be read as a zip archive");
    }
    if (global.number_entry > limits.max_zip_entries) {
        refuse(zip + " lists " + std::to_string(global.number_entry) +
               " entries: too many files (at most " + std::to_string(limits.max_zip_entries) + ")");
    }
    struct Entry {
        std::vector<std::string> folders;
        std::string path;  // as the zip names it, for a refusal that names two entries
        ZippedFile file;
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
            throw ZipRefused(ZipRefused::Why::refused,
                             zip + ": entry " + std::to_string(index + 1) + " cannot be read");
        }
        const std::string name(raw_name,
                               std::min<std::size_t>(info.size_filename, sizeof raw_name - 1));
        const std::string entry = zip + ": " + shown(name);
        if (name.empty() || name[0] == '/' || name[0] == '\\' ||
            (name.size() > 1 && name[1] == ':')) {
            refuse(entry +
                   " has an absolute name: a zip may only hold names "
                   "relative to itself");
        }
        std::vector<std::string> parts = split_path(name);
        if (std::find(parts.begin(), parts.end(), "..") != parts.end()) {
            refuse(entry + " climbs out of the zip with '..': refused");
        }
        const bool is_folder = name.back() == '/' || name.back() == '\\';
        // Unix's file type, where the zip was made on a Unix (made-by host 3).
        const unsigned host = static_cast<unsigned>(info.version >> 8);
        const unsigned mode = static_cast<unsigned>(info.external_fa >> 16);
        if (host == 3 && (mode & S_IFMT) != 0) {
            if ((mode & S_IFMT) == S_IFLNK) {
                refuse(entry +
                       " is a symbolic link: a zip may only hold "
                       "plain files (zip it with the files themselves)");
            }
            if ((mode & S_IFMT) != S_IFREG && (mode & S_IFMT) != S_IFDIR) {
                refuse(entry + " is not a plain file");
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
            refuse(entry + " is not a plain file name");
        }
        if ((info.flag & 1u) != 0) {
            refuse(entry + " is encrypted: zip it without a password");
        }
        if (info.uncompressed_size > limits.max_file_bytes) {
            refuse_as_too_large(entry + " is " + zip_size_text(info.uncompressed_size) +
                                " unzipped: a file may be at most " +
                                zip_size_text(limits.max_file_bytes));
        }
        if (unzOpenCurrentFile(archive.get()) != UNZ_OK) {
            refuse(entry + " cannot be unzipped");
        }
        std::string content;
        char buffer[16384];
        int got = 0;
        // The header's size is a claim: reading stops one byte past the limit, whatever it said.
        while ((got = unzReadCurrentFile(archive.get(), buffer, sizeof buffer)) > 0) {
            content.append(buffer, static_cast<std::size_t>(got));
            if (content.size() > limits.max_file_bytes) {
                unzCloseCurrentFile(archive.get());
                refuse_as_too_large(entry +
                                    " is larger unzipped than its header says, and "
                                    "more than " +
                                    zip_size_text(limits.max_file_bytes));
            }
        }
        const int closed = unzCloseCurrentFile(archive.get());
        if (got < 0 || closed != UNZ_OK) {
            refuse(entry +
                   " cannot be unzipped (a damaged archive: its CRC "
                   "or its data is wrong)");
        }
        total += content.size();
        if (total > limits.max_total_bytes) {
            refuse_as_too_large(zip + " unzips to more than " +
                                zip_size_text(limits.max_total_bytes) + ", the most taken");
        }
        entries.push_back({parts, name, {base, std::move(content)}});
        if (entries.size() > limits.max_files) {
            refuse(zip + " holds too many files: at most " + std::to_string(limits.max_files) +
                   " are taken");
        }
    }
    if (status != UNZ_END_OF_LIST_OF_FILE) {
        refuse(zip + " cannot be read to its end (a damaged archive)");
    }
    // Checked before any file is moved out, so that the refusal names both entries whole.
    for (const Entry& entry : entries) {
        if (entry.folders != entries.front().folders) {
            refuse(zip + " holds files in more than one folder (" + shown(entries.front().path) +
                   " and " + shown(entry.path) +
                   "): zip the files, or the one folder holding them");
        }
    }
    std::vector<ZippedFile> files;
    for (Entry& entry : entries) {
        files.push_back(std::move(entry.file));
    }
    if (files.empty()) {
        refuse(zip + " holds no file");
    }
    return files;
}

}  // namespace grader
