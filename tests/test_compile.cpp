#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "compile/compile.hpp"
#include "compile/nvrtc_library.hpp"

using grader::SourceProblem;

namespace {

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
        "/home/x/probe.cu(4): error: identifier \"undefined_accumulator\" is undefined\n"
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
        "4 errors detected in the compilation of \"/home/x/probe.cu\".\n";
    const std::string clean = grader::sanitize_log(log, "probe.cu", {"day15_probe.h"});
    CHECK_FALSE(contains(clean, "root:x"));
    CHECK_FALSE(contains(clean, "/etc"));
    CHECK_FALSE(contains(clean, "/home/x"));
    CHECK_FALSE(contains(clean, "/usr/include"));
    CHECK_FALSE(contains(clean, cwd + "/"));
    CHECK(contains(clean, "probe.cu(4): error: identifier \"undefined_accumulator\""));
    CHECK(contains(clean, "      out[0] = undefined_accumulator / 2;\n"));
    CHECK(contains(clean, "probe.cu(5): warning #177-D"));
    CHECK(contains(clean, "probe.cu(1): catastrophic error: cannot open source file \"shadow\""));
    CHECK(contains(clean, "day15_probe.h(3): error"));
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
    CHECK(contains(outcome.log, "probe.cu(4): error: identifier \"undefined_accumulator\""));
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
