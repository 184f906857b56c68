#include "compile/compile_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <system_error>
#include <utility>
#include <vector>

#include "common/files.hpp"
#include "common/text.hpp"
#include "common/version.hpp"
#include "compile/nvrtc_api.hpp"
#include "model/json.hpp"
#include "model/measurements.hpp"

namespace grader {
namespace {

constexpr const char* kMagic = "grader-compile-cache 1\n";
constexpr const char* kNvrtcMagic = "grader-nvrtc-version 1\n";

void add_field(std::string& out, const std::string& field) {
    out += std::to_string(field.size());
    out += '\n';
    out += field;
}

// Reads one length-prefixed field at `at`; false where the text ends early or is malformed.
bool read_field(const std::string& text, std::size_t& at, std::string& field) {
    const std::size_t newline = text.find('\n', at);
    if (newline == std::string::npos || newline == at || newline - at > 12) {
        return false;
    }
    std::uint64_t size = 0;
    for (std::size_t i = at; i < newline; ++i) {
        if (text[i] < '0' || text[i] > '9') {
            return false;
        }
        size = size * 10 + static_cast<std::uint64_t>(text[i] - '0');
    }
    if (size > text.size() - newline - 1) {
        return false;
    }
    field = text.substr(newline + 1, size);
    at = newline + 1 + size;
    return true;
}

// A file as built or installed: its size, modification time and inode.
std::string file_identity(const struct stat& info) {
    return std::to_string(info.st_size) + ":" + std::to_string(info.st_mtim.tv_sec) + "." +
           std::to_string(info.st_mtim.tv_nsec) + ":" + std::to_string(info.st_ino);
}

// The grader executable as built: a rebuilt grader (another compile_kernel) misses.
std::string executable_identity() {
    struct stat info {};
    if (::stat("/proc/self/exe", &info) != 0) {
        return "unknown";
    }
    return file_identity(info);
}

// A folder this user owns and no one else can write: anything else could hand the grade an
// oracle of someone else's making.
bool usable_folder(const std::filesystem::path& folder) {
    std::string why;
    return open_private_folder(folder, why).valid();
}

std::optional<std::string> read_entry(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        return std::nullopt;
    }
    std::string text;
    char buffer[65536];
    for (;;) {
        const ssize_t got = ::read(fd, buffer, sizeof buffer);
        if (got < 0) {
            ::close(fd);
            return std::nullopt;
        }
        if (got == 0) {
            break;
        }
        text.append(buffer, static_cast<std::size_t>(got));
        if (text.size() > (std::size_t{64} << 20)) {
            ::close(fd);
            return std::nullopt;
        }
    }
    ::close(fd);
    return text;
}

std::optional<CompiledKernel> parse_entry(const std::string& text, const std::string& key) {
    const std::string magic = kMagic;
    if (text.compare(0, magic.size(), magic) != 0) {
        return std::nullopt;
    }
    std::size_t at = magic.size();
    std::string stored_key, outcome, ptx, cubin;
    if (!read_field(text, at, stored_key) || stored_key != key || !read_field(text, at, outcome) ||
        !read_field(text, at, ptx) || !read_field(text, at, cubin) || at != text.size()) {
        return std::nullopt;
    }
    const nlohmann::json parsed = nlohmann::json::parse(outcome, nullptr, false);
    if (parsed.is_discarded()) {
        return std::nullopt;
    }
    CompiledKernel kernel;
    try {
        kernel.outcome = parsed.get<CompileOutcome>();
    } catch (const nlohmann::json::exception&) {
        return std::nullopt;
    }
    kernel.ptx = std::move(ptx);
    kernel.cubin = std::move(cubin);
    return kernel;
}

void store_entry(const std::filesystem::path& path, const std::string& key,
                 const CompiledKernel& kernel) {
    std::string text = kMagic;
    add_field(text, key);
    add_field(text, nlohmann::json(kernel.outcome).dump());
    add_field(text, kernel.ptx);
    add_field(text, kernel.cubin);
    try {
        write_file_atomically(path, text, Sharing::owner_only);
    } catch (const std::system_error&) {
        // A cache that cannot be written is a cache that misses next time.
    }
}

}  // namespace

std::optional<std::filesystem::path> default_compile_cache_dir() {
    if (const char* explicit_dir = std::getenv("GRADER_CACHE_DIR");
        explicit_dir != nullptr && *explicit_dir != '\0') {
        if (std::string(explicit_dir) == "off") {
            return std::nullopt;
        }
        return std::filesystem::path(explicit_dir);
    }
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/') {
        return std::filesystem::path(xdg) / "grader" / "kernels";
    }
    if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
        return std::filesystem::path(home) / ".cache" / "grader" / "kernels";
    }
    return std::nullopt;
}

std::string nvrtc_version_cached(const std::optional<std::filesystem::path>& cache_dir) {
    const std::optional<std::filesystem::path> library = nvrtc_library_file();
    struct stat info {};
    if (!cache_dir || !library || ::stat(library->c_str(), &info) != 0 ||
        !usable_folder(*cache_dir)) {
        return nvrtc_version();
    }
    std::string identity;
    add_field(identity, library->string());
    add_field(identity, file_identity(info) + ":" + std::to_string(info.st_dev));
    char name[32];
    std::snprintf(name, sizeof name, "%016llx.nvrtc",
                  static_cast<unsigned long long>(fnv1a(identity)));
    const std::filesystem::path path = *cache_dir / name;
    const std::string magic = kNvrtcMagic;
    if (const auto text = read_entry(path); text && text->compare(0, magic.size(), magic) == 0) {
        std::size_t at = magic.size();
        std::string stored_identity, version;
        if (read_field(*text, at, stored_identity) && stored_identity == identity &&
            read_field(*text, at, version) && at == text->size() && !version.empty() &&
            version.find_first_not_of("0123456789.") == std::string::npos) {
            return version;
        }
    }
    const std::string version = nvrtc_version();
    std::string text = magic;
    add_field(text, identity);
    add_field(text, version);
    try {
        write_file_atomically(path, text, Sharing::owner_only);
    } catch (const std::system_error&) {
        // Not kept: the next grade asks NVRTC again.
    }
    return version;
}

std::string compile_cache_key(const CompileRequest& request, const std::string& nvrtc_version) {
    std::string key;
    add_field(key, kGraderVersion);
    add_field(key, executable_identity());
    add_field(key, nvrtc_version);
    add_field(key, request.arch);
    add_field(key, request.kernel_name);
    add_field(key, request.source_name);
    add_field(key, std::to_string(request.options.size()));
    for (const std::string& option : request.options) {
        add_field(key, option);
    }
    add_field(key, std::to_string(request.headers.size()));
    for (const HeaderSource& header : request.headers) {
        add_field(key, header.include_name);
        add_field(key, header.content);
    }
    add_field(key, request.source);
    return key;
}

CompiledKernel compile_kernel_cached(const CompileRequest& request,
                                     const std::optional<std::filesystem::path>& cache_dir,
                                     bool* hit) {
    if (hit != nullptr) {
        *hit = false;
    }
    if (request.vet || !cache_dir || !usable_folder(*cache_dir)) {
        return compile_kernel(request);
    }
    const std::string key = compile_cache_key(request, nvrtc_version_cached(cache_dir));
    char name[32];
    std::snprintf(name, sizeof name, "%016llx.kernel", static_cast<unsigned long long>(fnv1a(key)));
    const std::filesystem::path path = *cache_dir / name;
    const auto began = std::chrono::steady_clock::now();
    if (const auto text = read_entry(path)) {
        if (auto kernel = parse_entry(*text, key)) {
            if (hit != nullptr) {
                *hit = true;
            }
            // What this grade spent on it: the read, not the compile of whoever stored it.
            kernel->outcome.seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
            return std::move(*kernel);
        }
    }
    CompiledKernel kernel = compile_kernel(request);
    if (kernel.outcome.ok) {
        store_entry(path, key, kernel);
    }
    return kernel;
}

}  // namespace grader
