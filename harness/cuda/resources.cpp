#include "cuda/resources.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>

#include "cuda/driver_api.hpp"

namespace grader::cuda {
namespace {

// cuInit, before any other driver call of the process; a later call returns at once.
void initialize_driver() {
    const CUresult init = driver().cuInit(0);
    if (init != CUDA_SUCCESS) {
        throw DriverUnavailable("the NVIDIA driver is present but cuInit failed: " +
                                describe(init));
    }
}

}  // namespace

DeviceInfo query_device(int ordinal) {
    initialize_driver();
    int count = 0;
    GRADER_DRIVER_CALL(cuDeviceGetCount(&count));
    if (ordinal < 0 || ordinal >= count) {
        throw DriverUnavailable("no GPU with index " + std::to_string(ordinal) +
                                "; this machine has " + std::to_string(count));
    }
    CUdevice device = 0;
    GRADER_DRIVER_CALL(cuDeviceGet(&device, ordinal));
    DeviceInfo info;
    info.ordinal = ordinal;
    char name[256] = {};
    GRADER_DRIVER_CALL(cuDeviceGetName(name, sizeof name, device));
    info.name = name;
    char bus_id[64] = {};
    GRADER_DRIVER_CALL(cuDeviceGetPCIBusId(bus_id, sizeof bus_id, device));
    info.pci_bus_id = bus_id;
    GRADER_DRIVER_CALL(
        cuDeviceGetAttribute(&info.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
    GRADER_DRIVER_CALL(
        cuDeviceGetAttribute(&info.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
    GRADER_DRIVER_CALL(
        cuDeviceGetAttribute(&info.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device));
    GRADER_DRIVER_CALL(cuDeviceGetAttribute(&info.max_shared_per_block_optin,
                                            CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                            device));
    GRADER_DRIVER_CALL(cuDriverGetVersion(&info.driver_version));
    return info;
}

PrimaryContext::PrimaryContext(int ordinal) {
    initialize_driver();  // made first by a device server, with no query_device() before it
    GRADER_DRIVER_CALL(cuDeviceGet(&device_, ordinal));
    GRADER_DRIVER_CALL(cuDevicePrimaryCtxRetain(&context_, device_));
    make_current();
}

PrimaryContext::~PrimaryContext() {
    if (context_ != nullptr) {
        driver().cuDevicePrimaryCtxRelease(device_);
    }
}

void PrimaryContext::make_current() const {
    GRADER_DRIVER_CALL(cuCtxSetCurrent(context_));
}

Module::Module(const std::string& image) {
    GRADER_DRIVER_CALL(cuModuleLoadData(&module_, image.data()));
}

Module::~Module() {
    if (module_ != nullptr) {
        driver().cuModuleUnload(module_);
    }
}

Module& Module::operator=(Module&& other) noexcept {
    if (this != &other) {
        if (module_ != nullptr) {
            driver().cuModuleUnload(module_);
        }
        module_ = std::exchange(other.module_, nullptr);
    }
    return *this;
}

CUfunction Module::function(const std::string& name) const {
    CUfunction function = nullptr;
    GRADER_DRIVER_CALL(cuModuleGetFunction(&function, module_, name.c_str()));
    return function;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    GRADER_DRIVER_CALL(cuMemAlloc(&pointer_, bytes));
}

DeviceBuffer::~DeviceBuffer() {
    if (pointer_ != 0) {
        driver().cuMemFree(pointer_);
    }
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
        if (pointer_ != 0) {
            driver().cuMemFree(pointer_);
        }
        pointer_ = std::exchange(other.pointer_, 0);
        bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
}

void DeviceBuffer::check_inside(std::size_t offset, std::size_t bytes) const {
    if (offset > bytes_ || bytes > bytes_ - offset) {
        throw std::out_of_range("bytes " + std::to_string(offset) + " to " +
                                std::to_string(offset + bytes) + " of a device buffer of " +
                                std::to_string(bytes_));
    }
}

void DeviceBuffer::upload(const void* host, std::size_t bytes, std::size_t offset) {
    check_inside(offset, bytes);
    GRADER_DRIVER_CALL(cuMemcpyHtoD(pointer_ + offset, host, bytes));
}

void DeviceBuffer::download(void* host, std::size_t bytes, std::size_t offset) const {
    check_inside(offset, bytes);
    GRADER_DRIVER_CALL(cuMemcpyDtoH(host, pointer_ + offset, bytes));
}

void DeviceBuffer::fill_words(unsigned int value, CUstream stream) {
    GRADER_DRIVER_CALL(cuMemsetD32Async(pointer_, value, bytes_ / 4, stream));
}

void DeviceBuffer::fill_words(unsigned int value, CUstream stream, std::size_t offset,
                              std::size_t bytes) {
    check_inside(offset, bytes);
    GRADER_DRIVER_CALL(cuMemsetD32Async(pointer_ + offset, value, bytes / 4, stream));
}

Stream::Stream() {
    GRADER_DRIVER_CALL(cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
}

Stream::~Stream() {
    if (stream_ != nullptr) {
        driver().cuStreamDestroy(stream_);
    }
}

void Stream::synchronize() const {
    GRADER_DRIVER_CALL(cuStreamSynchronize(stream_));
}

Event::Event() {
    GRADER_DRIVER_CALL(cuEventCreate(&event_, CU_EVENT_DEFAULT));
}

Event::~Event() {
    if (event_ != nullptr) {
        driver().cuEventDestroy(event_);
    }
}

Event& Event::operator=(Event&& other) noexcept {
    if (this != &other) {
        if (event_ != nullptr) {
            driver().cuEventDestroy(event_);
        }
        event_ = std::exchange(other.event_, nullptr);
    }
    return *this;
}

void Event::record(const Stream& stream) {
    GRADER_DRIVER_CALL(cuEventRecord(event_, stream.get()));
}

float elapsed_ms(const Event& start, const Event& stop) {
    float ms = 0.0f;
    GRADER_DRIVER_CALL(cuEventElapsedTime(&ms, start.get(), stop.get()));
    return ms;
}

}  // namespace grader::cuda
