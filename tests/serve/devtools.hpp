#pragma once

// Headless Chromium driven through the DevTools protocol over its WebSocket (Boost.Beast's
// client): the tests of the page of `grader serve` type a token, choose files and click, as a
// student does, and read what the page shows. The browser is started and stopped by the test.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace grader::testing {

// An error DevTools answered a call with (its JSON-RPC error object, in the message).
class DevToolsError : public std::runtime_error {
public:
    DevToolsError(const std::string& method, const nlohmann::json& error)
        : std::runtime_error(method + ": " + error.dump()),
          message_(error.value("message", std::string())) {}
    // The page went to another document under the call: the target navigated, or the
    // evaluation's context was the old document's.
    bool navigated() const {
        return message_.find("navigated") != std::string::npos ||
               message_.find("context was destroyed") != std::string::npos ||
               message_.find("Cannot find context") != std::string::npos;
    }

private:
    std::string message_;
};

class Browser {
public:
    // Starts Chromium with an empty profile in `profile`; throws where it does not come up.
    Browser(const std::string& chromium, const std::filesystem::path& profile,
            const std::filesystem::path& log) {
        std::vector<std::string> argv = {chromium,
                                         "--headless",
                                         "--no-sandbox",
                                         "--disable-gpu",
                                         "--disable-quic",
                                         "--no-first-run",
                                         "--disable-background-networking",
                                         "--disable-component-update",
                                         "--disable-sync",
                                         "--remote-debugging-port=0",
                                         "--user-data-dir=" + profile.string(),
                                         "about:blank"};
        std::vector<char*> raw;
        for (auto& argument : argv) {
            raw.push_back(argument.data());
        }
        raw.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                         O_WRONLY | O_CREAT | O_TRUNC, 0600);
        posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawnattr_t attributes;
        posix_spawnattr_init(&attributes);
        posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);  // its helpers go with it
        posix_spawnattr_setpgroup(&attributes, 0);
        if (posix_spawn(&pid_, raw[0], &actions, &attributes, raw.data(), environ) != 0) {
            pid_ = -1;
        }
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attributes);
        std::string port;
        std::string path;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (pid_ > 0 && path.empty() && std::chrono::steady_clock::now() < deadline) {
            std::ifstream active(profile / "DevToolsActivePort");
            std::getline(active, port);
            std::getline(active, path);
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        if (path.empty()) {
            stop();
            throw std::runtime_error("Chromium did not open its DevTools port");
        }
        boost::asio::ip::tcp::resolver resolver(io_);
        boost::asio::connect(socket_.next_layer(), resolver.resolve("127.0.0.1", port));
        socket_.handshake("127.0.0.1:" + port, path);
    }
    ~Browser() { stop(); }
    Browser(const Browser&) = delete;
    Browser& operator=(const Browser&) = delete;

    // Opens a page and attaches to it; later calls of evaluate() run there.
    void open(const std::string& url) {
        const auto target = call("Target.createTarget", {{"url", url}});
        const auto attached =
            call("Target.attachToTarget", {{"targetId", target["targetId"]}, {"flatten", true}});
        session_ = attached["sessionId"].get<std::string>();
        call("Emulation.setDeviceMetricsOverride",
             {{"width", 1400}, {"height", 1800}, {"deviceScaleFactor", 1}, {"mobile", false}});
    }

    // The window the page is laid out in: a phone's (mobile: its viewport meta tag is obeyed,
    // as a phone's browser does) or a laptop's.
    void viewport(int width, int height, bool mobile) {
        call("Emulation.setDeviceMetricsOverride",
             {{"width", width}, {"height", height}, {"deviceScaleFactor", 1}, {"mobile", mobile}});
    }

    // The value of a JavaScript expression in the page (promises awaited).
    nlohmann::json evaluate(const std::string& expression) {
        const auto result =
            call("Runtime.evaluate",
                 {{"expression", expression}, {"awaitPromise", true}, {"returnByValue", true}});
        if (result.contains("exceptionDetails")) {
            throw std::runtime_error("the page threw: " + result["exceptionDetails"].dump());
        }
        return result["result"].value("value", nlohmann::json());
    }

    // Evaluates `condition` until it is true, or `seconds` pass; returns whether it became true.
    // True once `condition` holds, false at the deadline. A condition that throws is not true
    // yet: between two documents (a navigation, a form's submission) `document.documentElement`
    // is null for a moment, which a loaded machine catches (test_serve_browser, Debian 13). Nor
    // is one whose evaluation the navigation itself cut off (DevTools answers that the target
    // navigated, or that the evaluation's context went with the old document): a reload, or
    // Moodle's chain of redirects, under the evaluation.
    bool wait_until(const std::string& condition, double seconds) {
        const auto deadline = std::chrono::steady_clock::now() +
                              std::chrono::milliseconds(static_cast<long>(seconds * 1000));
        while (std::chrono::steady_clock::now() < deadline) {
            try {
                if (evaluate("(() => { try { return Boolean(" + condition +
                             "); } catch (e) { return false; } })()") == true) {
                    return true;
                }
            } catch (const DevToolsError& error) {
                if (!error.navigated()) {
                    throw;
                }
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        return false;
    }

    // The whole page as PNG bytes.
    std::string screenshot() {
        const auto shot =
            call("Page.captureScreenshot", {{"format", "png"}, {"captureBeyondViewport", true}});
        return base64_decode(shot["data"].get<std::string>());
    }

    void stop() {
        if (pid_ <= 0) {
            return;
        }
        try {
            if (socket_.is_open()) {
                nlohmann::json close = {{"id", ++next_id_}, {"method", "Browser.close"}};
                socket_.write(boost::asio::buffer(close.dump()));
            }
        } catch (const std::exception&) {
        }
        for (int i = 0; i < 50; ++i) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                ::kill(-pid_, SIGKILL);  // any helper left in its group
                pid_ = -1;
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        ::kill(-pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }

private:
    nlohmann::json call(const std::string& method, const nlohmann::json& params) {
        const int id = ++next_id_;
        nlohmann::json message = {{"id", id}, {"method", method}, {"params", params}};
        if (!session_.empty() && method.rfind("Target.", 0) != 0) {
            message["sessionId"] = session_;
        }
        socket_.write(boost::asio::buffer(message.dump()));
        for (;;) {
            boost::beast::flat_buffer buffer;
            socket_.read(buffer);
            const auto answer = nlohmann::json::parse(
                boost::beast::buffers_to_string(buffer.data()), nullptr, false);
            if (answer.is_object() && answer.value("id", -1) == id) {
                if (answer.contains("error")) {
                    throw DevToolsError(method, answer["error"]);
                }
                return answer["result"];
            }
        }
    }

    static std::string base64_decode(const std::string& text) {
        static const std::string alphabet =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        std::string out;
        unsigned value = 0;
        int bits = -8;
        for (const char c : text) {
            const std::size_t at = alphabet.find(c);
            if (at == std::string::npos) {
                continue;  // '=' and line breaks
            }
            value = (value << 6) | static_cast<unsigned>(at);
            bits += 6;
            if (bits >= 0) {
                out += static_cast<char>((value >> bits) & 0xff);
                bits -= 8;
            }
        }
        return out;
    }

    pid_t pid_ = -1;
    boost::asio::io_context io_;
    boost::beast::websocket::stream<boost::asio::ip::tcp::socket> socket_{io_};
    std::string session_;
    int next_id_ = 0;
};

}  // namespace grader::testing
