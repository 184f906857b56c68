// grader serve's parts without HTTP: tokens kept hashed, the roster, the fair queue, a restart,
// the rate limit, and every way an upload is refused.

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/text.hpp"
#include "exercise/exercise.hpp"
#include "grader_run.hpp"
#include "serve/roster.hpp"
#include "serve/service.hpp"
#include "serve/store.hpp"
#include "serve/tokens.hpp"
#include "serve/upload.hpp"
#include "serve/zip_maker.hpp"
#include "test_paths.hpp"

using namespace grader;
using namespace grader::serve;
namespace fs = std::filesystem;

namespace {

fs::path fresh_folder(const std::string& name) {
    const fs::path folder = grader::testing::scratch_root("serve") / name;
    fs::remove_all(folder);
    fs::create_directories(folder);
    return folder;
}

std::string part(const std::string& boundary, const std::string& disposition,
                 const std::string& bytes) {
    return "--" + boundary + "\r\nContent-Disposition: form-data; " + disposition + "\r\n\r\n" +
           bytes + "\r\n";
}

Upload parse(const std::string& body, const UploadLimits& limits = {}) {
    return parse_multipart(body, "b0und", limits);
}

int upload_status(const std::string& body, const UploadLimits& limits = {}) {
    try {
        parse(body, limits);
    } catch (const UploadError& error) {
        return error.status();
    }
    return 0;
}

std::string upload_message(const std::string& body, const UploadLimits& limits = {}) {
    try {
        parse(body, limits);
    } catch (const UploadError& error) {
        return error.what();
    }
    return {};
}

std::string one_file(const std::string& name, const std::string& bytes) {
    return part("b0und", "name=\"files\"; filename=\"" + name + "\"", bytes) + "--b0und--\r\n";
}

Exercise exercise_named(const std::string& id, const std::string& source) {
    Exercise exercise;
    exercise.id = id;
    exercise.title = id;
    exercise.submission_source = source;
    exercise.submission_answers = "submission.yaml";
    return exercise;
}

}  // namespace

TEST_CASE("a token is kept as its hash: the state file never holds it, and it finds its owner") {
    const fs::path folder = fresh_folder("tokens");
    std::string token;
    {
        Store store(folder / "state.sqlite");
        token = store.issue_token("ann", "Ann Lee", Role::student, std::nullopt, 1000);
        CHECK(looks_like_token(token));
        const auto person = store.person_by_token(token);
        REQUIRE(person);
        CHECK(person->login == "ann");
        CHECK(person->name == "Ann Lee");
        std::string altered = token;  // one character changed: its last, to another digit
        altered.back() = altered.back() == '0' ? '1' : '0';
        CHECK_FALSE(store.person_by_token(altered));
        CHECK_FALSE(store.person_by_token("ann"));
    }
    // The hash is SHA-256 (FIPS 180-4's example "abc"): a state file an earlier build wrote still
    // finds its owners.
    const TokenHash abc = hash_token("abc");
    CHECK(hex_bytes(std::string_view(reinterpret_cast<const char*>(abc.data()), abc.size())) ==
          "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    for (const auto& file : fs::directory_iterator(folder)) {
        const std::string bytes = grader::testing::read_text(file.path());
        CHECK_MESSAGE(bytes.find(token) == std::string::npos, file.path());
        CHECK_MESSAGE(bytes.find(token.substr(3)) == std::string::npos, file.path());
    }
    SUBCASE("a new token replaces the old one, and a revoked one finds no one") {
        Store store(folder / "state.sqlite");
        const std::string second = store.issue_token("ann", "", Role::student, std::nullopt, 2000);
        CHECK_FALSE(store.person_by_token(token));
        REQUIRE(store.person_by_token(second));
        CHECK(store.person_by_token(second)->name == "Ann Lee");  // kept where none is given
        CHECK(store.revoke("ann"));
        CHECK_FALSE(store.person_by_token(second));
        CHECK_FALSE(store.revoke("nobody"));
    }
}

TEST_CASE("a service says why a token is refused: missing, malformed, unknown, expired") {
    ServiceOptions options;
    options.state_dir = fresh_folder("auth") / "state";
    options.exercises = {exercise_named("day15-bank-conflicts", "probe.cu")};
    Service service(options);
    const std::string token =
        service.store().issue_token("bo", "", Role::student, std::int64_t{5000}, 1000);
    CHECK(service.authenticate(token, 4000).login == "bo");
    const auto refusal = [&](const std::string& given, double now) -> std::string {
        try {
            service.authenticate(given, now);
        } catch (const ServiceError& error) {
            CHECK(error.status() == 401);
            return error.what();
        }
        return "accepted";
    };
    CHECK(refusal("", 4000).find("no token") != std::string::npos);
    CHECK(refusal("gs-123", 4000).find("copied whole") != std::string::npos);
    CHECK(refusal("gs-" + std::string(48, 'a'), 4000).find("not known") != std::string::npos);
    CHECK(refusal(token, 6000).find("expired on 1970-01-01 01:23 UTC") != std::string::npos);
}

TEST_CASE("a roster is read with or without a header, quoted fields and a byte-order mark") {
    SUBCASE("a header names the id and name columns") {
        const auto students =
            parse_roster(
                "\xEF\xBB\xBFName,SIS Login ID,Section\r\n\"Lee, Ann\",ann,A\r\n\"Bo "
                "\"\"B\"\" Chen\",bo,B\r\n\r\n",
                "roster.csv")
                .students;
        REQUIRE(students.size() == 2);
        CHECK(students[0].id == "ann");
        CHECK(students[0].name == "Lee, Ann");
        CHECK(students[1].name == "Bo \"B\" Chen");
        CHECK(students[1].line == 3);
    }
    SUBCASE("without a header the first column is the id") {
        const auto students = parse_roster("ann,Ann Lee\nbo\n", "roster.csv").students;
        REQUIRE(students.size() == 2);
        CHECK(students[0].id == "ann");
        CHECK(students[0].name == "Ann Lee");
        CHECK(students[1].name.empty());
    }
    SUBCASE("ids that compare equal, an empty id, a control character are refused by line") {
        const auto refusal = [](const std::string& text) -> std::string {
            try {
                parse_roster(text, "roster.csv");
            } catch (const RosterError& error) {
                return error.what();
            }
            return "accepted";
        };
        CHECK(refusal("login\nann\nANN\n") ==
              "roster.csv:3: student 'ANN' is the same id as line 2's (ids are compared as "
              "text::id_key does: case and look-alike letters aside)");
        CHECK(refusal("login,name\nann,A\n,B\n").rfind("roster.csv:3: no student id", 0) == 0);
        CHECK(
            refusal("ann\nb\x1b[2Jo\n").rfind("roster.csv:2: the id or name holds a control", 0) ==
            0);
        CHECK(refusal("\"ann\n").rfind("roster.csv:1: a quoted field is never closed", 0) == 0);
        CHECK(refusal("").find("the roster is empty") != std::string::npos);
    }
}

TEST_CASE("the course platforms' own roster exports are read as they are") {
    const fs::path rosters = fs::path(GRADER_FIXTURES_DIR) / "rosters";
    SUBCASE(
        "Canvas's gradebook export: its Manual Posting and Points Possible rows, and its test "
        "student, are no students") {
        // Refused before: "gradebook-export.csv:2: no student id in column 4".
        const Roster roster =
            read_roster(fs::path(GRADER_FIXTURES_DIR) / "canvas" / "gradebook-export.csv");
        CHECK(roster.format == "Canvas's gradebook export");
        REQUIRE(roster.students.size() == 6);
        CHECK(roster.students[0].id == "jsmith");
        CHECK(roster.students[0].name == "Smith, Jane");
        CHECK(roster.students[5].id == "eevil");
        CHECK(roster.students[5].name == "=Evil, Eve");  // Canvas's ="..." guard is not the name
        REQUIRE(roster.left_out.size() == 3);
        CHECK(roster.left_out[0].line == 2);
        CHECK(roster.left_out[0].why.find("Manual Posting") != std::string::npos);
        CHECK(roster.left_out[1].line == 3);
        CHECK(roster.left_out[1].why == "Canvas's Points Possible row");
        CHECK(roster.left_out[2].why ==
              "'Student, Test' has no SIS Login ID (Canvas's Test Student has none): no token");
    }
    SUBCASE("Canvas's export with first and last names and a semicolon for a comma") {
        const Roster roster = parse_roster(
            "LastName,FirstName,ID,SIS User ID,SIS Login ID,Section,Day 15 (77001)\r\n"
            "    Points Possible,,,,,,15.00\r\nSmith,Jane,123456,S001,jsmith,GPU 101,\r\n",
            "export.csv");
        REQUIRE(roster.students.size() == 1);
        CHECK(roster.students[0].name == "Jane Smith");
    }
    SUBCASE("Moodle's grade export, with 'Last name' or an older Moodle's 'Surname'") {
        const Roster roster = read_roster(rosters / "moodle-grade-export.csv");
        CHECK(roster.format == "Moodle's grade export");
        REQUIRE(roster.students.size() == 2);
        CHECK(roster.students[0].id == "student7@mail.com");
        CHECK(roster.students[0].name == "Anne Able");
        CHECK(roster.left_out.empty());
        const Roster older = read_roster(rosters / "moodle-grade-export-surname.csv");
        REQUIRE(older.students.size() == 1);
        CHECK(older.students[0].id == "student7@mail.com");
    }
    SUBCASE("PrairieLearn's gradebook: staff and users of no role are no students") {
        const Roster roster = read_roster(rosters / "prairielearn-gradebook.csv");
        CHECK(roster.format == "PrairieLearn's gradebook");
        REQUIRE(roster.students.size() == 2);
        CHECK(roster.students[0].id == "ann@example.edu");
        CHECK(roster.students[0].name == "Ann Lee");
        CHECK(roster.students[1].id == "bo@example.edu");
        REQUIRE(roster.left_out.size() == 2);
        CHECK(roster.left_out[0].line == 2);
        CHECK(roster.left_out[0].why.find("'prof@example.edu' is staff, not a student") !=
              std::string::npos);
        CHECK(roster.left_out[1].line == 5);
        CHECK(roster.left_out[1].why.find("of no role in the course (Role 'None')") !=
              std::string::npos);
    }
}

TEST_CASE("the queue is fair: one student's ten grades do not delay the others' one") {
    const fs::path folder = fresh_folder("fair");
    Store store(folder / "state.sqlite");
    std::map<std::string, std::int64_t> people;
    for (const char* login : {"many", "b", "c", "d", "e", "late"}) {
        store.issue_token(login, "", Role::student, std::nullopt, 0);
        people[login] = store.person_by_login(login)->id;
    }
    std::map<std::int64_t, std::string> owner;
    const auto add = [&](const std::string& login, double at) {
        const std::int64_t id = store.add_attempt(people[login], "x", "f" + std::to_string(at),
                                                  {"probe.cu"}, {Lane::sim, Lane::gpu}, at);
        owner[id] = login;
    };
    for (int i = 0; i < 10; ++i) {
        add("many", i);
    }
    for (const char* login : {"b", "c", "d", "e"}) {
        add(login, 20);
    }
    std::vector<std::string> order;
    for (int i = 0; i < 4; ++i) {
        order.push_back(owner[store.claim_next(Lane::gpu, 30)->attempt]);
    }
    // "late" comes once two rounds have begun: after the round being served, before "many"'s
    // third.
    add("late", 31);
    while (const auto job = store.claim_next(Lane::gpu, 40)) {
        order.push_back(owner[job->attempt]);
    }
    CHECK(order == std::vector<std::string>{"many", "b", "c", "d", "e", "many", "late", "many",
                                            "many", "many", "many", "many", "many", "many",
                                            "many"});
    // The simulator's lane has a queue of its own, as fair.
    CHECK(owner[store.claim_next(Lane::sim, 50)->attempt] == "many");
    CHECK(owner[store.claim_next(Lane::sim, 50)->attempt] == "b");
}

TEST_CASE("a place in the queue counts the grades ahead, and a restart loses none") {
    const fs::path folder = fresh_folder("restart");
    std::vector<std::int64_t> attempts;
    {
        Store store(folder / "state.sqlite");
        store.issue_token("ann", "", Role::student, std::nullopt, 0);
        const std::int64_t ann = store.person_by_login("ann")->id;
        for (int i = 0; i < 4; ++i) {
            attempts.push_back(
                store.add_attempt(ann, "x", "f" + std::to_string(i), {"probe.cu"}, {Lane::gpu}, i));
        }
        CHECK(store.place(attempts[3], Lane::gpu).ahead == 3);
        REQUIRE(store.claim_next(Lane::gpu, 10)->attempt == attempts[0]);
        REQUIRE(store.claim_next(Lane::gpu, 10)->attempt == attempts[1]);
        const QueuePlace place = store.place(attempts[3], Lane::gpu);
        CHECK(place.ahead == 1);
        CHECK(place.running == 2);
        store.finish(attempts[1], Lane::gpu, "pass", 13, 13, "all checks passed", 11);
    }  // the service dies here, attempts[0] running
    Store store(folder / "state.sqlite");
    const auto [requeued, given_up] = store.resume(3, 20);
    CHECK(requeued == 1);
    CHECK(given_up == 0);
    CHECK(store.attempt(attempts[0])->job(Lane::gpu)->state == JobState::queued);
    CHECK(store.attempt(attempts[1])->job(Lane::gpu)->verdict == "pass");
    // It keeps its place: first again.
    const auto first = store.claim_next(Lane::gpu, 21);
    CHECK(first->attempt == attempts[0]);
    CHECK(first->starts == 2);
    SUBCASE("a grade the service died during three times is given up, with why") {
        store.resume(3, 22);
        store.claim_next(Lane::gpu, 23);
        const auto [again, gave_up] = store.resume(3, 24);
        CHECK(again == 0);
        CHECK(gave_up == 1);
        const Attempt attempt = *store.attempt(attempts[0]);
        const Job* job = attempt.job(Lane::gpu);
        CHECK(job->state == JobState::done);
        CHECK(job->verdict == "ungradable");
        CHECK(job->summary.find("stopped during this grade 3 times") != std::string::npos);
    }
}

TEST_CASE("a student past the instructor's rate is told when the next attempt is allowed") {
    ServiceOptions options;
    options.state_dir = fresh_folder("rate") / "state";
    options.exercises = {exercise_named("day15-bank-conflicts", "probe.cu"),
                         exercise_named("day15-padding", "transpose.cu")};
    options.rate = {2, 600.0};
    Service service(options);  // not started: nothing grades, the queue only fills
    service.store().issue_token("ann", "", Role::student, std::nullopt, 0);
    const Person ann = *service.store().person_by_login("ann");
    Upload upload;
    upload.files = {{"probe.cu", "__global__ void k() {}"}, {"submission.yaml", "id: ann\n"}};
    const Attempt first = service.submit(ann, upload, 1000);
    CHECK(first.exercise == "day15-bank-conflicts");
    CHECK(first.number == 1);
    CHECK(first.files == std::vector<std::string>{"probe.cu", "submission.yaml"});
    REQUIRE(service.submitted_file(first, "probe.cu"));
    CHECK(*service.submitted_file(first, "probe.cu") == "__global__ void k() {}");
    CHECK_FALSE(service.submitted_file(first, "../state.sqlite"));
    service.submit(ann, upload, 1100);
    try {
        service.submit(ann, upload, 1200);
        FAIL("a third attempt within the window was taken");
    } catch (const ServiceError& error) {
        CHECK(error.status() == 429);
        CHECK(error.retry_after() == doctest::Approx(400.0));
        CHECK(std::string(error.what()).find("your next is allowed in 7 minutes") !=
              std::string::npos);
    }
    CHECK(service.submit(ann, upload, 1601).number == 3);

    SUBCASE("the exercise is the one named, or the one whose kernel file came") {
        Upload part2;
        part2.files = {{"transpose.cu", "x"}};
        CHECK(service.submit(ann, part2, 5000).exercise == "day15-padding");
        part2.fields["exercise"] = "day99";
        CHECK_THROWS_WITH_AS(service.submit(ann, part2, 6000),
                             "this service grades no exercise 'day99'; it grades "
                             "day15-bank-conflicts, day15-padding",
                             ServiceError);
        part2.fields["exercise"] = "day15-bank-conflicts";
        CHECK_THROWS_WITH_AS(service.submit(ann, part2, 7000),
                             "'transpose.cu' is not a file day15-bank-conflicts takes: send "
                             "probe.cu and submission.yaml (or a zip of them)",
                             ServiceError);
    }
    SUBCASE("another student's attempt is not found, whether or not it exists") {
        service.store().issue_token("bo", "", Role::student, std::nullopt, 0);
        const Person bo = *service.store().person_by_login("bo");
        CHECK_THROWS_WITH_AS(service.visible_attempt(bo, first.id),
                             ("no attempt " + std::to_string(first.id) + " of yours").c_str(),
                             ServiceError);
        service.store().issue_token("prof", "", Role::instructor, std::nullopt, 0);
        CHECK(service.visible_attempt(*service.store().person_by_login("prof"), first.id).login ==
              "ann");
    }
}

TEST_CASE("an upload's form is read into plain files, and every bad upload is refused clearly") {
    SUBCASE("two files and the exercise field") {
        const Upload upload =
            parse(part("b0und", "name=\"exercise\"", "day15-padding") +
                  part("b0und", "name=\"files\"; filename=\"probe.cu\"", "a\r\nb") +
                  part("b0und", "name=\"files\"; filename=\"C:\\\\me\\\\submission.yaml\"", "y") +
                  "--b0und--\r\n");
        CHECK(upload.fields.at("exercise") == "day15-padding");
        REQUIRE(upload.files.size() == 2);
        CHECK(upload.files[0].name == "probe.cu");
        CHECK(upload.files[0].bytes == "a\r\nb");
        CHECK(upload.files[1].name == "submission.yaml");
    }
    SUBCASE("not a form, no boundary, a body cut short, no file") {
        CHECK_THROWS_AS(multipart_boundary("application/json"), UploadError);
        CHECK_THROWS_AS(multipart_boundary("multipart/form-data"), UploadError);
        CHECK(multipart_boundary("multipart/form-data; boundary=\"x y\"") == "x y");
        CHECK(upload_status(part("b0und", "name=\"files\"; filename=\"probe.cu\"", "abc")) == 400);
        CHECK(upload_message("--b0und--\r\n").find("holds no file") != std::string::npos);
    }
    SUBCASE("a name with '..', a folder or a control character; the same name twice") {
        CHECK(upload_message(one_file("..", "x")).find("not a plain file name") !=
              std::string::npos);
        CHECK(upload_status(one_file("a\x1b[31m.cu", "x")) == 400);
        CHECK(upload_status(one_file("../../etc/passwd", "x")) == 400);
        CHECK(upload_message(part("b0und", "name=\"f\"; filename=\"probe.cu\"", "1") +
                             part("b0und", "name=\"f\"; filename=\"probe.cu\"", "2") +
                             "--b0und--\r\n")
                  .find("two files are named 'probe.cu'") != std::string::npos);
    }
    SUBCASE("too many files, a file too large, files too large together") {
        std::string many;
        for (int i = 0; i < 9; ++i) {
            many += part("b0und", "name=\"f\"; filename=\"f" + std::to_string(i) + "\"", "x");
        }
        CHECK(upload_message(many + "--b0und--\r\n").find("too many files: at most 8") !=
              std::string::npos);
        UploadLimits small;
        small.max_file_bytes = 1000;
        small.max_total_bytes = 1500;
        CHECK(upload_status(one_file("probe.cu", std::string(1001, 'x')), small) == 413);
        CHECK(upload_message(one_file("probe.cu", std::string(1001, 'x')), small) ==
              "'probe.cu' is 1 KB: a file may be at most 1 KB");
        CHECK(upload_status(part("b0und", "name=\"f\"; filename=\"a\"", std::string(900, 'x')) +
                                part("b0und", "name=\"f\"; filename=\"b\"", std::string(900, 'x')) +
                                "--b0und--\r\n",
                            small) == 413);
    }
}

TEST_CASE("a zip gives its files, from one folder down too, and is refused for links and '..'") {
    using grader::testing::make_zip;
    const auto zip_upload = [](const std::string& zip, const UploadLimits& limits = {}) {
        return parse(one_file("work.zip", zip), limits);
    };
    const auto zip_refusal = [&](const std::string& zip, const UploadLimits& limits = {}) {
        try {
            zip_upload(zip, limits);
        } catch (const UploadError& error) {
            return std::to_string(error.status()) + " " + error.what();
        }
        return std::string("accepted");
    };
    SUBCASE("a zipped folder, with what macOS adds left out") {
        const Upload upload = zip_upload(make_zip({{"my-probe/", "", S_IFDIR | 0755},
                                                   {"my-probe/probe.cu", "kernel"},
                                                   {"my-probe/submission.yaml", "answers"},
                                                   {"__MACOSX/my-probe/._probe.cu", "junk"},
                                                   {"my-probe/.DS_Store", "junk"}}));
        REQUIRE(upload.files.size() == 2);
        CHECK(upload.files[0].name == "probe.cu");
        CHECK(upload.files[0].bytes == "kernel");
        CHECK(upload.files[1].name == "submission.yaml");
    }
    SUBCASE("a zip made on Windows (no Unix mode) reads the same") {
        const Upload upload = zip_upload(make_zip({{"probe.cu", "k", 0, false}}));
        REQUIRE(upload.files.size() == 1);
        CHECK(upload.files[0].bytes == "k");
    }
    SUBCASE("a symbolic link") {
        CHECK(zip_refusal(make_zip({{"probe.cu", "/etc/passwd", S_IFLNK | 0777}})) ==
              "400 'work.zip': 'probe.cu' is a symbolic link: a zip may only hold plain files "
              "(zip it with the files themselves)");
    }
    SUBCASE("a name that climbs out, or starts at the root") {
        CHECK(zip_refusal(make_zip({{"../probe.cu", "k"}})) ==
              "400 'work.zip': '../probe.cu' climbs out of the zip with '..': refused");
        CHECK(zip_refusal(make_zip({{"a/../../probe.cu", "k"}})).find("climbs out") !=
              std::string::npos);
        CHECK(zip_refusal(make_zip({{"/etc/probe.cu", "k"}})).find("has an absolute name") !=
              std::string::npos);
        CHECK(zip_refusal(make_zip({{"a\\..\\probe.cu", "k"}})).find("climbs out") !=
              std::string::npos);
    }
    SUBCASE("files in two folders, too many, one that unzips too large, a damaged zip") {
        // Both entries named whole, folder and all: the first was named '' (moved out before).
        CHECK(zip_refusal(make_zip({{"a/probe.cu", "k"}, {"b/submission.yaml", "y"}})) ==
              "400 'work.zip' holds files in more than one folder ('a/probe.cu' and "
              "'b/submission.yaml'): zip the files, or the one folder holding them");
        std::vector<grader::testing::ZipEntry> many;
        for (int i = 0; i < 70; ++i) {
            many.push_back({"f" + std::to_string(i), "x"});
        }
        CHECK(zip_refusal(make_zip(many)).find("lists 70 entries: too many files") !=
              std::string::npos);
        UploadLimits small;
        small.max_file_bytes = 1000;
        // 10 MB of zeros compress to a few KB: the size once unzipped is what counts.
        CHECK(zip_refusal(make_zip({{"probe.cu", std::string(10 << 20, '\0')}}), small)
                  .rfind("413 'work.zip': 'probe.cu' is 10.0 MB unzipped", 0) == 0);
        std::string damaged = make_zip({{"probe.cu", std::string(5000, 'k')}});
        damaged[60] = static_cast<char>(damaged[60] ^ 0x55);
        CHECK(zip_refusal(damaged).rfind("400 ", 0) == 0);
        CHECK(zip_refusal("PK\x03\x04 not really").find("cannot be read as a zip") !=
              std::string::npos);
    }
}
