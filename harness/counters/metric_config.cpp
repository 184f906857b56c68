#include "counters/metric_config.hpp"

#include <cupti_sass_metrics.h>

#include <cmath>
#include <stdexcept>
#include <utility>

#include "counters/cupti_status.hpp"

namespace grader::counters {
namespace {

std::uint64_t as_count(double value) {
    return value <= 0.0 ? 0 : static_cast<std::uint64_t>(std::llround(value));
}

}  // namespace

const std::vector<const char*>& shared_memory_metrics(InstructionCounter instructions) {
    static const std::vector<const char*> hardware = {
        "smsp__inst_executed_op_shared_ld.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
        "smsp__inst_executed_op_shared_st.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
        "smsp__inst_executed_op_global_ld.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        "smsp__inst_executed_op_global_st.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    };
    static const std::vector<const char*> sass = {
        "smsp__sass_inst_executed_op_shared_ld.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
        "smsp__sass_inst_executed_op_shared_st.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
        "smsp__sass_inst_executed_op_global_ld.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        "smsp__sass_inst_executed_op_global_st.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    };
    return instructions == InstructionCounter::sass ? sass : hardware;
}

SharedMemoryCounts counts_from_values(const std::vector<double>& values) {
    SharedMemoryCounts counts;
    constexpr std::size_t kMetrics = 10;
    if (values.size() != kMetrics) {
        throw std::invalid_argument("counts_from_values: " + std::to_string(values.size()) +
                                    " values for " + std::to_string(kMetrics) + " metrics");
    }
    counts.load_instructions = as_count(values[0]);
    counts.load_wavefronts = as_count(values[1]);
    counts.load_bank_conflicts = as_count(values[2]);
    counts.store_instructions = as_count(values[3]);
    counts.store_wavefronts = as_count(values[4]);
    counts.store_bank_conflicts = as_count(values[5]);
    counts.global_load_requests = as_count(values[6]);
    counts.global_load_sectors = as_count(values[7]);
    counts.global_store_requests = as_count(values[8]);
    counts.global_store_sectors = as_count(values[9]);
    return counts;
}

const std::vector<std::pair<SassMetric, const char*>>& shared_memory_sass_metrics() {
    static const std::vector<std::pair<SassMetric, const char*>> metrics = {
        {SassMetric::shared_loads, "smsp__sass_inst_executed_op_shared_ld"},
        {SassMetric::shared_stores, "smsp__sass_inst_executed_op_shared_st"},
        {SassMetric::shared_wavefronts, "smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared"},
        {SassMetric::shared_ideal_wavefronts,
         "smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared_ideal"},
    };
    return metrics;
}

std::vector<std::uint64_t> sass_metric_ids(const CuptiApi& api, const std::string& chip) {
    std::vector<std::uint64_t> ids;
    for (const auto& metric : shared_memory_sass_metrics()) {
        auto params = GRADER_CUPTI_PARAMS(CUpti_SassMetrics_GetProperties_Params);
        params.pChipName = chip.c_str();
        params.pMetricName = metric.second;
        GRADER_CUPTI_CALL(api, cuptiSassMetricsGetProperties, &params);
        ids.push_back(params.metric.metricId);
    }
    return ids;
}

ProfilerHost::ProfilerHost(const CuptiApi& api, std::string chip,
                           std::vector<std::uint8_t> counter_availability)
    : api_(&api), chip_(std::move(chip)), counter_availability_(std::move(counter_availability)) {
    auto params = GRADER_CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params);
    params.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    params.pChipName = chip_.c_str();
    params.pCounterAvailabilityImage =
        counter_availability_.empty() ? nullptr : counter_availability_.data();
    GRADER_CUPTI_CALL(api, cuptiProfilerHostInitialize, &params);
    host_ = params.pHostObject;
}

ProfilerHost::~ProfilerHost() {
    if (host_ != nullptr) {
        auto params = GRADER_CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
        params.pHostObject = host_;
        api_->cuptiProfilerHostDeinitialize(&params);
    }
}

std::vector<std::uint8_t> ProfilerHost::config_image(const std::vector<const char*>& metrics) {
    metric_names_ = metrics;
    auto add = GRADER_CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
    add.pHostObject = host_;
    add.ppMetricNames = metric_names_.data();
    add.numMetrics = metric_names_.size();
    GRADER_CUPTI_CALL(*api_, cuptiProfilerHostConfigAddMetrics, &add);

    auto size = GRADER_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
    size.pHostObject = host_;
    GRADER_CUPTI_CALL(*api_, cuptiProfilerHostGetConfigImageSize, &size);

    std::vector<std::uint8_t> image(size.configImageSize);
    auto get = GRADER_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
    get.pHostObject = host_;
    get.configImageSize = image.size();
    get.pConfigImage = image.data();
    GRADER_CUPTI_CALL(*api_, cuptiProfilerHostGetConfigImage, &get);
    return image;
}

std::size_t ProfilerHost::passes(std::vector<std::uint8_t>& config_image) const {
    auto params = GRADER_CUPTI_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
    params.configImageSize = config_image.size();
    params.pConfigImage = config_image.data();
    GRADER_CUPTI_CALL(*api_, cuptiProfilerHostGetNumOfPasses, &params);
    return params.numOfPasses;
}

std::vector<double> ProfilerHost::evaluate(const std::vector<std::uint8_t>& counter_data,
                                           std::size_t range,
                                           const std::vector<const char*>& metrics) const {
    std::vector<const char*> names = metrics;
    std::vector<double> values(names.size(), 0.0);
    auto params = GRADER_CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
    params.pHostObject = host_;
    params.pCounterDataImage = counter_data.data();
    params.counterDataImageSize = counter_data.size();
    params.rangeIndex = range;
    params.ppMetricNames = names.data();
    params.numMetrics = names.size();
    params.pMetricValues = values.data();
    GRADER_CUPTI_CALL(*api_, cuptiProfilerHostEvaluateToGpuValues, &params);
    return values;
}

}  // namespace grader::counters
