// A class split into shards (batch --shard I/N) and merged back (grader merge), as a job array's
// tasks and its merge meet them: the shards partition the class, a restarted shard grades nothing
// twice, the merge writes what one batch of the whole class writes, and refuses, naming what is
// wrong and which indexes to run again, a class that is not whole or not one class. The grades run
// on the simulator, from submissions that do not compile (quick, and a verdict each).

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "batch/batch.hpp"
#include "batch/merge.hpp"
#include "batch/shard.hpp"
#include "common/text.hpp"
#include "exercise/exercise.hpp"
#include "grader_run.hpp"
#include "test_paths.hpp"

using namespace grader::testing;

namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
    const auto dir = grader::testing::scratch_root("shard") / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

const grader::Exercise& day15() {
    static const grader::Exercise exercise =
        grader::load_exercise(fs::path(GRADER_SOURCE_DIR) / "exercises" / "day15-bank-conflicts");
    return exercise;
}

// A class of `students` folders that fail to compile, each with an answers file of its own, and
// a plain file the batch skips.
fs::path make_class(const fs::path& root, int students) {
    const auto dir = root / "class";
    fs::create_directories(dir);
    for (int i = 0; i < students; ++i) {
        const std::string student = "s" + std::to_string(10 + i);
        fs::copy(fs::path(GRADER_FIXTURES_DIR) / "submissions" / "compile_error", dir / student,
                 fs::copy_options::recursive);
        fs::remove(dir / student / "expected.yaml");
    }
    write_text(dir / "roster.csv", "name\n");
    return dir;
}

class Quiet : public grader::BatchProgress {};

grader::BatchResult grade_shard(const fs::path& klass, const fs::path& output, int index,
                                int count) {
    grader::BatchOptions options;
    options.submissions_dir = klass;
    options.output_dir = output;
    options.backend = "sim";
    options.jobs = 2;
    options.worker_executable = GRADER_BINARY;
    options.shard = grader::Shard{index, count};
    Quiet quiet;
    return grader::run_batch(day15(), options, quiet);
}

std::vector<fs::path> grade_shards(const fs::path& klass, const fs::path& run, int count) {
    std::vector<fs::path> dirs;
    for (int i = 0; i < count; ++i) {
        dirs.push_back(run / "shards" / std::to_string(i));
        grade_shard(klass, dirs.back(), i, count);
    }
    return dirs;
}

std::string without_run(const fs::path& summary) {
    auto json = nlohmann::json::parse(read_text(summary));
    json.erase("run");
    return json.dump();
}

std::string page_without_time(const fs::path& page) {
    return std::regex_replace(read_text(page), std::regex(R"(\d{4}-\d\d-\d\d \d\d:\d\d UTC)"),
                              "TIME");
}

}  // namespace

TEST_CASE("--shard takes I/N with the index below N, and nothing else") {
    std::string why;
    const auto shard = grader::parse_shard("3/8", why);
    REQUIRE(shard);
    CHECK(shard->index == 3);
    CHECK(shard->count == 8);
    CHECK(grader::parse_shard("9999/10000", why));
    for (const char* bad :
         {"8/8", "1/0", "-1/2", "a/2", "1/2/3", "2", "", "1/ 2", "9999999/9", "0/10001"}) {
        CAPTURE(bad);
        CHECK(!grader::parse_shard(bad, why));
        CHECK(!why.empty());
    }
}

TEST_CASE("shards partition the class; a restart grades nothing twice; merge equals one batch") {
    const auto root = scratch("partition");
    const auto klass = make_class(root, 7);
    const auto dirs = grade_shards(klass, root / "run", 3);

    std::vector<std::string> assigned;
    for (int i = 0; i < 3; ++i) {
        const auto manifest = grader::read_manifest(dirs[i]);
        REQUIRE(manifest);
        CHECK(manifest->shard.index == i);
        CHECK(manifest->shard.count == 3);
        CHECK(manifest->class_students.size() == 7);
        CHECK(manifest->backend == "sim");
        CHECK(manifest->complete);
        CHECK(manifest->runs.size() == 1);
        CHECK(manifest->runs[0].graded == manifest->assigned.size());
        CHECK(manifest->skipped.size() == 1);           // roster.csv
        CHECK(!fs::exists(dirs[i] / "gradebook.csv"));  // the merge writes the class outputs
        for (const auto& student : manifest->assigned) {
            CHECK(fs::exists(dirs[i] / student / "report.json"));
            assigned.push_back(student);
        }
    }
    std::sort(assigned.begin(), assigned.end());
    CHECK(assigned == std::vector<std::string>{"s10", "s11", "s12", "s13", "s14", "s15", "s16"});
    CHECK(grader::read_manifest(dirs[1])->assigned == std::vector<std::string>{"s11", "s14"});

    // The task started again from the top, as Slurm requeues it: everything is kept.
    const auto before = read_text(dirs[1] / "s11" / "report.json");
    const auto again = grade_shard(klass, dirs[1], 1, 3);
    CHECK(again.status.graded == 0);
    CHECK(again.status.kept == 2);
    CHECK(grader::read_manifest(dirs[1])->runs.size() == 2);
    CHECK(read_text(dirs[1] / "s11" / "report.json") == before);

    grader::MergeOptions merge;
    merge.shard_dirs = dirs;
    merge.output_dir = root / "run" / "class";
    const auto result = grader::merge_shards(day15(), merge);
    CHECK(result.students == 7);
    CHECK(result.entries.size() == 7);
    CHECK(result.ungradable == 0);
    CHECK(result.graded_on.at("the PTX simulator").size() == 7);
    const auto pl = read_text(merge.output_dir / "prairielearn-scores.csv");
    CHECK(pl.rfind("uid,qid,score_perc,feedback\r\n", 0) == 0);
    CHECK(pl.find("\r\ns13,day15-bank-conflicts,") != std::string::npos);
    CHECK(std::count(pl.begin(), pl.end(), '\n') == 8);

    // One batch over the same reports writes the same class outputs and the same student files.
    const auto rebuilt = root / "rebuilt";
    fs::create_directories(rebuilt);
    for (const auto& dir : dirs) {
        for (const auto& entry : fs::directory_iterator(dir)) {
            if (entry.is_directory() && entry.path().filename().string()[0] == 's') {
                fs::copy(entry.path(), rebuilt / entry.path().filename(),
                         fs::copy_options::recursive);
            }
        }
    }
    grader::BatchOptions batch;
    batch.submissions_dir = klass;
    batch.output_dir = rebuilt;
    batch.backend = "sim";
    batch.resume = true;
    batch.worker_executable = GRADER_BINARY;
    Quiet quiet;
    const auto whole = grader::run_batch(day15(), batch, quiet);
    CHECK(whole.status.graded == 0);
    CHECK(read_text(merge.output_dir / "gradebook.csv") == read_text(rebuilt / "gradebook.csv"));
    CHECK(read_text(merge.output_dir / "prairielearn-scores.csv") ==
          read_text(rebuilt / "prairielearn-scores.csv"));
    CHECK(without_run(merge.output_dir / "summary.json") == without_run(rebuilt / "summary.json"));
    CHECK(page_without_time(merge.output_dir / "class-report.html") ==
          page_without_time(rebuilt / "class-report.html"));
    for (const auto& name : grader::submission_file_names()) {
        CAPTURE(name);
        CHECK(read_text(merge.output_dir / "s12" / name) == read_text(rebuilt / "s12" / name));
    }
}

TEST_CASE("merge refuses a missing shard, a student graded twice, and shards that disagree") {
    const auto root = scratch("refuse");
    const auto klass = make_class(root, 5);
    const auto dirs = grade_shards(klass, root / "run", 3);
    grader::MergeOptions merge;
    merge.output_dir = root / "run" / "class";

    SUBCASE("a shard missing: named, with the index to run again") {
        merge.shard_dirs = {dirs[0], dirs[2]};
        try {
            grader::merge_shards(day15(), merge);
            FAIL("the merge went through");
        } catch (const grader::MergeRefused& refused) {
            CHECK(refused.rerun() == std::vector<int>{1});
            CHECK(std::string(refused.what()).find("shard 1 of 3 is missing") != std::string::npos);
            CHECK(std::string(refused.what()).find("s11, s14") != std::string::npos);
        }
        CHECK(!fs::exists(merge.output_dir));
    }
    SUBCASE("a shard's task that stopped halfway: its students are missing, its index named") {
        fs::remove_all(dirs[2] / "s12");
        merge.shard_dirs = dirs;
        try {
            grader::merge_shards(day15(), merge);
            FAIL("the merge went through");
        } catch (const grader::MergeRefused& refused) {
            CHECK(refused.rerun() == std::vector<int>{2});
            CHECK(std::string(refused.what()).find("1 of 5 students have no report") !=
                  std::string::npos);
        }
    }
    SUBCASE("a student with a report in two shards") {
        fs::copy(dirs[0] / "s10", dirs[1] / "s10", fs::copy_options::recursive);
        merge.shard_dirs = dirs;
        CHECK_THROWS_WITH_AS(grader::merge_shards(day15(), merge),
                             doctest::Contains("'s10' has a report in more than one shard"),
                             grader::MergeRefused);
    }
    SUBCASE("shards that disagree on the backend, or a folder that is no shard") {
        auto json = nlohmann::json::parse(read_text(dirs[2] / "shard.json"));
        json["backend"] = "cuda";
        write_text(dirs[2] / "shard.json", json.dump());
        fs::create_directories(root / "not-a-shard");
        merge.shard_dirs = {dirs[0], dirs[1], dirs[2], root / "not-a-shard"};
        try {
            grader::merge_shards(day15(), merge);
            FAIL("the merge went through");
        } catch (const grader::MergeRefused& refused) {
            CHECK(refused.rerun().empty());
            const std::string what = refused.what();
            CHECK(what.find("disagree on the backend") != std::string::npos);
            CHECK(what.find("not-a-shard holds no shard.json") != std::string::npos);
        }
    }
    SUBCASE("another exercise than the shards graded") {
        merge.shard_dirs = dirs;
        const auto padding =
            grader::load_exercise(fs::path(GRADER_SOURCE_DIR) / "exercises" / "day15-padding");
        CHECK_THROWS_WITH_AS(grader::merge_shards(padding, merge),
                             doctest::Contains("the shards graded another exercise"),
                             grader::MergeRefused);
    }
}

TEST_CASE("the CLI: --shard names its backend, no GPU with cuda is exit 3, a refusal is exit 5") {
    const auto root = scratch("cli");
    const auto klass = make_class(root, 3);
    const auto shard = (root / "run" / "shards" / "0").string();

    GraderRun run = run_grader({"batch", klass.string(), "--output", shard, "--shard", "0/2"});
    CHECK(run.exit_code == 2);
    CHECK(run.output.find("--shard needs --backend cuda or --backend sim") != std::string::npos);
    run = run_grader(
        {"batch", klass.string(), "--output", shard, "--shard", "2/2", "--backend", "sim"});
    CHECK(run.exit_code == 2);

    // A task whose GPU is missing grades nothing, and never on the simulator instead.
    run = run_grader(
        {"batch", klass.string(), "--output", shard, "--shard", "0/2", "--backend", "cuda"}, {},
        {"CUDA_VISIBLE_DEVICES=-1"});
    CHECK(run.exit_code == 3);
    CHECK(run.output.find("this task sees no GPU (CUDA_VISIBLE_DEVICES=-1)") != std::string::npos);
    CHECK(!fs::exists(fs::path(shard) / "shard.json"));

    run = run_grader(
        {"batch", klass.string(), "--output", shard, "--shard", "0/2", "--backend", "sim", "-q"});
    CHECK(run.exit_code == 0);
    run = run_grader({"merge", shard, "--output", (root / "run" / "class").string()});
    INFO(run.output);
    CHECK(run.exit_code == 5);
    CHECK(run.output.find("shard 1 of 2 is missing") != std::string::npos);
    CHECK(run.output.find("rerun array indexes: 1\n") != std::string::npos);
    CHECK(run.output.find("nothing was written") != std::string::npos);

    run = run_grader({"batch", klass.string(), "--output", (root / "run/shards/1").string(),
                      "--shard", "1/2", "--backend", "sim", "-q"});
    CHECK(run.exit_code == 0);
    run = run_grader({"merge", shard, (root / "run/shards/1").string(), "--output",
                      (root / "run" / "class").string()});
    CHECK(run.exit_code == 0);
    CHECK(run.output.find("merged 3 students from 2 shards (sim)") != std::string::npos);
    CHECK(run.output.find("graded on the PTX simulator: 3 students") != std::string::npos);
    CHECK(fs::exists(root / "run" / "class" / "gradebook.csv"));
}

TEST_CASE("a folder named like another's renamed output, or shown like it, is refused") {
    const auto root = scratch("keys");
    const auto klass = root / "class";
    const std::string odd = std::string("bad") + '\x01' + "name";
    fs::create_directories(klass / odd);
    fs::create_directories(klass / "alice");

    SUBCASE("the odd folder's key shows its bytes, and the gradebook files it under that key") {
        const auto found = grader::find_submissions(klass);
        REQUIRE(found.submissions.size() == 2);
        const std::string key = grader::submission_key(odd);
        CHECK(key != odd);
        CHECK(key.find("[626164016e616d65]") != std::string::npos);
        CHECK(grader::submission_key("alice") == "alice");
    }
    SUBCASE("a real folder named like the odd one's output folder") {
        fs::create_directories(klass / grader::student_folder_name(odd));
        CHECK_THROWS_WITH_AS(grader::find_submissions(klass),
                             doctest::Contains("would share the output folder"),
                             grader::BatchError);
        const GraderRun run = run_grader(
            {"batch", klass.string(), "--output", (root / "out").string(), "--backend", "sim"});
        CHECK(run.exit_code == 2);
        CHECK(run.output.find("rename one of them") != std::string::npos);
    }
    SUBCASE("a real folder named like the odd one's gradebook key") {
        fs::create_directories(klass / grader::submission_key(odd));
        CHECK_THROWS_WITH_AS(grader::find_submissions(klass),
                             doctest::Contains("would share a row of the gradebook"),
                             grader::BatchError);
    }
}

TEST_CASE("job array indexes are written as sbatch --array takes them") {
    CHECK(grader::array_ranges({}).empty());
    CHECK(grader::array_ranges({1}) == "1");
    CHECK(grader::array_ranges({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8");
    CHECK(grader::array_ranges({0, 2, 4, 6}, 2) == "0,2,...");
}

namespace {

// One shard of a class of three, its manifest as JSON for a test to forge, and where a merge of
// it would write.
struct ForgedShard {
    fs::path root;
    fs::path dir;
    fs::path output;
    nlohmann::json manifest;

    explicit ForgedShard(const std::string& name) : root(scratch(name)) {
        const auto klass = make_class(root, 3);
        dir = root / "run" / "shards" / "0";
        grade_shard(klass, dir, 0, 1);
        output = root / "run" / "class";
        manifest = nlohmann::json::parse(read_text(dir / "shard.json"));
    }
    void write() const { write_text(dir / "shard.json", manifest.dump()); }
    // The refusal's text; fails the test where the merge went through.
    std::string refusal() const {
        grader::MergeOptions merge;
        merge.shard_dirs = {dir};
        merge.output_dir = output;
        try {
            grader::merge_shards(day15(), merge);
        } catch (const grader::MergeRefused& refused) {
            return refused.what();
        }
        FAIL("the merge went through");
        return {};
    }
    // Nothing of the class anywhere under the run but in the shard itself.
    void nothing_written() const {
        CHECK(!fs::exists(output));
        for (const auto& entry : fs::recursive_directory_iterator(root)) {
            const auto relative = entry.path().lexically_relative(root).string();
            CHECK_MESSAGE((relative.rfind("class", 0) == 0 || relative == "run" ||
                           relative == "run/shards" || relative.rfind("run/shards/0", 0) == 0),
                          relative);
        }
    }
};

}  // namespace

TEST_CASE("merge trusts no name, digest or count a shard's manifest gives, and writes nothing") {
    ForgedShard shard("forged");
    const std::string file = (shard.dir / "shard.json").string();

    SUBCASE("a student's name that leaves --output, relative or absolute") {
        for (const std::string& name :
             std::vector<std::string>{"../../escape", (shard.root / "escape").string()}) {
            CAPTURE(name);
            shard.manifest["class"]["students"][1] = name;
            shard.write();
            const std::string why = shard.refusal();
            CHECK(why.find(file + ": field class.students[1] is '" + name +
                           "', where batch files the reports of the folder 's11' under 's11'") !=
                  std::string::npos);
            shard.nothing_written();
        }
        // Through the CLI: exit 5, saying so.
        const GraderRun run =
            run_grader({"merge", shard.dir.string(), "--output", shard.output.string()});
        CAPTURE(run.output);
        CHECK(run.exit_code == 5);
        CHECK(run.output.find("shard.json: field class.students[1]") != std::string::npos);
        CHECK(run.output.find("nothing was written") != std::string::npos);
        shard.nothing_written();
    }
    SUBCASE("a class list changed with its names to match: no folder batch would list") {
        shard.manifest["class"]["folders_hex"][1] = grader::hex_bytes("../s11");
        shard.manifest["class"]["students"][1] = "../s11";
        shard.write();
        CHECK(
            shard.refusal().find("field class.folders_hex[1] ('../s11') is no name batch lists") !=
            std::string::npos);
        shard.manifest["class"]["folders_hex"][1] = grader::hex_bytes("s10");
        shard.manifest["class"]["students"][1] = "s10";
        shard.write();
        CHECK(shard.refusal().find("field class.folders_hex[1] ('s10') is out of the order") !=
              std::string::npos);
        shard.nothing_written();
    }
    SUBCASE("a digest that is not the class list's") {
        shard.manifest["class"]["digest"] = "0123456789abcdef";
        shard.write();
        CHECK(shard.refusal().find("field class.digest is '0123456789abcdef', where the class "
                                   "list's digest is") != std::string::npos);
        shard.nothing_written();
    }
    SUBCASE("two million shards: refused at once; ten thousand: one line, not one per shard") {
        shard.manifest["shard"]["count"] = 2000000;
        shard.write();
        const auto began = std::chrono::steady_clock::now();
        CHECK(shard.refusal().find("field shard.count is 2000000, not from 1 to 10000") !=
              std::string::npos);
        CHECK(std::chrono::steady_clock::now() - began < std::chrono::seconds(5));
        shard.manifest["shard"]["count"] = 10000;
        shard.manifest["assigned"] = {"s10"};
        shard.write();
        grader::MergeOptions merge;
        merge.shard_dirs = {shard.dir};
        merge.output_dir = shard.output;
        try {
            grader::merge_shards(day15(), merge);
            FAIL("the merge went through");
        } catch (const grader::MergeRefused& refused) {
            CHECK(std::string(refused.what()).size() < 400);
            CHECK(std::string(refused.what()).find("9999 shards of 10000 are missing") !=
                  std::string::npos);
            CHECK(refused.rerun().size() == 9999);
            CHECK(grader::array_ranges(refused.rerun()) == "1-9999");
        }
        shard.nothing_written();
    }
    SUBCASE("a share that is not the shard's") {
        shard.manifest["assigned"] = {"s10"};
        shard.write();
        CHECK(shard.refusal().find("field assigned is not shard 0 of 1's share") !=
              std::string::npos);
    }
}

TEST_CASE("merge follows no link, in a shard or in --output") {
    ForgedShard shard("links");
    const auto elsewhere = shard.root / "elsewhere";
    fs::create_directories(elsewhere);
    write_text(elsewhere / "secret", "the instructor's key\n");

    SUBCASE("a student's folder in --output that is a link: nothing is written through it") {
        fs::create_directories(shard.output);
        fs::create_directory_symlink(elsewhere, shard.output / "s11");
        CHECK(shard.refusal().find("--output's " + (shard.output / "s11").string() +
                                   " is a symbolic link") != std::string::npos);
        CHECK(fs::directory_iterator(elsewhere)->path().filename() == "secret");
        CHECK(std::distance(fs::directory_iterator(elsewhere), {}) == 1);
        CHECK(!fs::exists(shard.output / "gradebook.csv"));
    }
    SUBCASE("a shard's report that is a link to another file: not read, not copied") {
        fs::remove(shard.dir / "s12" / "report.txt");
        fs::create_symlink(elsewhere / "secret", shard.dir / "s12" / "report.txt");
        CHECK(shard.refusal().find((shard.dir / "s12" / "report.txt").string() +
                                   " is a symbolic link, not followed") != std::string::npos);
        CHECK(!fs::exists(shard.output));
    }
    SUBCASE("a shard's student folder that is a link to another shard's") {
        fs::rename(shard.dir / "s12", elsewhere / "s12");
        fs::create_directory_symlink(elsewhere / "s12", shard.dir / "s12");
        CHECK(shard.refusal().find((shard.dir / "s12").string() +
                                   " is a symbolic link, not followed") != std::string::npos);
        CHECK(!fs::exists(shard.output));
    }
}

TEST_CASE("merged outputs are the instructor's alone: files 0600, folders 0700") {
    ForgedShard shard("modes");
    const mode_t umask_before = ::umask(0);
    grader::MergeOptions merge;
    merge.shard_dirs = {shard.dir};
    merge.output_dir = shard.output;
    grader::merge_shards(day15(), merge);
    ::umask(umask_before);
    std::size_t checked = 0;
    for (const auto& entry : fs::recursive_directory_iterator(shard.output)) {
        CAPTURE(entry.path());
        struct stat status {};
        REQUIRE(::lstat(entry.path().c_str(), &status) == 0);
        CHECK((status.st_mode & 0777) == (S_ISDIR(status.st_mode) ? 0700u : 0600u));
        ++checked;
    }
    CHECK(checked > 20);
}
