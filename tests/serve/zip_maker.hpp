#pragma once

// Zips made for the tests of `grader serve`'s uploads, through minizip's writer: plain files,
// folders, a symbolic link (a Unix entry whose mode says so), names with "..".

#include <fcntl.h>
#include <minizip/zip.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zconf.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "grader_run.hpp"  // read_text, which the serve tests take from here

namespace grader::testing {

struct ZipEntry {
    std::string name;
    std::string bytes;
    unsigned mode = S_IFREG | 0644;  // S_IFLNK | 0777 makes a link whose target is `bytes`
    bool unix_entry = true;          // made on a Unix (host 3), so the mode is read
};

inline std::string make_zip(const std::vector<ZipEntry>& entries) {
    const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                       ("grader-test-zip-" + std::to_string(::getpid()) + ".zip");
    zipFile zip = zipOpen(file.c_str(), APPEND_STATUS_CREATE);
    for (const ZipEntry& entry : entries) {
        zip_fileinfo info{};
        info.external_fa = static_cast<uLong>(entry.mode) << 16;
        zipOpenNewFileInZip4(zip, entry.name.c_str(), &info, nullptr, 0, nullptr, 0, nullptr,
                             Z_DEFLATED, Z_DEFAULT_COMPRESSION, 0, -MAX_WBITS, DEF_MEM_LEVEL,
                             Z_DEFAULT_STRATEGY, nullptr, 0,
                             entry.unix_entry ? (3u << 8) | 20u : 20u, 0);
        zipWriteInFileInZip(zip, entry.bytes.data(), static_cast<unsigned>(entry.bytes.size()));
        zipCloseFileInZip(zip);
    }
    zipClose(zip, nullptr);
    std::ifstream in(file, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    std::filesystem::remove(file);
    return bytes.str();
}

}  // namespace grader::testing
