#pragma once

// NVRTC's handle and checking macro, private to the compile part. A failing NVRTC call other than
// the compile itself is the harness's fault or the machine's, so it throws NvrtcError.

#include <nvrtc.h>

#include <string>
#include <utility>

#include "compile/compile.hpp"
#include "compile/nvrtc_api.hpp"

namespace grader::detail {

// Throws NvrtcError for `call` (its text, of which the function's name is kept) failing with
// status. No __FILE__: the message reaches reports, and the build machine's paths must not.
[[noreturn]] void throw_nvrtc_error(nvrtcResult status, const char* call,
                                    const std::string& nvrtc_log = {});

// `call` is one of NvrtcApi's functions by its name, e.g. nvrtcGetPTX(program, ptx.data()).
#define GRADER_NVRTC_CALL(call)                                               \
    do {                                                                      \
        const nvrtcResult grader_nvrtc_status_ = ::grader::nvrtc().call;      \
        if (grader_nvrtc_status_ != NVRTC_SUCCESS) {                          \
            ::grader::detail::throw_nvrtc_error(grader_nvrtc_status_, #call); \
        }                                                                     \
    } while (false)

// One NVRTC program; destroyed on every path out of compile_kernel.
class NvrtcProgram {
public:
    NvrtcProgram() = default;
    explicit NvrtcProgram(nvrtcProgram program) : program_(program) {}
    NvrtcProgram(const NvrtcProgram&) = delete;
    NvrtcProgram& operator=(const NvrtcProgram&) = delete;
    NvrtcProgram(NvrtcProgram&& other) noexcept
        : program_(std::exchange(other.program_, nullptr)) {}
    NvrtcProgram& operator=(NvrtcProgram&& other) noexcept {
        if (this != &other) {
            reset();
            program_ = std::exchange(other.program_, nullptr);
        }
        return *this;
    }
    ~NvrtcProgram() { reset(); }

    nvrtcProgram get() const noexcept { return program_; }

private:
    void reset() noexcept {
        if (program_ != nullptr) {
            nvrtc().nvrtcDestroyProgram(&program_);
            program_ = nullptr;
        }
    }
    nvrtcProgram program_ = nullptr;
};

}  // namespace grader::detail
