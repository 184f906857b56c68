// Canvas both ways: its submissions download (files named as canvas-lms's ContentZipper names
// them) filed into a class folder, and its gradebook import written from a roster in the format
// of its gradebook export (GradebookExporter: tests/fixtures/canvas/gradebook-export.csv), then
// read back as its GradebookImporter reads it.

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "batch/batch.hpp"
#include "batch/canvas.hpp"
#include "grader_run.hpp"
#include "model/report.hpp"
#include "report/canvas_gradebook.hpp"
#include "report/class_outputs.hpp"
#include "serve/zip_maker.hpp"
#include "test_paths.hpp"

using namespace grader;
using namespace grader::testing;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = GRADER_FIXTURES_DIR;
const fs::path kExport = kFixtures / "canvas" / "gradebook-export.csv";

fs::path scratch(const std::string& name) {
    const fs::path dir =
        fs::temp_directory_path() / ("grader-test-canvas-" + std::to_string(::getpid())) / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

// RFC 4180 records, as Canvas's importer (Ruby's CSV) reads them.
std::vector<std::vector<std::string>> records(std::string text) {
    if (text.rfind("\xEF\xBB\xBF", 0) == 0) {
        text.erase(0, 3);
    }
    std::vector<std::vector<std::string>> rows(1);
    std::string cell;
    bool quoted = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
                cell += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                cell += c;
            }
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            rows.back().push_back(cell);
            cell.clear();
        } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
            rows.back().push_back(cell);
            cell.clear();
            rows.emplace_back();
            ++i;
        } else {
            cell += c;
        }
    }
    rows.pop_back();  // after the last CRLF
    return rows;
}

// A download as Canvas's "Download Submissions" zip unzips: one flat folder, each file named
// <sortable name, lower case, letters and digits only>[_LATE]_<user id>_<attachment id>_<name>.
struct DownloadFile {
    std::string name;
    std::string content;
};

fs::path make_download(const fs::path& dir, const std::vector<DownloadFile>& files) {
    fs::create_directories(dir);
    for (const auto& file : files) {
        write_text(dir / file.name, file.content);
    }
    return dir;
}

std::string fixture_file(const std::string& submission, const std::string& file) {
    return read_text(kFixtures / "submissions" / submission / file);
}

// The class of tests/fixtures/canvas/gradebook-export.csv, as its download holds it.
std::vector<DownloadFile> class_download() {
    return {
        // Jane handed in probe.cu twice in one submission: the later upload is hers.
        {"smithjane_123456_9000001_probe.cu", "// an earlier upload\n"},
        {"smithjane_123456_9000003_probe.cu", fixture_file("correct", "probe.cu")},
        {"smithjane_123456_9000002_submission.yaml", fixture_file("correct", "submission.yaml")},
        // John handed in again after the due date: late, and Canvas renamed his probe.cu.
        {"doejohn_LATE_234567_9000010_probe-1.cu", fixture_file("correct", "probe.cu")},
        {"doejohn_LATE_234567_9000011_submission.yaml", fixture_file("correct", "submission.yaml")},
        // Canvas keeps the letters of every script in the name.
        {"garc\xc3\xad"
         "aana_345678_9000020_probe.cu",
         fixture_file("compile_error", "probe.cu")},
        {"garc\xc3\xad"
         "aana_345678_9000021_submission.yaml",
         fixture_file("compile_error", "submission.yaml")},
        // Lee handed in a zip of his kit, folder and all, as a Mac zips it.
        {"leeminho_456789_9000030_day15.zip",
         make_zip({{"day15/probe.cu", fixture_file("correct", "probe.cu")},
                   {"day15/submission.yaml", fixture_file("correct", "submission.yaml")},
                   {"__MACOSX/day15/._probe.cu", "junk"}})},
        {"oconnorpat_567890_text.html", "<p>I could not get it to compile.</p>\n"},
        {".DS_Store", "Bud1"},
        {"notes.txt", "to grade on Friday\n"},
    };
}

}  // namespace

TEST_CASE("a Canvas download's file names are taken apart as Canvas makes them") {
    const auto upload = parse_canvas_file_name("smithjane_123456_9000003_probe.cu");
    REQUIRE(upload);
    CHECK(upload->folder == "smithjane_123456");
    CHECK(upload->user_id == "123456");
    CHECK_FALSE(upload->late);
    CHECK(upload->file_name == "probe.cu");

    const auto late = parse_canvas_file_name("doejohn_LATE_234567_9000010_my_probe_2_3.cu");
    REQUIRE(late);
    CHECK(late->folder == "doejohn_LATE_234567");
    CHECK(late->user_id == "234567");
    CHECK(late->late);
    CHECK(late->file_name == "my_probe_2_3.cu");  // underscores and digits of its own

    const auto text_entry = parse_canvas_file_name("oconnorpat_LATE_567890_text.html");
    REQUIRE(text_entry);
    CHECK(text_entry->folder == "oconnorpat_LATE_567890");
    CHECK(text_entry->file_name == "text.html");
    // An upload the student named text.html has two ids before it; so has a text entry of a
    // user named "leeminho_456789": two readings, for the roster to tell apart.
    const auto both = canvas_file_readings("leeminho_456789_9000031_text.html");
    REQUIRE(both.size() == 2);
    CHECK(both[0].user_id == "456789");
    CHECK(both[0].file_name == "text.html");
    CHECK(both[0].attachment == 9000031);
    CHECK(both[1].user_id == "9000031");
    CHECK(both[1].name_part == "leeminho_456789");
    CHECK_FALSE(parse_canvas_file_name("leeminho_456789_9000031_text.html"));
    // A name ending in digits reads as two users'; a file named "2_probe.cu" too.
    CHECK(canvas_file_readings("nguyenminh_2_345679_9000003_probe.cu").size() == 2);
    CHECK(canvas_file_readings("smithjane_123456_9000003_2_probe.cu").size() == 2);

    const auto anonymous = parse_canvas_file_name("LATE_anon_x8Ab2q_9000040_probe.cu");
    REQUIRE(anonymous);
    CHECK(anonymous->folder == "LATE_anon_x8Ab2q");
    CHECK(anonymous->user_id.empty());
    CHECK(anonymous->late);

    for (const char* other : {"notes.txt", "probe.cu", "smith jane_123456_9000003_probe.cu",
                              "SmithJane_123456_9000003_probe.cu",  // Canvas lowers the case
                              "smithjane_123456_9000003_..", "smithjane_12a_9000003_probe.cu",
                              "smithjane_123456_9000003_probe\n.cu"}) {
        CAPTURE(other);
        CHECK_FALSE(parse_canvas_file_name(other));
    }
    CHECK(parse_canvas_folder_name("doejohn_LATE_234567")->user_id == "234567");
    CHECK(parse_canvas_folder_name("doejohn_LATE_234567")->late);
    CHECK(parse_canvas_folder_name("anon_x8Ab2q")->user_id.empty());
    CHECK_FALSE(parse_canvas_folder_name("-dash-first"));
}

TEST_CASE("a Canvas download is filed a folder a student, late marks and renamed files kept") {
    const fs::path root = scratch("unpack");
    CanvasUnpackOptions options;
    options.download = make_download(root / "download", class_download());
    fs::create_directories(options.download / "__MACOSX");
    options.class_dir = root / "class";
    options.expected_files = {"probe.cu", "submission.yaml"};
    const CanvasUnpackResult result = unpack_canvas_download(options);

    CHECK(result.folders == std::vector<std::string>{"doejohn_LATE_234567",
                                                     "garc\xc3\xad"
                                                     "aana_345678",
                                                     "leeminho_456789", "oconnorpat_567890",
                                                     "smithjane_123456"});
    CHECK(result.files == 10);  // Lee's zip, and the two files it holds
    CHECK(result.late == std::vector<std::string>{"doejohn_LATE_234567"});
    // Lee's zip is unpacked into his folder, from its one folder, without what macOS adds.
    CHECK(result.unzipped == std::vector<std::string>{"leeminho_456789"});
    CHECK(read_text(options.class_dir / "leeminho_456789" / "probe.cu") ==
          fixture_file("correct", "probe.cu"));
    CHECK(fs::exists(options.class_dir / "leeminho_456789" / "submission.yaml"));
    CHECK_FALSE(fs::exists(options.class_dir / "leeminho_456789" / "._probe.cu"));
    CHECK(result.zip_refused.empty());
    CHECK(result.text_entries == std::vector<std::string>{"oconnorpat_567890"});
    // Jane's later upload is the one kept; the earlier is said.
    CHECK(read_text(options.class_dir / "smithjane_123456" / "probe.cu") ==
          fixture_file("correct", "probe.cu"));
    // John's probe-1.cu has its name back, and that is said.
    CHECK(fs::exists(options.class_dir / "doejohn_LATE_234567" / "probe.cu"));
    CHECK_FALSE(fs::exists(options.class_dir / "doejohn_LATE_234567" / "probe-1.cu"));
    REQUIRE(result.renamed.size() == 1);
    CHECK(result.renamed[0].find("probe-1.cu is probe.cu") != std::string::npos);
    CHECK(fs::exists(options.class_dir / "oconnorpat_567890" / "text.html"));

    std::set<std::string> skipped;
    for (const auto& entry : result.skipped) {
        skipped.insert(entry.name);
    }
    CHECK(skipped == std::set<std::string>{".DS_Store", "__MACOSX", "notes.txt",
                                           "smithjane_123456_9000001_probe.cu"});

    SUBCASE("into a folder that already holds a class: refused, nothing mixed") {
        CHECK_THROWS_AS(unpack_canvas_download(options), BatchError);
    }
    SUBCASE("the same student under two names (two downloads unzipped together): refused") {
        CanvasUnpackOptions mixed = options;
        mixed.download = make_download(root / "mixed", {{"doejohn_234567_1_probe.cu", "a"},
                                                        {"doejohn_LATE_234567_2_probe.cu", "b"}});
        mixed.class_dir = root / "mixed-class";
        CHECK_THROWS_AS(unpack_canvas_download(mixed), BatchError);
        CHECK_FALSE(fs::exists(mixed.class_dir));
    }
}

TEST_CASE("Canvas's name for a student is its sortable name as ContentZipper writes it") {
    CHECK(canvas_name_in_files("Smith, Jane") == "smithjane");
    CHECK(canvas_name_in_files("Nguyen, Minh_2") == "nguyenminh_2");  // Canvas leaves this
    CHECK(canvas_name_in_files("Lee_12_, Ann") == "lee12ann");        // and joins this
    CHECK(canvas_name_in_files("O'Connor, Pat") == "oconnorpat");
    CHECK(canvas_name_in_files("O\xe2\x80\x99"
                               "Brien, Zo\xc3\xab") == "obrienzo\xc3\xab");
    CHECK(canvas_name_in_files("\xc3\x89lodie, \xc3\x9crsula") == "\xc3\xa9lodie\xc3\xbcrsula");
    CHECK(canvas_name_in_files("\xd0\x98\xd0\xb2\xd0\xb0\xd0\xbd\xd0\xbe\xd0\xb2, \xd0\x9f\xd1\x91"
                               "\xd1\x82\xd1\x80") ==
          "\xd0\xb8\xd0\xb2\xd0\xb0\xd0\xbd\xd0\xbe\xd0\xb2\xd0\xbf\xd1\x91\xd1\x82\xd1\x80");
    CHECK(canvas_name_in_files("\xc5\x81ukasz, \xc5\xbb"
                               "aneta") ==
          "\xc5\x82ukasz\xc5\xbc"
          "aneta");
}

TEST_CASE("a name that reads two ways is filed by the roster, never as another student's") {
    const fs::path root = scratch("two-ways");
    write_text(root / "export.csv",
               "Student,ID,SIS User ID,SIS Login ID,Section\r\n"
               "\"Smith, Bob\",555555,,bsmith,S1\r\n"
               "Jane_555555,123456,,jane,S1\r\n"
               "\"Nguyen, Minh_2\",345679,,mnguyen,S1\r\n"
               "\"O\xe2\x80\x99"
               "Brien, Zo\xc3\xab\",456780,,zobrien,S1\r\n");
    const CanvasRoster roster = read_canvas_roster(root / "export.csv");
    const std::vector<DownloadFile> download = {
        {"smithbob_555555_9000001_probe.cu", "// Bob's\n"},
        // Jane named herself after Bob's id: before, her file was read as Bob's (user 555555)
        // and the whole unpack refused, or, without Bob in the download, Bob had her grade.
        {"jane_555555_123456_9000002_probe.cu", "// Jane's\n"},
        {"nguyenminh_2_345679_9000003_probe.cu", "// Minh's\n"},
        {"nguyenminh_2_345679_9000004_submission.yaml", "student_id: m\n"},
        {"obrienzo\xc3\xab_456780_9000005_2_probe.cu", "// Zo\xc3\xab's\n"},
    };
    CanvasUnpackOptions options;
    options.download = make_download(root / "download", download);
    options.expected_files = {"probe.cu", "submission.yaml"};
    SUBCASE("with the roster: each file is its own student's") {
        options.class_dir = root / "class";
        options.roster = &roster;
        const CanvasUnpackResult result = unpack_canvas_download(options);
        CHECK(result.folders ==
              std::vector<std::string>{"jane_555555_123456", "nguyenminh_2_345679",
                                       "obrienzo\xc3\xab_456780", "smithbob_555555"});
        CHECK(read_text(options.class_dir / "smithbob_555555" / "probe.cu") == "// Bob's\n");
        CHECK(read_text(options.class_dir / "jane_555555_123456" / "probe.cu") == "// Jane's\n");
        CHECK(fs::exists(options.class_dir / "nguyenminh_2_345679" / "submission.yaml"));
        CHECK(fs::exists(options.class_dir / "obrienzo\xc3\xab_456780" / "2_probe.cu"));
        CHECK(result.read_by_roster.size() == 4);
        CHECK(result.skipped.empty());
        // The folders carry the ids the gradebook import matches.
        CHECK(parse_canvas_folder_name("jane_555555_123456")->user_id == "123456");
        CHECK(parse_canvas_folder_name("nguyenminh_2_345679")->user_id == "345679");
    }
    SUBCASE("without the roster: what reads two ways is skipped, saying how to file it") {
        options.class_dir = root / "class-without";
        const CanvasUnpackResult result = unpack_canvas_download(options);
        CHECK(result.folders == std::vector<std::string>{"smithbob_555555"});
        CHECK(std::distance(fs::directory_iterator(options.class_dir / "smithbob_555555"),
                            fs::directory_iterator()) == 1);
        REQUIRE(result.skipped.size() == 4);
        for (const SkippedEntry& skipped : result.skipped) {
            CAPTURE(skipped.name);
            CHECK(skipped.reason.find("reads two ways") != std::string::npos);
            CHECK(skipped.reason.find("--roster") != std::string::npos);
        }
        CHECK(result.skipped[0].reason.find("user 555555's 9000002_probe.cu, or user 123456's "
                                            "probe.cu") != std::string::npos);
    }
    SUBCASE("a reading the roster does not confirm is never taken") {
        // Bob's id under a name that is not Bob's: neither reading is confirmed.
        options.class_dir = root / "class-unconfirmed";
        options.roster = &roster;
        options.download = make_download(root / "download-2",
                                         {{"eve_555555_777777_9000009_probe.cu", "// Eve's\n"}});
        const CanvasUnpackResult result = unpack_canvas_download(options);
        CHECK(result.folders.empty());
        REQUIRE(result.skipped.size() == 1);
        CHECK(result.skipped[0].reason.find("the roster lists neither") != std::string::npos);
    }
}

TEST_CASE(
    "a zip handed in on Canvas is unpacked with serve's limits, its refusal named per "
    "student") {
    const fs::path root = scratch("zips");
    const std::string kit_probe = fixture_file("correct", "probe.cu");
    CanvasUnpackOptions options;
    options.download = make_download(
        root / "download",
        {// A zip of the files themselves, as Windows makes it.
         {"aaronann_111111_9000001_kit.zip",
          make_zip({{"probe.cu", kit_probe, 0, false}, {"submission.yaml", "student_id: a\n"}})},
         // A link in the zip: refused, named.
         {"bakerbo_222222_9000002_kit.zip",
          make_zip({{"probe.cu", "/etc/passwd", S_IFLNK | 0777}})},
         // Files in two folders: refused, both named.
         {"chency_333333_9000003_kit.zip",
          make_zip({{"a/probe.cu", "k"}, {"b/submission.yaml", "y"}})},
         // Not a zip at all.
         {"dunndee_444444_9000004_kit.zip", "PK\x03\x04 not really"},
         // A zip beside the file it holds: the file handed in is graded.
         {"evanseve_555555_9000005_probe.cu", "// handed in\n"},
         {"evanseve_555555_9000006_kit.zip", make_zip({{"probe.cu", "// zipped\n"}})},
         // Handed in again: Canvas renamed the zip; the latest attempt's files are the download's.
         {"fongfay_666666_9000007_kit-1.zip",
          make_zip({{"probe.cu", kit_probe}, {"submission.yaml", "student_id: f\n"}})}});
    options.class_dir = root / "class";
    options.expected_files = {"probe.cu", "submission.yaml"};
    const CanvasUnpackResult result = unpack_canvas_download(options);
    CHECK(result.unzipped == std::vector<std::string>{"aaronann_111111", "fongfay_666666"});
    CHECK(read_text(options.class_dir / "aaronann_111111" / "probe.cu") == kit_probe);
    CHECK(read_text(options.class_dir / "fongfay_666666" / "probe.cu") == kit_probe);
    std::map<std::string, std::string> refused;
    for (const CanvasZipRefusal& refusal : result.zip_refused) {
        refused[refusal.folder] = refusal.reason;
    }
    REQUIRE(refused.size() == 4);
    CHECK(refused["bakerbo_222222"] ==
          "'kit.zip': 'probe.cu' is a symbolic link: a zip may only hold plain files (zip it with "
          "the files themselves)");
    CHECK(refused["chency_333333"] ==
          "'kit.zip' holds files in more than one folder ('a/probe.cu' and 'b/submission.yaml'): "
          "zip the files, or the one folder holding them");
    CHECK(refused["dunndee_444444"] == "'kit.zip' cannot be read as a zip archive");
    CHECK(refused["evanseve_555555"].find("which the student also handed in beside it") !=
          std::string::npos);
    CHECK(read_text(options.class_dir / "evanseve_555555" / "probe.cu") == "// handed in\n");
    CHECK_FALSE(fs::exists(options.class_dir / "bakerbo_222222" / "probe.cu"));
}

TEST_CASE("the roster is Canvas's gradebook export, with either separator and its own rows") {
    const CanvasRoster roster = read_canvas_roster(kExport);
    REQUIRE(roster.rows.size() == 7);  // not the manual posting row, nor points possible
    CHECK(roster.rows[0].student == "Smith, Jane");
    CHECK(roster.rows[0].id == "123456");
    CHECK(roster.rows[0].sis_user_id == "S001");
    CHECK(roster.rows[0].sis_login_id == "jsmith");
    CHECK(roster.rows[0].section == "GPU 101 Section 1");
    // Canvas writes a name that starts with = as ="...", for spreadsheets: read as the name.
    CHECK(roster.rows[5].student == "=Evil, Eve");
    CHECK(roster.assignments ==
          std::vector<std::string>{"Day 15: shared memory bank conflicts (77001)",
                                   "Homework 1 (77000)"});

    const fs::path root = scratch("roster");
    write_text(root / "semicolons.csv",
               "Student;ID;SIS User ID;SIS Login ID;Section;Day 15 (77001)\r\n"
               "    Points Possible;;;;;15,00\r\n"
               "\"Smith, Jane\";123456;S001;jsmith;GPU 101 Section 1;\r\n");
    const CanvasRoster semicolons = read_canvas_roster(root / "semicolons.csv");
    REQUIRE(semicolons.rows.size() == 1);
    CHECK(semicolons.rows[0].student == "Smith, Jane");
    CHECK(semicolons.assignments == std::vector<std::string>{"Day 15 (77001)"});

    write_text(root / "not-canvas.csv", "name,email\r\nJane,jane@example.edu\r\n");
    try {
        read_canvas_roster(root / "not-canvas.csv");
        FAIL("a file without Canvas's header was read as a roster");
    } catch (const BatchError& error) {
        CHECK(std::string(error.what()).find("Grades, Export") != std::string::npos);
    }
    CHECK_THROWS_AS(read_canvas_roster(root / "absent.csv"), BatchError);
}

TEST_CASE("Canvas's gradebook import holds the graded students, matched by Canvas's user id") {
    const CanvasRoster roster = read_canvas_roster(kExport);
    const auto graded = [](const std::string& folder, Verdict verdict, double score) {
        ClassEntry entry;
        entry.student_folder = folder;
        entry.submission_folder = folder;
        entry.report.verdict = verdict;
        entry.report.score = score;
        entry.report.max_score = 15.0;
        return entry;
    };
    const std::vector<ClassEntry> entries = {
        graded("smithjane_123456", Verdict::pass, 15.0),
        graded("doejohn_LATE_234567", Verdict::fail, 12.0),
        graded("garc\xc3\xad"
               "aana_345678",
               Verdict::fail, 4.0),
        graded("leeminho_456789", Verdict::ungradable, 0.0),
        graded("anon_x8Ab2q", Verdict::pass, 15.0),
        graded("nobody_111111", Verdict::pass, 15.0),
        graded("hand-made-folder", Verdict::pass, 15.0),
    };
    const CanvasGrades grades = match_canvas_grades(roster, entries, 30.0);
    REQUIRE(grades.scores.size() == 3);
    CHECK(grades.scores[0].student.id == "123456");
    CHECK(grades.scores[0].points == doctest::Approx(30.0));  // scaled to the points possible
    CHECK(grades.scores[1].points == doctest::Approx(24.0));  // late: Canvas's policy applies
    CHECK(grades.missing ==
          std::vector<std::string>{"Lee, Minho (456789)", "O'Connor, Pat (567890)",
                                   "=Evil, Eve (678901)", "Student, Test (999999)"});
    std::vector<std::string> not_written;
    for (const NotGraded& left : grades.not_written) {
        not_written.push_back(left.folder);
    }
    CHECK(not_written == std::vector<std::string>{"anon_x8Ab2q", "hand-made-folder",
                                                  "leeminho_456789", "nobody_111111"});

    const std::string csv = write_canvas_gradebook_csv(
        "Day 15: shared memory bank conflicts (77001)", 30.0, grades.scores);
    CHECK(csv.rfind("\xEF\xBB\xBF", 0) == 0);
    const auto rows = records(csv);
    REQUIRE(rows.size() == 5);
    // As Canvas's importer reads it: "Student" then "ID", the SIS columns, "Section" last of the
    // student's, the assignment by the id its title ends with, and a points possible row.
    CHECK(rows[0] == std::vector<std::string>{"Student", "ID", "SIS User ID", "SIS Login ID",
                                              "Section",
                                              "Day 15: shared memory bank conflicts (77001)"});
    CHECK(rows[1][0].find("Points Possible") != std::string::npos);
    CHECK(rows[1][5] == "30");
    CHECK(rows[2] == std::vector<std::string>{"Smith, Jane", "123456", "S001", "jsmith",
                                              "GPU 101 Section 1", "30"});
    CHECK(rows[3][5] == "24");
    CHECK(rows[4][0] ==
          "Garc\xc3\xad"
          "a, Ana");
    CHECK(rows[4][5] == "8");
}

TEST_CASE("a roster name a spreadsheet would run is text in the import, its ids still match") {
    CanvasRosterRow eve{"=HYPERLINK(\"http://x\";\"y\")", "678901", "S006", "-eevil", "A; B"};
    const std::string csv = write_canvas_gradebook_csv("Day 15 (77001)", 15.0, {{eve, 15.0}});
    const auto rows = records(csv);
    REQUIRE(rows.size() == 3);
    CHECK(rows[2][0] == "'=HYPERLINK(\"http://x\";\"y\")");
    CHECK(rows[2][1] == "678901");
    CHECK(rows[2][3] == "-eevil");  // a login id joins as Canvas has it
    CHECK(rows[2][4] == "A; B");
}

TEST_CASE("Canvas in, graded, and out: unpack, batch and the gradebook import, through the CLI") {
    const fs::path root = scratch("cli");
    const fs::path download = make_download(root / "download", class_download());
    const GraderRun unpack = run_grader(
        {"canvas", "unpack", download.string(), (root / "class").string()}, root / "unused");
    INFO(unpack.output);
    REQUIRE(unpack.exit_code == 0);
    CHECK(unpack.output.find("filed 10 files into 5 student folders") != std::string::npos);
    CHECK(unpack.output.find("1 marked late by Canvas") != std::string::npos);
    CHECK(unpack.output.find("1 zips unpacked") != std::string::npos);
    CHECK(unpack.output.find("probe-1.cu is probe.cu") != std::string::npos);
    CHECK(unpack.output.find("handed in a text entry or a URL, not files (oconnorpat_567890)") !=
          std::string::npos);
    CHECK(unpack.output.find("next: grader batch " + (root / "class").string() + " -o RUN\n") !=
          std::string::npos);

    const GraderRun batch = run_grader({"batch", (root / "class").string(), "--output",
                                        (root / "run").string(), "--backend", "sim", "--jobs", "2"},
                                       root / "unused", kNoGpu);
    INFO(batch.output);
    REQUIRE(batch.exit_code == 0);

    const GraderRun grades =
        run_grader({"canvas", "grades", (root / "run").string(), "--roster", kExport.string(), "-o",
                    (root / "canvas-import.csv").string()},
                   root / "unused");
    INFO(grades.output);
    REQUIRE(grades.exit_code == 0);
    // The roster's own column for the exercise: Canvas fills that assignment.
    CHECK(grades.output.find("in the column 'Day 15: shared memory bank conflicts (77001)'") !=
          std::string::npos);
    const auto rows = records(read_text(root / "canvas-import.csv"));
    REQUIRE(rows.size() == 7);  // header, points possible, the five graded students
    std::set<std::string> ids;
    for (std::size_t r = 2; r < rows.size(); ++r) {
        ids.insert(rows[r][1]);
    }
    CHECK(ids == std::set<std::string>{"123456", "234567", "345678", "456789", "567890"});
    CHECK(rows[2][0] == "Smith, Jane");
    CHECK(rows[2][5] == "15");  // the correct fixture, full marks
    CHECK(rows[3][0] == "Doe, John");
    CHECK(rows[3][5] == "15");  // late, and renamed back: graded as handed in
    CHECK(rows[5][0] == "Lee, Minho");
    CHECK(rows[5][5] == "15");  // his zip of the correct kit: 0 before, the zip left unopened
    CHECK(grades.output.find("Evil") != std::string::npos);  // no folder: said, left as it is

    // The roster as Canvas exports it gives the service's tokens too. Before: refused,
    // "gradebook-export.csv:2: no student id in column 4" (its Manual Posting row).
    const GraderRun tokens =
        run_grader({"tokens", "issue", kExport.string(), "--state", (root / "serve").string(), "-o",
                    (root / "tokens.csv").string()},
                   root / "unused");
    INFO(tokens.output);
    REQUIRE(tokens.exit_code == 0);
    CHECK(tokens.output.find("read as Canvas's gradebook export: 6 students") != std::string::npos);
    CHECK(tokens.output.find("left out: 'Student, Test' has no SIS Login ID") != std::string::npos);
    CHECK(read_text(root / "tokens.csv").find("\njsmith,\"Smith, Jane\",gs-") != std::string::npos);
}

TEST_CASE("a Part 2 class from Canvas: graded as Part 2 and written into Part 2's column") {
    const fs::path root = scratch("part2");
    const auto padding = [](const std::string& file) {
        return read_text(fs::path(GRADER_SOURCE_DIR) / "student" / "padding" / "example" / file);
    };
    const fs::path download =
        make_download(root / "download",
                      {{"smithjane_123456_9000001_transpose.cu", padding("transpose.cu")},
                       {"smithjane_123456_9000002_submission.yaml", padding("submission.yaml")},
                       {"doejohn_234567_9000003_transpose-1.cu", padding("transpose.cu")},
                       {"doejohn_234567_9000004_submission.yaml", padding("submission.yaml")}});
    write_text(root / "export.csv",
               "Student,ID,SIS User ID,SIS Login ID,Section,Day 15: shared memory bank conflicts "
               "(77001),\"Day 15, Part 2: a conflict-free transpose tile (77002)\"\r\n"
               "    Points Possible,,,,,15.00,15.00\r\n"
               "\"Smith, Jane\",123456,S001,jsmith,GPU 101,14.00,\r\n"
               "\"Doe, John\",234567,S002,jdoe,GPU 101,14.00,\r\n");
    const GraderRun unpack =
        run_grader({"canvas", "unpack", download.string(), (root / "class").string(), "--roster",
                    (root / "export.csv").string()},
                   root / "unused");
    INFO(unpack.output);
    REQUIRE(unpack.exit_code == 0);
    // John's renamed transpose-1.cu is Part 2's file, given its name back.
    CHECK(fs::exists(root / "class" / "doejohn_234567" / "transpose.cu"));
    CHECK(unpack.output.find("-o RUN --exercise day15-padding") != std::string::npos);

    // The command without --exercise, as an instructor types it: before, 2 of 2 failed as Part
    // 1's work, exit 0.
    const GraderRun batch = run_grader({"batch", (root / "class").string(), "--output",
                                        (root / "run").string(), "--backend", "sim", "--jobs", "2"},
                                       root / "unused", kNoGpu);
    INFO(batch.output);
    REQUIRE(batch.exit_code == 0);
    CHECK(batch.output.find("graded as exercise day15-padding") != std::string::npos);
    CHECK(batch.output.find("2 pass, 0 fail") != std::string::npos);

    const GraderRun grades =
        run_grader({"canvas", "grades", (root / "run").string(), "--roster",
                    (root / "export.csv").string(), "-o", (root / "import.csv").string()},
                   root / "unused");
    INFO(grades.output);
    REQUIRE(grades.exit_code == 0);
    // Before: Part 1's column, "Day 15: shared memory bank conflicts (77001)".
    CHECK(grades.output.find(
              "in the column 'Day 15, Part 2: a conflict-free transpose tile (77002)'") !=
          std::string::npos);
    const auto rows = records(read_text(root / "import.csv"));
    REQUIRE(rows.size() == 4);
    CHECK(rows[0][5] == "Day 15, Part 2: a conflict-free transpose tile (77002)");

    // Another exercise than the run's: refused in one line, nothing written.
    const GraderRun mismatch = run_grader(
        {"canvas", "grades", (root / "run").string(), "--roster", (root / "export.csv").string(),
         "-o", (root / "other.csv").string(), "--exercise", "day15-bank-conflicts"},
        root / "unused");
    CHECK(mismatch.exit_code == 2);
    CHECK(mismatch.output.find("graded exercise day15-padding, not day15-bank-conflicts as "
                               "--exercise says") != std::string::npos);
    CHECK_FALSE(fs::exists(root / "other.csv"));
    // A batch resumed into the run grades the run's exercise, and refuses another.
    const GraderRun resumed =
        run_grader({"batch", (root / "class").string(), "--output", (root / "run").string(),
                    "--backend", "sim", "--resume", "--exercise", "day15-bank-conflicts"},
                   root / "unused", kNoGpu);
    CHECK(resumed.exit_code == 2);
    CHECK(resumed.output.find("graded exercise day15-padding") != std::string::npos);
}
