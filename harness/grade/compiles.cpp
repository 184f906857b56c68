#include "grade/compiles.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include "common/kernel_ids.hpp"
#include "compile/compile_cache.hpp"

namespace grader {
namespace {

std::future<ConfinedCompiles> compile_beside(std::vector<CompileRequest> trusted,
                                             std::optional<CompileRequest> student,
                                             UntrustedCompileOptions options) {
    return std::async(
        std::launch::async,
        [trusted = std::move(trusted), student = std::move(student), options = std::move(options)] {
            std::future<ConfinedCompiles> confined;
            if (student) {
                confined = std::async(std::launch::async,
                                      [&] { return compile_confined({}, *student, options); });
            }
            const auto cache = default_compile_cache_dir();
            std::vector<std::future<CompiledKernel>> own;
            for (const CompileRequest& request : trusted) {
                own.push_back(std::async(std::launch::async, [&request, &cache] {
                    return compile_kernel_cached(request, cache);
                }));
            }
            ConfinedCompiles results;
            for (auto& kernel : own) {
                results.trusted.push_back(kernel.get());
            }
            if (confined.valid()) {
                results.student = confined.get().student;
            }
            return results;
        });
}

}  // namespace

GradeCompiles::GradeCompiles(const Exercise& exercise, KernelSources sources, bool poison,
                             const UntrustedCompileOptions& options)
    : exercise_(exercise), sources_(std::move(sources)), poison_asked_(poison) {
    std::vector<CompileRequest> trusted;
    for (const auto& [id, request] : sources_.requests) {
        if (id != kStudentKernel) {
            trusted_ids_.push_back(id);
            trusted.push_back(request);
        }
    }
    if (poison_asked_) {
        trusted.push_back(*sources_.shared_poison);
    }
    const auto student = sources_.requests.find(std::string(kStudentKernel));
    compiles_ = compile_beside(std::move(trusted),
                               student == sources_.requests.end()
                                   ? std::nullopt
                                   : std::optional<CompileRequest>(student->second),
                               options);
}

bool GradeCompiles::finish(bool with_student, Environment& environment, ProgressSink& sink) {
    ConfinedCompiles results = compiles_.get();
    bool compiled = true;
    for (std::size_t i = 0; i < trusted_ids_.size(); ++i) {
        CompiledKernel& kernel = compiled_[trusted_ids_[i]] = std::move(results.trusted[i]);
        compiled = compiled && kernel.outcome.ok;
        sink.compiled(trusted_ids_[i], kernel.outcome);
    }
    if (with_student) {
        record_student(std::move(results.student), environment, sink);
    }
    if (poison_asked_) {
        poison_ = std::move(results.trusted.back());
    }
    return compiled;
}

void GradeCompiles::record_student(CompiledKernel student, Environment& environment,
                                   ProgressSink& sink) {
    CompiledKernel& compiled = compiled_[std::string(kStudentKernel)];
    if (sources_.requests.count(std::string(kStudentKernel)) == 0) {
        compiled.outcome.attempted = false;
        compiled.outcome.log = sources_.student_missing_reason;
        compiled.outcome.source_missing = sources_.student_not_found;
    } else {
        compiled = std::move(student);
        environment.confinement = compiled.confinement;
        if (compiled.outcome.ok) {
            compiled.outcome.abi_problem =
                abi_problem(compiled.outcome.param_sizes, exercise_.parameters);
        }
    }
    sink.compiled(std::string(kStudentKernel), compiled.outcome);
    sink.environment(environment);
}

}  // namespace grader
