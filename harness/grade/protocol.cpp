#include "grade/protocol.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "common/kernel_ids.hpp"
#include "model/finding.hpp"
#include "model/json.hpp"
#include "text/text_safety.hpp"

namespace grader {

void to_json(nlohmann::json& j, const SourceLocation& v) {
    j = nlohmann::json{{"file", v.file}, {"line", v.line}, {"column", v.column}};
}
void from_json(const nlohmann::json& j, SourceLocation& v) {
    v.file = j.value("file", "");
    v.line = j.value("line", 0);
    v.column = j.value("column", 0);
}

void to_json(nlohmann::json& j, const Submission& v) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : v.rows) {
        rows.push_back(
            {{"kernel", row.subject.kernel},
             {"stride", row.subject.stride},
             {"key", row.key},
             {"predicted_degree", row.predicted_degree ? nlohmann::json(*row.predicted_degree)
                                                       : nlohmann::json(nullptr)},
             {"measured", row.measured ? nlohmann::json(*row.measured) : nlohmann::json(nullptr)},
             {"location", row.location},
             {"predicted_location", row.predicted_location},
             {"measured_location", row.measured_location}});
    }
    const auto problems_json = [](const std::vector<SubmissionProblem>& list) {
        nlohmann::json problems = nlohmann::json::array();
        for (const auto& problem : list) {
            problems.push_back({{"location", problem.location},
                                {"field", problem.field},
                                {"kind", std::string(to_string(problem.kind))},
                                {"message", problem.message}});
        }
        return problems;
    };
    j = nlohmann::json{{"directory", v.directory.string()},
                       {"student_id", v.student_id},
                       {"gpu", v.gpu_name},
                       {"rows", rows},
                       {"sentence", v.sentence},
                       {"problems", problems_json(v.problems)},
                       {"notes", problems_json(v.notes)},
                       {"answers_given", v.answers_given},
                       {"unreadable", v.unreadable},
                       {"missing", v.missing}};
}

void from_json(const nlohmann::json& j, Submission& v) {
    v.directory = j.value("directory", "");
    v.student_id = j.value("student_id", "");
    v.gpu_name = j.value("gpu", "");
    v.sentence = j.value("sentence", "");
    v.rows.clear();
    for (const auto& row : j.value("rows", nlohmann::json::array())) {
        SubmissionRow r;
        r.subject.kernel = row.value("kernel", std::string(kStudentKernel));
        r.subject.stride = row.value("stride", 0);
        r.key = row.value("key", "");
        if (row.contains("predicted_degree") && !row["predicted_degree"].is_null()) {
            r.predicted_degree = row["predicted_degree"].get<int>();
        }
        if (row.contains("measured") && !row["measured"].is_null()) {
            r.measured = row["measured"].get<double>();
        }
        for (auto [key, location] : {std::pair{"location", &r.location},
                                     std::pair{"predicted_location", &r.predicted_location},
                                     std::pair{"measured_location", &r.measured_location}}) {
            if (row.contains(key)) {
                row[key].get_to(*location);
            }
        }
        v.rows.push_back(r);
    }
    const auto problems_from = [&j](const char* key) {
        std::vector<SubmissionProblem> list;
        for (const auto& problem : j.value(key, nlohmann::json::array())) {
            SubmissionProblem p;
            if (problem.contains("location")) {
                problem["location"].get_to(p.location);
            }
            p.field = problem.value("field", "");
            p.kind = finding_kind_from_string(problem.value("kind", ""))
                         .value_or(FindingKind::answer_malformed);
            p.message = problem.value("message", "");
            list.push_back(p);
        }
        return list;
    };
    v.problems = problems_from("problems");
    v.notes = problems_from("notes");
    v.answers_given = j.value("answers_given", 0);
    v.unreadable = j.value("unreadable", false);
    v.missing = j.value("missing", false);
}

namespace {

const char* kind_name(Stage::Kind kind) {
    switch (kind) {
        case Stage::Kind::answers:
            return "answers";
        case Stage::Kind::compile:
            return "compile";
        case Stage::Kind::wait_for_device:
            return "wait_for_device";
        case Stage::Kind::load:
            return "load";
        case Stage::Kind::run:
            return "run";
        case Stage::Kind::time:
            return "time";
        case Stage::Kind::count:
            return "count";
        case Stage::Kind::explain:
            return "explain";
    }
    return "answers";
}

Stage::Kind kind_from_name(const std::string& name) {
    for (const auto kind : {Stage::Kind::answers, Stage::Kind::compile,
                            Stage::Kind::wait_for_device, Stage::Kind::load, Stage::Kind::run,
                            Stage::Kind::time, Stage::Kind::count, Stage::Kind::explain}) {
        if (name == kind_name(kind)) {
            return kind;
        }
    }
    throw std::invalid_argument("unknown stage '" + name + "'");
}

nlohmann::json stage_json(const Stage& stage) {
    return {{"kind", kind_name(stage.kind)}, {"kernel", stage.kernel}, {"stride", stage.stride}};
}

Stage stage_from_json(const nlohmann::json& j) {
    Stage stage;
    stage.kind = kind_from_name(j.at("kind").get<std::string>());
    stage.kernel = j.value("kernel", "");
    stage.stride = j.value("stride", 0);
    return stage;
}

nlohmann::json figures_json(const GradeFigures& v) {
    return {{"seed", v.seed},
            {"unnamed_strides", v.unnamed_strides},
            {"timing_rounds", v.timing_rounds},
            {"timing_seconds", v.timing_seconds},
            {"context_seconds", v.context_seconds},
            {"wall_seconds", v.wall_seconds}};
}

GradeFigures figures_from_json(const nlohmann::json& j) {
    GradeFigures v;
    v.seed = j.value("seed", std::uint64_t{0});
    v.unnamed_strides = j.value("unnamed_strides", std::vector<int>{});
    v.timing_rounds = j.value("timing_rounds", 0);
    v.timing_seconds = j.value("timing_seconds", 0.0);
    v.context_seconds = j.value("context_seconds", 0.0);
    v.wall_seconds = j.value("wall_seconds", 0.0);
    return v;
}

}  // namespace

LoadFacts LoadFacts::of(const CompileOutcome& outcome) {
    LoadFacts facts;
    if (outcome.param_source == "driver") {
        facts.param_sizes = outcome.param_sizes;
        facts.param_source = outcome.param_source;
    }
    facts.static_shared_bytes = outcome.static_shared_bytes;
    facts.registers = outcome.registers;
    facts.abi_problem = outcome.abi_problem;
    return facts;
}

void LoadFacts::apply_to(CompileOutcome& outcome) const {
    if (!param_sizes.empty()) {
        outcome.param_sizes = param_sizes;
        outcome.param_source = param_source;
    }
    outcome.static_shared_bytes = static_shared_bytes;
    outcome.registers = registers;
    outcome.abi_problem = abi_problem;
}

void FdProgressSink::write_line(const nlohmann::json& message) {
    // Invalid UTF-8 from a student's file is replaced, never allowed to break the channel.
    const std::string line = text::json_text(message, -1) + "\n";
    std::size_t written = 0;
    while (written < line.size()) {
        const ssize_t n = ::write(fd_, line.data() + written, line.size() - written);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return;  // the grader went away; nothing left to tell
        }
        written += static_cast<std::size_t>(n);
    }
}

void FdProgressSink::stage(const Stage& stage, const StageLimit& limit) {
    nlohmann::json message = {
        {"type", "stage"}, {"stage", stage_json(stage)}, {"limit_seconds", limit.seconds}};
    if (!limit.basis.empty()) {
        message["limit_basis"] = limit.basis;
    }
    write_line(message);
}
void FdProgressSink::submission(const Submission& value) {
    write_line({{"type", "submission"}, {"value", value}});
}
void FdProgressSink::environment(const Environment& value) {
    write_line({{"type", "environment"}, {"value", value}});
}
void FdProgressSink::compiled(const std::string& kernel, const CompileOutcome& value) {
    write_line({{"type", "compiled"}, {"kernel", kernel}, {"value", value}});
}
void FdProgressSink::loaded(const std::string& kernel, const LoadFacts& value) {
    write_line({{"type", "loaded"},
                {"kernel", kernel},
                {"value",
                 {{"param_sizes", value.param_sizes},
                  {"param_source", value.param_source},
                  {"static_shared_bytes", value.static_shared_bytes},
                  {"registers", value.registers},
                  {"abi_problem", value.abi_problem}}}});
}
void FdProgressSink::run(const KernelRun& value) {
    write_line({{"type", "run"}, {"value", value}});
}
void FdProgressSink::measured(const GradeFigures& value) {
    write_line({{"type", "measured"}, {"value", figures_json(value)}});
}
void FdProgressSink::interruption(const Interruption& value) {
    write_line({{"type", "interruption"}, {"value", value}});
}
void FdProgressSink::explanation(const Explanation& value) {
    write_line({{"type", "explanation"}, {"value", value}});
}

void Observations::stage(const Stage& stage, const StageLimit& limit) {
    current_stage = stage;
    current_limit = limit;
}
void Observations::submission(const Submission& value) {
    answers = value;
}
void Observations::environment(const Environment& value) {
    measurements.environment = value;
}
void Observations::compiled(const std::string& kernel, const CompileOutcome& value) {
    if (kernel == kStudentKernel) {
        measurements.student = value;
    } else {
        measurements.references[kernel] = value;
    }
}
void Observations::loaded(const std::string& kernel, const LoadFacts& value) {
    value.apply_to(kernel == kStudentKernel ? measurements.student
                                            : measurements.references[kernel]);
}
void Observations::run(const KernelRun& value) {
    if (KernelRun* existing = measurements.run(value.kernel, value.stride)) {
        *existing = value;
    } else {
        measurements.runs.push_back(value);
    }
}
void Observations::measured(const GradeFigures& value) {
    measurements.seed = value.seed;
    measurements.unnamed_strides = value.unnamed_strides;
    measurements.timing_rounds = value.timing_rounds;
    measurements.timing_seconds = value.timing_seconds;
    measurements.context_seconds = value.context_seconds;
    measurements.wall_seconds = value.wall_seconds;
}
void Observations::interruption(const Interruption& value) {
    measurements.interruption = value;
}
void Observations::explanation(const Explanation& value) {
    lane_tables = value;
}

double dispatch_message(const std::string& line, ProgressSink& sink) {
    const auto message = nlohmann::json::parse(line, nullptr, false);
    if (message.is_discarded() || !message.is_object()) {
        throw std::invalid_argument("the worker sent a line that is not JSON");
    }
    try {
        const std::string type = message.value("type", "");
        if (type == "stage") {
            const StageLimit limit{message.value("limit_seconds", 0.0),
                                   message.value("limit_basis", std::string())};
            sink.stage(stage_from_json(message.at("stage")), limit);
            return limit.seconds;
        }
        const nlohmann::json& value = message.at("value");
        if (type == "submission") {
            sink.submission(value.get<Submission>());
        } else if (type == "environment") {
            sink.environment(value.get<Environment>());
        } else if (type == "compiled") {
            sink.compiled(message.at("kernel").get<std::string>(), value.get<CompileOutcome>());
        } else if (type == "loaded") {
            LoadFacts facts;
            value.at("param_sizes").get_to(facts.param_sizes);
            value.at("param_source").get_to(facts.param_source);
            value.at("static_shared_bytes").get_to(facts.static_shared_bytes);
            value.at("registers").get_to(facts.registers);
            value.at("abi_problem").get_to(facts.abi_problem);
            sink.loaded(message.at("kernel").get<std::string>(), facts);
        } else if (type == "run") {
            sink.run(value.get<KernelRun>());
        } else if (type == "measured") {
            sink.measured(figures_from_json(value));
        } else if (type == "interruption") {
            sink.interruption(value.get<Interruption>());
        } else if (type == "explanation") {
            sink.explanation(value.get<Explanation>());
        } else {
            throw std::invalid_argument("the worker sent an unknown message '" + type + "'");
        }
    } catch (const nlohmann::json::exception& error) {
        throw std::invalid_argument(std::string("the worker sent a malformed message: ") +
                                    error.what());
    }
    return 0.0;
}

}  // namespace grader
