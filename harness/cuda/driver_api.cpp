#include "cuda/driver_api.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace grader::cuda {
namespace {

#define GRADER_STRINGIFY_EXPANDED(name) GRADER_STRINGIFY(name)
#define GRADER_STRINGIFY(name) #name

template <typename Fn>
void resolve(void* library, Fn& slot, const char* symbol) {
    slot = reinterpret_cast<Fn>(dlsym(library, symbol));
    if (slot == nullptr) {
        throw DriverUnavailable(std::string("the NVIDIA driver library lacks ") + symbol +
                                "; it is older than this grader needs");
    }
}

// The macro argument is expanded first, so cuCtxCreate resolves "cuCtxCreate_v4" and so on:
// the symbol whose ABI matches the declaration in cuda.h.
#define GRADER_RESOLVE(name) resolve(library, api.name, GRADER_STRINGIFY_EXPANDED(name))

DriverApi load() {
    // GRADER_LIBCUDA names another driver library: the tests point it at the toolkit's stub, so
    // that every symbol the grader resolves is checked on a machine without a driver.
    const char* override_path = std::getenv("GRADER_LIBCUDA");
    void* library = dlopen(override_path && *override_path ? override_path : "libcuda.so.1",
                           RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
        const char* why = dlerror();
        throw DriverUnavailable(std::string("no NVIDIA driver: libcuda.so.1 could not be loaded (") +
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
    GRADER_RESOLVE(cuFuncGetParamInfo);
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
    GRADER_RESOLVE(cuEventElapsedTime);
    GRADER_RESOLVE(cuLaunchKernel);
    return api;
}

}  // namespace

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
