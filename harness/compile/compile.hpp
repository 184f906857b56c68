#pragma once

// From kernel source to a loadable image, without a GPU: include vetting, NVRTC, and the entry's
// parameter list read from the PTX. Nothing here throws for a bad program: a failed compile is a
// CompileOutcome with ok == false and a log the student can read.

#include <nvrtc.h>

#include <cstddef>
#include <stdexcept>
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
//
// The scanner follows the preprocessor's phases: line splices (backslash-newline, also inside a
// directive's name), // and /* */ comments, string and character literals, raw strings, digit
// separators, the %: digraph. Also refused: any trigraph (NVRTC ignores them, but a reader of the
// source would not), a backslash followed by blanks at the end of a line, a carriage return
// without a line feed, a NUL byte, line markers (# 12 "file"), unknown directives, _Pragma, and
// #pragma other than once, unroll, nounroll and the nv_diag_* / diag_* family. As a second
// line of defence, a line inside a comment, raw string or continued line that reads on its own
// as a refused directive is refused too: it costs a student one deleted line, and protects
// against any difference between this scanner and NVRTC's on where a comment begins.
// Problems carry the 1-based line and column of the directive or token; messages do not repeat
// the line (see to_string below).
std::vector<SourceProblem> vet_includes(std::string_view source,
                                        const std::vector<std::string>& allowed_headers);

// "probe.cu:3:1: #include \"/etc/passwd\" is not allowed; ..." as a compiler would print it.
std::string to_string(const SourceProblem& problem, std::string_view source_name);

// An NVRTC call other than the compile itself failed: the harness's fault or the machine's.
class NvrtcError : public std::runtime_error {
public:
    NvrtcError(nvrtcResult status, const std::string& message)
        : std::runtime_error(message), status_(status) {}
    nvrtcResult status() const noexcept { return status_; }

private:
    nvrtcResult status_;
};

struct HeaderSource {
    std::string include_name;
    std::string content;
};

struct CompileRequest {
    std::string source;
    std::string source_name = "probe.cu";  // the name the log uses
    std::string kernel_name;               // looked up with nvrtcAddNameExpression
    std::string arch;                      // "sm_90": a cubin and PTX for compute_90
    std::vector<std::string> options;      // the exercise's, identical for every kernel
    std::vector<HeaderSource> headers;     // the only files NVRTC can see
    bool vet = true;                       // false for the harness's own kernels
};

struct CompiledKernel {
    CompileOutcome outcome;
    std::string ptx;
    std::string cubin;  // bytes; empty if the arch is virtual or the compile failed
};

// Vets, then compiles with NVRTC for request.arch. The outcome's param_sizes come from the
// PTX entry (param_source "ptx"); the GPU path later replaces them with cuFuncGetParamInfo's.
// With -arch=sm_XY one NVRTC compile gives both the cubin and the PTX (NVRTC 13). NVRTC sees the
// source as "/<source_name>", so that no host directory reaches the PTX, the cubin's line table
// or the log. A source refused by vetting never reaches NVRTC: attempted is true, ok false,
// options empty, and the log lists the problems. Callable from several threads at once.
// Throws NvrtcError only for NVRTC failures that are not the program's fault, and
// std::invalid_argument for an empty arch or kernel name.
CompiledKernel compile_kernel(const CompileRequest& request);

// Removes from an NVRTC log everything that is not about the student's own file: absolute paths
// are replaced by their base name, and lines naming any file other than source_name or a provided
// header are dropped.
// A diagnostic about another file is dropped with its quoted lines, so a host file's contents never
// come back; the compiler's summary lines are kept with paths shortened.
std::string sanitize_log(std::string_view log, std::string_view source_name,
                         const std::vector<std::string>& header_names = {});

// The PTX with the host directory removed from its .file directives (a PTX simulator reads them
// with the .loc lines): `.file 1 "/home/x/probe.cu"` becomes `.file 1 "probe.cu"`.
std::string ptx_without_host_paths(std::string_view ptx);

struct PtxParam {
    std::string ptx_type;  // ".u64", ".u32", ".f32", ".align 8 .b8 ...[16]"
    std::size_t size = 0;
};

// The parameters of `.entry entry_name(...)` in PTX text; found == false if there is no such entry.
struct PtxEntry {
    bool found = false;
    std::vector<PtxParam> params;
};
PtxEntry ptx_entry(std::string_view ptx, std::string_view entry_name);

// Compares parameter sizes with the exercise's ABI; empty when they match, else one sentence
// such as "parameter 3 (n) is 4 bytes; the ABI expects size_t, 8 bytes".
// kernel_name, where given, names the kernel in the count message: "the kernel has 3 parameters;
// the ABI has 4: probeSharedStride(const float* in, float* out, size_t n, int stride)".
std::string abi_problem(const std::vector<std::size_t>& sizes,
                        const std::vector<KernelParameter>& abi, std::string_view kernel_name = {});

// "probeSharedStride(float const*, float*, unsigned long, int)" from the mangled name; the name
// itself where it is not mangled.
std::string demangle(const std::string& lowered_name);

// "13.0".
std::string nvrtc_version();

}  // namespace grader
