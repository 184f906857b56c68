#pragma once

// JSON forms of the model. The report's form is the documented schema (docs/report-schema.md);
// the measurements' form is what the worker process sends back to the grader.

#include <nlohmann/json.hpp>
#include <string>

#include "model/diagnosis.hpp"
#include "model/explanation.hpp"
#include "model/finding.hpp"
#include "model/measurements.hpp"
#include "model/observations.hpp"
#include "model/report.hpp"
#include "model/sweep.hpp"

namespace grader {

void to_json(nlohmann::json& j, const SourceProblem& value);
void from_json(const nlohmann::json& j, SourceProblem& value);
void to_json(nlohmann::json& j, const CompileOutcome& value);
void from_json(const nlohmann::json& j, CompileOutcome& value);
void to_json(nlohmann::json& j, const OutputComparison& value);
void from_json(const nlohmann::json& j, OutputComparison& value);
void to_json(nlohmann::json& j, const SharedLineCounts& value);
void from_json(const nlohmann::json& j, SharedLineCounts& value);
void to_json(nlohmann::json& j, const FindingPlace& value);
void from_json(const nlohmann::json& j, FindingPlace& value);
void to_json(nlohmann::json& j, const FindingThread& value);
void from_json(const nlohmann::json& j, FindingThread& value);
void to_json(nlohmann::json& j, const SharedWord& value);
void from_json(const nlohmann::json& j, SharedWord& value);
void to_json(nlohmann::json& j, const Finding& value);
void from_json(const nlohmann::json& j, Finding& value);
void to_json(nlohmann::json& j, const SharedAccessCounts& value);
void from_json(const nlohmann::json& j, SharedAccessCounts& value);
void to_json(nlohmann::json& j, const TimingStats& value);
void from_json(const nlohmann::json& j, TimingStats& value);
void to_json(nlohmann::json& j, const KernelRun& value);
void from_json(const nlohmann::json& j, KernelRun& value);
void to_json(nlohmann::json& j, const Environment& value);
void from_json(const nlohmann::json& j, Environment& value);
void to_json(nlohmann::json& j, const Interruption& value);
void from_json(const nlohmann::json& j, Interruption& value);
void to_json(nlohmann::json& j, const Measurements& value);
void from_json(const nlohmann::json& j, Measurements& value);

void to_json(nlohmann::json& j, const Diagnosis& value);
void from_json(const nlohmann::json& j, Diagnosis& value);
void to_json(nlohmann::json& j, const CheckResult& value);
void from_json(const nlohmann::json& j, CheckResult& value);
void to_json(nlohmann::json& j, const ReportRow& value);
void from_json(const nlohmann::json& j, ReportRow& value);
void to_json(nlohmann::json& j, const FolderProblem& value);
void from_json(const nlohmann::json& j, FolderProblem& value);
void to_json(nlohmann::json& j, const Report& value);
void from_json(const nlohmann::json& j, Report& value);

void to_json(nlohmann::json& j, const ExplainedLane& value);
void from_json(const nlohmann::json& j, ExplainedLane& value);
void to_json(nlohmann::json& j, const ExplainedWarp& value);
void from_json(const nlohmann::json& j, ExplainedWarp& value);
void to_json(nlohmann::json& j, const ExplainedLine& value);
void from_json(const nlohmann::json& j, ExplainedLine& value);
void to_json(nlohmann::json& j, const ExplainedStride& value);
void from_json(const nlohmann::json& j, ExplainedStride& value);
void to_json(nlohmann::json& j, const Explanation& value);
void from_json(const nlohmann::json& j, Explanation& value);

void to_json(nlohmann::json& j, const Sweep& value);

Verdict verdict_from_string(const std::string& text);

}  // namespace grader
