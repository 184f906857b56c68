// The hostile submissions of tests/fixtures/hostile, end to end: `grader grade` run as a process
// on the simulator and through --backend cuda on a machine without a GPU, in every report
// format. Each grade must reach the verdict, exit status and reason its expected.yaml names, and
// a random token in a file that the submission includes or links to in place of /etc/passwd must
// come back in no output and no file the grader wrote. Then a class whose folder name forges a
// verdict line, through `grader batch`.

#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "fixture_expectations.hpp"
#include "grader_run.hpp"
#include "test_paths.hpp"

using namespace grader::testing;

namespace {

namespace fs = std::filesystem;

const char* const kFormats[] = {"json", "text", "markdown", "gradescope", "prairielearn", "junit"};

const fs::path& scratch_root() {
    return grader::testing::scratch_root("hostile");
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// A file holding a fresh random token, in a folder whose name does not hold it (the path is the
// student's own text in a source that includes it).
struct TokenFile {
    std::string token;
    fs::path path;
    TokenFile() {
        std::random_device random;
        token = "grader_token_" + std::to_string(random()) + "_" + std::to_string(random());
        path = scratch_root() / ("host-" + std::to_string(random())) / "passwd";
        fs::create_directories(path.parent_path());
        write_text(path, token + ":x:0:0:" + token + "\n");
    }
};

// The fixture copied where links can be made, with /etc/passwd replaced by the token file and
// the file its `make:` names made.
fs::path prepare(const std::string& name, const YAML::Node& expected, const TokenFile& token,
                 const fs::path& where) {
    const fs::path hostile = fs::path(GRADER_FIXTURES_DIR) / "hostile";
    fs::create_directories(where);
    const fs::path folder = where / name;
    fs::copy(hostile / name, folder, fs::copy_options::recursive);
    fs::remove(folder / "expected.yaml");
    for (const auto& entry : fs::recursive_directory_iterator(folder)) {
        if (entry.is_regular_file()) {
            write_text(entry.path(),
                       replaced(read_text(entry.path()), "/etc/passwd", token.path.string()));
        }
    }
    if (const YAML::Node make = expected["make"]) {
        const fs::path file = folder / make["file"].as<std::string>();
        const std::string kind = make["kind"].as<std::string>();
        const std::string to = make["to"] ? make["to"].as<std::string>() : std::string();
        const fs::path target = to == "token_file" ? token.path : fs::path(to);
        if (make["beside"]) {
            const std::string other = make["beside"].as<std::string>();
            fs::copy(hostile / other, where / other, fs::copy_options::recursive);
        }
        if (kind == "symlink") {
            fs::create_symlink(target, file);
        } else if (kind == "hardlink") {
            fs::create_hard_link(target, file);
        } else {
            REQUIRE(kind == "fifo");
            REQUIRE(::mkfifo(file.c_str(), 0600) == 0);
        }
    }
    return folder;
}

// A copy of the exercise whose compile limit is `seconds` (a bomb need not cost the full limit
// to show what happens at it), laid out so that its relative paths still resolve.
fs::path exercise_with_compile_limit(const fs::path& exercise, int seconds) {
    const fs::path root = scratch_root() / ("exercise-compile-" + std::to_string(seconds));
    const fs::path copy = root / "exercises" / exercise.filename();
    if (!fs::exists(copy)) {
        fs::create_directories(copy.parent_path());
        fs::copy(exercise, copy, fs::copy_options::recursive);
        const fs::path source(GRADER_SOURCE_DIR);
        fs::create_directory_symlink(source / "reference", root / "reference");
        fs::create_directory_symlink(source / "student", root / "student");
        const std::string yaml = read_text(copy / "exercise.yaml");
        const std::string limit = "compile_seconds: 30";
        REQUIRE(contains(yaml, limit));
        write_text(copy / "exercise.yaml",
                   replaced(yaml, limit, "compile_seconds: " + std::to_string(seconds)));
    }
    return copy;
}

// Every file under folder, path and content.
std::vector<std::pair<fs::path, std::string>> files_under(const fs::path& folder) {
    std::vector<std::pair<fs::path, std::string>> files;
    if (!fs::exists(folder)) {
        return files;
    }
    for (const auto& entry : fs::recursive_directory_iterator(folder)) {
        std::error_code not_a_file;
        if (entry.is_regular_file(not_a_file)) {
            files.emplace_back(entry.path(), read_text(entry.path()));
        }
    }
    return files;
}

// Every string of a JSON document, joined by newlines: what a platform shows of it.
void collect_strings(const nlohmann::json& value, std::string& out) {
    if (value.is_string()) {
        out += value.get<std::string>() + "\n";
    } else if (value.is_structured()) {
        for (const auto& item : value) {
            collect_strings(item, out);
        }
    }
}

// The text a reader of the format sees: JSON strings decoded, XML entities and markdown escapes
// undone.
std::string readable(const std::string& format, const std::string& content) {
    if (format == "text") {
        return unwrapped(content);
    }
    if (format == "json" || format == "gradescope" || format == "prairielearn") {
        const auto document = nlohmann::json::parse(content, nullptr, false);
        REQUIRE_MESSAGE(!document.is_discarded(), format << " is not JSON");
        std::string text;
        collect_strings(document, text);
        return text;
    }
    if (format == "junit") {
        std::string text = content;
        for (const auto& [entity, character] :
             std::vector<std::pair<std::string, std::string>>{{"&quot;", "\""},
                                                              {"&apos;", "'"},
                                                              {"&lt;", "<"},
                                                              {"&gt;", ">"},
                                                              {"&#10;", "\n"},
                                                              {"&#xA;", "\n"},
                                                              {"&amp;", "&"}}) {
            text = replaced(text, entity, character);
        }
        return text;
    }
    if (format == "markdown") {
        std::string text;
        for (std::size_t i = 0; i < content.size(); ++i) {
            if (content[i] == '\\' && i + 1 < content.size() &&
                std::ispunct(static_cast<unsigned char>(content[i + 1]))) {
                continue;
            }
            text += content[i];
        }
        return text;
    }
    return content;
}

std::string first_word(const std::string& text, std::size_t from = 0) {
    const std::size_t start = text.find_first_not_of(" #\n", from);
    if (start == std::string::npos) {
        return "";
    }
    const std::size_t end = text.find_first_of(" :\n", start);
    return text.substr(start, end - start);
}

std::string lowered(std::string text) {
    for (char& c : text) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return text;
}

// The verdict as the format states it.
std::string verdict_in(const std::string& format, const std::string& content) {
    if (format == "json") {
        return nlohmann::json::parse(content).value("verdict", "");
    }
    if (format == "gradescope" || format == "prairielearn") {
        return lowered(first_word(nlohmann::json::parse(content).value("output", "")));
    }
    if (format == "junit") {
        const std::string property = "<property name=\"verdict\" value=\"";
        const std::size_t at = content.find(property);
        return at == std::string::npos
                   ? ""
                   : content.substr(at + property.size(),
                                    content.find('"', at + property.size()) - at - property.size());
    }
    return lowered(first_word(content));  // text: "FAIL  5/15 ..."; markdown: "## FAIL — ..."
}

struct FormatRun {
    std::string format;
    GraderRun run;
    std::string report;  // the --output file as written
    fs::path tmp;        // the TMPDIR it was given
};

// Runs `jobs` two at a time (the grader's own processes are single-threaded, mostly).
void run_two_at_a_time(std::vector<std::function<void()>> jobs) {
    std::atomic<std::size_t> next{0};
    const auto work = [&] {
        for (std::size_t i = next++; i < jobs.size(); i = next++) {
            jobs[i]();
        }
    };
    std::thread other(work);
    work();
    other.join();
}

long peak_child_memory_mb() {
    rusage usage{};
    ::getrusage(RUSAGE_CHILDREN, &usage);
    return usage.ru_maxrss / 1024;
}

// Grades every hostile fixture whose `awaits:` is `waiting_for` ("" for none) on one backend,
// in every format, and asserts what its expected.yaml says there.
void grade_hostile(const std::string& backend, const std::string& waiting_for) {
    const char* overrides = backend == "sim" ? "sim" : "no_gpu";
    int graded = 0;
    for (const auto& fixture : fixture_folders("hostile")) {
        const std::string name = fixture.filename().string();
        const YAML::Node expected = YAML::LoadFile((fixture / "expected.yaml").string());
        if (awaits(expected) != waiting_for) {
            continue;
        }
        CAPTURE(name);
        CAPTURE(backend);
        ++graded;
        const TokenFile token;
        const fs::path where = scratch_root() / (backend + "-" + name);
        const fs::path folder = prepare(name, expected, token, where / "class");
        const auto before = files_under(where / "class");
        fs::path exercise = exercise_dir(expected);
        if (expected["compile_seconds"]) {
            exercise = exercise_with_compile_limit(exercise, expected["compile_seconds"].as<int>());
        }

        std::vector<FormatRun> runs;
        for (const char* format : kFormats) {
            runs.push_back({format, {}, {}, where / ("tmp-" + std::string(format))});
        }
        std::vector<std::function<void()>> jobs;
        for (FormatRun& each : runs) {
            jobs.push_back([&each, &where, &folder, &exercise, &backend] {
                fs::create_directories(each.tmp);
                const fs::path output = where / ("report." + each.format);
                std::vector<std::string> environment = {"TMPDIR=" + each.tmp.string()};
                if (backend == "cuda") {
                    environment.insert(environment.end(), kNoGpu.begin(), kNoGpu.end());
                }
                each.run = run_grader(
                    {"grade", folder.string(), "--exercise", exercise.string(), "--backend",
                     backend, "--format", each.format, "--output", output.string(), "--seed",
                     "20261202", "--timeout", "20", "--quiet"},
                    each.format == "json" ? output : fs::path(), environment);
                each.report = read_text(output);
            });
        }
        run_two_at_a_time(jobs);

        const FormatRun& json = runs.front();
        {
            INFO("json: " << json.run.output);
            check_grade(json.run, expected, overrides);
        }
        const std::string verdict = field(expected, overrides, "verdict").as<std::string>();
        for (const FormatRun& each : runs) {
            CAPTURE(each.format);
            INFO(each.run.output);
            REQUIRE_MESSAGE(!each.report.empty(), "no " << each.format << " report was written");
            // Every format agrees with the JSON grade and with expected.yaml.
            CHECK(each.run.exit_code == json.run.exit_code);
            CHECK(verdict_in(each.format, each.report) == json.run.report.value("verdict", "?"));
            if (verdict != "any") {
                CHECK(verdict_in(each.format, each.report) == verdict);
            }
            if (const YAML::Node most = expected["report_max_bytes"]) {
                CHECK_MESSAGE(
                    each.report.size() <= most.as<std::size_t>(),
                    "the " << each.format << " report is " << each.report.size() << " bytes");
            }
            const std::string text = readable(each.format, each.report);
            for (const auto& part : strings(field(expected, overrides, "message_contains"))) {
                CHECK_MESSAGE(contains(text, part),
                              "'" << part << "' not in the " << each.format << " report");
            }
            // Nothing of the host file, and no raw escape, in what the grader printed or wrote.
            for (const std::string& seen : {each.run.output, each.report, text}) {
                CHECK_FALSE(contains(seen, token.token));
                CHECK_FALSE(contains(seen, "root:x:0:0"));
                CHECK_FALSE(contains(seen, "\x1b"));
            }
            for (const auto& entry : files_under(each.tmp)) {
                const auto& file = entry.first;
                const auto& content = entry.second;
                CAPTURE(file.string());
                CHECK_FALSE(contains(content, token.token));
            }
        }
        // The grader wrote nothing into the class folder (what was there is as it was).
        const auto after = files_under(where / "class");
        CHECK(after.size() == before.size());
        for (const auto& entry : after) {
            const auto& file = entry.first;
            const auto& content = entry.second;
            if (std::none_of(before.begin(), before.end(),
                             [&](const auto& old) { return old.first == file; })) {
                CAPTURE(file.string());
                CHECK_FALSE(contains(content, token.token));
            }
        }
        if (const YAML::Node limit = expected["max_memory_mb"]) {
            // The largest process any grade so far has had: this fixture's, unless an earlier
            // one grew larger, which would fail here too.
            CHECK(peak_child_memory_mb() <= limit.as<long>());
        }
        fs::remove_all(where);
    }
    CHECK(graded > 0);
}

}  // namespace

TEST_CASE(
    "each hostile submission gets its verdict, exit status and reason on the simulator, in every "
    "format, and no host file's text comes back") {
    grade_hostile("sim", "");
}

TEST_CASE(
    "through --backend cuda without a GPU, each hostile submission refused before a GPU is needed "
    "is the same student failure, in every format; the rest are ungradable") {
    grade_hostile("cuda", "");
}

TEST_CASE("hostile submissions awaiting the simulator's advancing clocks get their verdicts") {
    grade_hostile("sim", "advancing_clocks");
    grade_hostile("cuda", "advancing_clocks");
}

TEST_CASE(
    "hostile submissions awaiting the simulator's refusal of oversized local or shared memory get "
    "their verdicts") {
    grade_hostile("sim", "oversized_memory_refusal");
    grade_hostile("cuda", "oversized_memory_refusal");
}

// ---------------------------------------------------------------------------------------------
// A class folder whose student folder is named to forge a verdict line.

namespace {

// The lines of a text, each as it would show in a terminal or an editor.
std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        lines.push_back(line);
    }
    return lines;
}

// What the evil folder's name puts on a line of its own: a log line of the batch's own form.
const std::string kForged = "graded mallory: pass";

// True where some line of text starts (after spaces or quotes) with the forged line or an escape.
bool forges_a_line(const std::string& text) {
    for (const auto& line : lines_of(text)) {
        const std::size_t start = line.find_first_not_of(" \t\"");
        if (start != std::string::npos && (line.compare(start, kForged.size(), kForged) == 0 ||
                                           line.compare(start, 1, "\x1b") == 0)) {
            return true;
        }
    }
    return false;
}

}  // namespace

TEST_CASE(
    "a student folder named with a newline and an escape forges no line in the batch log, the "
    "gradebook, the summary or any report") {
    const fs::path root = scratch_root() / "batch-forged-name";
    const fs::path class_dir = root / "class";
    fs::create_directories(class_dir);
    const fs::path correct = fs::path(GRADER_FIXTURES_DIR) / "submissions" / "correct";
    // A folder name cannot hold a slash, so the forged line is the log's own "graded NAME: pass".
    const std::string evil = "evil\n\x1b[32m" + kForged + "\x1b[0m";
    for (const std::string& student : {std::string("alice"), evil}) {
        fs::copy(correct, class_dir / student, fs::copy_options::recursive);
        fs::remove(class_dir / student / "expected.yaml");
    }
    // The evil student's folder also holds a kernel that fails, so its verdict differs from the
    // one its name claims.
    write_text(
        class_dir / evil / "probe.cu",
        read_text(fs::path(GRADER_FIXTURES_DIR) / "submissions" / "compile_error" / "probe.cu"));
    const fs::path output = root / "out";
    const GraderRun run = run_grader({"batch", class_dir.string(), "--output", output.string(),
                                      "--jobs", "1", "--backend", "sim"});
    INFO(run.output);
    CHECK(run.exit_code == 0);
    CHECK_FALSE(contains(run.output, "\x1b"));
    CHECK_FALSE(forges_a_line(run.output));
    std::size_t graded_lines = 0;
    for (const auto& line : lines_of(run.output)) {
        graded_lines += line.rfind("graded ", 0) == 0 ? 1 : 0;
    }
    CHECK(graded_lines == 2);

    // The gradebook: one physical line per row, so a script reading it line by line sees two
    // students, and neither is a forged pass.
    const std::string gradebook = read_text(output / "gradebook.csv");
    INFO(gradebook);
    CHECK(lines_of(gradebook).size() == 3);
    CHECK_FALSE(forges_a_line(gradebook));

    const auto summary = nlohmann::json::parse(read_text(output / "summary.json"), nullptr, false);
    REQUIRE_FALSE(summary.is_discarded());
    CHECK(summary["submissions"] == 2);

    // Every file the batch wrote, raw and as its reader decodes it.
    int gradescope_files = 0;
    for (const auto& entry : files_under(output)) {
        const auto& file = entry.first;
        const auto& content = entry.second;
        CAPTURE(file.string());
        CHECK_FALSE(contains(file.string(), "\x1b"));
        CHECK_FALSE(contains(file.string(), "\n"));
        CHECK_FALSE(contains(content, "\x1b"));
        const std::string extension = file.extension().string();
        std::string decoded = content;
        if (extension == ".json") {
            const auto document = nlohmann::json::parse(content, nullptr, false);
            REQUIRE_FALSE(document.is_discarded());
            decoded.clear();
            collect_strings(document, decoded);
            gradescope_files += file.filename() == "gradescope-results.json" ? 1 : 0;
        } else if (extension == ".xml") {
            decoded = readable("junit", content);
        }
        CHECK_FALSE(contains(decoded, "\x1b"));
        CHECK_FALSE(forges_a_line(decoded));
    }
    CHECK(gradescope_files == 2);
}
