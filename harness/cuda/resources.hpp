#pragma once

// Move-only owners of driver handles. Destructors never throw: a context that a student's
// kernel poisoned makes every release fail, and the grader must still report.

#include <cuda.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace grader::cuda {

struct DeviceInfo {
    int ordinal = 0;
    std::string name;
    std::string pci_bus_id;  // "0000:18:00.0": the same GPU whatever CUDA_VISIBLE_DEVICES says
    int major = 0;
    int minor = 0;
    int sm_count = 0;
    int driver_version = 0;  // e.g. 13000
    int max_shared_per_block_optin = 0;
    std::string arch() const { return "sm_" + std::to_string(major) + std::to_string(minor); }
};

// Initialises the driver and describes device `ordinal`. Throws DriverUnavailable when there is
// no driver or no such device.
DeviceInfo query_device(int ordinal);

// The device's primary context, retained and made current on the calling thread.
class PrimaryContext {
public:
    explicit PrimaryContext(int ordinal);
    ~PrimaryContext();
    PrimaryContext(PrimaryContext&& other) noexcept
        : device_(other.device_), context_(std::exchange(other.context_, nullptr)) {}
    PrimaryContext& operator=(PrimaryContext&&) = delete;
    PrimaryContext(const PrimaryContext&) = delete;
    PrimaryContext& operator=(const PrimaryContext&) = delete;

    void make_current() const;
    CUcontext get() const noexcept { return context_; }

private:
    CUdevice device_ = 0;
    CUcontext context_ = nullptr;
};

class Module {
public:
    Module() = default;
    explicit Module(const std::string& image);  // a cubin or PTX
    ~Module();
    Module(Module&& other) noexcept : module_(std::exchange(other.module_, nullptr)) {}
    Module& operator=(Module&& other) noexcept;
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;

    CUfunction function(const std::string& name) const;
    CUmodule get() const noexcept { return module_; }

private:
    CUmodule module_ = nullptr;
};

class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t bytes);
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& other) noexcept
        : pointer_(std::exchange(other.pointer_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    CUdeviceptr get() const noexcept { return pointer_; }
    std::size_t bytes() const noexcept { return bytes_; }
    // From byte `offset` of the buffer; std::out_of_range where [offset, offset + bytes) is not
    // inside it.
    void upload(const void* host, std::size_t bytes, std::size_t offset = 0);
    void download(void* host, std::size_t bytes, std::size_t offset = 0) const;
    // On `stream`, in order with the launches there. (A plain cuMemsetD32 goes to the legacy
    // default stream, which a non-blocking stream does not wait for: where another process
    // keeps the GPU busy, the fill can land after the kernel and poison its output.) The whole
    // buffer, or `bytes` (whole words) from `offset`.
    void fill_words(unsigned int value, CUstream stream);
    void fill_words(unsigned int value, CUstream stream, std::size_t offset, std::size_t bytes);

private:
    void check_inside(std::size_t offset, std::size_t bytes) const;
    CUdeviceptr pointer_ = 0;
    std::size_t bytes_ = 0;
};

class Stream {
public:
    Stream();
    ~Stream();
    Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
    Stream& operator=(Stream&&) = delete;
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    CUstream get() const noexcept { return stream_; }
    void synchronize() const;

private:
    CUstream stream_ = nullptr;
};

class Event {
public:
    Event();
    ~Event();
    Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
    Event& operator=(Event&& other) noexcept;
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    void record(const Stream& stream);
    CUevent get() const noexcept { return event_; }

private:
    CUevent event_ = nullptr;
};

// Milliseconds between two recorded events; both must have completed.
float elapsed_ms(const Event& start, const Event& stop);

}  // namespace grader::cuda
