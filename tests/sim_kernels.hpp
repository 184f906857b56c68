#pragma once

// What the simulator's tests share: NVRTC to PTX with the exercises' headers (no GPU needed), the
// kernels' source lines, and buffers in the simulator's global memory.

#include <doctest/doctest.h>
#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "grader_run.hpp"
#include "sim/sim.hpp"
#include "test_paths.hpp"

namespace grader::testing {

namespace fs = std::filesystem;
namespace sim = grader::sim;

// The simulator's own kernel fixtures.
inline fs::path sim_fixture(const std::string& name) {
    return fs::path(GRADER_FIXTURES_DIR) / "sim" / name;
}

// NVRTC for compute_90 with -lineinfo (PTX only: no GPU needed), with the exercises' headers.
inline std::string compile_to_ptx(const fs::path& path, const std::string& name) {
    const std::string source = read_text(path);
    REQUIRE_MESSAGE(!source.empty(), "cannot read " << path);
    const fs::path root(GRADER_SOURCE_DIR);
    const std::string probe = read_text(root / "exercises/day15-bank-conflicts/day15_probe.h");
    const std::string transpose = read_text(root / "exercises/day15-padding/day15_transpose.h");
    const char* header_sources[] = {probe.c_str(), transpose.c_str()};
    const char* header_names[] = {"day15_probe.h", "day15_transpose.h"};
    nvrtcProgram program = nullptr;
    REQUIRE(nvrtcCreateProgram(&program, source.c_str(), name.c_str(), 2, header_sources,
                               header_names) == NVRTC_SUCCESS);
    const char* options[] = {"-arch=compute_90", "-std=c++17", "-lineinfo"};
    const nvrtcResult compiled = nvrtcCompileProgram(program, 3, options);
    std::size_t log_size = 0;
    nvrtcGetProgramLogSize(program, &log_size);
    std::string log(log_size, '\0');
    nvrtcGetProgramLog(program, log.data());
    std::size_t ptx_size = 0;
    nvrtcGetPTXSize(program, &ptx_size);
    std::string ptx(ptx_size, '\0');
    nvrtcGetPTX(program, ptx.data());
    nvrtcDestroyProgram(&program);
    REQUIRE_MESSAGE(compiled == NVRTC_SUCCESS, log);
    ptx.resize(std::strlen(ptx.c_str()));
    return ptx;
}

inline int line_of(const fs::path& path, const std::string& needle) {
    std::istringstream text(read_text(path));
    std::string line;
    for (int number = 1; std::getline(text, line); ++number) {
        if (line.find(needle) != std::string::npos)
            return number;
    }
    FAIL("no line containing " << needle << " in " << path);
    return 0;
}

inline std::uint64_t upload(sim::GlobalMemory& memory, const std::vector<float>& values) {
    const std::uint64_t address = memory.allocate(values.size() * sizeof(float));
    memory.write(address, values.data(), values.size() * sizeof(float));
    return address;
}

inline std::vector<float> read_floats(const sim::GlobalMemory& memory, std::uint64_t address,
                                      std::size_t count) {
    std::vector<float> values(count);
    memory.read(address, values.data(), count * sizeof(float));
    return values;
}

}  // namespace grader::testing
