// `grader serve` end to end over HTTP on the loopback: a student's attempt graded on the
// simulator (the grade `grader grade` makes, in its confined worker), what another student and an
// instructor may see, every kind of bad input and its answer, a crash of the service midway, the
// GPU's lane handed to scripts/slurm's interface, and `grader submit`.

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "serve/api.hpp"
#include "serve/http_client.hpp"
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
