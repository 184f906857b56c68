#pragma once

// What the worker process tells the grader, one JSON object per line on file descriptor 3:
//   {"type":"stage","stage":"run student stride 8","limit_seconds":30}
//   {"type":"submission","value":{...}}
//   {"type":"measurements","value":{...}}   (a full snapshot; the last one wins)
// Snapshots mean nothing already observed is lost when the worker is killed mid-way.

#include <nlohmann/json.hpp>
#include <string>

#include "exercise/exercise.hpp"
#include "model/measurements.hpp"

namespace grader {

void to_json(nlohmann::json& j, const SourceLocation& value);
void from_json(const nlohmann::json& j, SourceLocation& value);
void to_json(nlohmann::json& j, const Submission& value);
void from_json(const nlohmann::json& j, Submission& value);

// Where the worker reports to: a pipe in the real worker, a callback in process.
class ProgressSink {
public:
    virtual ~ProgressSink() = default;
    virtual void stage(const std::string& name, double limit_seconds) = 0;
    virtual void submission(const Submission& value) = 0;
    virtual void measurements(const Measurements& value) = 0;
};

// Writes the messages above to a file descriptor.
class FdProgressSink final : public ProgressSink {
public:
    explicit FdProgressSink(int fd) : fd_(fd) {}
    void stage(const std::string& name, double limit_seconds) override;
    void submission(const Submission& value) override;
    void measurements(const Measurements& value) override;

private:
    void write_line(const nlohmann::json& message);
    int fd_;
};

// Stages whose code is the student's: a timeout or fault there is the student's result.
bool stage_runs_student_code(const std::string& stage);

}  // namespace grader
