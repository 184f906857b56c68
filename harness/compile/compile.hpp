#pragma once

// From kernel source to a loadable image, without a GPU: include vetting, NVRTC, and the entry's
// parameter list read from the PTX. Nothing here throws for a bad program: a failed compile is a
// CompileOutcome with ok == false and a log the student can read.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "exercise/exercise.hpp"
#include "model/measurements.hpp"

namespace grader {

// Untrusted source may include only the harness's headers, and nothing may read the host's
// files: NVRTC opens any absolute or relative path it is given and prints its lines in the log.
// Every #include (also #include_next, #import, the %: digraph, computed includes) whose operand is
// not literally one of allowed_headers is refused with its line, as is __has_include, and #line
// (which would make the log name other files).
std::vector<SourceProblem> vet_includes(std::string_view source,
                                        const std::vector<std::string>& allowed_headers);

struct HeaderSource {
    std::string include_name;
    std::string content;
};

struct CompileRequest {
    std::string source;
    std::string source_name = "probe.cu";      // the name the log uses
    std::string kernel_name;                   // looked up with nvrtcAddNameExpression
    std::string arch;                          // "sm_90": a cubin and PTX for compute_90
    std::vector<std::string> options;          // the exercise's, identical for every kernel
    std::vector<HeaderSource> headers;         // the only files NVRTC can see
    bool vet = true;                           // false for the harness's own kernels
};

struct CompiledKernel {
    CompileOutcome outcome;
    std::string ptx;
    std::string cubin;  // bytes; empty if the arch is virtual or the compile failed
};

// Vets, then compiles with NVRTC for request.arch. The outcome's param_sizes come from the
// PTX entry (param_source "ptx"); the GPU path later replaces them with cuFuncGetParamInfo's.
CompiledKernel compile_kernel(const CompileRequest& request);

// Removes from an NVRTC log everything that is not about the student's own file: absolute paths
// are replaced by their base name, and lines naming any file other than source_name or a provided
// header are dropped.
std::string sanitize_log(std::string_view log, std::string_view source_name);

struct PtxParam {
    std::string ptx_type;  // ".u64", ".u32", ".f32", ".align 8 .b8 ...[16]"
    std::size_t size = 0;
};

// The parameters of `.entry entry_name(...)` in PTX text; ok == false if there is no such entry.
struct PtxEntry {
    bool found = false;
    std::vector<PtxParam> params;
};
PtxEntry ptx_entry(std::string_view ptx, std::string_view entry_name);

// Compares parameter sizes with the exercise's ABI; empty when they match, else one sentence
// such as "parameter 3 (n) is 4 bytes; the ABI expects size_t, 8 bytes".
std::string abi_problem(const std::vector<std::size_t>& sizes,
                        const std::vector<KernelParameter>& abi);

// "probeSharedStride(float const*, float*, unsigned long, int)" from the mangled name; the name
// itself where it is not mangled.
std::string demangle(const std::string& lowered_name);

// "13.0".
std::string nvrtc_version();

}  // namespace grader
