// `grader batch` as an instructor meets it, on a machine without a GPU (every grade is then
// 'ungradable', and the batch mechanics are the same): a class with hostile submissions runs to
// the end, a killed batch resumes without grading twice, --only regrades one student, an old
// output is not overwritten by accident, and SIGTERM leaves the class outputs behind.

#include <doctest/doctest.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "batch/batch.hpp"
#include "batch/device_servers.hpp"
#include "exercise/exercise.hpp"
#include "grader_run.hpp"
#include "model/measurements.hpp"
#include "model/report.hpp"
#include "report/class_outputs.hpp"
#include "test_paths.hpp"

using namespace grader::testing;

namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(GRADER_FIXTURES_DIR);

const fs::path& scratch_root() {
    return grader::testing::scratch_root("batch");
}

// A fresh folder for one test.
fs::path scratch(const std::string& name) {
    const auto dir = scratch_root() / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

void copy_fixture(const std::string& fixture, const fs::path& target) {
    fs::copy(kFixtures / "submissions" / fixture, target, fs::copy_options::recursive);
    fs::remove(target / "expected.yaml");  // not part of what a student hands in
}

// RFC 4180 rows (quoted fields may hold commas, quotes and line breaks).
std::vector<std::vector<std::string>> parse_csv(const std::string& file) {
    const std::string bom = "\xEF\xBB\xBF";  // read as a spreadsheet reads it
    const std::string text = file.rfind(bom, 0) == 0 ? file.substr(bom.size()) : file;
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> row;
    std::string field;
    bool quoted = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
                field += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                field += c;
            }
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            row.push_back(field);
            field.clear();
        } else if (c == '\r') {
            continue;
        } else if (c == '\n') {
            row.push_back(field);
            rows.push_back(row);
            row.clear();
            field.clear();
        } else {
            field += c;
        }
    }
    if (!field.empty() || !row.empty()) {
        row.push_back(field);
        rows.push_back(row);
    }
    return rows;
}

// The gradebook's "folder" column, one entry per row.
std::vector<std::string> gradebook_folders(const fs::path& output) {
    const auto rows = parse_csv(read_text(output / "gradebook.csv"));
    REQUIRE(!rows.empty());
    const auto& header = rows.front();
    const auto column = std::find(header.begin(), header.end(), "folder");
    REQUIRE(column != header.end());
    const auto index = static_cast<std::size_t>(column - header.begin());
    std::vector<std::string> folders;
    for (std::size_t i = 1; i < rows.size(); ++i) {
        REQUIRE(rows[i].size() == header.size());
        folders.push_back(rows[i][index]);
    }
    return folders;
}

nlohmann::json read_json(const fs::path& file) {
    return nlohmann::json::parse(read_text(file), nullptr, false);
}

// The report.json files present, by student folder, with the inode and mtime that say whether a
// later run wrote them again.
struct FileStamp {
    ino_t inode = 0;
    std::int64_t mtime_ns = 0;
    bool operator==(const FileStamp& other) const {
        return inode == other.inode && mtime_ns == other.mtime_ns;
    }
};

std::map<std::string, FileStamp> report_stamps(const fs::path& output) {
    std::map<std::string, FileStamp> stamps;
    if (!fs::exists(output)) {
        return stamps;
    }
    for (const auto& entry : fs::directory_iterator(output)) {
        const auto file = entry.path() / "report.json";
        struct stat info {};
        if (entry.is_directory() && ::stat(file.c_str(), &info) == 0) {
            stamps[entry.path().filename().string()] = {
                info.st_ino,
                static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec};
        }
    }
    return stamps;
}

// Starts `grader <args...>` with its output into log, and returns its pid.
pid_t start_grader(const std::vector<std::string>& args, const fs::path& log) {
    std::vector<std::string> argv = {GRADER_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> pointers;
    for (auto& arg : argv) {
        pointers.push_back(arg.data());
    }
    pointers.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(fd, STDOUT_FILENO);
        ::dup2(fd, STDERR_FILENO);
        ::execv(pointers[0], pointers.data());
        ::_exit(127);
    }
    return pid;
}

// Waits until some OUTPUT/<student>/report.json exists; false after the timeout or if the
// grader ended first.
bool wait_for_first_report(const fs::path& output, pid_t pid) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
        if (!report_stamps(output).empty()) {
            return true;
        }
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

// The exit status, or 128 + the signal that ended it.
int wait_exit(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The answers of a copied fixture made this student's own: their id and a sentence of their
// own, as in a real class (copies of one sentence are flagged, and their reports written again).
void make_answers_own(const fs::path& folder, const std::string& who) {
    std::istringstream in(read_text(folder / "submission.yaml"));
    std::string out;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("student_id:", 0) == 0) {
            line = "student_id: \"" + who + "\"";
        } else if (line.rfind("sentence:", 0) == 0) {
            line = "sentence: \"" + who + " says stride 3 shares no factor with 32.\"";
        }
        out += line + "\n";
    }
    write_text(folder / "submission.yaml", out);
}

// Copies of one fixture under several student names: enough work that a batch is still running
// when the test stops it.
// What a batch with --backend cuda exits with on this machine: without a GPU every grade is
// ungradable, the machine's fault, and the batch says so with 3; with one, every grade has a
// verdict.
int cuda_batch_exit() {
    return grader::visible_devices().empty() ? 3 : 0;
}

fs::path make_plain_class(const std::string& name, int students) {
    const auto dir = scratch(name) / "class";
    fs::create_directories(dir);
    for (int i = 0; i < students; ++i) {
        const std::string student = "student" + std::to_string(10 + i);
        copy_fixture(i % 2 == 0 ? "correct" : "compile_error", dir / student);
        make_answers_own(dir / student, student);
    }
    return dir;
}

// Holds a file's flock, as a batch holds its output folder's, until destroyed.
class HeldLock {
public:
    explicit HeldLock(const fs::path& file) {
        fs::create_directories(file.parent_path());
        fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        locked_ = fd_ >= 0 && ::flock(fd_, LOCK_EX | LOCK_NB) == 0;
    }
    ~HeldLock() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    HeldLock(const HeldLock&) = delete;
    HeldLock& operator=(const HeldLock&) = delete;
    bool locked() const { return locked_; }

private:
    int fd_ = -1;
    bool locked_ = false;
};

const char* const kEveryFile[] = {
    "report.txt", "report.md",  "gradescope-results.json", "prairielearn-results.json",
    "junit.xml",  "report.json"};

}  // namespace

TEST_CASE("output folder names keep a readable name and make an odd one safe") {
    CHECK(grader::student_folder_name("alice") == "alice");
    CHECK(grader::student_folder_name("Ana María, group 2") == "Ana María, group 2");

    const std::string odd = std::string("bad\x01name\xff");
    const std::string safe = grader::student_folder_name(odd);
    CHECK(safe != odd);
    CHECK(safe.rfind("bad_name_-", 0) == 0);
    CHECK(safe.find('/') == std::string::npos);
    CHECK(safe == grader::student_folder_name(odd));  // the same folder again when resuming
    CHECK(safe != grader::student_folder_name(std::string("bad\x02name\xff")));
    CHECK(grader::student_folder_name("..") != "..");
    CHECK(grader::student_folder_name("..").find('/') == std::string::npos);
}

TEST_CASE("the GPUs are counted from CUDA_VISIBLE_DEVICES without touching CUDA") {
    const char* saved = std::getenv("CUDA_VISIBLE_DEVICES");
    const std::string saved_value = saved ? saved : "";
    ::setenv("CUDA_VISIBLE_DEVICES", "3,5", 1);
    CHECK(grader::visible_devices() == std::vector<int>{0, 1});
    ::setenv("CUDA_VISIBLE_DEVICES", "GPU-1f2e,GPU-77aa,GPU-0000", 1);
    CHECK(grader::visible_devices().size() == 3);
    ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
    CHECK(grader::visible_devices().empty());
    ::setenv("CUDA_VISIBLE_DEVICES", "-1", 1);
    CHECK(grader::visible_devices().empty());
    if (saved) {
        ::setenv("CUDA_VISIBLE_DEVICES", saved_value.c_str(), 1);
    } else {
        ::unsetenv("CUDA_VISIBLE_DEVICES");
    }
}

TEST_CASE("a GPU's device server that cannot start is given up after three starts, and says why") {
    // A stand-in for `grader __device-server` that fails as one does where the GPU will not open:
    // a line on its standard error, then exit status 1, before it ever listens.
    const fs::path dir = scratch("server_cannot_start");
    const fs::path fake = dir / "fake-grader";
    {
        std::ofstream script(fake);
        script << "#!/bin/sh\necho started >> \"$(dirname \"$0\")/starts\"\n"
               << "echo 'grader: CUDA_ERROR_NOT_INITIALIZED (initialization error)' >&2\n"
               << "exit 1\n";
    }
    fs::permissions(fake, fs::perms::owner_all);
    grader::DeviceServers servers(fake,
                                  fs::path(GRADER_SOURCE_DIR) / "exercises/day15-bank-conflicts");
    // The grades then open the GPU themselves: no socket to go through.
    CHECK(servers.socket_for(0).empty());
    const std::vector<std::string> lines = servers.accounts();
    REQUIRE(lines.size() == 1);
    CHECK(lines[0] ==
          "GPU 0's device server could not start (exit status 1: grader: "
          "CUDA_ERROR_NOT_INITIALIZED (initialization error)): each grade made a context of its "
          "own");
    std::ifstream starts(dir / "starts");
    std::string all((std::istreambuf_iterator<char>(starts)), std::istreambuf_iterator<char>());
    CHECK(all == "started\nstarted\nstarted\n");
}

TEST_CASE("a submission zipped one folder down is graded from that folder, as on Gradescope") {
    const auto dir = scratch("nested") / "class";
    fs::remove_all(dir);
    fs::create_directories(dir / "zipped" / "day15");
    write_text(dir / "zipped" / "day15" / "probe.cu", "// the student's kernel\n");
    write_text(dir / "zipped" / "day15" / "submission.yaml", "student_id: \"z\"\n");
    fs::create_directories(dir / "flat");
    write_text(dir / "flat" / "probe.cu", "// at the top\n");
    fs::create_directories(dir / "flat" / "notes");
    write_text(dir / "flat" / "notes" / "probe.cu", "// not this one\n");
    // Two inner folders with files: which one is meant is not clear, so neither is taken.
    fs::create_directories(dir / "two" / "a");
    fs::create_directories(dir / "two" / "b");
    write_text(dir / "two" / "a" / "probe.cu", "\n");
    write_text(dir / "two" / "b" / "probe.cu", "\n");
    // A link to a folder of files is not followed.
    const auto outside = scratch("nested-outside");
    fs::create_directories(outside);
    write_text(outside / "probe.cu", "\n");
    fs::create_directories(dir / "linked");
    fs::create_directory_symlink(outside, dir / "linked" / "inner");
    const auto found = grader::find_submissions(dir);
    REQUIRE(found.submissions.size() == 4);
    std::map<std::string, fs::path> graded;
    for (const auto& submission : found.submissions) {
        graded[submission.student] = submission.directory;
    }
    CHECK(graded["zipped"] == dir / "zipped" / "day15");
    CHECK(graded["flat"] == dir / "flat");
    CHECK(graded["two"] == dir / "two");
    CHECK(graded["linked"] == dir / "linked");
}

TEST_CASE(
    "a class folder's submissions are its sub-folders; its files and hidden entries are listed "
    "as skipped, with why") {
    const auto dir = scratch("find") / "class";
    fs::create_directories(dir / "bob");
    fs::create_directories(dir / "alice");
    fs::create_directories(dir / ".git");
    write_text(dir / "roster.csv", "alice,bob\n");
    // Links, whatever they name: nothing of the target (even whether it exists) may show.
    const auto outside = scratch("find-outside");
    fs::create_directories(outside);
    fs::create_symlink(dir / "nowhere", dir / "dangling");
    fs::create_symlink(outside, dir / "link_to_folder");
    fs::create_symlink(dir / "roster.csv", dir / "link_to_file");
    fs::create_directory_symlink(dir / "alice", dir / "link_to_alice");
    const auto found = grader::find_submissions(dir);
    REQUIRE(found.submissions.size() == 2);
    CHECK(found.submissions[0].student == "alice");
    CHECK(found.submissions[1].student == "bob");
    REQUIRE(found.skipped.size() == 6);
    CHECK(found.skipped[0].name == ".git");
    CHECK(found.skipped[0].reason == grader::kSystemLeftoverReason);
    const std::string link_reason =
        "a symbolic link, not followed: a submission is a folder of its own";
    CHECK(found.skipped[1].name == "dangling");
    CHECK(found.skipped[1].reason == link_reason);
    CHECK(found.skipped[2].name == "link_to_alice");
    CHECK(found.skipped[2].reason == link_reason);
    CHECK(found.skipped[3].name == "link_to_file");
    CHECK(found.skipped[3].reason == link_reason);
    CHECK(found.skipped[4].name == "link_to_folder");
    CHECK(found.skipped[4].reason == link_reason);
    CHECK(found.skipped[5].name == "roster.csv");
    CHECK(found.skipped[5].reason == "a file, not a submission folder");
    CHECK_THROWS_AS(grader::find_submissions(dir / "no-such-class"), grader::BatchError);
}

TEST_CASE("a student folder named like a class output gets a name of its own") {
    const auto dir = scratch("reserved") / "class";
    for (const char* name : {"gradebook.csv", "summary.json", "class-report.html", "results"}) {
        fs::create_directories(dir / name);
    }
    const auto found = grader::find_submissions(dir, {"results"});
    REQUIRE(found.submissions.size() == 4);
    std::set<std::string> taken;
    for (const auto& submission : found.submissions) {
        CAPTURE(submission.folder_name);
        CHECK(grader::class_output_names().count(submission.student) == 0);
        CHECK(submission.student != "results");
        CHECK(submission.student.rfind(submission.folder_name + "-", 0) == 0);
        taken.insert(submission.student);
    }
    CHECK(taken.size() == 4);
}

TEST_CASE("a compile is unconfined where its confinement says so, not where it says nothing") {
    grader::Environment environment;
    CHECK_FALSE(grader::compile_unconfined(environment));
    environment.confinement = "Landlock ABI 7: the compiler could open no file";
    CHECK_FALSE(grader::compile_unconfined(environment));
    // An empty mount namespace alone still keeps every host file from the compile.
    environment.confinement =
        "an empty mount namespace: the student's compile could see no file of the host (no "
        "Landlock: this kernel offers no Landlock (Linux 5.13 or later has it))";
    CHECK_FALSE(grader::compile_unconfined(environment));
    environment.confinement =
        "no confinement: this kernel offers neither Landlock nor user namespaces, so the "
        "student's compile relied on the include vetting alone (Landlock: ...)";
    CHECK(grader::compile_unconfined(environment));
}

namespace {

// What the library told its caller, in order.
class RecordingProgress : public grader::BatchProgress {
public:
    void batch_started(const grader::BatchStatus& status) override {
        events.push_back("start " + std::to_string(status.total));
    }
    void submission_started(const std::string& student, const grader::BatchStatus&) override {
        events.push_back("grading " + student);
    }
    void submission_finished(const grader::GradedSubmission& graded,
                             const grader::BatchStatus& status) override {
        events.push_back("graded " + graded.student);
        finished.push_back(graded);
        last = status;
    }
    std::vector<std::string> events;
    std::vector<grader::GradedSubmission> finished;
    grader::BatchStatus last;
};

}  // namespace

TEST_CASE(
    "a submission the harness cannot grade is recorded as ungradable, and the batch goes on") {
    const auto root = scratch("harness-error");
    const auto dir = root / "class";
    fs::create_directories(dir);
    copy_fixture("correct", dir / "alice");
    copy_fixture("compile_error", dir / "bob");
    const grader::Exercise exercise =
        grader::load_exercise(fs::path(GRADER_SOURCE_DIR) / "exercises" / "day15-bank-conflicts");

    grader::BatchOptions options;
    options.submissions_dir = dir;
    options.output_dir = root / "out";
    options.worker_executable = root / "no-such-grader";  // every worker fails to start
    options.jobs = 2;
    RecordingProgress progress;
    const grader::BatchResult result = grader::run_batch(exercise, options, progress);

    CHECK(!result.interrupted);
    CHECK(result.harness_errors == 2);
    CHECK(result.status.done == 2);
    CHECK(result.status.ungradable == 2);
    REQUIRE(result.entries.size() == 2);
    CHECK(result.entries[0].student_folder == "alice");
    CHECK(result.entries[1].student_folder == "bob");
    for (const auto& entry : result.entries) {
        CAPTURE(entry.student_folder);
        CHECK(entry.report.verdict == grader::Verdict::ungradable);
        REQUIRE(entry.report.interruption);
        CHECK(entry.report.interruption->message.find("could not start the grader's worker") !=
              std::string::npos);
        CHECK(fs::exists(options.output_dir / entry.student_folder / "report.txt"));
    }
    REQUIRE(progress.finished.size() == 2);
    CHECK(progress.finished[0].harness_error);
    CHECK(progress.events.front() == "start 2");
    CHECK(progress.last.in_flight.empty());
    CHECK(gradebook_folders(options.output_dir) == std::vector<std::string>{"alice", "bob"});
}

namespace {

// The hostile class: fixtures that fail every way, a 20 MB source, Latin-1 answers and folder
// name, an empty folder, a name with punctuation, entries that are no submission, and a link to a
// folder outside the class whose source carries `token`.
void make_hostile_class(const fs::path& root, const std::string& latin1_name,
                        const std::string& token) {
    const auto dir = root / "class";
    fs::create_directories(dir);
    for (const char* fixture :
         {"correct", "compile_error", "forbidden_include", "missing_probe", "malformed_yaml"}) {
        copy_fixture(fixture, dir / fixture);
    }
    // 20 MB of probe.cu: refused by its size, not read into memory.
    copy_fixture("correct", dir / "huge_source");
    {
        std::ofstream huge(dir / "huge_source" / "probe.cu", std::ios::app);
        const std::string line(99, '/');
        for (int i = 0; i < 200000; ++i) {
            huge << line << '\n';
        }
    }
    REQUIRE(fs::file_size(dir / "huge_source" / "probe.cu") > 20'000'000);
    copy_fixture("correct", dir / "latin1_answers");
    {
        // The answers as an editor set to Latin-1 saves them: "José" with a lone 0xE9 byte.
        std::string answers = read_text(dir / "latin1_answers" / "submission.yaml");
        const auto id = answers.find("fixture-correct");
        REQUIRE(id != std::string::npos);
        answers.replace(id, 15, "Jos\xe9");
        write_text(dir / "latin1_answers" / "submission.yaml", answers);
    }
    fs::create_directories(dir / "empty_folder");
    write_text(dir / "empty_folder" / "README.txt", "I will hand it in tomorrow\n");
    copy_fixture("correct", dir / "Doe, Jane (late)");
    // A Latin-1 folder name: the output folder gets a safe name that still says whose it is.
    copy_fixture("correct", dir / latin1_name);
    // Zipped on a Mac: the files one folder down, beside the zip's __MACOSX with their "._" twins.
    fs::create_directories(dir / "mac_zip");
    copy_fixture("correct", dir / "mac_zip" / "day15");
    fs::create_directories(dir / "mac_zip" / "__MACOSX" / "day15");
    write_text(dir / "mac_zip" / "__MACOSX" / "day15" / "._probe.cu", "\x00\x05\x16\x07");
    write_text(dir / "mac_zip" / "__MACOSX" / "._day15", "\x00\x05\x16\x07");
    // Not submissions: what the system and a Mac's zip of the whole class leave.
    fs::create_directories(dir / ".hidden");
    copy_fixture("correct", dir / ".hidden" / "x");
    fs::create_directories(dir / "__MACOSX" / "correct");
    write_text(dir / "__MACOSX" / "._correct", "\x00\x05\x16\x07");
    write_text(dir / ".DS_Store", "Bud1");
    write_text(dir / "roster.csv", "name\n");
    // A link to a folder outside the class whose files carry a token: not graded, never read.
    const auto elsewhere = root / "elsewhere";
    copy_fixture("correct", elsewhere);
    write_text(elsewhere / "probe.cu", "// " + token + "\n" + read_text(elsewhere / "probe.cu"));
    fs::create_directory_symlink(elsewhere, dir / "linked");
}

}  // namespace

TEST_CASE("a class with hostile submissions is graded to the end, one row and every file each") {
    const auto root = scratch("class");
    const auto dir = root / "class";
    const std::string latin1_name = "Jos\xe9";
    const std::string token = "LINKED-FOLDER-TOKEN-5b1e";
    make_hostile_class(root, latin1_name, token);
    // A Latin-1 folder name: the output folder gets a safe name that still says whose it is.
    const std::string latin1_folder = grader::student_folder_name(latin1_name);
    CHECK(latin1_folder.rfind("Jos_-", 0) == 0);

    const std::set<std::string> expected = {"correct",        "compile_error",  "forbidden_include",
                                            "missing_probe",  "malformed_yaml", "huge_source",
                                            "latin1_answers", "empty_folder",   "Doe, Jane (late)",
                                            latin1_folder,    "mac_zip"};
    const auto output = root / "out";
    const GraderRun run =
        run_grader({"batch", dir.string(), "--output", output.string(), "--jobs", "2"});
    INFO(run.output);
    CHECK(run.exit_code == 0);

    // Not a terminal: one log line per graded submission.
    std::size_t log_lines = 0;
    std::istringstream lines(run.output);
    for (std::string line; std::getline(lines, line);) {
        log_lines += line.rfind("graded ", 0) == 0 ? 1 : 0;
    }
    CHECK(log_lines == expected.size());

    // The gradebook files each grade under the folder as the class holds it; an odd name shows
    // its bytes, never another student's name.
    std::set<std::string> keys;
    for (const auto& student : expected) {
        keys.insert(student == latin1_folder ? grader::submission_key(latin1_name) : student);
    }
    CHECK(grader::submission_key(latin1_name).find("[4a6f73e9]") != std::string::npos);
    const auto folders = gradebook_folders(output);
    CHECK(folders.size() == expected.size());
    CHECK(std::set<std::string>(folders.begin(), folders.end()) == keys);

    for (const auto& student : expected) {
        CAPTURE(student);
        for (const char* file : kEveryFile) {
            CAPTURE(file);
            REQUIRE(fs::exists(output / student / file));
            CHECK(fs::file_size(output / student / file) > 0);
        }
        for (const char* file :
             {"report.json", "gradescope-results.json", "prairielearn-results.json"}) {
            CAPTURE(file);
            CHECK(!read_json(output / student / file).is_discarded());
        }
    }
    // Three copies of one submission, whatever their folder is called, get one verdict.
    const auto verdict_of = [&](const std::string& student) {
        return read_json(output / student / "report.json")["verdict"].get<std::string>();
    };
    CHECK(verdict_of("Doe, Jane (late)") == verdict_of("correct"));
    CHECK(verdict_of("mac_zip") == verdict_of("correct"));
    CHECK(verdict_of(latin1_folder) == verdict_of("correct"));
    CHECK(verdict_of("compile_error") != "pass");
    CHECK(verdict_of("empty_folder") != "pass");

    const auto compile_text = [&](const std::string& student) {
        const auto report = read_json(output / student / "report.json");
        const auto* check = find_check(report, "compile_abi");
        REQUIRE(check);
        CHECK((*check)["passed"] == false);
        return check_text(*check);
    };
    CHECK(compile_text("compile_error").find("probe.cu:14:") != std::string::npos);
    const std::string forbidden = compile_text("forbidden_include");
    CHECK(forbidden.find("probe.cu:1:") != std::string::npos);
    CHECK(forbidden.find("not allowed") != std::string::npos);
    CHECK(read_text(output / "forbidden_include" / "report.json").find("root:x:") ==
          std::string::npos);
    CHECK(compile_text("huge_source").find("more than the limit of 262144") != std::string::npos);
    CHECK(compile_text("missing_probe").find("probe.cu") != std::string::npos);
    CHECK(compile_text("empty_folder").find("probe.cu") != std::string::npos);

    const auto answers_check = [&](const std::string& student) {
        const auto report = read_json(output / student / "report.json");
        const auto* check = find_check(report, "submission_file");
        REQUIRE(check);
        CHECK((*check)["passed"] == false);
        return check_text(*check);
    };
    CHECK(answers_check("malformed_yaml").find("submission.yaml:5:") != std::string::npos);
    CHECK(answers_check("latin1_answers").find("UTF-8") != std::string::npos);

    const auto summary = read_json(output / "summary.json");
    REQUIRE(summary.is_object());
    CHECK(summary["submissions"] == expected.size());
    CHECK(summary["run"]["counts"]["graded"] == expected.size());
    CHECK(summary["run"]["jobs"] == 2);
    // Without --backend: the GPU where there is one, else the simulator, for the whole class.
    CHECK(summary["run"]["backend"] == (grader::visible_devices().empty() ? "sim" : "cuda"));
    CHECK(summary["run"]["interrupted"] == false);
    CHECK(summary["run"].contains("submissions_per_minute"));
    const std::string page = read_text(output / "class-report.html");
    CHECK(page.find("href=\"Doe%2C%20Jane%20%28late%29/report.txt\"") != std::string::npos);

    // What was not graded is listed, with why: in the log and in the summary.
    // What a Mac's zip and the system leave is said once, on one line.
    CHECK(run.output.find("skipped '.DS_Store', '.hidden' and '__MACOSX' in the class folder: "
                          "left by a Mac's zip") != std::string::npos);
    CHECK(run.output.find("skipped '__MACOSX' in the class folder") == std::string::npos);
    CHECK(run.output.find("skipped 'roster.csv' in the class folder: a file") != std::string::npos);
    CHECK(run.output.find("skipped 'linked' in the class folder: a symbolic link, not followed") !=
          std::string::npos);
    // PrairieLearn's score upload, from a plain batch: a row per graded folder, as it is named
    // (no '__MACOSX'), each score a percentage.
    const auto scores = parse_csv(read_text(output / "prairielearn-scores.csv"));
    REQUIRE(scores.size() == expected.size() + 1);
    CHECK(scores[0] == std::vector<std::string>{"uid", "qid", "score_perc", "feedback"});
    std::set<std::string> uids;
    for (std::size_t i = 1; i < scores.size(); ++i) {
        uids.insert(scores[i][0]);
        CHECK(scores[i][1] == "day15-bank-conflicts");
    }
    CHECK(uids == keys);
    REQUIRE(summary["skipped"].size() == 5);
    CHECK(summary["skipped"][1]["name"] == ".hidden");
    CHECK(summary["skipped"][2]["name"] == "__MACOSX");
    CHECK(summary["skipped"][3]["name"] == "linked");
    CHECK(run.output.find(token) == std::string::npos);
    for (const auto& entry : fs::recursive_directory_iterator(output)) {
        if (entry.is_regular_file()) {
            CAPTURE(entry.path());
            CHECK(read_text(entry.path()).find(token) == std::string::npos);
        }
    }

    // The copies of one submission share a sentence and an id: the gradebook names the others,
    // and each copy's own report, written again once the class was in, says how many.
    const auto rows = parse_csv(read_text(output / "gradebook.csv"));
    const auto flags_column = static_cast<std::size_t>(
        std::find(rows[0].begin(), rows[0].end(), "flags") - rows[0].begin());
    REQUIRE(flags_column < rows[0].size());
    bool doe_flagged = false;
    for (const auto& row : rows) {
        if (row[0] == "Doe, Jane (late)") {
            const std::string& flags = row[flags_column];
            doe_flagged = flags.find("same student id as") != std::string::npos &&
                          flags.find("correct") != std::string::npos &&
                          flags.find("sentence same as") != std::string::npos;
        }
    }
    CHECK(doe_flagged);
    CHECK(read_text(output / "Doe, Jane (late)" / "report.txt")
              .find("set apart for your instructor's review: the same or nearly the same as") !=
          std::string::npos);
    CHECK(
        read_json(output / "Doe, Jane (late)" / "report.json")["sentence_review"]["same_as_others"]
            .get<int>() > 0);
    CHECK(summary["run"]["counts"]["reports_rewritten"].get<int>() > 0);
}

TEST_CASE("control characters from a student never reach the batch log or gradebook raw") {
    const auto root = scratch("controls");
    const auto dir = root / "class";
    fs::create_directories(dir);
    copy_fixture("correct", dir / "eve");
    // An #error text with terminal escapes, which NVRTC repeats in its log and the summary.
    write_text(dir / "eve" / "probe.cu", "#error \x1b]0;owned\x07\x1b[2J\x1b[1;32mPASS 13/13\n");
    std::string answers = read_text(dir / "eve" / "submission.yaml");
    const auto id = answers.find("fixture-correct");
    REQUIRE(id != std::string::npos);
    answers.replace(id, 15, "eve\\x1b[31m");  // a YAML escape: a real ESC in the id
    write_text(dir / "eve" / "submission.yaml", answers);
    copy_fixture("correct", dir / std::string("bad\x1b[2Jname"));

    const auto output = root / "out";
    // On the simulator the compile error is a failure, whose reason the log line carries.
    const GraderRun run = run_grader(
        {"batch", dir.string(), "--output", output.string(), "--jobs", "2", "--backend", "sim"});
    INFO(run.output);
    CHECK(run.exit_code == 0);
    CHECK(run.output.find("graded eve: fail") != std::string::npos);
    CHECK(run.output.find('\x1b') == std::string::npos);
    CHECK(run.output.find("\\x1b]0;owned\\x07") != std::string::npos);
    for (const char* file : {"gradebook.csv", "summary.json", "class-report.html"}) {
        CAPTURE(file);
        CHECK(read_text(output / file).find('\x1b') == std::string::npos);
    }
    for (const char* file : {"report.txt", "report.md", "junit.xml", "gradescope-results.json",
                             "prairielearn-results.json"}) {
        CAPTURE(file);
        CHECK(read_text(output / "eve" / file).find('\x1b') == std::string::npos);
    }
}

TEST_CASE("an output folder that is, or lies inside, the class folder is refused with exit 2") {
    const auto root = scratch("inside");
    const auto dir = root / "class";
    fs::create_directories(dir);
    copy_fixture("correct", dir / "alice");
    copy_fixture("correct", dir / "bob");
    // A report.json a student put in their own folder, which --resume would otherwise keep.
    write_text(dir / "alice" / "report.json", "{\"verdict\": \"pass\", \"score\": 13}\n");
    fs::create_directories(root / "elsewhere");
    fs::create_directory_symlink(root / "elsewhere", dir / "carol");

    for (const auto& output : {dir, dir / "reports", dir / "alice", dir / "bob" / "out"}) {
        CAPTURE(output);
        const GraderRun run =
            run_grader({"batch", dir.string(), "--output", output.string(), "--resume"});
        CHECK(run.exit_code == 2);
        CHECK((run.output.find("class folder") != std::string::npos ||
               run.output.find("submission folder") != std::string::npos));
    }
    CHECK(!fs::exists(dir / "gradebook.csv"));
    CHECK(!fs::exists(dir / "reports"));
    CHECK(read_text(dir / "alice" / "report.json").find("13") != std::string::npos);

    // carol is a link, not a submission (it is skipped, never followed): the folder it names is
    // outside the class like any other, and may hold the outputs.
    const auto outside = root / "elsewhere" / "out";
    const GraderRun run = run_grader({"batch", dir.string(), "--output", outside.string()});
    CHECK(run.exit_code == 0);
    CHECK(run.output.find("skipped 'carol' in the class folder: a symbolic link") !=
          std::string::npos);
    CHECK(gradebook_folders(outside).size() == 2);
}

TEST_CASE("an output folder that cannot be written is a usage error (exit 2), before any grade") {
    const auto root = scratch("unwritable-output");
    const auto dir = root / "class";
    fs::create_directories(dir);
    copy_fixture("correct", dir / "alice");
    write_text(root / "a-file", "not a folder\n");
    std::vector<fs::path> outputs = {root / "a-file" / "reports",            // under a file
                                     root / std::string(300, 'r') / "out"};  // a name too long
    if (::geteuid() != 0) {  // root may write into a folder of mode 0555
        fs::create_directories(root / "read-only");
        fs::permissions(root / "read-only", fs::perms::owner_read | fs::perms::owner_exec);
        outputs.push_back(root / "read-only");
    }
    for (const auto& output : outputs) {
        CAPTURE(output);
        const GraderRun run = run_grader({"batch", dir.string(), "--output", output.string()});
        CHECK(run.exit_code == 2);
        CHECK(run.output.find("cannot be written by this user") != std::string::npos);
        CHECK(run.output.find("internal error") == std::string::npos);
        CHECK(run.output.find("graded") == std::string::npos);
    }
}

TEST_CASE("a batch's outputs are the instructor's alone, and the group's with --group-readable") {
    const auto root = scratch("modes");
    const auto dir = root / "class";
    fs::create_directories(dir);
    for (const char* student : {"alice", "bob"}) {
        copy_fixture("compile_error", dir / student);
    }
    const mode_t umask_before = ::umask(0);  // the most open umask: the modes are the grader's
    for (const bool group : {false, true}) {
        CAPTURE(group);
        const auto output = root / (group ? "shared" : "private");
        std::vector<std::string> args = {"batch",     dir.string(), "--output", output.string(),
                                         "--backend", "sim",        "-q"};
        if (group) {
            args.push_back("--group-readable");
        }
        const GraderRun run = run_grader(args);
        INFO(run.output);
        CHECK(run.exit_code == 0);
        REQUIRE(fs::exists(output / "gradebook.csv"));
        std::map<std::string, unsigned> modes;
        const auto mode_of = [](const fs::path& path) {
            struct stat status {};
            REQUIRE(::lstat(path.c_str(), &status) == 0);
            return static_cast<unsigned>(status.st_mode & 07777);
        };
        modes["."] = mode_of(output);
        for (const auto& entry : fs::recursive_directory_iterator(output)) {
            modes[entry.path().lexically_relative(output).string()] = mode_of(entry.path());
        }
        CHECK(modes.size() > 12);
        for (const auto& entry : modes) {
            // A named copy: CAPTURE takes its argument into a lambda, which a structured binding
            // cannot be before C++20.
            const std::string& name = entry.first;
            const unsigned mode = entry.second;
            CAPTURE(name);
            const bool folder = fs::is_directory(output / name);
            // The batch's own lock is never anyone else's.
            const bool own = name.rfind(".locks", 0) == 0;
            CHECK(mode ==
                  (folder ? (group && !own ? 0750u : 0700u) : (group && !own ? 0640u : 0600u)));
        }
    }
    ::umask(umask_before);
}

TEST_CASE("a class folder inside the output folder keeps its name free of student reports") {
    const auto root = scratch("class-inside-output");
    fs::create_directories(root / "class" / "class");  // a student named like the class folder
    copy_fixture("correct", root / "class" / "alice");
    const GraderRun run = run_grader({"batch", (root / "class").string(), "--output", root.string(),
                                      "--quiet", "--backend", "cuda"});
    INFO(run.output);
    CHECK(run.exit_code == cuda_batch_exit());
    CHECK(!fs::exists(root / "class" / "report.json"));  // not written into the class folder
    const auto folders = gradebook_folders(root);
    REQUIRE(folders.size() == 2);
    CHECK(folders[0] == "alice");
    // The gradebook names the submission folder itself; its reports went to a folder of their own.
    CHECK(folders[1] == "class");
    bool reports_elsewhere = false;
    for (const auto& entry : fs::directory_iterator(root)) {
        const std::string name = entry.path().filename().string();
        reports_elsewhere |=
            name.rfind("class-", 0) == 0 && fs::exists(entry.path() / "report.json");
    }
    CHECK(reports_elsewhere);
}

TEST_CASE("two batches cannot write into one output folder at once") {
    const auto dir = make_plain_class("locked", 2);
    const auto output = dir.parent_path() / "out";
    const HeldLock other(output / ".locks" / "batch.lock");
    REQUIRE(other.locked());
    const GraderRun run =
        run_grader({"batch", dir.string(), "--output", output.string(), "--backend", "cuda"});
    CHECK(run.exit_code == 2);
    CHECK(run.output.find("another batch") != std::string::npos);
    CHECK(report_stamps(output).empty());
    CHECK(!fs::exists(output / "gradebook.csv"));
}

TEST_CASE(
    "class outputs and student folders never collide, even for a folder named gradebook.csv") {
    const auto root = scratch("collide");
    const auto dir = root / "class";
    fs::create_directories(dir);
    for (const char* name : {"gradebook.csv", "summary.json", "class-report.html"}) {
        copy_fixture("correct", dir / name);
        make_answers_own(dir / name, name);
    }
    const auto output = root / "out";
    GraderRun run = run_grader(
        {"batch", dir.string(), "--output", output.string(), "--quiet", "--backend", "cuda"});
    INFO(run.output);
    CHECK(run.exit_code == cuda_batch_exit());
    CHECK(fs::is_regular_file(output / "gradebook.csv"));
    CHECK(fs::is_regular_file(output / "summary.json"));
    CHECK(fs::is_regular_file(output / "class-report.html"));
    CHECK(gradebook_folders(output).size() == 3);
    CHECK(report_stamps(output).size() == 3);
    run = run_grader({"batch", dir.string(), "--output", output.string(), "--quiet", "--resume",
                      "--backend", "cuda"});
    CHECK(run.exit_code == cuda_batch_exit());
    CHECK(gradebook_folders(output).size() == 3);
}

TEST_CASE("a batch killed halfway resumes: reports kept, the rest graded, one row each") {
    const auto dir = make_plain_class("resume", 8);
    const auto output = dir.parent_path() / "out";
    const pid_t pid = start_grader(
        {"batch", dir.string(), "--output", output.string(), "--jobs", "2", "--backend", "cuda"},
        dir.parent_path() / "first.log");
    REQUIRE(pid > 0);
    const bool saw_report = wait_for_first_report(output, pid);
    ::kill(pid, SIGKILL);
    wait_exit(pid);
    REQUIRE(saw_report);
    const auto before = report_stamps(output);
    REQUIRE(!before.empty());
    std::map<std::string, nlohmann::json> kept_reports;
    for (const auto& entry : before) {
        kept_reports[entry.first] = read_json(output / entry.first / "report.json");
    }
    INFO("reports before the kill: " << before.size());
    CHECK(before.size() < 8);
    CHECK(!fs::exists(output / "gradebook.csv"));

    const GraderRun again =
        run_grader({"batch", dir.string(), "--output", output.string(), "--jobs", "2"});
    CHECK(again.exit_code == 2);
    CHECK(again.output.find("--resume") != std::string::npos);

    // What a kill between a writer's write and its rename leaves: in the class's folder, and in
    // a student's folder that was finished and one that was not.
    const std::string kept_student = before.begin()->first;
    std::ofstream(output / ".gradebook.csv.Kill01") << "half a gradebook";
    std::ofstream(output / kept_student / ".report.md.Kill02") << "half a report";
    std::filesystem::create_directories(output / "zz-unfinished");
    std::ofstream(output / "zz-unfinished" / ".report.txt.Kill03") << "not a student's";

    const GraderRun resumed = run_grader({"batch", dir.string(), "--output", output.string(),
                                          "--jobs", "2", "--resume", "--backend", "cuda"});
    INFO(resumed.output);
    CHECK(resumed.exit_code == cuda_batch_exit());
    // The killed batch's device-server folder (a batch on "cuda" makes one) is gone with it.
    std::filesystem::path temp = std::filesystem::temp_directory_path();
    if (temp.string().size() > 60) {
        temp = "/tmp";
    }
    const std::string killed = "grader-device-servers-" + std::to_string(pid) + "-";
    for (const auto& entry : fs::directory_iterator(temp)) {
        CHECK(entry.path().filename().string().rfind(killed, 0) != 0);
    }
    CHECK_FALSE(fs::exists(output / ".gradebook.csv.Kill01"));
    CHECK_FALSE(fs::exists(output / kept_student / ".report.md.Kill02"));
    // A folder that is no student's is not the batch's to clean.
    CHECK(fs::exists(output / "zz-unfinished" / ".report.txt.Kill03"));
    const auto after = report_stamps(output);
    CHECK(after.size() == 8);
    // A kept report is not graded again: the class stage may write it anew only for its sentence
    // flags (the class is whole now), so everything else in it is as the first run wrote it.
    for (const auto& entry : before) {
        const auto& student = entry.first;
        const auto& stamp = entry.second;
        CAPTURE(student);
        REQUIRE(after.count(student) == 1);
        if (after.at(student) == stamp) {
            continue;
        }
        auto kept = kept_reports.at(student);
        auto now = read_json(output / student / "report.json");
        kept.erase("sentence_review");
        now.erase("sentence_review");
        CHECK(kept == now);
    }
    const auto folders = gradebook_folders(output);
    CHECK(folders.size() == 8);
    CHECK(std::set<std::string>(folders.begin(), folders.end()).size() == 8);
    const auto summary = read_json(output / "summary.json");
    CHECK(summary["run"]["counts"]["kept"] == before.size());
    CHECK(summary["run"]["counts"]["graded"] == 8 - before.size());
}

TEST_CASE("--only regrades the named student and keeps every other report") {
    const auto dir = make_plain_class("only", 3);
    const auto output = dir.parent_path() / "out";
    REQUIRE(run_grader({"batch", dir.string(), "--output", output.string(), "--quiet", "--backend",
                        "cuda"})
                .exit_code == cuda_batch_exit());
    const auto before = report_stamps(output);
    REQUIRE(before.size() == 3);

    const GraderRun only = run_grader({"batch", dir.string(), "--output", output.string(),
                                       "--backend", "cuda", "--resume", "--only", "student11"});
    INFO(only.output);
    CHECK(only.exit_code == 0);  // the one student in scope does not compile: a fail anywhere
    const auto after = report_stamps(output);
    REQUIRE(after.size() == 3);
    CHECK(!(after.at("student11") == before.at("student11")));
    CHECK(after.at("student10") == before.at("student10"));
    CHECK(after.at("student12") == before.at("student12"));
    CHECK(gradebook_folders(output).size() == 3);

    const GraderRun unknown =
        run_grader({"batch", dir.string(), "--output", output.string(), "--only", "nobody"});
    CHECK(unknown.exit_code == 2);
    CHECK(unknown.output.find("nobody") != std::string::npos);
    CHECK(report_stamps(output) == after);
}

TEST_CASE("an output folder with reports in it is not graded over without --resume") {
    const auto root = scratch("existing");
    const auto dir = root / "class";
    fs::create_directories(dir);
    copy_fixture("correct", dir / "alice");
    const auto output = root / "out";
    fs::create_directories(output / "alice");
    write_text(output / "alice" / "report.json", "{\"from\": \"an earlier batch\"}\n");

    const GraderRun run = run_grader({"batch", dir.string(), "--output", output.string()});
    CHECK(run.exit_code == 2);
    CHECK(run.output.find("--resume") != std::string::npos);
    CHECK(read_text(output / "alice" / "report.json") == "{\"from\": \"an earlier batch\"}\n");
    CHECK(!fs::exists(output / "gradebook.csv"));

    // With --resume a report.json that is not a report is graded again.
    const GraderRun resumed = run_grader({"batch", dir.string(), "--output", output.string(),
                                          "--resume", "--quiet", "--backend", "cuda"});
    CHECK(resumed.exit_code == cuda_batch_exit());
    CHECK(read_json(output / "alice" / "report.json").contains("verdict"));
    CHECK(gradebook_folders(output) == std::vector<std::string>{"alice"});
}

TEST_CASE("SIGTERM stops the batch with exit 143 and the class outputs for what finished") {
    const auto dir = make_plain_class("sigterm", 12);
    const auto output = dir.parent_path() / "out";
    const pid_t pid = start_grader(
        {"batch", dir.string(), "--output", output.string(), "--jobs", "2", "--backend", "cuda"},
        dir.parent_path() / "batch.log");
    REQUIRE(pid > 0);
    const bool saw_report = wait_for_first_report(output, pid);
    ::kill(pid, SIGTERM);
    const auto signalled = std::chrono::steady_clock::now();
    const int exit_code = wait_exit(pid);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
    REQUIRE(saw_report);
    INFO(read_text(dir.parent_path() / "batch.log"));
    CHECK(exit_code == 143);
    CHECK(seconds < 5.0);  // it does not wait for the rest of the class
    for (const char* file : {"gradebook.csv", "summary.json", "class-report.html"}) {
        CAPTURE(file);
        CHECK(fs::exists(output / file));
    }
    const auto summary = read_json(output / "summary.json");
    CHECK(summary["run"]["interrupted"] == true);
    const auto reports = report_stamps(output);
    CHECK(reports.size() < 12);
    // Every folder has its row: those graded, and the rest marked 'not graded'.
    CHECK(gradebook_folders(output).size() == 12);
}
