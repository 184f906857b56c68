#pragma once

// What a CUPTI status means for the report: which CounterAvailability, and the one sentence the
// environment section prints. Inside the library a failed CUPTI call throws CuptiFailure, which
// the public functions (counters.hpp) catch and turn into a CountResult; it never leaves them.

#include <cupti_result.h>

#include <cstddef>
#include <stdexcept>
#include <string>

#include "counters/counters.hpp"

namespace grader::counters {

struct CuptiApi;

class CuptiFailure : public std::runtime_error {
public:
    CuptiFailure(CUptiResult status, const std::string& sentence)
        : std::runtime_error(sentence), status_(status) {}
    CUptiResult status() const noexcept { return status_; }

private:
    CUptiResult status_;
};

// not_permitted for CUPTI_ERROR_INSUFFICIENT_PRIVILEGES and the hypervisor's refusal; in_use when
// another tool subscribed first; unsupported_device for the device and configuration refusals
// (virtual GPU, MIG, confidential computing, CMP, SLI, WSL, unknown chip); failed otherwise.
CounterAvailability availability_of(CUptiResult status);

// The sentence a report's environment section prints for a status, or for the failed `call`
// (its text, file and line) where the status says nothing more specific.
// For not_permitted it says what grants the counters: root, the driver option
// NVreg_RestrictProfilingToAdminUsers=0, or Docker's --cap-add SYS_ADMIN; and, where
// `driver_params` (the text of /proc/driver/nvidia/params) names it, the driver's
// RmProfilingAdminOnly setting.
std::string status_sentence(CUptiResult status, const std::string& call, const CuptiApi* api,
                            const std::string& driver_params = {});

// The text of /proc/driver/nvidia/params, or empty where it cannot be read.
std::string read_driver_params();

// "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES", from the library where it is loaded.
std::string status_name(CUptiResult status, const CuptiApi* api);

// A CUPTI parameter struct, zeroed, with the size CUPTI checks to know which fields the caller has.
template <typename Params>
Params cupti_params(std::size_t struct_size) {
    Params params{};
    params.structSize = struct_size;
    return params;
}

}  // namespace grader::counters

// GRADER_CUPTI_PARAMS(CUpti_RangeProfiler_Enable_Params): the struct, zeroed, its size set.
#define GRADER_CUPTI_PARAMS(type_) ::grader::counters::cupti_params<type_>(type_##_STRUCT_SIZE)

// Calls a CUPTI function through `api_`; on failure throws CuptiFailure with the call's text, file
// and line. Only inside the counters library.
#define GRADER_CUPTI_CALL(api_, function_, params_)                                               \
    do {                                                                                          \
        const CUptiResult grader_cupti_status_ = (api_).function_(params_);                       \
        if (grader_cupti_status_ != CUPTI_SUCCESS) {                                              \
            throw ::grader::counters::CuptiFailure(                                               \
                grader_cupti_status_,                                                             \
                ::grader::counters::status_sentence(                                              \
                    grader_cupti_status_,                                                         \
                    std::string(#function_) + " at " + __FILE__ + ":" + std::to_string(__LINE__), \
                    &(api_), ::grader::counters::read_driver_params()));                          \
        }                                                                                         \
    } while (false)
