// The driver loader, on a machine without a driver: every symbol the grader calls must resolve
// in the toolkit's stub libcuda (whose functions answer CUDA_ERROR_STUB_LIBRARY), so a renamed or
// versioned symbol is caught here rather than on the GPU machine.

#include <cuda.h>
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "cuda/driver_api.hpp"
#include "cuda/resources.hpp"
#include "test_paths.hpp"

using namespace grader;

namespace {

bool stub_driver_here() {
    return std::filesystem::exists(GRADER_CUDA_STUB);
}

bool real_driver_here() {
    return std::filesystem::exists("/dev/nvidiactl");
}

}  // namespace

// Skipped (and reported so) where the toolkit has no stub libcuda, or where a real driver is
// installed: there the loader is exercised on the GPU instead.
TEST_CASE("every driver function the grader calls resolves, and a stub driver means no GPU" *
          doctest::test_suite("stub_driver") *
          doctest::skip(!stub_driver_here() || real_driver_here())) {
    const std::filesystem::path stub = GRADER_CUDA_STUB;
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

TEST_CASE("a CUDA 12.0 driver loads without the entry points added since, and says so") {
    const cuda::DriverApi api =
        cuda::load_driver(grader::testing::from_test_program(GRADER_DRIVER_CUDA_12_0));
    int version = 0;
    REQUIRE(api.cuDriverGetVersion(&version) == CUDA_SUCCESS);
    CHECK(version == 12000);
    // cuda.h of CUDA 12.8 and later names cuEventElapsedTime_v2; the 12.0 symbol stands in.
    CHECK((api.cuEventElapsedTime != nullptr));
    CHECK((api.cuFuncGetParamInfo == nullptr));
    // The caller keeps the parameter list read from the PTX instead of failing the grade.
    CHECK_FALSE(cuda::kernel_param_sizes(nullptr, api).has_value());
}

TEST_CASE("a driver that has cuFuncGetParamInfo is asked, and its failure is the driver's" *
          doctest::test_suite("stub_driver") * doctest::skip(!stub_driver_here())) {
    const std::filesystem::path stub = GRADER_CUDA_STUB;
    const cuda::DriverApi api = cuda::load_driver(stub.string());
    REQUIRE((api.cuFuncGetParamInfo != nullptr));
    try {
        cuda::kernel_param_sizes(nullptr, api);
        FAIL("the stub's CUDA_ERROR_STUB_LIBRARY was taken for a parameter list");
    } catch (const cuda::DriverError& error) {
        CHECK(error.status() == CUDA_ERROR_STUB_LIBRARY);
        CHECK(std::string(error.what()).find("cuFuncGetParamInfo") != std::string::npos);
    }
}

TEST_CASE("a library that is not a driver is refused, naming the entry point it lacks") {
    try {
        cuda::load_driver("libm.so.6");
        FAIL("libm was taken for a driver");
    } catch (const cuda::DriverUnavailable& error) {
        CHECK(std::string(error.what()).find("lacks cuInit") != std::string::npos);
    }
    try {
        cuda::load_driver("/nonexistent/libcuda.so.1");
        FAIL("a missing library was loaded");
    } catch (const cuda::DriverUnavailable& error) {
        CHECK(std::string(error.what()).find("/nonexistent/libcuda.so.1 could not be loaded") !=
              std::string::npos);
    }
}

TEST_CASE("a kernel's faults are told apart from the environment's") {
    CHECK(cuda::is_kernel_fault(CUDA_ERROR_ILLEGAL_ADDRESS));
    CHECK(cuda::is_kernel_fault(CUDA_ERROR_LAUNCH_FAILED));
    CHECK_FALSE(cuda::is_kernel_fault(CUDA_ERROR_NO_DEVICE));
    CHECK_FALSE(cuda::is_kernel_fault(CUDA_ERROR_OUT_OF_MEMORY));
}
