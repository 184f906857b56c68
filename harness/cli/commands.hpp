#pragma once

// One file per subcommand: each binds its flags to an options struct and calls the library.

#include <CLI/CLI.hpp>
#include <functional>

namespace grader::cli {

// Flags every subcommand shares.
struct GlobalOptions {
    bool verbose = false;
    bool quiet = false;
    bool group_readable = false;  // outputs 0640/0750 rather than 0600/0700 (common/files.hpp)
};

// Each returns the exit status once the command has run. Registration adds the subcommand and
// sets `run` to the function that executes it after parsing.
using Runner = std::function<int()>;
void add_grade_command(CLI::App& app, const GlobalOptions& global, Runner& run);
void add_sweep_command(CLI::App& app, const GlobalOptions& global, Runner& run);
void add_batch_command(CLI::App& app, const GlobalOptions& global, Runner& run);
void add_worker_command(CLI::App& app, Runner& run);
void add_device_server_command(CLI::App& app, Runner& run);
void add_explain_command(CLI::App& app, const GlobalOptions& global, Runner& run);
void add_launch_command(CLI::App& app, Runner& run);
void add_compile_command(CLI::App& app, Runner& run);
void add_merge_command(CLI::App& app, const GlobalOptions& global, Runner& run);
void add_canvas_command(CLI::App& app, const GlobalOptions& global, Runner& run);
void add_serve_command(CLI::App& app, const GlobalOptions& global, Runner& run);
void add_tokens_command(CLI::App& app, const GlobalOptions& global, Runner& run);
void add_lti_command(CLI::App& app, const GlobalOptions& global, Runner& run);
void add_submit_command(CLI::App& app, const GlobalOptions& global, Runner& run);

// Exit statuses, documented in the README and docs/report-schema.md.
inline constexpr int kExitPass = 0;
inline constexpr int kExitFail = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUngradable = 3;
inline constexpr int kExitInternal = 4;
// `grader merge`: the shards do not make one class (a student missing or graded twice, shards of
// different classes, exercises, versions or backends); nothing was written.
inline constexpr int kExitMergeRefused = 5;

}  // namespace grader::cli
