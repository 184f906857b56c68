#pragma once

// Every kernel of a grade compiled side by side: the exercise's own here, each on a thread of its
// own (from the machine's compile cache after the first grade: compile_cache.hpp), while the
// student's compiles in a confined child, so that the confinement costs a grade the child's start,
// not a queue of compiles behind one another. The student's source is never cached.

#include <future>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compile/compile.hpp"
#include "exercise/exercise.hpp"
#include "grade/protocol.hpp"
#include "grade/sources.hpp"
#include "model/measurements.hpp"

namespace grader {

class GradeCompiles {
public:
    // Starts every compile of `sources`, with the shared-memory poison where `poison`.
    GradeCompiles(const Exercise& exercise, KernelSources sources, bool poison,
                  const UntrustedCompileOptions& options);

    // Waits for the compiles and reports each outcome (the student's, with its ABI problem where
    // it has one, where `with_student`). False where a kernel of the exercise's own did not
    // compile. Throws NvrtcError, or std::runtime_error where the confined compile failed.
    bool finish(bool with_student, Environment& environment, ProgressSink& sink);

    // Every kernel's compile, by KernelSpec id, once finished.
    std::map<std::string, CompiledKernel>& kernels() { return compiled_; }
    // The poison kernel, where it was asked for and compiled.
    const std::optional<CompiledKernel>& shared_poison() const { return poison_; }

private:
    void record_student(CompiledKernel student, Environment& environment, ProgressSink& sink);

    const Exercise& exercise_;
    KernelSources sources_;
    std::vector<std::string> trusted_ids_;  // the exercise's kernels, in the compiles' order
    bool poison_asked_ = false;
    std::future<ConfinedCompiles> compiles_;
    std::map<std::string, CompiledKernel> compiled_;
    std::optional<CompiledKernel> poison_;
};

}  // namespace grader
