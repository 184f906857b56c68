#pragma once

// The CUDA driver API, loaded with dlopen at run time instead of linked: the grader must start,
// vet, compile and report "ungradable" on a machine that has no NVIDIA driver at all.

#include <cuda.h>

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace grader::cuda {

// A driver call failed. Keeps the status so callers can tell a student's fault (an illegal
// address in their kernel) from the environment's (no device).
class DriverError : public std::runtime_error {
public:
    DriverError(CUresult status, const std::string& call, const char* file, int line);
    CUresult status() const noexcept { return status_; }

private:
    CUresult status_;
};

// The driver could not be loaded or has no usable device.
class DriverUnavailable : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Function pointers with the exact ABI that cuda.h declares (cuda.h maps names such as
// cuCtxCreate to versioned symbols; the loader resolves the same versioned names). Every entry is
// in the CUDA 12.0 driver (the oldest a CUDA 12 toolkit runs on) except where a comment says.
struct DriverApi {
    decltype(&::cuInit) cuInit = nullptr;
    decltype(&::cuDriverGetVersion) cuDriverGetVersion = nullptr;
    decltype(&::cuGetErrorName) cuGetErrorName = nullptr;
    decltype(&::cuGetErrorString) cuGetErrorString = nullptr;
    decltype(&::cuDeviceGetCount) cuDeviceGetCount = nullptr;
    decltype(&::cuDeviceGet) cuDeviceGet = nullptr;
    decltype(&::cuDeviceGetName) cuDeviceGetName = nullptr;
    decltype(&::cuDeviceGetPCIBusId) cuDeviceGetPCIBusId = nullptr;
    decltype(&::cuDeviceGetAttribute) cuDeviceGetAttribute = nullptr;
    decltype(&::cuDevicePrimaryCtxRetain) cuDevicePrimaryCtxRetain = nullptr;
    decltype(&::cuDevicePrimaryCtxRelease) cuDevicePrimaryCtxRelease = nullptr;
    decltype(&::cuCtxSetCurrent) cuCtxSetCurrent = nullptr;
    decltype(&::cuCtxSynchronize) cuCtxSynchronize = nullptr;
    decltype(&::cuModuleLoadData) cuModuleLoadData = nullptr;
    decltype(&::cuModuleUnload) cuModuleUnload = nullptr;
    decltype(&::cuModuleGetFunction) cuModuleGetFunction = nullptr;
    decltype(&::cuFuncGetAttribute) cuFuncGetAttribute = nullptr;
    decltype(&::cuFuncSetAttribute) cuFuncSetAttribute = nullptr;
    // Optional: a CUDA 12.4 driver or newer has it; null on an older one (kernel_param_sizes
    // says so). Declared here rather than with decltype so that CUDA 12.0-12.3 headers, which
    // lack it, still build the grader.
    using FuncGetParamInfo = CUresult(CUDAAPI*)(CUfunction function, std::size_t index,
                                                std::size_t* offset, std::size_t* size);
    FuncGetParamInfo cuFuncGetParamInfo = nullptr;
    decltype(&::cuOccupancyMaxActiveBlocksPerMultiprocessor)
        cuOccupancyMaxActiveBlocksPerMultiprocessor = nullptr;
    decltype(&::cuMemAlloc) cuMemAlloc = nullptr;
    decltype(&::cuMemFree) cuMemFree = nullptr;
    decltype(&::cuMemcpyHtoD) cuMemcpyHtoD = nullptr;
    decltype(&::cuMemcpyDtoH) cuMemcpyDtoH = nullptr;
    decltype(&::cuMemsetD32Async) cuMemsetD32Async = nullptr;
    decltype(&::cuStreamCreate) cuStreamCreate = nullptr;
    decltype(&::cuStreamDestroy) cuStreamDestroy = nullptr;
    decltype(&::cuStreamSynchronize) cuStreamSynchronize = nullptr;
    decltype(&::cuEventCreate) cuEventCreate = nullptr;
    decltype(&::cuEventDestroy) cuEventDestroy = nullptr;
    decltype(&::cuEventRecord) cuEventRecord = nullptr;
    decltype(&::cuEventSynchronize) cuEventSynchronize = nullptr;
    // cuda.h 12.8 and later name cuEventElapsedTime_v2, which an older driver lacks; the
    // original symbol, with the same ABI and the same result once both events have completed,
    // stands in for it there.
    decltype(&::cuEventElapsedTime) cuEventElapsedTime = nullptr;
    decltype(&::cuLaunchKernel) cuLaunchKernel = nullptr;
};

// Loads libcuda.so.1 (or $GRADER_LIBCUDA) once per process. Throws DriverUnavailable with the
// reason if it cannot.
const DriverApi& driver();

// Loads the driver library at `path` afresh, without the once-per-process cache of driver():
// the tests load stand-ins for drivers of other versions with it. Throws DriverUnavailable.
DriverApi load_driver(const std::string& path);

// The size in bytes of each of a loaded kernel's parameters, as the driver reports them
// (cuFuncGetParamInfo); nullopt where the driver is older than CUDA 12.4 and lacks that entry
// point, so the caller keeps the parameter list it read from the PTX. Throws DriverError if the
// driver has the entry point and it fails.
std::optional<std::vector<std::size_t>> kernel_param_sizes(CUfunction function,
                                                           const DriverApi& api = driver());

// "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)".
std::string describe(CUresult status);

// True for the errors that a kernel causes and that poison the context: the student's fault.
bool is_kernel_fault(CUresult status);

}  // namespace grader::cuda

// Calls a driver function through the loaded table; on failure throws DriverError with the
// call's text, file and line.
#define GRADER_DRIVER_CALL(call_expr)                                                          \
    do {                                                                                       \
        const CUresult grader_status_ = ::grader::cuda::driver().call_expr;                    \
        if (grader_status_ != CUDA_SUCCESS) {                                                  \
            throw ::grader::cuda::DriverError(grader_status_, #call_expr, __FILE__, __LINE__); \
        }                                                                                      \
    } while (false)
