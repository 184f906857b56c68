#pragma once

// The kernels of one grade, as compile requests: the student's (untrusted, vetted) and the
// exercise's own, built with the same options for the same architecture.

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "compile/compile.hpp"
#include "exercise/exercise.hpp"

namespace grader {

struct KernelSources {
    std::map<std::string, CompileRequest> requests;  // by kernel id; no student's where unread
    std::string student_missing_reason;              // then, why: "probe.cu was not found ..."
    bool student_not_found = false;                  // the folder has no such file
    std::optional<CompileRequest> shared_poison;
};

// Reads the submission's source (bounded by the exercise's limit; submission_dir empty: none)
// and the exercise's kernels. `arch` is "sm_XY". Throws std::runtime_error if the exercise's own
// files cannot be read.
KernelSources load_kernel_sources(const Exercise& exercise,
                                  const std::filesystem::path& submission_dir,
                                  const std::string& arch);

// Reads one of the exercise's own files; throws naming the path if it cannot.
std::string read_harness_file(const std::filesystem::path& path);

}  // namespace grader
