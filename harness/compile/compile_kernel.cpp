// NVRTC: one program per call, so two kernels can be compiled on two threads at once.

#include <nvrtc.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compile/compile.hpp"
#include "compile/nvrtc_api.hpp"
#include "compile/nvrtc_call.hpp"
#include "compile/nvrtc_library.hpp"
#include "model/measurements.hpp"
#include "text/text_safety.hpp"

namespace grader {

namespace {

// How much of NVRTC's own log a machine-fault message quotes.
constexpr std::size_t kQuotedNvrtcLogBytes = 4096;
// How much of a raw log is cleaned at all: the cleaner is line by line with regular expressions,
// and anything past this is cut anyway.
constexpr std::size_t kMaxRawLogBytes = std::size_t{1} << 20;

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

std::string nvrtc_version_or_unknown() {
    int major = 0;
    int minor = 0;
    try {
        if (nvrtc().nvrtcVersion(&major, &minor) == NVRTC_SUCCESS)
            return std::to_string(major) + "." + std::to_string(minor);
    } catch (const NvrtcError&) {
        // not loaded: the message says so where it matters
    }
    return "(unknown version)";
}

// "nvrtcGetPTX" from "nvrtcGetPTX(program, ptx.data())".
std::string function_name(const char* call) {
    const std::string text(call);
    return text.substr(0, text.find('('));
}

std::string what_to_fix(nvrtcResult status) {
    const std::string folder = nvrtc_library_folder();
    const std::string where = folder.empty() ? "the CUDA toolkit's library folder"
                                             : "the CUDA toolkit's library folder " + folder;
    switch (status) {
        case NVRTC_ERROR_BUILTIN_OPERATION_FAILURE: {
            const NvrtcBuiltins& builtins = load_nvrtc_builtins();
            return "NVRTC could not use its builtins library " + nvrtc_builtins_name() +
                   "; check that " + where + " holds it and that it is readable (" +
                   (builtins.loaded ? "the grader had loaded " + builtins.path
                                    : "the grader could not load it either: " + builtins.error) +
                   ")";
        }
        case NVRTC_ERROR_OUT_OF_MEMORY:
            return "the grading machine ran out of memory; free some, or grade fewer "
                   "submissions at once";
        case NVRTC_ERROR_INVALID_OPTION:
        case NVRTC_ERROR_INVALID_INPUT:
        case NVRTC_ERROR_INVALID_PROGRAM:
            return "the grader gave NVRTC something it does not accept; check the exercise's "
                   "compile options and the grader's version against NVRTC " +
                   nvrtc_version_or_unknown();
        default:
            return "check the CUDA toolkit's NVRTC (libnvrtc in " +
                   (folder.empty() ? std::string("the CUDA library folder") : folder) +
                   ") and its version against the grader's";
    }
}

}  // namespace

std::string nvrtc_failure_message(nvrtcResult status, const std::string& call,
                                  const std::string& nvrtc_log) {
    std::string message =
        "NVRTC failed on the grading machine, not because of the submission: " + call +
        " returned " + nvrtc().nvrtcGetErrorString(status) + ".";
    std::string quoted = nvrtc_log;
    while (!quoted.empty() && (quoted.back() == '\n' || quoted.back() == '\0')) {
        quoted.pop_back();
    }
    if (!quoted.empty()) {
        if (quoted.size() > kQuotedNvrtcLogBytes) {
            quoted = quoted.substr(0, kQuotedNvrtcLogBytes) + " [...]";
        }
        message += " NVRTC said: \"" + quoted + "\".";
    }
    return message + " " + what_to_fix(status) + ".";
}

namespace detail {

void throw_nvrtc_error(nvrtcResult status, const char* call, const std::string& nvrtc_log) {
    const std::string name = function_name(call);
    throw NvrtcError(status, name, nvrtc_failure_message(status, name, nvrtc_log), nvrtc_log);
}

}  // namespace detail

namespace {

// Text of which already_cut bytes were dropped before it came here: cut to max_bytes with a line
// that says how much is missing in all.
std::string bound_text(std::string text, std::size_t max_bytes, std::size_t already_cut,
                       std::size_t& cut_bytes) {
    if (text.size() <= max_bytes && already_cut == 0) {
        return text;
    }
    const std::string_view note_start = "[the compile log was cut here: ";
    const std::string_view note_end = " more bytes]\n";
    // Room for the closing line, whose number has at most 20 digits, and a line end before it.
    const std::size_t room = note_start.size() + 20 + note_end.size() + 1;
    std::size_t keep = max_bytes > room ? std::min(text.size(), max_bytes - room) : 0;
    if (keep < text.size()) {
        const std::size_t line_end = keep == 0 ? std::string::npos : text.rfind('\n', keep - 1);
        if (line_end != std::string::npos && line_end + 1 >= keep / 2) {
            keep = line_end + 1;
        } else {
            keep = text::utf8_boundary(text, keep);  // one huge line: cut it, not a character
        }
    }
    const std::size_t cut = text.size() - keep + already_cut;
    cut_bytes += cut;
    text.resize(keep);
    if (!text.empty() && text.back() != '\n') {
        text += '\n';
    }
    return text + std::string(note_start) + std::to_string(cut) + std::string(note_end);
}

}  // namespace

std::string bounded_log(std::string text, std::size_t max_bytes, std::size_t& cut_bytes) {
    return bound_text(std::move(text), max_bytes, 0, cut_bytes);
}

namespace {

std::string program_log(nvrtcProgram program) {
    std::size_t size = 0;
    GRADER_NVRTC_CALL(nvrtcGetProgramLogSize(program, &size));
    std::string log(size, '\0');
    GRADER_NVRTC_CALL(nvrtcGetProgramLog(program, log.data()));
    while (!log.empty() && log.back() == '\0') {
        log.pop_back();
    }
    return log;
}

std::string program_ptx(nvrtcProgram program) {
    std::size_t size = 0;
    GRADER_NVRTC_CALL(nvrtcGetPTXSize(program, &size));
    std::string ptx(size, '\0');
    GRADER_NVRTC_CALL(nvrtcGetPTX(program, ptx.data()));
    while (!ptx.empty() && ptx.back() == '\0') {
        ptx.pop_back();
    }
    return ptx;
}

std::string program_cubin(nvrtcProgram program) {
    std::size_t size = 0;
    GRADER_NVRTC_CALL(nvrtcGetCUBINSize(program, &size));
    std::string cubin(size, '\0');
    if (size > 0) {
        GRADER_NVRTC_CALL(nvrtcGetCUBIN(program, cubin.data()));
    }
    return cubin;
}

// NVRTC resolves the kernel's name in a pseudo-file "__nv_name_map"; its errors mean the name
// is missing or names something that is not a kernel. They are replaced by one plain sentence.
struct NameLookup {
    bool failed = false;
    bool not_global = false;
    bool overloaded = false;
};

NameLookup name_lookup_errors(const std::string& log) {
    NameLookup lookup;
    lookup.failed = log.find("__nv_name_map(") != std::string::npos;
    lookup.not_global = log.find("non-__global__ function") != std::string::npos;
    lookup.overloaded = log.find("__nv_name_map(") != std::string::npos &&
                        log.find("which instance of overloaded function") != std::string::npos;
    return lookup;
}

std::string name_lookup_sentence(const NameLookup& lookup, const CompileRequest& request) {
    if (lookup.overloaded) {
        return request.kernel_name + " is overloaded in " + request.source_name +
               " (declared more than once with different parameters); the ABI needs exactly "
               "one kernel of that name\n";
    }
    if (lookup.not_global) {
        return request.kernel_name + " is not a __global__ kernel\n";
    }
    return "no kernel named " + request.kernel_name + " was found in " + request.source_name + "\n";
}

// "1 error detected in the compilation of ...", "2 catastrophic errors detected in ...".
bool is_error_summary(std::string_view line) {
    std::size_t i = 0;
    while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i])) != 0) {
        ++i;
    }
    if (i == 0 || i >= line.size() || line[i] != ' ') {
        return false;
    }
    line.remove_prefix(i + 1);
    if (line.substr(0, 13) == "catastrophic ") {
        line.remove_prefix(13);
    }
    for (const std::string_view noun : {"errors ", "error "}) {
        if (line.substr(0, noun.size()) == noun) {
            return line.substr(noun.size(), 31) == "detected in the compilation of ";
        }
    }
    return false;
}

// The log without its summary lines, scanned line by line (no regex over the log: it holds the
// student's text, and std::regex recurses per character).
std::string without_error_summary(const std::string& log) {
    std::string kept;
    std::size_t start = 0;
    while (start < log.size()) {
        std::size_t end = log.find('\n', start);
        end = end == std::string::npos ? log.size() : end + 1;
        const std::string_view line(log.data() + start, end - start);
        if (!is_error_summary(line)) {
            kept.append(line);
        }
        start = end;
    }
    return kept;
}

std::string vetting_log(const std::vector<SourceProblem>& problems,
                        const std::string& source_name) {
    std::string log;
    for (const SourceProblem& problem : problems) {
        log += to_string(problem, source_name) + "\n";
    }
    log += "The source was not compiled.\n";
    return log;
}

// The program NVRTC compiles: the source under an absolute name, with the request's headers in
// memory, and the kernel's name to be lowered.
detail::NvrtcProgram create_program(const CompileRequest& request, std::string_view source) {
    const std::string nvrtc_source(source);
    // An absolute name keeps NVRTC from prefixing the working directory in .file and the
    // cubin's line table; the in-memory headers still take precedence over files in "/".
    const std::string nvrtc_name = request.source_name.empty() || request.source_name[0] != '/'
                                       ? "/" + request.source_name
                                       : request.source_name;
    std::vector<const char*> header_texts;
    std::vector<const char*> header_includes;
    for (const HeaderSource& header : request.headers) {
        header_texts.push_back(header.content.c_str());
        header_includes.push_back(header.include_name.c_str());
    }
    nvrtcProgram raw_program = nullptr;
    GRADER_NVRTC_CALL(nvrtcCreateProgram(&raw_program, nvrtc_source.c_str(), nvrtc_name.c_str(),
                                         static_cast<int>(header_texts.size()), header_texts.data(),
                                         header_includes.data()));
    detail::NvrtcProgram program(raw_program);
    GRADER_NVRTC_CALL(nvrtcAddNameExpression(program.get(), request.kernel_name.c_str()));
    return program;
}

// Compiles with the request's options for its architecture (kept in the outcome). A failed
// compile is the status; NVRTC's own failure throws, with whatever log it gave.
nvrtcResult compile_program(const detail::NvrtcProgram& program, const CompileRequest& request,
                            CompileOutcome& outcome) {
    outcome.options = request.options;
    outcome.options.push_back("-arch=" + request.arch);
    std::vector<const char*> option_texts;
    for (const std::string& option : outcome.options) {
        option_texts.push_back(option.c_str());
    }
    const nvrtcResult status = nvrtc().nvrtcCompileProgram(
        program.get(), static_cast<int>(option_texts.size()), option_texts.data());
    if (status != NVRTC_SUCCESS && status != NVRTC_ERROR_COMPILATION) {
        std::string log;
        std::size_t size = 0;
        if (nvrtc().nvrtcGetProgramLogSize(program.get(), &size) == NVRTC_SUCCESS && size > 0) {
            log.resize(size);
            if (nvrtc().nvrtcGetProgramLog(program.get(), log.data()) != NVRTC_SUCCESS) {
                log.clear();
            }
        }
        detail::throw_nvrtc_error(status, "nvrtcCompileProgram", log);
    }
    return status;
}

// The compile's log as the student reads it: bounded, with no host path, and where the kernel's
// name did not resolve, one sentence saying so instead of the summary lines.
void record_log(const detail::NvrtcProgram& program, const CompileRequest& request,
                std::string_view source, CompileOutcome& outcome) {
    std::string raw_log = program_log(program.get());
    const NameLookup lookup = name_lookup_errors(raw_log);
    std::size_t raw_cut = 0;
    if (raw_log.size() > kMaxRawLogBytes) {
        const std::size_t line_end = raw_log.rfind('\n', kMaxRawLogBytes);
        const std::size_t keep = line_end == std::string::npos ? kMaxRawLogBytes : line_end + 1;
        raw_cut = raw_log.size() - keep;
        raw_log.resize(keep);
    }
    std::vector<LoggedFile> logged_files{{request.source_name, source}};
    for (const HeaderSource& header : request.headers) {
        logged_files.push_back({header.include_name, header.content});
    }
    std::string log = sanitize_log(raw_log, logged_files);
    if (lookup.failed) {
        log = without_error_summary(log);
    }
    outcome.log = bound_text(std::move(log), kMaxCompileLogBytes, raw_cut, outcome.log_cut_bytes);
    if (lookup.failed) {
        outcome.log += name_lookup_sentence(lookup, request);
    }
}

// What a compile that succeeded gives: the PTX (and the cubin for a real architecture), the
// kernel's lowered name, signature and parameter sizes. False where NVRTC named no kernel.
bool read_compiled(const detail::NvrtcProgram& program, const CompileRequest& request,
                   CompiledKernel& compiled) {
    CompileOutcome& outcome = compiled.outcome;
    compiled.ptx = ptx_without_host_paths(program_ptx(program.get()));
    outcome.clock_reads = ptx_clock_reads(compiled.ptx);
    if (request.arch.rfind("sm_", 0) == 0) {
        compiled.cubin = program_cubin(program.get());
    }
    // NVRTC can report success and give no name (for a byte that is not UTF-8 in the source:
    // test_compile's "a byte that is not UTF-8 never crashes the compile"): the student's
    // program, not the machine, so a failed compile.
    const char* lowered = nullptr;
    if (nvrtc().nvrtcGetLoweredName(program.get(), request.kernel_name.c_str(), &lowered) !=
            NVRTC_SUCCESS ||
        lowered == nullptr || *lowered == '\0') {
        outcome.log += "NVRTC compiled " + request.source_name + " but found no kernel named " +
                       request.kernel_name +
                       " in it; check that the file is UTF-8 text and defines the kernel once\n";
        return false;
    }
    outcome.lowered_name = lowered;
    outcome.signature = demangle(outcome.lowered_name);
    const PtxEntry entry = ptx_entry(compiled.ptx, outcome.lowered_name);
    if (entry.found) {
        for (const PtxParam& param : entry.params) {
            outcome.param_sizes.push_back(param.size);
        }
        outcome.param_source = "ptx";
    }
    return true;
}

}  // namespace

CompiledKernel compile_kernel(const CompileRequest& request) {
    if (request.arch.empty()) {
        throw std::invalid_argument("compile_kernel: no architecture given for " +
                                    request.source_name);
    }
    if (request.kernel_name.empty()) {
        throw std::invalid_argument("compile_kernel: no kernel name given for " +
                                    request.source_name);
    }
    const auto start = std::chrono::steady_clock::now();
    auto elapsed = [&start] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };

    CompiledKernel compiled;
    CompileOutcome& outcome = compiled.outcome;
    outcome.attempted = true;
    outcome.arch = request.arch;

    std::vector<std::string> header_names;
    for (const HeaderSource& header : request.headers) {
        header_names.push_back(header.include_name);
    }
    if (request.vet) {
        outcome.vetting_problems = vet_includes(request.source, header_names);
        if (!outcome.vetting_problems.empty()) {
            outcome.log = vetting_log(outcome.vetting_problems, request.source_name);
            outcome.seconds = elapsed();
            return compiled;
        }
    }

    load_nvrtc_builtins();  // before NVRTC's own dlopen of them, which may not find them

    // A UTF-8 byte-order mark is text to an editor and an unrecognized token to NVRTC.
    const std::string_view source =
        std::string_view(request.source).substr(0, kByteOrderMark.size()) == kByteOrderMark
            ? std::string_view(request.source).substr(kByteOrderMark.size())
            : std::string_view(request.source);
    const detail::NvrtcProgram program = create_program(request, source);
    const nvrtcResult status = compile_program(program, request, outcome);
    record_log(program, request, source, outcome);
    outcome.ok = status == NVRTC_SUCCESS && read_compiled(program, request, compiled);
    outcome.seconds = elapsed();
    return compiled;
}

std::string nvrtc_version() {
    int major = 0;
    int minor = 0;
    GRADER_NVRTC_CALL(nvrtcVersion(&major, &minor));
    return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace grader
