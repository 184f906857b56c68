#pragma once

// What the worker process tells the grader, one JSON object per line on file descriptor 3, each
// sent once as it happens, so nothing already observed is lost when the worker is killed mid-way
// and no message repeats what an earlier one said:
//   {"type":"stage","stage":{"kind":"run","kernel":"student","stride":8},"limit_seconds":30}
//                                               (with "limit_basis" where the limit has one)
//   {"type":"submission","value":{...}}        the answers file, read
//   {"type":"environment","value":{...}}
//   {"type":"compiled","kernel":"student","value":{...}}
//   {"type":"loaded","kernel":"student","value":{...}}   what loading it adds (LoadFacts)
//   {"type":"run","value":{...}}                a KernelRun; a later one for the same kernel and
//                                               stride (with its timing) replaces it
//   {"type":"measured","value":{...}}          grade-wide figures: seed, strides drawn, rounds
//   {"type":"interruption","value":{...}}
//   {"type":"explanation","value":{...}}       grader explain's lane tables

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "exercise/exercise.hpp"
#include "grade/stage.hpp"
#include "model/explanation.hpp"
#include "model/measurements.hpp"

namespace grader {

void to_json(nlohmann::json& j, const SourceLocation& value);
void from_json(const nlohmann::json& j, SourceLocation& value);
void to_json(nlohmann::json& j, const Submission& value);
void from_json(const nlohmann::json& j, Submission& value);

// Grade-wide figures the worker decides or measures.
struct GradeFigures {
    std::uint64_t seed = 0;
    std::vector<int> unnamed_strides;
    int timing_rounds = 0;
    double timing_seconds = 0.0;
    double context_seconds = 0.0;
    double wall_seconds = 0.0;
};

// What loading a compiled kernel adds to its compile outcome, sent on its own so that the
// outcome (with the student's log and signature) crosses the pipe once.
struct LoadFacts {
    std::vector<std::size_t> param_sizes;  // empty: the compile's own stand
    std::string param_source;
    int static_shared_bytes = -1;
    int registers = -1;
    std::string abi_problem;

    static LoadFacts of(const CompileOutcome& outcome);
    void apply_to(CompileOutcome& outcome) const;
};

// Where the worker reports to: a pipe in the real worker, Observations in process.
class ProgressSink {
public:
    virtual ~ProgressSink() = default;
    virtual void stage(const Stage& stage, const StageLimit& limit) = 0;
    virtual void submission(const Submission& value) = 0;
    virtual void environment(const Environment& value) = 0;
    virtual void compiled(const std::string& kernel, const CompileOutcome& value) = 0;
    virtual void loaded(const std::string& kernel, const LoadFacts& value) = 0;
    virtual void run(const KernelRun& value) = 0;
    virtual void measured(const GradeFigures& value) = 0;
    virtual void interruption(const Interruption& value) = 0;
    virtual void explanation(const Explanation& value) = 0;
};

// Writes each event as one line to a file descriptor.
class FdProgressSink final : public ProgressSink {
public:
    explicit FdProgressSink(int fd) : fd_(fd) {}
    void stage(const Stage& stage, const StageLimit& limit) override;
    void submission(const Submission& value) override;
    void environment(const Environment& value) override;
    void compiled(const std::string& kernel, const CompileOutcome& value) override;
    void loaded(const std::string& kernel, const LoadFacts& value) override;
    void run(const KernelRun& value) override;
    void measured(const GradeFigures& value) override;
    void interruption(const Interruption& value) override;
    void explanation(const Explanation& value) override;

private:
    void write_line(const nlohmann::json& message);
    int fd_;
};

// Gathers the events into what was observed: the grader's side of the pipe, and an in-process
// sink for tests.
class Observations : public ProgressSink {
public:
    void stage(const Stage& stage, const StageLimit& limit) override;
    void submission(const Submission& value) override;
    void environment(const Environment& value) override;
    void compiled(const std::string& kernel, const CompileOutcome& value) override;
    void loaded(const std::string& kernel, const LoadFacts& value) override;
    void run(const KernelRun& value) override;
    void measured(const GradeFigures& value) override;
    void interruption(const Interruption& value) override;
    void explanation(const Explanation& value) override;

    Measurements measurements;
    std::optional<Submission> answers;
    std::optional<Explanation> lane_tables;
    std::optional<Stage> current_stage;
    StageLimit current_limit;
};

// Decodes one line of the worker's and passes it to `sink`. Returns the new stage's time limit
// for a stage message (0 for others); throws std::invalid_argument for a malformed line.
double dispatch_message(const std::string& line, ProgressSink& sink);

}  // namespace grader
