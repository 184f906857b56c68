#include "grade/launches.hpp"

namespace grader {

Ending ending_of(DeviceLaunch::End end) {
    switch (end) {
        case DeviceLaunch::End::fault:
            return Ending::kernel_fault;
        case DeviceLaunch::End::timeout:
            return Ending::time_limit;
        case DeviceLaunch::End::refused:
            return Ending::launch_refused;
        case DeviceLaunch::End::unsupported:
            return Ending::unsupported;
        case DeviceLaunch::End::completed:
            break;
    }
    return Ending::harness_error;
}

std::string kernel_title(const Exercise& exercise, const std::string& kernel) {
    return exercise.kernel(kernel).name + " (" + kernel + ")";
}

}  // namespace grader
