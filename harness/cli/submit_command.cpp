// `grader submit FOLDER --server URL`: sends a submission to `grader serve` from a terminal and
// prints the same reports the page shows: the simulator's at once, the GPU's in its turn.

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "archive/zip_reader.hpp"
#include "cli/commands.hpp"
#include "serve/http_client.hpp"
#include "text/text_safety.hpp"

namespace grader::cli {
namespace {

namespace fs = std::filesystem;

struct SubmitCommandOptions {
    std::vector<fs::path> paths;
    std::string server;
    std::string token;
    fs::path token_file;
    std::string exercise;
    std::string format = "text";
    bool no_wait = false;
    double wait = 900.0;
};

constexpr std::size_t kMaxFileBytes = 8 * 1024 * 1024;

std::optional<std::string> read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return std::nullopt;
    }
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (bytes.str().size() > kMaxFileBytes) {
        return std::nullopt;
    }
    return bytes.str();
}

// The token: --token, else --token-file, else GRADER_TOKEN.
std::string token_of(const SubmitCommandOptions& options) {
    std::string token = options.token;
    if (token.empty() && !options.token_file.empty()) {
        token = read_file(options.token_file).value_or("");
    }
    if (token.empty()) {
        const char* from_environment = std::getenv("GRADER_TOKEN");
        token = from_environment != nullptr ? from_environment : "";
    }
    while (!token.empty() &&
           (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
        token.pop_back();
    }
    return token;
}

struct Client {
    serve::ServerUrl url;
    std::string token;

    nlohmann::json get_json(const std::string& target, int& status) const {
        const serve::HttpReply reply =
            serve::http_request(url, "GET", target, {{"Authorization", "Bearer " + token}}, "", 60);
        status = reply.status;
        return nlohmann::json::parse(reply.body, nullptr, false);
    }
    std::string get_text(const std::string& target, int& status) const {
        const serve::HttpReply reply =
            serve::http_request(url, "GET", target, {{"Authorization", "Bearer " + token}}, "", 60);
        status = reply.status;
        return reply.body;
    }
};

// What an answer that is not a success says: the service's own reason (JSON), else what a
// reverse proxy in front of it (docs/serve.md's nginx or Caddy) meant by its status.
std::string error_of(const nlohmann::json& body, int status) {
    if (body.is_object() && body.contains("error") && body["error"].is_string()) {
        return body["error"].get<std::string>();
    }
    if (status == 413) {
        return "the upload is larger than the web server in front of the service takes (HTTP 413 "
               "from its reverse proxy: nginx's client_max_body_size, Caddy's request_body "
               "max_size): send less, or ask the instructor to raise the proxy's limit above the "
               "service's";
    }
    if (status == 502 || status == 503 || status == 504) {
        return "the web server in front of the service could not get an answer from it (HTTP " +
               std::to_string(status) + "): the service is down or busy; try again later";
    }
    return "the service answered HTTP " + std::to_string(status);
}

// An upload the service would refuse for its size, said before it is sent: a proxy in front of
// the service may cut it off with a bare 413, or a broken connection, instead of its reason.
std::optional<std::string> too_large(
    const nlohmann::json& me, const std::vector<std::pair<std::string, std::string>>& files) {
    if (!me.contains("upload") || !me["upload"].is_object()) {
        return std::nullopt;  // a service from before it said its limits
    }
    const auto limit = [&](const char* key) {
        return me["upload"].value(key, std::numeric_limits<std::size_t>::max());
    };
    std::size_t total = 0;
    for (const auto& [name, bytes] : files) {
        total += bytes.size();
        if (!looks_like_zip(name, bytes) && bytes.size() > limit("max_file_bytes")) {
            return "'" + text::visible_line(name) + "' is " + zip_size_text(bytes.size()) +
                   ": the service takes a file of at most " +
                   zip_size_text(limit("max_file_bytes"));
        }
    }
    if (total > limit("max_bytes")) {
        return "the files add up to " + zip_size_text(total) + ": the service takes at most " +
               zip_size_text(limit("max_bytes")) + " in one upload (its --max-upload-kb)";
    }
    return std::nullopt;
}

int exit_for(const std::string& verdict) {
    return verdict == "pass" ? kExitPass : (verdict == "fail" ? kExitFail : kExitUngradable);
}

int run_submit(const SubmitCommandOptions& options) {
    Client client;
    try {
        client.url = serve::parse_server_url(options.server);
    } catch (const serve::HttpClientError& error) {
        spdlog::error("{}", error.what());
        return kExitUsage;
    }
    client.token = token_of(options);
    if (client.token.empty()) {
        spdlog::error(
            "no token: give --token TOKEN, --token-file FILE or GRADER_TOKEN (your "
            "instructor gave you one)");
        return kExitUsage;
    }
    try {
        int status = 0;
        const nlohmann::json me = client.get_json("/api/me", status);
        if (status != 200) {
            spdlog::error("{}", text::visible_line(error_of(me, status)));
            return status >= 500 ? kExitUngradable : kExitUsage;
        }
        // The files: each path given; a folder gives the exercise's files it holds.
        std::vector<std::pair<std::string, std::string>> files;
        std::string exercise = options.exercise;
        for (const fs::path& path : options.paths) {
            if (fs::is_directory(path)) {
                for (const auto& offered : me["exercises"]) {
                    const auto names = offered["files"].get<std::vector<std::string>>();
                    const bool chosen = exercise.empty()
                                            ? fs::exists(path / names.front())
                                            : offered["id"].get<std::string>() == exercise;
                    if (!chosen) {
                        continue;
                    }
                    exercise = offered["id"].get<std::string>();
                    for (const std::string& name : names) {
                        if (const auto bytes = read_file(path / name)) {
                            files.emplace_back(name, *bytes);
                        }
                    }
                    break;
                }
            } else if (const auto bytes = read_file(path)) {
                files.emplace_back(path.filename().string(), *bytes);
            } else {
                spdlog::error("{} cannot be read (or is larger than 8 MB)",
                              text::visible_line(path.string()));
                return kExitUsage;
            }
        }
        if (files.empty()) {
            spdlog::error("nothing to send: no exercise's files in {} (this service takes {})",
                          text::visible_line(options.paths.front().string()),
                          text::visible_line(me["exercises"].dump()));
            return kExitUsage;
        }
        if (const auto refusal = too_large(me, files)) {
            spdlog::error("not sent: {}", *refusal);
            return kExitUsage;
        }
        std::vector<std::pair<std::string, std::string>> fields;
        if (!exercise.empty()) {
            fields.emplace_back("exercise", exercise);
        }
        const serve::MultipartBody body = serve::multipart_body(fields, files);
        const serve::HttpReply sent = serve::http_request(
            client.url, "POST", "/api/attempts",
            {{"Authorization", "Bearer " + client.token}, {"Content-Type", body.content_type}},
            body.body, 120);
        const nlohmann::json attempt = nlohmann::json::parse(sent.body, nullptr, false);
        if (sent.status != 201) {
            // Refused (a 4xx, with its reason): 2, as documented; the service's or its proxy's
            // failure (5xx): 3, nothing the student did.
            spdlog::error("the upload was refused: {}",
                          text::visible_line(error_of(attempt, sent.status)));
            return sent.status >= 500 ? kExitUngradable : kExitUsage;
        }
        const std::string id = std::to_string(attempt["id"].get<long long>());
        std::cerr << "grader submit: attempt " << attempt["number"].get<int>() << " ("
                  << text::visible_line(attempt["exercise"].get<std::string>())
                  << ") sent; attempt id " << id << "\n";
        if (options.no_wait) {
            std::cout << text::json_text(attempt, 2) << "\n";
            return kExitPass;
        }
        const std::string report_format = options.format == "json" ? "json" : "text";
        nlohmann::json printed = {{"attempt", attempt}};
        std::map<std::string, bool> shown;
        std::string last_wait;
        std::string final_verdict;
        const auto deadline =
            std::chrono::steady_clock::now() + std::chrono::duration<double>(options.wait);
        while (std::chrono::steady_clock::now() < deadline) {
            const nlohmann::json now = client.get_json("/api/attempts/" + id, status);
            if (status != 200) {
                spdlog::error("{}", text::visible_line(error_of(now, status)));
                return kExitUngradable;
            }
            bool waiting = false;
            for (const char* lane : {"sim", "gpu"}) {
                if (!now["lanes"].contains(lane)) {
                    continue;
                }
                const auto& state = now["lanes"][lane];
                if (state["state"] != "done") {
                    waiting = true;
                    if (std::string(lane) == "gpu" && shown["sim"]) {
                        const std::string wait =
                            state["state"] == "queued"
                                ? "GPU: waiting, " +
                                      std::to_string(state["ahead"].get<long long>()) +
                                      " ahead of you"
                                : std::string("GPU: being graded");
                        if (wait != last_wait) {
                            std::cerr << "grader submit: " << wait << "\n";
                            last_wait = wait;
                        }
                    }
                    continue;
                }
                if (shown[lane]) {
                    continue;
                }
                shown[lane] = true;
                final_verdict = state["verdict"].get<std::string>();
                const std::string report = client.get_text(
                    "/api/attempts/" + id + "/report?lane=" + lane + "&format=" + report_format,
                    status);
                if (options.format == "json") {
                    printed[lane] = status == 200 ? nlohmann::json::parse(report, nullptr, false)
                                                  : nlohmann::json(state);
                } else {
                    std::cout << (std::string(lane) == "sim" ? "==== on the simulator ====\n"
                                                             : "==== on the course's GPU ====\n")
                              << (status == 200
                                      ? text::visible(report)
                                      : text::visible(state["summary"].get<std::string>()) + "\n")
                              << std::flush;
                }
            }
            if (!waiting) {
                if (options.format == "json") {
                    std::cout << text::json_text(printed, 2) << "\n";
                }
                return exit_for(final_verdict);
            }
            std::this_thread::sleep_for(std::chrono::seconds(1));
        }
        spdlog::error(
            "no answer within {} s: the attempt is queued all the same; see it on the "
            "page, or run grader submit again later",
            static_cast<int>(options.wait));
        return kExitUngradable;
    } catch (const serve::HttpClientError& error) {
        spdlog::error("{}", text::visible_line(error.what()));
        return kExitUngradable;
    }
}

}  // namespace

void add_submit_command(CLI::App& app, const GlobalOptions& global, Runner& run) {
    (void)global;
    auto options = std::make_shared<SubmitCommandOptions>();
    CLI::App* command = app.add_subcommand(
        "submit", "Send a submission to the course's `grader serve` and print its reports");
    command
        ->add_option("PATHS", options->paths,
                     "The submission folder, or its files (probe.cu submission.yaml), or a zip")
        ->required();
    command
        ->add_option("--server", options->server,
                     "The service's address, e.g. https://gpu.course.edu (or GRADER_SERVER)")
        ->envname("GRADER_SERVER")
        ->required();
    command->add_option("--token", options->token,
                        "Your token (better: GRADER_TOKEN or --token-file, which no process "
                        "list shows)");
    command->add_option("--token-file", options->token_file, "A file holding your token");
    command->add_option("--exercise", options->exercise,
                        "The exercise's id (default: the one whose kernel file the folder holds)");
    command->add_option("--format", options->format, "text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    command->add_flag("--no-wait", options->no_wait,
                      "Print the attempt and return; see its reports on the page");
    command->add_option("--wait", options->wait, "Seconds to wait for both reports")
        ->capture_default_str();
    command->footer(
        "Examples:\n  GRADER_TOKEN=gs-... grader submit my-probe --server https://gpu.course.edu\n"
        "  grader submit probe.cu submission.yaml --server http://localhost:8080 --token-file t");
    command->callback([options, &run] { run = [options] { return run_submit(*options); }; });
}

}  // namespace grader::cli
