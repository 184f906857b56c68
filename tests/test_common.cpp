#include <doctest/doctest.h>

#include <cmath>
#include <fstream>

#include "common/text.hpp"

using namespace grader;

TEST_CASE("templates fill the names they know and leave the rest for a reader to see") {
    CHECK(fill_template("{kernel} compiled for {arch}", {{"kernel", "probe"}, {"arch", "sm_90"}}) ==
          "probe compiled for sm_90");
    CHECK(fill_template("{unknown} stays", {}) == "{unknown} stays");
    CHECK(fill_template("an open { brace", {{"x", "y"}}) == "an open { brace");
}

TEST_CASE("the first byte that is not UTF-8 is found by line and column") {
    CHECK_FALSE(first_invalid_utf8("plain ascii\nand é ü 中文 🙂").has_value());
    const auto bad = first_invalid_utf8("line one\nab\xff");
    REQUIRE(bad);
    CHECK(bad->line == 2);
    CHECK(bad->column == 3);
    CHECK(first_invalid_utf8("\xc0\x80").has_value());      // overlong
    CHECK(first_invalid_utf8("\xed\xa0\x80").has_value());  // a surrogate
    CHECK(first_invalid_utf8("\xe2\x82").has_value());      // cut short
}

TEST_CASE("reading a file is bounded and says why it failed") {
    const auto dir = std::filesystem::temp_directory_path() / "grader-test-common";
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

TEST_CASE("an atomic write replaces the whole file and leaves no temporary behind") {
    const auto dir = std::filesystem::temp_directory_path() / "grader-test-atomic";
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
