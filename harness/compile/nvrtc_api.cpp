#include "compile/nvrtc_api.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>

#include "compile/compile.hpp"

namespace grader {
namespace {

// What the grader is to do where NVRTC cannot be used, as its message ends.
constexpr const char* kWhatToFix =
    "; install the CUDA toolkit's NVRTC that the grader was built with (libnvrtc of CUDA 12 or "
    "13), or build the grader again against the toolkit this machine has";

template <typename Fn>
void resolve(void* library, Fn& slot, const char* symbol) {
    slot = reinterpret_cast<Fn>(dlsym(library, symbol));
    if (slot == nullptr) {
        throw NvrtcError(NVRTC_ERROR_INTERNAL_ERROR, "dlsym",
                         std::string("NVRTC failed on the grading machine, not because of the "
                                     "submission: its library ") +
                             nvrtc_library_name() + " lacks " + symbol + kWhatToFix + ".",
                         {});
    }
}

#define GRADER_RESOLVE_NVRTC(name) resolve(library, api.name, #name)

// GRADER_LIBNVRTC names another NVRTC library, as GRADER_LIBCUDA another driver: the tests point
// it at a missing file to see the grade of a machine without NVRTC.
const char* library_override() {
    const char* path = std::getenv("GRADER_LIBNVRTC");
    return path != nullptr && *path != '\0' ? path : nullptr;
}

NvrtcApi load() {
    const char* override_path = library_override();
    // RTLD_GLOBAL as a linked library would be: NVRTC's own dlopen of its builtins finds them by
    // soname among the libraries loaded (harness/compile/nvrtc_library.hpp).
    void* library =
        dlopen(override_path ? override_path : nvrtc_library_name(), RTLD_NOW | RTLD_GLOBAL);
    if (library == nullptr) {
        const char* why = dlerror();
        throw NvrtcError(NVRTC_ERROR_INTERNAL_ERROR, "dlopen",
                         std::string("NVRTC could not be loaded on the grading machine, not "
                                     "because of the submission: ") +
                             (override_path ? override_path : nvrtc_library_name()) + " (" +
                             (why ? why : "unknown reason") + ")" + kWhatToFix + ".",
                         {});
    }
    NvrtcApi api;
    GRADER_RESOLVE_NVRTC(nvrtcVersion);
    GRADER_RESOLVE_NVRTC(nvrtcGetErrorString);
    GRADER_RESOLVE_NVRTC(nvrtcCreateProgram);
    GRADER_RESOLVE_NVRTC(nvrtcDestroyProgram);
    GRADER_RESOLVE_NVRTC(nvrtcAddNameExpression);
    GRADER_RESOLVE_NVRTC(nvrtcCompileProgram);
    GRADER_RESOLVE_NVRTC(nvrtcGetLoweredName);
    GRADER_RESOLVE_NVRTC(nvrtcGetProgramLogSize);
    GRADER_RESOLVE_NVRTC(nvrtcGetProgramLog);
    GRADER_RESOLVE_NVRTC(nvrtcGetPTXSize);
    GRADER_RESOLVE_NVRTC(nvrtcGetPTX);
    GRADER_RESOLVE_NVRTC(nvrtcGetCUBINSize);
    GRADER_RESOLVE_NVRTC(nvrtcGetCUBIN);
    return api;
}

}  // namespace

const char* nvrtc_library_name() {
    return GRADER_NVRTC_LIBRARY;
}

std::optional<std::filesystem::path> nvrtc_library_file() {
    std::error_code error;
    if (const char* override_path = library_override()) {
        if (!std::filesystem::is_regular_file(override_path, error))
            return std::nullopt;
        return std::filesystem::path(override_path);
    }
    const std::string folder = GRADER_NVRTC_RUNPATH;
    if (folder.empty() || folder.find(':') != std::string::npos) {
        return std::nullopt;
    }
    const std::filesystem::path file = std::filesystem::path(folder) / nvrtc_library_name();
    if (!std::filesystem::is_regular_file(file, error)) {
        return std::nullopt;
    }
    return file;
}

const NvrtcApi& nvrtc() {
    // Loaded once; a failure is remembered and thrown again to every caller.
    static std::once_flag once;
    static NvrtcApi api;
    static std::optional<NvrtcError> failure;
    std::call_once(once, [] {
        try {
            api = load();
        } catch (const NvrtcError& error) {
            failure = error;
        }
    });
    if (failure) {
        throw *failure;
    }
    return api;
}

}  // namespace grader
