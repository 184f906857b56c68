#pragma once

// Where a test finds the source tree, its fixtures and the built grader: relative to the test
// program's own folder, as the build laid them out when it was configured. No machine's absolute
// path is compiled in, so a checkout and its build folder carried anywhere (another machine,
// another folder) still find each other. Every test program has this header included first (the
// compile option -include, tests/CMakeLists.txt), with the paths CMake computed beside it.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace grader::testing {

// The folder of the running test program, from /proc/self/exe (a link the kernel keeps right), or
// from GRADER_TEST_PROGRAM_FOLDER where the program is run through the loader (ld.so
// --inhibit-cache PROGRAM, tests/test_runpath.sh), whose /proc/self/exe is the loader.
inline const std::filesystem::path& test_program_folder() {
    static const std::filesystem::path folder = [] {
        if (const char* given = std::getenv("GRADER_TEST_PROGRAM_FOLDER");
            given != nullptr && *given != '\0') {
            return std::filesystem::absolute(given);
        }
        return std::filesystem::read_symlink("/proc/self/exe").parent_path();
    }();
    return folder;
}

// `relative` (from the test program's folder) made absolute, without "..", without a final "/".
inline std::string from_test_program(const char* relative) {
    std::string path = (test_program_folder() / relative).lexically_normal().string();
    while (path.size() > 1 && path.back() == '/') {
        path.pop_back();
    }
    return path;
}

// A test program's own scratch folder, named for the program and its process (other builds of the
// grader on the same machine run these tests too, and must not remove or grade into each other's
// folders), removed when the program ends. The first call's name holds for the program.
inline const std::filesystem::path& scratch_root(const std::string& program) {
    static const struct Root {
        std::filesystem::path path;
        ~Root() {
            std::error_code ignored;
            std::filesystem::remove_all(path, ignored);
        }
    } root{std::filesystem::temp_directory_path() /
           ("grader-test-" + program + "-" + std::to_string(::getpid()))};
    return root.path;
}

}  // namespace grader::testing

#define GRADER_SOURCE_DIR (::grader::testing::from_test_program(GRADER_TESTS_TO_SOURCE))
#define GRADER_FIXTURES_DIR (::grader::testing::from_test_program(GRADER_TESTS_TO_FIXTURES))
#define GRADER_BINARY (::grader::testing::from_test_program(GRADER_TESTS_TO_GRADER))
