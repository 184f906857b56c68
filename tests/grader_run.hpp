#pragma once

// Runs the real grader executable, as a user would, and reads its report back.

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.hpp"

namespace grader::testing {

// A whole file as bytes; empty where it cannot be read.
inline std::string read_text(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream content;
    content << in.rdbuf();
    return content.str();
}

inline void write_text(const std::filesystem::path& file, const std::string& content) {
    std::ofstream(file, std::ios::binary) << content;
}

struct GraderRun {
    int exit_code = -1;
    std::string output;     // stdout and stderr
    nlohmann::json report;  // the --output file, if one was asked for and written
    std::string report_text;
};

inline std::string shell_quote(const std::string& text) {
    std::string out = "'";
    for (const char c : text) {
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return out + "'";
}

// The environment of a machine without a GPU, whatever this one has: the driver library the
// grader loads is one that does not exist.
inline const std::vector<std::string> kNoGpu = {"GRADER_LIBCUDA=/nonexistent/libcuda.so.1"};

// Runs `program <args...>` (a build of the grader) with `environment` added (NAME=value each);
// if report_file is not empty it is parsed as JSON when it exists.
inline GraderRun run_grader_program(const std::string& program,
                                    const std::vector<std::string>& args,
                                    const std::filesystem::path& report_file = {},
                                    const std::vector<std::string>& environment = {}) {
    std::string command;
    if (!environment.empty()) {
        command = "env";
        for (const auto& variable : environment) {
            command += " " + shell_quote(variable);
        }
        command += " ";
    }
    command += shell_quote(program);
    for (const auto& arg : args) {
        command += " " + shell_quote(arg);
    }
    command += " 2>&1";
    GraderRun run;
    if (!report_file.empty()) {
        std::filesystem::remove(report_file);
    }
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) {
        return run;
    }
    char buffer[4096];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) {
        run.output.append(buffer, n);
    }
    const int status = ::pclose(pipe);
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (!report_file.empty() && std::filesystem::exists(report_file)) {
        std::ifstream in(report_file);
        std::stringstream content;
        content << in.rdbuf();
        run.report_text = content.str();
        run.report = nlohmann::json::parse(run.report_text, nullptr, false);
    }
    return run;
}

// A text report with its wrapped lines joined again: the text writer wraps at 100 columns and
// indents a line's continuations four spaces deeper than the line (a detail nests two deeper
// than its check), so a sentence a test looks for may span lines. Table rows may be joined too:
// read tables from the text as it is.
inline std::string unwrapped(const std::string& text) {
    std::istringstream lines(text);
    std::string out;
    std::size_t base = 0;      // the indent of the line being continued
    std::size_t previous = 0;  // the line before's length: a wrap happens near 100 columns
    bool first = true;
    for (std::string line; std::getline(lines, line);) {
        const std::size_t indent = std::min(line.find_first_not_of(' '), line.size());
        if (!first && previous > 70 && indent == base + 4 && indent < line.size()) {
            out += " " + line.substr(indent);
        } else {
            out += (first ? "" : "\n") + line;
            base = indent;
        }
        previous = line.size();
        first = false;
    }
    return out + "\n";
}

// Runs the built `grader <args...>`, as run_grader_program does.
inline GraderRun run_grader(const std::vector<std::string>& args,
                            const std::filesystem::path& report_file = {},
                            const std::vector<std::string>& environment = {}) {
    return run_grader_program(GRADER_BINARY, args, report_file, environment);
}

inline const nlohmann::json* find_check(const nlohmann::json& report, const std::string& id) {
    for (const auto& check : report["checks"]) {
        if (check.value("id", "") == id) {
            return &check;
        }
    }
    return nullptr;
}

// The check's message and details as one text, for substring assertions.
inline std::string check_text(const nlohmann::json& check) {
    std::string text = check.value("message", "");
    for (const auto& detail : check["details"]) {
        text += "\n" + detail.get<std::string>();
    }
    return text;
}

}  // namespace grader::testing
