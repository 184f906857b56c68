#pragma once

// "Did you mean": the nearest subcommand or flag to a mistyped one, for the usage error.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace grader::cli {

// The candidate nearest to `typed` by edit distance, where it is near enough to be a typo (at
// most 2 edits, and fewer than half the word's letters); nullopt otherwise.
std::optional<std::string> nearest(const std::string& typed,
                                   const std::vector<std::string>& candidates);

// A line for a command line CLI11 refused, e.g. "did you mean 'grade'?" or "did you mean
// '--exercise'?", for the first word that is neither a subcommand nor a flag the app knows;
// empty where no known word is near.
std::string suggestion_for(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace grader::cli
