// `grader serve` as an LTI 1.3 tool, against a platform made with npm's `jose` under Node.js
// (tests/lti/platform.mjs, its messages those of the LTI Core, AGS and NRPS specifications'
// examples): launches checked and refused, the instructor's role, the roster by NRPS, the
// platform's key rotation followed, scores posted by AGS (best or latest), retried until the
// platform accepts them and kept across a restart; and in headless Chromium, a student launched
// from the course page who submits on the page and whose score reaches the gradebook.
//
// The platform's jose is installed from the npm registry (npm ci, tests/lti/package-lock.json)
// beside this program at its first run. Exits 77 (CTest: skipped) where Node.js or npm is not
// installed; the browser's suite where Chromium is not (or GRADER_NO_BROWSER=1).

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
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
#include "serve/devtools.hpp"
#include "serve/http_client.hpp"
#include "serve/http_messages.hpp"
#include "serve/http_server.hpp"
#include "serve/lti.hpp"
#include "serve/lti_store.hpp"
#include "serve/service.hpp"
#include "serve/service_fixture.hpp"
#include "serve/store.hpp"
#include "serve/zip_maker.hpp"
#include "test_paths.hpp"

extern char** environ;

using namespace grader;
using namespace grader::testing;
namespace fs = std::filesystem;

namespace {

constexpr const char* kClientId = "962fa4d8-bcbf-49a0-94b2-2de05ad274af";
constexpr const char* kDeployment = "07940580-b309-415e-a37c-914d387c1150";

bool on_path(const std::string& program) {
    return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

// The npm error code of a log whose `npm ci` could not reach its registry (no network, no name
// service, a TLS proxy npm does not trust): the machine's, not the LTI tool's, so the test is
// skipped, visibly. Empty for any other failure, which fails the test.
std::string registry_unreachable(const std::string& log) {
    for (const char* code :
         {"SELF_SIGNED_CERT_IN_CHAIN", "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
          "UNABLE_TO_VERIFY_LEAF_SIGNATURE", "CERT_HAS_EXPIRED", "ENOTFOUND", "EAI_AGAIN",
          "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENETUNREACH", "EHOSTUNREACH"}) {
        if (log.find(std::string("npm ERR! code ") + code) != std::string::npos ||
            log.find(std::string("npm error code ") + code) != std::string::npos) {
            return code;
        }
    }
    return {};
}

// The platform's folder beside this program, with jose installed by npm ci from the lock file.
fs::path platform_folder() {
    static const fs::path folder = [] {
        if (!on_path("node") || !on_path("npm")) {
            MESSAGE(
                "SKIPPED: Node.js and npm are needed for the LTI platform (apt-get install "
                "nodejs npm)");
            std::exit(77);
        }
        const fs::path dir = test_program_folder() / "lti-platform";
        fs::create_directories(dir);
        const fs::path source = fs::path(GRADER_SOURCE_DIR) / "tests" / "lti";
        const bool same_lock =
            fs::exists(dir / "package-lock.json") &&
            read_text(dir / "package-lock.json") == read_text(source / "package-lock.json");
        for (const char* name : {"package.json", "package-lock.json", "platform.mjs"}) {
            fs::copy_file(source / name, dir / name, fs::copy_options::overwrite_existing);
        }
        if (!same_lock || !fs::exists(dir / "node_modules" / "jose" / "package.json")) {
            const std::string command = "npm ci --no-audit --no-fund --prefix '" + dir.string() +
                                        "' >'" + (dir / "npm.log").string() + "' 2>&1";
            if (std::system(command.c_str()) != 0) {
                const std::string log = read_text(dir / "npm.log");
                if (const std::string code = registry_unreachable(log); !code.empty()) {
                    MESSAGE(
                        "SKIPPED: npm could not fetch the LTI platform's packages from its "
                        "registry ("
                        << code
                        << "): the network, or a TLS proxy whose CA npm does not trust "
                           "(NODE_EXTRA_CA_CERTS names one)");
                    std::exit(77);
                }
                FAIL("npm ci of tests/lti failed: " << log);
            }
        }
        return dir;
    }();
    return folder;
}

std::string percent_encode(const std::string& text) {
    std::string out;
    for (const char c : text) {
        if (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.') {
            out += c;
        } else {
            char escaped[4];
            std::snprintf(escaped, sizeof escaped, "%%%02X", static_cast<unsigned char>(c));
            out += escaped;
        }
    }
    return out;
}

serve::HttpReply fetch(const std::string& url, const std::string& method = "GET",
                       const std::string& body = {},
                       std::vector<std::pair<std::string, std::string>> headers = {}) {
    const std::size_t question = url.find('?');
    const auto server = serve::parse_server_url(url.substr(0, question));
    if (!body.empty()) {
        headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
    }
    return serve::http_request(server, method,
                               question == std::string::npos ? "" : url.substr(question), headers,
                               body, 60);
}

// The test platform, a Node.js process, stopped when it goes.
struct Platform {
    pid_t pid = -1;
    std::string url;

    explicit Platform(const std::string& tool_url, const fs::path& log) {
        const fs::path folder = platform_folder();
        std::vector<std::string> argv = {"/usr/bin/env", "node", (folder / "platform.mjs").string(),
                                         "--tool", tool_url};
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
        posix_spawn(&pid, raw[0], &actions, nullptr, raw.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        const std::string said = "platform listening on ";
        while (url.empty() && std::chrono::steady_clock::now() < deadline) {
            const std::string text = read_text(log);
            const std::size_t at = text.find(said);
            if (at != std::string::npos && text.find('\n', at) != std::string::npos) {
                url = text.substr(at + said.size(), text.find('\n', at) - at - said.size());
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        REQUIRE_MESSAGE(!url.empty(), "the test platform did not start: " << read_text(log));
    }
    ~Platform() {
        if (pid > 0) {
            ::kill(pid, SIGTERM);
            int status = 0;
            ::waitpid(pid, &status, 0);
        }
    }
    nlohmann::json control(const std::string& what, const std::string& method = "GET") const {
        return nlohmann::json::parse(fetch(url + "/control/" + what, method).body);
    }
    serve::LtiPlatform registration() const {
        serve::LtiPlatform platform;
        platform.issuer = url;
        platform.client_id = kClientId;
        platform.name = "Test Platform";
        platform.auth_url = url + "/auth";
        platform.token_url = url + "/token";
        platform.jwks_url = url + "/jwks";
        platform.deployments = {kDeployment};
        return platform;
    }
};

// `grader serve` with LTI in this process: the service (its simulator's lane alone), the LTI
// tool and the HTTP server, started and stopped together.
struct Tool {
    std::unique_ptr<serve::Service> service;
    std::unique_ptr<serve::Lti> lti;
    std::unique_ptr<serve::Api> api;
    std::unique_ptr<serve::HttpServer> server;

    Tool(const fs::path& state, serve::ScorePolicy policy) {
        serve::ServiceOptions options;
        options.state_dir = state;
        options.exercises = bundled_exercises();
        options.worker_executable = GRADER_BINARY;
        options.sim_jobs = 2;
        service = std::make_unique<serve::Service>(options);
        serve::HttpOptions http;
        http.port = 0;
        server = std::make_unique<serve::HttpServer>(
            http, [this](const serve::ApiRequest& request) { return api->handle(request); });
        serve::LtiOptions lti_options;
        lti_options.public_url = url();  // the test's client names no port in its Host
        lti_options.policy = policy;
        lti_options.retry_first_seconds = 0.2;
        lti_options.poll_seconds = 0.2;
        lti_options.jwks_refetch_seconds = 0.5;
        lti = std::make_unique<serve::Lti>(*service, lti_options);
        api = std::make_unique<serve::Api>(*service, serve::RequestLimits{}, lti.get());
        service->start();
        lti->start();
        server->start();
    }
    ~Tool() {
        server->stop();
        lti->stop();
        service->stop();
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(server->port()); }
    Client client(const std::string& token) const { return {server->port(), token}; }
};

struct Launch {
    int status = 0;
    std::string body;
    std::string token;  // the session the page is given
};

enum class Way { honest, replayed, without_cookie, role_in_form };

// A launch as a browser makes it, through the tool's login, the platform's authorization
// endpoint and the tool's launch, done here with HTTP requests.
Launch launch(const Tool& tool, const Platform& platform, const std::string& user,
              const std::string& exercise, const std::string& variant = "", Way way = Way::honest) {
    const nlohmann::json hint = {{"user", user}, {"exercise", exercise}, {"variant", variant}};
    const auto login = fetch(tool.url() + "/lti/login?iss=" + percent_encode(platform.url) +
                             "&login_hint=" + user +
                             "&target_link_uri=" + percent_encode(tool.url() + "/lti/launch") +
                             "&lti_message_hint=" + percent_encode(hint.dump()) +
                             "&client_id=" + kClientId + "&lti_deployment_id=" + kDeployment);
    REQUIRE(login.status == 302);
    const std::string cookie =
        login.headers.at("set-cookie").substr(0, login.headers.at("set-cookie").find(';'));
    const auto authorized = fetch(login.headers.at("location") + "&format=json");
    REQUIRE_MESSAGE(authorized.status == 200, authorized.body);
    const auto form = nlohmann::json::parse(authorized.body);
    std::string body = "id_token=" + percent_encode(form["id_token"].get<std::string>()) +
                       "&state=" + percent_encode(form["state"].get<std::string>());
    if (way == Way::role_in_form) {
        body += "&roles=" +
                percent_encode("http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor");
    }
    std::vector<std::pair<std::string, std::string>> headers;
    if (way != Way::without_cookie) {
        headers.emplace_back("Cookie", cookie);
    }
    auto reply = fetch(form["action"].get<std::string>(), "POST", body, headers);
    if (way == Way::replayed) {
        REQUIRE(reply.status == 303);
        reply = fetch(form["action"].get<std::string>(), "POST", body, headers);
    }
    Launch launched;
    launched.status = reply.status;
    launched.body = reply.body;
    if (reply.status == 303) {
        const std::string location = reply.headers.at("location");
        REQUIRE(location.rfind("../#lti=gl-", 0) == 0);
        launched.token = location.substr(8);
    }
    return launched;
}

// Polls the platform's gradebook until it holds `count` scores, or `seconds` pass.
nlohmann::json wait_for_scores(const Platform& platform, std::size_t count, double seconds) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<long>(seconds * 1000));
    nlohmann::json scores = platform.control("scores");
    while (scores.size() < count && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        scores = platform.control("scores");
    }
    return scores;
}

std::vector<std::pair<std::string, std::string>> kit(const std::string& name) {
    const fs::path folder = fs::path(GRADER_FIXTURES_DIR) / "submissions" / name;
    return {{"probe.cu", read_text(folder / "probe.cu")},
            {"submission.yaml", read_text(folder / "submission.yaml")}};
}

fs::path fresh_folder(const std::string& name) {
    const fs::path folder = scratch_root("lti") / name;
    fs::remove_all(folder);
    fs::create_directories(folder);
    return folder;
}

}  // namespace

TEST_CASE("a student's launch opens the page as that student, for the exercise of the link") {
    const fs::path folder = fresh_folder("launch");
    Tool tool(folder / "state", serve::ScorePolicy::best);
    Platform platform(tool.url(), folder / "platform.log");
    tool.lti->store().save_platform(platform.registration());

    const Launch ann = launch(tool, platform, "ann", "day15-padding");
    REQUIRE_MESSAGE(ann.status == 303, ann.body);
    const auto me = tool.client(ann.token).get("/api/me");
    CHECK(me["login"] == "ann");
    CHECK(me["name"] == "Ann Lee");
    CHECK(me["role"] == "student");
    CHECK(me["lti"]["exercise"] == "day15-padding");
    CHECK(me["lti"]["course"] == "GPU Programming");
    CHECK(me["lti"]["gradebook"] == true);
    CHECK(me["lti"]["roster"] == false);
    // Her second launch is the same person here; a token's student of the same name is not her.
    tool.service->store().issue_token("bo", "", serve::Role::student, std::nullopt, 0);
    const Launch bo = launch(tool, platform, "bo", "");
    REQUIRE(bo.status == 303);
    CHECK(tool.client(bo.token).get("/api/me")["login"] == "bo-2");
    CHECK(tool.client(bo.token).get("/api/me")["lti"]["exercise"] == "day15-bank-conflicts");
    CHECK(tool.client(launch(tool, platform, "ann", "").token).get("/api/me")["login"] == "ann");
    // A role a student adds to the form is not the token's: she stays a student.
    const Launch forged = launch(tool, platform, "ann", "", "", Way::role_in_form);
    REQUIRE(forged.status == 303);
    CHECK(tool.client(forged.token).get("/api/me")["role"] == "student");
    // The tool's key: in the state folder, its alone; its public half at /lti/jwks.
    const auto key_mode =
        fs::status(folder / "state" / "lti" / "tool-key.pem").permissions() & fs::perms::all;
    CHECK(key_mode == (fs::perms::owner_read | fs::perms::owner_write));
    const auto jwks = nlohmann::json::parse(fetch(tool.url() + "/lti/jwks").body);
    REQUIRE(jwks["keys"].size() == 1);
    CHECK(jwks["keys"][0]["kty"] == "RSA");
    CHECK(jwks["keys"][0]["alg"] == "RS256");
    CHECK(!jwks["keys"][0].contains("d"));
}

TEST_CASE("hostile launches are refused in one line, with nothing recorded") {
    const fs::path folder = fresh_folder("hostile");
    Tool tool(folder / "state", serve::ScorePolicy::best);
    Platform platform(tool.url(), folder / "platform.log");
    tool.lti->store().save_platform(platform.registration());
    struct Case {
        const char* variant;
        Way way;
        int status;
        const char* why;
    };
    for (const Case& hostile : {
             Case{"expired", Way::honest, 401, "its id_token: it has expired (exp)"},
             Case{"wrong-key", Way::honest, 401,
                  "its id_token: its signature does not verify with the platform's key"},
             Case{"forged-role", Way::honest, 401,
                  "its id_token: its signature does not verify with the platform's key"},
             Case{"alg-none", Way::honest, 401, "its id_token: it is not signed"},
             Case{"other-deployment", Way::honest, 401,
                  "its deployment 'another-deployment-4c1150' is not one registered for this "
                  "platform"},
             Case{"wrong-audience", Way::honest, 401,
                  "its audience (aud) is not this tool's client_id"},
             Case{"wrong-nonce", Way::honest, 401, "its nonce is not the one this login sent"},
             Case{"", Way::replayed, 401, "or was used already (a launch is good once)"},
             Case{"", Way::without_cookie, 401, "this browser did not begin the login"},
         }) {
        const std::string variant = hostile.variant;
        const int way = static_cast<int>(hostile.way);
        CAPTURE(variant);
        CAPTURE(way);
        const auto people = tool.service->store().people().size();
        const Launch refused = launch(tool, platform, "cy", "", hostile.variant, hostile.way);
        CHECK(refused.status == hostile.status);
        CHECK(refused.body.rfind("LTI launch refused: ", 0) == 0);
        CHECK(refused.body.find('\n') == refused.body.size() - 1);  // one line
        CHECK_MESSAGE(refused.body.find(hostile.why) != std::string::npos, refused.body);
        CHECK(refused.token.empty());
        // Nothing recorded: no one new (the replay's first, honest launch made cy), no attempt.
        CHECK(tool.service->store().people().size() ==
              people + (hostile.way == Way::replayed ? 1 : 0));
        CHECK(tool.service->store().attempts(0, 10).empty());
    }
    // A launch's state from no login here, and a token that is no session.
    const auto unknown = fetch(tool.url() + "/lti/launch", "POST", "id_token=a.b.c&state=nope");
    CHECK(unknown.status == 401);
    CHECK(unknown.body.find("its state is not a login begun here") != std::string::npos);
    int status = 0;
    tool.client("gl-0123").get("/api/me", &status);
    CHECK(status == 401);
}

TEST_CASE("the platform's new key is fetched from its JWKS when it rotates") {
    const fs::path folder = fresh_folder("rotation");
    Tool tool(folder / "state", serve::ScorePolicy::best);
    Platform platform(tool.url(), folder / "platform.log");
    tool.lti->store().save_platform(platform.registration());
    REQUIRE(launch(tool, platform, "ann", "").status == 303);
    CHECK(platform.control("rotate", "POST")["kid"] == "platform-key-2");
    std::this_thread::sleep_for(std::chrono::milliseconds(600));  // jwks_refetch_seconds
    const Launch after = launch(tool, platform, "ann", "");
    CHECK_MESSAGE(after.status == 303, after.body);
    const auto requests = platform.control("requests");
    CHECK(std::count(requests.begin(), requests.end(), "GET /jwks") == 2);
}

TEST_CASE("an instructor's launch sees the class, and reads the course's roster by NRPS") {
    const fs::path folder = fresh_folder("roster");
    Tool tool(folder / "state", serve::ScorePolicy::best);
    Platform platform(tool.url(), folder / "platform.log");
    tool.lti->store().save_platform(platform.registration());
    const Launch prof = launch(tool, platform, "prof", "");
    REQUIRE(prof.status == 303);
    const auto me = tool.client(prof.token).get("/api/me");
    CHECK(me["role"] == "instructor");
    CHECK(me["lti"]["roster"] == true);
    REQUIRE(launch(tool, platform, "ann", "").status == 303);
    int status = 0;
    const auto roster = tool.client(prof.token).get("/api/lti/roster", &status);
    REQUIRE_MESSAGE(status == 200, roster.dump());
    CHECK(roster["course"] == "GPU Programming");
    REQUIRE(roster["members"].size() == 4);  // two pages of two, through rel="next"
    CHECK(roster["members"][0]["name"] == "Ann Lee");
    CHECK(roster["members"][0]["login"] == "ann");
    CHECK(roster["members"][3]["instructor"] == true);
    // A student may not read it.
    tool.client(launch(tool, platform, "bo", "").token).get("/api/lti/roster", &status);
    CHECK(status == 403);
}

TEST_CASE(
    "every graded attempt's score reaches the gradebook, retried until accepted, none lost "
    "across a restart") {
    const fs::path folder = fresh_folder("scores");
    auto tool = std::make_unique<Tool>(folder / "state", serve::ScorePolicy::best);
    Platform platform(tool->url(), folder / "platform.log");
    tool->lti->store().save_platform(platform.registration());

    const Launch ann = launch(*tool, platform, "ann", "");
    REQUIRE(ann.status == 303);
    const Client as_ann = tool->client(ann.token);
    const auto first = as_ann.submit(kit("correct"));
    REQUIRE_MESSAGE(first.status == 201, first.body);
    auto scores = wait_for_scores(platform, 1, 240);
    REQUIRE(scores.size() == 1);
    CHECK(scores[0]["userId"] == "user-ann-a6d5c443");
    CHECK(scores[0]["scoreGiven"] == 15);
    CHECK(scores[0]["scoreMaximum"] == 15);
    CHECK(scores[0]["activityProgress"] == "Completed");
    CHECK(scores[0]["gradingProgress"] == "FullyGraded");
    CHECK(scores[0]["lineitem"] == "default");

    // The gradebook is down; the score waits in the outbox, and the service is stopped meanwhile.
    platform.control("fail-scores?count=1000", "POST");
    const auto second = as_ann.submit(kit("wrong_degrees"));
    REQUIRE(second.status == 201);
    const auto id = nlohmann::json::parse(second.body)["id"].get<long long>();
    as_ann.wait_done(id, 240);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline &&
           (tool->lti->store().scores(id).empty() || tool->lti->store().scores(id)[0].tries < 2)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    REQUIRE(tool->lti->store().scores(id).size() == 1);
    CHECK(tool->lti->store().scores(id)[0].state == "pending");
    CHECK(tool->lti->store().scores(id)[0].last_error.find("503") != std::string::npos);
    tool.reset();
    CHECK(wait_for_scores(platform, 2, 1).size() == 1);
    platform.control("fail-scores?count=0", "POST");  // the gradebook is back

    tool = std::make_unique<Tool>(folder / "state", serve::ScorePolicy::best);
    platform.control("tool?url=" + tool->url(), "POST");
    scores = wait_for_scores(platform, 2, 60);
    REQUIRE(scores.size() == 2);
    CHECK(scores[1]["scoreGiven"] == 15);  // the best: the first attempt's, not this 14
    CHECK(tool->lti->store().scores(id)[0].state == "posted");
    CHECK(tool->lti->store().scores(id)[0].tries >= 3);  // refused twice or more, then accepted
    tool.reset();

    // Latest, as an instructor may choose instead: the 14 of the attempt just graded.
    tool = std::make_unique<Tool>(folder / "state", serve::ScorePolicy::latest);
    platform.control("tool?url=" + tool->url(), "POST");
    const Launch again = launch(*tool, platform, "ann", "");
    const auto third = tool->client(again.token).submit(kit("wrong_degrees"));
    REQUIRE(third.status == 201);
    scores = wait_for_scores(platform, 3, 240);
    REQUIRE(scores.size() == 3);
    CHECK(scores[2]["scoreGiven"] == 14);
    CHECK(!scores[2]["comment"].get<std::string>().empty());  // the grade's summary
}

TEST_CASE("a student launched from the course submits on the page and sees where the score goes" *
          doctest::test_suite("browser")) {
    const char* chromium = std::getenv("GRADER_CHROMIUM");
    const std::string browser_path =
        chromium != nullptr && *chromium != '\0' ? chromium : "/usr/bin/chromium";
    if ((std::getenv("GRADER_NO_BROWSER") != nullptr &&
         std::string(std::getenv("GRADER_NO_BROWSER")) == "1") ||
        !fs::exists(browser_path)) {
        MESSAGE("SKIPPED: Chromium is not installed at " << browser_path
                                                         << " (or GRADER_NO_BROWSER=1)");
        std::exit(77);
    }
    const fs::path folder = fresh_folder("browser");
    fs::create_directories(folder / "profile");
    Tool tool(folder / "state", serve::ScorePolicy::best);
    Platform platform(tool.url(), folder / "platform.log");
    tool.lti->store().save_platform(platform.registration());

    Browser browser(browser_path, folder / "profile", folder / "chromium.log");
    // A hostile launch first: the refusal is the page the browser shows.
    browser.open(platform.url + "/course?user=cy&variant=expired");
    REQUIRE(browser.wait_until("document.body && document.body.innerText.includes('refused')", 30));
    CHECK(browser.evaluate("document.body.innerText.trim()") ==
          "LTI launch refused: its id_token: it has expired (exp)");

    browser.open(platform.url + "/course?user=bo&exercise=day15-bank-conflicts");
    REQUIRE(
        browser.wait_until("document.getElementById('who') && "
                           "document.getElementById('who').textContent.startsWith('Signed')",
                           30));
    // A service without a GPU says the simulator's report is the grade (and draws no GPU lane).
    CHECK(browser.evaluate("document.getElementById('who').textContent") ==
          "Signed in as bo (Bo Chen). This service has no GPU: the simulator's report is the "
          "grade.");
    CHECK(browser.evaluate("document.getElementById('lti').textContent") ==
          "GPU Programming: your best score goes to the course's gradebook in Test Platform.");
    CHECK(browser.evaluate("location.hash") == "");
    CHECK(browser.evaluate("document.getElementById('exercise').value") == "day15-bank-conflicts");
    browser.evaluate(
        "(() => { const chosen = new DataTransfer();"
        "chosen.items.add(new File([" +
        nlohmann::json(example_file("probe.cu")).dump() +
        "], 'probe.cu'));"
        "chosen.items.add(new File([" +
        nlohmann::json(example_file("submission.yaml")).dump() +
        "], 'submission.yaml'));"
        "document.getElementById('files').files = chosen.files;"
        "document.getElementById('submit').click(); return true; })()");
    REQUIRE(browser.wait_until("document.querySelector('#lane-sim .verdict') !== null", 240));
    CHECK(browser.evaluate("document.querySelector('#lane-sim .verdict').textContent") == "PASS");
    const auto scores = wait_for_scores(platform, 1, 60);
    REQUIRE(scores.size() == 1);
    CHECK(scores[0]["userId"] == "user-bo-a6d5c443");
    CHECK(scores[0]["scoreGiven"] == 15);
    const std::string shot = browser.screenshot();
    CHECK(shot.substr(1, 3) == "PNG");
    const fs::path artifacts =
        fs::path(GRADER_BINARY).parent_path().parent_path().parent_path() / "artifacts";
    fs::create_directories(artifacts);
    std::ofstream(artifacts / "serve-lti-page.png", std::ios::binary) << shot;
    browser.stop();
}
