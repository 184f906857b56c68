// The device wing on its own: the requests' codec over a real socket, what a connection sent
// ahead, the class cache a device server keeps between grades, and a class through a server
// whose memory stays flat. No GPU: the devices here are small fakes.

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/kernel_ids.hpp"
#include "compile/compile.hpp"
#include "device/buffer_layout.hpp"
#include "device/class_cache.hpp"
#include "device/device.hpp"
#include "device/device_server.hpp"
#include "device/remote_device.hpp"
#include "device/requests.hpp"
#include "device/wire.hpp"
#include "device/witness.hpp"
#include "exercise/exercise.hpp"
#include "grader_run.hpp"
#include "model/finding.hpp"
#include "model/measurements.hpp"
#include "model/observations.hpp"
#include "test_paths.hpp"

using namespace grader;
namespace rq = grader::requests;

namespace {

const Exercise& day15() {
    static const Exercise exercise =
        load_exercise(std::filesystem::path(GRADER_SOURCE_DIR) / "exercises/day15-bank-conflicts");
    return exercise;
}

const Exercise& padding() {
    static const Exercise exercise =
        load_exercise(std::filesystem::path(GRADER_SOURCE_DIR) / "exercises/day15-padding");
    return exercise;
}

// `id` is a plain string: with a std::string parameter, GCC 14 takes the returned reference for
// one to that temporary (-Wdangling-reference), as in test_checks.cpp.
const InputSpec& input_named(const Exercise& exercise, const char* id) {
    for (const InputSpec& input : exercise.inputs) {
        if (input.id == id) {
            return input;
        }
    }
    FAIL("no input " << id);
    throw std::logic_error("unreachable");
}

InputWords words_of(std::size_t count, float value) {
    return std::make_shared<const std::vector<float>>(count, value);
}

// A device that writes down what it was asked and answers with outputs of the launch's size,
// each word the launch's stride plus its input's first word.
class CountingDevice final : public Device {
public:
    CountingDevice(const Exercise& exercise, std::vector<std::string>& events)
        : exercise_(exercise), events_(events) {}

    // Where set, time() and count() answer for this many of the launches alone, as a device that
    // lost some would.
    std::optional<std::size_t> answers;

private:
    DeviceCapabilities do_capabilities() const override { return {true, true, false}; }
    void do_describe(Environment& environment) override {
        environment.device_name = "counting fake";
    }
    std::string do_acquire() override {
        CHECK_FALSE(held_);
        held_ = true;
        return "fake-bus";
    }
    void do_release() override {
        CHECK(held_);  // once for each acquire
        held_ = false;
    }
    LoadResult do_load(const KernelSpec& spec, const CompiledKernel&) override {
        LoadResult result;
        result.kernel = std::make_unique<LoadedKernel>();
        result.kernel->id = spec.id;
        return result;
    }
    LaunchGeometry do_geometry(const LoadedKernel&) override {
        return {Dim3Spec{4, 1, 1}, exercise_.launch.block};
    }
    void do_put_input(const InputSpec& input, InputWords words) override {
        inputs_[input.id] = std::move(words);
    }
    DeviceLaunch do_run(const LaunchCase& launch, const InputSpec& input,
                        const LaunchGeometry& geometry) override {
        events_.push_back("run " + launch.kernel->id + " " + std::to_string(launch.stride) + " " +
                          input.id);
        DeviceLaunch ran;
        ran.kernel_ms = 0.5;
        if (launch.outputs_read) {
            ran.outputs = outputs(launch, input, geometry);
        }
        return ran;
    }
    TimingSamples do_time(const std::vector<LaunchCase>& launches, const InputSpec& input,
                          const LaunchGeometry& geometry) override {
        events_.push_back("time " + std::to_string(launches.size()));
        TimingSamples samples;
        samples.rounds = 3;
        for (const LaunchCase& launch : answered(launches)) {
            samples.per_round_ms.push_back({1.0 * launch.stride, 1.0, 1.0});
            samples.launches_per_sample.push_back(2);
            samples.final_outputs.push_back(launch.outputs_read ? outputs(launch, input, geometry)
                                                                : std::vector<float>{});
        }
        return samples;
    }
    HardwareCounts do_count(const std::vector<LaunchCase>& launches, const InputSpec&,
                            const LaunchGeometry&) override {
        events_.push_back("count " + std::to_string(launches.size()));
        HardwareCounts counts;
        counts.counted = true;
        counts.counts.resize(answered(launches).size());
        return counts;
    }

    std::vector<LaunchCase> answered(const std::vector<LaunchCase>& launches) const {
        return {launches.begin(),
                launches.begin() + static_cast<std::ptrdiff_t>(std::min(
                                       launches.size(), answers.value_or(launches.size())))};
    }

private:
    std::vector<float> outputs(const LaunchCase& launch, const InputSpec& input,
                               const LaunchGeometry& geometry) const {
        const std::vector<float>& words = *inputs_.at(input.id);
        return std::vector<float>(output_elements(exercise_, geometry),
                                  static_cast<float>(launch.stride) + words.front());
    }

    const Exercise& exercise_;
    std::vector<std::string>& events_;
    std::map<std::string, InputWords> inputs_;
    bool held_ = false;
};

// Both ends of a Unix socket.
struct SocketPair {
    SocketPair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0); }
    ~SocketPair() {
        for (const int fd : fds) {
            if (fd >= 0) {
                ::close(fd);
            }
        }
    }
    int fds[2] = {-1, -1};
};

}  // namespace

TEST_CASE("a grade's buffers lie where one layout says, the same whatever is timed") {
    // Part 1 on an H100: two inputs of 2048 words, then 1056 blocks of 256 outputs.
    const Exercise& probe = day15();
    const std::uint64_t elements = 1056 * 256;
    const BufferLayout layout = buffer_layout(probe, elements);
    CHECK(layout.inputs == std::vector<std::uint64_t>{0, 8192});
    CHECK(layout.input_bytes == 8192);
    CHECK(layout.output == 16384);
    CHECK(layout.bytes == (2ull << 20));  // one 2 MiB granule
    CHECK(input_index(probe, input_named(probe, "hidden")) == 1);
    // Room for twelve timed launches' outputs after it moves nothing before it.
    const BufferLayout timed = buffer_layout(probe, elements, 12);
    CHECK(timed.inputs == layout.inputs);
    CHECK(timed.output == layout.output);
    CHECK(timed.timed_output(0) == 16384 + elements * 4);
    CHECK(timed.timed_output(11) + elements * 4 <= timed.bytes);
    CHECK(timed.bytes % (2ull << 20) == 0);
    // Part 2: one 64 MiB input, then the 64 MiB output.
    const Exercise& transpose = padding();
    const BufferLayout matrix = buffer_layout(transpose, 4096 * 4096);
    REQUIRE(matrix.inputs.size() == transpose.inputs.size());
    CHECK(matrix.output == matrix.inputs.back() + (64ull << 20));
    CHECK(matrix.bytes == matrix.output + (64ull << 20));
    InputSpec stranger;
    stranger.id = "stranger";
    CHECK_THROWS_AS(input_index(probe, stranger), std::invalid_argument);
}

TEST_CASE("every device is held to one contract around its calls, checked in one place") {
    const Exercise& exercise = day15();
    const InputSpec& ones = input_named(exercise, "ones");
    const InputSpec& hidden = input_named(exercise, "hidden");
    std::vector<std::string> events;
    CountingDevice device(exercise, events);
    CompiledKernel image;
    const LoadResult reference = device.load(exercise.kernel("reference"), image);
    REQUIRE(reference.kernel);
    const LaunchGeometry geometry = device.geometry(*reference.kernel);
    const LaunchCase launch{reference.kernel.get(), 8, true, false};

    SUBCASE("acquire() and release() come in pairs, and release() without one does nothing") {
        CHECK_FALSE(device.held());
        device.release();  // the fake CHECKs that its own release follows an acquire
        CHECK(device.acquire() == "fake-bus");
        CHECK(device.held());
        CHECK_THROWS_AS(device.acquire(), std::logic_error);
        device.release();
        CHECK_FALSE(device.held());
        device.release();
        CHECK(device.acquire() == "fake-bus");
        device.release();
    }
    SUBCASE("a launch with an input not given, or with no kernel, never reaches the device") {
        device.put_input(ones, words_of(2048, 1.0F));
        CHECK_THROWS_WITH_AS(device.run(launch, hidden, geometry),
                             "input 'hidden' was launched with before it was given",
                             std::runtime_error);
        CHECK_THROWS_WITH_AS(device.time({launch}, hidden, geometry),
                             "input 'hidden' was launched with before it was given",
                             std::runtime_error);
        CHECK_THROWS_WITH_AS(device.count({launch}, hidden, geometry),
                             "input 'hidden' was launched with before it was given",
                             std::runtime_error);
        CHECK_THROWS_WITH_AS(device.run({nullptr, 3, true, false}, ones, geometry),
                             "a launch at stride 3 with input 'ones' names no loaded kernel",
                             std::invalid_argument);
        CHECK_THROWS_AS(device.reload({nullptr}), std::invalid_argument);
        CHECK_THROWS_AS(device.put_input(hidden, nullptr), std::invalid_argument);
        LaunchPlan plan;
        plan.geometry = geometry;
        plan.runs.push_back({launch, &hidden});
        CHECK_THROWS_WITH_AS(device.follow(plan),
                             "input 'hidden' was launched with before it was given",
                             std::runtime_error);
        CHECK(events.empty());
        // Given, it runs; released, the inputs went with the device.
        device.put_input(hidden, words_of(2048, 2.0F));
        CHECK(device.run(launch, hidden, geometry).outputs.front() == 8.0F + 2.0F);
        device.acquire();
        device.release();
        CHECK_THROWS_AS(device.run(launch, ones, geometry), std::runtime_error);
        CHECK(events == std::vector<std::string>{"run reference 8 hidden"});
    }
    SUBCASE("a device that answers for fewer launches than it was asked for is said to") {
        device.put_input(ones, words_of(2048, 1.0F));
        const std::vector<LaunchCase> two{launch, {reference.kernel.get(), 1, false, false}};
        device.answers = 1;
        // The grade reads a timing row for each launch: the device failed, the machine's fault.
        CHECK_THROWS_WITH_AS(device.time(two, ones, geometry), "the device timed 1 of 2 launches",
                             std::runtime_error);
        // Counts that miss a launch count none, and the environment section says why.
        const HardwareCounts counts = device.count(two, ones, geometry);
        CHECK_FALSE(counts.counted);
        CHECK(counts.reason == "the counters answered for 1 of 2 launches");
        device.answers.reset();
        CHECK(device.time(two, ones, geometry).per_round_ms.size() == 2);
        CHECK(device.count(two, ones, geometry).counted);
    }
}

TEST_CASE("every request and its reply cross the socket as they were sent") {
    SocketPair pair;
    rq::Connection client(pair.fds[0]);
    pair.fds[0] = -1;
    rq::RequestTable table;
    std::vector<std::string> heard;
    table.bind(rq::kBegin, [&](rq::Begin begin) {
        heard.push_back("begin " + std::to_string(begin.seed) + " " +
                        (begin.poison ? begin.poison->cubin : "-"));
        return rq::Begun{"0000:18:00.0", {true, true, false}};
    });
    table.bind(rq::kLoad, [&](rq::Load load) {
        heard.push_back("load " + load.kernel + " " + load.compiled.cubin + " " +
                        load.compiled.outcome.lowered_name);
        rq::Loaded loaded;
        loaded.handle = 3;
        loaded.param_sizes = {8, 8, 8, 4};
        loaded.param_source = "driver";
        loaded.static_shared_bytes = 8192;
        loaded.registers = 30;
        return loaded;
    });
    table.bind(rq::kInput, [&](rq::Input input) {
        heard.push_back("input " + input.input + " " + std::to_string(input.words->size()) + " " +
                        std::to_string(input.words->back()));
        return rq::Nothing{};
    });
    table.bind(rq::kRun, [&](rq::Run run) {
        heard.push_back("run " + std::to_string(run.launch.handle) + " " +
                        std::to_string(run.launch.stride) + " " + run.input + " " +
                        std::to_string(run.geometry.grid.x) + " " +
                        (run.launch.outputs_read ? "read" : "unread"));
        DeviceLaunch launch;
        launch.end = DeviceLaunch::End::refused;
        launch.message = "too many resources";
        launch.outputs = {1.5F, -0.0F, 3.25F};
        launch.kernel_ms = 0.125;
        Finding race;
        race.kind = FindingKind::race_read_after_write;
        race.lines = {{"probe.cu", 34, 9, 0}, {"probe.cu", 25, 9, 0}};
        launch.findings = {race};
        launch.counts = SharedAccessCounts{};
        launch.counts->load_wavefronts = 77;
        return launch;
    });
    table.bind(rq::kTime, [&](rq::Launches launches) {
        heard.push_back("time " + std::to_string(launches.launches.size()) + " " +
                        (launches.launches.back().reusable ? "reusable" : "own"));
        TimingSamples samples;
        samples.per_round_ms = {{1.0, 2.0}, {3.0, 4.0}};
        samples.launches_per_sample = {2, 1};
        samples.rounds = 2;
        samples.notes = {"a note"};
        samples.final_outputs = {{9.0F}, {}};
        return samples;
    });
    table.bind(rq::kCount, [&](rq::Launches) {
        HardwareCounts counts;
        counts.counted = true;
        counts.description = "the fake's counters";
        counts.counts.resize(2);
        counts.counts[1].store_wavefronts = 5;
        return counts;
    });
    std::thread server([&table, fd = pair.fds[1]] {
        while (const std::optional<wire::Frame> request = wire::receive(fd)) {
            try {
                wire::send(fd, table.answer(*request));
            } catch (const std::runtime_error& error) {
                wire::send(fd, rq::error_reply(error.what()));  // as the device server does
            }
        }
    });

    CompiledKernel poison;
    poison.cubin = "poison image";
    const rq::Begun begun = client.call(rq::kBegin, rq::Begin{42, poison});
    CHECK(begun.bus_id == "0000:18:00.0");
    CHECK(begun.capabilities.times);
    CHECK_FALSE(begun.capabilities.counts_as_it_runs);
    CompiledKernel image;
    image.cubin = std::string("\0cubin\xff", 7);
    image.outcome.lowered_name = "_Z5probe";
    const rq::Loaded loaded = client.call(rq::kLoad, rq::Load{"student", image});
    REQUIRE(loaded.handle);
    CHECK(*loaded.handle == 3);
    CHECK(loaded.param_sizes == std::vector<std::size_t>{8, 8, 8, 4});
    CHECK(loaded.static_shared_bytes == 8192);
    client.call(rq::kInput, rq::Input{"hidden", words_of(1000, 2.5F)});
    const LaunchGeometry geometry{Dim3Spec{264, 1, 1}, Dim3Spec{256, 1, 1}};
    // Sent ahead of reading: the replies come in order.
    client.send(rq::kRun, rq::Run{{3, 8, false, false}, "hidden", geometry});
    client.send(rq::kTime,
                rq::Launches{{{3, 1, true, false}, {4, 1, false, true}}, "ones", geometry});
    const DeviceLaunch launch = client.receive(rq::kRun);
    CHECK(launch.end == DeviceLaunch::End::refused);
    CHECK(launch.message == "too many resources");
    CHECK(launch.outputs == std::vector<float>{1.5F, -0.0F, 3.25F});
    CHECK(std::signbit(launch.outputs[1]));  // bytes, not text
    REQUIRE(launch.kernel_ms);
    CHECK(*launch.kernel_ms == 0.125);
    REQUIRE(launch.counts);
    CHECK(launch.counts->load_wavefronts == 77);
    REQUIRE(launch.findings.size() == 1);
    CHECK(launch.findings[0].kind == FindingKind::race_read_after_write);
    CHECK(launch.findings[0].lines[1].line == 25);
    const TimingSamples samples = client.receive(rq::kTime);
    CHECK(samples.per_round_ms == std::vector<std::vector<double>>{{1.0, 2.0}, {3.0, 4.0}});
    CHECK(samples.launches_per_sample == std::vector<int>{2, 1});
    CHECK(samples.notes == std::vector<std::string>{"a note"});
    REQUIRE(samples.final_outputs.size() == 2);
    CHECK(samples.final_outputs[0] == std::vector<float>{9.0F});
    CHECK(samples.final_outputs[1].empty());
    const HardwareCounts counts = client.call(
        rq::kCount, rq::Launches{{{3, 1, false, false}, {3, 8, false, false}}, "ones", geometry});
    CHECK(counts.counted);
    REQUIRE(counts.counts.size() == 2);
    CHECK(counts.counts[1].store_wavefronts == 5);

    // A request nothing is bound to is the server's failure, which the client reads as the
    // harness's (a std::runtime_error naming the request), never as a kernel's end.
    client.send(rq::kRelease, rq::Nothing{});
    CHECK_THROWS_WITH_AS(client.receive(rq::kRelease),
                         doctest::Contains("an unknown request 'release'"), std::runtime_error);
    client.close();
    server.join();
    CHECK(heard == std::vector<std::string>{"begin 42 poison image",
                                            "load student " + image.cubin + " _Z5probe",
                                            "input hidden 1000 2.500000",
                                            "run 3 8 hidden 264 unread", "time 2 reusable"});
}

TEST_CASE("a table answers an unknown request, or a handler that throws, by throwing") {
    rq::RequestTable table;
    table.bind(rq::kReload, [](rq::Reload) -> rq::Nothing {
        throw std::runtime_error("no kernel is loaded as handle 9");
    });
    CHECK_THROWS_WITH(table.answer(rq::request_frame(rq::kReload, rq::Reload{{9}})),
                      "no kernel is loaded as handle 9");
    CHECK_THROWS_WITH(table.answer(rq::request_frame(rq::kStop, rq::Nothing{})),
                      "an unknown request 'stop'");
    // An error reply is read as the harness's failure, naming the request.
    SocketPair pair;
    rq::Connection client(pair.fds[0]);
    pair.fds[0] = -1;
    wire::send(pair.fds[1], rq::error_reply("the device failed"));
    CHECK_THROWS_WITH_AS(client.receive(rq::kRun),
                         "this GPU's device server failed during 'run': the device failed",
                         std::runtime_error);
    // A reply that is not the request's type.
    wire::send(pair.fds[1], wire::Frame{nlohmann::json{{"nothing", 1}}, {}});
    CHECK_THROWS_WITH_AS(client.receive(rq::kRun),
                         doctest::Contains("answered 'run' with what is not its reply"),
                         std::runtime_error);
    // The server gone: the connection says so, during the request.
    ::close(pair.fds[1]);
    pair.fds[1] = -1;
    CHECK_THROWS_WITH_AS(client.receive(rq::kTime),
                         "this GPU's device server stopped during 'time'", std::runtime_error);
}

TEST_CASE("a frame that says it is larger than frames are is refused before it is read") {
    SocketPair pair;
    const std::uint64_t head_size = std::uint64_t{1} << 40;
    REQUIRE(::write(pair.fds[0], &head_size, sizeof head_size) == sizeof head_size);
    CHECK_THROWS_AS(wire::receive(pair.fds[1]), wire::WireError);
    // A head that is not a JSON object.
    SocketPair other;
    const std::string head = "[1, 2]";
    const std::uint64_t size = head.size();
    REQUIRE(::write(other.fds[0], &size, sizeof size) == sizeof size);
    REQUIRE(::write(other.fds[0], head.data(), head.size()) == static_cast<ssize_t>(head.size()));
    CHECK_THROWS_WITH_AS(wire::receive(other.fds[1]), doctest::Contains("not a JSON object"),
                         wire::WireError);
    // A float buffer whose bytes are not whole floats.
    CHECK_THROWS_AS(wire::floats_of(std::string(7, '\0')), wire::WireError);
}

TEST_CASE("what a connection sent ahead is read by the calls of the plan, in its order") {
    const LaunchGeometry geometry{Dim3Spec{4, 1, 1}, Dim3Spec{256, 1, 1}};
    SentAhead ahead;
    CHECK_FALSE(ahead.take(rq::kRun.name, rq::Run{{0, 1, true, false}, "ones", geometry}));
    ahead.push(rq::kRun.name, rq::Run{{0, 1, true, false}, "ones", geometry});
    ahead.push(rq::kRun.name, rq::Run{{0, 1, true, false}, "hidden", geometry});
    ahead.push(rq::kReload.name, rq::Reload{{0, 1}});
    ahead.push(rq::kTime.name, rq::Launches{{{0, 1, false, true}}, "ones", geometry});
    CHECK(ahead.take(rq::kRun.name, rq::Run{{0, 1, true, false}, "ones", geometry}));
    // Another run than the plan's next: the grade left its plan, which is the harness's fault.
    CHECK_THROWS_WITH_AS(ahead.take(rq::kRun.name, rq::Run{{0, 1, true, false}, "ones", geometry}),
                         "the grade asked for 'run' where its plan had sent 'run' ahead",
                         std::runtime_error);
    CHECK_THROWS_AS(ahead.take(rq::kRun.name, rq::Run{{0, 2, true, false}, "hidden", geometry}),
                    std::runtime_error);
    const LaunchGeometry other{Dim3Spec{8, 1, 1}, Dim3Spec{256, 1, 1}};
    CHECK_THROWS_AS(ahead.take(rq::kRun.name, rq::Run{{0, 1, true, false}, "hidden", other}),
                    std::runtime_error);
    CHECK(ahead.take(rq::kRun.name, rq::Run{{0, 1, true, false}, "hidden", geometry}));
    CHECK_THROWS_AS(
        ahead.take(rq::kTime.name, rq::Launches{{{0, 1, false, true}}, "ones", geometry}),
        std::runtime_error);
    CHECK(ahead.take(rq::kReload.name, rq::Reload{{0, 1}}));
    CHECK(ahead.size() == 1);
    CHECK(ahead.front().op == rq::kTime.name);
    CHECK(ahead.take(rq::kTime.name, rq::Launches{{{0, 1, false, true}}, "ones", geometry}));
    CHECK(ahead.empty());
}

TEST_CASE(
    "the class cache keeps an exercise kernel's runs on an input no seed fills, and no other") {
    const Exercise& exercise = day15();
    const InputSpec& ones = input_named(exercise, "ones");
    const InputSpec& hidden = input_named(exercise, "hidden");
    ClassStore store;
    std::vector<std::string> events;
    CompiledKernel image;
    image.cubin = "the reference's image";
    CompiledKernel students;
    students.cubin = "the student's image";

    // Two grades of a class, one after the other, each on a device of its own.
    std::vector<DeviceLaunch> first;
    std::vector<DeviceLaunch> second;
    for (std::vector<DeviceLaunch>* grade : {&first, &second}) {
        ClassCache device(store, std::make_unique<CountingDevice>(exercise, events));
        device.acquire();
        const LoadResult reference = device.load(exercise.kernel("reference"), image);
        const LoadResult student = device.load(exercise.kernel("student"), students);
        const LaunchGeometry geometry = device.geometry(*reference.kernel);
        const std::size_t words = 2048;
        device.put_input(ones, words_of(words, 1.0F));
        // A seeded input is each grade's own.
        device.put_input(hidden, words_of(words, grade == &first ? 3.0F : 4.0F));
        for (const InputSpec* input : {&ones, &hidden}) {
            grade->push_back(
                device.run({reference.kernel.get(), 8, true, false}, *input, geometry));
            grade->push_back(device.run({student.kernel.get(), 8, true, false}, *input, geometry));
        }
        // Not read: answered from the class without its outputs.
        const DeviceLaunch unread =
            device.run({reference.kernel.get(), 8, false, false}, ones, geometry);
        CHECK(unread.outputs.empty());
        CHECK(unread.kernel_ms == 0.5);
        device.release();
    }
    // The reference on the all-ones input ran once for the class; everything else every grade.
    CHECK(std::count(events.begin(), events.end(), "run reference 8 ones") == 1);
    CHECK(std::count(events.begin(), events.end(), "run reference 8 hidden") == 2);
    CHECK(std::count(events.begin(), events.end(), "run student 8 ones") == 2);
    CHECK(std::count(events.begin(), events.end(), "run student 8 hidden") == 2);
    CHECK(store.kept_runs() == 1);
    // Every grade read what its own device would have given it.
    REQUIRE(first.size() == 4);
    REQUIRE(second.size() == 4);
    CHECK(second[0].outputs == first[0].outputs);
    CHECK(second[0].kernel_ms == first[0].kernel_ms);
    CHECK(first[2].outputs.front() == 8.0F + 3.0F);
    CHECK(second[2].outputs.front() == 8.0F + 4.0F);

    // Another image of the same kernel is another kernel: run again.
    ClassCache other(store, std::make_unique<CountingDevice>(exercise, events));
    CompiledKernel changed = image;
    changed.cubin += " changed";
    const LoadResult reference = other.load(exercise.kernel("reference"), changed);
    other.put_input(ones, words_of(2048, 1.0F));
    other.run({reference.kernel.get(), 8, true, false}, ones, other.geometry(*reference.kernel));
    CHECK(std::count(events.begin(), events.end(), "run reference 8 ones") == 2);
    CHECK(store.kept_runs() == 2);
}

TEST_CASE("the class cache keeps nothing past its ceiling, and nothing of Part 2's random input") {
    const Exercise& exercise = padding();
    const InputSpec& random = exercise.inputs.front();
    REQUIRE(random.fill != InputSpec::Fill::constant);
    std::vector<std::string> events;
    ClassStore store;
    CompiledKernel image;
    image.cubin = "copy";
    for (int grade = 0; grade < 3; ++grade) {
        ClassCache device(store, std::make_unique<CountingDevice>(exercise, events));
        const LoadResult copy = device.load(exercise.kernel("copy"), image);
        device.put_input(random, words_of(16, static_cast<float>(grade)));
        device.run({copy.kernel.get(), 0, true, false}, random, device.geometry(*copy.kernel));
    }
    CHECK(store.kept_runs() == 0);
    CHECK(store.output_bytes() == 0);

    // A ceiling below one run's outputs: nothing is kept, and every grade runs it.
    const Exercise& probe = day15();
    ClassStore small(1024);
    for (int grade = 0; grade < 2; ++grade) {
        ClassCache device(small, std::make_unique<CountingDevice>(probe, events));
        const LoadResult reference = device.load(probe.kernel("reference"), image);
        const InputSpec& ones = input_named(probe, "ones");
        device.put_input(ones, words_of(8, 1.0F));
        const DeviceLaunch run = device.run({reference.kernel.get(), 1, true, false}, ones,
                                            device.geometry(*reference.kernel));
        CHECK(run.outputs.size() * sizeof(float) > 1024);
    }
    CHECK(small.kept_runs() == 0);
    CHECK(std::count(events.begin(), events.end(), "run reference 1 ones") == 2);
}

TEST_CASE("the class cache times an exercise's reusable launches once, and only all of them") {
    const Exercise& exercise = day15();
    const InputSpec& ones = input_named(exercise, "ones");
    ClassStore store;
    std::vector<std::string> events;
    CompiledKernel image;
    image.cubin = "image";
    std::vector<TimingSamples> timed;
    for (int grade = 0; grade < 2; ++grade) {
        ClassCache device(store, std::make_unique<CountingDevice>(exercise, events));
        const LoadResult reference = device.load(exercise.kernel("reference"), image);
        const LoadResult student = device.load(exercise.kernel("student"), image);
        const LaunchGeometry geometry = device.geometry(*reference.kernel);
        device.put_input(ones, words_of(64, 1.0F));
        timed.push_back(device.time({{reference.kernel.get(), 1, false, false},
                                     {reference.kernel.get(), 2, false, true},
                                     {reference.kernel.get(), 4, false, true},
                                     {student.kernel.get(), 1, true, false},
                                     {student.kernel.get(), 2, true, true}},
                                    ones, geometry));
    }
    // The first grade timed all five; the second the three that are not reusable (the student's
    // is never reusable, whatever the grade says).
    CHECK(events == std::vector<std::string>{"time 5", "time 3"});
    CHECK(store.kept_timings() == 2);
    REQUIRE(timed[1].per_round_ms.size() == 5);
    CHECK(timed[1].per_round_ms[1] == timed[0].per_round_ms[1]);
    CHECK(timed[1].per_round_ms[4] == std::vector<double>{2.0, 1.0, 1.0});
    CHECK(timed[1].final_outputs[1].empty());
    CHECK_FALSE(timed[1].final_outputs[4].empty());
    REQUIRE(timed[1].notes.size() == 1);
    CHECK(timed[1].notes[0].find("The exercise's own 2 timed launches are the class's") == 0);
    CHECK(timed[0].notes.empty());
}

namespace {

// A process's resident memory now ("VmRSS") or at its peak ("VmHWM"), from /proc.
std::size_t memory_bytes(pid_t pid, const std::string& field = "VmRSS") {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind(field + ":", 0) == 0) {
            return std::stoull(line.substr(field.size() + 1)) * 1024;
        }
    }
    return 0;
}

// One Part 2 grade's device work through the server: every kernel loaded, a random input of its
// own, the plan's runs, timing and count, as the pipeline asks for them.
void grade_through(const std::filesystem::path& socket, const Exercise& exercise,
                   std::uint64_t seed) {
    const std::unique_ptr<Device> device = open_remote_device(socket, seed);
    device->acquire();
    std::map<std::string, std::unique_ptr<LoadedKernel>> loaded;
    CompiledKernel image;
    for (const KernelSpec& spec : exercise.kernels) {
        image.cubin = "image of " + spec.id;
        loaded.emplace(spec.id, device->load(spec, image).kernel);
    }
    const LaunchGeometry geometry = device->geometry(*loaded.at(exercise.oracle()->id));
    std::mt19937 random(static_cast<unsigned>(seed));
    auto words = std::make_shared<std::vector<float>>(exercise.buffers.input_words);
    for (float& word : *words) {
        word = static_cast<float>(random() % 1000);
    }
    const InputSpec& input = exercise.inputs.front();
    device->put_input(input, words);
    LaunchPlan plan;
    plan.geometry = geometry;
    plan.timing_input = &input;
    for (const auto& [id, kernel] : loaded) {
        const bool read = id == kStudentKernel || id == exercise.oracle()->id;
        plan.runs.push_back({LaunchCase{kernel.get(), 0, read, false}, &input});
        plan.timed.push_back(LaunchCase{kernel.get(), 0, id == kStudentKernel, false});
        plan.reloaded.push_back(kernel.get());
    }
    plan.counted.push_back(LaunchCase{loaded.at(std::string(kStudentKernel)).get(), 0, false});
    device->follow(plan);
    for (const PlannedRun& run : plan.runs) {
        CHECK(device->run(run.launch, input, geometry).end == DeviceLaunch::End::completed);
    }
    device->reload(plan.reloaded);
    CHECK(device->time(plan.timed, input, geometry).end == DeviceLaunch::End::completed);
    device->reload(plan.reloaded);
    CHECK(device->count(plan.counted, input, geometry).counted);
    device->release();
}

}  // namespace

TEST_CASE("a Part 2 class through a device server under a memory ceiling keeps its memory flat") {
    // Part 2 at a quarter of its size (a 2048 x 2048 matrix: 16 MB of input, and of outputs at
    // every run), so that 30 grades take seconds here.
    static const Exercise quarter = [] {
        Exercise exercise = padding();
        exercise.buffers.input_words = std::uint64_t{2048} * 2048;
        exercise.buffers.output.rows = 2048;
        exercise.buffers.output.columns = 2048;
        return exercise;
    }();
    const std::filesystem::path folder = std::filesystem::temp_directory_path() /
                                         ("grader-test-device-" + std::to_string(::getpid()));
    std::filesystem::remove_all(folder);
    std::filesystem::create_directories(folder);
    const std::filesystem::path socket = folder / "gpu0.sock";
    const int listening = wire::listen_on(socket);
    const pid_t server = ::fork();
    REQUIRE(server >= 0);
    if (server == 0) {
        keep_large_buffers_in_heap();  // as the server's process does (gpu_server.cpp)
        // The server's ceiling: 1 GiB of address space. Keeping each grade's runs (16 MB each of
        // three exercise kernels) would pass it within 20 grades.
        const rlimit ceiling{std::size_t{1} << 30, std::size_t{1} << 30};
        ::setrlimit(RLIMIT_AS, &ceiling);
        std::vector<std::string> events;
        ClassStore store;
        const std::string stopped = serve_device_sessions(
            listening, quarter,
            [&](std::uint64_t) { return std::make_unique<CountingDevice>(quarter, events); },
            store);
        ::_exit(stopped == "asked to stop" ? 0 : 1);
    }
    ::close(listening);
    // Whichever way the test ends, the server it started ends with it.
    struct Reaped {
        pid_t pid;
        bool done = false;
        ~Reaped() {
            if (!done) {
                ::kill(pid, SIGKILL);
                ::waitpid(pid, nullptr, 0);
            }
        }
    } reaped{server};
    std::size_t after_first = 0;
    std::size_t most = 0;
    constexpr int kClass = 30;
    for (int grade = 0; grade < kClass; ++grade) {
        grade_through(socket, quarter, 1000 + static_cast<std::uint64_t>(grade));
        const std::size_t resident = memory_bytes(server);
        if (grade == 0) {
            after_first = resident;
        }
        most = std::max(most, resident);
    }
    const std::size_t after_last = memory_bytes(server);
    const std::size_t peak = memory_bytes(server, "VmHWM");
    CHECK(stop_device_server(socket));
    int status = 0;
    REQUIRE(::waitpid(server, &status, 0) == server);
    reaped.done = true;
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    std::filesystem::remove_all(folder);
    MESSAGE("the server's resident memory: after the first grade "
            << (after_first >> 20) << " MiB, after the last " << (after_last >> 20)
            << " MiB, at most " << (most >> 20) << " MiB between grades, " << (peak >> 20)
            << " MiB at its peak");
    // Within 1.5 times what it held after the first grade, and a few MiB of the allocator's.
    const std::size_t slack = std::size_t{16} << 20;
    CHECK(after_first > 0);
    CHECK(after_last <= after_first * 3 / 2 + slack);
    CHECK(most <= after_first * 3 / 2 + slack);
}

TEST_CASE("the simulator's witness names the fill a chase raced, though the chase faulted first") {
    // submissions/pointer_chase_missing_barrier on a GPU: the witness (the simulator's blocks of
    // the student's source beside the GPU's grade) saw thread 0 follow a link no warp had written
    // yet and fault on the wild offset it held, before warp 1 wrote that link. The report said the
    // word was never written (unwritten_tile) where the fill at probe.cu:17 had not yet reached
    // it: a missing barrier, as the same source graded on the simulator says (an H100 run of
    // gpu-check.sh's fixtures, 2026-12-06).
    const std::filesystem::path folder =
        std::filesystem::path(GRADER_FIXTURES_DIR) / "submissions/pointer_chase_missing_barrier";
    CompileRequest request;
    request.source = grader::testing::read_text(folder / "probe.cu");
    request.source_name = "probe.cu";
    request.kernel_name = "probeSharedStride";
    request.arch = "sm_75";
    request.options = {"-std=c++17", "-lineinfo"};
    request.headers.push_back(
        {"day15_probe.h",
         grader::testing::read_text(std::filesystem::path(GRADER_SOURCE_DIR) /
                                    "exercises/day15-bank-conflicts/day15_probe.h")});
    const CompiledKernel compiled = compile_kernel(request);
    REQUIRE(compiled.outcome.ok);
    const InputWords ones = std::make_shared<const std::vector<float>>(2048, 1.0f);
    const SimulatorWitness witness = witness_student(day15(), 20261202, compiled, ones, {4});
    REQUIRE(witness.findings.count(4) == 1);
    bool named_the_fill = false;
    for (const Finding& finding : witness.findings.at(4)) {
        if (finding.kind == FindingKind::unwritten_shared_read) {
            REQUIRE(finding.lines.size() == 2);
            CHECK(finding.lines[0].line == 24);
            CHECK(finding.lines[1].line == 17);
            named_the_fill = true;
        }
    }
    CHECK(named_the_fill);
}
