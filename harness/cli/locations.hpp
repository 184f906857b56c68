#pragma once

#include <filesystem>
#include <string>

namespace grader::cli {

// The bundled exercise: beside the installed binary (share/grader/exercises/...), else in the
// source tree the binary was built from.
std::filesystem::path default_exercise_dir();

// Whether to colour text for this stream: a terminal, and NO_COLOR unset (no-color.org).
bool use_color(int fd);

}  // namespace grader::cli
