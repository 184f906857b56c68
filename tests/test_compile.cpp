#include <doctest/doctest.h>
#include <nvrtc.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "common/files.hpp"
#include "common/text.hpp"
#include "compile/compile.hpp"
#include "compile/compile_cache.hpp"
#include "compile/cubin.hpp"
#include "compile/nvrtc_api.hpp"
#include "compile/nvrtc_library.hpp"
#include "exercise/exercise.hpp"
#include "isolation/confine.hpp"
#include "model/json.hpp"
#include "model/measurements.hpp"
#include "test_paths.hpp"

using grader::SourceProblem;

// This test binary is also its own compile child, run as `test_compile --compile-child [flags]`:
// the one place where a request's vet == false is honoured (`grader __compile` never honours
// it), so that the confinement can be shown to hold by itself. The mode is picked before
// doctest's main runs, from a static initializer, as in test_isolation.
namespace {

std::vector<std::string> own_command_line() {
    std::ifstream file("/proc/self/cmdline", std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(file)),
                           std::istreambuf_iterator<char>());
    std::vector<std::string> arguments;
    std::string current;
    for (const char c : text) {
        if (c == '\0') {
            arguments.push_back(current);
            current.clear();
        } else {
            current += c;
        }
    }
    return arguments;
}

void write_line(int fd, const std::string& text) {
    const std::string line = text + "\n";
    [[maybe_unused]] const ssize_t written = ::write(fd, line.data(), line.size());
}

// Children that misbehave after reaching the student's source, as a compiler might.
int misbehave(const std::string& how) {
    write_line(3, R"({"stage":"compiling","confinement":"test child","files_closed":false})");
    if (how == "crash") {
        std::raise(SIGSEGV);
    } else if (how == "hang") {
        std::this_thread::sleep_for(std::chrono::seconds(60));
    } else if (how == "allocate") {
        std::vector<std::vector<char>> blocks;
        for (int i = 0; i < 64; ++i) {
            blocks.emplace_back(std::size_t{16} << 20, 'x');
        }
        std::this_thread::sleep_for(std::chrono::seconds(60));
    }
    return 3;
}

const bool served_compile = [] {
    const std::vector<std::string> arguments = own_command_line();
    if (arguments.size() >= 2 && arguments[1] == "--compile-child") {
        grader::CompileServiceOptions options;
        for (std::size_t i = 2; i < arguments.size(); ++i) {
            if (arguments[i] == "--unvetted") {
                options.honour_unvetted_requests = true;
            } else if (arguments[i] == "--builtins-after-confining") {
                options.load_nvrtc_first = false;
            } else if (arguments[i] == "--die-before-compiling") {
                std::_Exit(9);
            } else if (arguments[i].rfind("--misbehave=", 0) == 0) {
                std::_Exit(misbehave(arguments[i].substr(12)));
            }
        }
        std::_Exit(grader::serve_compile_request(0, 3, options));
    }
    return false;
}();

std::string own_executable() {
    std::vector<char> path(4096);
    const ssize_t length = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
    REQUIRE(length > 0);
    return std::string(path.data(), static_cast<std::size_t>(length));
}

grader::UntrustedCompileOptions test_child(std::vector<std::string> flags = {}) {
    grader::UntrustedCompileOptions options;
    options.grader_executable = own_executable();
    options.arguments = {"--compile-child"};
    options.arguments.insert(options.arguments.end(), flags.begin(), flags.end());
    return options;
}

grader::UntrustedCompileOptions real_grader() {
    grader::UntrustedCompileOptions options;
    options.grader_executable = GRADER_BINARY;
    return options;
}

// A temporary file holding a fresh random token, removed with the object.
class TokenFile {
public:
    explicit TokenFile(const std::string& content_around_token = "@TOKEN@\n") {
        std::random_device random;
        token_ = "grader_token_" + std::to_string(random()) + "_" + std::to_string(random());
        // The path is the student's own text in a quoted source line: it must not hold the token.
        directory_ =
            std::filesystem::temp_directory_path() /
            ("grader-token-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
        std::filesystem::create_directories(directory_);
        path_ = directory_ / "token.txt";
        std::string content = content_around_token;
        content.replace(content.find("@TOKEN@"), 7, token_);
        std::ofstream(path_) << content;
    }
    TokenFile(const TokenFile&) = delete;
    TokenFile& operator=(const TokenFile&) = delete;
    ~TokenFile() {
        std::error_code ignored;
        std::filesystem::remove_all(directory_, ignored);
    }
    const std::string& token() const { return token_; }
    std::string path() const { return path_.string(); }

private:
    std::string token_;
    std::filesystem::path directory_;
    std::filesystem::path path_;
};

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

bool confinement_offered() {
    return grader::confinement_support().confines();
}

const std::vector<std::string> kAllowed = {"day15_probe.h"};

std::string read_text(const std::filesystem::path& path) {
    std::ifstream file(path, std::ios::binary);
    REQUIRE_MESSAGE(file.good(), "cannot read " << path.string());
    std::ostringstream text;
    text << file.rdbuf();
    return text.str();
}

std::string fixture_source(const std::string& name) {
    return read_text(std::filesystem::path(GRADER_FIXTURES_DIR) / "sources" / name);
}

grader::CompileRequest probe_request(const std::string& fixture) {
    grader::CompileRequest request;
    request.source = fixture_source(fixture);
    request.source_name = "probe.cu";
    request.kernel_name = "probeSharedStride";
    request.arch = "sm_90";
    request.options = {"-std=c++17", "-lineinfo"};
    request.headers.push_back(
        {"day15_probe.h", read_text(std::filesystem::path(GRADER_SOURCE_DIR) /
                                    "exercises/day15-bank-conflicts/day15_probe.h")});
    return request;
}

std::vector<grader::KernelParameter> probe_abi() {
    using grader::ParameterRole;
    return {{"in", "const float*", 8, ParameterRole::input},
            {"out", "float*", 8, ParameterRole::output},
            {"n", "size_t", 8, ParameterRole::count},
            {"stride", "int", 4, ParameterRole::stride}};
}

// The first problem's line, or 0 where the source was accepted.
int first_problem_line(std::string_view source) {
    const std::vector<SourceProblem> problems = grader::vet_includes(source, kAllowed);
    return problems.empty() ? 0 : problems.front().line;
}

std::string first_problem_message(std::string_view source) {
    const std::vector<SourceProblem> problems = grader::vet_includes(source, kAllowed);
    return problems.empty() ? std::string() : problems.front().message;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// The line of the first refusal by the second line of defence (a hidden line that reads as a
// refused directive), or 0.
int hidden_directive_line(std::string_view source) {
    for (const SourceProblem& problem : grader::vet_includes(source, kAllowed)) {
        if (contains(problem.message, "is inside a comment, string or continued line")) {
            return problem.line;
        }
    }
    return 0;
}

}  // namespace

TEST_CASE("vetting accepts the provided header and the directives a kernel needs") {
    CHECK(grader::vet_includes("#include \"day15_probe.h\"\n", kAllowed).empty());
    CHECK(grader::vet_includes("#include <day15_probe.h>\n", kAllowed).empty());
    CHECK(grader::vet_includes("  #  include \"day15_probe.h\" // the header\n", kAllowed).empty());
    CHECK(grader::vet_includes("#pragma once\n#define TILE 2048\n#if TILE > 1\n#pragma unroll 4\n"
                               "#else\n#error no\n#endif\n#pragma nv_diag_suppress 177\n",
                               kAllowed)
              .empty());
    CHECK(grader::vet_includes(fixture_source("correct_probe.cu"), kAllowed).empty());
    CHECK(grader::vet_includes("#include \"day15_probe.h\"\r\nint x = 1;\r\n", kAllowed).empty());
}

TEST_CASE("vetting ignores directives inside comments and strings") {
    SUBCASE("line comment") {
        CHECK(first_problem_line("int a; // #include \"/etc/passwd\"\n") == 0);
    }
    SUBCASE("block comment on one line") {
        CHECK(first_problem_line("/* #include \"/etc/passwd\" */ int a;\n") == 0);
    }
    SUBCASE("string literal") {
        CHECK(first_problem_line("const char* s = \"#include </etc/passwd> __has_include\";\n") ==
              0);
    }
    SUBCASE("character literal and digit separators") {
        CHECK(first_problem_line("char c = '#'; int big = 1'000'000; char q = '\"';\n") == 0);
    }
    SUBCASE("raw string") {
        CHECK(first_problem_line("const char* s = R\"x(\" _Pragma(\"x\") )\" )x\";\n") == 0);
    }
}

TEST_CASE("vetting refuses every way of naming a host file, with its line") {
    SUBCASE("absolute path, with the allowed list in the message") {
        const auto problems =
            grader::vet_includes("int a;\n\n#include \"/etc/passwd\"\n", kAllowed);
        REQUIRE(problems.size() == 1);
        CHECK(problems[0].line == 3);
        CHECK(problems[0].column == 1);
        CHECK(problems[0].message ==
              "#include \"/etc/passwd\" is not allowed; a submission may include only "
              "\"day15_probe.h\"");
        CHECK(grader::to_string(problems[0], "probe.cu") == "probe.cu:3:1: " + problems[0].message);
    }
    SUBCASE("angle brackets and relative paths") {
        CHECK(first_problem_line("\n#include <cstdio>\n") == 2);
        CHECK(first_problem_line("#include \"../day15_probe.h\"\n") == 1);
        CHECK(first_problem_line("#include \"day15_probe.h \"\n") == 1);
    }
    SUBCASE("line continuations, also inside the directive name") {
        CHECK(first_problem_line("int a;\n#inc\\\nlude \"/etc/passwd\"\n") == 2);
        CHECK(first_problem_line("#\\\ninclude \\\n\"/etc/passwd\"\n") == 1);
        CHECK(first_problem_line("int a;\r\n#inc\\\r\nlude \"/etc/passwd\"\r\n") == 2);
    }
    SUBCASE("a comment between # and include") {
        CHECK(first_problem_line("\n\n#/* hidden */include \"/etc/passwd\"\n") == 3);
        CHECK(first_problem_line("/* before */ # /* a\n b */ include \"/etc/passwd\"\n") == 1);
    }
    SUBCASE("the %: digraph and the ?\?= trigraph") {
        CHECK(first_problem_line("int a;\n%:include \"/etc/passwd\"\n") == 2);
        CHECK(first_problem_line("\n\n\n?\?=include \"/etc/passwd\"\n") == 4);
        CHECK(contains(first_problem_message("?\?=include \"x\"\n"), "trigraph ?\?="));
    }
    SUBCASE("include_next, import, computed includes") {
        CHECK(first_problem_line("#include_next <day15_probe.h>\n") == 1);
        CHECK(first_problem_line("\n#import \"day15_probe.h\"\n") == 2);
        CHECK(first_problem_line("#define P \"/etc/passwd\"\n#include P\n") == 2);
        CHECK(contains(first_problem_message("#include P\n"), "computed #include is not allowed"));
    }
    SUBCASE("__has_include anywhere outside strings and comments") {
        CHECK(first_problem_line("int a;\n#if __has_include(\"/etc/passwd\")\n#endif\n") == 2);
        CHECK(first_problem_line("\nconstexpr bool b = __has_include_next(<x>);\n") == 2);
    }
    SUBCASE("#line, line markers and pragmas that are not on the list") {
        CHECK(first_problem_line("#line 1 \"/etc/passwd\"\n") == 1);
        CHECK(first_problem_line("\n# 12 \"/etc/passwd\"\n") == 2);
        CHECK(first_problem_line("#pragma push_macro(\"x\")\n") == 1);
        CHECK(first_problem_line("\n\n_Pragma(\"once\")\n") == 3);
        CHECK(first_problem_line("#pragma GCC dependency \"/etc/passwd\"\n") == 1);
    }
    SUBCASE("a refused directive hidden in a continued line or a multi-line comment") {
        CHECK(first_problem_line("#define X \\\n#include \"/etc/passwd\"\n") == 2);
        CHECK(first_problem_line("/*\n#include </etc/passwd>\n*/\n") == 2);
        CHECK(first_problem_line("// a comment \\\n#include \"/etc/passwd\"\n") == 2);
    }
    SUBCASE("a hidden line read as the preprocessor would: a splice inside the directive") {
        const std::string spliced = "int a;\n/*\n#\\\ninclude \"/etc/passwd\"\n*/\n";
        CHECK(first_problem_line(spliced) == 3);
        CHECK(hidden_directive_line(spliced) == 3);
        CHECK(contains(first_problem_message(spliced), "\"#include \"/etc/passwd\"\" is inside"));
        CHECK(hidden_directive_line("/*\n  %: \\\n  include \\\n</etc/passwd>\n*/\n") == 2);
        CHECK(hidden_directive_line("/*\r\n#\\\r\ninclude \"/etc/passwd\"\r\n*/\r\n") == 2);
        CHECK(hidden_directive_line("/*\n#\\\npragma GCC dependency \"/etc/passwd\"\n*/\n") == 2);
        // Still accepted: the allowed header, spliced the same way.
        CHECK(first_problem_line("/*\n#\\\ninclude \"day15_probe.h\"\n*/\n") == 0);
    }
    SUBCASE("a hidden line read as the preprocessor would: a comment before the #") {
        const std::string continued = "int a; // see \\\n/**/#include \"/etc/passwd\"\n";
        CHECK(first_problem_line(continued) == 2);
        CHECK(hidden_directive_line(continued) == 2);
        CHECK(hidden_directive_line("auto s = R\"(\n/* a */ %:include \"/etc/passwd\"\n)\";\n") ==
              2);
        CHECK(hidden_directive_line(
                  "auto s = R\"(\n/* a\n b */ # /* c */ include </etc/passwd>\n)\";\n") == 3);
        CHECK(hidden_directive_line("auto s = R\"(\n/**/#include/**/\"/etc/passwd\"\n)\";\n") == 2);
        // In a /* */ comment the */ of /**/ ends it: the directive is code, refused by the scan.
        CHECK(first_problem_line("/*\n/**/#include \"/etc/passwd\"\n*/\n") == 2);
        // Still accepted: what reads as an allowed directive.
        CHECK(first_problem_line("auto s = R\"(\n/**/#include \"day15_probe.h\"\n)\";\n") == 0);
        CHECK(first_problem_line("int a; // \\\n/* x */ #pragma unroll\n") == 0);
    }
    SUBCASE("malformed text a compiler might read differently") {
        CHECK(first_problem_line("int a; /* never closed\n#include \"/etc/passwd\"\n") == 1);
        CHECK(first_problem_line("\nint a;\\  \n#include \"/etc/passwd\"\n") == 2);
        CHECK(first_problem_line("int a;\r#include \"/etc/passwd\"\n") == 1);
        CHECK(first_problem_line("const char* s = R\"x(\n)x\\\n\";\n#include \"a\"\n)x\";\n") == 1);
    }
}

TEST_CASE("sanitize_log drops other files' lines and shortens host paths") {
    const std::string cwd = std::filesystem::current_path().string();
    const std::string log =
        "/etc/passwd(1): error: this declaration has no storage class or type specifier\n"
        "  root:x:0:0:root:/root:/bin/bash\n"
        "  ^\n"
        "\n"
        "/probe.cu(4): error: identifier \"undefined_accumulator\" is undefined\n"
        "      out[0] = undefined_accumulator / 2;\n"
        "               ^\n"
        "\n" +
        cwd +
        "/probe.cu(5): warning #177-D: variable \"unused\" was declared but never referenced\n"
        "\n"
        "/probe.cu(1): catastrophic error: cannot open source file \"/etc/shadow\"\n"
        "\n"
        "In file included from /usr/include/secret.h\n"
        "day15_probe.h(3): error: expected a \";\"\n"
        "\n"
        "/home/x/probe.cu(9): error: another file that is also called probe.cu\n"
        "  someone else's line\n"
        "\n"
        "4 errors detected in the compilation of \"/probe.cu\".\n";
    const std::string clean = grader::sanitize_log(log, "probe.cu", {"day15_probe.h"});
    CHECK_FALSE(contains(clean, "root:x"));
    CHECK_FALSE(contains(clean, "/etc"));
    CHECK_FALSE(contains(clean, "/home/x"));
    CHECK_FALSE(contains(clean, "someone else's line"));
    CHECK_FALSE(contains(clean, "/usr/include"));
    CHECK_FALSE(contains(clean, cwd + "/"));
    // FILE:LINE: (and :COLUMN where the caret gives it, which needs the source: not here).
    CHECK(contains(clean, "probe.cu:4: error: identifier \"undefined_accumulator\""));
    CHECK(contains(clean, "      out[0] = undefined_accumulator / 2;\n"));
    CHECK(contains(clean, "probe.cu:5: warning #177-D"));
    CHECK(contains(clean, "probe.cu:1: catastrophic error: cannot open source file \"shadow\""));
    CHECK(contains(clean, "day15_probe.h:3: error"));
    CHECK_FALSE(contains(clean, "probe.cu(4)"));
    CHECK(contains(clean, "4 errors detected in the compilation of \"probe.cu\"."));
}

TEST_CASE("ptx_entry reads the parameter list of each PTX form") {
    const std::string ptx =
        ".visible .entry other(\n\t.param .u32 other_param_0\n)\n{\n}\n"
        ".visible .entry _Z1kPKfPfmi(\n"
        "\t.param .u64 .ptr .global .align 4 _Z1kPKfPfmi_param_0,\n"
        "\t.param .u64 _Z1kPKfPfmi_param_1,\n"
        "\t.param .align 8 .b8 _Z1kPKfPfmi_param_2[16],\n"
        "\t.param .f32 _Z1kPKfPfmi_param_3,\n"
        "\t.param .u32 _Z1kPKfPfmi_param_4\n"
        ")\n{\n\tret;\n}\n"
        ".entry empty\n{\n}\n";
    const grader::PtxEntry entry = grader::ptx_entry(ptx, "_Z1kPKfPfmi");
    REQUIRE(entry.found);
    REQUIRE(entry.params.size() == 5);
    CHECK(entry.params[0].size == 8);
    CHECK(entry.params[0].ptx_type == ".u64 .ptr .global .align 4");
    CHECK(entry.params[1].ptx_type == ".u64");
    CHECK(entry.params[2].size == 16);
    CHECK(entry.params[2].ptx_type == ".align 8 .b8[16]");
    CHECK(entry.params[3].size == 4);
    CHECK(entry.params[4].size == 4);
    CHECK(grader::ptx_entry(ptx, "other").params.size() == 1);
    CHECK(grader::ptx_entry(ptx, "empty").found);
    CHECK(grader::ptx_entry(ptx, "empty").params.empty());
    CHECK_FALSE(grader::ptx_entry(ptx, "_Z1kPKfPf").found);
}

TEST_CASE("abi_problem names the first parameter that differs, or the count") {
    CHECK(grader::abi_problem({8, 8, 8, 4}, probe_abi()).empty());
    CHECK(grader::abi_problem({8, 8, 4, 4}, probe_abi()) ==
          "parameter 3 (n) is 4 bytes; the ABI expects size_t, 8 bytes");
    CHECK(grader::abi_problem({8, 8, 8}, probe_abi(), "probeSharedStride") ==
          "the kernel has 3 parameters; the ABI has 4: probeSharedStride(const float* in, "
          "float* out, size_t n, int stride)");
}

TEST_CASE("demangle and nvrtc_version") {
    CHECK(grader::demangle("_Z17probeSharedStridePKfPfmi") ==
          "probeSharedStride(float const*, float*, unsigned long, int)");
    CHECK(grader::demangle("probeSharedStride") == "probeSharedStride");
    const std::string version = grader::nvrtc_version();
    CHECK(version.find('.') != std::string::npos);
    CHECK(std::isdigit(static_cast<unsigned char>(version[0])) != 0);
}

TEST_CASE("a correct probe compiles to a cubin and PTX whose entry matches the ABI") {
    const grader::CompiledKernel compiled =
        grader::compile_kernel(probe_request("correct_probe.cu"));
    const grader::CompileOutcome& outcome = compiled.outcome;
    INFO(outcome.log);
    REQUIRE(outcome.ok);
    CHECK(outcome.attempted);
    CHECK(outcome.arch == "sm_90");
    CHECK(outcome.options == std::vector<std::string>{"-std=c++17", "-lineinfo", "-arch=sm_90"});
    CHECK(outcome.vetting_problems.empty());
    CHECK(outcome.lowered_name == "_Z17probeSharedStridePKfPfmi");
    CHECK(outcome.signature == "probeSharedStride(float const*, float*, unsigned long, int)");
    CHECK(outcome.param_sizes == std::vector<std::size_t>{8, 8, 8, 4});
    CHECK(outcome.param_source == "ptx");
    CHECK(outcome.abi_problem.empty());
    CHECK(grader::abi_problem(outcome.param_sizes, probe_abi()).empty());
    CHECK(outcome.seconds > 0.0);
    CHECK(compiled.cubin.substr(0, 4) ==
          "\x7f"
          "ELF");
    CHECK(contains(compiled.ptx, ".visible .entry _Z17probeSharedStridePKfPfmi("));
    CHECK(contains(compiled.ptx, ".file\t1 \"probe.cu\""));
    CHECK(compiled.ptx.back() != '\0');
}

TEST_CASE("the cubin says how many registers ptxas gave the kernel, as ptxas's own report does") {
    // A kernel that keeps 192 reads in registers, and the plain probe, for a T4 (sm_75): ptxas's
    // -v report in NVRTC's log says "Used N registers"; the cubin's .text section says N too.
    struct Expected {
        const char* folder;
        int at_least;
        int at_most;
    };
    for (const Expected& kernel : {Expected{"register_heavy_grid_barrier", 200, 255},
                                   Expected{"buffer_order_sniffing", 8, 64}}) {
        const std::string folder = kernel.folder;
        CAPTURE(folder);
        grader::CompileRequest request = probe_request("correct_probe.cu");
        request.source = read_text(std::filesystem::path(GRADER_FIXTURES_DIR) / "sim_fidelity" /
                                   folder / "probe.cu");
        request.arch = "sm_75";
        request.options.push_back("--ptxas-options=-v");
        const grader::CompiledKernel compiled = grader::compile_kernel(request);
        REQUIRE_MESSAGE(compiled.outcome.ok, compiled.outcome.log);
        const auto registers =
            grader::cubin_registers(compiled.cubin, compiled.outcome.lowered_name);
        REQUIRE(registers.has_value());
        CHECK(*registers >= kernel.at_least);
        CHECK(*registers <= kernel.at_most);
        const std::string used = "Used " + std::to_string(*registers) + " registers";
        CHECK_MESSAGE(contains(compiled.outcome.log, used), compiled.outcome.log);
        // Not this kernel, or not a cubin: nothing.
        CHECK_FALSE(grader::cubin_registers(compiled.cubin, "_Z5otherv").has_value());
        CHECK_FALSE(grader::cubin_registers(compiled.ptx, compiled.outcome.lowered_name));
        CHECK_FALSE(
            grader::cubin_registers(compiled.cubin.substr(0, 100), compiled.outcome.lowered_name));
    }
}

TEST_CASE("a virtual architecture gives PTX and no cubin") {
    grader::CompileRequest request = probe_request("correct_probe.cu");
    request.arch = "compute_90";
    const grader::CompiledKernel compiled = grader::compile_kernel(request);
    REQUIRE(compiled.outcome.ok);
    CHECK(compiled.cubin.empty());
    CHECK(compiled.outcome.param_sizes == std::vector<std::size_t>{8, 8, 8, 4});
}

TEST_CASE("a compile error is reported with its line in probe.cu") {
    const grader::CompileOutcome outcome =
        grader::compile_kernel(probe_request("compile_error_on_line_4.cu")).outcome;
    CHECK(outcome.attempted);
    CHECK_FALSE(outcome.ok);
    CHECK(contains(outcome.log, "probe.cu:4:14: error: identifier \"undefined_accumulator\""));
    CHECK_FALSE(contains(outcome.log, "__nv_name_map"));
}

TEST_CASE("an int count parameter gives the ABI problem for parameter 3") {
    const grader::CompileOutcome outcome =
        grader::compile_kernel(probe_request("int_count_parameter.cu")).outcome;
    REQUIRE(outcome.ok);
    CHECK(outcome.param_sizes == std::vector<std::size_t>{8, 8, 4, 4});
    CHECK(grader::abi_problem(outcome.param_sizes, probe_abi(), "probeSharedStride") ==
          "parameter 3 (n) is 4 bytes; the ABI expects size_t, 8 bytes");
}

TEST_CASE("an extern \"C\" kernel compiles under its plain name") {
    const grader::CompileOutcome outcome =
        grader::compile_kernel(probe_request("extern_c_kernel.cu")).outcome;
    REQUIRE(outcome.ok);
    CHECK(outcome.lowered_name == "probeSharedStride");
    CHECK(outcome.signature == "probeSharedStride");
    CHECK(outcome.param_sizes == std::vector<std::size_t>{8, 8, 8, 4});
}

TEST_CASE("a struct passed by value is read from the PTX of a real compile") {
    grader::CompileRequest request = probe_request("struct_by_value_kernel.cu");
    request.kernel_name = "readWindow";
    const grader::CompileOutcome outcome = grader::compile_kernel(request).outcome;
    INFO(outcome.log);
    REQUIRE(outcome.ok);
    CHECK(outcome.param_sizes == std::vector<std::size_t>{16, 8, 4, 4, 8});
}

TEST_CASE("a __device__ function or a missing kernel is named plainly") {
    SUBCASE("__device__ function") {
        const grader::CompileOutcome outcome =
            grader::compile_kernel(probe_request("device_function_not_kernel.cu")).outcome;
        CHECK_FALSE(outcome.ok);
        CHECK(contains(outcome.log, "probeSharedStride is not a __global__ kernel"));
        CHECK_FALSE(contains(outcome.log, "__nv_name_map"));
    }
    SUBCASE("no such kernel") {
        const grader::CompileOutcome outcome =
            grader::compile_kernel(probe_request("kernel_with_another_name.cu")).outcome;
        CHECK_FALSE(outcome.ok);
        CHECK(outcome.log == "no kernel named probeSharedStride was found in probe.cu\n");
    }
}

TEST_CASE("a source that includes a host file never reaches NVRTC") {
    const std::string hostname = read_text("/etc/hostname");
    const grader::CompileOutcome outcome =
        grader::compile_kernel(probe_request("includes_etc_hostname.cu")).outcome;
    CHECK(outcome.attempted);
    CHECK_FALSE(outcome.ok);
    CHECK(outcome.options.empty());  // NVRTC was never given them
    REQUIRE(outcome.vetting_problems.size() == 1);
    CHECK(outcome.vetting_problems[0].line == 2);
    CHECK(contains(outcome.log, "probe.cu:2:1: #include \"/etc/hostname\" is not allowed"));
    const std::string first_line = hostname.substr(0, hostname.find('\n'));
    if (!first_line.empty()) {
        CHECK_FALSE(contains(outcome.log, "\n  " + first_line + "\n"));
    }
}

TEST_CASE("an unvetted compile of a host include still returns no host file's lines") {
    const std::string hostname = read_text("/etc/hostname");
    grader::CompileRequest request = probe_request("includes_etc_hostname.cu");
    request.vet = false;
    const grader::CompileOutcome outcome = grader::compile_kernel(request).outcome;
    CHECK_FALSE(outcome.ok);
    CHECK_FALSE(contains(outcome.log, "/etc"));
    const std::string first_line = hostname.substr(0, hostname.find('\n'));
    if (!first_line.empty()) {
        CHECK_FALSE(contains(outcome.log, "\n  " + first_line + "\n"));
    }
}

TEST_CASE("no returned log, PTX or cubin carries the working directory") {
    const std::string cwd = std::filesystem::current_path().string();
    REQUIRE(cwd != "/");
    for (const std::string fixture : {"correct_probe.cu", "compile_error_on_line_4.cu"}) {
        CAPTURE(fixture);
        const grader::CompiledKernel compiled = grader::compile_kernel(probe_request(fixture));
        CHECK_FALSE(contains(compiled.outcome.log, cwd));
        CHECK_FALSE(contains(compiled.ptx, cwd));
        CHECK_FALSE(contains(compiled.cubin, cwd));
    }
}

TEST_CASE("two kernels compile at once on two threads") {
    grader::CompiledKernel first;
    grader::CompiledKernel second;
    std::thread reference(
        [&first] { first = grader::compile_kernel(probe_request("correct_probe.cu")); });
    std::thread student(
        [&second] { second = grader::compile_kernel(probe_request("int_count_parameter.cu")); });
    reference.join();
    student.join();
    CHECK(first.outcome.ok);
    CHECK(second.outcome.ok);
    CHECK(first.outcome.param_sizes == std::vector<std::size_t>{8, 8, 8, 4});
    CHECK(second.outcome.param_sizes == std::vector<std::size_t>{8, 8, 4, 4});
}

TEST_CASE("the NVRTC builtins are loaded by absolute path from the folder of libnvrtc") {
    const grader::NvrtcBuiltins& builtins = grader::load_nvrtc_builtins();
    REQUIRE_MESSAGE(builtins.loaded, builtins.error);
    CHECK(builtins.path.front() == '/');
    CHECK(builtins.path.find("libnvrtc-builtins.so.") != std::string::npos);
    CHECK(&grader::load_nvrtc_builtins() == &builtins);
}

// ---------------------------------------------------------------------------------------------
// Issue 7: the vetting reads the source as the preprocessor does, and closes each class.

namespace {

grader::CompileRequest request_for_source(const std::string& source) {
    grader::CompileRequest request = probe_request("correct_probe.cu");
    request.source = source;
    return request;
}

std::string hostile_fixture(const std::string& name) {
    return read_text(std::filesystem::path(GRADER_FIXTURES_DIR) / "hostile" / name / "probe.cu");
}

// NVRTC's own log, unvetted and unconfined, of a source: the oracle for what NVRTC reads.
std::string raw_nvrtc_log(const std::string& source) {
    grader::load_nvrtc_builtins();
    const std::string header = "#pragma once\nconstexpr int kProbeWords = 2048;\n";
    const char* header_text = header.c_str();
    const char* header_name = "day15_probe.h";
    const grader::NvrtcApi& nvrtc = grader::nvrtc();
    nvrtcProgram program = nullptr;
    REQUIRE(nvrtc.nvrtcCreateProgram(&program, source.c_str(), "/probe.cu", 1, &header_text,
                                     &header_name) == NVRTC_SUCCESS);
    const char* options[] = {"-std=c++17", "-arch=sm_90"};
    nvrtc.nvrtcCompileProgram(program, 2, options);
    std::size_t size = 0;
    nvrtc.nvrtcGetProgramLogSize(program, &size);
    std::string log(size, '\0');
    nvrtc.nvrtcGetProgramLog(program, log.data());
    nvrtc.nvrtcDestroyProgram(&program);
    return log;
}

}  // namespace

TEST_CASE("a directive after a comment that spans lines is seen wherever the comment ends") {
    CHECK(first_problem_line("int a; /* one\n two */ #include \"/etc/passwd\"\n") == 2);
    CHECK(first_problem_line("/* one\n two */ #include \"/etc/passwd\"\n") == 2);
    CHECK(first_problem_line("/* x */ #include \"/etc/passwd\"\n") == 1);
    CHECK(first_problem_line("int a; /* x */ %:include \"/etc/passwd\"\n") == 1);
    CHECK(first_problem_line("#define X 1 /* one\n two */ #include \"/etc/passwd\"\n") == 2);
    CHECK(first_problem_line("#define S(x) #x\nS( /* a\n */ #include \"/etc/passwd\" )\n") == 3);
    CHECK(first_problem_line("int a; /\\\n* one\n */ #include \"/etc/passwd\"\n") == 3);
    // Still accepted: comments beside the allowed directives.
    CHECK(first_problem_line("/* a\n b */ #include \"day15_probe.h\"\n") == 0);
    CHECK(first_problem_line("#define TILE 2048 /* words\n   in the tile */\nint x;\n") == 0);
}

TEST_CASE("token pasting is refused, and # in a directive may only stringize a parameter") {
    CHECK(contains(first_problem_message("#define CAT(a, b) a##b\n"), "## (token pasting)"));
    CHECK(first_problem_line("\n#define CAT(a, b) a %:%: b\n") == 2);
    CHECK(first_problem_line("#define CAT(a, b) a #%: b\n") == 1);
    CHECK(first_problem_line("int x = 1 ## 2;\n") == 1);
    CHECK(first_problem_line("#define S(x) #x\n#define V(...) #__VA_ARGS__\n") == 0);
    CHECK(first_problem_line("#define S(x) # x\n") == 0);
    CHECK(first_problem_line("#define H #include\n") == 1);
    CHECK(first_problem_line("#define S(x) #y\n") == 1);
    CHECK(first_problem_line("#define S(include) #include \"/etc/passwd\"\n") == 1);
    CHECK(first_problem_line("#if 1 # 2\n#endif\n") == 1);
    CHECK(first_problem_line("#error use # here\n") == 0);
    CHECK(first_problem_line("#define _Pragma(x) x\n") == 1);
    CHECK(first_problem_line("#define F(__has_include) 1\n") == 1);
}

TEST_CASE("a source that is not UTF-8 is refused at its first bad byte; a byte-order mark is not") {
    const auto problems =
        grader::vet_includes("int a;\n// caf\xff\nint b; // \xc3\x28\n", kAllowed);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].line == 2);
    CHECK(problems[0].column == 7);
    CHECK(problems[0].message ==
          "the source is not UTF-8 text here (byte 0xFF); save the file as UTF-8");
    CHECK(first_problem_line("// \xc0\xaf overlong\n") == 1);
    CHECK(first_problem_line("// caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x99\x82\n") == 0);
    CHECK(first_problem_line("\xef\xbb\xbf#include \"day15_probe.h\"\n") == 0);
    CHECK(first_problem_line("\xef\xbb\xbf#include \"/etc/passwd\"\n") == 1);
    CHECK(first_problem_line("int a; \xef\xbb\xbf#include \"/etc/passwd\"\n") == 1);
}

// Each variant is run through NVRTC unvetted: where NVRTC reads the token file (its text, or
// its existence, comes back), the vetting must refuse the variant. Every variant here is hostile,
// so the vetting refuses them all; the oracle shows which of them are real holes, and that the
// list keeps some (a list of harmless variants could not fail).
TEST_CASE("the vetting refuses every variant through which NVRTC reads a host file") {
    const TokenFile file("@TOKEN@\n");
    const std::string path = file.path();
    const std::vector<std::string> variants = {
        "#include \"@FILE@\"\n",
        "int a; /* one\n two */ #include \"@FILE@\"\n",
        "/* one\n two */ #include \"@FILE@\"\n",
        "/* one */ #include \"@FILE@\"\n",
        "int a; /* one\n */ %:include \"@FILE@\"\n",
        "int a; /* one\n */ # /* two\n */ include \"@FILE@\"\n",
        "#define S(...) #__VA_ARGS__\nstatic_assert(false, S(\n#include \"@FILE@\"\n));\n",
        "#define S(...) #__VA_ARGS__\nstatic_assert(false, S( /* a\n */ #include \"@FILE@\"\n));\n",
        "#define S(...) #__VA_ARGS__\nstatic_assert(false, S(\n%:include \"@FILE@\"\n));\n",
        "#inc\\\nlude \"@FILE@\"\n",
        "#\\\ninclude \"@FILE@\"\n",
        "  #  include <@FILE@>\n",
        "#define F \"@FILE@\"\n#include F\n",
        "#define CAT(a, b) a##b\n#if CAT(__has_, include)(\"@FILE@\")\n#error FILE_SEEN\n#endif\n",
        "#define CAT(a, b) a%:%:b\n#if CAT(__has_, include)(\"@FILE@\")\n#error "
        "FILE_SEEN\n#endif\n",
        "#define CAT(a, b) a##b\n#define H CAT(__has_, include)\n#if H(\"@FILE@\")\n#error "
        "FILE_SEEN\n#endif\n",
        "#if __has_include(\"@FILE@\")\n#error FILE_SEEN\n#endif\n",
        "#if __has_include_next(\"@FILE@\")\n#error FILE_SEEN\n#endif\n",
        "#define CAT(a, b) a##b\nCAT(_Pra, gma)(\"message(\\\"FILE_SEEN\\\")\")\n",
        "_Pragma(\"message(\\\"FILE_SEEN\\\")\")\n",
        "#pragma message(\"FILE_SEEN\")\n",
        "\xef\xbb\xbf#include \"@FILE@\"\n",
        "int a; \xef\xbb\xbf#include \"@FILE@\"\n",
        "int a;\r\n/* x\r\n */ #include \"@FILE@\"\r\n",
        "#line 1 \"@FILE@\"\nint x = ;\n",
        "#include_next \"@FILE@\"\n",
    };
    int read_by_nvrtc = 0;
    for (const std::string& variant : variants) {
        const std::string source = replaced(variant, "@FILE@", path);
        CAPTURE(source);
        const std::string log = raw_nvrtc_log(source);
        const bool nvrtc_reads =
            contains(log, file.token()) || contains(log, "FILE_SEEN") || contains(log, path);
        read_by_nvrtc += nvrtc_reads ? 1 : 0;
        CHECK_FALSE(grader::vet_includes(source, kAllowed).empty());
    }
    MESSAGE(read_by_nvrtc << " of " << variants.size() << " variants are read by NVRTC unvetted");
    CHECK(read_by_nvrtc >= 15);
}

// ---------------------------------------------------------------------------------------------
// Issue 7: the compile of the student's source is confined by the kernel.

TEST_CASE("a confined compile gives the same kernel as an in-process one") {
    const grader::CompileRequest request = probe_request("correct_probe.cu");
    const grader::CompiledKernel in_process = grader::compile_kernel(request);
    const grader::CompiledKernel confined = grader::compile_untrusted(request, real_grader());
    INFO(confined.outcome.log);
    REQUIRE(confined.outcome.ok);
    CHECK(confined.outcome.lowered_name == in_process.outcome.lowered_name);
    CHECK(confined.outcome.param_sizes == in_process.outcome.param_sizes);
    CHECK(confined.outcome.options == in_process.outcome.options);
    CHECK(confined.ptx == in_process.ptx);
    CHECK(confined.cubin == in_process.cubin);
    CHECK(in_process.confinement.empty());
    MESSAGE("confinement: " << confined.confinement);
    if (confinement_offered()) {
        CHECK(contains(confined.confinement, "could open no file"));
    } else {
        CHECK(confined.confinement.rfind("no confinement", 0) == 0);
    }
}

// Skipped (and reported so) where this kernel offers neither Landlock nor user namespaces.
TEST_CASE("a host file included by an unvetted source comes back in-process, never confined" *
          doctest::test_suite("confinement") * doctest::skip(!confinement_offered())) {
    SUBCASE("its text, through a stringizing macro, in a message about probe.cu") {
        const TokenFile file("@TOKEN@\n");
        grader::CompileRequest request = request_for_source(
            "#define STR(...) #__VA_ARGS__\nstatic_assert(false, STR(\n#include \"" + file.path() +
            "\"\n));\n");
        request.vet = false;
        // The test can fail: unconfined, NVRTC reads the file and the token is in the log.
        CHECK(contains(grader::compile_kernel(request).outcome.log, file.token()));
        const grader::CompiledKernel confined =
            grader::compile_untrusted(request, test_child({"--unvetted"}));
        INFO(confined.outcome.log);
        CHECK(confined.outcome.attempted);
        CHECK_FALSE(confined.outcome.ok);
        CHECK(confined.outcome.vetting_problems.empty());  // the vetting was off
        CHECK_FALSE(contains(confined.outcome.log, file.token()));
        CHECK_FALSE(contains(confined.ptx, file.token()));
        CHECK_FALSE(contains(confined.cubin, file.token()));
        CHECK(contains(confined.outcome.log, "cannot open source file"));
    }
    SUBCASE("its code, compiled into the PTX and the cubin") {
        const TokenFile file("__global__ void @TOKEN@(float* out) { out[0] = 1.0f; }\n");
        grader::CompileRequest request = probe_request("correct_probe.cu");
        request.source = "#include \"" + file.path() + "\"\n" + request.source;
        request.vet = false;
        const grader::CompiledKernel in_process = grader::compile_kernel(request);
        CHECK(contains(in_process.ptx, file.token()));
        const grader::CompiledKernel confined =
            grader::compile_untrusted(request, test_child({"--unvetted"}));
        CHECK_FALSE(confined.outcome.ok);
        CHECK_FALSE(contains(confined.outcome.log, file.token()));
        CHECK_FALSE(contains(confined.ptx, file.token()));
        CHECK_FALSE(contains(confined.cubin, file.token()));
    }
    SUBCASE("its existence, through __has_include") {
        const TokenFile file;
        grader::CompileRequest request = request_for_source("#if __has_include(\"" + file.path() +
                                                            "\")\n#error FILE_SEEN\n#endif\n");
        request.vet = false;
        CHECK(contains(grader::compile_kernel(request).outcome.log, "FILE_SEEN"));
        const grader::CompiledKernel confined =
            grader::compile_untrusted(request, test_child({"--unvetted"}));
        CHECK_FALSE(contains(confined.outcome.log, "FILE_SEEN"));
    }
}

TEST_CASE("the harness's kernels compile in the same child, before the student's source") {
    grader::CompileRequest reference = probe_request("correct_probe.cu");
    reference.source_name = "probe_shared_stride.cu";
    reference.vet = false;
    grader::CompileRequest student = probe_request("int_count_parameter.cu");
    const grader::ConfinedCompiles compiles =
        grader::compile_confined({reference, reference}, student, real_grader());
    REQUIRE(compiles.trusted.size() == 2);
    CHECK(compiles.trusted[0].outcome.ok);
    CHECK(compiles.trusted[0].ptx == grader::compile_kernel(reference).ptx);
    CHECK(compiles.trusted[1].cubin == compiles.trusted[0].cubin);
    CHECK(compiles.trusted[0].confinement == compiles.student.confinement);
    CHECK(compiles.student.outcome.ok);
    CHECK(compiles.student.outcome.param_sizes == std::vector<std::size_t>{8, 8, 4, 4});

    SUBCASE("a student's warning flood stays in the student's log") {
        student.source = hostile_fixture("warning_flood");
        const grader::ConfinedCompiles flooded =
            grader::compile_confined({reference}, student, real_grader());
        CHECK(flooded.trusted.at(0).outcome.log.empty());
        CHECK(flooded.student.outcome.log_cut_bytes > 0);
    }
}

TEST_CASE("grader __compile vets every source, whatever the request says") {
    const TokenFile file;
    grader::CompileRequest request = request_for_source("#include \"" + file.path() + "\"\n");
    request.vet = false;
    const grader::CompiledKernel compiled = grader::compile_untrusted(request, real_grader());
    REQUIRE(compiled.outcome.vetting_problems.size() == 1);
    CHECK(compiled.outcome.vetting_problems[0].line == 1);
    CHECK(contains(compiled.outcome.log, "is not allowed"));
    CHECK(compiled.outcome.options.empty());  // NVRTC never saw it
}

TEST_CASE("whatever the source does to the compiler is the student's failed compile") {
    const grader::CompileRequest request = probe_request("correct_probe.cu");
    SUBCASE("a crash") {
        const grader::CompiledKernel compiled =
            grader::compile_untrusted(request, test_child({"--misbehave=crash"}));
        CHECK(compiled.outcome.attempted);
        CHECK_FALSE(compiled.outcome.ok);
        CHECK(compiled.outcome.log ==
              "the compiler crashed on probe.cu (signal 11, Segmentation fault)\n");
    }
    SUBCASE("a timeout") {
        grader::UntrustedCompileOptions options = test_child({"--misbehave=hang"});
        options.seconds = 1.0;
        const grader::CompiledKernel compiled = grader::compile_untrusted(request, options);
        CHECK_FALSE(compiled.outcome.ok);
        CHECK(compiled.outcome.log == "the compile of probe.cu did not finish within 1 s\n");
    }
    SUBCASE("a memory overrun") {
        grader::UntrustedCompileOptions options = test_child({"--misbehave=allocate"});
        options.memory_bytes = std::size_t{256} << 20;
        const grader::CompiledKernel compiled = grader::compile_untrusted(request, options);
        CHECK_FALSE(compiled.outcome.ok);
        CHECK(compiled.outcome.log ==
              "the compiler used more than 256 MiB of memory on probe.cu\n");
    }
    SUBCASE("an exit without a result") {
        const grader::CompiledKernel compiled =
            grader::compile_untrusted(request, test_child({"--misbehave=exit"}));
        CHECK_FALSE(compiled.outcome.ok);
        CHECK(compiled.outcome.log ==
              "the compiler stopped on probe.cu without a result (exit status 3)\n");
    }
}

TEST_CASE("a compile child that stops before the student's source is the harness's fault") {
    CHECK_THROWS_WITH_AS(
        grader::compile_untrusted(probe_request("correct_probe.cu"),
                                  test_child({"--die-before-compiling"})),
        doctest::Contains("stopped before it compiled probe.cu (exited, exit status 9)"),
        std::runtime_error);
    grader::UntrustedCompileOptions missing = real_grader();
    missing.grader_executable = "/nonexistent/grader";
    CHECK_THROWS_WITH_AS(grader::compile_untrusted(probe_request("correct_probe.cu"), missing),
                         doctest::Contains("could not be started"), std::runtime_error);
}

// Skipped (and reported so) without confinement: the builtins cannot be kept from NVRTC.
TEST_CASE("NVRTC failing for want of its builtins is the machine's fault, in NVRTC's words" *
          doctest::test_suite("confinement") * doctest::skip(!confinement_offered())) {
    try {
        grader::compile_untrusted(probe_request("correct_probe.cu"),
                                  test_child({"--builtins-after-confining"}));
        FAIL("expected an NvrtcError");
    } catch (const grader::NvrtcError& error) {
        const std::string message = error.what();
        INFO(message);
        CHECK(error.status() == NVRTC_ERROR_BUILTIN_OPERATION_FAILURE);
        CHECK(error.call() == "nvrtcCompileProgram");
        CHECK(contains(message, "not because of the submission"));
        CHECK(contains(message, "NVRTC said: \""));
        CHECK(contains(message, grader::nvrtc_builtins_name()));
        CHECK(contains(message, "check that the CUDA toolkit's library folder " +
                                    grader::nvrtc_library_folder() + " holds it"));
        CHECK_FALSE(contains(message, ".cpp"));
        CHECK_FALSE(contains(message, "submit"));
        CHECK_FALSE(error.nvrtc_log().empty());
    }
}

TEST_CASE("an NVRTC failure names the call, never the grader's source file") {
    const std::string message =
        grader::nvrtc_failure_message(NVRTC_ERROR_INVALID_INPUT, "nvrtcGetPTX", "");
    CHECK(message.rfind("NVRTC failed on the grading machine, not because of the submission: "
                        "nvrtcGetPTX returned NVRTC_ERROR_INVALID_INPUT.",
                        0) == 0);
    CHECK_FALSE(contains(message, ".cpp"));
}

// ---------------------------------------------------------------------------------------------
// Issues 7 and 9: the compile log is bounded, and keeps the student's own lines as written.

TEST_CASE("a log is cut at 64 KiB at a line end, and says how much was cut") {
    std::string log;
    for (int i = 0; log.size() < 200000; ++i) {
        log += "probe.cu(" + std::to_string(i) + "): warning #177-D: unused\n";
    }
    std::size_t cut = 0;
    const std::string bounded = grader::bounded_log(log, grader::kMaxCompileLogBytes, cut);
    CHECK(bounded.size() <= grader::kMaxCompileLogBytes);
    CHECK(cut > 130000);
    CHECK(log.compare(0, bounded.find("[the compile log"), bounded, 0,
                      bounded.find("[the compile log")) == 0);
    CHECK(bounded.substr(bounded.size() - 60)
              .find("[the compile log was cut here: " + std::to_string(cut) + " more bytes]\n") !=
          std::string::npos);
    std::size_t none = 0;
    CHECK(grader::bounded_log("short\n", 100, none) == "short\n");
    CHECK(none == 0);
}

TEST_CASE("a quoted line of the student's source comes back exactly as written") {
    const std::string source =
        "#include \"day15_probe.h\"\n"
        "__global__ void probeSharedStride(const float* in, float* out, size_t n, int stride) {\n"
        "\tint q = x /2; // see /b/c and a /b/c\r\n"
        "    out[0] = y + 1; /* /etc/x */ // c:/dir\n"
        "}\n";
    const grader::CompileOutcome outcome =
        grader::compile_kernel(request_for_source(source)).outcome;
    INFO(outcome.log);
    CHECK(contains(outcome.log,
                   "probe.cu:3:10: error: identifier \"x\" is undefined\n"
                   "  \tint q = x /2; // see /b/c and a /b/c\n"
                   "  \t        ^\n"));
    CHECK(contains(outcome.log,
                   "probe.cu:4:14: error: identifier \"y\" is undefined\n"
                   "      out[0] = y + 1; /* /etc/x */ // c:/dir\n"
                   "               ^\n"));
}

TEST_CASE("the cleaner keeps only the names NVRTC was given for the student's file") {
    const std::string log =
        "/home/bob/probe.cu(1): error: this declaration has no storage class\n"
        "  bob's secret line\n"
        "  ^\n"
        "\n"
        "/probe.cu(2): error: expected a \";\"\n"
        "  int a = 1 /b/c\n"
        "            ^\n";
    const std::string source = "#include \"day15_probe.h\"\nint a = 1 /b/c\n";
    const std::string clean =
        grader::sanitize_log(log, {{"probe.cu", source}, {"day15_probe.h", ""}});
    CHECK_FALSE(contains(clean, "bob"));
    CHECK(clean == "probe.cu:2:11: error: expected a \";\"\n  int a = 1 /b/c\n            ^\n");
}

TEST_CASE("two kernels of the ABI's name are said to be an overload") {
    const grader::CompileOutcome outcome =
        grader::compile_kernel(request_for_source(hostile_fixture("overloaded_kernel"))).outcome;
    CHECK_FALSE(outcome.ok);
    CHECK(contains(outcome.log,
                   "probeSharedStride is overloaded in probe.cu (declared more than once with "
                   "different parameters); the ABI needs exactly one kernel of that name\n"));
    CHECK_FALSE(contains(outcome.log, "no kernel named"));
    CHECK_FALSE(contains(outcome.log, "__nv_name_map"));
}

TEST_CASE("a byte that is not UTF-8 never crashes the compile, vetted or not") {
    grader::CompileRequest request = request_for_source(hostile_fixture("invalid_utf8_byte"));
    const grader::CompileOutcome vetted = grader::compile_kernel(request).outcome;
    REQUIRE(vetted.vetting_problems.size() == 1);
    CHECK(vetted.vetting_problems[0].line == 1);
    CHECK(vetted.vetting_problems[0].column == 46);
    request.vet = false;
    const grader::CompileOutcome unvetted = grader::compile_kernel(request).outcome;
    CHECK_FALSE(unvetted.ok);
    CHECK(contains(unvetted.log, "found no kernel named probeSharedStride"));
}

// ---------------------------------------------------------------------------------------------
// The hostile submissions under tests/fixtures/hostile, compiled the way a grade compiles them.

namespace {

struct HostileCompile {
    const char* fixture;
    int refused_line;          // 0: not refused by the vetting
    const char* message_part;  // in the first vetting problem, or in the log
    bool compiles;             // where not refused
};

}  // namespace

TEST_CASE("each hostile submission is refused, fails or compiles as its name says") {
    const std::vector<HostileCompile> fixtures = {
        {"include_after_multiline_comment", 7, "#include \"/etc/passwd\" is not allowed", false},
        {"include_after_comment_at_line_start", 6, "#include \"/etc/passwd\" is not allowed",
         false},
        {"include_after_multiline_comment_in_define", 7, "#include \"/etc/passwd\" is not allowed",
         false},
        {"token_paste_has_include", 4, "## (token pasting) is not allowed", false},
        {"token_paste_digraph_has_include", 3, "## (token pasting) is not allowed", false},
        {"token_paste_pragma", 3, "## (token pasting) is not allowed", false},
        {"stringize_include", 8, "#include \"/etc/passwd\" is not allowed", false},
        {"stringize_include_after_comment", 7, "#include \"/etc/passwd\" is not allowed", false},
        {"stringize_not_a_parameter", 4, "# is allowed inside a directive only", false},
        {"pragma_operator_in_macro", 4, "_Pragma is not allowed", false},
        {"invalid_utf8_byte", 1, "not UTF-8 text here (byte 0xFF)", false},
        {"invalid_utf8_in_string", 5, "not UTF-8 text here (byte 0xC3)", false},
        {"invalid_utf8_overlong_slash", 3, "not UTF-8 text here (byte 0xC0)", false},
        {"utf8_bom_correct", 0, "", true},
        {"nested_parentheses", 0, "", true},
        {"nested_braces", 0, "", true},
        {"warning_flood", 0, "[the compile log was cut here: ", true},
        {"overloaded_kernel", 0, "probeSharedStride is overloaded", false},
    };
    const grader::UntrustedCompileOptions grader_child = real_grader();
    for (const HostileCompile& expected : fixtures) {
        CAPTURE(expected.fixture);
        const grader::CompiledKernel compiled = grader::compile_untrusted(
            request_for_source(hostile_fixture(expected.fixture)), grader_child);
        const grader::CompileOutcome& outcome = compiled.outcome;
        CHECK(outcome.attempted);
        CHECK(outcome.log.size() <= grader::kMaxCompileLogBytes + 200);
        CHECK_FALSE(contains(outcome.log, "root:x:0:0"));
        CHECK_FALSE(contains(compiled.ptx, "root:x:0:0"));
        if (expected.refused_line > 0) {
            REQUIRE_FALSE(outcome.vetting_problems.empty());
            CHECK(outcome.vetting_problems[0].line == expected.refused_line);
            CHECK(contains(outcome.vetting_problems[0].message, expected.message_part));
            CHECK_FALSE(outcome.ok);
            continue;
        }
        INFO(outcome.log.substr(0, 2000));
        CHECK(outcome.vetting_problems.empty());
        CHECK(outcome.ok == expected.compiles);
        CHECK(contains(outcome.log, expected.message_part));
        if (expected.compiles) {
            CHECK(outcome.param_sizes == std::vector<std::size_t>{8, 8, 8, 4});
        }
    }
}

TEST_CASE("the warning flood keeps 64 KiB of its 1.7 MB log and counts the rest") {
    const grader::CompiledKernel compiled = grader::compile_untrusted(
        request_for_source(hostile_fixture("warning_flood")), real_grader());
    const grader::CompileOutcome& outcome = compiled.outcome;
    CHECK(outcome.ok);
    CHECK(outcome.log.size() <= grader::kMaxCompileLogBytes);
    CHECK(outcome.log_cut_bytes > 1500000);
    CHECK(contains(outcome.log, "[the compile log was cut here: " +
                                    std::to_string(outcome.log_cut_bytes) + " more bytes]\n"));
}

namespace {

// A copy of tests/fixtures/hostile/<name> in a fresh folder, where links can be made.
std::filesystem::path fixture_copy(const std::string& name) {
    const auto folder = std::filesystem::temp_directory_path() /
                        ("grader-hostile-" + std::to_string(::getpid())) / name;
    std::filesystem::remove_all(folder);
    std::filesystem::create_directories(folder.parent_path());
    std::filesystem::copy(std::filesystem::path(GRADER_FIXTURES_DIR) / "hostile" / name, folder,
                          std::filesystem::copy_options::recursive);
    return folder;
}

}  // namespace

TEST_CASE("a submission file that is a link or not a file is refused unread, with the reason") {
    const TokenFile file;
    std::string why;
    SUBCASE("probe_is_symlink") {
        const auto folder = fixture_copy("probe_is_symlink");
        std::filesystem::create_symlink(file.path(), folder / "probe.cu");
        CHECK_FALSE(grader::read_student_file(folder, "probe.cu", 1 << 20, why).has_value());
        CHECK(why == "it is a symbolic link; submit the file itself");
    }
    SUBCASE("probe_is_symlink_to_other_submission") {
        const auto folder = fixture_copy("probe_is_symlink_to_other_submission");
        const auto other = fixture_copy("utf8_bom_correct");
        std::filesystem::create_symlink("../utf8_bom_correct/probe.cu", folder / "probe.cu");
        CHECK_FALSE(grader::read_student_file(folder, "probe.cu", 1 << 20, why).has_value());
        CHECK(why == "it is a symbolic link; submit the file itself");
    }
    SUBCASE("answers_is_symlink") {
        const auto folder = fixture_copy("answers_is_symlink");
        std::filesystem::create_symlink(file.path(), folder / "submission.yaml");
        CHECK_FALSE(grader::read_student_file(folder, "submission.yaml", 1 << 20, why).has_value());
        CHECK(why == "it is a symbolic link; submit the file itself");
    }
    SUBCASE("probe_is_hardlink") {
        const auto folder = fixture_copy("probe_is_hardlink");
        std::filesystem::create_hard_link(file.path(), folder / "probe.cu");
        CHECK_FALSE(grader::read_student_file(folder, "probe.cu", 1 << 20, why).has_value());
        CHECK(contains(why, "hard link"));
    }
    SUBCASE("probe_is_fifo") {
        const auto folder = fixture_copy("probe_is_fifo");
        REQUIRE(::mkfifo((folder / "probe.cu").c_str(), 0600) == 0);
        CHECK_FALSE(grader::read_student_file(folder, "probe.cu", 1 << 20, why).has_value());
        CHECK(contains(why, "named pipe"));
    }
    SUBCASE("probe_is_directory") {
        const auto folder = fixture_copy("probe_is_directory");
        CHECK_FALSE(grader::read_student_file(folder, "probe.cu", 1 << 20, why).has_value());
        CHECK(why == "it is a folder, not a file");
    }
    CHECK_FALSE(contains(why, file.token()));
    std::filesystem::remove_all(std::filesystem::temp_directory_path() /
                                ("grader-hostile-" + std::to_string(::getpid())));
}

// ---------------------------------------------------------------------------------------------
// What the confinement costs: a grade may grow by at most 10%.

namespace {

double cpu_seconds(int who) {
    rusage usage{};
    ::getrusage(who, &usage);
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

}  // namespace

// Wall time on a shared machine says more about the neighbours than about the child, so the CPU
// time is measured too: the in-process compile's (this process) against the child's (reaped, so
// counted in RUSAGE_CHILDREN).
TEST_CASE("the confined compile costs little more than the compile itself") {
    const grader::CompileRequest student = probe_request("correct_probe.cu");
    grader::CompileRequest reference = student;
    reference.vet = false;
    grader::compile_kernel(student);  // NVRTC loaded and warm in this process
    constexpr int kRounds = 5;
    struct Sample {
        std::vector<double> wall;
        std::vector<double> cpu;
    };
    Sample in_process;
    Sample in_process_two;
    Sample confined;
    Sample confined_two;
    const auto measure = [](Sample& sample, const auto& compile) {
        const auto start = std::chrono::steady_clock::now();
        const double cpu = cpu_seconds(RUSAGE_SELF) + cpu_seconds(RUSAGE_CHILDREN);
        compile();
        sample.wall.push_back(seconds_since(start));
        sample.cpu.push_back(cpu_seconds(RUSAGE_SELF) + cpu_seconds(RUSAGE_CHILDREN) - cpu);
    };
    for (int round = 0; round < kRounds; ++round) {
        measure(in_process, [&] { REQUIRE(grader::compile_kernel(student).outcome.ok); });
        measure(confined,
                [&] { REQUIRE(grader::compile_untrusted(student, real_grader()).outcome.ok); });
        measure(in_process_two, [&] {
            REQUIRE(grader::compile_kernel(reference).outcome.ok);
            REQUIRE(grader::compile_kernel(student).outcome.ok);
        });
        measure(confined_two, [&] {
            REQUIRE(
                grader::compile_confined({reference}, student, real_grader()).student.outcome.ok);
        });
    }
    const auto line = [](const char* what, const Sample& sample) {
        return std::string(what) + ": " + std::to_string(median(sample.wall)) + " s wall, " +
               std::to_string(median(sample.cpu)) + " s CPU";
    };
    MESSAGE("median of " << kRounds << " rounds (in-process figures are of a warm NVRTC):\n"
                         << line("student in-process", in_process) << "\n"
                         << line("student in a confined child", confined) << "\n"
                         << line("reference and student in-process", in_process_two) << "\n"
                         << line("reference and student in one confined child", confined_two));
    // Generous: the measured figures are in the report; this catches a confinement that costs
    // a second of CPU (a probe of the kernel per compile, a fork of a big process, ...).
    CHECK(median(confined.cpu) - median(in_process.cpu) < 0.3);
}

TEST_CASE("student text is scanned without regex: half a megabyte of blanks on one line is read") {
    const std::string blanks(512 * 1024, ' ');
    const std::string ptx = ".file 1 \"/home/someone/probe.cu\"\n.loc 1 20 3\n" + blanks +
                            "\n\tmov.u64 %rd1, %clock64;" + blanks + "\n";
    CHECK(grader::ptx_clock_reads(ptx) == std::vector<std::string>{"%clock64 at probe.cu:20:3"});
    const std::string shortened = grader::ptx_without_host_paths(ptx);
    CHECK(contains(shortened, ".file 1 \"probe.cu\""));
    CHECK_FALSE(contains(shortened, "/home/someone"));
    CHECK(shortened.size() == ptx.size() - std::string("/home/someone/").size());
    SUBCASE("a guarded nanosleep and a register that only starts like a clock") {
        CHECK(grader::ptx_clock_reads("@!%p1 nanosleep.u32 100;\nmov.u32 %r1, %clockwork;\n") ==
              std::vector<std::string>{"nanosleep at an unknown line"});
    }
    SUBCASE("a log line of blanks, and one long path, through the log cleaner") {
        const std::string log = "/probe.cu(3): warning: " + blanks + "\n" +
                                std::string(300000, 'a') + "/passwd(1): error: x\n";
        const std::string clean = grader::sanitize_log(log, "probe.cu");
        CHECK(contains(clean, "probe.cu:3: warning: "));
        CHECK_FALSE(contains(clean, "passwd"));
    }
}

TEST_CASE("a forged list of clock reads is cut in the PTX scan, saying how many were left out") {
    std::string ptx;
    for (int line = 1; line <= 5000; ++line) {
        ptx += ".file " + std::to_string(line) + " \"/x/" + std::string(500, 'f') + "\"\n.loc " +
               std::to_string(line) + " " + std::to_string(line) + " 1\nmov.u64 %rd1, %clock64;\n";
    }
    const std::vector<std::string> reads = grader::ptx_clock_reads(ptx);
    REQUIRE(reads.size() == grader::kMaxClockReads + 1);
    CHECK(reads.back() == "and 4984 more (the list was cut)");
    for (const std::string& read : reads) {
        CHECK(read.size() <= 200);
    }
}

TEST_CASE("every student string the compile child sends is bounded before it is sent") {
    grader::CompileOutcome outcome;
    outcome.attempted = outcome.ok = true;
    outcome.signature = "probeSharedStride(float const*, float*, unsigned long, " +
                        std::string(16 << 20, 'P') + ")";
    outcome.lowered_name = "_Z17probeSharedStridePKfPfm" + std::string(200, 'S');
    for (int i = 0; i < 10000; ++i) {
        outcome.vetting_problems.push_back({i + 1, 1, std::string(5000, 'v')});
        outcome.clock_reads.push_back("%clock at " + std::string(5000, 'c'));
    }
    outcome.log = std::string(4 << 20, 'l');
    const std::size_t signature_bytes = outcome.signature.size();
    CHECK(grader::bound_student_outcome(outcome).empty());
    CHECK(outcome.signature.size() <= grader::kMaxSignatureBytes + 40);
    CHECK(contains(outcome.signature, "[" + std::to_string(signature_bytes) + " bytes, cut]"));
    CHECK(outcome.vetting_problems.size() == grader::kMaxVettingProblems + 1);
    CHECK(outcome.vetting_problems.back().message == "and 9980 more problems like these");
    CHECK(outcome.clock_reads.size() == grader::kMaxClockReads + 1);
    CHECK(outcome.log.size() <= grader::kMaxCompileLogBytes);
    CHECK(nlohmann::json(outcome).dump().size() < 200 * 1024);
    SUBCASE("a mangled name too long to load by is the student's failed compile, with the reason") {
        grader::CompileOutcome long_name;
        long_name.lowered_name = std::string(grader::kMaxLoweredNameBytes + 1, 'Z');
        CHECK(contains(grader::bound_student_outcome(long_name), "the kernel's mangled name is"));
    }
}

TEST_CASE("hostile sources reach the compile outcome bounded: a 16 MB type, an asm of blanks") {
    const grader::UntrustedCompileOptions grader_child = real_grader();
    SUBCASE("a parameter whose demangled type is about 16 MB") {
        const grader::CompiledKernel compiled = grader::compile_untrusted(
            request_for_source(hostile_fixture("huge_demangled_parameter")), grader_child);
        INFO(compiled.outcome.log.substr(0, 2000));
        CHECK(compiled.outcome.ok);
        CHECK(compiled.outcome.param_sizes == std::vector<std::size_t>{8, 8, 8, 4});
        CHECK(compiled.outcome.signature.size() <= grader::kMaxSignatureBytes + 40);
        CHECK(contains(compiled.outcome.signature, "bytes, cut]"));
    }
    SUBCASE("an asm statement of half a megabyte of blanks") {
        const grader::CompiledKernel compiled = grader::compile_untrusted(
            request_for_source(hostile_fixture("asm_blank_string")), grader_child);
        INFO(compiled.outcome.log.substr(0, 2000));
        CHECK(compiled.outcome.ok);
        CHECK(compiled.outcome.clock_reads.empty());
    }
    SUBCASE("thousands of refused includes") {
        std::string source;
        for (int i = 0; i < 5000; ++i) {
            source += "#include \"/etc/passwd" + std::to_string(i) + "\"\n";
        }
        const grader::CompiledKernel compiled =
            grader::compile_untrusted(request_for_source(source), grader_child);
        CHECK_FALSE(compiled.outcome.ok);
        CHECK(compiled.outcome.vetting_problems.size() == grader::kMaxVettingProblems + 1);
        CHECK(compiled.outcome.log.size() <= grader::kMaxCompileLogBytes);
    }
}

TEST_CASE("the compile cache stores a trusted kernel under the FNV-1a of its key, and hits it") {
    const std::filesystem::path cache = std::filesystem::temp_directory_path() /
                                        ("grader-test-compile-cache-" + std::to_string(::getpid()));
    std::filesystem::remove_all(cache);
    grader::CompileRequest request = probe_request("correct_probe.cu");
    request.vet = false;  // the harness's own: only those are cached
    bool hit = true;
    const grader::CompiledKernel first = grader::compile_kernel_cached(request, cache, &hit);
    REQUIRE(first.outcome.ok);
    CHECK_FALSE(hit);
    char name[32];
    std::snprintf(name, sizeof name, "%016llx.kernel",
                  static_cast<unsigned long long>(
                      grader::fnv1a(grader::compile_cache_key(request, grader::nvrtc_version()))));
    CHECK(std::filesystem::is_regular_file(cache / name));
    const grader::CompiledKernel second = grader::compile_kernel_cached(request, cache, &hit);
    CHECK(hit);
    CHECK(second.ptx == first.ptx);
    // Another option is another key, and a compile of its own.
    request.options.push_back("-DGRADER_CACHE_KEY_TEST=1");
    grader::compile_kernel_cached(request, cache, &hit);
    CHECK_FALSE(hit);
    // A student's source is never stored or looked up.
    request.vet = true;
    grader::compile_kernel_cached(request, cache, &hit);
    CHECK_FALSE(hit);
    std::size_t kernels = 0;
    for (const auto& entry : std::filesystem::directory_iterator(cache))
        kernels += entry.path().extension() == ".kernel" ? 1 : 0;
    CHECK(kernels == 2);
    std::filesystem::remove_all(cache);
}

TEST_CASE("NVRTC's version is kept beside the cached kernels under its library's identity") {
    const std::filesystem::path cache = std::filesystem::temp_directory_path() /
                                        ("grader-test-nvrtc-version-" + std::to_string(::getpid()));
    std::filesystem::remove_all(cache);
    const std::string asked = grader::nvrtc_version();
    const auto kept = [&] {
        std::vector<std::filesystem::path> files;
        if (!std::filesystem::is_directory(cache))
            return files;
        for (const auto& entry : std::filesystem::directory_iterator(cache))
            if (entry.path().extension() == ".nvrtc")
                files.push_back(entry.path());
        return files;
    };
    CHECK(grader::nvrtc_version_cached(std::nullopt) == asked);
    {
        // No file to name it by (a toolkit in the loader's own folders, Debian's, where the
        // grader has no run path; here a GRADER_LIBNVRTC that is not there, NVRTC being loaded
        // already): asked, and nothing kept.
        ::setenv("GRADER_LIBNVRTC", "/nonexistent/libnvrtc.so.13", 1);
        CHECK_FALSE(grader::nvrtc_library_file());
        CHECK(grader::nvrtc_version_cached(cache) == asked);
        CHECK(kept().empty());
        ::unsetenv("GRADER_LIBNVRTC");
    }
    CHECK(grader::nvrtc_version_cached(cache) == asked);
    if (!grader::nvrtc_library_file()) {
        MESSAGE("the grader has no run path to NVRTC on this machine: nothing kept to read back");
        CHECK(kept().empty());
        std::filesystem::remove_all(cache);
        return;
    }
    REQUIRE(kept().size() == 1);
    const std::filesystem::path entry = kept().front();
    CHECK(read_text(entry).find(asked) != std::string::npos);
    CHECK(grader::nvrtc_version_cached(cache) == asked);
    SUBCASE("an entry that is not a version is asked again and written over") {
        std::string text = read_text(entry);
        text.replace(text.rfind(asked), asked.size(), std::string(asked.size(), 'x'));
        std::ofstream(entry, std::ios::binary | std::ios::trunc) << text;
        CHECK(grader::nvrtc_version_cached(cache) == asked);
        CHECK(read_text(entry).find(asked) != std::string::npos);
    }
    SUBCASE("an entry of another library's identity is not taken") {
        std::string text = read_text(entry);
        const std::size_t at = text.find(grader::nvrtc_library_file()->string());
        REQUIRE(at != std::string::npos);
        text[at + 1] = text[at + 1] == 'u' ? 'v' : 'u';  // another path, the same length
        std::string other = text;
        other.replace(other.rfind(asked), asked.size(), "99.9");
        std::ofstream(entry, std::ios::binary | std::ios::trunc) << other;
        CHECK(grader::nvrtc_version_cached(cache) == asked);
    }
    std::filesystem::remove_all(cache);
}
