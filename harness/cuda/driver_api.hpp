#pragma once

// The CUDA driver API, loaded with dlopen at run time instead of linked: the grader must start,
// vet, compile and report "ungradable" on a machine that has no NVIDIA driver at all.

#include <cuda.h>

#include <stdexcept>
#include <string>

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
// cuCtxCreate to versioned symbols; the loader resolves the same versioned names).
struct DriverApi {
    decltype(&::cuInit) cuInit = nullptr;
    decltype(&::cuDriverGetVersion) cuDriverGetVersion = nullptr;
    decltype(&::cuGetErrorName) cuGetErrorName = nullptr;
    decltype(&::cuGetErrorString) cuGetErrorString = nullptr;
    decltype(&::cuDeviceGetCount) cuDeviceGetCount = nullptr;
    decltype(&::cuDeviceGet) cuDeviceGet = nullptr;
    decltype(&::cuDeviceGetName) cuDeviceGetName = nullptr;
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
    decltype(&::cuFuncGetParamInfo) cuFuncGetParamInfo = nullptr;
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
    decltype(&::cuEventElapsedTime) cuEventElapsedTime = nullptr;
    decltype(&::cuLaunchKernel) cuLaunchKernel = nullptr;
};

// Loads libcuda.so.1 once per process. Throws DriverUnavailable with the reason if it cannot.
const DriverApi& driver();

// "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)".
std::string describe(CUresult status);

// True for the errors that a kernel causes and that poison the context: the student's fault.
bool is_kernel_fault(CUresult status);

}  // namespace grader::cuda

// Calls a driver function through the loaded table; on failure throws DriverError with the
// call's text, file and line.
#define GRADER_DRIVER_CALL(call_expr)                                                          \
    do {                                                                                      \
        const CUresult grader_status_ = ::grader::cuda::driver().call_expr;                   \
        if (grader_status_ != CUDA_SUCCESS) {                                                 \
            throw ::grader::cuda::DriverError(grader_status_, #call_expr, __FILE__, __LINE__); \
        }                                                                                     \
    } while (false)
