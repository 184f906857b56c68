#include "grade/protocol.hpp"

#include <unistd.h>

#include <cerrno>

#include "model/json.hpp"

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
        rows.push_back({{"stride", row.stride},
                        {"predicted_degree", row.predicted_degree ? nlohmann::json(*row.predicted_degree)
                                                                  : nlohmann::json(nullptr)},
                        {"measured_ratio", row.measured_ratio ? nlohmann::json(*row.measured_ratio)
                                                              : nlohmann::json(nullptr)},
                        {"location", row.location}});
    }
    nlohmann::json problems = nlohmann::json::array();
    for (const auto& problem : v.problems) {
        problems.push_back(
            {{"location", problem.location}, {"field", problem.field}, {"message", problem.message}});
    }
    j = nlohmann::json{{"directory", v.directory.string()},
                       {"student_id", v.student_id},
                       {"gpu", v.gpu_name},
                       {"rows", rows},
                       {"sentence", v.sentence},
                       {"problems", problems}};
}

void from_json(const nlohmann::json& j, Submission& v) {
    v.directory = j.value("directory", "");
    v.student_id = j.value("student_id", "");
    v.gpu_name = j.value("gpu", "");
    v.sentence = j.value("sentence", "");
    v.rows.clear();
    for (const auto& row : j.value("rows", nlohmann::json::array())) {
        SubmissionRow r;
        r.stride = row.value("stride", 0);
        if (row.contains("predicted_degree") && !row["predicted_degree"].is_null()) {
            r.predicted_degree = row["predicted_degree"].get<int>();
        }
        if (row.contains("measured_ratio") && !row["measured_ratio"].is_null()) {
            r.measured_ratio = row["measured_ratio"].get<double>();
        }
        if (row.contains("location")) {
            row["location"].get_to(r.location);
        }
        v.rows.push_back(r);
    }
    v.problems.clear();
    for (const auto& problem : j.value("problems", nlohmann::json::array())) {
        SubmissionProblem p;
        if (problem.contains("location")) {
            problem["location"].get_to(p.location);
        }
        p.field = problem.value("field", "");
        p.message = problem.value("message", "");
        v.problems.push_back(p);
    }
}

void FdProgressSink::write_line(const nlohmann::json& message) {
    // Invalid UTF-8 from a student's file is replaced, never allowed to break the channel.
    const std::string line =
        message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
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

void FdProgressSink::stage(const std::string& name, double limit_seconds) {
    write_line({{"type", "stage"}, {"stage", name}, {"limit_seconds", limit_seconds}});
}

void FdProgressSink::submission(const Submission& value) {
    write_line({{"type", "submission"}, {"value", value}});
}

void FdProgressSink::measurements(const Measurements& value) {
    write_line({{"type", "measurements"}, {"value", value}});
}

bool stage_runs_student_code(const std::string& stage) {
    return stage == "compile" || stage.rfind("run student", 0) == 0 || stage == "time" ||
           stage == "load";
}

}  // namespace grader
