#pragma once

// Checks of numeric options that say what to give in the option's own words: CLI11's own
// (PositiveNumber) answer a "--jobs 0" with a range up to 1.8e308, 300 digits long.

#include <CLI/CLI.hpp>
#include <string>

namespace grader::cli {

// A whole number, 1 or more: "--jobs: 0 is not a number of jobs; give 1 or more".
CLI::Validator at_least_one(const std::string& what);

// Seconds above 0, finite: "--timeout: -1 is not a time limit; give seconds above 0, e.g. 30".
CLI::Validator positive_seconds();

// A whole number, 0 or more: "--device: -1 is not a GPU index; give 0 or more".
CLI::Validator non_negative_index(const std::string& what);

}  // namespace grader::cli
