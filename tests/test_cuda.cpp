// The driver loader, on a machine without a driver: every symbol the grader calls must resolve
// in the toolkit's stub libcuda (whose functions answer CUDA_ERROR_STUB_LIBRARY), so a renamed or
// versioned symbol is caught here rather than on the GPU machine.

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>

#include "cuda/driver_api.hpp"
#include "cuda/resources.hpp"

using namespace grader;

TEST_CASE("every driver function the grader calls resolves, and a stub driver means no GPU") {
    const std::filesystem::path stub = GRADER_CUDA_STUB;
    if (!std::filesystem::exists(stub) || std::filesystem::exists("/dev/nvidiactl")) {
        MESSAGE("no stub libcuda here, or a real driver: the loader is exercised on the GPU instead");
        return;
    }
    ::setenv("GRADER_LIBCUDA", stub.c_str(), 1);
    const cuda::DriverApi& api = cuda::driver();
    CHECK((api.cuLaunchKernel != nullptr));
    CHECK((api.cuMemsetD32Async != nullptr));
    CHECK((api.cuFuncGetParamInfo != nullptr));
    CHECK(api.cuInit(0) == CUDA_ERROR_STUB_LIBRARY);
    CHECK_THROWS_AS(cuda::query_device(0), cuda::DriverUnavailable);
    // The stub cannot name errors: the message still carries the status's number.
    CHECK(cuda::describe(CUDA_ERROR_ILLEGAL_ADDRESS).find("700") != std::string::npos);
}

TEST_CASE("a kernel's faults are told apart from the environment's") {
    CHECK(cuda::is_kernel_fault(CUDA_ERROR_ILLEGAL_ADDRESS));
    CHECK(cuda::is_kernel_fault(CUDA_ERROR_LAUNCH_FAILED));
    CHECK_FALSE(cuda::is_kernel_fault(CUDA_ERROR_NO_DEVICE));
    CHECK_FALSE(cuda::is_kernel_fault(CUDA_ERROR_OUT_OF_MEMORY));
}
