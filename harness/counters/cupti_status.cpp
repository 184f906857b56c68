#include "counters/cupti_status.hpp"

#include <fstream>
#include <sstream>
#include <string_view>

#include "counters/cupti_library.hpp"

namespace grader::counters {
namespace {

// "RmProfilingAdminOnly: 1" from the driver's parameters, or empty.
std::string admin_only_setting(const std::string& driver_params) {
    std::istringstream lines(driver_params);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.rfind("RmProfilingAdminOnly:", 0) == 0) {
            return line;
        }
    }
    return {};
}

std::string not_permitted_sentence(const std::string& driver_params) {
    const std::string setting = admin_only_setting(driver_params);
    return "The GPU's performance counters are not open to this user "
           "(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, Nsight Compute's ERR_NVGPUCTRPERM): a stock "
           "driver keeps them for administrators (RmProfilingAdminOnly=1" +
           (setting.empty() ? std::string() : "; this driver reports " + setting) +
           "), so counting needs root, the driver option NVreg_RestrictProfilingToAdminUsers=0, "
           "or a container started with --cap-add SYS_ADMIN whose grader runs as root";
}

}  // namespace

std::string_view to_string(CounterAvailability availability) {
    switch (availability) {
        case CounterAvailability::available:
            return "available";
        case CounterAvailability::not_permitted:
            return "not_permitted";
        case CounterAvailability::no_cupti:
            return "no_cupti";
        case CounterAvailability::unsupported_device:
            return "unsupported_device";
        case CounterAvailability::in_use:
            return "in_use";
        case CounterAvailability::failed:
            return "failed";
    }
    return "failed";
}

CounterAvailability availability_of(CUptiResult status) {
    switch (status) {
        case CUPTI_SUCCESS:
            return CounterAvailability::available;
        case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
        case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
            return CounterAvailability::not_permitted;
        case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
        case CUPTI_ERROR_HARDWARE_BUSY:
        case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
            return CounterAvailability::in_use;
        case CUPTI_ERROR_NOT_SUPPORTED:
        case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
        case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
        case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
        case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
        case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
        case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
        case CUPTI_ERROR_INVALID_CHIP_NAME:
        case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
            return CounterAvailability::unsupported_device;
        default:
            return CounterAvailability::failed;
    }
}

std::string status_name(CUptiResult status, const CuptiApi* api) {
    const char* name = nullptr;
    if (api != nullptr && api->cuptiGetResultString != nullptr &&
        api->cuptiGetResultString(status, &name) == CUPTI_SUCCESS && name != nullptr) {
        return name;
    }
    return "CUPTI status " + std::to_string(static_cast<int>(status));
}

std::string status_sentence(CUptiResult status, const std::string& call, const CuptiApi* api,
                            const std::string& driver_params) {
    switch (status) {
        case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
            return not_permitted_sentence(driver_params);
        case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
            return "The hypervisor does not allow profiling on this virtual GPU "
                   "(CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES), so its counters "
                   "cannot be read";
        case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
        case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
            return "Another profiler (Nsight Compute, Nsight Systems or cuda-gdb) is attached to "
                   "the grader, so it cannot read the counters itself (" +
                   status_name(status, api) + ")";
        case CUPTI_ERROR_HARDWARE_BUSY:
            return "The GPU's counters are in use by another profiling session "
                   "(CUPTI_ERROR_HARDWARE_BUSY)";
        default:
            break;
    }
    std::string sentence;
    if (availability_of(status) == CounterAvailability::unsupported_device) {
        sentence = "CUPTI's profiler does not support this GPU or its configuration (" +
                   status_name(status, api) + " from " + call + ")";
    } else {
        sentence = "CUPTI failed: " + call + " returned " + status_name(status, api);
    }
    const char* message = nullptr;
    if (api != nullptr && api->cuptiGetErrorMessage != nullptr &&
        api->cuptiGetErrorMessage(status, &message) == CUPTI_SUCCESS && message != nullptr &&
        *message != '\0') {
        std::string text = message;
        while (!text.empty() && (text.back() == '\n' || text.back() == '.')) {
            text.pop_back();
        }
        sentence += " (" + text + ")";
    }
    return sentence;
}

std::string read_driver_params() {
    std::ifstream file("/proc/driver/nvidia/params");
    if (!file) {
        return {};
    }
    std::ostringstream text;
    text << file.rdbuf();
    return text.str();
}

}  // namespace grader::counters
