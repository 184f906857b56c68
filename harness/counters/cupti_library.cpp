#include "counters/cupti_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "counters/counters.hpp"
#include "cuda/driver_api.hpp"

namespace grader::counters {
namespace {

#define GRADER_STRINGIFY(name) #name

// Fills `slot` from `library`; false (and the symbol's name in `missing`) when absent.
template <typename Fn>
bool resolve(void* library, Fn& slot, const char* symbol, std::string& missing) {
    slot = reinterpret_cast<Fn>(dlsym(library, symbol));
    if (slot == nullptr && missing.empty()) {
        missing = symbol;
    }
    return slot != nullptr;
}

#define GRADER_RESOLVE_CUPTI(name) resolve(library, api.name, GRADER_STRINGIFY(name), missing)

std::string resolve_all(void* library, CuptiApi& api) {
    std::string missing;
    GRADER_RESOLVE_CUPTI(cuptiGetResultString);
    GRADER_RESOLVE_CUPTI(cuptiGetErrorMessage);
    GRADER_RESOLVE_CUPTI(cuptiProfilerInitialize);
    GRADER_RESOLVE_CUPTI(cuptiProfilerDeInitialize);
    GRADER_RESOLVE_CUPTI(cuptiProfilerDeviceSupported);
    GRADER_RESOLVE_CUPTI(cuptiProfilerGetCounterAvailability);
    GRADER_RESOLVE_CUPTI(cuptiDeviceGetChipName);
    GRADER_RESOLVE_CUPTI(cuptiProfilerHostInitialize);
    GRADER_RESOLVE_CUPTI(cuptiProfilerHostDeinitialize);
    GRADER_RESOLVE_CUPTI(cuptiProfilerHostConfigAddMetrics);
    GRADER_RESOLVE_CUPTI(cuptiProfilerHostGetConfigImageSize);
    GRADER_RESOLVE_CUPTI(cuptiProfilerHostGetConfigImage);
    GRADER_RESOLVE_CUPTI(cuptiProfilerHostGetNumOfPasses);
    GRADER_RESOLVE_CUPTI(cuptiProfilerHostEvaluateToGpuValues);
    GRADER_RESOLVE_CUPTI(cuptiRangeProfilerEnable);
    GRADER_RESOLVE_CUPTI(cuptiRangeProfilerDisable);
    GRADER_RESOLVE_CUPTI(cuptiRangeProfilerGetCounterDataSize);
    GRADER_RESOLVE_CUPTI(cuptiRangeProfilerCounterDataImageInitialize);
    GRADER_RESOLVE_CUPTI(cuptiRangeProfilerSetConfig);
    GRADER_RESOLVE_CUPTI(cuptiRangeProfilerStart);
    GRADER_RESOLVE_CUPTI(cuptiRangeProfilerStop);
    GRADER_RESOLVE_CUPTI(cuptiRangeProfilerPushRange);
    GRADER_RESOLVE_CUPTI(cuptiRangeProfilerPopRange);
    GRADER_RESOLVE_CUPTI(cuptiRangeProfilerDecodeData);
    GRADER_RESOLVE_CUPTI(cuptiRangeProfilerGetCounterDataInfo);
    GRADER_RESOLVE_CUPTI(cuptiSassMetricsGetProperties);
    GRADER_RESOLVE_CUPTI(cuptiSassMetricsSetConfig);
    GRADER_RESOLVE_CUPTI(cuptiSassMetricsUnsetConfig);
    GRADER_RESOLVE_CUPTI(cuptiSassMetricsEnable);
    GRADER_RESOLVE_CUPTI(cuptiSassMetricsDisable);
    GRADER_RESOLVE_CUPTI(cuptiSassMetricsGetDataProperties);
    GRADER_RESOLVE_CUPTI(cuptiSassMetricsFlushData);
    GRADER_RESOLVE_CUPTI(cuptiGetCubinCrc);
    GRADER_RESOLVE_CUPTI(cuptiGetSassToSourceCorrelation);
    return missing;
}

std::string loaded_path(void* library, const std::string& fallback) {
    link_map* map = nullptr;
    if (dlinfo(library, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
        *map->l_name != '\0') {
        return map->l_name;
    }
    return fallback;
}

// The folder of the libcuda the driver table came from, where one is loaded.
std::string driver_folder() {
    try {
        Dl_info info{};
        const void* symbol = reinterpret_cast<const void*>(cuda::driver().cuInit);
        if (dladdr(symbol, &info) != 0 && info.dli_fname != nullptr) {
            return std::filesystem::path(info.dli_fname).parent_path().string();
        }
    } catch (const cuda::DriverUnavailable&) {
    }
    return {};
}

void add_folder(std::vector<std::string>& candidates, const std::filesystem::path& folder) {
    if (folder.empty()) {
        return;
    }
    for (const char* name : {"libcupti.so.13", "libcupti.so.12"}) {
        const std::string path = (folder / name).string();
        bool seen = false;
        for (const auto& existing : candidates) {
            seen = seen || existing == path;
        }
        if (!seen) {
            candidates.push_back(path);
        }
    }
}

void add_toolkit(std::vector<std::string>& candidates, const std::filesystem::path& root) {
    if (root.empty()) {
        return;
    }
    add_folder(candidates, root / "lib64");
    add_folder(candidates, root / "lib");
    add_folder(candidates, root / "extras" / "CUPTI" / "lib64");
}

}  // namespace

CuptiLibrary load_cupti(const std::vector<std::string>& candidates) {
    CuptiLibrary result;
    std::string tried;
    for (const std::string& candidate : candidates) {
        const bool is_path = candidate.find('/') != std::string::npos;
        if (is_path && !std::filesystem::exists(candidate)) {
            if (candidates.size() == 1) {  // GRADER_LIBCUPTI names a file that is not there
                tried = candidate + ": no such file";
            }
            continue;
        }
        void* library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (library == nullptr) {
            const char* why = dlerror();
            tried += (tried.empty() ? "" : "; ") + candidate + ": " + (why ? why : "not loaded");
            continue;
        }
        CuptiApi api;
        const std::string missing = resolve_all(library, api);
        if (!missing.empty()) {
            // An older CUPTI without the CUDA 13 profiling APIs; the next candidate may have them.
            tried += (tried.empty() ? "" : "; ") + candidate + " lacks " + missing;
            continue;
        }
        result.loaded = true;
        result.path = loaded_path(library, candidate);
        result.api = api;
        const auto folder = std::filesystem::path(result.path).parent_path();
        for (const char* helper : {"libnvperf_host.so", "libnvperf_target.so"}) {
            const auto helper_path = folder / helper;
            if (!folder.empty() && std::filesystem::exists(helper_path)) {
                dlopen(helper_path.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept for the process
            }
        }
        return result;
    }
    result.why_not =
        "CUPTI with the CUDA 13 profiling APIs was not found (libcupti.so.13 or .12 beside the "
        "driver, in the CUDA toolkit or on the loader's path" +
        (tried.empty() ? std::string(")") : "; " + tried + ")") +
        ", so the hardware's counts are not available";
    return result;
}

std::vector<std::string> cupti_candidates() {
    const char* override_path = std::getenv("GRADER_LIBCUPTI");
    if (override_path != nullptr && *override_path != '\0') {
        return {override_path};
    }
    std::vector<std::string> candidates;
    add_folder(candidates, driver_folder());
    for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
        const char* root = std::getenv(variable);
        if (root != nullptr && *root != '\0') {
            add_toolkit(candidates, root);
        }
    }
#ifdef GRADER_CUDA_TOOLKIT_LIBRARY_DIR
    const std::filesystem::path built_with = GRADER_CUDA_TOOLKIT_LIBRARY_DIR;
    add_folder(candidates, built_with);
    add_toolkit(candidates, built_with.parent_path());
#endif
    add_toolkit(candidates, "/usr/local/cuda");
    candidates.push_back("libcupti.so.13");
    candidates.push_back("libcupti.so.12");
    return candidates;
}

void load_counter_libraries() {
    static_cast<void>(cupti());
}

const CuptiLibrary& cupti() {
    static std::once_flag once;
    static CuptiLibrary library;
    std::call_once(once, [] { library = load_cupti(cupti_candidates()); });
    return library;
}

}  // namespace grader::counters
