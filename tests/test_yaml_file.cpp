// The hostile-YAML layer under both readers: a file bounded, checked and parsed, every failure
// returned with its line and column (never thrown), keys complained about with their place. Its
// callers decide whose mistake it was (tests/test_exercise.cpp, tests/test_answers.cpp).

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exercise/exercise.hpp"
#include "exercise/yaml_file.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;
using grader::yaml_file::parse_yaml_file;
using grader::yaml_file::ParsedFile;

namespace {

// Parses TEXT written to a file of this program's scratch folder, bounded at max_bytes.
ParsedFile parsed(const std::string& name, const std::string& text,
                  std::size_t max_bytes = 64 * 1024) {
    const fs::path file = grader::testing::scratch_root("yaml_file") / name;
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << text;
    return parse_yaml_file(file, name, max_bytes, "test file");
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a good map parses, and nothing is said against it") {
    const ParsedFile file = parsed("good.yaml", "a: 1\nb: [2, 3]\n");
    REQUIRE(file.root.has_value());
    CHECK_FALSE(file.failure_location.has_value());
    CHECK(grader::yaml_file::find_value(*file.root, "b").size() == 2);
    CHECK_FALSE(grader::yaml_file::find_value(*file.root, "c").IsDefined());
}

TEST_CASE("each way a file is unreadable comes back with its place, never as an exception") {
    struct Case {
        const char* name;
        std::string text;
        std::size_t max_bytes;
        int line;
        int column;
        const char* message_part;
    };
    const std::string deep = "a: " + std::string(70, '[') + std::string(70, ']') + "\n";
    const Case cases[] = {
        {"large", std::string(200, '#') + "\n", 100, 0, 0, "cannot read the test file"},
        {"latin1", "a: 1\nb: \"r\xe9sum\xe9\"\n", 1024, 2, 6, "not UTF-8"},
        {"deep", deep, 1024, 1, 67, "nests more than 64 levels"},
        {"two_documents", "a: 1\n---\nb: 2\n", 1024, 2, 1, "more than one YAML document"},
        {"unclosed", "a: [1, 2\nb: 3\n", 1024, 2, 0, "YAML syntax error"},
        {"empty", "# only a comment\n", 1024, 1, 1, "is empty"},
        {"list", "- 1\n- 2\n", 1024, 1, 1, "expected a map of keys"},
        {"missing", "", 1024, 0, 0, "cannot read"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.name);
        const ParsedFile file =
            std::string(c.name) == "missing"
                ? parse_yaml_file(grader::testing::scratch_root("yaml_file") / "absent.yaml",
                                  "absent.yaml", c.max_bytes, "test file")
                : parsed(std::string(c.name) + ".yaml", c.text, c.max_bytes);
        CHECK_FALSE(file.root.has_value());
        REQUIRE(file.failure_location.has_value());
        CAPTURE(file.failure);
        CHECK(file.failure_location->line == c.line);
        if (c.column > 0) {
            CHECK(file.failure_location->column == c.column);
        }
        CHECK(contains(file.failure, c.message_part));
    }
}

TEST_CASE("a map's unknown, duplicated and non-text keys are complaints at the key") {
    const ParsedFile file = parsed("keys.yaml", "input_word: 1\nbanks: 2\nbanks: 3\n[x]: 4\n");
    REQUIRE(file.root.has_value());
    const auto complaints =
        grader::yaml_file::key_complaints(*file.root, "buffers", {"input_words", "banks"});
    REQUIRE(complaints.size() == 3);
    CHECK(complaints[0].field == "buffers.input_word");
    CHECK(contains(complaints[0].message, "did you mean 'input_words'?"));
    CHECK(complaints[0].mark.line == 0);
    CHECK(complaints[1].field == "buffers.banks");
    CHECK(contains(complaints[1].message, "appears twice (first on line 2)"));
    CHECK(complaints[1].mark.line == 2);
    CHECK(contains(complaints[2].message, "expected a plain key"));
    // A duplicate never confuses the lookup: the first value is the one found.
    CHECK(grader::yaml_file::find_value(*file.root, "banks").Scalar() == "2");
}

TEST_CASE("plain scalars are read strictly") {
    using grader::yaml_file::parse_bool;
    using grader::yaml_file::parse_integer;
    using grader::yaml_file::parse_number;
    CHECK(parse_integer("+42") == 42);
    CHECK(parse_integer("-7") == -7);
    CHECK_FALSE(parse_integer("4.0").has_value());
    CHECK_FALSE(parse_integer("0x10").has_value());
    CHECK(parse_number("2.5") == 2.5);
    CHECK_FALSE(parse_number(".inf").has_value());
    CHECK_FALSE(parse_number("nan").has_value());
    CHECK(parse_bool("True") == true);
    CHECK_FALSE(parse_bool("yes").has_value());
    CHECK(grader::yaml_file::location_of("f", YAML::Mark::null_mark()).line == 0);
}
