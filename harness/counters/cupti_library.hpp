#pragma once

// CUPTI loaded with dlopen at run time instead of linked, for the same reason as the driver
// (cuda/driver_api.hpp): a machine without it must still grade, with the simulator's counts.
// Only CUDA 13's profiling APIs are resolved: the range profiler, the profiler host (metric
// configuration and evaluation), the SASS metrics API and SASS-to-source correlation. The legacy
// event and metric APIs are not used.

#include <cupti_pcsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include <string>
#include <vector>

namespace grader::counters {

// Function pointers with the ABI the headers declare.
struct CuptiApi {
    decltype(&::cuptiGetResultString) cuptiGetResultString = nullptr;
    decltype(&::cuptiGetErrorMessage) cuptiGetErrorMessage = nullptr;
    decltype(&::cuptiProfilerInitialize) cuptiProfilerInitialize = nullptr;
    decltype(&::cuptiProfilerDeInitialize) cuptiProfilerDeInitialize = nullptr;
    decltype(&::cuptiProfilerDeviceSupported) cuptiProfilerDeviceSupported = nullptr;
    decltype(&::cuptiProfilerGetCounterAvailability) cuptiProfilerGetCounterAvailability = nullptr;
    decltype(&::cuptiDeviceGetChipName) cuptiDeviceGetChipName = nullptr;
    decltype(&::cuptiProfilerHostInitialize) cuptiProfilerHostInitialize = nullptr;
    decltype(&::cuptiProfilerHostDeinitialize) cuptiProfilerHostDeinitialize = nullptr;
    decltype(&::cuptiProfilerHostConfigAddMetrics) cuptiProfilerHostConfigAddMetrics = nullptr;
    decltype(&::cuptiProfilerHostGetConfigImageSize) cuptiProfilerHostGetConfigImageSize = nullptr;
    decltype(&::cuptiProfilerHostGetConfigImage) cuptiProfilerHostGetConfigImage = nullptr;
    decltype(&::cuptiProfilerHostGetNumOfPasses) cuptiProfilerHostGetNumOfPasses = nullptr;
    decltype(&::cuptiProfilerHostEvaluateToGpuValues) cuptiProfilerHostEvaluateToGpuValues =
        nullptr;
    decltype(&::cuptiRangeProfilerEnable) cuptiRangeProfilerEnable = nullptr;
    decltype(&::cuptiRangeProfilerDisable) cuptiRangeProfilerDisable = nullptr;
    decltype(&::cuptiRangeProfilerGetCounterDataSize) cuptiRangeProfilerGetCounterDataSize =
        nullptr;
    decltype(&::cuptiRangeProfilerCounterDataImageInitialize)
        cuptiRangeProfilerCounterDataImageInitialize = nullptr;
    decltype(&::cuptiRangeProfilerSetConfig) cuptiRangeProfilerSetConfig = nullptr;
    decltype(&::cuptiRangeProfilerStart) cuptiRangeProfilerStart = nullptr;
    decltype(&::cuptiRangeProfilerStop) cuptiRangeProfilerStop = nullptr;
    decltype(&::cuptiRangeProfilerPushRange) cuptiRangeProfilerPushRange = nullptr;
    decltype(&::cuptiRangeProfilerPopRange) cuptiRangeProfilerPopRange = nullptr;
    decltype(&::cuptiRangeProfilerDecodeData) cuptiRangeProfilerDecodeData = nullptr;
    decltype(&::cuptiRangeProfilerGetCounterDataInfo) cuptiRangeProfilerGetCounterDataInfo =
        nullptr;
    decltype(&::cuptiSassMetricsGetProperties) cuptiSassMetricsGetProperties = nullptr;
    decltype(&::cuptiSassMetricsSetConfig) cuptiSassMetricsSetConfig = nullptr;
    decltype(&::cuptiSassMetricsUnsetConfig) cuptiSassMetricsUnsetConfig = nullptr;
    decltype(&::cuptiSassMetricsEnable) cuptiSassMetricsEnable = nullptr;
    decltype(&::cuptiSassMetricsDisable) cuptiSassMetricsDisable = nullptr;
    decltype(&::cuptiSassMetricsGetDataProperties) cuptiSassMetricsGetDataProperties = nullptr;
    decltype(&::cuptiSassMetricsFlushData) cuptiSassMetricsFlushData = nullptr;
    decltype(&::cuptiGetCubinCrc) cuptiGetCubinCrc = nullptr;
    decltype(&::cuptiGetSassToSourceCorrelation) cuptiGetSassToSourceCorrelation = nullptr;
};

struct CuptiLibrary {
    bool loaded = false;
    std::string path;     // the file loaded, as dlinfo resolved it
    std::string why_not;  // when not loaded: one sentence naming where it looked
    CuptiApi api;
};

// Opens the first candidate that loads and has every symbol of CuptiApi. A candidate with a '/'
// is a path; a bare name goes through the loader's search. Also opens libnvperf_host.so and
// libnvperf_target.so from the same folder where they are there, because CUPTI's profiler loads
// them by name at initialisation and that folder need not be on the loader's path.
CuptiLibrary load_cupti(const std::vector<std::string>& candidates);

// Where CUPTI is looked for, in order, libcupti.so.13 before libcupti.so.12 in each place:
// GRADER_LIBCUPTI (a file; nothing else is tried when it is set), the folder of the loaded libcuda,
// the toolkit's library folders ($CUDA_HOME and $CUDA_PATH, the toolkit this grader was built
// with, /usr/local/cuda; lib64, lib and extras/CUPTI/lib64 in each), then the loader's search.
std::vector<std::string> cupti_candidates();

// load_cupti(cupti_candidates()), once per process.
const CuptiLibrary& cupti();

}  // namespace grader::counters
