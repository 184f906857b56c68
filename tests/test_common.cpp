#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "common/files.hpp"
#include "common/text.hpp"
#include "test_paths.hpp"

using namespace grader;

TEST_CASE("templates fill the names they know and leave the rest for a reader to see") {
    CHECK(fill_template("{kernel} compiled for {arch}", {{"kernel", "probe"}, {"arch", "sm_90"}}) ==
          "probe compiled for sm_90");
    CHECK(fill_template("{unknown} stays", {}) == "{unknown} stays");
    CHECK(fill_template("an open { brace", {{"x", "y"}}) == "an open { brace");
}

TEST_CASE("reading a file is bounded and says why it failed") {
    const auto dir = grader::testing::scratch_root("common") / "read";
    std::filesystem::create_directories(dir);
    const auto path = dir / "f.txt";
    std::ofstream(path) << "0123456789";
    std::string why;
    CHECK(read_file_bounded(path, 10, why) == std::optional<std::string>("0123456789"));
    CHECK_FALSE(read_file_bounded(path, 9, why).has_value());
    CHECK(why.find("more than the limit") != std::string::npos);
    CHECK_FALSE(read_file_bounded(dir / "missing", 100, why).has_value());
    CHECK(why == "not found");
    CHECK_FALSE(read_file_bounded(dir, 100, why).has_value());
    CHECK(why == "not a regular file");
}

TEST_CASE("numbers are written the way the lesson writes them") {
    CHECK(format_number(2048.0, 4) == "2048");
    CHECK(format_number(1.0, 2) == "1");
    CHECK(format_number(24.581, 2) == "24.58");
    CHECK(format_number(-0.0001, 2) == "0");
    CHECK(format_number(std::nan(""), 2) == "nan");
}

TEST_CASE("a list of names reads as a sentence offers them") {
    CHECK(names_or({}).empty());
    CHECK(names_or({"text"}) == "text");
    CHECK(names_or({"text", "json"}) == "text or json");
    CHECK(names_or({"html", "text", "json", "markdown"}) == "html, text, json or markdown");
}

TEST_CASE("an atomic write replaces the whole file and leaves no temporary behind") {
    const auto dir = grader::testing::scratch_root("common") / "atomic";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto path = dir / "report.json";
    write_file_atomically(path, "first");
    write_file_atomically(path, "second, longer");
    std::ifstream in(path);
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(content == "second, longer");
    CHECK(std::distance(std::filesystem::directory_iterator(dir), {}) == 1);
    CHECK_THROWS(write_file_atomically(dir / "no/such/folder/x", "y"));
}

namespace {

unsigned mode_of(const std::filesystem::path& path) {
    struct stat status {};
    REQUIRE(::lstat(path.c_str(), &status) == 0);
    return status.st_mode & 07777;
}

}  // namespace

TEST_CASE("what the grader writes is the user's alone, whatever the umask, unless group-readable") {
    const auto dir = grader::testing::scratch_root("common") / "modes";
    std::filesystem::remove_all(dir);
    const mode_t umask_before = ::umask(0);  // the most open umask there is
    REQUIRE(output_sharing() == Sharing::owner_only);

    SUBCASE("by default: files 0600 and every folder made 0700, an old 0644 file made 0600") {
        create_output_folders(dir / "class" / "alice");
        CHECK(mode_of(dir) == 0700);
        CHECK(mode_of(dir / "class") == 0700);
        CHECK(mode_of(dir / "class" / "alice") == 0700);
        write_file_atomically(dir / "class" / "alice" / "report.txt", "PASS");
        CHECK(mode_of(dir / "class" / "alice" / "report.txt") == 0600);
        std::ofstream(dir / "class" / "gradebook.csv") << "old";
        std::filesystem::permissions(
            dir / "class" / "gradebook.csv",
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                std::filesystem::perms::group_read | std::filesystem::perms::others_read);
        write_file_atomically(dir / "class" / "gradebook.csv", "new");
        CHECK(mode_of(dir / "class" / "gradebook.csv") == 0600);
    }
    SUBCASE("group-readable where the process asked: files 0640, folders 0750") {
        set_output_sharing(Sharing::group_readable);
        create_output_folders(dir / "shared" / "bob");
        write_file_atomically(dir / "shared" / "bob" / "report.json", "{}");
        set_output_sharing(Sharing::owner_only);
        CHECK(mode_of(dir / "shared") == 0750);
        CHECK(mode_of(dir / "shared" / "bob") == 0750);
        CHECK(mode_of(dir / "shared" / "bob" / "report.json") == 0640);
        // A private file asked for by name stays private (the compile cache's entries).
        write_file_atomically(dir / "shared" / "entry", "x", Sharing::owner_only);
        CHECK(mode_of(dir / "shared" / "entry") == 0600);
    }
    SUBCASE("a folder that exists keeps the mode its owner gave it") {
        std::filesystem::create_directories(dir / "given");
        ::chmod((dir / "given").c_str(), 0755);
        create_output_folders(dir / "given" / "new");
        CHECK(mode_of(dir / "given") == 0755);
        CHECK(mode_of(dir / "given" / "new") == 0700);
    }
    ::umask(umask_before);
}

TEST_CASE("a private folder is this user's, made 0700, and refused where others could write") {
    const auto dir = grader::testing::scratch_root("common") / "private";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::string why;
    CHECK(open_private_folder(dir / "a" / "b", why).valid());
    CHECK(mode_of(dir / "a") == 0700);
    CHECK(mode_of(dir / "a" / "b") == 0700);
    ::chmod((dir / "a" / "b").c_str(), 0755);
    CHECK(open_private_folder(dir / "a" / "b", why).valid());
    CHECK(mode_of(dir / "a" / "b") == 0700);
    ::chmod((dir / "a" / "b").c_str(), 0775);
    CHECK_FALSE(open_private_folder(dir / "a" / "b", why).valid());
    CHECK(why.find("may be written by other users (mode 0775)") != std::string::npos);
    std::filesystem::create_directory_symlink(dir / "a", dir / "link");
    CHECK_FALSE(open_private_folder(dir / "link", why).valid());
    CHECK(why == (dir / "link").string() + " is a symbolic link, not a folder");
}

TEST_CASE("a folder's entries are synced, and a folder that is not there is named") {
    const auto dir = grader::testing::scratch_root("common") / "synced";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    write_file_atomically(dir / "kept.txt", "kept");
    CHECK_NOTHROW(sync_folder(dir));
    CHECK_THROWS_WITH_AS(sync_folder(dir / "missing"), doctest::Contains("missing"),
                         std::system_error);
}

TEST_CASE("an interrupted write's temporary is removed, and nothing else") {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("grader-test-interrupted-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir / ".report.md.Dir123");
    for (const char* name : {".report.md.aB3xYz", ".gradebook.csv.000000", "report.md", ".locks",
                             ".report.md.ab-xyz", ".report.md.abcde", "report.md.aB3xYz"}) {
        std::ofstream(dir / name) << "x";
    }
    std::filesystem::create_symlink("report.md", dir / ".summary.json.Lnk123");
    remove_interrupted_writes(dir);
    std::set<std::string> left;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        left.insert(entry.path().filename().string());
    }
    CHECK(left == std::set<std::string>{".report.md.Dir123", "report.md", ".locks",
                                        ".report.md.ab-xyz", ".report.md.abcde", "report.md.aB3xYz",
                                        ".summary.json.Lnk123"});
    remove_interrupted_writes(dir / "no-such-folder");  // nothing to do, and no throw
    std::filesystem::remove_all(dir);
}

TEST_CASE("a student's file is read only where it is a plain file of its own") {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("grader-test-student-files-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir / "sub");
    const auto secret = dir / "secret.txt";
    std::ofstream(secret) << "host secret";
    std::ofstream(dir / "probe.cu") << "__global__ void k() {}";
    std::string why;

    SUBCASE("a plain file is read, a bound is kept, a missing file is \"not found\"") {
        CHECK(read_student_file(dir, "probe.cu", 100, why) ==
              std::optional<std::string>("__global__ void k() {}"));
        CHECK_FALSE(read_student_file(dir, "probe.cu", 5, why).has_value());
        CHECK(why.find("more than the limit of 5") != std::string::npos);
        CHECK_FALSE(read_student_file(dir, "missing.cu", 100, why).has_value());
        CHECK(why == "not found");
    }
    SUBCASE("a symbolic link is refused, wherever it points") {
        std::filesystem::create_symlink(secret, dir / "link.cu");
        CHECK_FALSE(read_student_file(dir, "link.cu", 100, why).has_value());
        CHECK(why == "it is a symbolic link; submit the file itself");
        std::filesystem::create_symlink("probe.cu", dir / "relative_link.cu");
        CHECK_FALSE(read_student_file(dir, "relative_link.cu", 100, why).has_value());
        std::filesystem::create_directory_symlink(dir, dir / "sub" / "up");
        CHECK_FALSE(read_student_file(dir, "sub/up/probe.cu", 100, why).has_value());
        CHECK(why.find("is a link or not a folder") != std::string::npos);
    }
    SUBCASE("a hard link is refused: the same file has another name") {
        std::filesystem::create_hard_link(secret, dir / "hard.cu");
        CHECK_FALSE(read_student_file(dir, "hard.cu", 100, why).has_value());
        CHECK(why.find("hard link (the same file has 2 names)") != std::string::npos);
    }
    SUBCASE("a named pipe, a folder and a device are refused without being opened") {
        REQUIRE(::mkfifo((dir / "fifo.cu").c_str(), 0600) == 0);
        CHECK_FALSE(read_student_file(dir, "fifo.cu", 100, why).has_value());  // no hang
        CHECK(why.find("named pipe") != std::string::npos);
        CHECK_FALSE(read_student_file(dir, "sub", 100, why).has_value());
        CHECK(why == "it is a folder, not a file");
        CHECK_FALSE(read_student_file("/dev", "null", 100, why).has_value());
        CHECK(why.find("is a device") != std::string::npos);
    }
    SUBCASE("a name that leaves the folder is refused") {
        CHECK_FALSE(read_student_file(dir / "sub", "../probe.cu", 100, why).has_value());
        CHECK(why.find("does not name a file inside the submission folder") != std::string::npos);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("a file the grader wrote is read back without following a link put in its place") {
    const auto dir = grader::testing::scratch_root("common") / "beneath";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir / "alice");
    std::ofstream(dir / "secret") << "the instructor's key";
    std::ofstream(dir / "alice" / "report.txt") << "PASS";
    std::string why;
    CHECK(read_file_beneath(dir, "alice/report.txt", 100, why) ==
          std::optional<std::string>("PASS"));
    std::filesystem::create_symlink(dir / "secret", dir / "alice" / "report.md");
    CHECK_FALSE(read_file_beneath(dir, "alice/report.md", 100, why).has_value());
    CHECK(why == "it is a symbolic link, not followed");
    std::filesystem::create_directory_symlink(dir / "alice", dir / "bob");
    CHECK_FALSE(read_file_beneath(dir, "bob/report.txt", 100, why).has_value());
    CHECK(why == "the folder bob on its way is a link or not a folder");
}

TEST_CASE("FNV-1a and hex: the names and digests a later run must find again") {
    CHECK(grader::fnv1a("") == grader::kFnv1aOffset);
    CHECK(grader::fnv1a("a") == 0xaf63dc4c8601ec8cull);  // the published test vector
    CHECK(grader::fnv1a("bc", grader::fnv1a("a")) == grader::fnv1a("abc"));
}

TEST_CASE("SHA-256 and base64 give the published test vectors") {
    const auto hex = [](const std::array<unsigned char, 32>& digest) {
        return grader::hex_bytes(
            std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
    };
    // FIPS 180-4's examples: one block, two blocks, and the empty message.
    CHECK(hex(grader::sha256("abc")) ==
          "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(hex(grader::sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    CHECK(hex(grader::sha256("")) ==
          "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    // RFC 4648, section 10.
    CHECK(grader::base64("") == "");
    CHECK(grader::base64("f") == "Zg==");
    CHECK(grader::base64("fo") == "Zm8=");
    CHECK(grader::base64("foobar") == "Zm9vYmFy");
    CHECK(grader::hex_bytes(std::string("\x01\xff J", 4)) == "01ff204a");
}

TEST_CASE("'did you mean' is one rule: a typo's nearest name, never a far one or the same one") {
    const std::vector<std::string> commands = {"grade", "batch", "sweep", "explain", "merge"};
    CHECK(nearest_name("grdae", commands) == std::optional<std::string>("grade"));
    CHECK(nearest_name("explian", commands) == std::optional<std::string>("explain"));
    CHECK_FALSE(nearest_name("grade", commands));  // the name itself is no suggestion
    CHECK_FALSE(nearest_name("compile", commands));
    CHECK_FALSE(nearest_name("ab", {"gb"}));  // one letter in two is no typo
    CHECK(nearest_name("sentense", {"student_id", "gpu", "rows", "sentence"}) ==
          std::optional<std::string>("sentence"));
}

TEST_CASE("a missing file's likely name in the folder: its case, a suffix added, a typo") {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("grader-test-meant-file-" + std::to_string(::getpid()));
    const auto folder_with = [&](const std::vector<std::string>& names) {
        std::filesystem::remove_all(dir);
        std::filesystem::create_directories(dir);
        for (const std::string& name : names) {
            std::ofstream(dir / name) << "x";
        }
        return dir;
    };
    struct Case {
        std::vector<std::string> files;
        std::string wanted;
        std::optional<std::string> meant;
    };
    for (const Case& c : std::vector<Case>{
             {{"Probe.cu", "submission.yaml"}, "probe.cu", "Probe.cu"},
             {{"probe.cu.txt", "submission.yaml"}, "probe.cu", "probe.cu.txt"},
             {{"probe (1).cu"}, "probe.cu", "probe (1).cu"},
             {{"PROBE.CU.download"}, "probe.cu", "PROBE.CU.download"},
             {{"probe.cu", "submission.yml"}, "submission.yaml", "submission.yml"},
             {{"prob.cu"}, "probe.cu", "prob.cu"},
             {{"transpose.cu", "submission.yaml"}, "probe.cu", std::nullopt},
             {{".probe.cu"}, "probe.cu", std::nullopt},  // a dot-file is not work
             {{"probe.cu"}, "probe.cu", std::nullopt},   // there: nothing to suggest
         }) {
        CAPTURE(c.wanted);
        CAPTURE(c.files.front());
        CHECK(meant_file(folder_with(c.files), c.wanted) == c.meant);
    }
    CHECK(meant_file_hint(folder_with({"Probe.cu"}), "probe.cu") ==
          "; the folder holds Probe.cu: did you mean it? Rename it probe.cu");
    CHECK(meant_file_hint(folder_with({"notes.txt"}), "probe.cu").empty());
    CHECK_FALSE(meant_file(dir / "no-such-folder", "probe.cu"));
    std::filesystem::remove_all(dir);
}
