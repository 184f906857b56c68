#pragma once

// "Did you mean": the nearest subcommand or flag to a mistyped one, for the usage error.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace grader::cli {

// The first word of a command line CLI11 refused that is neither a subcommand nor a flag the app
// knows, and the known one nearest to it.
struct Suggestion {
    std::string typed;
    std::string nearest;  // empty where no known word is near
    bool flag = false;    // a --flag, not a subcommand

    // "did you mean '--exercise'?"; empty without a nearest word.
    std::string line() const { return nearest.empty() ? "" : "did you mean '" + nearest + "'?"; }
};
std::optional<Suggestion> suggestion_for(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace grader::cli
