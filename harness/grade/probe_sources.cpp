#include "grade/probe_sources.hpp"

#include <stdexcept>

#include "common/files.hpp"
#include "common/text.hpp"

namespace grader {

std::string read_harness_file(const std::filesystem::path& path) {
    std::string why;
    auto content = read_file_bounded(path, std::size_t{16} << 20, why);
    if (!content) {
        throw std::runtime_error(path.string() + ": " + why);
    }
    return *content;
}

CompiledKernel finish_student_compile(std::future<CompiledKernel>& compile,
                                      const ProbeSources& sources, const Exercise& exercise) {
    CompiledKernel student;
    if (!compile.valid()) {
        student.outcome.attempted = false;
        student.outcome.log = sources.student_missing_reason;
        return student;
    }
    student = compile.get();
    if (student.outcome.ok) {
        student.outcome.abi_problem = abi_problem(student.outcome.param_sizes, exercise.parameters);
    }
    return student;
}

ProbeSources load_probe_sources(const Exercise& exercise,
                                const std::filesystem::path& submission_dir,
                                const std::string& arch) {
    std::vector<HeaderSource> headers;
    std::vector<std::string> header_names;
    for (const auto& header : exercise.headers) {
        headers.push_back({header.include_name, read_harness_file(header.path)});
        header_names.push_back(header.include_name);
    }

    ProbeSources sources;
    sources.reference.source = read_harness_file(exercise.reference_source);
    sources.reference.source_name = exercise.reference_source.filename().string();
    sources.reference.kernel_name = exercise.kernel_name;
    sources.reference.arch = arch;
    sources.reference.options = exercise.compile_options;
    sources.reference.headers = headers;
    sources.reference.vet = false;

    if (!exercise.shared_poison_source.empty()) {
        CompileRequest poison;
        poison.source = read_harness_file(exercise.shared_poison_source);
        poison.source_name = exercise.shared_poison_source.filename().string();
        poison.kernel_name = "poisonSharedMemory";
        poison.arch = arch;
        poison.options = exercise.compile_options;
        poison.vet = false;
        sources.shared_poison = poison;
    }

    std::string why;
    auto student_source = read_student_file(submission_dir, exercise.submission_source,
                                            exercise.limits.source_bytes, why);
    if (!student_source) {
        sources.student_missing_reason =
            exercise.submission_source + " " +
            (why == "not found" ? "was not found in the submission folder" : "could not be used: " + why);
        return sources;
    }
    CompileRequest student;
    student.source = std::move(*student_source);
    student.source_name = exercise.submission_source;
    student.kernel_name = exercise.kernel_name;
    student.arch = arch;
    student.options = exercise.compile_options;
    student.headers = std::move(headers);
    student.vet = true;
    sources.student = std::move(student);
    return sources;
}

}  // namespace grader
