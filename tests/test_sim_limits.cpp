// Launches a GPU refuses are refused on the simulator too, before anything is allocated for
// them: static shared memory over 48 KiB per block, local memory over 512 KiB per thread. The
// refusal is the student's kernel's fail, not an ungradable submission.

#include <doctest/doctest.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "grader_run.hpp"
#include "sim/sim.hpp"
#include "sim_kernels.hpp"
#include "test_paths.hpp"

namespace sim = grader::sim;
namespace fs = std::filesystem;
using namespace grader::testing;

namespace {

// The process's peak resident memory so far, in KiB.
long peak_kib() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

struct Probe {
    sim::LaunchResult result;
    std::vector<float> outputs;
};

Probe run_probe(const std::string& fixture_name) {
    const sim::Module module =
        sim::parse_ptx(compile_to_ptx(sim_fixture(fixture_name), "probe.cu"));
    sim::GlobalMemory memory;
    const std::uint64_t in = upload(memory, std::vector<float>(2048, 3.0f));
    const std::uint64_t out = upload(memory, std::vector<float>(256, -1.0f));
    const std::size_t n = 256;
    const int stride = 1;
    Probe p;
    p.result = sim::launch(module, "probeSharedStride", {1, 1, 1}, {256, 1, 1},
                           {sim::param_bytes(in), sim::param_bytes(out), sim::param_bytes(n),
                            sim::param_bytes(stride)},
                           memory, {});
    p.outputs = read_floats(memory, out, 256);
    return p;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a 2 GiB local array is refused as a GPU refuses it, without allocating it") {
    const long before = peak_kib();
    const Probe p = run_probe("probe_huge_local_array.cu");
    CHECK(peak_kib() - before < 64 * 1024);
    REQUIRE(p.result.status == sim::LaunchStatus::fault);
    REQUIRE(p.result.fault);
    CHECK(p.result.fault->kind == "launch");
    CAPTURE(p.result.message);
    CHECK(contains(p.result.message, "too many resources requested for launch"));
    CHECK(contains(p.result.message, "2147483648 bytes of local memory per thread"));
    CHECK(contains(p.result.message, "512 KiB"));
    CHECK(p.outputs[0] == -1.0f);  // nothing ran
}

TEST_CASE("64 KiB of static __shared__ memory is refused: a GPU allows 48 KiB") {
    const Probe p = run_probe("probe_64k_static_shared.cu");
    REQUIRE(p.result.status == sim::LaunchStatus::fault);
    REQUIRE(p.result.fault);
    CHECK(p.result.fault->kind == "launch");
    CAPTURE(p.result.message);
    CHECK(contains(p.result.message, "too many resources requested for launch"));
    CHECK(contains(p.result.message, "65536 bytes of static __shared__ memory per block"));
    CHECK(contains(p.result.message, "48 KiB"));
}

TEST_CASE("a large local array within the GPU's limit runs, paying only for the pages it touches") {
    const long before = peak_kib();
    const Probe p = run_probe("probe_sparse_local_array.cu");
    REQUIRE_MESSAGE(p.result.status == sim::LaunchStatus::completed, p.result.message);
    for (const float value : p.outputs)
        REQUIRE(value == 3.0f);
    // 256 threads x 256 KiB is 64 MiB if made whole; each thread touches one or two pages.
    CHECK(peak_kib() - before < 24 * 1024);
}

TEST_CASE(
    "a probe the GPU would refuse to launch fails the grade as the student's, not ungradable") {
    const fs::path root(GRADER_SOURCE_DIR);
    const fs::path scratch = grader::testing::scratch_root("sim_limits");
    const auto grade = [&](const std::string& name) {
        const fs::path folder = scratch / fs::path(name).stem();
        fs::remove_all(folder);
        fs::create_directories(folder);
        fs::copy_file(root / "student/example/submission.yaml", folder / "submission.yaml");
        fs::copy_file(sim_fixture(name), folder / "probe.cu");
        const fs::path report = scratch / (fs::path(name).stem().string() + ".json");
        return run_grader({"grade", folder.string(), "--backend", "sim", "--format", "json",
                           "--output", report.string(), "--seed", "7", "--quiet"},
                          report, kNoGpu);
    };
    SUBCASE("2 GiB of local memory per thread: refused at the launch") {
        const GraderRun run = grade("probe_huge_local_array.cu");
        CAPTURE(run.output);
        REQUIRE(run.report.is_object());
        CHECK(run.report.value("verdict", "") == "fail");
        CHECK(run.exit_code == 1);
        const auto& interruption = run.report["interruption"];
        REQUIRE(interruption.is_object());
        CHECK(interruption.value("students_fault", false));
        CHECK(interruption.value("kind", "") == "launch");
        CHECK(contains(interruption.value("message", ""), "too many resources requested"));
    }
    SUBCASE("64 KiB of static shared memory: refused by ptxas at the compile, or at the launch") {
        // NVRTC 13 runs ptxas for the simulator's arch and refuses it there ("too much shared
        // data"); where NVRTC gives PTX only (Debian's CUDA 12.4), the simulator refuses the
        // launch as a GPU would. Either way it is the student's fail.
        const GraderRun run = grade("probe_64k_static_shared.cu");
        CAPTURE(run.output);
        REQUIRE(run.report.is_object());
        CHECK(run.report.value("verdict", "") == "fail");
        CHECK(run.exit_code == 1);
        const auto& interruption = run.report["interruption"];
        const bool refused_at_launch =
            interruption.is_object() && interruption.value("students_fault", false) &&
            contains(interruption.value("message", ""), "too many resources requested");
        CHECK((contains(run.report.value("summary", ""), "too much shared data") ||
               refused_at_launch));
    }
}
