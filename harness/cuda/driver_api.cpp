#include "cuda/driver_api.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <initializer_list>
#include <mutex>

namespace grader::cuda {
namespace {

#define GRADER_STRINGIFY_EXPANDED(name) GRADER_STRINGIFY(name)
#define GRADER_STRINGIFY(name) #name

// Resolves the first of `symbols` that the library has: the name cuda.h maps the function to,
// then older names with the same ABI.
template <typename Fn>
void resolve(void* library, Fn& slot, std::initializer_list<const char*> symbols) {
    for (const char* symbol : symbols) {
        slot = reinterpret_cast<Fn>(dlsym(library, symbol));
        if (slot != nullptr) {
            return;
        }
    }
    throw DriverUnavailable(std::string("the NVIDIA driver library lacks ") + *symbols.begin() +
                            "; it is older than this grader needs (CUDA 12.0)");
}

// The macro argument is expanded first, so cuMemAlloc resolves "cuMemAlloc_v2" and so on: the
// symbol whose ABI matches the declaration in cuda.h.
#define GRADER_RESOLVE(name) resolve(library, api.name, {GRADER_STRINGIFY_EXPANDED(name)})

DriverApi load() {
    // GRADER_LIBCUDA names another driver library: the tests point it at the toolkit's stub, so
    // that every symbol the grader resolves is checked on a machine without a driver.
    const char* override_path = std::getenv("GRADER_LIBCUDA");
    return load_driver(override_path && *override_path ? override_path : "libcuda.so.1");
}

}  // namespace

DriverApi load_driver(const std::string& path) {
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
        const char* why = dlerror();
        throw DriverUnavailable("no NVIDIA driver: " + path + " could not be loaded (" +
                                (why ? why : "unknown reason") + ")");
    }
    DriverApi api;
    GRADER_RESOLVE(cuInit);
    GRADER_RESOLVE(cuDriverGetVersion);
    GRADER_RESOLVE(cuGetErrorName);
    GRADER_RESOLVE(cuGetErrorString);
    GRADER_RESOLVE(cuDeviceGetCount);
    GRADER_RESOLVE(cuDeviceGet);
    GRADER_RESOLVE(cuDeviceGetName);
    GRADER_RESOLVE(cuDeviceGetPCIBusId);
    GRADER_RESOLVE(cuDeviceGetAttribute);
    GRADER_RESOLVE(cuDevicePrimaryCtxRetain);
    GRADER_RESOLVE(cuDevicePrimaryCtxRelease);
    GRADER_RESOLVE(cuCtxSetCurrent);
    GRADER_RESOLVE(cuCtxSynchronize);
    GRADER_RESOLVE(cuModuleLoadData);
    GRADER_RESOLVE(cuModuleUnload);
    GRADER_RESOLVE(cuModuleGetFunction);
    GRADER_RESOLVE(cuFuncGetAttribute);
    GRADER_RESOLVE(cuFuncSetAttribute);
    api.cuFuncGetParamInfo =
        reinterpret_cast<DriverApi::FuncGetParamInfo>(dlsym(library, "cuFuncGetParamInfo"));
    GRADER_RESOLVE(cuOccupancyMaxActiveBlocksPerMultiprocessor);
    GRADER_RESOLVE(cuMemAlloc);
    GRADER_RESOLVE(cuMemFree);
    GRADER_RESOLVE(cuMemcpyHtoD);
    GRADER_RESOLVE(cuMemcpyDtoH);
    GRADER_RESOLVE(cuMemsetD32Async);
    GRADER_RESOLVE(cuStreamCreate);
    GRADER_RESOLVE(cuStreamDestroy);
    GRADER_RESOLVE(cuStreamSynchronize);
    GRADER_RESOLVE(cuEventCreate);
    GRADER_RESOLVE(cuEventDestroy);
    GRADER_RESOLVE(cuEventRecord);
    GRADER_RESOLVE(cuEventSynchronize);
    resolve(library, api.cuEventElapsedTime,
            {GRADER_STRINGIFY_EXPANDED(cuEventElapsedTime), "cuEventElapsedTime"});
    GRADER_RESOLVE(cuLaunchKernel);
    return api;
}

std::optional<std::vector<std::size_t>> kernel_param_sizes(CUfunction function,
                                                           const DriverApi& api) {
    if (api.cuFuncGetParamInfo == nullptr) {
        return std::nullopt;
    }
    std::vector<std::size_t> sizes;
    // Parameters take at most 32764 bytes, so there are at most that many of them.
    for (std::size_t index = 0; index < 32764; ++index) {
        std::size_t offset = 0;
        std::size_t size = 0;
        const CUresult status = api.cuFuncGetParamInfo(function, index, &offset, &size);
        if (status == CUDA_ERROR_INVALID_VALUE) {
            break;  // past the last parameter
        }
        if (status != CUDA_SUCCESS) {
            throw DriverError(status, "cuFuncGetParamInfo(function, " + std::to_string(index) + ")",
                              __FILE__, __LINE__);
        }
        sizes.push_back(size);
    }
    return sizes;
}

DriverError::DriverError(CUresult status, const std::string& call, const char* file, int line)
    : std::runtime_error(describe(status) + " from " + call + " at " + file + ":" +
                         std::to_string(line)),
      status_(status) {}

const DriverApi& driver() {
    // Loaded once; a failure is remembered and reported again to every caller.
    static std::once_flag once;
    static DriverApi api;
    static std::string failure;
    std::call_once(once, [] {
        try {
            api = load();
        } catch (const DriverUnavailable& error) {
            failure = error.what();
        }
    });
    if (!failure.empty()) {
        throw DriverUnavailable(failure);
    }
    return api;
}

std::string describe(CUresult status) {
    const char* name = nullptr;
    const char* text = nullptr;
    try {
        const auto& api = driver();
        api.cuGetErrorName(status, &name);
        api.cuGetErrorString(status, &text);
    } catch (const DriverUnavailable&) {
    }
    std::string out = name ? name : "CUDA error " + std::to_string(static_cast<int>(status));
    if (text) {
        out += std::string(" (") + text + ")";
    }
    return out;
}

bool is_kernel_fault(CUresult status) {
    switch (status) {
        case CUDA_ERROR_ILLEGAL_ADDRESS:
        case CUDA_ERROR_LAUNCH_FAILED:
        case CUDA_ERROR_ASSERT:
        case CUDA_ERROR_HARDWARE_STACK_ERROR:
        case CUDA_ERROR_ILLEGAL_INSTRUCTION:
        case CUDA_ERROR_MISALIGNED_ADDRESS:
        case CUDA_ERROR_INVALID_ADDRESS_SPACE:
        case CUDA_ERROR_INVALID_PC:
        case CUDA_ERROR_LAUNCH_TIMEOUT:
        case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
            return true;
        default:
            return false;
    }
}

}  // namespace grader::cuda
