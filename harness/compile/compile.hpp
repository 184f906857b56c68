#pragma once

// From kernel source to a loadable image, without a GPU: include vetting, NVRTC, and the entry's
// parameter list read from the PTX. Nothing here throws for a bad program: a failed compile is a
// CompileOutcome with ok == false and a log the student can read.

#include <nvrtc.h>

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
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
// directive's name), // and /* */ comments (a comment spanning lines is one blank), string and
// character literals, raw strings, digit separators, the %: digraph. Every # or %: outside a
// directive is vetted as a directive wherever it stands (NVRTC starts one after a comment that
// spans lines, even mid-line), and so is a # after such a comment inside a directive. Also
// refused: ## and %:%: anywhere (pasting can build __has_include or _Pragma from pieces), a # in a
// directive other than one stringizing a parameter of a function-like macro (or in #error and
// #warning text), any trigraph (NVRTC ignores them, but a reader of the source would not), a
// backslash followed by blanks at the end of a line, a carriage return without a line feed, a NUL
// byte, a byte that is not UTF-8 (the first one, by line and column), line markers (# 12
// "file"), unknown directives, _Pragma, and #pragma other than once, unroll, nounroll and the
// nv_diag_* / diag_* family. A UTF-8 byte-order mark at the very start is accepted. As a second
// line of defence, a line inside a comment, raw string or continued line that reads on its own
// as a refused directive is refused too: it costs a student one deleted line, and protects
// against any difference between this scanner and NVRTC's on where a comment begins.
// Problems carry the 1-based line and column (in bytes) of the directive or token; messages do
// not repeat the line (see to_string below).
std::vector<SourceProblem> vet_includes(std::string_view source,
                                        const std::vector<std::string>& allowed_headers);

// "probe.cu:3:1: #include \"/etc/passwd\" is not allowed; ..." as a compiler would print it.
std::string to_string(const SourceProblem& problem, std::string_view source_name);

// NVRTC itself failed (an NVRTC call other than a compile that found errors in the program, or
// a compile that ended in NVRTC_ERROR_BUILTIN_OPERATION_FAILURE and the like): the machine's
// fault or the harness's, never the student's. what() says what NVRTC said (its own log, where
// it wrote one) and what to fix on the machine; it names no file of the grader's own source.
class NvrtcError : public std::runtime_error {
public:
    NvrtcError(nvrtcResult status, const std::string& message)
        : std::runtime_error(message), status_(status) {}
    NvrtcError(nvrtcResult status, std::string call, const std::string& message,
               std::string nvrtc_log)
        : std::runtime_error(message),
          status_(status),
          call_(std::move(call)),
          nvrtc_log_(std::move(nvrtc_log)) {}
    nvrtcResult status() const noexcept { return status_; }
    const std::string& call() const noexcept { return call_; }            // "nvrtcCompileProgram"
    const std::string& nvrtc_log() const noexcept { return nvrtc_log_; }  // may be empty

private:
    nvrtcResult status_;
    std::string call_;
    std::string nvrtc_log_;
};

// The message of an NvrtcError for `call` failing with `status`: NVRTC's error string, its log
// (bounded) where there is one, and what to check on the machine, e.g. for
// NVRTC_ERROR_BUILTIN_OPERATION_FAILURE "NVRTC could not use its builtins library
// libnvrtc-builtins.so.13.0; check that the CUDA toolkit's library folder /usr/local/cuda/lib64
// holds it and that it is readable".
std::string nvrtc_failure_message(nvrtcResult status, const std::string& call,
                                  const std::string& nvrtc_log);

// The most of NVRTC's log a CompileOutcome keeps; the rest is cut, and counted in log_cut_bytes.
inline constexpr std::size_t kMaxCompileLogBytes = 64 * 1024;

// Cuts text to at most max_bytes, at a line end where there is one, and ends it with a line
// saying how many bytes were cut: "[the compile log was cut here: 1563210 more bytes]". Adds the
// count of bytes left out to cut_bytes. Text within the bound comes back unchanged.
std::string bounded_log(std::string text, std::size_t max_bytes, std::size_t& cut_bytes);

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
    // How the compile was confined, for Environment::confinement: "Landlock ABI 7 and an empty
    // mount namespace: ...", "no confinement: ...". Empty for an in-process compile_kernel.
    std::string confinement;
};

// Vets, then compiles with NVRTC for request.arch, in this process: for the harness's own
// kernels. A student's source goes through compile_untrusted. The outcome's param_sizes come from
// the PTX entry (param_source "ptx"); the GPU path later replaces them with cuFuncGetParamInfo's.
// With -arch=sm_XY one NVRTC compile gives both the cubin and the PTX (NVRTC 13). NVRTC sees the
// source as "/<source_name>", so that no host directory reaches the PTX, the cubin's line table
// or the log. A source refused by vetting never reaches NVRTC: attempted is true, ok false,
// options empty, and the log lists the problems. Callable from several threads at once.
// The log is bounded to kMaxCompileLogBytes; clock_reads are the PTX's (ptx_clock_reads).
// A kernel name that is overloaded, missing or not a __global__ function is said in one plain
// sentence. A leading UTF-8 byte-order mark is dropped.
// Throws NvrtcError only for NVRTC failures that are not the program's fault, and
// std::invalid_argument for an empty arch or kernel name.
CompiledKernel compile_kernel(const CompileRequest& request);

struct UntrustedCompileOptions {
    std::filesystem::path grader_executable;             // the grader itself: current_executable()
    std::vector<std::string> arguments = {"__compile"};  // what makes it the compile child
    double seconds = 30.0;                               // the exercise's limits.compile_seconds
    std::size_t memory_bytes = std::size_t{4} << 30;     // resident memory of the compiler
};

// Compiles a student's source in a child process (`grader __compile`) that loads NVRTC and its
// builtins, then confines itself (confine_to_no_files: it can open no file), then compiles on a
// thread with a 512 MiB stack, under a time and a memory limit. Whatever the source does to
// the compiler is the student's failed compile, never an exception: a timeout ("the compile of
// probe.cu did not finish within 30 s"), a memory overrun, a crash ("the compiler crashed on
// probe.cu (signal 11, Segmentation fault)"), an oversized result. The result's confinement says
// how the child was confined. Throws only for the machine's or the harness's faults: NvrtcError
// where NVRTC itself failed, std::runtime_error where the child could not be started or stopped
// before it reached the student's source.
CompiledKernel compile_untrusted(const CompileRequest& request,
                                 const UntrustedCompileOptions& options);

// What the compile child sends of a student's compile is bounded, whatever the source: the
// demangled signature (kMaxSignatureBytes, then "[N bytes, cut]"), the vetting problems
// (kMaxVettingProblems, then one "and N more" entry), the clock reads (kMaxClockReads and one
// "and N more"), each listed text (kMaxListedTextBytes) and the log (kMaxCompileLogBytes). A
// mangled name longer than kMaxLoweredNameBytes cannot be shortened (the kernel is loaded by
// it): the compile is the student's failure, and the returned sentence says why (empty where
// the outcome stands). So no student's text can make a message of the child or of the worker
// exceed its limit.
inline constexpr std::size_t kMaxSignatureBytes = 1024;
inline constexpr std::size_t kMaxLoweredNameBytes = 4096;
inline constexpr std::size_t kMaxVettingProblems = 20;
inline constexpr std::size_t kMaxListedTextBytes = 300;
std::string bound_student_outcome(CompileOutcome& outcome);

// The harness's own kernels and the student's in one confined child, so that NVRTC starts (and
// costs its first-compile setup) once per grade rather than in the grader and again in the
// child. The trusted requests are compiled first, as given (their vet flag is honoured), and
// their results are sent back before NVRTC sees the student's source: nothing the student's
// source does to the child can change them. A fault before the student's compile starts (a crash, a
// timeout while compiling a trusted kernel) is the harness's and throws; from then on it is the
// student's, as in compile_untrusted. The time limit is options.seconds for each.
struct ConfinedCompiles {
    std::vector<CompiledKernel> trusted;  // in the order given
    CompiledKernel student;
};
ConfinedCompiles compile_confined(const std::vector<CompileRequest>& trusted,
                                  const CompileRequest& student,
                                  const UntrustedCompileOptions& options);

struct CompileServiceOptions {
    // The student's request with vet == false is compiled unvetted only where this is set: a
    // test binary's own compile child sets it; `grader __compile` does not, so nothing outside
    // the tests can turn the vetting of a student's source off.
    bool honour_unvetted_requests = false;
    bool confine = true;
    // Load NVRTC's builtins before confining. Only a test turns this off, to see NVRTC fail for
    // want of them as it would on a badly installed machine.
    bool load_nvrtc_first = true;
};

// The child side of compile_untrusted, for `grader __compile`: reads one request from
// input_fd, loads NVRTC and its builtins, confines the process, compiles, and writes the result
// as messages (one line each) on reply_fd. Returns the process's exit status. Call it from a
// single-threaded process (the empty mount namespace needs one).
int serve_compile_request(int input_fd, int reply_fd, const CompileServiceOptions& options = {});

// A file NVRTC was given, as sanitize_log needs it: the name diagnostics use, and its text, so that
// a quoted line can be recognised as the file's own.
struct LoggedFile {
    std::string name;       // "probe.cu", "day15_probe.h"
    std::string_view text;  // may be empty where unknown
};

// Removes from an NVRTC log everything that is not about the student's own file: absolute paths
// are replaced by their base name, and lines naming any file other than the given ones are
// dropped. The student's source is named "/probe.cu" by NVRTC (see compile_kernel); that name,
// the bare name and the name under the working directory are the student's, and a header only
// under its include name: another file that happens to be called probe.cu is someone else's.
// A diagnostic about another file is dropped with its quoted lines, so a host file's contents never
// come back; the compiler's summary lines are kept with paths shortened. A quoted line that is
// the named line of a given file's text, and the caret line under it, come back exactly as NVRTC
// printed them (a comment's //, `a /b/c`, tabs).
std::string sanitize_log(std::string_view log, const std::vector<LoggedFile>& files);
// The same, for files whose text is not at hand: the first is the student's source.
std::string sanitize_log(std::string_view log, std::string_view source_name,
                         const std::vector<std::string>& header_names = {});

// The PTX with the host directory removed from its .file directives (a PTX simulator reads them
// with the .loc lines): `.file 1 "/home/x/probe.cu"` becomes `.file 1 "probe.cu"`.
std::string ptx_without_host_paths(std::string_view ptx);

// Where the PTX reads the GPU's clocks (%clock, %clock64, %globaltimer and its halves) or sleeps
// (nanosleep), once per kind and place (line and column): "%clock64 at probe.cu:20:3". A kernel
// that reads a clock can pace its own timings; the report flags it. At most max_reads, then one
// last entry "and 4093 more (the list was cut)": the PTX is the student's text (`.file` and `.loc`
// lines can be forged inside an asm comment). Scans each line once, without recursion.
inline constexpr std::size_t kMaxClockReads = 16;
std::vector<std::string> ptx_clock_reads(std::string_view ptx,
                                         std::size_t max_reads = kMaxClockReads);

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
