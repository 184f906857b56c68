// `grader serve` end to end over HTTP on the loopback: a student's attempt graded on the
// simulator (the grade `grader grade` makes, in its confined worker), what another student and an
// instructor may see, every kind of bad input and its answer, a crash of the service midway, the
// GPU's lane handed to scripts/slurm's interface, and `grader submit`.

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "serve/api.hpp"
#include "serve/http_client.hpp"
#include "serve/http_messages.hpp"
#include "serve/http_server.hpp"
#include "serve/raw_socket.hpp"
#include "serve/service.hpp"
#include "serve/service_fixture.hpp"
#include "serve/store.hpp"
#include "serve/zip_maker.hpp"
#include "test_paths.hpp"

using namespace grader;
using namespace grader::testing;
namespace fs = std::filesystem;

namespace {

fs::path fresh_folder(const std::string& name) {
    const fs::path folder = scratch_root("serve-http") / name;
    fs::remove_all(folder);
    fs::create_directories(folder);
    return folder;
}

serve::ServiceOptions sim_only(const fs::path& state, int jobs = 2) {
    serve::ServiceOptions options;
    options.state_dir = state;
    options.sim_jobs = jobs;
    options.rate = {1000, 60.0};
    return options;
}

std::size_t count_of(const std::string& text, const std::string& needle) {
    std::size_t count = 0;
    for (std::size_t at = text.find(needle); at != std::string::npos;
         at = text.find(needle, at + needle.size())) {
        ++count;
    }
    return count;
}

struct CommandResult {
    int status = -1;
    std::string output;
};

CommandResult run_command(const std::string& command) {
    CommandResult result;
    FILE* pipe = ::popen(command.c_str(), "r");
    char buffer[4096];
    std::size_t got = 0;
    while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) {
        result.output.append(buffer, got);
    }
    const int status = ::pclose(pipe);
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

}  // namespace

TEST_CASE("a student's attempt gets the simulator's report, the lane tables, and stays theirs") {
    const fs::path state = fresh_folder("attempt") / "state";
    InProcessService running(sim_only(state));
    const Client ann = running.client("ann");
    const Client bo = running.client("bo");
    const Client prof = running.client("prof", serve::Role::instructor);

    const auto sent = ann.submit_example();
    REQUIRE(sent.status == 201);
    const auto attempt = nlohmann::json::parse(sent.body);
    const long long id = attempt["id"];
    CHECK(attempt["number"] == 1);
    CHECK(attempt["student"] == "ann");
    CHECK(attempt["exercise"] == "day15-bank-conflicts");
    CHECK(attempt["lanes"]["sim"]["state"] != "done");  // queued, or just begun
    CHECK_FALSE(attempt["lanes"].contains("gpu"));      // no GPU here: the simulator is the grade

    const auto done = ann.wait_done(id, 120);
    REQUIRE(done["lanes"]["sim"]["state"] == "done");
    CHECK(done["lanes"]["sim"]["verdict"] == "pass");
    CHECK(done["explain"] == "ready");

    const auto html = ann.request("GET", "/api/attempts/" + std::to_string(id) + "/report");
    CHECK(html.status == 200);
    CHECK(html.headers.at("content-type") == "text/html; charset=utf-8");
    CHECK(html.body.find("<span class=\"verdict\">PASS</span>") != std::string::npos);
    CHECK(html.body.find("<ul class=\"checks\">") != std::string::npos);
    const auto text =
        ann.request("GET", "/api/attempts/" + std::to_string(id) + "/report?format=text");
    CHECK(text.body.rfind("PASS", 0) == 0);
    const auto json = ann.get("/api/attempts/" + std::to_string(id) + "/report?format=json");
    CHECK(json["submission"] == "attempt 1");
    CHECK(json["environment"]["backend"] == "sim");

    const auto lanes = ann.request("GET", "/api/attempts/" + std::to_string(id) + "/explain");
    CHECK(lanes.status == 200);
    // Strides 3, 8, 16 and 32, each with its busiest line's 32 lanes.
    CHECK(count_of(lanes.body, "<table class=\"lanes\"") == 4);
    CHECK(count_of(lanes.body, "<tr") == 4 * 33);
    CHECK(lanes.body.find("16-way conflict") != std::string::npos);

    const auto file = ann.request("GET", "/api/attempts/" + std::to_string(id) + "/files/probe.cu");
    CHECK(file.body == example_file("probe.cu"));

    SUBCASE("another student gets a 404 for it; the instructor sees it and the class") {
        int status = 0;
        bo.get("/api/attempts/" + std::to_string(id), &status);
        CHECK(status == 404);
        CHECK(bo.request("GET", "/api/attempts/" + std::to_string(id) + "/files/probe.cu").status ==
              404);
        CHECK(bo.get("/api/attempts")["attempts"].empty());
        CHECK(bo.get("/api/attempts?student=ann", &status).value("error", "") ==
              "no student 'ann' you may see");
        CHECK(prof.get("/api/attempts/" + std::to_string(id))["student"] == "ann");
        CHECK(prof.get("/api/attempts?student=ann")["attempts"].size() == 1);
        CHECK(prof.get("/api/attempts?all")["attempts"].size() == 1);
        CHECK(ann.get("/api/attempts")["attempts"].size() == 1);
    }
    SUBCASE("the page is served with a policy that runs no script but its own") {
        const Client anyone{running.server->port(), ""};
        const auto page = anyone.request("GET", "/");
        CHECK(page.status == 200);
        CHECK(page.body.find("<script src=\"page.js\"></script>") != std::string::npos);
        CHECK(page.headers.at("content-security-policy").find("default-src 'self'") !=
              std::string::npos);
        CHECK(anyone.request("GET", "/page.js").headers.at("content-type") ==
              "text/javascript; charset=utf-8");
        CHECK(anyone.get("/api/health")["ok"] == true);
    }
}

TEST_CASE(
    "each route answers its method and path; below /api/ a path no route takes is said "
    "only to a caller whose token holds") {
    const fs::path state = fresh_folder("routes") / "state";
    InProcessService running(sim_only(state));
    const std::string token = running.client("ann").token;
    const auto ask = [&](const std::string& method, const std::string& target, bool with_token) {
        serve::ApiRequest request;
        request.method = method;
        request.target = target;
        request.peer = "127.0.0.1";
        if (with_token) {
            request.headers["authorization"] = "Bearer " + token;
        }
        const serve::ApiResponse response = running.api->handle(request);
        const auto body = nlohmann::json::parse(response.body, nullptr, false);
        return std::make_pair(response.status, body.is_object() ? body.value("error", "") : "");
    };
    const auto type_of = [&](const std::string& method, const std::string& target) {
        serve::ApiRequest request;
        request.method = method;
        request.target = target;
        return running.api->handle(request).content_type;
    };
    using Answer = std::pair<int, std::string>;
    const std::string nothing_here = "nothing here: the page is at /";
    const std::string no_such_api = "no such API: see GET /api/me, /api/attempts";

    CHECK(type_of("GET", "/") == "text/html; charset=utf-8");
    CHECK(type_of("HEAD", "/index.html") == "text/html; charset=utf-8");
    CHECK(type_of("GET", "/page.js") == "text/javascript; charset=utf-8");
    CHECK(type_of("HEAD", "/page.css") == "text/css; charset=utf-8");
    CHECK(ask("POST", "/", false) == Answer{404, nothing_here});
    CHECK(ask("GET", "/elsewhere/page.js", false) == Answer{404, nothing_here});
    CHECK(ask("GET", "/lti/login", false) == Answer{404, nothing_here});  // not an LTI tool
    CHECK(ask("GET", "/api/health", false).first == 200);

    CHECK(ask("GET", "/api/nothing", false).first == 401);
    CHECK(ask("POST", "/api/health", false).first == 401);
    CHECK(ask("GET", "/api/nothing", true) == Answer{404, no_such_api});
    CHECK(ask("GET", "/api", true) == Answer{404, no_such_api});
    CHECK(ask("POST", "/api/me", true) == Answer{404, no_such_api});
    CHECK(ask("GET", "/api/lti/roster", true) == Answer{404, no_such_api});  // not an LTI tool
    CHECK(ask("GET", "/api/me", true).first == 200);
    CHECK(ask("GET", "/api/attempts", true).first == 200);
    CHECK(ask("DELETE", "/api/attempts", true) ==
          Answer{405, "attempts are listed (GET) or made (POST)"});
    CHECK(ask("GET", "/api/attempts/first", true) == Answer{404, "no such attempt"});
    CHECK(ask("GET", "/api/attempts/first/report", true) == Answer{404, "no such attempt"});
    CHECK(ask("GET", "/api/attempts/first/elsewhere", true) == Answer{404, "no such attempt"});
    CHECK(ask("GET", "/api/attempts/7/files/probe.cu", true).first == 404);
    CHECK(ask("DELETE", "/api/attempts/7", true) == Answer{404, no_such_api});
}

TEST_CASE("the instructor pages through every attempt of a class, newest first") {
    const fs::path state = fresh_folder("pages") / "state";
    InProcessService running(sim_only(state));
    const Client prof = running.client("prof", serve::Role::instructor);
    const Client ann = running.client("ann");
    auto& store = running.service->store();
    const std::int64_t ann_id = store.person_by_login("ann")->id;
    std::vector<std::int64_t> ids;  // attempts with no lane: nothing to grade, only to list
    for (int i = 0; i < 5; ++i) {
        ids.push_back(store.add_attempt(ann_id, "day15-bank-conflicts", "p" + std::to_string(i),
                                        {"probe.cu"}, {}, i));
    }
    const auto listed = [](const nlohmann::json& page) {
        std::vector<std::int64_t> out;
        for (const auto& attempt : page["attempts"]) {
            out.push_back(attempt["id"].get<std::int64_t>());
        }
        return out;
    };
    auto page = prof.get("/api/attempts?all&limit=2");
    CHECK(listed(page) == std::vector<std::int64_t>{ids[4], ids[3]});
    REQUIRE(page.contains("next_before"));
    page = prof.get("/api/attempts?all&limit=2&before=" + page["next_before"].dump());
    CHECK(listed(page) == std::vector<std::int64_t>{ids[2], ids[1]});
    page = prof.get("/api/attempts?all&limit=2&before=" + page["next_before"].dump());
    CHECK(listed(page) == std::vector<std::int64_t>{ids[0]});
    CHECK_FALSE(page.contains("next_before"));  // a short page is the last
    // A student pages through their own the same way.
    CHECK(listed(ann.get("/api/attempts?before=" + std::to_string(ids[1]))) ==
          std::vector<std::int64_t>{ids[0]});
    int status = 0;
    CHECK(prof.get("/api/attempts?all&before=x1", &status).value("error", "") ==
          "before is an attempt's id, a whole number: got 'x1'");
    CHECK(status == 400);
    CHECK(prof.get("/api/attempts?all&limit=201", &status).value("error", "") ==
          "limit is a whole number from 1 to 200: got '201'");
    CHECK(status == 400);
    CHECK(prof.get("/api/attempts?all&limit=0", &status).value("error", "").rfind("limit is", 0) ==
          0);
    // A hostile student's variants: a sign, a number past 18 digits, a control character, an
    // empty value; each a 400 that shows what came in as visible text, none a crash.
    for (const std::string query :
         {"before=-1", "before=1234567890123456789012", "before=%1B%5B2J", "before=", "limit=-5",
          "limit=99999999999999999999", "limit=1%0A2"}) {
        CAPTURE(query);
        const auto answer = ann.get("/api/attempts?" + query, &status);
        CHECK(status == 400);
        const std::string error = answer.value("error", "");
        CHECK(error.find_first_of("\x1b\n") == std::string::npos);
    }
    CHECK(ann.get("/api/attempts?before=%1B%5B2J").value("error", "").find("\\x1b") !=
          std::string::npos);
}

TEST_CASE("every bad input gets a clear answer, and loses nothing already graded") {
    const fs::path state = fresh_folder("bad") / "state";
    serve::HttpOptions http;
    http.request_seconds = 1.0;
    http.max_body_bytes = 256 * 1024;
    http.max_connections_per_address = 6;
    serve::RequestLimits limits;
    limits.per_second = 5;
    limits.burst = 10;
    auto options = sim_only(state);
    options.rate = {3, 3600.0};
    InProcessService running(options, http, limits);
    const Client ann = running.client("ann");
    const unsigned short port = running.server->port();

    SUBCASE("a missing, wrong, revoked or expired token") {
        Client nobody{port, ""};
        CHECK(nobody.get("/api/me").value("error", "") ==
              "no token: paste the token your instructor gave you");
        nobody.token = "gs-" + std::string(48, '0');
        int status = 0;
        CHECK(nobody.get("/api/me", &status).value("error", "").find("not known here") !=
              std::string::npos);
        CHECK(status == 401);
        const Client expired{port, running.service->store().issue_token(
                                       "old", "", serve::Role::student, std::int64_t{1000}, 0)};
        CHECK(expired.get("/api/me").value("error", "") ==
              "this token expired on 1970-01-01 00:16 UTC: ask your instructor for a new one");
        // Guessing is slowed: past 20 failures a minute from one address, 429.
        int refused = 0;
        for (int i = 0; i < 30; ++i) {
            refused += nobody.request("GET", "/api/me").status == 429 ? 1 : 0;
        }
        CHECK(refused >= 5);
    }
    SUBCASE("an upload over the limit is refused before its body is read") {
        RawSocket socket(port);
        REQUIRE(socket.connected());
        socket.send("POST /api/attempts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ann.token +
                    "\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: "
                    "104857600\r\n\r\n");
        const std::string answer = socket.receive(5);
        CHECK(answer.rfind("HTTP/1.1 413", 0) == 0);
        CHECK(answer.find("the upload is 102400 KB: at most 256 KB is taken") != std::string::npos);
    }
    SUBCASE("headers too large, and a slow client, cost only their own connection") {
        RawSocket big(port);
        big.send("GET / HTTP/1.1\r\nHost: x\r\nX-Fill: " + std::string(20000, 'a') + "\r\n\r\n");
        CHECK(big.receive(5).rfind("HTTP/1.1 431", 0) == 0);
        RawSocket slow(port);
        slow.send("GET /api/me HTTP/1.1\r\nHost: x\r\n");  // and nothing more
        const auto started = std::chrono::steady_clock::now();
        // Meanwhile everyone else is served.
        CHECK(ann.get("/api/me")["login"] == "ann");
        slow.receive(10);
        CHECK(slow.closed());
        CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
    }
    SUBCASE("a flood of requests is slowed for its sender alone") {
        const Client bo = running.client("bo");
        int refused = 0;
        std::string retry_after;
        for (int i = 0; i < 40; ++i) {
            const auto reply = bo.request("GET", "/api/me");
            if (reply.status == 429) {
                ++refused;
                retry_after = reply.headers.at("retry-after");
            }
        }
        CHECK(refused >= 20);
        CHECK(retry_after == "1");
        CHECK(ann.get("/api/me")["login"] == "ann");
    }
    SUBCASE("a zip with a link or '..', a wrong file, too many attempts") {
        const auto link =
            ann.submit({{"work.zip", make_zip({{"probe.cu", "/etc/passwd", S_IFLNK | 0777}})}});
        CHECK(link.status == 400);
        CHECK(nlohmann::json::parse(link.body)["error"] ==
              "'work.zip': 'probe.cu' is a symbolic link: a zip may only hold plain files (zip "
              "it with the files themselves)");
        const auto climb = ann.submit({{"work.zip", make_zip({{"../../probe.cu", "k"}})}});
        CHECK(nlohmann::json::parse(climb.body)["error"] ==
              "'work.zip': '../../probe.cu' climbs out of the zip with '..': refused");
        const auto wrong = ann.submit({{"notes.txt", "hello"}});
        CHECK(wrong.status == 400);
        CHECK(nlohmann::json::parse(wrong.body)["error"] ==
              "'notes.txt' is not a file day15-bank-conflicts takes: send probe.cu and "
              "submission.yaml (or a zip of them)");
        CHECK(ann.get("/api/attempts")["attempts"].empty());  // nothing was kept of them
        std::vector<long long> ids;
        for (int i = 0; i < 3; ++i) {
            const auto sent = ann.submit_example();
            REQUIRE(sent.status == 201);
            ids.push_back(nlohmann::json::parse(sent.body)["id"]);
        }
        const auto fourth = ann.submit_example();
        CHECK(fourth.status == 429);
        CHECK(nlohmann::json::parse(fourth.body)["error"].get<std::string>().find(
                  "you have made 3 attempts in the last 60 minutes") != std::string::npos);
        CHECK(std::stoi(fourth.headers.at("retry-after")) > 3500);
        for (const long long id : ids) {
            CHECK(ann.wait_done(id, 180)["lanes"]["sim"]["verdict"] == "pass");
        }
    }
    SUBCASE("answers never show the machine's folders") {
        ann.submit_example();
        ann.get("/api/attempts");
        ann.get("/api/me");
        ann.request("GET", "/api/attempts/1/files/..%2Fstate.sqlite");
        ann.request("GET", "/nothing");
    }
    for (const std::string& body : bodies_seen()) {
        CHECK_MESSAGE(body.find(state.parent_path().string()) == std::string::npos, body);
        CHECK_MESSAGE(body.find(std::string(GRADER_SOURCE_DIR)) == std::string::npos, body);
        CHECK_MESSAGE(body.find("/tmp/") == std::string::npos, body);
    }
}

TEST_CASE("a crash of the service loses no attempt: queued and running grades resume") {
    const fs::path folder = fresh_folder("crash");
    const fs::path state = folder / "state";
    std::vector<std::string> arguments = {
        "--state", state.string(), "--backend", "sim", "--sim-jobs", "1", "--rate", "none"};
    std::vector<long long> ids;
    std::string token;
    {
        ChildService first(arguments, folder / "first.log");
        REQUIRE(first.port != 0);
        serve::Store store(state / "state.sqlite");
        token = store.issue_token("ann", "", serve::Role::student, std::nullopt, 0);
        const Client ann{first.port, token};
        for (int i = 0; i < 5; ++i) {
            const auto sent = ann.submit_example();
            REQUIRE(sent.status == 201);
            ids.push_back(nlohmann::json::parse(sent.body)["id"]);
        }
        first.kill(SIGKILL);
    }
    ChildService second(arguments, folder / "second.log");
    REQUIRE(second.port != 0);
    const Client ann{second.port, token};
    for (const long long id : ids) {
        const auto done = ann.wait_done(id, 240);
        CHECK_MESSAGE(done["lanes"]["sim"]["verdict"] == "pass", done.dump());
    }
    CHECK(ann.get("/api/attempts")["attempts"].size() == 5);
    second.kill(SIGTERM);
}

TEST_CASE("the GPU's lane hands its grades to Slurm's scripts and reads their reports back") {
    // A stand-in for scripts/slurm/submit.sh with its interface (CLASS RUN N [batch options],
    // GRADER, GRADER_BACKEND) that grades the class at once as the array's one task would, with
    // `grader batch --shard 0/1` into RUN/shards/0; scripts/slurm/test-real-slurm.sh runs the
    // real one.
    const fs::path folder = fresh_folder("slurm");
    const fs::path script = folder / "submit.sh";
    std::ofstream(script)
        << "#!/bin/sh\nclass=$1 run=$2; shift 3\n"
           "\"$GRADER\" batch \"$class\" --output \"$run/shards/0\" --shard 0/1 "
           "--backend \"$GRADER_BACKEND\" \"$@\" >\"$run/batch.log\" 2>&1\nexit 0\n";
    fs::permissions(script, fs::perms::owner_all);
    auto options = sim_only(folder / "state", 1);
    options.gpu = true;
    options.slurm.submit_script = script;
    options.slurm.backend = "sim";
    options.slurm.wave_size = 4;
    InProcessService running(options);
    const Client ann = running.client("ann");
    const Client bo = running.client("bo");
    std::vector<long long> ids;
    for (const Client* client : {&ann, &ann, &bo}) {
        const auto sent = client->submit_example();
        REQUIRE(sent.status == 201);
        const auto attempt = nlohmann::json::parse(sent.body);
        CHECK(attempt["lanes"]["gpu"]["state"] != "done");
        ids.push_back(attempt["id"]);
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const Client& client = i < 2 ? ann : bo;
        const auto done = client.wait_done(ids[i], 240);
        CHECK_MESSAGE(done["lanes"]["gpu"]["verdict"] == "pass", done.dump());
        const auto report =
            client.get("/api/attempts/" + std::to_string(ids[i]) + "/report?lane=gpu&format=json");
        CHECK(report["verdict"] == "pass");
    }
}

TEST_CASE("grader submit sends a folder and prints the report, with the exit status of a grade") {
    const fs::path folder = fresh_folder("submit");
    const fs::path state = folder / "state";
    ChildService running({"--state", state.string(), "--backend", "sim", "--rate", "none"},
                         folder / "serve.log");
    REQUIRE(running.port != 0);
    std::string token;
    {
        serve::Store store(state / "state.sqlite");
        token = store.issue_token("ann", "", serve::Role::student, std::nullopt, 0);
    }
    std::ofstream(folder / "token") << token << "\n";
    const std::string server = "http://127.0.0.1:" + std::to_string(running.port);
    const std::string example = std::string(GRADER_SOURCE_DIR) + "/student/example";
    const CommandResult passed =
        run_command("'" + std::string(GRADER_BINARY) + "' submit '" + example + "' --server " +
                    server + " --token-file '" + (folder / "token").string() + "' 2>&1");
    CHECK_MESSAGE(passed.status == 0, passed.output);
    CHECK(passed.output.find("==== on the simulator ====\nPASS") != std::string::npos);
    CHECK(passed.output.find("attempt 1 (day15-bank-conflicts) sent") != std::string::npos);

    const CommandResult json =
        run_command("GRADER_TOKEN=" + token + " '" + std::string(GRADER_BINARY) + "' submit '" +
                    example + "/probe.cu' --server " + server + " --format json");
    CHECK(json.status == 1);  // no submission.yaml: the answers check fails
    const auto printed = nlohmann::json::parse(json.output, nullptr, false);
    REQUIRE(printed.is_object());
    CHECK(printed["sim"]["verdict"] == "fail");
    CHECK(printed["attempt"]["files"] == nlohmann::json::array({"probe.cu"}));

    const CommandResult refused =
        run_command("GRADER_TOKEN=gs-nope '" + std::string(GRADER_BINARY) + "' submit '" + example +
                    "' --server " + server + " 2>&1");
    CHECK(refused.status == 2);
    CHECK(refused.output.find("check that it was copied whole") != std::string::npos);
    running.kill(SIGTERM);
}

namespace {

// Bytes that do not compress: a zip of them stays as large as they are.
std::string incompressible(std::size_t size) {
    std::string bytes(size, '\0');
    std::uint32_t state = 2463534242u;
    for (char& c : bytes) {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        c = static_cast<char>(state & 0xff);
    }
    return bytes;
}

}  // namespace

TEST_CASE("an upload over the limit is answered 413 with its reason while the client still sends") {
    const fs::path folder = fresh_folder("too-large");
    InProcessService running(sim_only(folder / "state"));
    const Client ann = running.client("ann");
    // 7 MB against the default 2 MB: refused as soon as the header is read. Before, the service
    // closed with the body unread, and the client's write met a reset: "Broken pipe" (3 times
    // out of 3 at 7 MB with `grader submit`, 2026-12-06).
    const serve::HttpReply reply = ann.submit({{"work.zip", incompressible(7 << 20)}});
    CHECK(reply.status == 413);
    const auto body = nlohmann::json::parse(reply.body, nullptr, false);
    REQUIRE(body.is_object());
    CHECK(body["error"].get<std::string>().find("KB: at most") != std::string::npos);
    CHECK(ann.get("/api/me")["upload"]["max_bytes"] == 2 * 1024 * 1024);
}

TEST_CASE("grader submit says why an upload is refused before sending it, and exits 2") {
    const fs::path folder = fresh_folder("submit-refused");
    const fs::path state = folder / "state";
    ChildService running({"--state", state.string(), "--backend", "sim", "--rate", "none"},
                         folder / "serve.log");
    REQUIRE(running.port != 0);
    std::string token;
    {
        serve::Store store(state / "state.sqlite");
        token = store.issue_token("ann", "", serve::Role::student, std::nullopt, 0);
    }
    const std::string server = "http://127.0.0.1:" + std::to_string(running.port);
    const auto submit = [&](const std::string& file) {
        return run_command("GRADER_TOKEN=" + token + " '" + std::string(GRADER_BINARY) +
                           "' submit '" + file + "' --server " + server + " 2>&1");
    };
    std::ofstream(folder / "probe.cu") << std::string(600 * 1024, 'x');
    std::ofstream(folder / "work.zip", std::ios::binary) << incompressible(7 << 20);
    // Before: "Broken pipe", exit 3.
    const CommandResult file = submit((folder / "probe.cu").string());
    CHECK_MESSAGE(file.status == 2, file.output);
    CHECK(file.output.find("not sent: 'probe.cu' is 600 KB: the service takes a file of at most "
                           "512 KB") != std::string::npos);
    const CommandResult zip = submit((folder / "work.zip").string());
    CHECK_MESSAGE(zip.status == 2, zip.output);
    CHECK(zip.output.find("not sent: the files add up to 7.0 MB: the service takes at most 2.0 MB "
                          "in one upload") != std::string::npos);
    running.kill(SIGTERM);
}

TEST_CASE("grader serve --slurm refuses to start where its script cannot submit") {
    const fs::path folder = fresh_folder("slurm-check");
    fs::create_directories(folder / "empty-path");
    // scripts/slurm/submit.sh --check, with no sbatch on PATH: refused at once, saying so.
    const CommandResult refused = run_command(
        "PATH='" + (folder / "empty-path").string() + "' '" + std::string(GRADER_BINARY) +
        "' serve --listen 127.0.0.1:0 --state '" + (folder / "state").string() + "' --slurm '" +
        std::string(GRADER_SOURCE_DIR) + "/scripts/slurm/submit.sh' 2>&1");
    CHECK_MESSAGE(refused.status == 2, refused.output);
    CHECK(refused.output.find("sbatch is not on PATH") != std::string::npos);
    CHECK(refused.output.find("never comes") != std::string::npos);
    const CommandResult missing = run_command(
        "'" + std::string(GRADER_BINARY) + "' serve --listen 127.0.0.1:0 --state '" +
        (folder / "state").string() + "' --slurm '" + (folder / "absent.sh").string() + "' 2>&1");
    CHECK_MESSAGE(missing.status == 2, missing.output);
    CHECK(missing.output.find("no executable script there") != std::string::npos);
}

TEST_CASE("a wave Slurm does not take is the service's fault, said to the student and logged") {
    const fs::path folder = fresh_folder("slurm-fails");
    const fs::path script = folder / "submit.sh";
    std::ofstream(script) << "#!/bin/sh\necho 'sbatch: error: Batch job submission failed' >&2\n"
                             "exit 1\n";
    fs::permissions(script, fs::perms::owner_all);
    auto options = sim_only(folder / "state", 1);
    options.gpu = true;
    options.slurm.submit_script = script;
    options.slurm.backend = "sim";
    std::vector<std::string> logged;
    std::mutex logged_mutex;
    options.log = [&](const std::string& line) {
        std::lock_guard<std::mutex> lock(logged_mutex);
        logged.push_back(line);
    };
    InProcessService running(options);
    const Client ann = running.client("ann");
    const auto sent = ann.submit_example();
    REQUIRE(sent.status == 201);
    // Before: the GPU's lane said "being graded" until the wave's deadline.
    const auto done = ann.wait_done(nlohmann::json::parse(sent.body)["id"], 120);
    REQUIRE_MESSAGE(done.contains("lanes"), done.dump());
    const auto& gpu = done.at("lanes").at("gpu");
    CHECK_MESSAGE(gpu["state"] == "done", done.dump());
    CHECK(gpu["verdict"] == "ungradable");
    CHECK(gpu["summary"].get<std::string>().find("the service's fault, not your submission's") !=
          std::string::npos);
    std::lock_guard<std::mutex> lock(logged_mutex);
    REQUIRE(!logged.empty());
    CHECK(logged.front().find("a Slurm wave could not be submitted") != std::string::npos);
}

namespace {

std::string nginx_path() {
    const char* path = std::getenv("GRADER_NGINX");
    return path != nullptr && *path != '\0' ? path : "/usr/sbin/nginx";
}

bool nginx_here() {
    return ::access(nginx_path().c_str(), X_OK) == 0;
}

unsigned short free_port() {
    const int socket = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(socket, reinterpret_cast<sockaddr*>(&address), sizeof address);
    socklen_t length = sizeof address;
    ::getsockname(socket, reinterpret_cast<sockaddr*>(&address), &length);
    ::close(socket);
    return ntohs(address.sin_port);
}

// Debian's nginx on the loopback, in front of a service as docs/serve.md configures it (HTTP
// here: the certificate is the only part left out), started by the test and stopped with it.
struct Nginx {
    pid_t pid = -1;

    Nginx(const fs::path& folder,
          const std::vector<std::pair<unsigned short, std::string>>& servers,
          unsigned short service_port) {
        fs::create_directories(folder / "logs");
        std::ofstream config(folder / "nginx.conf");
        config << (::geteuid() == 0 ? "user root;\n" : "") << "daemon off;\npid "
               << (folder / "nginx.pid").string() << ";\nerror_log "
               << (folder / "logs/error.log").string()
               << ";\nevents {}\nhttp {\n  access_log off;\n"
               << "  client_body_temp_path " << (folder / "body").string() << ";\n"
               << "  proxy_temp_path " << (folder / "proxy").string() << ";\n";
        for (const auto& [port, max_body] : servers) {
            config << "  server {\n    listen 127.0.0.1:" << port << ";\n    client_max_body_size "
                   << max_body
                   << ";\n    location / {\n      proxy_pass http://127.0.0.1:" << service_port
                   << ";\n      proxy_read_timeout 60s;\n    }\n  }\n";
        }
        config << "}\n";
        config.close();
        const std::string nginx = nginx_path();
        const std::string prefix = folder.string();
        const std::string conf = (folder / "nginx.conf").string();
        std::vector<char*> argv = {const_cast<char*>(nginx.c_str()),  const_cast<char*>("-p"),
                                   const_cast<char*>(prefix.c_str()), const_cast<char*>("-c"),
                                   const_cast<char*>(conf.c_str()),   nullptr};
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        const std::string log = (folder / "logs/stderr.log").string();
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log.c_str(),
                                         O_WRONLY | O_CREAT | O_APPEND, 0600);
        posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        // Up once every server answers.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        for (const auto& [port, max_body] : servers) {
            while (std::chrono::steady_clock::now() < deadline) {
                try {
                    serve::ServerUrl url;
                    url.host = "127.0.0.1";
                    url.port = std::to_string(port);
                    serve::http_request(url, "GET", "/", {}, "", 5);
                    break;
                } catch (const serve::HttpClientError&) {
                    std::this_thread::sleep_for(std::chrono::milliseconds(100));
                }
            }
        }
    }
    ~Nginx() {
        if (pid > 0) {
            ::kill(pid, SIGTERM);  // nginx's fast shutdown: the master stops its workers
            int status = 0;
            ::waitpid(pid, &status, 0);
        }
    }
    Nginx(const Nginx&) = delete;
    Nginx& operator=(const Nginx&) = delete;
};

}  // namespace

TEST_CASE("behind docs/serve.md's nginx, the service's refusal and the proxy's are both said" *
          doctest::test_suite("nginx") * doctest::skip(!nginx_here())) {
    const fs::path folder = fresh_folder("nginx");
    const fs::path state = folder / "state";
    ChildService running({"--state", state.string(), "--backend", "sim", "--rate", "none"},
                         folder / "serve.log");
    REQUIRE(running.port != 0);
    std::string token;
    {
        serve::Store store(state / "state.sqlite");
        token = store.issue_token("ann", "", serve::Role::student, std::nullopt, 0);
    }
    // docs/serve.md's limit (3m, above the service's 2 MB), and a proxy set below the service's.
    const unsigned short documented = free_port();
    const unsigned short smaller = free_port();
    Nginx nginx(folder / "nginx", {{documented, "3m"}, {smaller, "1m"}}, running.port);
    REQUIRE(nginx.pid > 0);

    // The service's 413 reaches the student through nginx, every time. Before: nginx's 502 one
    // time in three (2026-12-06), as the service closed on the body nginx was still sending.
    const Client through{documented, token};
    for (int attempt = 0; attempt < 6; ++attempt) {
        CAPTURE(attempt);
        const serve::HttpReply reply =
            through.submit({{"work.zip", incompressible(2900 * 1024 + attempt)}});
        CHECK(reply.status == 413);
        const auto body = nlohmann::json::parse(reply.body, nullptr, false);
        REQUIRE(body.is_object());
        CHECK(body["error"].get<std::string>().find("KB: at most") != std::string::npos);
    }

    const auto submit = [&](unsigned short port, const std::string& path, const std::string& more) {
        return run_command(
            "GRADER_TOKEN=" + token + " '" + std::string(GRADER_BINARY) + "' submit '" + path +
            "' --server http://127.0.0.1:" + std::to_string(port) + " " + more + " 2>&1");
    };
    // nginx's own bare 413 (an HTML page): said as the proxy's limit. Before: "the service
    // answered HTTP 413".
    std::ofstream(folder / "work.zip", std::ios::binary) << incompressible(1536 * 1024);
    const CommandResult cut = submit(smaller, (folder / "work.zip").string(), "");
    CHECK_MESSAGE(cut.status == 2, cut.output);
    CHECK(cut.output.find("larger than the web server in front of the service takes (HTTP 413") !=
          std::string::npos);
    // An upload the service takes goes through, as it does without the proxy.
    const CommandResult sent =
        submit(documented, std::string(GRADER_SOURCE_DIR) + "/student/example", "--no-wait");
    CHECK_MESSAGE(sent.status == 0, sent.output);
    running.kill(SIGTERM);
}
