#pragma once

// The kernels of one grade, as compile requests: the student's (untrusted, vetted) and the
// harness's own, built with the same options for the same architecture.

#include <filesystem>
#include <future>
#include <optional>
#include <string>

#include "compile/compile.hpp"
#include "exercise/exercise.hpp"

namespace grader {

struct ProbeSources {
    std::optional<CompileRequest> student;  // nullopt when the source could not be read
    std::string student_missing_reason;     // then, why: "probe.cu was not found in ..."
    CompileRequest reference;
    std::optional<CompileRequest> shared_poison;
};

// Reads the submission's source (bounded by the exercise's limit) and the exercise's kernels.
// `arch` is "sm_XY" for a GPU, or the exercise's default where there is none.
// Throws std::runtime_error if the exercise's own files cannot be read.
ProbeSources load_probe_sources(const Exercise& exercise,
                                const std::filesystem::path& submission_dir,
                                const std::string& arch);

// Waits for the student's compile (if one was started) and checks its PTX parameter list
// against the exercise's ABI; without a source, the outcome says why nothing was compiled.
CompiledKernel finish_student_compile(std::future<CompiledKernel>& compile,
                                      const ProbeSources& sources, const Exercise& exercise);

// Reads one of the exercise's own files; throws naming the path if it cannot.
std::string read_harness_file(const std::filesystem::path& path);

}  // namespace grader
