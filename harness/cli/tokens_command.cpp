// `grader tokens`: who may submit to `grader serve`. One token per student of a roster, an
// instructor's, the list, a revocation. The tokens are shown once; the service keeps their
// SHA-256.

#include <errno.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "common/files.hpp"
#include "serve/roster.hpp"
#include "serve/service.hpp"
#include "serve/store.hpp"
#include "text/text_safety.hpp"

namespace grader::cli {
namespace {

struct TokensCommandOptions {
    std::filesystem::path state = "grader-serve";
    std::filesystem::path roster;
    std::filesystem::path output;
    std::string login;
    std::string name;
    std::string expires;  // YYYY-MM-DD: valid to the end of that day, UTC
};

// The end of a UTC day given as YYYY-MM-DD, in Unix seconds; nullopt for another form.
std::optional<std::int64_t> end_of_day(const std::string& date) {
    std::tm day{};
    if (date.size() != 10 || ::strptime(date.c_str(), "%Y-%m-%d", &day) == nullptr) {
        return std::nullopt;
    }
    return static_cast<std::int64_t>(::timegm(&day)) + 86400 - 1;
}

std::unique_ptr<serve::Store> open_store(const std::filesystem::path& state) {
    if (::mkdir(state.c_str(), 0700) != 0 && errno != EEXIST) {
        throw serve::StoreError("the state folder " + text::visible_line(state.string()) +
                                " cannot be created: " + std::strerror(errno));
    }
    return std::make_unique<serve::Store>(state / "state.sqlite");
}

// The tokens as CSV, to a private file or to standard output.
int write_tokens(const TokensCommandOptions& options, const std::string& csv, std::size_t count) {
    if (options.output.empty()) {
        std::cout << csv << std::flush;
        std::cerr << "grader tokens: " << count
                  << " token(s) above, shown this once: hand each to its owner (-o FILE "
                     "writes them to a file only you can read)\n";
        return kExitPass;
    }
    const mode_t previous = ::umask(077);
    write_file_atomically(options.output, csv);
    ::umask(previous);
    ::chmod(options.output.c_str(), 0600);
    std::cerr << "grader tokens: " << count << " token(s) written to "
              << text::visible_line(options.output.string())
              << " (only you can read it); the service keeps only their hashes\n";
    return kExitPass;
}

std::optional<std::int64_t> expiry(const TokensCommandOptions& options, bool& bad) {
    bad = false;
    if (options.expires.empty()) {
        return std::nullopt;
    }
    const auto at = end_of_day(options.expires);
    if (!at) {
        spdlog::error("--expires {}: give the last day as YYYY-MM-DD",
                      text::visible_line(options.expires));
        bad = true;
    }
    return at;
}

int run_issue(const TokensCommandOptions& options) {
    bool bad = false;
    const auto expires = expiry(options, bad);
    if (bad) {
        return kExitUsage;
    }
    serve::Roster roster;
    try {
        roster = serve::read_roster(options.roster);
    } catch (const serve::RosterError& error) {
        spdlog::error("{}", error.what());
        return kExitUsage;
    }
    const std::string shown = text::visible_line(options.roster.string());
    std::cerr << "grader tokens: " << shown << " read as " << roster.format << ": "
              << roster.students.size() << " students\n";
    for (const auto& left : roster.left_out) {
        std::cerr << "grader tokens: " << shown << ":" << left.line << ": left out: " << left.why
                  << "\n";
    }
    const std::vector<serve::RosterStudent>& students = roster.students;
    const auto store = open_store(options.state);
    std::string csv = "student,name,token\n";
    const auto now = static_cast<std::int64_t>(serve::now_seconds());
    for (const auto& student : students) {
        const std::string token =
            store->issue_token(student.id, student.name, serve::Role::student, expires, now);
        csv +=
            text::csv_field(student.id) + "," + text::csv_field(student.name) + "," + token + "\n";
    }
    return write_tokens(options, csv, students.size());
}

int run_instructor(const TokensCommandOptions& options) {
    bool bad = false;
    const auto expires = expiry(options, bad);
    if (bad) {
        return kExitUsage;
    }
    const auto store = open_store(options.state);
    const std::string token =
        store->issue_token(options.login, options.name, serve::Role::instructor, expires,
                           static_cast<std::int64_t>(serve::now_seconds()));
    return write_tokens(options,
                        "student,name,token\n" + text::csv_field(options.login) + "," +
                            text::csv_field(options.name) + "," + token + "\n",
                        1);
}

int run_list(const TokensCommandOptions& options) {
    const auto store = open_store(options.state);
    const double now = serve::now_seconds();
    std::cout << "login,name,role,issued,expires,state\n";
    for (const serve::Person& person : store->people()) {
        const bool expired = person.expires_at && static_cast<double>(*person.expires_at) <= now;
        std::cout << text::csv_field(person.login) << "," << text::csv_field(person.name) << ","
                  << serve::to_string(person.role) << ","
                  << serve::utc_text(static_cast<double>(person.issued_at)) << ","
                  << (person.expires_at ? serve::utc_text(static_cast<double>(*person.expires_at))
                                        : std::string("never"))
                  << "," << (person.revoked ? "revoked" : (expired ? "expired" : "valid")) << "\n";
    }
    return kExitPass;
}

int run_revoke(const TokensCommandOptions& options) {
    const auto store = open_store(options.state);
    if (!store->revoke(options.login)) {
        spdlog::error("no one with the login '{}' (grader tokens list shows them)",
                      text::visible_line(options.login));
        return kExitUsage;
    }
    std::cerr << "grader tokens: " << text::visible_line(options.login)
              << "'s token no longer works (issue a new one with grader tokens issue)\n";
    return kExitPass;
}

}  // namespace

void add_tokens_command(CLI::App& app, const GlobalOptions& global, Runner& run) {
    (void)global;
    auto options = std::make_shared<TokensCommandOptions>();
    CLI::App* command = app.add_subcommand(
        "tokens", "Issue, list and revoke the tokens students submit to `grader serve` with");
    command->require_subcommand(1);
    const auto state_option = [&](CLI::App* sub) {
        sub->add_option("--state", options->state, "The service's state folder (grader serve's)")
            ->capture_default_str();
    };
    CLI::App* issue = command->add_subcommand(
        "issue", "One token per student of a roster CSV (a student's new token replaces the old)");
    issue
        ->add_option("ROSTER", options->roster,
                     "CSV with a student a row: the id first, or under a header such as "
                     "student_id, login or email; a name column is kept")
        ->required()
        ->check(CLI::ExistingFile);
    issue->add_option("-o,--output", options->output,
                      "Write student,name,token to FILE (mode 0600) instead of standard output");
    issue->add_option("--expires", options->expires, "Last day the tokens work, YYYY-MM-DD (UTC)");
    state_option(issue);
    issue->callback([options, &run] { run = [options] { return run_issue(*options); }; });

    CLI::App* instructor =
        command->add_subcommand("instructor", "A token that sees every student's attempts");
    instructor->add_option("LOGIN", options->login, "The instructor's login")->required();
    instructor->add_option("--name", options->name, "The instructor's name");
    instructor->add_option("-o,--output", options->output, "Write it to FILE (mode 0600)");
    instructor->add_option("--expires", options->expires, "Last day it works, YYYY-MM-DD (UTC)");
    state_option(instructor);
    instructor->callback([options, &run] { run = [options] { return run_instructor(*options); }; });

    CLI::App* list = command->add_subcommand("list", "Everyone with a token, and its state");
    state_option(list);
    list->callback([options, &run] { run = [options] { return run_list(*options); }; });

    CLI::App* revoke = command->add_subcommand("revoke", "Make a login's token stop working");
    revoke->add_option("LOGIN", options->login, "The login")->required();
    state_option(revoke);
    revoke->callback([options, &run] { run = [options] { return run_revoke(*options); }; });
    command->footer(
        "Examples:\n  grader tokens issue roster.csv -o tokens.csv --expires 2027-01-31\n"
        "  grader tokens instructor prof --name 'A. Professor' -o prof-token.csv\n"
        "  grader tokens list");
}

}  // namespace grader::cli
