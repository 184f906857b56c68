// The counters built without CUPTI's range profiler (harness/counters/without_cupti.cpp), which a
// toolkit without it (Debian's CUDA 12.4) builds instead of CUPTI's: every counter says why it
// cannot count, and a whole grader linked with them (grader_without_cupti, tests/CMakeLists.txt)
// grades as the grader does. Both are built in every build, so the stand-in cannot fall behind
// counters.hpp where CUPTI is present.

#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "counters/counters.hpp"
#include "grader_run.hpp"
#include "test_paths.hpp"

using namespace grader::counters;
using namespace grader::testing;

namespace {

const std::string kWithoutCupti = from_test_program(GRADER_TESTS_TO_GRADER_WITHOUT_CUPTI);

}  // namespace

TEST_CASE("a counter built without CUPTI says why at every count and never launches") {
    SharedMemoryCounter counter = SharedMemoryCounter::open(nullptr, 0);
    CHECK_FALSE(counter.available());
    CHECK(counter.availability() == CounterAvailability::no_cupti);
    CHECK(counter.reason().find("CUPTI lacks the range profiler") != std::string::npos);
    CHECK(counter.description().empty());
    CHECK(counter.passes() == 0);
    counter.keep_session(true);

    int launches = 0;
    const SharedMemoryCounter::Launch launch = [&launches] { ++launches; };
    const auto one = counter.count(launch);
    CHECK_FALSE(one.counted());
    CHECK(one.availability == CounterAvailability::no_cupti);
    CHECK(one.reason == counter.reason());
    const auto each = counter.count_each({launch, launch});
    CHECK(each.availability == CounterAvailability::no_cupti);
    CHECK(each.value.empty());
    const auto lines = counter.count_by_line("", "", launch);
    CHECK(lines.availability == CounterAvailability::no_cupti);
    CHECK(lines.value.lines.empty());
    CHECK(launches == 0);
    counter.keep_session(false);

    SharedMemoryCounter moved = std::move(counter);
    CHECK(moved.availability() == CounterAvailability::no_cupti);
    CHECK(to_string(CounterAvailability::no_cupti) == "no_cupti");
}

TEST_CASE("the grader linked without CUPTI gives the grader's report on the simulator") {
    const auto dir = scratch_root("counters_without_cupti");
    std::filesystem::create_directories(dir);
    for (const auto& entry : std::vector<std::pair<std::string, std::string>>{
             {"student/example", ""}, {"student/padding/example", "day15-padding"}}) {
        const auto& folder = entry.first;
        const auto& exercise = entry.second;
        CAPTURE(folder);
        std::vector<std::string> args = {
            "grade",     (std::filesystem::path(GRADER_SOURCE_DIR) / folder).string(),
            "--seed",    "5",
            "--backend", "sim",
            "--format",  "json",
            "--quiet"};
        if (!exercise.empty()) {
            args.insert(args.end(), {"--exercise", exercise});
        }
        auto with = args;
        with.insert(with.end(), {"--output", (dir / "with.json").string()});
        auto without = args;
        without.insert(without.end(), {"--output", (dir / "without.json").string()});
        const GraderRun graded = run_grader(with, dir / "with.json");
        const GraderRun stand_in = run_grader_program(kWithoutCupti, without, dir / "without.json");
        REQUIRE(graded.exit_code == 0);
        CHECK(stand_in.exit_code == graded.exit_code);
        REQUIRE(stand_in.report.is_object());
        CHECK(stand_in.report["verdict"] == "pass");
        CHECK(stand_in.report["score"] == graded.report["score"]);
        CHECK(stand_in.report["checks"] == graded.report["checks"]);
        CHECK(stand_in.report["rows"] == graded.report["rows"]);
    }
}
