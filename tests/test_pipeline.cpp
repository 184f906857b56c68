// The grading pipeline over a scripted fake device (no GPU, no simulator in the device's place),
// and the blame table that decides whose fault a stop is.

#include <cxxabi.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "checks/checks.hpp"
#include "common/kernel_ids.hpp"
#include "compile/compile.hpp"
#include "device/backend.hpp"
#include "device/class_cache.hpp"
#include "device/device.hpp"
#include "device/device_server.hpp"
#include "device/fallback_device.hpp"
#include "device/remote_device.hpp"
#include "device/session_account.hpp"
#include "device/wire.hpp"
#include "exercise/exercise.hpp"
#include "grade/limits.hpp"
#include "grade/pipeline.hpp"
#include "grade/plan.hpp"
#include "grade/protocol.hpp"
#include "grade/stage.hpp"
#include "grade/worker.hpp"
#include "grade/worker_options.hpp"
#include "model/measurements.hpp"
#include "model/observations.hpp"
#include "test_paths.hpp"
#include "waiting.hpp"

using namespace grader;

namespace {

const Exercise& day15() {
    static const Exercise exercise =
        load_exercise(std::filesystem::path(GRADER_SOURCE_DIR) / "exercises/day15-bank-conflicts");
    return exercise;
}

// Observations that also keep every stage's limit, by the stage's name, and when the stage
// under way began.
class StageLimits final : public Observations {
public:
    using Clock = std::chrono::steady_clock;
    void stage(const Stage& stage, const StageLimit& limit) override {
        Observations::stage(stage, limit);
        limits.emplace_back(to_string(stage), limit);
        stage_began = Clock::now();
        if (!first_student_stage && stage.kind != Stage::Kind::load && stage.runs_student_code()) {
            first_student_stage = stage_began;
        }
    }
    double seconds_since_first_student_stage() const {
        return first_student_stage
                   ? std::chrono::duration<double>(finished - *first_student_stage).count()
                   : 0.0;
    }
    std::vector<std::pair<std::string, StageLimit>> limits;
    Clock::time_point stage_began = Clock::now();
    std::optional<Clock::time_point> first_student_stage;
    Clock::time_point finished;
};

class FakeKernel final : public LoadedKernel {};

// A device that does what its script says and writes down what it was asked, in order.
class FakeDevice final : public Device {
public:
    struct Script {
        std::map<std::pair<std::string, int>, DeviceLaunch::End> run_ends;  // default completed
        std::string refuse_load;  // a kernel id whose load the device refuses
        DeviceLaunch::End time_end = DeviceLaunch::End::completed;
        DeviceLaunch::End count_end = DeviceLaunch::End::completed;
        bool counters = true;             // false: count() cannot count, with the reason below
        std::optional<double> kernel_ms;  // what every launch took on the device, where it says
        std::uint32_t blocks = 4;         // the grid, and so each launch's outputs
        // A run at which the device itself fails (throws), as a driver call outside any kernel.
        std::optional<std::pair<std::string, int>> device_fails_at;
        // count() answers what a GPU counts of the lesson's probe over the fake's grid (`blocks`
        // blocks of 256 threads: 16,384 shared loads and 64 stores each), with its loads merged
        // in pairs by ptxas where merged_loads.
        bool probe_counts = false;
        bool merged_loads = false;
        // Each launch of the student's kernel takes this long; a stage that would pass its
        // limit (as `stages` last heard it) ends there, as the grader ends the worker's.
        std::optional<double> student_launch_seconds;
        const StageLimits* stages = nullptr;
    };
    FakeDevice(const Exercise& exercise, Script script, std::vector<std::string>& events)
        : exercise_(exercise), script_(std::move(script)), events_(events) {}

private:
    DeviceCapabilities do_capabilities() const override { return {true, true, false}; }
    void do_describe(Environment& environment) override {
        environment.device_name = "scripted fake device";
        environment.grid_blocks = script_.blocks;
    }
    LoadResult do_load(const KernelSpec& spec, const CompiledKernel& compiled) override {
        events_.push_back("load " + spec.id);
        LoadResult result;
        if (spec.id == script_.refuse_load) {
            result.problem = "the fake device refuses " + spec.id;
            return result;
        }
        auto kernel = std::make_unique<FakeKernel>();
        kernel->id = spec.id;
        kernel->param_sizes = compiled.outcome.param_sizes;
        kernel->param_source = "ptx";
        kernel->static_shared_bytes = 8192;  // what a driver says of the probe's tile
        kernel->registers = 30;
        result.kernel = std::move(kernel);
        return result;
    }
    LaunchGeometry do_geometry(const LoadedKernel&) override {
        return {Dim3Spec{script_.blocks, 1, 1}, exercise_.launch.block};
    }
    void do_put_input(const InputSpec& input, InputWords words) override {
        inputs_[input.id] = std::move(words);
    }
    DeviceLaunch do_run(const LaunchCase& launch, const InputSpec& input,
                        const LaunchGeometry& geometry) override {
        const LoadedKernel& kernel = *launch.kernel;
        const int stride = launch.stride;
        events_.push_back("run " + kernel.id + " " + std::to_string(stride));
        REQUIRE(inputs_.count(input.id) == 1);  // given before any launch with it
        if (script_.device_fails_at == std::make_pair(kernel.id, stride)) {
            throw std::runtime_error("scripted device failure");
        }
        DeviceLaunch ran;
        if (kernel.id == kStudentKernel && !spin(1)) {
            ran.end = DeviceLaunch::End::timeout;
            ran.message = "past its stage's limit";
            return ran;
        }
        const auto scripted = script_.run_ends.find({kernel.id, stride});
        if (scripted != script_.run_ends.end()) {
            ran.end = scripted->second;
            ran.message = "scripted end";
            return ran;
        }
        if (launch.outputs_read) {
            ran.outputs = outputs(input.id, geometry);
        }
        ran.kernel_ms = script_.kernel_ms;
        return ran;
    }
    TimingSamples do_time(const std::vector<LaunchCase>& launches, const InputSpec& input,
                          const LaunchGeometry& geometry) override {
        events_.push_back("time");
        TimingSamples samples;
        // Warm-up, sizing and ten samples of each of the student's rows.
        if (!spin(13 * std::count_if(launches.begin(), launches.end(), [](const LaunchCase& c) {
                      return c.kernel->id == kStudentKernel;
                  }))) {
            samples.end = DeviceLaunch::End::timeout;
            samples.message = "past its stage's limit";
            return samples;
        }
        if (script_.time_end != DeviceLaunch::End::completed) {
            samples.end = script_.time_end;
            samples.message = "scripted timing fault";
            return samples;
        }
        samples.rounds = 5;
        events_.push_back("timed " + std::to_string(launches.size()));
        for (const LaunchCase& c : launches) {
            // Time in proportion to the bank-conflict degree, the same in every round.
            const double ms = 0.01 * std::gcd(c.stride, 32);
            samples.per_round_ms.push_back(std::vector<double>(5, ms));
            samples.launches_per_sample.push_back(1);
            samples.final_outputs.push_back(c.outputs_read ? outputs(input.id, geometry)
                                                           : std::vector<float>{});
        }
        return samples;
    }
    HardwareCounts do_count(const std::vector<LaunchCase>& launches, const InputSpec&,
                            const LaunchGeometry&) override {
        events_.push_back("count");
        HardwareCounts counts;
        if (!spin(static_cast<long>(launches.size()))) {
            counts.end = DeviceLaunch::End::timeout;
            counts.message = "past its stage's limit";
            return counts;
        }
        if (script_.count_end != DeviceLaunch::End::completed) {
            counts.end = script_.count_end;
            counts.message = "scripted counting fault";
            return counts;
        }
        if (!script_.counters) {
            counts.reason = "the fake's counters are off";
            return counts;
        }
        counts.counted = true;
        counts.description = "the fake's counters";
        for (const LaunchCase& c : launches) {
            if (script_.probe_counts) {
                const std::uint64_t blocks = script_.blocks;
                const auto degree = static_cast<std::uint64_t>(std::gcd(c.stride, 32));
                SharedAccessCounts probe;
                probe.load_requests = 16'384 * blocks / (script_.merged_loads ? 2 : 1);
                probe.load_wavefronts = 16'384 * blocks * degree;
                probe.load_ideal_wavefronts = 16'384 * blocks;
                probe.store_requests = 64 * blocks;
                probe.store_wavefronts = 64 * blocks;
                probe.store_ideal_wavefronts = 64 * blocks;
                counts.counts.push_back(probe);
                continue;
            }
            SharedAccessCounts shared;
            shared.load_requests = 100;
            shared.load_wavefronts = 100 * static_cast<std::uint64_t>(std::gcd(c.stride, 32));
            shared.store_requests = 100;
            shared.store_wavefronts = shared.load_wavefronts;
            counts.counts.push_back(shared);
        }
        return counts;
    }
    std::string do_acquire() override {
        events_.push_back("acquire");
        CHECK_FALSE(held_);
        held_ = true;
        return "fake-bus";
    }
    void do_release() override {
        events_.push_back("release");
        CHECK(held_);  // once for each acquire
        held_ = false;
    }

private:
    // `launches` of the student's, each student_launch_seconds long; false where the stage's
    // limit came first, which is then waited out.
    bool spin(long launches) const {
        if (!script_.student_launch_seconds || launches == 0) {
            return true;
        }
        const double took = static_cast<double>(launches) * *script_.student_launch_seconds;
        const double elapsed =
            std::chrono::duration<double>(StageLimits::Clock::now() - script_.stages->stage_began)
                .count();
        const double left = script_.stages->current_limit.seconds - elapsed;
        std::this_thread::sleep_for(std::chrono::duration<double>(std::min(took, left)));
        return took < left;
    }

    // The same outputs from every kernel: the student's agree with the oracle's.
    std::vector<float> outputs(const std::string& input, const LaunchGeometry& geometry) const {
        std::vector<float> words(output_elements(exercise_, geometry));
        for (std::size_t i = 0; i < words.size(); ++i) {
            words[i] = static_cast<float>(i % 97) + static_cast<float>(input.size());
        }
        return words;
    }

    const Exercise& exercise_;
    Script script_;
    std::vector<std::string>& events_;
    std::map<std::string, InputWords> inputs_;
    bool held_ = false;
};

struct Graded {
    StageLimits seen;
    std::vector<std::string> events;
};

// How the grade reaches its device: the fake itself, or the fake behind a device server's
// socket (with `local` where no server answers).
struct Through {
    std::filesystem::path server;
    std::vector<std::string>* local = nullptr;
    std::chrono::milliseconds reconnect{300};
    const Exercise* exercise = nullptr;  // null: Part 1
};

Graded grade_with(const FakeDevice::Script& script,
                  const std::string& submission = "student/example", const Through& through = {}) {
    // The exercise's kernels compile through a cache of the test's own.
    static const std::filesystem::path cache =
        std::filesystem::temp_directory_path() /
        ("grader-test-pipeline-cache-" + std::to_string(::getpid()));
    ::setenv("GRADER_CACHE_DIR", cache.c_str(), 1);
    const Exercise& exercise = through.exercise != nullptr ? *through.exercise : day15();
    Graded graded;
    WorkerOptions options;
    options.exercise_dir = exercise.directory;
    options.submission_dir = std::filesystem::path(GRADER_SOURCE_DIR) / submission;
    options.seed = 7;
    options.backend = "cuda";
    DeviceChoice choice;
    choice.backend = Backend::cuda;
    choice.arch = "sm_90";
    std::vector<std::string>& events = graded.events;
    FakeDevice::Script watched = script;
    watched.stages = &graded.seen;
    choice.open = [&watched, &events, &exercise]() -> std::unique_ptr<Device> {
        return std::make_unique<FakeDevice>(exercise, watched, events);
    };
    if (!through.server.empty()) {
        std::vector<std::string>& local = *through.local;
        choice.open = [&script, &local, &through, &exercise]() -> std::unique_ptr<Device> {
            return std::make_unique<FallbackDevice>(
                open_remote_device(through.server, 7, through.reconnect),
                [&script, &local, &exercise] {
                    return std::make_unique<FakeDevice>(exercise, script, local);
                });
        };
    }
    PipelineHooks hooks;
    hooks.grader_executable = GRADER_BINARY;
    run_pipeline(exercise, options, graded.seen, choice, hooks);
    graded.seen.finished = StageLimits::Clock::now();
    return graded;
}

std::ptrdiff_t position(const std::vector<std::string>& events, const std::string& event) {
    const auto found = std::find(events.begin(), events.end(), event);
    return found == events.end() ? -1 : found - events.begin();
}

// Every event that uses the device lies between acquire and release.
void check_lock_brackets(const std::vector<std::string>& events) {
    const auto acquire = position(events, "acquire");
    const auto release = position(events, "release");
    REQUIRE(acquire >= 0);
    REQUIRE(release > acquire);
    CHECK(std::count(events.begin(), events.end(), "acquire") == 1);
    CHECK(std::count(events.begin(), events.end(), "release") == 1);
    for (std::size_t i = 0; i < events.size(); ++i) {
        if (events[i] != "acquire" && events[i] != "release") {
            INFO(events[i]);
            CHECK(static_cast<std::ptrdiff_t>(i) > acquire);
            CHECK(static_cast<std::ptrdiff_t>(i) < release);
        }
    }
}

// A grade that stopped: where, how, and whose fault the blame table says it is.
void check_stopped(const Measurements& m, const std::string& stage, StopKind kind,
                   bool students_fault) {
    REQUIRE(m.interruption);
    CHECK(m.interruption->stage == stage);
    CHECK(m.interruption->kind == kind);
    CHECK(m.interruption->students_fault == students_fault);
}

}  // namespace

TEST_CASE("a correct grade: every case runs, is timed and counted while the device is held") {
    const Graded graded = grade_with({});
    const Measurements& m = graded.seen.measurements;
    REQUIRE_FALSE(m.interruption);
    check_lock_brackets(graded.events);
    // The oracle runs before the student's kernel at every stride.
    CHECK(position(graded.events, "run reference 8") < position(graded.events, "run student 8"));
    CHECK(position(graded.events, "time") < position(graded.events, "count"));
    const KernelRun* student8 = m.run("student", 8);
    REQUIRE(student8 != nullptr);
    REQUIRE(student8->ratio);
    CHECK(*student8->ratio == doctest::Approx(8.0));
    CHECK(student8->count_source == "hardware");
    REQUIRE(student8->counts);
    CHECK(student8->counts->load_wavefronts == 800);
    REQUIRE_FALSE(student8->outputs.empty());
    CHECK(std::all_of(student8->outputs.begin(), student8->outputs.end(),
                      [](const OutputComparison& o) { return o.ok; }));
    CHECK(m.environment.gpu_bus_id == "fake-bus");
    CHECK(m.environment.gpu_held_until >= m.environment.gpu_held_from);

    // The oracle runs on the device, with every input, only where the student's kernel runs:
    // nothing reads its outputs at a stride of its own. Every stride is still timed.
    const std::vector<int> student = student_strides_to_run(day15(), m.unnamed_strides);
    const std::vector<int> reference = reference_strides_to_run(day15(), m.unnamed_strides);
    REQUIRE(reference.size() > student.size());
    for (const int stride : reference) {
        const bool students = std::find(student.begin(), student.end(), stride) != student.end();
        CAPTURE(stride);
        CHECK(std::count(graded.events.begin(), graded.events.end(),
                         "run reference " + std::to_string(stride)) ==
              (students ? static_cast<long>(day15().inputs.size()) : 0));
        const KernelRun* run = m.run("reference", stride);
        REQUIRE(run != nullptr);
        CHECK(run->timing);
    }
}

TEST_CASE("each stage of the student's may take a few times the exercise's own time and a margin") {
    // 4 ms a launch, two inputs a case: 4 x 8 ms, and the grade's margin.
    FakeDevice::Script quick;
    quick.kernel_ms = 4.0;
    const Graded fast = grade_with(quick);
    // 40 ms a launch: 4 x 80 ms.
    FakeDevice::Script slow;
    slow.kernel_ms = 40.0;
    const Graded slower = grade_with(slow);
    // A device that does not time its launches (the simulator): the run limit.
    const Graded untimed = grade_with({});
    const double run_limit = day15().limits.run_seconds;
    for (const auto* graded : {&fast, &slower, &untimed}) {
        std::size_t student_runs = 0;
        for (const auto& entry : graded->seen.limits) {
            const auto& stage = entry.first;
            const auto& limit = entry.second;
            CAPTURE(stage);
            if (stage.rfind("run student", 0) == 0) {
                ++student_runs;
                if (graded == &untimed) {
                    CHECK(limit.seconds == doctest::Approx(run_limit));
                    CHECK(limit.basis.empty());
                    continue;
                }
                // Nothing of the margin is spent by a quick fake.
                const double allowance = graded == &fast ? 0.032 : 0.32;
                CHECK(limit.seconds ==
                      doctest::Approx(allowance + kStudentMarginSeconds).epsilon(0.02));
                CHECK(limit.basis.find("4 times the reference probe's " +
                                       std::string(graded == &fast ? "8" : "80") +
                                       " ms for the same launches") == 0);
                CHECK(limit.basis.find("s the student's launches may take beyond that") !=
                      std::string::npos);
            } else if (stage.rfind("run ", 0) == 0) {
                // The exercise's own kernels keep the run limit.
                CHECK(limit.seconds == doctest::Approx(run_limit));
            } else if (stage == "time" || stage == "count") {
                // Both from the exercise's own time too, where the device said it.
                if (graded == &untimed) {
                    CHECK(limit.seconds == doctest::Approx(run_limit));
                } else {
                    CHECK(limit.seconds < (graded == &fast ? 5.0 : run_limit));
                    CHECK(limit.basis.find(stage == "time" ? "the rounds' own 0.63 s"
                                                           : "the counter's start") == 0);
                }
            }
        }
        CHECK(student_runs ==
              student_strides_to_run(day15(), graded->seen.measurements.unnamed_strides).size());
    }
}

TEST_CASE("a kernel just under its first case's limit holds the device under 3 s in all") {
    for (const double seconds : {0.2, 0.7}) {
        CAPTURE(seconds);
        // Each launch of the student's spins `seconds`; the fake stops a stage at its limit as
        // the grader stops the worker there.
        FakeDevice::Script spinning;
        spinning.kernel_ms = 0.05;
        spinning.student_launch_seconds = seconds;
        const auto began = std::chrono::steady_clock::now();
        const Graded graded = grade_with(spinning);
        const Measurements& m = graded.seen.measurements;
        REQUIRE(m.interruption);
        CHECK(m.interruption->kind == StopKind::timeout);
        CHECK(m.interruption->students_fault);
        CHECK(m.interruption->stage.rfind("run student stride ", 0) == 0);
        // From the student's first stage to the grade's end.
        const double held = graded.seen.seconds_since_first_student_stage();
        CHECK(held < 3.0);
        CHECK(held > kStudentMarginSeconds - 0.1);  // the margin was spent, once
        // ... and only once: each stage's limit is what the margin has left after the stage
        // before (on an H200 the 0.7 s spinner ran a second 1.4 s stage on a limit computed
        // before the first was spent, and held the GPU 3.06 s).
        CHECK(held < kStudentMarginSeconds + 0.5);
        CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count() <
              20.0);
    }
}

TEST_CASE(
    "the student's margin is spent once for the whole grade, and a stage never passes the "
    "run limit") {
    StudentBudget budget(30.0);
    const Allowance small{0.1, "basis"};
    CHECK(budget.limit(small).seconds == doctest::Approx(0.1 + kStudentMarginSeconds));
    CHECK(budget.limit(small).basis.find("basis, and 1.5 s left") == 0);
    budget.spent(0.05, small);  // within its allowance: nothing spent
    CHECK(budget.margin_left() == doctest::Approx(kStudentMarginSeconds));
    budget.spent(1.1, small);  // 1 s beyond
    CHECK(budget.margin_left() == doctest::Approx(kStudentMarginSeconds - 1.0));
    CHECK(budget.limit(small).seconds == doctest::Approx(0.1 + kStudentMarginSeconds - 1.0));
    budget.spent(5.0, small);
    CHECK(budget.margin_left() == 0.0);
    CHECK(budget.limit(small).seconds == doctest::Approx(0.1));
    const Allowance huge{60.0, "basis"};
    CHECK(budget.limit(huge).seconds == doctest::Approx(30.0));
    CHECK(budget.limit(huge).basis.empty());

    // The timing: each row's warm-up and sizing launches, one more, and min_samples + 1 samples
    // of enough launches to last min_sample_ms; the rounds' own warm-up and time cap.
    TimingSpec timing;
    timing.warmup_launches = 2;
    timing.warmup_ms = 30.0;
    timing.min_sample_ms = 0.5;
    timing.min_samples = 10;
    timing.max_seconds = 0.6;
    const Allowance rounds = timing_allowance(timing, {{0.1, false}, {0.1, true}});
    // A row of 0.1 ms: 4 launches, then 11 samples of 5 launches: 5.9 ms.
    CHECK(rounds.seconds == doctest::Approx(0.63 + 0.0059 + 4 * 0.0059));
    CHECK(timing_allowance(timing, {{2.0, true}}).seconds ==
          doctest::Approx(0.63 + 4 * (4 * 2.0 + 11 * 2.0) / 1000.0));
    // The count: twice each launch at most (two passes), and the counter's start.
    CHECK(count_allowance({1.0, 3.0}).seconds ==
          doctest::Approx(kCounterStartSeconds + 4 * 8.0 / 1000.0));
    CHECK(run_allowance(8.0, "the reference probe").seconds == doctest::Approx(0.032));
}

TEST_CASE("the plan: the oracle runs where the student's kernel does, every case is timed once") {
    const Exercise& exercise = day15();
    LoadedKernel reference;
    reference.id = "reference";
    LoadedKernel student;
    student.id = "student";
    const std::map<std::string, LoadedKernel*> loaded = {{"reference", &reference},
                                                         {"student", &student}};
    const std::vector<int> unnamed = {5, 24};
    const std::vector<int> students = student_strides_to_run(exercise, unnamed);
    const std::vector<int> references = reference_strides_to_run(exercise, unnamed);
    const LaunchGeometry geometry{Dim3Spec{4, 1, 1}, exercise.launch.block};
    const auto is_students = [&students](int stride) {
        return std::find(students.begin(), students.end(), stride) != students.end();
    };

    SUBCASE("on a GPU") {
        const GradePlan plan = plan_grade(exercise, loaded, unnamed, {true, true, false}, geometry);
        REQUIRE(plan.cases.size() == references.size() + students.size());
        for (std::size_t i = 0; i < plan.cases.size(); ++i) {
            const PlannedCase& c = plan.cases[i];
            CAPTURE(c.kernel);
            CAPTURE(c.stride);
            // The exercise's cases first, the student's after.
            CHECK(c.kernel == (i < references.size() ? "reference" : "student"));
            // The oracle runs, with every input, only where the student's kernel runs: nothing
            // reads its outputs at a stride of its own.
            const std::size_t runs = c.kernel == "student" || is_students(c.stride) ? 2 : 0;
            CHECK(c.run_count == runs);
            for (std::size_t r = 0; r < c.run_count; ++r) {
                const PlannedRun& run = plan.launches.runs[c.first_run + r];
                CHECK(run.launch.kernel->id == c.kernel);
                CHECK(run.launch.stride == c.stride);
                CHECK(run.launch.outputs_read);  // the oracle's are compared, the student's too
                CHECK(run.input == &exercise.inputs[r]);
            }
            // Each ratio over the same kernel at stride 1.
            REQUIRE(c.base);
            CHECK(plan.cases[*c.base].kernel == c.kernel);
            CHECK(plan.cases[*c.base].stride == 1);
            // The oracle's case at the same stride, whose runs the student's compare with, by
            // input: the run's own slot in the plan.
            REQUIRE(c.oracle);
            CHECK(plan.cases[*c.oracle].kernel == "reference");
            CHECK(plan.cases[*c.oracle].stride == c.stride);
            for (std::size_t r = 0; r < c.run_count; ++r) {
                CHECK(plan.run_of(i, exercise.inputs[r]) == c.first_run + r);
                const auto oracle_run = plan.run_of(*c.oracle, exercise.inputs[r]);
                REQUIRE(oracle_run);
                CHECK(plan.launches.runs[*oracle_run].launch.kernel == &reference);
                CHECK(plan.launches.runs[*oracle_run].input == &exercise.inputs[r]);
            }
            // Every case is timed; the exercise's may be the class's, the student's never; only
            // the student's timed outputs are read.
            const LaunchCase& timed = plan.launches.timed.at(i);
            CHECK(timed.kernel->id == c.kernel);
            CHECK(timed.stride == c.stride);
            CHECK(timed.reusable == (c.kernel == "reference"));
            CHECK(timed.outputs_read == (c.kernel == "student"));
        }
        // The student's launches are counted after timing, in the order of their cases.
        REQUIRE(plan.launches.counted.size() == students.size());
        REQUIRE(plan.student_cases().size() == students.size());
        for (std::size_t i = 0; i < students.size(); ++i) {
            CHECK(plan.launches.counted[i].kernel == &student);
            CHECK(plan.launches.counted[i].stride == plan.cases[references.size() + i].stride);
            CHECK(plan.student_cases()[i] == references.size() + i);
        }
        CHECK(plan.launches.timing_input == &exercise.inputs.front());
        CHECK(plan.launches.reloaded.size() == 2);
    }
    SUBCASE("on the simulator, which counts every case as it runs") {
        const GradePlan plan = plan_grade(exercise, loaded, unnamed, {false, true, true}, geometry);
        for (std::size_t i = 0; i < plan.cases.size(); ++i) {
            const PlannedCase& c = plan.cases[i];
            CAPTURE(c.stride);
            // The timing input at every stride: its count and modeled cost.
            CHECK(c.run_count == (c.kernel == "student" || is_students(c.stride) ? 2u : 1u));
            CHECK(plan.run_of(i, *plan.launches.timing_input) == c.first_run);
            // The other input only where the student's kernel runs: no slot for it elsewhere.
            CHECK(plan.run_of(i, exercise.inputs[1]).has_value() ==
                  (c.kernel == "student" || is_students(c.stride)));
        }
        CHECK(plan.launches.timed.size() == plan.cases.size());
        CHECK(plan.launches.counted.empty());
    }
    SUBCASE("a sweep: the exercise's kernels alone, whose outputs nothing reads") {
        const GradePlan plan =
            plan_grade(exercise, {{"reference", &reference}}, {}, {true, true, false}, geometry);
        REQUIRE(plan.cases.size() == reference_strides_to_run(exercise, {}).size());
        for (const PlannedRun& run : plan.launches.runs) {
            CHECK_FALSE(run.launch.outputs_read);
        }
        CHECK(plan.launches.runs.size() == 2 * plan.cases.size());
        CHECK(plan.launches.counted.empty());
    }
    SUBCASE(
        "Part 2: nothing timed against the copy the student's kernel is paired with is reused") {
        static const Exercise padding =
            load_exercise(std::filesystem::path(GRADER_SOURCE_DIR) / "exercises/day15-padding");
        std::map<std::string, LoadedKernel> kernels;
        std::map<std::string, LoadedKernel*> all;
        for (const KernelSpec& spec : padding.kernels) {
            kernels[spec.id].id = spec.id;
            all[spec.id] = &kernels[spec.id];
        }
        const GradePlan plan = plan_grade(padding, all, {}, {true, true, false}, geometry);
        REQUIRE(plan.cases.size() == padding.kernels.size());
        for (std::size_t i = 0; i < plan.cases.size(); ++i) {
            CAPTURE(plan.cases[i].kernel);
            CHECK_FALSE(plan.launches.timed[i].reusable);
            REQUIRE(plan.cases[i].base);
            CHECK(plan.cases[*plan.cases[i].base].kernel == "copy");
            const PlannedRun& run = plan.launches.runs[plan.cases[i].first_run];
            CHECK(run.launch.outputs_read == (plan.cases[i].kernel == "student" ||
                                              plan.cases[i].kernel == padding.oracle()->id));
        }
    }
}

TEST_CASE("the student's compile outcome is sent once; loading sends only what it adds") {
    // Counts what the worker sends, as the grader's side of the pipe would receive it.
    struct Counting final : Observations {
        std::map<std::string, int> compiled_count;
        std::map<std::string, int> loaded_count;
        void compiled(const std::string& kernel, const CompileOutcome& value) override {
            ++compiled_count[kernel];
            Observations::compiled(kernel, value);
        }
        void loaded(const std::string& kernel, const LoadFacts& value) override {
            ++loaded_count[kernel];
            Observations::loaded(kernel, value);
        }
    };
    Counting seen;
    WorkerOptions options;
    options.exercise_dir = day15().directory;
    options.submission_dir = std::filesystem::path(GRADER_SOURCE_DIR) / "student/example";
    options.seed = 7;
    options.backend = "cuda";
    DeviceChoice choice;
    choice.backend = Backend::cuda;
    choice.arch = "sm_90";
    std::vector<std::string> events;
    const FakeDevice::Script script;
    choice.open = [&script, &events]() -> std::unique_ptr<Device> {
        return std::make_unique<FakeDevice>(day15(), script, events);
    };
    PipelineHooks hooks;
    hooks.grader_executable = GRADER_BINARY;
    run_pipeline(day15(), options, seen, choice, hooks);
    REQUIRE_FALSE(seen.measurements.interruption);
    CHECK(seen.compiled_count["student"] == 1);
    CHECK(seen.loaded_count["student"] == 1);
    for (const auto& entry : seen.compiled_count) {
        const auto& kernel = entry.first;
        const auto& count = entry.second;
        CAPTURE(kernel);
        CHECK(count == 1);
    }
    // What loading added reached the grader's copy of the outcome.
    CHECK(seen.measurements.student.ok);
    CHECK(seen.measurements.student.abi_problem.empty());
    CHECK(seen.measurements.student.static_shared_bytes == 8192);
    CHECK(seen.measurements.student.registers == 30);
}

TEST_CASE("a student's kernel that faults at one stride stops the grade there, as theirs") {
    FakeDevice::Script script;
    script.run_ends[{"student", 16}] = DeviceLaunch::End::fault;
    const Graded graded = grade_with(script);
    const Measurements& m = graded.seen.measurements;
    check_stopped(m, "run student stride 16", StopKind::fault, true);
    CHECK(m.interruption->message.find("stride 16") != std::string::npos);
    CHECK(position(graded.events, "time") == -1);
    check_lock_brackets(graded.events);
}

TEST_CASE("the same end in the exercise's own kernel is the machine's") {
    FakeDevice::Script oracle;
    oracle.run_ends[{"reference", 16}] = DeviceLaunch::End::fault;
    const Graded machine = grade_with(oracle);
    REQUIRE(machine.seen.measurements.interruption);
    CHECK(machine.seen.measurements.interruption->stage == "run reference stride 16");
    CHECK_FALSE(machine.seen.measurements.interruption->students_fault);
    check_lock_brackets(machine.events);
}

TEST_CASE("a fault in the timing rounds is an outcome of time(), blamed on the student") {
    FakeDevice::Script script;
    script.time_end = DeviceLaunch::End::fault;
    const Graded graded = grade_with(script);
    const Measurements& m = graded.seen.measurements;
    check_stopped(m, "time", StopKind::fault, true);
    CHECK(m.interruption->message.find("scripted timing fault") != std::string::npos);
    CHECK(position(graded.events, "count") == -1);
    check_lock_brackets(graded.events);
}

TEST_CASE("a refused launch while counting is the count stage's, and the device goes back") {
    FakeDevice::Script counting;
    counting.count_end = DeviceLaunch::End::refused;
    const Graded refused = grade_with(counting);
    check_stopped(refused.seen.measurements, "count", StopKind::launch, true);
    check_lock_brackets(refused.events);
}

TEST_CASE("counters that cannot count: the simulator's witness of the same source stands in") {
    FakeDevice::Script script;
    script.counters = false;
    const Graded graded = grade_with(script);
    const Measurements& m = graded.seen.measurements;
    REQUIRE_FALSE(m.interruption);
    const KernelRun* student8 = m.run("student", 8);
    REQUIRE(student8 != nullptr);
    CHECK(student8->count_source == "simulator");
    REQUIRE(student8->counts);
    // The example's probe at stride 8 conflicts 8 ways: the simulator, not the fake, said so.
    CHECK(student8->counts->load_wavefronts == 8 * student8->counts->load_requests);
    const auto& notes = m.environment.notes;
    CHECK(std::any_of(notes.begin(), notes.end(), [](const std::string& note) {
        return note.find("the fake's counters are off") != std::string::npos;
    }));
}

TEST_CASE("an exercise kernel the device will not load makes the grade ungradable") {
    FakeDevice::Script script;
    script.refuse_load = "reference";
    const Graded graded = grade_with(script);
    const Measurements& m = graded.seen.measurements;
    REQUIRE(m.interruption);
    CHECK(m.interruption->stage == "load");
    CHECK_FALSE(m.interruption->students_fault);
    CHECK(m.interruption->message.find("the fake device refuses reference") != std::string::npos);
    check_lock_brackets(graded.events);
}

TEST_CASE("no GPU where one was asked for: nothing is opened, and it is never the student's") {
    Observations seen;
    WorkerOptions options;
    options.exercise_dir = day15().directory;
    options.submission_dir = std::filesystem::path(GRADER_SOURCE_DIR) / "student/example";
    options.seed = 7;
    DeviceChoice choice;
    choice.backend = Backend::cuda;
    choice.arch = day15().default_arch;
    choice.no_gpu_reason = "no driver in this test";
    PipelineHooks hooks;
    hooks.grader_executable = GRADER_BINARY;
    run_pipeline(day15(), options, seen, choice, hooks);
    REQUIRE(seen.measurements.interruption);
    CHECK(seen.measurements.interruption->kind == StopKind::no_gpu);
    CHECK_FALSE(seen.measurements.interruption->students_fault);
    CHECK(seen.measurements.interruption->message.find("no driver in this test") !=
          std::string::npos);
    // The student's compile still ran (and was reported) without a device.
    CHECK(seen.measurements.student.attempted);
}

namespace {

// A device server over the fake, on a thread of the test, in a folder of its own.
class FakeServer {
public:
    explicit FakeServer(const FakeDevice::Script& script, const Exercise& exercise = day15())
        : folder_(std::filesystem::temp_directory_path() /
                  ("grader-test-server-" + std::to_string(::getpid()))),
          script_(script),
          exercise_(exercise) {
        std::filesystem::remove_all(folder_);
        std::filesystem::create_directories(folder_);
        socket_ = folder_ / "gpu0.sock";
        const int listening = wire::listen_on(socket_);
        thread_ = std::thread([this, listening] {
            stopped_ = serve_device_sessions(
                listening, exercise_,
                [this](std::uint64_t seed) {
                    seeds_.push_back(seed);
                    return std::make_unique<FakeDevice>(exercise_, script_, events_);
                },
                store_, [this](const SessionAccount& account) { accounts_.push_back(account); });
            ::close(listening);
            std::filesystem::remove(socket_);
            ended_ = true;
        });
    }
    ~FakeServer() {
        stop();
        std::filesystem::remove_all(folder_);
    }
    FakeServer(const FakeServer&) = delete;
    FakeServer& operator=(const FakeServer&) = delete;

    // Asks it to stop as `grader batch` does, then waits for its thread.
    void stop() {
        if (!thread_.joinable()) {
            return;
        }
        stop_device_server(socket_);
        thread_.join();
    }
    // Waits for the server to stop by itself, as it does after a kernel's fault or a device's
    // failure; past `seconds`, asks it to stop and returns false. A grade that never reached
    // the device (a compile that could not run) fails the test there, not at ctest's timeout.
    bool ends_by_itself(double seconds = 60) {
        if (!testing::wait_until([this] { return ended_.load(); }, seconds,
                                 std::chrono::milliseconds(20))) {
            stop();
            return false;
        }
        thread_.join();
        return true;
    }

    const std::filesystem::path& socket() const { return socket_; }
    const std::vector<std::string>& events() const { return events_; }
    const std::vector<std::uint64_t>& seeds() const { return seeds_; }
    const std::string& stopped() const { return stopped_; }
    const std::vector<SessionAccount>& accounts() const { return accounts_; }

private:
    std::filesystem::path folder_;
    std::filesystem::path socket_;
    FakeDevice::Script script_;
    const Exercise& exercise_;
    std::vector<std::string> events_;
    std::vector<std::uint64_t> seeds_;
    std::string stopped_;
    std::vector<SessionAccount> accounts_;
    ClassStore store_;
    std::atomic<bool> ended_{false};
    std::thread thread_;
};

}  // namespace

TEST_CASE(
    "through a device server a grade observes what the device itself gives, and the "
    "exercise's own launches are timed once per server") {
    const Graded direct = grade_with({});
    FakeServer server({});
    std::vector<std::string> local;
    const Graded first = grade_with({}, "student/example", {server.socket(), &local});
    const Graded second = grade_with({}, "student/example", {server.socket(), &local});
    server.stop();
    CHECK(server.stopped() == "asked to stop");
    CHECK(local.empty());  // no grade had to open a device of its own
    CHECK(server.seeds() == std::vector<std::uint64_t>{7, 7});
    // Each session's account: the lock held, and within it each kind of request answered and the
    // waits for the grade's next request, which add up to no more than the time held.
    REQUIRE(server.accounts().size() == 2);
    for (const SessionAccount& account : server.accounts()) {
        double answering = 0.0;
        for (const auto& [op, seconds] : account.request_seconds) {
            answering += seconds;
        }
        for (const char* op : {"load", "run", "time", "count", "reload"}) {
            CHECK_MESSAGE(account.request_seconds.count(op) == 1, op);
        }
        CHECK(account.held_seconds > 0.0);
        CHECK(answering > 0.0);
        CHECK(account.waiting_seconds > 0.0);
        CHECK(answering + account.waiting_seconds <= account.held_seconds + 1e-3);
        // The waits, by the request that ended each: they add up to the whole wait.
        double waits = 0.0;
        for (const auto& entry : account.waiting_before) {
            const auto& op = entry.first;
            const auto& seconds = entry.second;
            CHECK_MESSAGE(account.request_seconds.count(op) + (op == "release" ? 1 : 0) == 1, op);
            waits += seconds;
        }
        CHECK(waits == doctest::Approx(account.waiting_seconds));
        CHECK(account.setup_seconds > 0.0);
        CHECK(account.teardown_seconds > 0.0);
    }

    // Two sessions, each inside its own acquire and release, in the server's events.
    const std::vector<std::string>& events = server.events();
    REQUIRE(std::count(events.begin(), events.end(), "acquire") == 2);
    const auto split = std::find(events.begin() + 1, events.end(), "acquire");
    check_lock_brackets({events.begin(), split});
    check_lock_brackets({split, events.end()});
    // The first grade timed every launch; the second only the student's (the exercise's own
    // reference launches were reused from the first).
    const auto timed = [](const std::vector<std::string>& list) {
        std::vector<std::string> found;
        std::copy_if(list.begin(), list.end(), std::back_inserter(found),
                     [](const std::string& e) { return e.rfind("timed ", 0) == 0; });
        return found;
    };
    const std::vector<std::string> direct_timed = timed(direct.events);
    const std::vector<std::string> server_timed = timed(events);
    REQUIRE(direct_timed.size() == 1);
    REQUIRE(server_timed.size() == 2);
    CHECK(server_timed[0] == direct_timed[0]);
    const std::size_t all = std::stoul(direct_timed[0].substr(6));
    const std::size_t student_only = std::stoul(server_timed[1].substr(6));
    CHECK(student_only < all);
    CHECK(student_only > 0);
    // The oracle's runs on the input that is the same for every grade (all ones) are the first
    // grade's; those on the seeded input run again.
    const auto runs_of = [](auto from, auto to, const std::string& prefix) {
        return std::count_if(from, to,
                             [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
    };
    const auto first_oracle = runs_of(events.begin(), split, "run reference");
    const auto second_oracle = runs_of(split, events.end(), "run reference");
    CHECK(first_oracle == runs_of(direct.events.begin(), direct.events.end(), "run reference"));
    // Every run is sent ahead (Device::follow): the first grade's runs are the direct grade's,
    // once each, in the same order.
    const auto runs = [](auto from, auto to) {
        std::vector<std::string> found;
        std::copy_if(from, to, std::back_inserter(found),
                     [](const std::string& e) { return e.rfind("run ", 0) == 0; });
        return found;
    };
    CHECK(runs(events.begin(), split) == runs(direct.events.begin(), direct.events.end()));
    CHECK(second_oracle * 2 == first_oracle);
    CHECK(runs_of(split, events.end(), "run student") ==
          runs_of(direct.events.begin(), direct.events.end(), "run student"));

    // Every run reads the same through the server as directly: outputs, ratios, counts.
    for (const Graded* graded : {&first, &second}) {
        const Measurements& m = graded->seen.measurements;
        REQUIRE_FALSE(m.interruption);
        CHECK(m.environment.gpu_bus_id == "fake-bus");
        CHECK(m.environment.device_name == "scripted fake device");
        REQUIRE(m.runs.size() == direct.seen.measurements.runs.size());
        for (const KernelRun& run : direct.seen.measurements.runs) {
            INFO(run.kernel << " stride " << run.stride);
            const KernelRun* through = m.run(run.kernel, run.stride);
            REQUIRE(through != nullptr);
            CHECK(through->ratio == run.ratio);
            CHECK(through->outputs.size() == run.outputs.size());
            CHECK(through->count_source == run.count_source);
            REQUIRE(through->counts.has_value() == run.counts.has_value());
            if (run.counts) {
                CHECK(through->counts->load_wavefronts == run.counts->load_wavefronts);
            }
            for (const OutputComparison& output : through->outputs) {
                CHECK(output.ok);
            }
        }
    }
    // The second grade says where its reference timings came from.
    const auto& notes = second.seen.measurements.environment.notes;
    CHECK(std::any_of(notes.begin(), notes.end(), [](const std::string& note) {
        return note.find("timed them once") != std::string::npos;
    }));
}

TEST_CASE(
    "a kernel that faults ends its device server after the answer; the next grade opens "
    "a device of its own") {
    FakeDevice::Script faulting;
    faulting.run_ends[{"student", 16}] = DeviceLaunch::End::fault;
    FakeServer server(faulting);
    std::vector<std::string> local;
    const Graded faulted = grade_with(faulting, "student/example", {server.socket(), &local});
    REQUIRE(server.ends_by_itself());
    CHECK(server.stopped().find("a kernel faulted") != std::string::npos);
    const Measurements& m = faulted.seen.measurements;
    check_stopped(m, "run student stride 16", StopKind::fault, true);
    CHECK(local.empty());

    // Nothing listens now: the next grade is graded on a device of its own, and says so.
    const Graded next = grade_with({}, "student/example", {server.socket(), &local});
    REQUIRE_FALSE(next.seen.measurements.interruption);
    check_lock_brackets(local);
    const auto& notes = next.seen.measurements.environment.notes;
    CHECK(std::any_of(notes.begin(), notes.end(), [](const std::string& note) {
        return note.find("device server did not answer within 300 ms") != std::string::npos;
    }));
}

TEST_CASE(
    "Part 2 through a device server: what the device gives, and nothing reused where every "
    "exercise kernel is timed against the copy the student's is paired with") {
    static const Exercise padding =
        load_exercise(std::filesystem::path(GRADER_SOURCE_DIR) / "exercises/day15-padding");
    Through alone;
    alone.exercise = &padding;
    const Graded direct = grade_with({}, "student/padding/example", alone);
    FakeServer server({}, padding);
    std::vector<std::string> local;
    Through through{server.socket(), &local};
    through.exercise = &padding;
    const Graded first = grade_with({}, "student/padding/example", through);
    const Graded second = grade_with({}, "student/padding/example", through);
    server.stop();
    CHECK(local.empty());
    const auto timed = [](const std::vector<std::string>& events) {
        return std::count_if(events.begin(), events.end(),
                             [](const std::string& e) { return e.rfind("timed ", 0) == 0; });
    };
    REQUIRE(timed(direct.events) == 1);
    CHECK(timed(server.events()) == 2);
    const auto direct_timed =
        *std::find_if(direct.events.begin(), direct.events.end(),
                      [](const std::string& e) { return e.rfind("timed ", 0) == 0; });
    CHECK(std::count(server.events().begin(), server.events().end(), direct_timed) == 2);
    for (const Graded* graded : {&first, &second}) {
        const Measurements& m = graded->seen.measurements;
        REQUIRE_FALSE(m.interruption);
        REQUIRE(m.runs.size() == direct.seen.measurements.runs.size());
        for (const KernelRun& run : direct.seen.measurements.runs) {
            INFO(run.kernel);
            const KernelRun* through_run = m.run(run.kernel, run.stride);
            REQUIRE(through_run != nullptr);
            CHECK(through_run->ratio == run.ratio);
            for (const OutputComparison& output : through_run->outputs) {
                CHECK(output.ok);
            }
        }
        for (const std::string& note : m.environment.notes) {
            CHECK(note.find("timed them once") == std::string::npos);
        }
    }
}

TEST_CASE("a server's session account crosses to the batch as one line, and adds up") {
    SessionAccount account;
    account.held_seconds = 0.25;
    account.waiting_seconds = 0.03;
    account.request_seconds = {{"run", 0.04}, {"time", 0.1}, {"count", 0.02}};
    account.waiting_before = {{"run", 0.02}, {"count", 0.01}};
    account.setup_seconds = 0.004;
    account.teardown_seconds = 0.002;
    account.idle_seconds = 0.5;
    // As the server writes it to its message pipe, and as the batch reads the line.
    const std::string line = session_account_json(account).dump();
    const SessionAccount read = session_account_of(nlohmann::json::parse(line));
    CHECK(nlohmann::json::parse(line).at("type") == "session");
    CHECK(read.held_seconds == doctest::Approx(0.25));
    CHECK(read.waiting_seconds == doctest::Approx(0.03));
    CHECK(read.request_seconds == account.request_seconds);
    CHECK(read.waiting_before == account.waiting_before);
    CHECK(read.setup_seconds == doctest::Approx(0.004));
    CHECK(read.teardown_seconds == doctest::Approx(0.002));
    CHECK(read.idle_seconds == doctest::Approx(0.5));
    SessionAccount total;
    total.add(read);
    total.add(read);
    CHECK(total.held_seconds == doctest::Approx(0.5));
    CHECK(total.request_seconds.at("time") == doctest::Approx(0.2));
    // What is not a number (a NaN is written as null) counts as nothing; the batch goes on.
    const SessionAccount odd = session_account_of(
        nlohmann::json::parse(R"({"type":"session","held_seconds":null,"waiting_seconds":"x",)"
                              R"("request_seconds":{"run":null,"time":0.5}})"));
    CHECK(odd.held_seconds == 0.0);
    CHECK(odd.waiting_seconds == 0.0);
    CHECK(odd.request_seconds.at("run") == 0.0);
    CHECK(odd.request_seconds.at("time") == doctest::Approx(0.5));
    CHECK(session_account_of(nlohmann::json::parse("[1, 2]")).request_seconds.empty());
}

TEST_CASE("through a device server the student's limits are as the device's own, reused runs too") {
    FakeDevice::Script script;
    script.kernel_ms = 30.0;
    const Graded direct = grade_with(script);
    FakeServer server(script);
    std::vector<std::string> local;
    const Graded first = grade_with(script, "student/example", {server.socket(), &local});
    const Graded second = grade_with(script, "student/example", {server.socket(), &local});
    server.stop();
    // The second grade's oracle runs on the all-ones input were the first's: their times came
    // with them, so its limits are the same.
    // (To the hundredth of a second: the margin left is what earlier stages did not spend.)
    const auto student_limits = [](const Graded& graded) {
        std::vector<std::pair<std::string, long>> found;
        for (const auto& [stage, limit] : graded.seen.limits) {
            if (stage.rfind("run student", 0) == 0) {
                found.emplace_back(stage, std::lround(limit.seconds * 100));
            }
        }
        return found;
    };
    REQUIRE(!student_limits(direct).empty());
    CHECK(student_limits(direct).front().second ==
          std::lround((4 * 0.06 + kStudentMarginSeconds) * 100));
    CHECK(student_limits(first) == student_limits(direct));
    CHECK(student_limits(second) == student_limits(direct));
}

TEST_CASE(
    "a launch the device refuses through a server stops the grade there; what was asked for "
    "ahead is not run, and the server serves the next grade") {
    FakeDevice::Script refusing;
    refusing.run_ends[{"student", 8}] = DeviceLaunch::End::refused;
    const Graded direct = grade_with(refusing);
    FakeServer server(refusing);
    std::vector<std::string> local;
    const Graded refused = grade_with(refusing, "student/example", {server.socket(), &local});
    const Measurements& m = refused.seen.measurements;
    check_stopped(m, "run student stride 8", StopKind::launch, true);
    // What the grade reports is the direct grade's: the runs before the refused one.
    REQUIRE(m.runs.size() == direct.seen.measurements.runs.size());
    CHECK(m.interruption->message == direct.seen.measurements.interruption->message);
    // The session ended as sessions do (the replies to what was sent ahead read and dropped),
    // and the server goes on: the next grade is served, not graded on a device of its own.
    const Graded next = grade_with({}, "student/example", {server.socket(), &local});
    REQUIRE(next.seen.measurements.interruption);  // the same script: refused again
    CHECK(next.seen.measurements.interruption->stage == "run student stride 8");
    server.stop();
    CHECK(server.stopped() == "asked to stop");
    CHECK(local.empty());
    CHECK(server.accounts().size() == 2);
    const std::vector<std::string>& events = server.events();
    REQUIRE(std::count(events.begin(), events.end(), "acquire") == 2);
    const auto split = std::find(events.begin() + 1, events.end(), "acquire");
    check_lock_brackets({events.begin(), split});
    check_lock_brackets({split, events.end()});
    // The server had the grade's whole plan (sent ahead): after the refused launch it ran none
    // of the rest, and the grade's release dropped their replies.
    const auto runs = [](auto from, auto to) {
        return std::count_if(from, to,
                             [](const std::string& e) { return e.rfind("run ", 0) == 0; });
    };
    CHECK(runs(events.begin(), split) == runs(direct.events.begin(), direct.events.end()));
    CHECK(std::count(events.begin(), split, "time") == 0);
}

TEST_CASE("through a server the count, asked for ahead of reading the timing, ends as directly") {
    FakeDevice::Script counting;
    counting.count_end = DeviceLaunch::End::refused;
    FakeServer server(counting);
    std::vector<std::string> local;
    const Graded refused = grade_with(counting, "student/example", {server.socket(), &local});
    REQUIRE(refused.seen.measurements.interruption);
    CHECK(refused.seen.measurements.interruption->stage == "count");
    CHECK(refused.seen.measurements.interruption->kind == StopKind::launch);
    // Every run keeps its timing: the samples were read after the count was asked for.
    for (const KernelRun& run : refused.seen.measurements.runs) {
        INFO(run.kernel << " stride " << run.stride);
        CHECK(run.timing.has_value());
    }
    server.stop();
    CHECK(server.stopped() == "asked to stop");
    CHECK(local.empty());
    const std::vector<std::string>& events = server.events();
    CHECK(std::count(events.begin(), events.end(), "count") == 1);
    check_lock_brackets(events);
}

TEST_CASE(
    "through a server, an input's words asked for ahead wait while a large reply comes: neither "
    "side blocks the other") {
    // Two inputs of 16 MB each and 4 MB of outputs a launch: the second input's words go with
    // the first run that uses it, which the grade asks for while the server sends the run
    // before's outputs. Sent at once, both would be writing, neither reading.
    static const Exercise large = [] {
        Exercise exercise = day15();
        exercise.buffers.input_words = std::uint64_t{1} << 22;
        return exercise;
    }();
    FakeDevice::Script script;
    script.blocks = 4096;  // 4096 blocks of 256 threads: a million outputs
    FakeServer server(script, large);
    std::vector<std::string> local;
    auto graded = std::async(std::launch::async, [&] {
        return grade_with(script, "student/example",
                          {server.socket(), &local, std::chrono::milliseconds(300), &large});
    });
    if (graded.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
        std::cerr << "the grade and its device server wait on each other\n";
        std::_Exit(1);  // the stuck threads cannot be joined
    }
    const Graded result = graded.get();
    REQUIRE_FALSE(result.seen.measurements.interruption);
    CHECK(local.empty());
    server.stop();
    // Every run once, in the order of a grade on the device itself.
    const Graded direct = grade_with(script, "student/example",
                                     {{}, nullptr, std::chrono::milliseconds(300), &large});
    const auto runs = [](const std::vector<std::string>& events) {
        std::vector<std::string> found;
        std::copy_if(events.begin(), events.end(), std::back_inserter(found),
                     [](const std::string& e) { return e.rfind("run ", 0) == 0; });
        return found;
    };
    CHECK(runs(server.events()) == runs(direct.events));
    for (const KernelRun& run : result.seen.measurements.runs) {
        INFO(run.kernel << " stride " << run.stride);
        for (const OutputComparison& output : run.outputs) {
            CHECK(output.ok);
        }
    }
}

TEST_CASE(
    "a device that fails outside any kernel in the student's stage is the machine's fault, there "
    "and through a server that goes away") {
    FakeDevice::Script failing;
    failing.device_fails_at = std::make_pair(std::string("student"), 8);
    FakeServer server(failing);
    std::vector<std::string> local;
    for (const bool through_server : {false, true}) {
        INFO("through a server: " << through_server);
        const Graded graded =
            through_server ? grade_with(failing, "student/example", {server.socket(), &local})
                           : grade_with(failing);
        const Measurements& m = graded.seen.measurements;
        check_stopped(m, "run student stride 8", StopKind::crash, false);
        CHECK(m.interruption->message.find("scripted device failure") != std::string::npos);
        // What was graded before it is kept: the runs at the strides before.
        CHECK(m.run("student", 1) != nullptr);
        CHECK(m.run("student", 3) != nullptr);
        CHECK(m.wall_seconds > 0.0);  // the grade finished as grades do
    }
    REQUIRE(server.ends_by_itself());  // a device that failed is not trusted with another grade
    CHECK(server.stopped().find("the device failed") != std::string::npos);
    CHECK(local.empty());
}

TEST_CASE("a grade whose server stopped is served by the next one on the same socket") {
    FakeDevice::Script faulting;
    faulting.run_ends[{"student", 16}] = DeviceLaunch::End::fault;
    std::optional<FakeServer> first(std::in_place, faulting);
    std::vector<std::string> local;
    grade_with(faulting, "student/example", {first->socket(), &local});
    REQUIRE(first->ends_by_itself());
    const std::filesystem::path socket = first->socket();
    first.reset();
    // The batch starts the next server a moment later; the grade keeps trying meanwhile.
    std::optional<FakeServer> second;
    std::thread later([&second] {
        std::this_thread::sleep_for(std::chrono::milliseconds(400));
        second.emplace(FakeDevice::Script{});
    });
    const Graded next =
        grade_with({}, "student/example", {socket, &local, std::chrono::milliseconds(20000)});
    later.join();
    REQUIRE_FALSE(next.seen.measurements.interruption);
    CHECK(local.empty());
    REQUIRE(second.has_value());
    CHECK(second->socket() == socket);
    check_lock_brackets(second->events());
}

TEST_CASE("the blame table: the student's wherever their code ran, the machine's otherwise") {
    const Stage student_run{Stage::Kind::run, "student", 8};
    const Stage reference_run{Stage::Kind::run, "reference", 8};
    const Stage student_time{Stage::Kind::time, "student"};
    const Stage reference_time{Stage::Kind::time, ""};
    const Stage compile{Stage::Kind::compile};
    const Stage waiting{Stage::Kind::wait_for_device};
    const Stage load_all{Stage::Kind::load};
    const Stage load_oracle{Stage::Kind::load, "reference"};

    struct Row {
        Ending ending;
        StopKind kind;
    };
    const std::vector<Row> kernel_endings = {
        {Ending::kernel_fault, StopKind::fault},   {Ending::launch_refused, StopKind::launch},
        {Ending::time_limit, StopKind::timeout},   {Ending::memory_limit, StopKind::memory},
        {Ending::worker_crashed, StopKind::crash}, {Ending::unsupported, StopKind::unsupported},
    };
    for (const Row& row : kernel_endings) {
        INFO("ending " << static_cast<int>(row.ending));
        for (const Stage& stage : {student_run, student_time, load_all}) {
            const Interruption i = blame(stage, row.ending, "m");
            CHECK(i.kind == row.kind);
            CHECK(i.students_fault);
            CHECK(i.stage == to_string(stage));
        }
        for (const Stage& stage : {reference_run, reference_time, compile, waiting, load_oracle}) {
            const Interruption i = blame(stage, row.ending, "m");
            CHECK(i.kind == row.kind);
            CHECK_FALSE(i.students_fault);
        }
    }
    // The machine's own failures are never the student's, wherever they happen.
    for (const Stage& stage : {student_run, student_time, reference_run, compile, load_all}) {
        CHECK_FALSE(blame(stage, Ending::harness_error, "m").students_fault);
        CHECK(blame(stage, Ending::harness_error, "m").kind == StopKind::crash);
        CHECK_FALSE(blame(stage, Ending::no_gpu, "m").students_fault);
        CHECK(blame(stage, Ending::no_gpu, "m").kind == StopKind::no_gpu);
    }
    // The simulator's unsupported instruction says what to do, to whom it concerns.
    const std::string students = blame(student_run, Ending::unsupported, "x").message;
    CHECK(students.find("write the kernel without it") != std::string::npos);
    CHECK(blame(reference_run, Ending::unsupported, "x").message.find("grade on a GPU") !=
          std::string::npos);
    CHECK(to_string(student_run) == "run student stride 8");
    CHECK(to_string(Stage{Stage::Kind::run, "copy", 0}) == "run copy");
}

TEST_CASE("the GPU's count is compared with the simulator's witness at the grid's scale") {
    // The witness runs 2 blocks of the student's probe on the simulator; the GPU counts its grid
    // of 4. Compared block for block, the totals agree: no note, and the witness's lines judge.
    FakeDevice::Script script;
    script.probe_counts = true;
    const Graded agreed = grade_with(script);
    const KernelRun* run = agreed.seen.measurements.run("student", 8);
    REQUIRE(run != nullptr);
    CHECK(run->count_source == "hardware");
    CHECK(run->count_note.empty());
    REQUIRE(run->witness);
    CHECK(run->witness->blocks == 2);
    CHECK(run->witness->load_requests == 2 * 16'384);
    CHECK(run->counts->confirms(*run->witness, agreed.seen.measurements.environment.grid_blocks));

    // Where ptxas merged the loads in pairs, the note says so, both counts at the grid's scale.
    script.merged_loads = true;
    const Graded merged = grade_with(script);
    run = merged.seen.measurements.run("student", 8);
    REQUIRE(run != nullptr);
    CHECK(run->count_note ==
          "The GPU counted 32,768 instructions in 524,288 wavefronts of shared loads over the "
          "grid's 4 blocks where the simulator counted 32,768 instructions in 262,144 wavefronts "
          "in the PTX of 2 of them, 65,536 instructions in 524,288 wavefronts at the grid's "
          "scale: ptxas merged neighbouring accesses into wider ones, so there are fewer "
          "instructions for the same wavefronts and no access's degree changed.");
}
