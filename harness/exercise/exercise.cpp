// What an exercise says once read: its cases, checks and kernels, the model's degree of a case, and
// the error that names where in the file a fault is.

#include "exercise/exercise.hpp"

#include <tuple>
#include <type_traits>
#include <utility>

#include "exercise/exercise_reading.hpp"
#include "model/bank_model.hpp"

namespace grader {

namespace {

std::string exercise_error_text(const SourceLocation& location, const std::string& field,
                                const std::string& message) {
    std::string text = to_string(location);
    if (!field.empty()) {
        text += (text.empty() ? "" : ": ") + field;
    }
    return text + (text.empty() ? "" : ": ") + message;
}

}  // namespace

// -------------------------------------------------------------------------------------------------

std::string to_string(const SourceLocation& location) {
    std::string text = location.file;
    if (location.line > 0) {
        text += ":" + std::to_string(location.line);
        if (location.column > 0) {
            text += ":" + std::to_string(location.column);
        }
    }
    return text;
}

ExerciseError::ExerciseError(SourceLocation location, std::string field, const std::string& message)
    : std::runtime_error(exercise_error_text(location, field, message)),
      location_(std::move(location)),
      field_(std::move(field)) {}

bool operator==(const Case& a, const Case& b) {
    return a.kernel == b.kernel && a.stride == b.stride;
}

bool operator<(const Case& a, const Case& b) {
    return std::tie(a.kernel, a.stride) < std::tie(b.kernel, b.stride);
}

std::string_view to_string(CheckKind kind) {
    for (const auto& [name, value] : exercise_reading::check_kind_names()) {
        if (value == kind) {
            return name;
        }
    }
    return "unknown";
}

const CheckSpec& Exercise::check(const std::string& check_id) const {
    for (const auto& spec : checks) {
        if (spec.id == check_id) {
            return spec;
        }
    }
    throw std::out_of_range("exercise '" + id + "' (" + file.string() + ") has no check '" +
                            check_id + "'");
}

const KernelSpec& Exercise::kernel(const std::string& kernel_id) const {
    for (const auto& spec : kernels) {
        if (spec.id == kernel_id) {
            return spec;
        }
    }
    throw std::out_of_range("exercise '" + id + "' has no kernel '" + kernel_id + "'");
}

const KernelSpec* Exercise::oracle() const {
    for (const auto& spec : kernels) {
        if (spec.oracle) {
            return &spec;
        }
    }
    return nullptr;
}

std::optional<unsigned> Exercise::model_degree(const Case& c) const {
    if (c.stride > 0) {
        return conflict_degree(c.stride, banks);
    }
    for (const auto& spec : kernels) {
        if (spec.id == c.kernel) {
            return spec.degree;
        }
    }
    return std::nullopt;
}

}  // namespace grader
