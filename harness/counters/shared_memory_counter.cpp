// SharedMemoryCounter: the range profiler for totals, the SASS metrics API per instruction. Every
// CUPTI handle is owned by a small RAII type below, so a launch that throws (a student's kernel
// that faults) still leaves no profiling session open.

#include <cuda.h>
#include <cupti_pcsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "counters/counters.hpp"
#include "counters/cupti_library.hpp"
#include "counters/cupti_status.hpp"
#include "counters/metric_config.hpp"
#include "cuda/driver_api.hpp"

namespace grader::counters {
namespace {

// cuptiProfilerInitialize while any counter of the process lives, cuptiProfilerDeInitialize after
// the last: the initialisation hooks the driver, and a process that goes on timing kernels after
// counting should not carry the hooks.
class ProfilerInitialization {
public:
    explicit ProfilerInitialization(const CuptiApi& api) : api_(&api) {
        const std::lock_guard<std::mutex> lock(mutex());
        if (users() == 0) {
            auto params = GRADER_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params);
            GRADER_CUPTI_CALL(api, cuptiProfilerInitialize, &params);
        }
        ++users();
    }
    ~ProfilerInitialization() {
        const std::lock_guard<std::mutex> lock(mutex());
        if (--users() == 0) {
            auto params = GRADER_CUPTI_PARAMS(CUpti_Profiler_DeInitialize_Params);
            api_->cuptiProfilerDeInitialize(&params);
        }
    }
    ProfilerInitialization(const ProfilerInitialization&) = delete;
    ProfilerInitialization& operator=(const ProfilerInitialization&) = delete;

private:
    static std::mutex& mutex() {
        static std::mutex shared;
        return shared;
    }
    static int& users() {
        static int count = 0;
        return count;
    }
    const CuptiApi* api_;
};

// Strings CUPTI allocates with malloc for the caller to free.
struct FreeWithFree {
    void operator()(const char* text) const { std::free(const_cast<char*>(text)); }
};
using CuptiString = std::unique_ptr<const char, FreeWithFree>;

class RangeProfilerSession {
public:
    RangeProfilerSession(const CuptiApi& api, CUcontext context) : api_(&api) {
        auto params = GRADER_CUPTI_PARAMS(CUpti_RangeProfiler_Enable_Params);
        params.ctx = context;
        GRADER_CUPTI_CALL(api, cuptiRangeProfilerEnable, &params);
        object_ = params.pRangeProfilerObject;
    }
    ~RangeProfilerSession() {
        auto params = GRADER_CUPTI_PARAMS(CUpti_RangeProfiler_Disable_Params);
        params.pRangeProfilerObject = object_;
        api_->cuptiRangeProfilerDisable(&params);
    }
    RangeProfilerSession(const RangeProfilerSession&) = delete;
    RangeProfilerSession& operator=(const RangeProfilerSession&) = delete;

    CUpti_RangeProfiler_Object* get() const { return object_; }

private:
    const CuptiApi* api_;
    CUpti_RangeProfiler_Object* object_ = nullptr;
};

// One replay pass: cuptiRangeProfilerStart, then Stop (which says whether every pass is in).
class ReplayPass {
public:
    ReplayPass(const CuptiApi& api, CUpti_RangeProfiler_Object* object)
        : api_(&api), object_(object) {
        auto params = GRADER_CUPTI_PARAMS(CUpti_RangeProfiler_Start_Params);
        params.pRangeProfilerObject = object;
        GRADER_CUPTI_CALL(api, cuptiRangeProfilerStart, &params);
    }
    ~ReplayPass() {
        if (!stopped_) {
            auto params = GRADER_CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params);
            params.pRangeProfilerObject = object_;
            api_->cuptiRangeProfilerStop(&params);
        }
    }
    ReplayPass(const ReplayPass&) = delete;
    ReplayPass& operator=(const ReplayPass&) = delete;

    bool stop_and_check_all_submitted() {
        auto params = GRADER_CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params);
        params.pRangeProfilerObject = object_;
        stopped_ = true;
        GRADER_CUPTI_CALL(*api_, cuptiRangeProfilerStop, &params);
        return params.isAllPassSubmitted != 0;
    }

private:
    const CuptiApi* api_;
    CUpti_RangeProfiler_Object* object_;
    bool stopped_ = false;
};

class ProfiledRange {
public:
    ProfiledRange(const CuptiApi& api, CUpti_RangeProfiler_Object* object, const char* name)
        : api_(&api), object_(object) {
        auto params = GRADER_CUPTI_PARAMS(CUpti_RangeProfiler_PushRange_Params);
        params.pRangeProfilerObject = object;
        params.pRangeName = name;
        GRADER_CUPTI_CALL(api, cuptiRangeProfilerPushRange, &params);
    }
    ~ProfiledRange() {
        auto params = GRADER_CUPTI_PARAMS(CUpti_RangeProfiler_PopRange_Params);
        params.pRangeProfilerObject = object_;
        api_->cuptiRangeProfilerPopRange(&params);
    }
    ProfiledRange(const ProfiledRange&) = delete;
    ProfiledRange& operator=(const ProfiledRange&) = delete;

private:
    const CuptiApi* api_;
    CUpti_RangeProfiler_Object* object_;
};

// cuptiSassMetricsSetConfig for a device, undone by cuptiSassMetricsUnsetConfig.
class SassMetricsConfiguration {
public:
    SassMetricsConfiguration(const CuptiApi& api, int device,
                             std::vector<CUpti_SassMetrics_Config> configs)
        : api_(&api), device_(device), configs_(std::move(configs)) {
        auto params = GRADER_CUPTI_PARAMS(CUpti_SassMetricsSetConfig_Params);
        params.numOfMetricConfig = configs_.size();
        params.pConfigs = configs_.data();
        params.deviceIndex = static_cast<std::uint32_t>(device);
        GRADER_CUPTI_CALL(api, cuptiSassMetricsSetConfig, &params);
    }
    ~SassMetricsConfiguration() {
        auto params = GRADER_CUPTI_PARAMS(CUpti_SassMetricsUnsetConfig_Params);
        params.deviceIndex = static_cast<std::uint32_t>(device_);
        api_->cuptiSassMetricsUnsetConfig(&params);
    }
    SassMetricsConfiguration(const SassMetricsConfiguration&) = delete;
    SassMetricsConfiguration& operator=(const SassMetricsConfiguration&) = delete;

private:
    const CuptiApi* api_;
    int device_;
    std::vector<CUpti_SassMetrics_Config> configs_;
};

// SASS patching on a context: kernels launched while it lives are instrumented (lazily: at their
// first launch), and unpatched when it ends.
class SassPatching {
public:
    SassPatching(const CuptiApi& api, CUcontext context) : api_(&api), context_(context) {
        auto params = GRADER_CUPTI_PARAMS(CUpti_SassMetricsEnable_Params);
        params.ctx = context;
        params.enableLazyPatching = 1;
        GRADER_CUPTI_CALL(api, cuptiSassMetricsEnable, &params);
    }
    ~SassPatching() {
        auto params = GRADER_CUPTI_PARAMS(CUpti_SassMetricsDisable_Params);
        params.ctx = context_;
        api_->cuptiSassMetricsDisable(&params);
    }
    SassPatching(const SassPatching&) = delete;
    SassPatching& operator=(const SassPatching&) = delete;

private:
    const CuptiApi* api_;
    CUcontext context_;
};

std::string support_problems(const CUpti_Profiler_DeviceSupported_Params& support) {
    std::string problems;
    const auto add = [&problems](CUpti_Profiler_Support_Level level, const char* what) {
        if (level == CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED ||
            level == CUPTI_PROFILER_CONFIGURATION_DISABLED) {
            problems += (problems.empty() ? "" : ", ") + std::string(what);
        }
    };
    add(support.architecture, "its architecture");
    add(support.sli, "SLI");
    add(support.vGpu, "a virtual GPU without profiling enabled");
    add(support.confidentialCompute, "confidential computing");
    add(support.cmp, "a crypto-mining processor");
    add(support.wsl, "WSL");
    return problems.empty() ? "an unsupported configuration" : problems;
}

// The device's support for one profiling API; throws CuptiFailure with a sentence where it is
// missing (not_permitted where a virtual GPU has profiling disabled).
void check_device_support(const CuptiApi& api, int ordinal, CUpti_Profiler_API which,
                          const char* what) {
    CUdevice device = 0;
    GRADER_DRIVER_CALL(cuDeviceGet(&device, ordinal));
    auto params = GRADER_CUPTI_PARAMS(CUpti_Profiler_DeviceSupported_Params);
    params.cuDevice = device;
    params.api = which;
    GRADER_CUPTI_CALL(api, cuptiProfilerDeviceSupported, &params);
    if (params.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
        return;
    }
    if (params.vGpu == CUPTI_PROFILER_CONFIGURATION_DISABLED) {
        throw CuptiFailure(CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES,
                           status_sentence(CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES,
                                           "cuptiProfilerDeviceSupported", &api));
    }
    throw CuptiFailure(CUPTI_ERROR_NOT_SUPPORTED,
                       std::string("CUPTI's ") + what + " does not support GPU " +
                           std::to_string(ordinal) + ": " + support_problems(params));
}

std::string chip_name(const CuptiApi& api, int ordinal) {
    auto params = GRADER_CUPTI_PARAMS(CUpti_Device_GetChipName_Params);
    params.deviceIndex = static_cast<std::size_t>(ordinal);
    GRADER_CUPTI_CALL(api, cuptiDeviceGetChipName, &params);
    return params.pChipName != nullptr ? params.pChipName : "";
}

std::vector<std::uint8_t> counter_availability(const CuptiApi& api, CUcontext context) {
    auto params = GRADER_CUPTI_PARAMS(CUpti_Profiler_GetCounterAvailability_Params);
    params.ctx = context;
    GRADER_CUPTI_CALL(api, cuptiProfilerGetCounterAvailability, &params);
    std::vector<std::uint8_t> image(params.counterAvailabilityImageSize);
    params.pCounterAvailabilityImage = image.data();
    GRADER_CUPTI_CALL(api, cuptiProfilerGetCounterAvailability, &params);
    return image;
}

std::string base_name(const std::string& path) {
    const auto slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The identifier of a kernel's name, mangled or not: "_Z17probeSharedStridePKfPfmi" and
// "probeSharedStride(float const*, ...)" are both "probeSharedStride".
std::string identifier_of(const std::string& name) {
    if (name.rfind("_Z", 0) == 0) {
        std::size_t at = 2;
        std::size_t length = 0;
        while (at < name.size() && std::isdigit(static_cast<unsigned char>(name[at]))) {
            length = length * 10 + static_cast<std::size_t>(name[at] - '0');
            ++at;
        }
        if (length > 0 && at + length <= name.size()) {
            return name.substr(at, length);
        }
    }
    return name.substr(0, name.find('('));
}

// Whether CUPTI's name for a function is the one asked for. CUPTI reports the cubin's (mangled)
// name; the identifier is compared too, in case a CUPTI version reports it demangled.
bool same_function(const std::string& reported, const std::string& wanted) {
    return wanted.empty() || reported == wanted || identifier_of(reported) == identifier_of(wanted);
}

void synchronize() {
    GRADER_DRIVER_CALL(cuCtxSynchronize());
}

struct RawInstruction {
    std::uint64_t loads = 0;
    std::uint64_t stores = 0;
    std::uint64_t wavefronts = 0;
    std::uint64_t ideal_wavefronts = 0;
};

}  // namespace

struct SharedMemoryCounter::Impl {
    CounterAvailability availability = CounterAvailability::failed;
    std::string reason;
    std::string description;
    std::string open_steps;
    const CuptiApi* api = nullptr;
    CUcontext context = nullptr;
    int device = 0;
    // Declared before the other CUPTI objects, so destroyed after them.
    std::unique_ptr<ProfilerInitialization> profiler;
    std::unique_ptr<ProfilerHost> host;
    std::vector<const char*> metrics;
    std::vector<std::uint8_t> config_image;
    std::size_t passes = 0;
    std::string chip;
    bool sass_looked_up = false;  // a grade counts no line: the lookup waits for count_by_line
    std::vector<std::uint64_t> sass_ids;  // empty where the SASS metrics API is unusable
    CounterAvailability sass_availability = CounterAvailability::failed;
    std::string sass_reason;
    // Set at the first count_by_line and kept until the counter goes: CUPTI 13.0 refuses a second
    // cuptiSassMetricsSetConfig in the process after cuptiSassMetricsUnsetConfig and a
    // range-profiler count (CUPTI_ERROR_OUT_OF_MEMORY). test_counters' "the lesson's transposes
    // and demo" counts by line after each range-profiler count with one counter.
    std::unique_ptr<SassMetricsConfiguration> sass_configuration;
    // keep_session(true): the session every count_each uses, and the image CUPTI was last given
    // (it may touch it until the session ends). Last, so that they go first.
    bool keep_session = false;
    std::vector<std::uint8_t> kept_counter_data;
    std::unique_ptr<RangeProfilerSession> kept_session;

    void fail(const CuptiFailure& failure) {
        availability = availability_of(failure.status());
        if (availability == CounterAvailability::available) {
            availability = CounterAvailability::failed;
        }
        reason = failure.what();
    }
};

SharedMemoryCounter::SharedMemoryCounter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SharedMemoryCounter::SharedMemoryCounter(SharedMemoryCounter&&) noexcept = default;
SharedMemoryCounter& SharedMemoryCounter::operator=(SharedMemoryCounter&&) noexcept = default;
SharedMemoryCounter::~SharedMemoryCounter() = default;

CounterAvailability SharedMemoryCounter::availability() const {
    return impl_->availability;
}
const std::string& SharedMemoryCounter::reason() const {
    return impl_->reason;
}
const std::string& SharedMemoryCounter::description() const {
    return impl_->description;
}
const std::string& SharedMemoryCounter::open_steps() const {
    return impl_->open_steps;
}
void SharedMemoryCounter::keep_session(bool keep) {
    impl_->keep_session = keep;
    if (!keep) {
        impl_->kept_session.reset();
    }
}

int SharedMemoryCounter::passes() const {
    return static_cast<int>(impl_->passes);
}

SharedMemoryCounter SharedMemoryCounter::open(CUcontext context, int device_ordinal,
                                              InstructionCounter instructions, Probe probe) {
    auto impl = std::make_unique<Impl>();
    impl->context = context;
    impl->device = device_ordinal;
    const CuptiLibrary& library = cupti();
    if (!library.loaded) {
        impl->availability = CounterAvailability::no_cupti;
        impl->reason = library.why_not;
        return SharedMemoryCounter(std::move(impl));
    }
    const CuptiApi& api = library.api;
    impl->api = &api;
    auto step_began = std::chrono::steady_clock::now();
    std::string steps;
    const auto step = [&](const char* name) {
        const auto now = std::chrono::steady_clock::now();
        steps += std::string(steps.empty() ? "" : ", ") + name + " " +
                 std::to_string(std::chrono::duration<double>(now - step_began).count()) + " s";
        step_began = now;
    };
    try {
        impl->profiler = std::make_unique<ProfilerInitialization>(api);
        step("initialize");
        check_device_support(api, device_ordinal, CUPTI_PROFILER_RANGE_PROFILING, "range profiler");
        const std::string chip = chip_name(api, device_ordinal);
        step("device");
        impl->host = std::make_unique<ProfilerHost>(api, chip, counter_availability(api, context));
        step("host");
        impl->metrics = shared_memory_metrics(instructions);
        impl->config_image = impl->host->config_image(impl->metrics);
        impl->passes = impl->host->passes(impl->config_image);
        step("configuration");
        if (probe == Probe::empty_session) {
            // An empty session: where the counters are reserved for administrators, this is
            // where CUPTI says so, before any grading time is spent on counting.
            { const RangeProfilerSession session(api, context); }
            step("empty session");
        }
        impl->open_steps = steps;
        impl->availability = CounterAvailability::available;
        impl->description = "CUPTI " + library.path + " (chip " + chip + ", " +
                            std::to_string(impl->passes) + " replay pass" +
                            (impl->passes == 1 ? "" : "es") + " per count)";
        impl->chip = chip;  // the SASS metrics are looked up at the first count_by_line
    } catch (const CuptiFailure& failure) {
        impl->open_steps = steps;
        impl->fail(failure);
        // A counter that cannot count leaves no CUPTI state (nor driver hooks) behind.
        impl->host.reset();
        impl->profiler.reset();
    }
    return SharedMemoryCounter(std::move(impl));
}

namespace {

// The counter data image for `ranges` ranges of the session's metrics, initialized.
std::vector<std::uint8_t> counter_data_image(const CuptiApi& api,
                                             const RangeProfilerSession& session,
                                             std::vector<const char*>& metric_names,
                                             std::size_t ranges) {
    auto size = GRADER_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params);
    size.pRangeProfilerObject = session.get();
    size.pMetricNames = metric_names.data();
    size.numMetrics = metric_names.size();
    size.maxNumOfRanges = ranges;
    size.maxNumRangeTreeNodes = static_cast<std::uint32_t>(ranges);
    GRADER_CUPTI_CALL(api, cuptiRangeProfilerGetCounterDataSize, &size);
    std::vector<std::uint8_t> counter_data(size.counterDataSize);
    auto initialize = GRADER_CUPTI_PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
    initialize.pRangeProfilerObject = session.get();
    initialize.counterDataSize = counter_data.size();
    initialize.pCounterData = counter_data.data();
    GRADER_CUPTI_CALL(api, cuptiRangeProfilerCounterDataImageInitialize, &initialize);
    return counter_data;
}

// One user range per launch, replayed by the caller, into `counter_data`.
void set_user_ranges(const CuptiApi& api, const RangeProfilerSession& session,
                     std::vector<std::uint8_t>& config_image,
                     std::vector<std::uint8_t>& counter_data, std::size_t ranges) {
    auto config = GRADER_CUPTI_PARAMS(CUpti_RangeProfiler_SetConfig_Params);
    config.pRangeProfilerObject = session.get();
    config.configSize = config_image.size();
    config.pConfig = config_image.data();
    config.counterDataImageSize = counter_data.size();
    config.pCounterDataImage = counter_data.data();
    config.range = CUPTI_UserRange;
    config.replayMode = CUPTI_UserReplay;
    config.maxRangesPerPass = ranges;
    config.numNestingLevels = 1;
    config.minNestingLevel = 1;
    config.passIndex = 0;
    config.targetNestingLevel = 1;
    GRADER_CUPTI_CALL(api, cuptiRangeProfilerSetConfig, &config);
}

// Every launch in a range of its own, once per pass, until the profiler has every pass it needs
// (the configuration's `passes`, and at most one more).
template <typename Step>
void replay_launches(const CuptiApi& api, const RangeProfilerSession& session,
                     const std::vector<SharedMemoryCounter::Launch>& launches, std::size_t passes,
                     const Step& step) {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < launches.size(); ++i) {
        names.push_back("launch " + std::to_string(i));
    }
    bool all_submitted = false;
    for (std::size_t pass = 0; !all_submitted; ++pass) {
        if (pass > passes + 1) {
            throw CuptiFailure(CUPTI_ERROR_UNKNOWN,
                               "CUPTI failed: the range profiler still wanted passes after " +
                                   std::to_string(pass) + " (the configuration needs " +
                                   std::to_string(passes) + ")");
        }
        ReplayPass replay(api, session.get());
        step("start pass");
        for (std::size_t i = 0; i < launches.size(); ++i) {
            const ProfiledRange range(api, session.get(), names[i].c_str());
            launches[i]();
            synchronize();
        }
        step("ranges");
        all_submitted = replay.stop_and_check_all_submitted();
        step("stop pass");
    }
}

// The counter data decoded, with one range for each of `ranges` launches, none dropped.
void decode_ranges(const CuptiApi& api, const RangeProfilerSession& session,
                   std::vector<std::uint8_t>& counter_data, std::size_t ranges) {
    auto decode = GRADER_CUPTI_PARAMS(CUpti_RangeProfiler_DecodeData_Params);
    decode.pRangeProfilerObject = session.get();
    GRADER_CUPTI_CALL(api, cuptiRangeProfilerDecodeData, &decode);
    auto info = GRADER_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params);
    info.pCounterDataImage = counter_data.data();
    info.counterDataImageSize = counter_data.size();
    GRADER_CUPTI_CALL(api, cuptiRangeProfilerGetCounterDataInfo, &info);
    if (decode.numOfRangeDropped != 0 || info.numTotalRanges != ranges) {
        throw CuptiFailure(CUPTI_ERROR_UNKNOWN,
                           "CUPTI failed: the range profiler returned " +
                               std::to_string(info.numTotalRanges) + " ranges for " +
                               std::to_string(ranges) + " launches (" +
                               std::to_string(decode.numOfRangeDropped) + " dropped)");
    }
}

}  // namespace

CountResult<std::vector<SharedMemoryCounts>> SharedMemoryCounter::count_each(
    const std::vector<Launch>& launches) {
    if (launches.empty()) {
        throw std::invalid_argument("SharedMemoryCounter::count_each: no launches to count");
    }
    CountResult<std::vector<SharedMemoryCounts>> result;
    result.availability = impl_->availability;
    result.reason = impl_->reason;
    if (!available()) {
        return result;
    }
    const CuptiApi& api = *impl_->api;
    const std::vector<const char*>& metrics = impl_->metrics;
    // What CUPTI is given a pointer to outlives the session, which may touch it until it ends.
    std::vector<const char*> metric_names = metrics;
    std::vector<std::uint8_t> counter_data;
    auto step_began = std::chrono::steady_clock::now();
    const auto step = [&result, &step_began](const char* name) {
        const auto now = std::chrono::steady_clock::now();
        result.steps.emplace_back(name, std::chrono::duration<double>(now - step_began).count());
        step_began = now;
    };
    try {
        std::optional<RangeProfilerSession> session_holder;
        if (impl_->keep_session && !impl_->kept_session) {
            impl_->kept_session = std::make_unique<RangeProfilerSession>(api, impl_->context);
        }
        if (!impl_->keep_session) {
            session_holder.emplace(api, impl_->context);
        }
        const RangeProfilerSession& session =
            impl_->keep_session ? *impl_->kept_session : *session_holder;
        step("enable");
        counter_data = counter_data_image(api, session, metric_names, launches.size());
        step("counter data image");
        set_user_ranges(api, session, impl_->config_image, counter_data, launches.size());
        step("set config");
        replay_launches(api, session, launches, impl_->passes, step);
        decode_ranges(api, session, counter_data, launches.size());
        step("decode");
        session_holder.reset();
        step("disable");
        for (std::size_t i = 0; i < launches.size(); ++i) {
            result.value.push_back(
                counts_from_values(impl_->host->evaluate(counter_data, i, metrics)));
        }
        step("evaluate");
        if (impl_->keep_session) {
            // The buffer itself, not a copy: SetConfig was given its address, and the kept
            // session may touch it until the next count's SetConfig or the session's end.
            impl_->kept_counter_data.swap(counter_data);
        }
        result.availability = CounterAvailability::available;
        result.reason.clear();
    } catch (const CuptiFailure& failure) {
        impl_->kept_session.reset();
        result.value.clear();
        result.availability = availability_of(failure.status());
        if (result.availability == CounterAvailability::available) {
            result.availability = CounterAvailability::failed;
        }
        result.reason = failure.what();
    }
    return result;
}

CountResult<SharedMemoryCounts> SharedMemoryCounter::count(const Launch& launch) {
    const auto each = count_each({launch});
    CountResult<SharedMemoryCounts> result;
    result.availability = each.availability;
    result.reason = each.reason;
    if (each.counted()) {
        result.value = each.value.front();
    }
    return result;
}

namespace {

// Runs `launch` with SASS patching on and returns each instruction's counts by (function, pc).
// The SASS metrics must be configured on the device (SassMetricsConfiguration).
std::map<std::pair<std::string, std::uint32_t>, RawInstruction> sass_counts(
    const CuptiApi& api, CUcontext context, const std::vector<std::uint64_t>& ids,
    const std::function<void()>& launch, std::uint32_t& cubin_crc_seen, bool& several_cubins) {
    const SassPatching patching(api, context);
    launch();
    synchronize();

    auto properties = GRADER_CUPTI_PARAMS(CUpti_SassMetricsGetDataProperties_Params);
    properties.ctx = context;
    GRADER_CUPTI_CALL(api, cuptiSassMetricsGetDataProperties, &properties);
    std::map<std::pair<std::string, std::uint32_t>, RawInstruction> counts;
    const std::size_t records = properties.numOfPatchedInstructionRecords;
    const std::size_t instances = properties.numOfInstances;
    if (records == 0 || instances == 0) {
        return counts;
    }
    // Room for every metric's value per instance: the header leaves open whether a record holds
    // one metric or all of them. Unused slots keep metric id 0, which no metric has.
    const std::size_t slots = instances * ids.size();
    std::vector<CUpti_SassMetrics_InstanceValue> values(records * slots,
                                                        CUpti_SassMetrics_InstanceValue{0, 0});
    std::vector<CUpti_SassMetrics_Data> data(records);
    for (std::size_t r = 0; r < records; ++r) {
        data[r].structSize = CUpti_SassMetricsFlushData_Params_STRUCT_SIZE;
        data[r].pInstanceValues = &values[r * slots];
    }
    auto flush = GRADER_CUPTI_PARAMS(CUpti_SassMetricsFlushData_Params);
    flush.ctx = context;
    flush.numOfPatchedInstructionRecords = records;
    flush.numOfInstances = instances;
    flush.pMetricsData = data.data();
    const CUptiResult flushed = api.cuptiSassMetricsFlushData(&flush);
    std::vector<CuptiString> names;  // CUPTI's copies of the function names, freed on return
    for (const auto& record : data) {
        names.emplace_back(record.functionName);
    }
    if (flushed != CUPTI_SUCCESS) {
        throw CuptiFailure(flushed, status_sentence(flushed, "cuptiSassMetricsFlushData", &api));
    }
    bool first = true;
    for (const auto& record : data) {
        if (first) {
            cubin_crc_seen = record.cubinCrc;
            first = false;
        } else if (record.cubinCrc != cubin_crc_seen) {
            several_cubins = true;
        }
        RawInstruction& instruction =
            counts[{record.functionName != nullptr ? record.functionName : "", record.pcOffset}];
        for (std::size_t slot = 0; slot < slots; ++slot) {
            const auto& value = record.pInstanceValues[slot];
            if (value.metricId == ids[0]) {
                instruction.loads += value.value;
            } else if (value.metricId == ids[1]) {
                instruction.stores += value.value;
            } else if (value.metricId == ids[2]) {
                instruction.wavefronts += value.value;
            } else if (value.metricId == ids[3]) {
                instruction.ideal_wavefronts += value.value;
            }
        }
    }
    return counts;
}

// The source line of one SASS instruction, from the cubin's line table; {"", 0} where it has none.
std::pair<std::string, int> source_line(const CuptiApi& api, std::string_view cubin,
                                        const std::string& function, std::uint32_t pc_offset) {
    CUpti_GetSassToSourceCorrelationParams params{};
    params.size = CUpti_GetSassToSourceCorrelationParamsSize;
    params.cubin = cubin.data();
    params.cubinSize = cubin.size();
    params.functionName = function.c_str();
    params.pcOffset = pc_offset;
    const CUptiResult status = api.cuptiGetSassToSourceCorrelation(&params);
    const CuptiString file(params.fileName);
    const CuptiString folder(params.dirName);
    if (status != CUPTI_SUCCESS || params.fileName == nullptr || params.lineNumber == 0) {
        return {"", 0};
    }
    return {base_name(params.fileName), static_cast<int>(params.lineNumber)};
}

using RawCounts = std::map<std::pair<std::string, std::uint32_t>, RawInstruction>;

// Why the instructions cannot be placed on source lines from `cubin`, or empty where they can.
std::string crc_problem_of(const CuptiApi& api, std::string_view cubin, const RawCounts& raw,
                           std::uint32_t crc_seen, bool several_cubins) {
    if (cubin.empty()) {
        return "no cubin was given to place the instructions on source lines";
    }
    CUpti_GetCubinCrcParams crc{};
    crc.size = CUpti_GetCubinCrcParamsSize;
    crc.cubin = cubin.data();
    crc.cubinSize = cubin.size();
    GRADER_CUPTI_CALL(api, cuptiGetCubinCrc, &crc);
    if (!several_cubins && !raw.empty() && static_cast<std::uint32_t>(crc.cubinCrc) != crc_seen) {
        return "the cubin given is not the image that ran (its CRC differs)";
    }
    return {};
}

// `function`'s shared loads and stores that executed, each on its source line where the cubin
// places it.
std::vector<InstructionCounts> shared_instructions(const CuptiApi& api, std::string_view cubin,
                                                   const std::string& function,
                                                   const RawCounts& raw, bool placed) {
    std::vector<InstructionCounts> instructions;
    for (const auto& [key, counts] : raw) {
        if (!same_function(key.first, function)) {
            continue;
        }
        if (counts.loads == 0 && counts.stores == 0) {
            continue;  // not an LDS/STS (an atomic, LDSM), or never executed
        }
        InstructionCounts instruction;
        instruction.function = key.first;
        instruction.pc_offset = key.second;
        instruction.store = counts.stores > 0 && counts.loads == 0;
        instruction.instructions = instruction.store ? counts.stores : counts.loads;
        instruction.wavefronts = counts.wavefronts;
        instruction.ideal_wavefronts = counts.ideal_wavefronts;
        if (placed) {
            std::tie(instruction.file, instruction.line) =
                source_line(api, cubin, key.first, key.second);
        }
        instructions.push_back(instruction);
    }
    return instructions;
}

// The instructions summed by source line (all on one where none is placed), and where none is,
// why.
void sum_by_line(SourceLineCounts& lines, const std::string& function,
                 const std::string& crc_problem) {
    const bool any_line =
        std::any_of(lines.instructions.begin(), lines.instructions.end(),
                    [](const InstructionCounts& instruction) { return instruction.line > 0; });
    lines.mapped = any_line;
    if (!any_line) {
        lines.mapping_note = !crc_problem.empty() ? crc_problem
                             : lines.instructions.empty()
                                 ? "no shared-memory instruction of " +
                                       (function.empty() ? std::string("any kernel") : function) +
                                       " executed"
                                 : "the cubin has no line table (build it with -lineinfo)";
    }
    std::map<std::tuple<std::string, int, bool>, LineCounts> by_line;
    for (const auto& instruction : lines.instructions) {
        const auto key =
            any_line ? std::make_tuple(instruction.file, instruction.line, instruction.store)
                     : std::make_tuple(std::string(), 0, instruction.store);
        LineCounts& line = by_line[key];
        line.file = std::get<0>(key);
        line.line = std::get<1>(key);
        line.store = instruction.store;
        line.sass_instructions += 1;
        line.instructions += instruction.instructions;
        line.wavefronts += instruction.wavefronts;
        line.ideal_wavefronts += instruction.ideal_wavefronts;
    }
    for (auto& entry : by_line) {
        lines.lines.push_back(entry.second);
    }
}

}  // namespace

CountResult<SourceLineCounts> SharedMemoryCounter::count_by_line(std::string_view cubin,
                                                                 const std::string& function,
                                                                 const Launch& launch) {
    CountResult<SourceLineCounts> result;
    result.availability = impl_->availability;
    result.reason = impl_->reason;
    if (!available()) {
        return result;
    }
    if (!impl_->sass_looked_up) {
        impl_->sass_looked_up = true;
        try {
            check_device_support(*impl_->api, impl_->device, CUPTI_PROFILER_SASS_METRICS,
                                 "SASS metrics API");
            impl_->sass_ids = sass_metric_ids(*impl_->api, impl_->chip);
            impl_->sass_availability = CounterAvailability::available;
        } catch (const CuptiFailure& failure) {
            impl_->sass_availability = availability_of(failure.status());
            impl_->sass_reason = failure.what();
        }
    }
    if (impl_->sass_ids.size() != shared_memory_sass_metrics().size()) {
        result.availability = impl_->sass_availability == CounterAvailability::available
                                  ? CounterAvailability::failed
                                  : impl_->sass_availability;
        result.reason = impl_->sass_reason;
        return result;
    }
    const CuptiApi& api = *impl_->api;
    try {
        std::uint32_t crc_seen = 0;
        bool several_cubins = false;
        if (!impl_->sass_configuration) {
            std::vector<CUpti_SassMetrics_Config> configs;
            for (const std::uint64_t id : impl_->sass_ids) {
                configs.push_back({id, CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU});
            }
            impl_->sass_configuration =
                std::make_unique<SassMetricsConfiguration>(api, impl_->device, std::move(configs));
        }
        const RawCounts raw =
            sass_counts(api, impl_->context, impl_->sass_ids, launch, crc_seen, several_cubins);
        const std::string crc_problem = crc_problem_of(api, cubin, raw, crc_seen, several_cubins);
        result.value.instructions =
            shared_instructions(api, cubin, function, raw, crc_problem.empty());
        sum_by_line(result.value, function, crc_problem);
        result.availability = CounterAvailability::available;
        result.reason.clear();
    } catch (const CuptiFailure& failure) {
        result.value = {};
        result.availability = availability_of(failure.status());
        if (result.availability == CounterAvailability::available) {
            result.availability = CounterAvailability::failed;
        }
        result.reason = failure.what();
    }
    return result;
}

}  // namespace grader::counters
