// NVRTC: one program per call, so two kernels can be compiled on two threads at once.

#include <chrono>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "compile/compile.hpp"
#include "compile/nvrtc_call.hpp"
#include "compile/nvrtc_library.hpp"

namespace grader {

namespace detail {

void throw_nvrtc_error(nvrtcResult status, const char* call, const char* file, int line) {
    throw NvrtcError(status, std::string(file) + ":" + std::to_string(line) + ": " + call +
                                 " failed: " + nvrtcGetErrorString(status));
}

}  // namespace detail

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
};

NameLookup name_lookup_errors(const std::string& log) {
    NameLookup lookup;
    lookup.failed = log.find("__nv_name_map(") != std::string::npos;
    lookup.not_global = log.find("non-__global__ function") != std::string::npos;
    return lookup;
}

std::string without_error_summary(const std::string& log) {
    static const std::regex summary(
        R"((^|\n)\d+ (catastrophic )?errors? detected in the compilation of [^\n]*\n?)");
    return std::regex_replace(log, summary, "$1");
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
    GRADER_NVRTC_CALL(nvrtcCreateProgram(&raw_program, request.source.c_str(), nvrtc_name.c_str(),
                                         static_cast<int>(header_texts.size()), header_texts.data(),
                                         header_includes.data()));
    const detail::NvrtcProgram program(raw_program);
    GRADER_NVRTC_CALL(nvrtcAddNameExpression(program.get(), request.kernel_name.c_str()));

    outcome.options = request.options;
    outcome.options.push_back("-arch=" + request.arch);
    std::vector<const char*> option_texts;
    for (const std::string& option : outcome.options) {
        option_texts.push_back(option.c_str());
    }
    const nvrtcResult status = nvrtcCompileProgram(
        program.get(), static_cast<int>(option_texts.size()), option_texts.data());
    if (status != NVRTC_SUCCESS && status != NVRTC_ERROR_COMPILATION) {
        detail::throw_nvrtc_error(status, "nvrtcCompileProgram", __FILE__, __LINE__);
    }

    const std::string raw_log = program_log(program.get());
    outcome.log = sanitize_log(raw_log, request.source_name, header_names);
    const NameLookup lookup = name_lookup_errors(raw_log);
    if (lookup.failed) {
        outcome.log = without_error_summary(outcome.log);
        outcome.log += lookup.not_global ? request.kernel_name + " is not a __global__ kernel\n"
                                         : "no kernel named " + request.kernel_name +
                                               " was found in " + request.source_name + "\n";
    }
    if (status != NVRTC_SUCCESS) {
        outcome.seconds = elapsed();
        return compiled;
    }

    compiled.ptx = ptx_without_host_paths(program_ptx(program.get()));
    if (request.arch.rfind("sm_", 0) == 0) {
        compiled.cubin = program_cubin(program.get());
    }
    const char* lowered = nullptr;
    GRADER_NVRTC_CALL(nvrtcGetLoweredName(program.get(), request.kernel_name.c_str(), &lowered));
    outcome.lowered_name = lowered;
    outcome.signature = demangle(outcome.lowered_name);
    const PtxEntry entry = ptx_entry(compiled.ptx, outcome.lowered_name);
    if (entry.found) {
        for (const PtxParam& param : entry.params) {
            outcome.param_sizes.push_back(param.size);
        }
        outcome.param_source = "ptx";
    }
    outcome.ok = true;
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
