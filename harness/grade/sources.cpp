#include "grade/sources.hpp"

#include <cstddef>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "common/files.hpp"
#include "common/kernel_ids.hpp"
#include "common/text.hpp"
#include "report/findings_text.hpp"

namespace grader {

std::string read_harness_file(const std::filesystem::path& path) {
    std::string why;
    auto content = read_file_bounded(path, std::size_t{16} << 20, why);
    if (!content) {
        throw std::runtime_error(path.string() + ": " + why);
    }
    return *content;
}

KernelSources load_kernel_sources(const Exercise& exercise,
                                  const std::filesystem::path& submission_dir,
                                  const std::string& arch) {
    std::vector<HeaderSource> headers;
    for (const auto& header : exercise.headers) {
        headers.push_back({header.include_name, read_harness_file(header.path)});
    }
    const auto request_for = [&](const std::string& source, const std::string& source_name,
                                 const std::string& kernel_name, bool vet) {
        CompileRequest request;
        request.source = source;
        request.source_name = source_name;
        request.kernel_name = kernel_name;
        request.arch = arch;
        request.options = exercise.compile_options;
        request.headers = headers;
        request.vet = vet;
        return request;
    };

    KernelSources sources;
    for (const KernelSpec& kernel : exercise.kernels) {
        if (!kernel.is_student()) {
            sources.requests.emplace(
                kernel.id, request_for(read_harness_file(kernel.file),
                                       kernel.file.filename().string(), kernel.name, false));
        }
    }
    if (!exercise.shared_poison_source.empty()) {
        sources.shared_poison = request_for(read_harness_file(exercise.shared_poison_source),
                                            exercise.shared_poison_source.filename().string(),
                                            "poisonSharedMemory", false);
    }
    if (submission_dir.empty()) {
        return sources;
    }
    std::string why;
    auto student_source = read_student_file(submission_dir, exercise.submission_source,
                                            exercise.limits.source_bytes, why);
    if (!student_source) {
        sources.student_not_found = why == "not found";
        sources.student_missing_reason =
            why == "not found" ? file_not_found_text(exercise.submission_source) +
                                     meant_file_hint(submission_dir, exercise.submission_source)
                               : exercise.submission_source + " could not be used: " + why;
        return sources;
    }
    sources.requests.emplace(
        std::string(kStudentKernel),
        request_for(*student_source, exercise.submission_source, exercise.kernel_name, true));
    return sources;
}

}  // namespace grader
