#include "cli/suggestions.hpp"

#include <algorithm>
#include <cstddef>

#include "common/text.hpp"

namespace grader::cli {
namespace {

// The long names ("--exercise") of an app's options, without its hidden ones' group.
std::vector<std::string> flag_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::Option* option : app.get_options()) {
        for (const std::string& name : option->get_lnames()) {
            names.push_back("--" + name);
        }
    }
    return names;
}

}  // namespace

std::optional<Suggestion> suggestion_for(const CLI::App& app,
                                         const std::vector<std::string>& args) {
    std::vector<std::string> subcommands;
    for (const CLI::App* sub : app.get_subcommands({})) {
        if (!sub->get_group().empty()) {  // hidden (internal) subcommands are not suggested
            subcommands.push_back(sub->get_name());
        }
    }
    const CLI::App* command = nullptr;
    for (const std::string& arg : args) {
        if (arg.rfind("-", 0) == 0) {
            const std::string flag = arg.substr(0, arg.find('='));
            if (flag.rfind("--", 0) != 0) {
                continue;
            }
            std::vector<std::string> known = flag_names(app);
            if (command != nullptr) {
                const std::vector<std::string> own = flag_names(*command);
                known.insert(known.end(), own.begin(), own.end());
            }
            if (std::find(known.begin(), known.end(), flag) != known.end()) {
                continue;
            }
            return Suggestion{flag, nearest_name(flag, known).value_or(""), true};
        }
        if (command == nullptr) {
            for (const CLI::App* sub : app.get_subcommands({})) {
                if (sub->get_name() == arg) {
                    command = sub;
                }
            }
            if (command == nullptr) {
                return Suggestion{arg, nearest_name(arg, subcommands).value_or(""), false};
            }
        }
    }
    return std::nullopt;
}

}  // namespace grader::cli
