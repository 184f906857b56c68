#include "model/json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

namespace grader {
namespace {

using nlohmann::json;

// JSON has no NaN: a value that is not finite is written as null and read back as NaN.
json number(double value) {
    return std::isfinite(value) ? json(value) : json(nullptr);
}
double number_from(const json& j) {
    return j.is_null() ? std::nan("") : j.get<double>();
}

// What a kernel wrote: a number, or where JSON has none "+infinity", "-infinity" or "NaN" (a NaN
// the kernel wrote); null stays "never written" (the poison left as it was).
json written_value(double value, bool wrote_nan) {
    if (std::isinf(value)) {
        return value > 0 ? "+infinity" : "-infinity";
    }
    if (std::isnan(value)) {
        return wrote_nan ? json("NaN") : json(nullptr);
    }
    return value;
}

template <typename T>
json optional_to(const std::optional<T>& value) {
    return value ? json(*value) : json(nullptr);
}
json optional_number(const std::optional<double>& value) {
    return value ? number(*value) : json(nullptr);
}

template <typename T>
void read(const json& j, const char* key, T& out) {
    const auto found = j.find(key);
    if (found != j.end() && !found->is_null()) {
        found->get_to(out);
    }
}
void read_number(const json& j, const char* key, double& out) {
    const auto found = j.find(key);
    if (found != j.end()) {
        out = number_from(*found);
    }
}
template <typename T>
void read_optional(const json& j, const char* key, std::optional<T>& out) {
    const auto found = j.find(key);
    if (found != j.end() && !found->is_null()) {
        out = found->get<T>();
    } else {
        out.reset();
    }
}

}  // namespace

const char* to_string(Verdict verdict) {
    switch (verdict) {
        case Verdict::pass:
            return "pass";
        case Verdict::fail:
            return "fail";
        case Verdict::ungradable:
            return "ungradable";
    }
    return "ungradable";
}

const char* to_string(CheckStatus status) {
    switch (status) {
        case CheckStatus::passed:
            return "passed";
        case CheckStatus::failed:
            return "failed";
        case CheckStatus::not_run:
            return "not_run";
    }
    return "failed";
}

const char* to_string(FolderProblem::Kind kind) {
    switch (kind) {
        case FolderProblem::Kind::empty:
            return "empty";
        case FolderProblem::Kind::one_folder_down:
            return "one_folder_down";
        case FolderProblem::Kind::other_exercise:
            return "other_exercise";
        case FolderProblem::Kind::misnamed_file:
            return "misnamed_file";
    }
    return "empty";
}

Verdict verdict_from_string(const std::string& text) {
    if (text == "pass")
        return Verdict::pass;
    if (text == "fail")
        return Verdict::fail;
    if (text == "ungradable")
        return Verdict::ungradable;
    throw std::invalid_argument("unknown verdict '" + text + "'");
}

const KernelRun* Measurements::run(const std::string& kernel, int stride) const {
    for (const auto& r : runs) {
        if (r.kernel == kernel && r.stride == stride) {
            return &r;
        }
    }
    return nullptr;
}

KernelRun* Measurements::run(const std::string& kernel, int stride) {
    for (auto& r : runs) {
        if (r.kernel == kernel && r.stride == stride) {
            return &r;
        }
    }
    return nullptr;
}

const OutputComparison* KernelRun::output(const std::string& input) const {
    for (const auto& comparison : outputs) {
        if (comparison.input == input) {
            return &comparison;
        }
    }
    return nullptr;
}

const OutputComparison* ReportRow::output(const std::string& input) const {
    for (const auto& comparison : outputs) {
        if (comparison.input == input) {
            return &comparison;
        }
    }
    return nullptr;
}

std::string_view to_string(StopKind kind) {
    switch (kind) {
        case StopKind::fault:
            return "fault";
        case StopKind::timeout:
            return "timeout";
        case StopKind::memory:
            return "memory";
        case StopKind::launch:
            return "launch";
        case StopKind::unsupported:
            return "unsupported";
        case StopKind::no_gpu:
            return "no_gpu";
        case StopKind::crash:
            return "crash";
    }
    return "crash";
}

StopKind stop_kind_from_string(std::string_view text) {
    for (const StopKind kind : {StopKind::fault, StopKind::timeout, StopKind::memory,
                                StopKind::launch, StopKind::unsupported, StopKind::no_gpu}) {
        if (to_string(kind) == text) {
            return kind;
        }
    }
    return StopKind::crash;
}

void to_json(json& j, const SourceProblem& v) {
    j = json{{"line", v.line}, {"column", v.column}, {"message", v.message}};
}
void from_json(const json& j, SourceProblem& v) {
    read(j, "line", v.line);
    read(j, "column", v.column);
    read(j, "message", v.message);
}

void to_json(json& j, const CompileOutcome& v) {
    j = json{{"attempted", v.attempted},
             {"ok", v.ok},
             {"arch", v.arch},
             {"options", v.options},
             {"vetting_problems", v.vetting_problems},
             {"log", v.log},
             {"seconds", v.seconds},
             {"lowered_name", v.lowered_name},
             {"signature", v.signature},
             {"param_sizes", v.param_sizes},
             {"param_source", v.param_source},
             {"static_shared_bytes", v.static_shared_bytes},
             {"registers", v.registers},
             {"abi_problem", v.abi_problem},
             {"log_cut_bytes", v.log_cut_bytes},
             {"clock_reads", v.clock_reads},
             {"source_missing", v.source_missing}};
}
void from_json(const json& j, CompileOutcome& v) {
    read(j, "attempted", v.attempted);
    read(j, "ok", v.ok);
    read(j, "arch", v.arch);
    read(j, "options", v.options);
    read(j, "vetting_problems", v.vetting_problems);
    read(j, "log", v.log);
    read(j, "seconds", v.seconds);
    read(j, "lowered_name", v.lowered_name);
    read(j, "signature", v.signature);
    read(j, "param_sizes", v.param_sizes);
    read(j, "param_source", v.param_source);
    read(j, "static_shared_bytes", v.static_shared_bytes);
    read(j, "registers", v.registers);
    read(j, "abi_problem", v.abi_problem);
    read(j, "log_cut_bytes", v.log_cut_bytes);
    read(j, "clock_reads", v.clock_reads);
    read(j, "source_missing", v.source_missing);
}

void to_json(json& j, const OutputComparison& v) {
    j = json{{"input", v.input},
             {"timed", v.timed},
             {"ran", v.ran},
             {"ok", v.ok},
             {"layout", v.matrix ? "matrix" : "per_thread"},
             {"expected", number(v.expected)},
             {"elements", v.elements},
             {"bad_elements", v.bad_elements},
             {"unwritten", v.unwritten},
             {"compared_blocks", v.compared_blocks},
             {"grid_blocks", v.grid_blocks},
             {"first_bad", optional_to(v.first_bad)},
             {"first_bad_block", v.first_bad_block},
             {"first_bad_thread_in_block", v.first_bad_thread_in_block},
             {"first_bad_row", v.first_bad_row},
             {"first_bad_column", v.first_bad_column},
             {"value", v.first_bad ? written_value(v.first_bad_value, v.first_bad_wrote_nan)
                                   : json(nullptr)},
             {"value_expected", v.first_bad ? number(v.first_bad_expected) : json(nullptr)}};
}
void from_json(const json& j, OutputComparison& v) {
    read(j, "input", v.input);
    read(j, "timed", v.timed);
    read(j, "ran", v.ran);
    read(j, "ok", v.ok);
    v.matrix = j.value("layout", "per_thread") == "matrix";
    read_number(j, "expected", v.expected);
    read(j, "elements", v.elements);
    read(j, "bad_elements", v.bad_elements);
    read(j, "unwritten", v.unwritten);
    read(j, "compared_blocks", v.compared_blocks);
    read(j, "grid_blocks", v.grid_blocks);
    read_optional(j, "first_bad", v.first_bad);
    read(j, "first_bad_block", v.first_bad_block);
    read(j, "first_bad_thread_in_block", v.first_bad_thread_in_block);
    read(j, "first_bad_row", v.first_bad_row);
    read(j, "first_bad_column", v.first_bad_column);
    if (v.first_bad) {
        const auto value = j.find("value");
        if (value != j.end() && value->is_string()) {
            const std::string text = value->get<std::string>();
            v.first_bad_wrote_nan = text == "NaN";
            v.first_bad_value = text == "+infinity"   ? HUGE_VAL
                                : text == "-infinity" ? -HUGE_VAL
                                                      : std::nan("");
        } else {
            read_number(j, "value", v.first_bad_value);
        }
        read_number(j, "value_expected", v.first_bad_expected);
        v.first_bad_unwritten = value != j.end() && value->is_null();
    }
}

void to_json(json& j, const SharedLineCounts& v) {
    j = json{{"file", v.file},
             {"line", v.line},
             {"store", v.store},
             {"bytes_per_lane", v.bytes_per_lane},
             {"requests", v.requests},
             {"wavefronts", v.wavefronts},
             {"ideal_wavefronts", v.ideal_wavefronts},
             {"degree", number(v.degree)}};
    if (v.lanes_per_row > 0) {
        j["lanes_per_row"] = v.lanes_per_row;
        j["row_pitch"] = v.row_pitch;
    }
}
void from_json(const json& j, SharedLineCounts& v) {
    read(j, "file", v.file);
    read(j, "line", v.line);
    read(j, "store", v.store);
    read(j, "bytes_per_lane", v.bytes_per_lane);
    read(j, "requests", v.requests);
    read(j, "wavefronts", v.wavefronts);
    read(j, "ideal_wavefronts", v.ideal_wavefronts);
    read_number(j, "degree", v.degree);
    read(j, "lanes_per_row", v.lanes_per_row);
    read(j, "row_pitch", v.row_pitch);
}

void to_json(json& j, const FindingPlace& v) {
    j = json{{"file", v.file}, {"line", v.line}, {"column", v.column}};
    if (v.ptx_line > 0) {
        j["ptx_line"] = v.ptx_line;
    }
}
void from_json(const json& j, FindingPlace& v) {
    read(j, "file", v.file);
    read(j, "line", v.line);
    read(j, "column", v.column);
    read(j, "ptx_line", v.ptx_line);
}

void to_json(json& j, const FindingThread& v) {
    j = json{{"block", v.block}, {"thread", v.thread}, {"warp", v.warp}, {"lane", v.lane}};
    if (v.any_warp) {
        j["any_warp"] = true;
    }
}
void from_json(const json& j, FindingThread& v) {
    read(j, "block", v.block);
    read(j, "thread", v.thread);
    read(j, "warp", v.warp);
    read(j, "lane", v.lane);
    read(j, "any_warp", v.any_warp);
}

void to_json(json& j, const SharedWord& v) {
    j = json{{"word", v.word}, {"variable", v.variable}, {"word_in_variable", v.word_in_variable}};
}
void from_json(const json& j, SharedWord& v) {
    read(j, "word", v.word);
    read(j, "variable", v.variable);
    read(j, "word_in_variable", v.word_in_variable);
}

void to_json(json& j, const Finding& v) {
    // Only what the kind fills (findings.def), beside its kind, cause and severity.
    const unsigned fields = fields_of(v.kind);
    const std::optional<Cause> cause = cause_of(v.kind);
    j = json{{"kind", std::string(to_string(v.kind))},
             {"cause", cause ? json(std::string(to_string(*cause))) : json(nullptr)},
             {"severity", std::string(to_string(severity_of(v.kind)))}};
    if (!v.strides.empty()) {
        j["strides"] = v.strides;
    }
    if ((fields & FIELD_LINES) != 0 || !v.lines.empty()) {
        j["lines"] = v.lines;
    }
    if ((fields & FIELD_THREADS) != 0 || !v.threads.empty()) {
        j["threads"] = v.threads;
    }
    if (v.word) {
        j["word"] = *v.word;
    }
    if ((fields & FIELD_VALUES) != 0 || !v.values.empty()) {
        json values = json::array();
        for (const double value : v.values) {
            values.push_back(number(value));
        }
        j["values"] = values;
    }
    if ((fields & FIELD_COUNT) != 0 || v.count != 0) {
        j["count"] = v.count;
    }
    if ((fields & FIELD_NAMES) != 0 || !v.names.empty()) {
        j["names"] = v.names;
    }
    if ((fields & FIELD_TEXT) != 0 || !v.text.empty()) {
        j["text"] = v.text;
    }
    if (v.output) {
        j["output"] = *v.output;
    }
    if (v.counts) {
        j["counts"] = *v.counts;
    }
    if (v.witness) {
        j["witness"] = true;
    }
    if (v.unnamed) {
        j["unnamed"] = true;
    }
    if (v.timed) {
        j["timed"] = true;
    }
}
void from_json(const json& j, Finding& v) {
    // A kind this grader does not know (a newer report's) is read as `unknown`, its key kept.
    const std::string key = j.value("kind", "");
    v.kind = finding_kind_from_string(key).value_or(FindingKind::unknown);
    read(j, "strides", v.strides);
    read(j, "lines", v.lines);
    read(j, "threads", v.threads);
    read_optional(j, "word", v.word);
    if (const auto values = j.find("values"); values != j.end() && values->is_array()) {
        for (const json& value : *values) {
            v.values.push_back(number_from(value));
        }
    }
    read(j, "count", v.count);
    read(j, "names", v.names);
    read(j, "text", v.text);
    if (v.kind == FindingKind::unknown && v.text.empty()) {
        v.text = key;
    }
    read_optional(j, "output", v.output);
    read_optional(j, "counts", v.counts);
    read(j, "witness", v.witness);
    read(j, "unnamed", v.unnamed);
    read(j, "timed", v.timed);
}

void to_json(json& j, const SharedAccessCounts& v) {
    j = json{{"load_requests", v.load_requests},
             {"load_wavefronts", v.load_wavefronts},
             {"load_ideal_wavefronts", v.load_ideal_wavefronts},
             {"store_requests", v.store_requests},
             {"store_wavefronts", v.store_wavefronts},
             {"store_ideal_wavefronts", v.store_ideal_wavefronts},
             {"global_load_requests", v.global_load_requests},
             {"global_load_sectors", v.global_load_sectors},
             {"global_store_requests", v.global_store_requests},
             {"global_store_sectors", v.global_store_sectors},
             {"blocks", v.blocks},
             {"lines", v.lines}};
}
void from_json(const json& j, SharedAccessCounts& v) {
    read(j, "load_requests", v.load_requests);
    read(j, "load_wavefronts", v.load_wavefronts);
    read(j, "load_ideal_wavefronts", v.load_ideal_wavefronts);
    read(j, "store_requests", v.store_requests);
    read(j, "store_wavefronts", v.store_wavefronts);
    read(j, "store_ideal_wavefronts", v.store_ideal_wavefronts);
    read(j, "global_load_requests", v.global_load_requests);
    read(j, "global_load_sectors", v.global_load_sectors);
    read(j, "global_store_requests", v.global_store_requests);
    read(j, "global_store_sectors", v.global_store_sectors);
    read(j, "blocks", v.blocks);
    read(j, "lines", v.lines);
    if (v.lines.size() > SharedAccessCounts::kMaxLines) {
        v.lines.resize(SharedAccessCounts::kMaxLines);  // bounded, whoever wrote it
    }
}

void to_json(json& j, const TimingStats& v) {
    j = json{{"median_ms", number(v.median_ms)},
             {"min_ms", number(v.min_ms)},
             {"max_ms", number(v.max_ms)},
             {"spread", number(v.spread)},
             {"samples", v.samples},
             {"launches_per_sample", v.launches_per_sample},
             {"modeled", v.modeled}};
}
void from_json(const json& j, TimingStats& v) {
    read_number(j, "median_ms", v.median_ms);
    read_number(j, "min_ms", v.min_ms);
    read_number(j, "max_ms", v.max_ms);
    read_number(j, "spread", v.spread);
    read(j, "samples", v.samples);
    read(j, "launches_per_sample", v.launches_per_sample);
    read(j, "modeled", v.modeled);
}

void to_json(json& j, const KernelRun& v) {
    j = json{{"kernel", v.kernel},
             {"stride", v.stride},
             {"outputs", v.outputs},
             {"timing", v.timing ? json(*v.timing) : json(nullptr)},
             {"ratio", optional_number(v.ratio)},
             {"ratio_min", optional_number(v.ratio_min)},
             {"ratio_max", optional_number(v.ratio_max)},
             {"counts", v.counts ? json(*v.counts) : json(nullptr)},
             {"witness", v.witness ? json(*v.witness) : json(nullptr)},
             {"count_source", v.count_source},
             {"count_note", v.count_note},
             {"findings", v.findings}};
}
void from_json(const json& j, KernelRun& v) {
    read(j, "kernel", v.kernel);
    read(j, "stride", v.stride);
    read(j, "outputs", v.outputs);
    read_optional(j, "timing", v.timing);
    read_optional(j, "ratio", v.ratio);
    read_optional(j, "ratio_min", v.ratio_min);
    read_optional(j, "ratio_max", v.ratio_max);
    read_optional(j, "counts", v.counts);
    read_optional(j, "witness", v.witness);
    read(j, "count_source", v.count_source);
    read(j, "count_note", v.count_note);
    read(j, "findings", v.findings);
}

void to_json(json& j, const Environment& v) {
    j = json{{"backend", v.backend},
             {"gpu_available", v.gpu_available},
             {"device", v.device_name},
             {"compute_capability", v.compute_capability},
             {"sm_count", v.sm_count},
             {"driver", v.driver_version},
             {"nvrtc", v.nvrtc_version},
             {"grader_version", v.grader_version},
             {"grid_blocks", v.grid_blocks},
             {"block_size", v.block_size},
             {"blocks_per_sm", v.blocks_per_sm},
             {"confinement", v.confinement},
             {"gpu_bus_id", v.gpu_bus_id},
             {"gpu_held_from", v.gpu_held_from},
             {"gpu_held_until", v.gpu_held_until},
             {"notes", v.notes}};
}
void from_json(const json& j, Environment& v) {
    read(j, "backend", v.backend);
    read(j, "gpu_available", v.gpu_available);
    read(j, "device", v.device_name);
    read(j, "compute_capability", v.compute_capability);
    read(j, "sm_count", v.sm_count);
    read(j, "driver", v.driver_version);
    read(j, "nvrtc", v.nvrtc_version);
    read(j, "grader_version", v.grader_version);
    read(j, "grid_blocks", v.grid_blocks);
    read(j, "block_size", v.block_size);
    read(j, "blocks_per_sm", v.blocks_per_sm);
    read(j, "confinement", v.confinement);
    read(j, "gpu_bus_id", v.gpu_bus_id);
    read(j, "gpu_held_from", v.gpu_held_from);
    read(j, "gpu_held_until", v.gpu_held_until);
    read(j, "notes", v.notes);
}

void to_json(json& j, const Interruption& v) {
    j = json{{"kind", to_string(v.kind)},
             {"stage", v.stage},
             {"message", v.message},
             {"students_fault", v.students_fault}};
}
void from_json(const json& j, Interruption& v) {
    v.kind = stop_kind_from_string(j.value("kind", ""));
    read(j, "stage", v.stage);
    read(j, "message", v.message);
    read(j, "students_fault", v.students_fault);
}

void to_json(json& j, const FolderProblem& v) {
    j = json{{"kind", to_string(v.kind)}, {"detail", v.detail}, {"message", v.message}};
}
void from_json(const json& j, FolderProblem& v) {
    const std::string kind = j.value("kind", "");
    v.kind = kind == "other_exercise"    ? FolderProblem::Kind::other_exercise
             : kind == "one_folder_down" ? FolderProblem::Kind::one_folder_down
             : kind == "misnamed_file"   ? FolderProblem::Kind::misnamed_file
                                         : FolderProblem::Kind::empty;
    read(j, "detail", v.detail);
    read(j, "message", v.message);
}

void to_json(json& j, const Measurements& v) {
    j = json{{"environment", v.environment},
             {"student", v.student},
             {"references", v.references},
             {"runs", v.runs},
             {"unnamed_strides", v.unnamed_strides},
             {"seed", v.seed},
             {"timing_rounds", v.timing_rounds},
             {"timing_seconds", v.timing_seconds},
             {"interruption", v.interruption ? json(*v.interruption) : json(nullptr)},
             {"worker_output", v.worker_output},
             {"worker_output_truncated", v.worker_output_truncated},
             {"wall_seconds", v.wall_seconds},
             {"stage_seconds", v.stage_seconds},
             {"context_seconds", v.context_seconds}};
}
void from_json(const json& j, Measurements& v) {
    read(j, "environment", v.environment);
    read(j, "student", v.student);
    read(j, "references", v.references);
    read(j, "runs", v.runs);
    read(j, "unnamed_strides", v.unnamed_strides);
    read(j, "seed", v.seed);
    read(j, "timing_rounds", v.timing_rounds);
    read(j, "timing_seconds", v.timing_seconds);
    read_optional(j, "interruption", v.interruption);
    read(j, "worker_output", v.worker_output);
    read(j, "worker_output_truncated", v.worker_output_truncated);
    read(j, "wall_seconds", v.wall_seconds);
    read(j, "stage_seconds", v.stage_seconds);
    read(j, "context_seconds", v.context_seconds);
}

void to_json(json& j, const Diagnosis& v) {
    j = json{{"cause", std::string(to_string(v.cause))},
             {"title", std::string(cause_title(v.cause))},
             {"area", std::string(to_string(area_of(v.cause)))},
             {"what", v.what},
             {"fix", v.fix},
             {"where", v.where},
             {"check", v.check},
             {"evidence", v.evidence}};
}
void from_json(const json& j, Diagnosis& v) {
    // A cause this grader does not know (a newer report's) reads as the generic wrong_output;
    // its words are kept.
    v.cause = cause_from_string(j.value("cause", "")).value_or(Cause::wrong_output);
    read(j, "what", v.what);
    read(j, "fix", v.fix);
    read(j, "where", v.where);
    read(j, "check", v.check);
    read(j, "evidence", v.evidence);
}

void to_json(json& j, const CheckResult& v) {
    j = json{{"id", v.id},
             {"title", v.title},
             {"passed", v.passed()},
             {"status", to_string(v.status)},
             {"required", v.required},
             {"review", v.review},
             {"points", v.points},
             {"max_points", v.max_points},
             {"message", v.message},
             {"details", v.details},
             {"findings", v.findings},
             {"kind", v.kind},
             {"diagnosis", v.diagnosis ? json(*v.diagnosis) : json(nullptr)}};
}
void from_json(const json& j, CheckResult& v) {
    read(j, "id", v.id);
    read(j, "title", v.title);
    bool passed = false;
    read(j, "passed", passed);
    const std::string status = j.value("status", passed ? "passed" : "failed");
    v.status = status == "passed"    ? CheckStatus::passed
               : status == "not_run" ? CheckStatus::not_run
                                     : CheckStatus::failed;
    read(j, "required", v.required);
    read(j, "review", v.review);
    read(j, "points", v.points);
    read(j, "max_points", v.max_points);
    read(j, "message", v.message);
    read(j, "details", v.details);
    read(j, "findings", v.findings);
    read(j, "kind", v.kind);
    read_optional(j, "diagnosis", v.diagnosis);
    if (v.kind.empty()) {
        // A report written before checks carried their kind: the ids were Part 1's and Part 2's,
        // whose three checks that writers single out were named for their kinds.
        v.kind = v.id == "submission_file"                     ? "answers_file"
                 : v.id == "compile_abi" || v.id == "sentence" ? v.id
                                                               : "";
    }
}

void to_json(json& j, const ReportRow& v) {
    j = json{
        {"kernel", v.kernel},
        {"label", v.label},
        {"stride", v.stride},
        {"degree", v.degree > 0 ? json(v.degree) : json(nullptr)},
        {"named", v.named},
        {"unnamed", v.unnamed},
        {"predicted_degree", optional_to(v.predicted_degree)},
        {"claimed_ratio", optional_number(v.claimed_ratio)},
        {"median_ms", v.timing ? number(v.timing->median_ms) : json(nullptr)},
        {"timing", v.timing ? json(*v.timing) : json(nullptr)},
        {"ratio", optional_number(v.ratio)},
        {"ratio_min", optional_number(v.ratio_min)},
        {"ratio_max", optional_number(v.ratio_max)},
        {"reference_ratio", optional_number(v.reference_ratio)},
        {"counted_degree", optional_number(v.counted_degree)},
        {"counted_load_degree", optional_number(v.counted_load_degree)},
        {"counted_store_degree", optional_number(v.counted_store_degree)},
        {"count_source", v.count_source},
        {"global_load_sectors_per_request", optional_number(v.global_load_sectors_per_request)},
        {"global_store_sectors_per_request", optional_number(v.global_store_sectors_per_request)},
        {"shared_lines", v.shared_lines},
        {"gigabytes_per_second", optional_number(v.gigabytes_per_second)},
        {"outputs", v.outputs}};
}
void from_json(const json& j, ReportRow& v) {
    read(j, "kernel", v.kernel);
    read(j, "label", v.label);
    read(j, "stride", v.stride);
    std::optional<unsigned> degree;
    read_optional(j, "degree", degree);
    v.degree = degree.value_or(0);
    read(j, "named", v.named);
    read(j, "unnamed", v.unnamed);
    read_optional(j, "predicted_degree", v.predicted_degree);
    read_optional(j, "claimed_ratio", v.claimed_ratio);
    read_optional(j, "timing", v.timing);
    read_optional(j, "ratio", v.ratio);
    read_optional(j, "ratio_min", v.ratio_min);
    read_optional(j, "ratio_max", v.ratio_max);
    read_optional(j, "reference_ratio", v.reference_ratio);
    read_optional(j, "counted_degree", v.counted_degree);
    read_optional(j, "counted_load_degree", v.counted_load_degree);
    read_optional(j, "counted_store_degree", v.counted_store_degree);
    read(j, "count_source", v.count_source);
    read_optional(j, "global_load_sectors_per_request", v.global_load_sectors_per_request);
    read_optional(j, "global_store_sectors_per_request", v.global_store_sectors_per_request);
    read(j, "shared_lines", v.shared_lines);
    if (v.shared_lines.size() > SharedAccessCounts::kMaxLines) {
        v.shared_lines.resize(SharedAccessCounts::kMaxLines);
    }
    read_optional(j, "gigabytes_per_second", v.gigabytes_per_second);
    read(j, "outputs", v.outputs);
    if (v.outputs.empty()) {
        // A report of schema version 1 kept the probe's two inputs under names of their own.
        for (const auto& [key, input] : {std::pair<const char*, const char*>{"accumulator", "ones"},
                                         {"hidden_input", "hidden"}}) {
            const auto found = j.find(key);
            if (found == j.end() || !found->is_object()) {
                continue;
            }
            OutputComparison legacy;
            legacy.input = input;
            read(*found, "ran", legacy.ran);
            read(*found, "ok", legacy.ok);
            read_number(*found, "expected", legacy.expected);
            read(*found, "threads", legacy.elements);
            read(*found, "bad_threads", legacy.bad_elements);
            read_optional(*found, "first_bad_thread", legacy.first_bad);
            read(*found, "first_bad_block", legacy.first_bad_block);
            read(*found, "first_bad_thread_in_block", legacy.first_bad_thread_in_block);
            if (legacy.first_bad) {
                read_number(*found, "value", legacy.first_bad_value);
                read_number(*found, "value_expected", legacy.first_bad_expected);
            }
            v.outputs.push_back(legacy);
        }
    }
}

void to_json(json& j, const Report& v) {
    j = json{{"schema", "gpu-course-grader/report"},
             {"schema_version", v.schema_version},
             {"exercise", {{"id", v.exercise_id}, {"title", v.exercise_title}}},
             {"submission", v.submission},
             {"student_id", v.student_id},
             {"claimed_gpu", v.claimed_gpu},
             {"verdict", to_string(v.verdict)},
             {"summary", v.summary},
             {"score", v.score},
             {"max_score", v.max_score},
             {"checks", v.checks},
             {"rows", v.rows},
             {"sentence", v.sentence},
             {"environment", v.environment},
             {"seed", v.seed},
             {"timing_rounds", v.timing_rounds},
             {"wall_seconds", v.wall_seconds},
             {"compile_log", v.compile_log},
             {"kernel_output", v.kernel_output},
             {"interruption", v.interruption ? json(*v.interruption) : json(nullptr)},
             {"stage_seconds", v.stage_seconds},
             {"ratio_base", v.ratio_base},
             {"ratio_as_percent", v.ratio_as_percent},
             {"sentence_review",
              {{"same_as_example", v.sentence_review.same_as_example},
               {"same_as_others", v.sentence_review.same_as_others}}},
             {"missing_files", v.missing_files},
             {"compile_error", v.compile_error},
             {"banks", v.banks},
             {"reference_kernel", v.reference_kernel},
             {"folder_problem", v.folder_problem ? json(*v.folder_problem) : json(nullptr)},
             {"diagnosis", v.diagnosis ? json(*v.diagnosis) : json(nullptr)}};
}
void from_json(const json& j, Report& v) {
    read(j, "schema_version", v.schema_version);
    if (const auto exercise = j.find("exercise"); exercise != j.end() && exercise->is_object()) {
        read(*exercise, "id", v.exercise_id);
        read(*exercise, "title", v.exercise_title);
    }
    read(j, "submission", v.submission);
    read(j, "student_id", v.student_id);
    read(j, "claimed_gpu", v.claimed_gpu);
    v.verdict = verdict_from_string(j.at("verdict").get<std::string>());
    read(j, "summary", v.summary);
    read(j, "score", v.score);
    read(j, "max_score", v.max_score);
    read(j, "checks", v.checks);
    read(j, "rows", v.rows);
    read(j, "sentence", v.sentence);
    read(j, "environment", v.environment);
    read(j, "seed", v.seed);
    read(j, "timing_rounds", v.timing_rounds);
    read(j, "wall_seconds", v.wall_seconds);
    read(j, "compile_log", v.compile_log);
    read(j, "kernel_output", v.kernel_output);
    read_optional(j, "interruption", v.interruption);
    read(j, "stage_seconds", v.stage_seconds);
    read(j, "ratio_base", v.ratio_base);
    read(j, "ratio_as_percent", v.ratio_as_percent);
    if (const auto review = j.find("sentence_review"); review != j.end() && review->is_object()) {
        read(*review, "same_as_example", v.sentence_review.same_as_example);
        read(*review, "same_as_others", v.sentence_review.same_as_others);
    }
    read(j, "missing_files", v.missing_files);
    read(j, "compile_error", v.compile_error);
    read(j, "banks", v.banks);
    if (const auto found = j.find("reference_kernel"); found != j.end() && found->is_string()) {
        v.reference_kernel = found->get<std::string>();
    } else {
        // Written before it was recorded: then the one exercise with a sweep was Part 1.
        v.reference_kernel = "reference";
    }
    read_optional(j, "folder_problem", v.folder_problem);
    read_optional(j, "diagnosis", v.diagnosis);
}

void to_json(json& j, const ExplainedLane& v) {
    j = json{
        {"active", v.active}, {"word", v.word}, {"bank", v.bank}, {"bank_mates", v.bank_mates}};
}
void from_json(const json& j, ExplainedLane& v) {
    read(j, "active", v.active);
    read(j, "word", v.word);
    read(j, "bank", v.bank);
    read(j, "bank_mates", v.bank_mates);
}

void to_json(json& j, const ExplainedWarp& v) {
    j = json{{"block", v.block},
             {"warp", v.warp},
             {"wavefronts", v.wavefronts},
             {"ideal_wavefronts", v.ideal_wavefronts},
             {"bytes_per_lane", v.bytes_per_lane},
             {"lanes", v.lanes},
             {"banks", v.banks},
             {"rule", v.rule}};
}
void from_json(const json& j, ExplainedWarp& v) {
    read(j, "block", v.block);
    read(j, "warp", v.warp);
    read(j, "wavefronts", v.wavefronts);
    read(j, "ideal_wavefronts", v.ideal_wavefronts);
    read(j, "bytes_per_lane", v.bytes_per_lane);
    read(j, "lanes", v.lanes);
    read(j, "banks", v.banks);
    read(j, "rule", v.rule);
}

void to_json(json& j, const ExplainedLine& v) {
    j = json{{"counts", v.counts},
             {"max_degree", v.max_degree},
             {"representative", v.representative ? json(*v.representative) : json(nullptr)},
             {"hardware_instructions", optional_to(v.hardware_instructions)},
             {"hardware_wavefronts", optional_to(v.hardware_wavefronts)}};
}
void from_json(const json& j, ExplainedLine& v) {
    read(j, "counts", v.counts);
    read(j, "max_degree", v.max_degree);
    read_optional(j, "representative", v.representative);
    read_optional(j, "hardware_instructions", v.hardware_instructions);
    read_optional(j, "hardware_wavefronts", v.hardware_wavefronts);
}

void to_json(json& j, const ExplainedStride& v) {
    j = json{{"stride", v.stride},
             {"load_degree", optional_number(v.load_degree)},
             {"stopped", v.stopped},
             {"note", v.note},
             {"lines", v.lines}};
}
void from_json(const json& j, ExplainedStride& v) {
    read(j, "stride", v.stride);
    read_optional(j, "load_degree", v.load_degree);
    read(j, "stopped", v.stopped);
    read(j, "note", v.note);
    read(j, "lines", v.lines);
}

void to_json(json& j, const Explanation& v) {
    j = json{{"kernel_name", v.kernel_name},
             {"source_name", v.source_name},
             {"arch", v.arch},
             {"grid_blocks", v.grid_blocks},
             {"block_threads", v.block_threads},
             {"banks", v.banks},
             {"problem", v.problem},
             {"strides", v.strides},
             {"hardware_note", v.hardware_note},
             {"warp_instructions", v.warp_instructions},
             {"thread_instructions", v.thread_instructions},
             {"simulated_seconds", v.simulated_seconds}};
}
void from_json(const json& j, Explanation& v) {
    read(j, "kernel_name", v.kernel_name);
    read(j, "source_name", v.source_name);
    read(j, "arch", v.arch);
    read(j, "grid_blocks", v.grid_blocks);
    read(j, "block_threads", v.block_threads);
    read(j, "banks", v.banks);
    read(j, "problem", v.problem);
    read(j, "strides", v.strides);
    read(j, "hardware_note", v.hardware_note);
    read(j, "warp_instructions", v.warp_instructions);
    read(j, "thread_instructions", v.thread_instructions);
    read(j, "simulated_seconds", v.simulated_seconds);
}

bool Sweep::calibrated() const {
    return !interruption && std::all_of(calibration.begin(), calibration.end(),
                                        [](const CalibrationLine& line) { return line.passed; });
}

void to_json(json& j, const Sweep& v) {
    json rows = json::array();
    for (const auto& row : v.rows) {
        rows.push_back({{"kernel", row.kernel},
                        {"label", row.label},
                        {"stride", row.stride},
                        {"degree", row.degree > 0 ? json(row.degree) : json(nullptr)},
                        {"timing", row.timing ? json(*row.timing) : json(nullptr)},
                        {"ratio", optional_number(row.ratio)},
                        {"counted_degree", optional_number(row.counted_degree)},
                        {"outputs_ok", row.outputs_ok}});
    }
    json calibration = json::array();
    for (const auto& line : v.calibration) {
        calibration.push_back({{"description", line.description},
                               {"evaluated", line.evaluated},
                               {"passed", line.passed},
                               {"detail", line.detail}});
    }
    j = json{{"schema", "gpu-course-grader/sweep"},
             {"environment", v.environment},
             {"rows", rows},
             {"calibration", calibration},
             {"calibrated", v.calibrated()},
             {"ratio_base", v.ratio_base},
             {"ratio_as_percent", v.ratio_as_percent},
             {"input_words", v.input_words},
             {"timing_rounds", v.timing_rounds},
             {"timing_seconds", v.timing_seconds},
             {"seed", v.seed},
             {"interruption", v.interruption ? json(*v.interruption) : json(nullptr)}};
}

}  // namespace grader
