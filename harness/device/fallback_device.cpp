#include "device/fallback_device.hpp"

namespace grader {

std::string FallbackDevice::do_acquire() {
    try {
        return preferred_->acquire();
    } catch (const DeviceUnavailable& why) {
        why_fallback_ = why.what();
    }
    fallback_ = open_fallback_();
    if (poison_) {
        fallback_->set_shared_poison(*poison_);
    }
    return fallback_->acquire();
}

void FallbackDevice::do_set_shared_poison(const CompiledKernel& poison) {
    poison_ = poison;
    active().set_shared_poison(poison);
}

void FallbackDevice::do_describe(Environment& environment) {
    active().describe(environment);
    if (fallback_) {
        environment.notes.push_back(why_fallback_);
    }
}

}  // namespace grader
