// The students of a real Moodle course, each in headless Chromium: signs in to Moodle, opens the
// course's LTI activity (Moodle launches `grader serve` by LTI 1.3), submits on the page (the
// example, or a failing kit), waits for the report, then opens Moodle's gradebook until the
// score is there. Run by scripts/moodle/lti-moodle.sh, which makes the Moodle, the course and
// the tool's registration; alone, it skips (77). Writes OUT/students.json: per student, the
// seconds from opening the activity to the page, the attempt's grade, when it was graded, and
// when the gradebook showed the score.
//
// Environment: GRADER_MOODLE_RUN (setup.php's JSON), GRADER_MOODLE_URL, GRADER_MOODLE_PASSWORD,
// GRADER_MOODLE_OUT, GRADER_CHROMIUM (default /usr/bin/chromium).

#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "grader_run.hpp"
#include "serve/devtools.hpp"
#include "serve/service_fixture.hpp"
#include "serve/zip_maker.hpp"
#include "test_paths.hpp"

using namespace grader::testing;
namespace fs = std::filesystem;

namespace {

std::string environment(const char* name) {
    const char* value = std::getenv(name);
    return value == nullptr ? std::string() : std::string(value);
}

double wall_seconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string js(const std::string& text) {
    return nlohmann::json(text).dump();
}

// What a student submits: most the example (15 of 15), some a kit whose stride-3 prediction is
// wrong (14 of 15), some one that does not compile (a fail, with the points its answers earn): a
// score of each kind reaches the gradebook.
struct Kit {
    std::string name;
    std::string probe;
    std::string answers;
};

Kit kit_for(int index) {
    const fs::path fixtures = fs::path(GRADER_FIXTURES_DIR) / "submissions";
    if (index % 10 == 8) {
        return {"wrong_degrees", read_text(fixtures / "wrong_degrees" / "probe.cu"),
                read_text(fixtures / "wrong_degrees" / "submission.yaml")};
    }
    if (index % 10 == 9) {
        return {"compile_error", read_text(fixtures / "compile_error" / "probe.cu"),
                read_text(fixtures / "compile_error" / "submission.yaml")};
    }
    return {"example", example_file("probe.cu"), example_file("submission.yaml")};
}

}  // namespace

TEST_CASE(
    "each student of the Moodle course launches, submits and sees the score in the "
    "gradebook") {
    const std::string run_file = environment("GRADER_MOODLE_RUN");
    if (run_file.empty()) {
        MESSAGE("SKIPPED: run by scripts/moodle/lti-moodle.sh (GRADER_MOODLE_RUN is not set)");
        std::exit(77);
    }
    const auto run = nlohmann::json::parse(read_text(run_file));
    const std::string moodle = environment("GRADER_MOODLE_URL");
    const std::string password = environment("GRADER_MOODLE_PASSWORD");
    const fs::path out = environment("GRADER_MOODLE_OUT");
    const std::string chromium = environment("GRADER_CHROMIUM").empty()
                                     ? std::string("/usr/bin/chromium")
                                     : environment("GRADER_CHROMIUM");
    const int cmid = run["activities"]["day15-bank-conflicts"]["cmid"].get<int>();
    const int course = run["course"].get<int>();
    nlohmann::json results = nlohmann::json::array();

    int index = 0;
    for (const auto& student : run["students"]) {
        const std::string username = student["username"].get<std::string>();
        const Kit kit = kit_for(index++);
        CAPTURE(username);
        const fs::path profile = out / "profiles" / username;
        fs::remove_all(profile);
        fs::create_directories(profile);
        Browser browser(chromium, profile, out / "profiles" / (username + ".log"));
        nlohmann::json result = {{"student", username}, {"kit", kit.name}};

        browser.open(moodle + "/login/index.php");
        REQUIRE(browser.wait_until("document.getElementById('username') !== null", 120));
        browser.evaluate("document.getElementById('username').value = " + js(username) +
                         "; document.getElementById('password').value = " + js(password) +
                         "; document.getElementById('loginbtn').click()");
        REQUIRE(
            browser.wait_until("!location.pathname.includes('/login/') && "
                               "document.readyState === 'complete'",
                               120));

        // Moodle's launch: its form posts to the tool's login, the tool sends the browser to
        // Moodle's authorization, Moodle posts the id_token to the tool, the tool opens the page.
        const double opened = wall_seconds();
        browser.open(moodle + "/mod/lti/launch.php?id=" + std::to_string(cmid));
        REQUIRE_MESSAGE(
            browser.wait_until("document.getElementById('who') !== null && "
                               "document.getElementById('who').textContent.startsWith('Signed')",
                               120),
            browser.evaluate("document.body ? document.body.innerText : ''").dump());
        const double on_page = wall_seconds();
        result["launch_seconds"] = on_page - opened;
        CHECK(browser.evaluate("document.getElementById('who').textContent")
                  .get<std::string>()
                  .rfind("Signed in as " + username, 0) == 0);
        CHECK(browser.evaluate("document.getElementById('exercise').value") ==
              "day15-bank-conflicts");

        browser.evaluate(
            "(() => { const chosen = new DataTransfer();"
            "chosen.items.add(new File([" +
            js(kit.probe) + "], 'probe.cu')); chosen.items.add(new File([" + js(kit.answers) +
            "], 'submission.yaml'));"
            "document.getElementById('files').files = chosen.files;"
            "document.getElementById('submit').click(); return true; })()");
        REQUIRE(browser.wait_until("document.querySelector('#lane-sim .verdict') !== null", 600));
        result["verdict"] =
            browser.evaluate("document.querySelector('#lane-sim .verdict').textContent");
        const auto attempt = browser.evaluate(
            "fetch('api/attempts/' + state.shown, {headers: {Authorization: 'Bearer ' + "
            "state.token}}).then(r => r.json())");
        result["score"] = attempt["lanes"]["sim"]["score"];
        result["graded_at"] = attempt["lanes"]["sim"]["finished_at"];
        // The score as Moodle's gradebook writes it: two decimals.
        char expected[32];
        std::snprintf(expected, sizeof expected, "%.2f",
                      attempt["lanes"]["sim"]["score"].get<double>());

        // Moodle's gradebook, as the student reads it, until the activity's row shows the score.
        bool seen = false;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
        while (!seen && std::chrono::steady_clock::now() < deadline) {
            browser.open(moodle + "/grade/report/user/index.php?id=" + std::to_string(course));
            browser.wait_until(
                "document.readyState === 'complete' && "
                "document.querySelector('table.user-grade') !== null",
                120);
            const std::string grade = browser.evaluate(
                "(() => { for (const row of document.querySelectorAll('table.user-grade tr')) {"
                " if (row.innerText.includes('Bank conflicts')) {"
                "  const cell = row.querySelector('td.column-grade');"
                "  return cell ? cell.innerText.trim().split('\\n')[0].trim() : ''; } } return ''; "
                "})()");
            if (grade == std::string(expected)) {
                seen = true;
                result["gradebook_seen_at"] = wall_seconds();
                result["gradebook_grade"] = grade;
            } else {
                std::this_thread::sleep_for(std::chrono::seconds(1));
            }
        }
        CHECK_MESSAGE(seen, username << "'s gradebook never showed " << std::string(expected));
        if (index == 1) {
            std::ofstream(out / "moodle-gradebook.png", std::ios::binary) << browser.screenshot();
        }
        browser.stop();
        results.push_back(result);
        std::ofstream(out / "students.json") << results.dump(2) << "\n";
    }
    CHECK(results.size() == run["students"].size());
}
