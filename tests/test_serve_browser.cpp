// The page of `grader serve` in headless Chromium (Debian's `chromium`), driven as a student
// drives it: a token typed, files chosen, Submit clicked; the simulator's report and the lane
// tables appear, the GPU's lane shows its place and then its report, a bad zip is answered on
// the page. The GPU's lane is a stand-in for scripts/slurm/submit.sh that waits for the test's
// word, so the wait can be seen. Keeps a screenshot in the build's artifacts/. Exits 77 (CTest:
// skipped) where Chromium is not installed or GRADER_NO_BROWSER=1.

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serve/devtools.hpp"
#include "serve/http_client.hpp"
#include "serve/http_server.hpp"
#include "serve/service.hpp"
#include "serve/service_fixture.hpp"
#include "serve/store.hpp"
#include "serve/zip_maker.hpp"
#include "test_paths.hpp"

using namespace grader;
using namespace grader::testing;
namespace fs = std::filesystem;

namespace {

std::string chromium_path() {
    const char* path = std::getenv("GRADER_CHROMIUM");
    return path != nullptr && *path != '\0' ? path : "/usr/bin/chromium";
}

fs::path artifacts_dir() {
    if (const char* dir = std::getenv("GRADER_ARTIFACTS_DIR"); dir != nullptr && *dir != '\0') {
        return dir;
    }
    return fs::path(GRADER_BINARY).parent_path().parent_path().parent_path() / "artifacts";
}

// A JavaScript string literal of any bytes.
std::string js_string(const std::string& text) {
    return nlohmann::json(text).dump();
}

// A JavaScript File of binary bytes.
std::string js_binary_file(const std::string& bytes, const std::string& name) {
    std::string numbers;
    for (const char c : bytes) {
        numbers += (numbers.empty() ? "" : ",") + std::to_string(static_cast<unsigned char>(c));
    }
    return "new File([new Uint8Array([" + numbers + "])], " + js_string(name) + ")";
}

void skip_without_chromium() {
    if (const char* no_browser = std::getenv("GRADER_NO_BROWSER");
        no_browser != nullptr && std::string(no_browser) == "1") {
        MESSAGE("SKIPPED: GRADER_NO_BROWSER=1");
        std::exit(77);
    }
    if (!fs::exists(chromium_path())) {
        MESSAGE("SKIPPED: chromium not installed at " << chromium_path()
                                                      << " (apt-get install chromium)");
        std::exit(77);
    }
}

std::string choose_files(const std::vector<std::string>& files) {
    std::string script = "(() => { const chosen = new DataTransfer();";
    for (const std::string& file : files) {
        script += "chosen.items.add(" + file + ");";
    }
    return script +
           "document.getElementById('files').files = chosen.files;"
           "document.getElementById('submit').click(); return true; })()";
}

}  // namespace

TEST_CASE("a student submits from the page and reads both reports, waiting their turn") {
    skip_without_chromium();
    const fs::path folder = scratch_root("serve-browser") / "page";
    fs::remove_all(folder);
    fs::create_directories(folder / "profile");
    // The GPU's lane: the wave waits until the test creates `go`, then grades as a batch would.
    const fs::path script = folder / "submit.sh";
    std::ofstream(script)
        << "#!/bin/sh\nclass=$1 run=$2; shift 3\n"
           "while [ ! -e '"
        << (folder / "go").string()
        << "' ]; do sleep 0.2; done\n"
           "\"$GRADER\" batch \"$class\" --output \"$run/shards/0\" --shard 0/1 "
           "--backend \"$GRADER_BACKEND\" \"$@\" >\"$run/batch.log\" 2>&1\nexit 0\n";
    fs::permissions(script, fs::perms::owner_all);
    serve::ServiceOptions options;
    options.state_dir = folder / "state";
    options.sim_jobs = 2;
    options.gpu = true;
    options.slurm.submit_script = script;
    options.slurm.backend = "sim";
    options.slurm.wave_size = 1;
    InProcessService running(options);
    const Client bo = running.client("bo");
    const Client ann = running.client("ann");
    // Bo's attempt goes first and holds the GPU's lane.
    REQUIRE(bo.submit_example().status == 201);

    Browser browser(chromium_path(), folder / "profile", folder / "chromium.log");
    browser.open("http://127.0.0.1:" + std::to_string(running.server->port()) + "/");
    REQUIRE(browser.wait_until("document.documentElement.dataset.ready === 'true'", 30));

    // A wrong token is answered on the page.
    browser.evaluate(
        "document.getElementById('token').value = 'gs-wrong';"
        "document.getElementById('sign-in-button').click()");
    REQUIRE(browser.wait_until("document.getElementById('token-error').textContent !== ''", 10));
    CHECK(browser.evaluate("document.getElementById('token-error').textContent") ==
          "this is not a token as the instructor's are (gs- and 48 letters and digits): check "
          "that it was copied whole");

    browser.evaluate("document.getElementById('token').value = " + js_string(ann.token) +
                     "; document.getElementById('sign-in-button').click()");
    REQUIRE(browser.wait_until("!document.getElementById('upload').hidden", 10));
    CHECK(browser.evaluate("document.getElementById('who').textContent") == "Signed in as ann");
    CHECK(browser.evaluate("document.getElementById('exercise').options.length") == 2);

    // A zip holding a link: refused, said on the page, nothing kept.
    browser.evaluate(choose_files(
        {js_binary_file(make_zip({{"probe.cu", "/etc/passwd", S_IFLNK | 0777}}), "work.zip")}));
    REQUIRE(browser.wait_until("document.getElementById('upload-error').textContent !== ''", 10));
    CHECK(browser.evaluate("document.getElementById('upload-error').textContent") ==
          "'work.zip': 'probe.cu' is a symbolic link: a zip may only hold plain files (zip it "
          "with the files themselves)");

    browser.evaluate(choose_files(
        {"new File([" + js_string(example_file("probe.cu")) + "], 'probe.cu')",
         "new File([" + js_string(example_file("submission.yaml")) + "], 'submission.yaml')"}));
    // The simulator's report at once; the GPU's lane waits behind Bo's.
    REQUIRE(browser.wait_until("document.querySelector('#lane-sim .report') !== null", 120));
    CHECK(browser.evaluate("document.querySelector('#lane-sim .verdict').textContent") == "PASS");
    CHECK(browser.evaluate("document.querySelectorAll('#lane-sim ul.checks > li').length")
              .get<int>() >= 8);
    REQUIRE(
        browser.wait_until("document.querySelectorAll('#explain table.lanes').length === 4", 120));
    CHECK(browser.evaluate("document.querySelectorAll('#explain table.lanes tbody tr').length") ==
          4 * 32);
    CHECK(browser.evaluate(
              "document.querySelector('#explain table.lanes[data-stride=\"16\"] caption')"
              ".textContent.includes('16-way')") == true);
    const std::string waiting =
        browser.evaluate("document.querySelector('#lane-gpu .status').textContent");
    CHECK_MESSAGE((waiting == "Waiting for its turn: next in line, 1 being graded now." ||
                   waiting == "Being graded now..."),
                  waiting);
    CHECK(browser.evaluate("document.querySelector('#lane-gpu .report')") == nullptr);
    const std::string before = browser.screenshot();

    std::ofstream(folder / "go") << "go\n";
    REQUIRE(browser.wait_until("document.querySelector('#lane-gpu .report') !== null", 240));
    CHECK(browser.evaluate("document.querySelector('#lane-gpu .verdict').textContent") == "PASS");
    CHECK(browser.evaluate("document.querySelector('#lane-gpu .status').textContent") == "");
    // Earlier attempts, listed with both verdicts.
    REQUIRE(browser.wait_until(
        "document.querySelector('#attempts tbody tr td:nth-child(6)').textContent === "
        "'PASS 15/15'",
        30));
    CHECK(browser.evaluate("document.querySelectorAll('#attempts tbody tr').length") == 1);
    // What was submitted can be downloaded again, through the token.
    CHECK(browser.evaluate("Array.from(document.querySelectorAll('#attempt-files button'), b => "
                           "b.textContent).join(' ')") == "probe.cu submission.yaml");
    CHECK(browser.evaluate("fetch('api/attempts/' + state.shown + '/files/probe.cu', {headers: "
                           "{Authorization: 'Bearer ' + state.token}}).then(r => r.text())") ==
          example_file("probe.cu"));

    const std::string after = browser.screenshot();
    CHECK(after.substr(1, 3) == "PNG");
    fs::create_directories(artifacts_dir());
    std::ofstream(artifacts_dir() / "serve-page-waiting.png", std::ios::binary) << before;
    std::ofstream(artifacts_dir() / "serve-page.png", std::ios::binary) << after;
    browser.stop();
}

namespace {

// Whether the page, laid out in the browser's window, scrolls sideways: the page's width past the
// window's, in pixels (0: it does not).
int sideways_overflow(Browser& browser) {
    return browser
        .evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        .get<int>();
}

// Whether an element takes room on the page (display:none itself or in an ancestor: it does not).
std::string drawn(const std::string& selector) {
    return "(document.querySelector('" + selector + "').getClientRects().length > 0)";
}

}  // namespace

TEST_CASE(
    "the page on a phone and on a laptop: no lane the service lacks, no sideways scroll, "
    "no instructor's control for a student, and a sign-out that forgets the token") {
    skip_without_chromium();
    const fs::path folder = scratch_root("serve-browser") / "layout";
    fs::remove_all(folder);
    fs::create_directories(folder / "profile");
    serve::ServiceOptions options;
    options.state_dir = folder / "state";
    options.sim_jobs = 2;
    options.gpu = false;  // the simulator's report is the grade
    InProcessService running(options);
    const Client ann = running.client("ann");
    const Client prof = running.client("prof", serve::Role::instructor);

    Browser browser(chromium_path(), folder / "profile", folder / "chromium.log");
    browser.open("http://127.0.0.1:" + std::to_string(running.server->port()) + "/");
    browser.viewport(360, 780, true);
    REQUIRE(browser.wait_until("document.documentElement.dataset.ready === 'true'", 30));
    const auto sign_in = [&](const std::string& token) {
        browser.evaluate("document.getElementById('token').value = " + js_string(token) +
                         "; document.getElementById('sign-in-button').click()");
        REQUIRE(browser.wait_until("!document.getElementById('upload').hidden", 10));
    };
    sign_in(ann.token);
    // A 541 px wide page on a 360 px phone before (the exercise's select was 473 px).
    CHECK(sideways_overflow(browser) == 0);
    // Shown to a student before: the filter is a form, and a form's flex beat [hidden].
    CHECK(browser.evaluate(drawn("#student-form")) == false);
    CHECK(browser.evaluate("document.getElementById('who').textContent")
              .get<std::string>()
              .find("no GPU: the simulator's report is the grade") != std::string::npos);

    // Too large for the service: said on the page, nothing sent.
    browser.evaluate(
        choose_files({"new File([" + js_string(std::string(600 * 1024, 'x')) + "], 'probe.cu')"}));
    REQUIRE(browser.wait_until("document.getElementById('upload-error').textContent !== ''", 10));
    CHECK(browser.evaluate("document.getElementById('upload-error').textContent") ==
          "'probe.cu' is 600 KB: a file may be at most 512 KB.");
    CHECK(ann.get("/api/attempts")["attempts"].empty());

    browser.evaluate(choose_files(
        {"new File([" + js_string(example_file("probe.cu")) + "], 'probe.cu')",
         "new File([" + js_string(example_file("submission.yaml")) + "], 'submission.yaml')"}));
    REQUIRE(browser.wait_until("document.querySelector('#lane-sim .report') !== null", 120));
    REQUIRE(
        browser.wait_until("document.querySelectorAll('#explain table.lanes').length === 4", 120));
    REQUIRE(browser.wait_until("document.querySelectorAll('#attempts tbody tr').length === 1", 30));
    // No GPU lane: not drawn (an empty box 2,558 px tall before), nor its column.
    CHECK(browser.evaluate(drawn("#lane-gpu")) == false);
    CHECK(browser.evaluate(drawn("#attempts thead th.gpu-only")) == false);
    // explain's tables as its text shows them: a table whose caption is above its header (the
    // lanes' grid put the header beside it), and no row tinted.
    const std::string table = "document.querySelector('#explain table.lanes[data-stride=\"16\"]')";
    CHECK(browser.evaluate("getComputedStyle(" + table + ").display") == "table");
    CHECK(browser.evaluate(table + ".caption.getBoundingClientRect().bottom <= " + table +
                           ".tHead.getBoundingClientRect().top + 1") == true);
    CHECK(browser.evaluate("new Set(Array.from(" + table +
                           ".querySelectorAll('tbody tr:not(.inactive) td'), td => "
                           "getComputedStyle(td).backgroundColor)).size") == 1);
    struct Window {
        int width;
        int height;
        bool mobile;
        const char* screenshot;
    };
    for (const Window& window : {Window{360, 780, true, "serve-page-360.png"},
                                 Window{1280, 900, false, "serve-page-1280.png"}}) {
        const int width = window.width;
        CAPTURE(width);
        browser.viewport(width, window.height, window.mobile);
        CHECK(sideways_overflow(browser) == 0);
        // A table keeps its words whole: at 360 px its headers were broken letter by letter.
        CHECK(browser.evaluate("(() => { const th = document.querySelector('#lane-sim table th');"
                               " const range = document.createRange();"
                               " range.selectNodeContents(th);"
                               " return range.getClientRects().length; })()") == 1);
        // A table wider than its box scrolls in the box, which stays within the window.
        CHECK(browser.evaluate("Array.from(document.querySelectorAll('table'), t => "
                               "t.parentElement.getBoundingClientRect().right).every(r => r <= " +
                               std::to_string(width) + ")") == true);
        fs::create_directories(artifacts_dir());
        std::ofstream(artifacts_dir() / window.screenshot, std::ios::binary)
            << browser.screenshot();
    }

    // Sign-out forgets the token: in the page, in the browser's storage, after a reload.
    CHECK(browser.evaluate(drawn("#sign-out")) == true);
    browser.evaluate("document.getElementById('sign-out').click()");
    REQUIRE(browser.wait_until("!document.getElementById('sign-in').hidden", 10));
    CHECK(browser.evaluate("localStorage.getItem('grader-token')") == nullptr);
    CHECK(browser.evaluate("document.querySelectorAll('#attempts tbody tr').length") == 0);
    // The page before the reload is ready too: wait for a window that is not the one reloaded.
    browser.evaluate("window.reloaded_from = true; location.reload()");
    REQUIRE(browser.wait_until(
        "window.reloaded_from === undefined && document.documentElement.dataset.ready === 'true'",
        30));
    CHECK(browser.evaluate(drawn("#sign-in")) == true);
    CHECK(browser.evaluate(drawn("#upload")) == false);

    // The instructor's filter is the instructor's.
    sign_in(prof.token);
    CHECK(browser.evaluate(drawn("#student-form")) == true);
    CHECK(sideways_overflow(browser) == 0);
    browser.stop();
}
