// grader: grades GPU course exercises. See README.md.

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/suggestions.hpp"
#include "common/files.hpp"
#include "common/version.hpp"
#include "exercise/exercise.hpp"
#include "text/text_safety.hpp"

namespace {

using grader::cli::GlobalOptions;
using grader::cli::Runner;

bool is_subcommand(CLI::App& app, const std::string& word) {
    const auto subcommands = app.get_subcommands({});
    return std::any_of(subcommands.begin(), subcommands.end(),
                       [&](const CLI::App* sub) { return sub->get_name() == word; });
}

// The app, its global flags, and one subcommand per command file.
void add_commands(CLI::App& app, GlobalOptions& global, Runner& run) {
    using namespace grader::cli;
    app.footer(
        "Examples:\n"
        "  grader grade student/example\n"
        "  grader grade my-part2 --exercise day15-padding\n"
        "  grader batch submissions/ -o class-report\n"
        "Each subcommand's --help (or grader help SUBCOMMAND) lists its options and their "
        "defaults.");
    app.set_version_flag("-V,--version", std::string("grader ") + grader::kGraderVersion);
    app.require_subcommand(1);
    app.fallthrough();  // -v and -q also after the subcommand: grader grade DIR -q
    app.add_flag("-v,--verbose", global.verbose, "Log each stage to standard error");
    app.add_flag("-q,--quiet", global.quiet, "Print nothing but errors; exit status only");
    app.add_flag("--group-readable", global.group_readable,
                 "Let the group of the folders written into read the reports (files 0640, "
                 "folders 0750), for a course team's shared folder; by default they are yours "
                 "alone (0600, 0700)");
    add_grade_command(app, global, run);
    add_sweep_command(app, global, run);
    add_batch_command(app, global, run);
    add_merge_command(app, global, run);
    add_canvas_command(app, global, run);
    add_explain_command(app, global, run);
    add_serve_command(app, global, run);
    add_tokens_command(app, global, run);
    add_lti_command(app, global, run);
    add_submit_command(app, global, run);
    add_worker_command(app, run);
    add_device_server_command(app, run);
    add_launch_command(app, run);
    add_compile_command(app, run);
}

// `grader help` and `grader help grade`, as git and cargo answer them: the help of the app or of
// the subcommand named.
std::vector<std::string> with_help_answered(CLI::App& app, std::vector<std::string> words) {
    if (!words.empty() && words.front() == "help") {
        words.erase(words.begin());
        words.resize(std::min<std::size_t>(words.size(), 1));
        // A word that names no subcommand is left to fail as one ("did you mean 'grade'?"):
        // with --help after it, CLI11 would print the app's help and exit 0.
        if (words.empty() || is_subcommand(app, words.front())) {
            words.push_back("--help");
        }
    }
    return words;
}

// What a command line CLI11 refused gets instead of its line where ours says more: the
// subcommand typed wrong, the option typed wrong, and the nearest right one. The exit status.
int refuse_usage(CLI::App& app, const CLI::ParseError& e, const std::vector<std::string>& args) {
    const auto suggestion = grader::cli::suggestion_for(app, args);
    const std::string hint = suggestion ? suggestion->line() : "";
    if (!args.empty() && args[0].rfind("-", 0) != 0 && !is_subcommand(app, args[0])) {
        // CLI11 would say "A subcommand is required" to someone who typed one.
        std::cerr << "grader: '" << grader::text::visible_line(args[0])
                  << "' is not a subcommand (grade, explain, sweep, batch, merge)"
                  << (hint.empty() ? "" : "; " + hint) << "\nRun with --help for more "
                  << "information.\n";
        return grader::cli::kExitUsage;
    }
    std::string command;  // the subcommand the flag was given to, where one was
    for (const std::string& arg : args) {
        if (is_subcommand(app, arg)) {
            command = arg;
            break;
        }
    }
    if (suggestion && suggestion->flag) {
        // Before CLI11's own line, which lists every word after it as "not expected" and may
        // complain first about a folder that the wrong flag made it read as one.
        std::cerr << "grader: '" << grader::text::visible_line(suggestion->typed)
                  << "' is not an option" << (command.empty() ? "" : " of '" + command + "'")
                  << (hint.empty() ? "" : "; " + hint)
                  << "\nRun with --help for more information.\n";
        return grader::cli::kExitUsage;
    }
    app.exit(e);
    if (!hint.empty()) {
        std::cerr << grader::text::visible_line(hint) << "\n";
    }
    return grader::cli::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace grader::cli;
    // A report piped into `head` must not kill the grader halfway through writing files.
    std::signal(SIGPIPE, SIG_IGN);

    // Named here, so usage lines say "grader", never the path the binary was run from.
    CLI::App app{"Grades the Day 15 bank-conflict exercise (and exercises like it) on a GPU.",
                 "grader"};
    GlobalOptions global;
    Runner run;
    add_commands(app, global, run);
    const std::vector<std::string> words =
        with_help_answered(app, std::vector<std::string>(argv + 1, argv + argc));
    try {
        std::vector<std::string> reversed(words.rbegin(), words.rend());
        app.parse(reversed);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        return refuse_usage(app, e, words);
    }

    // Grades are private: whatever this process or a library in it writes is the user's alone
    // (or their group's, asked for), whatever umask it was started with.
    const auto sharing =
        global.group_readable ? grader::Sharing::group_readable : grader::Sharing::owner_only;
    grader::set_output_sharing(sharing);
    ::umask(global.group_readable ? 027 : 077);

    auto logger = spdlog::stderr_color_mt("grader");
    logger->set_pattern("grader: %v");
    logger->set_level(global.verbose ? spdlog::level::debug
                                     : (global.quiet ? spdlog::level::err : spdlog::level::info));
    spdlog::set_default_logger(logger);

    try {
        return run();
    } catch (const grader::ExerciseError& e) {
        spdlog::error("{}", grader::text::visible(e.what()));  // it may quote a student's file
        return kExitUsage;
    } catch (const std::exception& e) {
        spdlog::error("internal error: {}", grader::text::visible(e.what()));
        return kExitInternal;
    }
}
