#pragma once

// A `grader serve` for the tests, in this process (the library's Service, Api and HttpServer on
// a free port of the loopback) or as the grader itself in a child process, with a client that
// speaks its API.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "exercise/exercise.hpp"
#include "grader_run.hpp"
#include "serve/api.hpp"
#include "serve/http_client.hpp"
#include "serve/http_messages.hpp"
#include "serve/http_server.hpp"
#include "serve/service.hpp"
#include "serve/store.hpp"
#include "serve/zip_maker.hpp"
#include "test_paths.hpp"

extern char** environ;

namespace grader::testing {

inline std::string example_file(const std::string& name) {
    return read_text(std::filesystem::path(GRADER_SOURCE_DIR) / "student" / "example" / name);
}

// Every body the tests read, to check afterwards that none shows a host path.
inline std::vector<std::string>& bodies_seen() {
    static std::vector<std::string> bodies;
    return bodies;
}

struct Client {
    unsigned short port = 0;
    std::string token;

    serve::HttpReply request(const std::string& method, const std::string& target,
                             const std::string& body = {}, const std::string& type = {}) const {
        std::vector<std::pair<std::string, std::string>> headers;
        if (!token.empty()) {
            headers.emplace_back("Authorization", "Bearer " + token);
        }
        if (!type.empty()) {
            headers.emplace_back("Content-Type", type);
        }
        serve::ServerUrl url;
        url.host = "127.0.0.1";
        url.port = std::to_string(port);
        auto reply = serve::http_request(url, method, target, headers, body, 60);
        bodies_seen().push_back(reply.body);
        return reply;
    }
    nlohmann::json get(const std::string& target, int* status = nullptr) const {
        const auto reply = request("GET", target);
        if (status != nullptr) {
            *status = reply.status;
        }
        return nlohmann::json::parse(reply.body, nullptr, false);
    }
    serve::HttpReply submit(const std::vector<std::pair<std::string, std::string>>& files,
                            const std::string& exercise = {}) const {
        std::vector<std::pair<std::string, std::string>> fields;
        if (!exercise.empty()) {
            fields.emplace_back("exercise", exercise);
        }
        const auto body = serve::multipart_body(fields, files);
        return request("POST", "/api/attempts", body.body, body.content_type);
    }
    serve::HttpReply submit_example() const {
        return submit({{"probe.cu", example_file("probe.cu")},
                       {"submission.yaml", example_file("submission.yaml")}});
    }
    // Polls an attempt until every lane is done (and the lane tables are made), or `seconds`.
    nlohmann::json wait_done(long long id, double seconds) const {
        const auto deadline = std::chrono::steady_clock::now() +
                              std::chrono::milliseconds(static_cast<long>(seconds * 1000));
        nlohmann::json attempt;
        while (std::chrono::steady_clock::now() < deadline) {
            attempt = get("/api/attempts/" + std::to_string(id));
            const nlohmann::json lanes = attempt.is_object() && attempt.contains("lanes")
                                             ? attempt["lanes"]
                                             : nlohmann::json::object();
            bool done = !lanes.empty();
            for (const auto& lane : lanes) {
                done = done && lane["state"] == "done";
            }
            if (done && attempt.value("explain", "") == "ready") {
                return attempt;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        return attempt;
    }
};

inline std::vector<Exercise> bundled_exercises() {
    const std::filesystem::path root = std::filesystem::path(GRADER_SOURCE_DIR) / "exercises";
    return {load_exercise(root / "day15-bank-conflicts"), load_exercise(root / "day15-padding")};
}

// The service in this process.
struct InProcessService {
    std::unique_ptr<serve::Service> service;
    std::unique_ptr<serve::Api> api;
    std::unique_ptr<serve::HttpServer> server;

    InProcessService(serve::ServiceOptions options, serve::HttpOptions http = {},
                     serve::RequestLimits limits = {}) {
        if (options.exercises.empty()) {
            options.exercises = bundled_exercises();
        }
        if (options.worker_executable.empty()) {
            options.worker_executable = GRADER_BINARY;
        }
        service = std::make_unique<serve::Service>(options);
        api = std::make_unique<serve::Api>(*service, limits);
        http.port = 0;
        server = std::make_unique<serve::HttpServer>(
            http, [this](const serve::ApiRequest& request) { return api->handle(request); });
        service->start();
        server->start();
    }
    ~InProcessService() {
        server->stop();
        service->stop();
    }
    Client client(const std::string& login, serve::Role role = serve::Role::student) {
        return {server->port(),
                service->store().issue_token(login, "", role, std::nullopt,
                                             static_cast<std::int64_t>(serve::now_seconds()))};
    }
};

// `grader serve` as a child process; killed (SIGKILL) where the test has not stopped it.
// `shell_first`, where given, is a shell command run before it in the same process (`ulimit -n
// 1024`: the limits a machine gives it).
struct ChildService {
    pid_t pid = -1;
    unsigned short port = 0;
    std::string log;  // its standard error, up to the line that names the port

    ChildService(const std::vector<std::string>& arguments, const std::filesystem::path& log_file,
                 const std::string& shell_first = {}) {
        std::vector<std::string> argv = {GRADER_BINARY, "serve", "--listen", "127.0.0.1:0"};
        if (!shell_first.empty()) {
            argv.insert(argv.begin(), {"/bin/sh", "-c", shell_first + " && exec \"$0\" \"$@\""});
        }
        argv.insert(argv.end(), arguments.begin(), arguments.end());
        std::vector<char*> raw;
        for (auto& argument : argv) {
            raw.push_back(argument.data());
        }
        raw.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log_file.c_str(),
                                         O_WRONLY | O_CREAT | O_APPEND, 0600);
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawn(&pid, raw[0], &actions, nullptr, raw.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (port == 0 && std::chrono::steady_clock::now() < deadline && running()) {
            log = read_text(log_file);
            const std::size_t at = log.rfind("listening on http://127.0.0.1:");
            if (at != std::string::npos) {
                port = static_cast<unsigned short>(std::stoi(log.substr(at + 30)));
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }
    // False once it has ended (exit_status then says how).
    bool running() {
        int status = 0;
        if (pid > 0 && ::waitpid(pid, &status, WNOHANG) == pid) {
            pid = -1;
            exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        }
        return pid > 0;
    }
    // Sends `signal` and waits for the end; returns the exit status (-1: ended by a signal).
    int kill(int signal) {
        if (pid > 0) {
            int status = 0;
            ::kill(pid, signal);
            ::waitpid(pid, &status, 0);
            pid = -1;
            exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        }
        return exit_status;
    }
    int exit_status = -1;
    ~ChildService() { kill(SIGKILL); }
};

}  // namespace grader::testing
