#include "compile/nvrtc_library.hpp"

#include <dlfcn.h>
#include <nvrtc.h>

#include <filesystem>
#include <mutex>
#include <system_error>
#include <vector>

#include "compile/compile.hpp"
#include "compile/nvrtc_api.hpp"

namespace grader {
namespace {

std::string dl_error_text() {
    const char* why = dlerror();
    return why != nullptr ? why : "unknown reason";
}

// The folder the running libnvrtc was loaded from, by asking the loader where nvrtcVersion lives.
std::filesystem::path nvrtc_folder() {
    Dl_info info{};
    try {
        if (dladdr(reinterpret_cast<void*>(nvrtc().nvrtcVersion), &info) == 0 ||
            info.dli_fname == nullptr) {
            return {};
        }
    } catch (const NvrtcError&) {
        return {};  // not loaded: the compile says why
    }
    std::error_code error;
    const auto resolved = std::filesystem::canonical(info.dli_fname, error);
    return error ? std::filesystem::path(info.dli_fname).parent_path() : resolved.parent_path();
}

NvrtcBuiltins load() {
    NvrtcBuiltins result;
    const std::string name = nvrtc_builtins_name();
    if (name.empty()) {
        result.error = "nvrtcVersion failed";
        return result;
    }
    std::vector<std::string> candidates;
    if (const auto folder = nvrtc_folder(); !folder.empty()) {
        candidates.push_back((folder / name).string());
    }
    candidates.push_back(name);  // the loader's own search, as NVRTC would do it
    for (const std::string& candidate : candidates) {
        if (dlopen(candidate.c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr) {
            result.loaded = true;
            result.path = candidate;
            result.error.clear();
            return result;
        }
        result.error += (result.error.empty() ? "" : "; ") + dl_error_text();
    }
    return result;
}

}  // namespace

std::string nvrtc_library_folder() {
    // Once: a confined process can no longer resolve the links on the way to it.
    static const std::string folder = nvrtc_folder().string();
    return folder;
}

std::string nvrtc_builtins_name() {
    int major = 0;
    int minor = 0;
    try {
        if (nvrtc().nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) {
            return {};
        }
    } catch (const NvrtcError&) {
        return {};
    }
    return "libnvrtc-builtins.so." + std::to_string(major) + "." + std::to_string(minor);
}

const NvrtcBuiltins& load_nvrtc_builtins() {
    static std::once_flag once;
    static NvrtcBuiltins builtins;
    std::call_once(once, [] { builtins = load(); });
    return builtins;
}

}  // namespace grader
