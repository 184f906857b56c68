// `grader __compile`: the confined child that compiles one student source. Not for people;
// compile_untrusted starts it, writes the request on its stdin and reads the answer on fd 3.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/commands.hpp"
#include "compile/compile.hpp"

namespace grader::cli {

void add_compile_command(CLI::App& app, Runner& run) {
    CLI::App* command = app.add_subcommand("__compile", "");
    command->group("");  // hidden from --help
    command->callback([&run] { run = [] { return serve_compile_request(STDIN_FILENO, 3); }; });
}

}  // namespace grader::cli
