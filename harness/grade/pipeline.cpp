// The grading pipeline, written once for every device: compile every kernel, load them, plan
// every launch, run each kernel at each stride with each input (the oracle first, so the
// student's outputs compare with its), time them against each other, count, and report every
// observation as it happens.

#include "grade/pipeline.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "checks/checks.hpp"
#include "common/clock.hpp"
#include "common/kernel_ids.hpp"
#include "common/version.hpp"
#include "compile/compile.hpp"
#include "compile/compile_cache.hpp"
#include "counters/counters.hpp"
#include "device/backend.hpp"
#include "device/sim_device.hpp"
#include "grade/grade.hpp"
#include "grade/limits.hpp"
#include "grade/plan.hpp"
#include "grade/sources.hpp"
#include "grade/stage.hpp"
#include "measure/outputs.hpp"
#include "measure/statistics.hpp"
#include "model/measurements.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point began) {
    return std::chrono::duration<double>(Clock::now() - began).count();
}

// A launch's stop message names places from the PTX's .file lines, which an asm comment can
// forge at any length: it is bounded before it joins a message of the worker.
constexpr std::size_t kMaxLaunchLineBytes = 600;

Ending ending_of(DeviceLaunch::End end) {
    switch (end) {
        case DeviceLaunch::End::fault:
            return Ending::kernel_fault;
        case DeviceLaunch::End::timeout:
            return Ending::time_limit;
        case DeviceLaunch::End::refused:
            return Ending::launch_refused;
        case DeviceLaunch::End::unsupported:
            return Ending::unsupported;
        case DeviceLaunch::End::completed:
            break;
    }
    return Ending::harness_error;
}

// "probeSharedStride (student)", "transposeTiled (padded)".
std::string who(const Exercise& exercise, const std::string& kernel) {
    return exercise.kernel(kernel).name + " (" + kernel + ")";
}

// The shared counts as the counters' note compares them.
counters::SharedMemoryCounts as_counter_counts(const SharedAccessCounts& counts) {
    counters::SharedMemoryCounts converted;
    converted.load_instructions = counts.load_requests;
    converted.load_wavefronts = counts.load_wavefronts;
    converted.store_instructions = counts.store_requests;
    converted.store_wavefronts = counts.store_wavefronts;
    return converted;
}

// The exercise's own kernels compile here, each on a thread of its own (from the machine's
// compile cache after the first grade: compile_cache.hpp), while the student's compiles in a
// confined child: side by side, so the confinement costs a grade the child's start, not a queue
// of compiles behind one another. The student's source is never cached.
std::future<ConfinedCompiles> compile_beside(std::vector<CompileRequest> trusted,
                                             std::optional<CompileRequest> student,
                                             UntrustedCompileOptions options) {
    return std::async(
        std::launch::async,
        [trusted = std::move(trusted), student = std::move(student), options = std::move(options)] {
            std::future<ConfinedCompiles> confined;
            if (student) {
                confined = std::async(std::launch::async,
                                      [&] { return compile_confined({}, *student, options); });
            }
            const auto cache = default_compile_cache_dir();
            std::vector<std::future<CompiledKernel>> own;
            for (const CompileRequest& request : trusted) {
                own.push_back(std::async(std::launch::async, [&request, &cache] {
                    return compile_kernel_cached(request, cache);
                }));
            }
            ConfinedCompiles results;
            for (auto& kernel : own) {
                results.trusted.push_back(kernel.get());
            }
            if (confined.valid()) {
                results.student = confined.get().student;
            }
            return results;
        });
}

// What the simulator sees of the student's kernel, from its PTX, where the grade itself runs on a
// GPU: per stride, the fewest blocks it runs (SimDevice::blocks_for: the first and the last of a
// 1-D grid, 8 of a 2-D one).
struct SimulatorWitness {
    // The count that stands in where the GPU's counters cannot count, and that the GPU's count
    // is compared with.
    std::map<int, SharedAccessCounts> counts;
    // Shared-memory races and unwritten reads: a GPU's output may come out right by the warps'
    // timing (a missing barrier), which no output check on a GPU can tell.
    std::map<int, std::vector<Finding>> findings;
};

SimulatorWitness simulate_student(const Exercise& exercise, std::uint64_t seed,
                                  const CompiledKernel& compiled, InputWords words,
                                  const std::vector<int>& strides) {
    SimulatorWitness witness;
    std::string unreadable;
    const std::unique_ptr<SimulatedKernel> simulated = SimulatedKernel::load(
        exercise, seed, exercise.kernel(std::string(kStudentKernel)), compiled, unreadable);
    if (!simulated) {
        return witness;
    }
    InputSpec input = exercise.inputs.front();
    input.simulated_blocks = 1;
    for (const int stride : strides) {
        DeviceLaunch launch = simulated->run(input, words, stride);
        // What it saw before a stop too: a read racing a fill is why the simulator may fault
        // where a GPU reads stale words.
        for (Finding& finding : launch.findings) {
            finding.witness = true;
            witness.findings[stride].push_back(std::move(finding));
        }
        if (launch.end != DeviceLaunch::End::completed) {
            continue;
        }
        if (launch.counts) {
            witness.counts[stride] = *launch.counts;
        }
    }
    return witness;
}

// The student's outputs are compared with the oracle's on other threads while the device runs
// the next case (a comparison of a million words is milliseconds the device would sit idle);
// each case's run is reported, in order, once its comparisons are in.
class PendingRuns {
public:
    struct Pending {
        KernelRun run;
        std::vector<std::future<OutputComparison>> outputs;
    };

    void push(Pending pending) { pending_.push_back(std::move(pending)); }

    // Reports the runs whose comparisons are in, in order; with `wait`, every one.
    void report(bool wait, std::vector<KernelRun>& runs, ProgressSink& sink) {
        while (!pending_.empty()) {
            Pending& front = pending_.front();
            const bool ready =
                std::all_of(front.outputs.begin(), front.outputs.end(), [](const auto& f) {
                    return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
                });
            if (!ready && !wait) {
                return;
            }
            for (auto& output : front.outputs) {
                front.run.outputs.push_back(output.get());
            }
            runs.push_back(front.run);
            sink.run(front.run);
            pending_.pop_front();
        }
    }

private:
    std::deque<Pending> pending_;
};

class Grade {
public:
    Grade(const Exercise& exercise, const WorkerOptions& options, ProgressSink& sink,
          const DeviceChoice& choice, const PipelineHooks& hooks)
        : exercise_(exercise),
          options_(options),
          sink_(sink),
          choice_(choice),
          hooks_(hooks),
          began_(Clock::now()),
          run_limit_(options.run_seconds_override > 0 ? options.run_seconds_override
                                                      : exercise.limits.run_seconds),
          budget_(run_limit_) {}

    void run() {
        figures_.seed = options_.seed;
        const bool with_student = options_.mode != WorkerOptions::Mode::reference_only;
        figures_.unnamed_strides =
            with_student ? draw_unnamed_strides(exercise_, options_.seed) : std::vector<int>{};
        sink_.measured(figures_);

        environment_.backend = std::string(to_string(choice_.backend));
        environment_.grader_version = kGraderVersion;
        environment_.nvrtc_version = nvrtc_version();
        sink_.environment(environment_);

        if (with_student) {
            enter({Stage::Kind::answers}, exercise_.limits.compile_seconds);
            sink_.submission(load_submission(options_.submission_dir, exercise_));
        }
        // The inputs are the CPU's work, made beside the compile (Part 2's 16M random words take
        // a tenth of a second) and before the device is taken.
        std::future<std::vector<InputWords>> inputs = std::async(std::launch::async, [this] {
            std::vector<InputWords> made;
            for (const InputSpec& input : exercise_.inputs) {
                made.push_back(std::make_shared<const std::vector<float>>(
                    make_input(input, exercise_.buffers.input_words, options_.seed)));
            }
            return made;
        });
        if (!compile_and_open_device(with_student)) {
            return finish();
        }
        inputs_ = inputs.get();
        std::optional<HardwareCounts> hardware;
        try {
            if (!load() || !run_cases()) {
                return finish();
            }
            start_witness();
            if (!time_cases()) {
                return finish();
            }
            hardware = count_on_device();
        } catch (const std::runtime_error& error) {
            // The device itself failed outside any kernel (a device server that went away, a
            // driver call that failed): the machine's fault, at the stage it happened in, even
            // where that stage runs the student's code. A kernel's own end is an outcome, never
            // an exception (device.hpp).
            stop(stage_, Ending::harness_error, std::string("the device failed: ") + error.what());
            return finish();
        }
        // The GPU's work is done: it goes to the next grade before the witness is waited for.
        release_device();
        collect_timed_checks();
        if (hardware) {
            merge_counts(*hardware);
        }
        finish();
    }

private:
    // Compiles every kernel beside the device's start (each takes a good part of a second).
    // False where grading cannot go on.
    bool compile_and_open_device(bool with_student) {
        // The confined compile has a limit of its own for each kernel it compiles (the
        // exercise's, the shared-memory poison, the student's last): the stage's deadline must
        // not fire first, or a student's compile that runs past its limit (a macro bomb) would
        // read as the machine's timeout instead of the student's failed compile.
        const double compile_limit =
            exercise_.limits.compile_seconds * static_cast<double>(exercise_.kernels.size() + 1) +
            5.0;
        enter({Stage::Kind::compile}, compile_limit);
        const KernelSources sources = load_kernel_sources(
            exercise_, with_student ? options_.submission_dir : std::filesystem::path{},
            choice_.arch);
        std::vector<std::string> trusted_ids;
        std::vector<CompileRequest> trusted;
        for (const auto& [id, request] : sources.requests) {
            if (id != kStudentKernel) {
                trusted_ids.push_back(id);
                trusted.push_back(request);
            }
        }
        const bool poison = choice_.open && choice_.shared_poison && sources.shared_poison;
        if (poison) {
            trusted.push_back(*sources.shared_poison);
        }
        const auto student = sources.requests.find(std::string(kStudentKernel));
        UntrustedCompileOptions compile_options;
        compile_options.grader_executable =
            hooks_.grader_executable.empty() ? current_executable() : hooks_.grader_executable;
        compile_options.seconds = exercise_.limits.compile_seconds;
        compile_options.memory_bytes = exercise_.limits.memory_bytes;
        std::future<ConfinedCompiles> compiles = compile_beside(
            trusted,
            student == sources.requests.end() ? std::nullopt
                                              : std::optional<CompileRequest>(student->second),
            compile_options);
        if (choice_.open) {
            device_ = choice_.open();
            figures_.context_seconds = device_->open_seconds();
        }
        ConfinedCompiles results;
        try {
            results = compiles.get();
        } catch (const NvrtcError& error) {
            stop(Stage{Stage::Kind::compile}, Ending::harness_error, error.what());
            return false;
        } catch (const std::runtime_error& error) {
            stop(Stage{Stage::Kind::compile}, Ending::harness_error,
                 std::string("the confined compile failed: ") + error.what());
            return false;
        }
        const bool harness_compiled = record_compiles(trusted_ids, results);
        if (with_student) {
            record_student_compile(sources, std::move(results.student));
        }
        if (poison) {
            device_->set_shared_poison(results.trusted.back());
        }
        if (!device_) {
            environment_.gpu_available = false;
            sink_.environment(environment_);
            stop(Stage{Stage::Kind::compile}, Ending::no_gpu,
                 "no GPU: " + choice_.no_gpu_reason +
                     ". A GPU is needed for timing; the answers file, the include vetting, the "
                     "compile for " +
                     choice_.arch + " and the signature check ran without one.");
            return false;
        }
        // A kernel of the exercise's own that does not compile: the checks report the machine.
        return harness_compiled;
    }

    // The exercise's kernels' outcomes; false where one did not compile.
    bool record_compiles(const std::vector<std::string>& ids, ConfinedCompiles& results) {
        bool compiled = true;
        for (std::size_t i = 0; i < ids.size(); ++i) {
            compiled_[ids[i]] = std::move(results.trusted[i]);
            compiled = compiled && compiled_[ids[i]].outcome.ok;
            sink_.compiled(ids[i], compiled_[ids[i]].outcome);
        }
        return compiled;
    }

    void record_student_compile(const KernelSources& sources, CompiledKernel student) {
        CompiledKernel& compiled = compiled_[std::string(kStudentKernel)];
        if (sources.requests.count(std::string(kStudentKernel)) == 0) {
            compiled.outcome.attempted = false;
            compiled.outcome.log = sources.student_missing_reason;
            compiled.outcome.source_missing = sources.student_not_found;
        } else {
            compiled = std::move(student);
            environment_.confinement = compiled.confinement;
            if (compiled.outcome.ok) {
                compiled.outcome.abi_problem =
                    abi_problem(compiled.outcome.param_sizes, exercise_.parameters);
            }
        }
        sink_.compiled(std::string(kStudentKernel), compiled.outcome);
        sink_.environment(environment_);
    }

    Device& device() { return *device_; }

    // Takes the device, loads every kernel that compiled, gives it the inputs and the plan.
    // False where grading cannot go on.
    bool load() {
        const DeviceCapabilities capabilities = device().capabilities();
        // Compiles overlap freely; a GPU itself is used by one grade at a time, machine-wide.
        if (capabilities.locks) {
            enter({Stage::Kind::wait_for_device}, 7 * 24 * 3600.0);
            environment_.gpu_bus_id = device().acquire();
            held_ = true;
            environment_.gpu_held_from = unix_seconds();
            sink_.environment(environment_);
        }
        enter({Stage::Kind::load}, run_limit_);
        for (const KernelSpec& spec : exercise_.kernels) {
            const auto found = compiled_.find(spec.id);
            if (found != compiled_.end() &&
                !(spec.is_student() ? load_student(spec, found->second)
                                    : load_exercise_kernel(spec, found->second))) {
                return false;
            }
        }
        geometry_ = device().geometry(*loaded_.at(exercise_.oracle()->id));
        device().describe(environment_);
        sink_.environment(environment_);
        for (std::size_t i = 0; i < exercise_.inputs.size(); ++i) {
            device().put_input(exercise_.inputs[i], inputs_[i]);
        }
        std::map<std::string, LoadedKernel*> loaded;
        for (const auto& [id, kernel] : loaded_) {
            loaded.emplace(id, kernel.get());
        }
        // The device's capabilities now: a device server's are known once its session began.
        plan_ = plan_grade(exercise_, loaded, figures_.unnamed_strides, device().capabilities(),
                           geometry_);
        device().follow(plan_.launches);
        return true;
    }

    // False where the grade stops (the simulator cannot read the kernel).
    bool load_student(const KernelSpec& spec, CompiledKernel& compiled) {
        CompileOutcome& outcome = compiled.outcome;
        if (!outcome.ok || !outcome.abi_problem.empty()) {
            return true;
        }
        LoadResult result = device().load(spec, compiled);
        if (result.unsupported) {
            stop({Stage::Kind::load}, Ending::unsupported,
                 result.problem + " in " + who(exercise_, spec.id));
            return false;
        }
        if (!result.kernel) {
            outcome.abi_problem = result.problem;
        } else {
            if (!result.kernel->param_sizes.empty() && result.kernel->param_source == "driver") {
                outcome.param_sizes = result.kernel->param_sizes;
                outcome.param_source = result.kernel->param_source;
            }
            outcome.static_shared_bytes = result.kernel->static_shared_bytes;
            outcome.registers = result.kernel->registers;
            outcome.abi_problem = abi_problem(outcome.param_sizes, exercise_.parameters);
            if (outcome.abi_problem.empty()) {
                loaded_.emplace(spec.id, std::move(result.kernel));
            }
        }
        sink_.loaded(spec.id, LoadFacts::of(outcome));
        return true;
    }

    // False where it did not load: the grade is ungradable.
    bool load_exercise_kernel(const KernelSpec& spec, const CompiledKernel& compiled) {
        LoadResult result = device().load(spec, compiled);
        if (!result.kernel) {
            stop(Stage{Stage::Kind::load, spec.id},
                 result.unsupported ? Ending::unsupported : Ending::harness_error,
                 "the exercise's kernel " + who(exercise_, spec.id) +
                     " could not be loaded: " + result.problem);
            return false;
        }
        loaded_.emplace(spec.id, std::move(result.kernel));
        return true;
    }

    // Each case of the plan with each of its inputs: the exercise's kernels first, so that the
    // oracle's outputs are there when the student's arrive. False where a launch failed.
    bool run_cases() {
        PendingRuns pending;
        for (const PlannedCase& planned : plan_.cases) {
            const bool students = planned.kernel == kStudentKernel;
            const Stage stage{Stage::Kind::run, planned.kernel, planned.stride};
            if (students) {
                enter_students(stage, student_run_allowance(planned.stride));
            } else {
                enter(stage, run_limit_);
            }
            PendingRuns::Pending current;
            current.run.kernel = planned.kernel;
            current.run.stride = planned.stride;
            for (std::size_t r = 0; r < planned.run_count; ++r) {
                if (!run_one(plan_.launches.runs[planned.first_run + r], stage, current, pending)) {
                    return false;
                }
            }
            pending.push(std::move(current));
            pending.report(false, runs_, sink_);
        }
        pending.report(true, runs_, sink_);
        return true;
    }

    // One launch of a case. False where it failed, with what was compared before it reported.
    bool run_one(const PlannedRun& planned, const Stage& stage, PendingRuns::Pending& current,
                 PendingRuns& pending) {
        const InputSpec& input = *planned.input;
        KernelRun& run = current.run;
        // What was compared so far is reported before the grade stops, whichever way it stops.
        const auto report_all = [&] {
            pending.report(true, runs_, sink_);
            for (auto& output : current.outputs) {
                run.outputs.push_back(output.get());
            }
            sink_.run(run);
        };
        DeviceLaunch launch;
        try {
            launch = device().run(planned.launch, input, geometry_);
        } catch (const std::runtime_error&) {
            report_all();  // the device failed (run() says so)
            throw;
        }
        run.findings.insert(run.findings.end(), launch.findings.begin(), launch.findings.end());
        if (launch.end != DeviceLaunch::End::completed) {
            report_all();
            stop(stage, ending_of(launch.end),
                 who(exercise_, run.kernel) + " failed" +
                     (run.stride > 0 ? " at stride " + std::to_string(run.stride) : "") + ": " +
                     text::shorten(launch.message, kMaxLaunchLineBytes));
            return false;
        }
        if (&input == &exercise_.inputs.front() && launch.counts) {
            run.counts = launch.counts;
            run.count_source = "simulator";
        }
        if (launch.kernel_ms && run.kernel != kStudentKernel) {
            reference_ms_[{run.kernel, run.stride, input.id}] = *launch.kernel_ms;
        }
        if (run.kernel != kStudentKernel && launch.block_instructions > 0) {
            auto& most = block_instructions_[{input.id, run.stride}];
            most = std::max(most, launch.block_instructions);
        }
        if (run.kernel == exercise_.oracle()->id) {
            oracle_outputs_[{input.id, run.stride}] = std::move(launch.outputs);
            oracle_blocks_[{input.id, run.stride}] = launch.blocks_run;
        } else if (run.kernel == kStudentKernel) {
            // The oracle's runs all came first: nothing writes the map meanwhile.
            static const std::vector<float> no_outputs;
            const auto expected = oracle_outputs_.find({input.id, run.stride});
            const std::vector<float>& oracle_words =
                expected == oracle_outputs_.end() ? no_outputs : expected->second;
            OutputPlacement compared = output_placement();
            compared.oracle_blocks = oracle_blocks_[{input.id, run.stride}];
            current.outputs.push_back(std::async(
                std::launch::async,
                [id = input.id, words = std::move(launch.outputs), &oracle_words, compared] {
                    return compare_outputs(id, words, oracle_words, compared);
                }));
        }
        return true;
    }

    // What the exercise's own kernel took on this device for a launch, where it said (a GPU).
    std::optional<double> reference_ms(const std::string& kernel, int stride,
                                       const InputSpec& input) const {
        const auto found = reference_ms_.find({kernel, stride, input.id});
        return found == reference_ms_.end() ? std::nullopt : std::optional<double>(found->second);
    }

    // "the reference probe": the kernel the student's stands for.
    std::string oracle_name() const {
        const KernelSpec& oracle = *exercise_.oracle();
        return "the " + (oracle.label.empty() ? oracle.name : oracle.label);
    }

    // The student's runs at `stride`: what the oracle took for the same launches, where the
    // device timed each of them (a GPU); else the run limit.
    std::optional<Allowance> student_run_allowance(int stride) const {
        double ms = 0.0;
        for (const InputSpec& input : exercise_.inputs) {
            const auto oracle = reference_ms(exercise_.oracle()->id, stride, input);
            if (!oracle) {
                return std::nullopt;
            }
            ms += *oracle;
        }
        return run_allowance(ms, oracle_name());
    }

    // On the simulator, whose instruction budget stops the student's kernel the same on every
    // machine: the student's runs at `stride` may take their budgets at the slowest simulation
    // the grader allows for, where that is longer than the run limit (every block of the grid is
    // simulated, where the exercise's kernels run a few).
    double simulated_run_limit(int stride) const {
        double seconds = 0.0;
        for (const InputSpec& input : exercise_.inputs) {
            const auto found = block_instructions_.find({input.id, stride});
            const std::uint64_t per_block = found == block_instructions_.end() ? 0 : found->second;
            seconds += static_cast<double>(sim_student_budget(per_block, geometry_.grid.count())) /
                       kSimSlowestWarpInstructionsPerSecond;
        }
        return std::max(run_limit_, seconds);
    }

    // The timing rounds: every row at the exercise's speed, the student's at the oracle's.
    std::optional<Allowance> timing_allowance_of(const std::vector<LaunchCase>& timed) const {
        const InputSpec& input = *plan_.launches.timing_input;
        double slowest = 0.0;
        for (const auto& [key, ms] : reference_ms_) {
            if (std::get<2>(key) == input.id) {
                slowest = std::max(slowest, ms);
            }
        }
        std::vector<TimedRow> rows;
        for (const LaunchCase& launch : timed) {
            const bool students = launch.kernel->id == kStudentKernel;
            const auto ms = reference_ms(students ? exercise_.oracle()->id : launch.kernel->id,
                                         launch.stride, input);
            if (students && !ms) {
                return std::nullopt;
            }
            // An exercise row the grade did not run (a stride of the reference's own): at most
            // the slowest launch that ran.
            rows.push_back({ms.value_or(slowest), students});
        }
        return timing_allowance(exercise_.timing, rows);
    }

    std::optional<Allowance> count_allowance_of(const std::vector<LaunchCase>& counted) const {
        std::vector<double> ms;
        for (const LaunchCase& launch : counted) {
            const auto oracle =
                reference_ms(exercise_.oracle()->id, launch.stride, *plan_.launches.timing_input);
            if (!oracle) {
                return std::nullopt;
            }
            ms.push_back(*oracle);
        }
        return count_allowance(ms);
    }

    OutputPlacement output_placement() const {
        return OutputPlacement{exercise_.buffers.output, geometry_.block.count(), 0,
                               geometry_.grid.count()};
    }

    // The simulator's count of the student's kernel: CPU work while the GPU times, on a device
    // that does not count as it runs.
    void start_witness() {
        const auto compiled = compiled_.find(std::string(kStudentKernel));
        if (device().capabilities().counts_as_it_runs || compiled == compiled_.end() ||
            !compiled->second.outcome.ok) {
            return;
        }
        simulator_ = std::async(std::launch::async, [this, &student = compiled->second,
                                                     strides = student_strides()] {
            return simulate_student(exercise_, options_.seed, student, inputs_.front(), strides);
        });
    }

    // False where a kernel failed in the timing rounds.
    bool time_cases() {
        const std::vector<LaunchCase>& timed = plan_.launches.timed;
        if (timed.empty() || runs_.size() != timed.size()) {
            return true;
        }
        const bool student_timed = std::any_of(timed.begin(), timed.end(), [](const LaunchCase& c) {
            return c.kernel->id == kStudentKernel;
        });
        const Stage stage{Stage::Kind::time, student_timed ? std::string(kStudentKernel) : ""};
        if (student_timed) {
            enter_students(stage, timing_allowance_of(timed));
        } else {
            enter(stage, run_limit_);
        }
        device().reload(plan_.launches.reloaded);
        TimingSamples samples = device().time(timed, *plan_.launches.timing_input, geometry_);
        if (!samples.notes.empty()) {
            environment_.notes.insert(environment_.notes.end(), samples.notes.begin(),
                                      samples.notes.end());
            sink_.environment(environment_);
        }
        if (samples.end != DeviceLaunch::End::completed) {
            stop(stage, ending_of(samples.end),
                 "a kernel failed during the timing rounds: " + samples.message);
            return false;
        }
        record_timings(samples);
        check_timed_outputs(samples);
        for (const KernelRun& run : runs_) {
            sink_.run(run);
        }
        figures_.timing_rounds = samples.rounds;
        figures_.timing_seconds = samples.seconds;
        return true;
    }

    // Each case's timing, and its ratio to its base, paired round by round.
    void record_timings(const TimingSamples& samples) {
        for (std::size_t i = 0; i < runs_.size(); ++i) {
            if (samples.per_round_ms[i].empty()) {
                continue;
            }
            runs_[i].timing = summarize(samples.per_round_ms[i], samples.launches_per_sample[i]);
            runs_[i].timing->modeled = samples.modeled;
        }
        for (std::size_t i = 0; i < runs_.size(); ++i) {
            const auto base = plan_.cases[i].base;
            if (!base || !runs_[i].timing || !runs_[*base].timing) {
                continue;
            }
            if (const auto ratio =
                    paired_ratio(samples.per_round_ms[i], samples.per_round_ms[*base])) {
                runs_[i].ratio = ratio->median;
                runs_[i].ratio_min = ratio->min;
                runs_[i].ratio_max = ratio->max;
            }
        }
    }

    // The timed launches are checked as the correctness runs were, on threads of their own: the
    // count needs none of it, so the GPU goes on (collect_timed_checks()).
    void check_timed_outputs(TimingSamples& samples) {
        const InputSpec& input = *plan_.launches.timing_input;
        for (std::size_t i = 0; i < samples.final_outputs.size() && i < runs_.size(); ++i) {
            if (runs_[i].kernel != kStudentKernel) {
                continue;
            }
            timed_checks_.emplace_back(
                i, std::async(std::launch::async,
                              [id = input.id, words = std::move(samples.final_outputs[i]),
                               &oracle_words = oracle_outputs_[{input.id, runs_[i].stride}],
                               placement = output_placement()] {
                                  OutputComparison timed =
                                      compare_outputs(id, words, oracle_words, placement);
                                  timed.timed = true;
                                  return timed;
                              }));
        }
    }

    // The timed launches' checks, each added to its run once it is in.
    void collect_timed_checks() {
        for (auto& [i, check] : timed_checks_) {
            runs_[i].outputs.push_back(check.get());
            sink_.run(runs_[i]);
        }
        timed_checks_.clear();
    }

    std::vector<int> student_strides() const {
        std::vector<int> strides;
        for (const PlannedCase& c : plan_.cases) {
            if (c.kernel == kStudentKernel) {
                strides.push_back(c.stride);
            }
        }
        return strides;
    }

    std::vector<KernelRun*> counted_runs() {
        std::vector<KernelRun*> counted;
        for (KernelRun& run : runs_) {
            if (run.kernel == kStudentKernel) {
                counted.push_back(&run);
            }
        }
        return counted;
    }

    // On a GPU, after timing: the hardware's own count of the student's shared-memory traffic.
    // Nothing where the device counts as it runs, or where a kernel failed while counted.
    std::optional<HardwareCounts> count_on_device() {
        const std::vector<LaunchCase>& counted = plan_.launches.counted;
        if (counted.empty()) {
            return std::nullopt;
        }
        const Stage stage{Stage::Kind::count, std::string(kStudentKernel)};
        enter_students(stage, count_allowance_of(counted));
        device().reload(plan_.launches.reloaded);
        HardwareCounts hardware = device().count(counted, *plan_.launches.timing_input, geometry_);
        if (hardware.end != DeviceLaunch::End::completed) {
            stop(stage, ending_of(hardware.end),
                 "a kernel failed while its shared accesses were counted: " + hardware.message);
            return std::nullopt;
        }
        if (hardware.counted && hardware.counts.size() != counted.size()) {
            hardware.counted = false;
            hardware.reason = "the counters answered for " +
                              std::to_string(hardware.counts.size()) + " of " +
                              std::to_string(counted.size()) + " launches";
        }
        return hardware;
    }

    // Outside the device's lock: the hardware's counts beside the simulator's witness of the same
    // source (its races, and its count where the counters could not count).
    void merge_counts(const HardwareCounts& hardware) {
        const std::vector<KernelRun*> counted = counted_runs();
        const SimulatorWitness witness = simulator_.valid() ? simulator_.get() : SimulatorWitness{};
        for (KernelRun* run : counted) {
            const auto found = witness.findings.find(run->stride);
            if (found == witness.findings.end()) {
                continue;
            }
            run->findings.insert(run->findings.end(), found->second.begin(), found->second.end());
            sink_.run(*run);
        }
        if (!hardware.counted) {
            environment_.notes.push_back(
                "The GPU's own counters could not count here (" + hardware.reason +
                "): the counted degrees are the simulator's, of the same source (PTX-level).");
        } else {
            environment_.notes.push_back("Counted degrees are the GPU's own (" +
                                         hardware.description + ").");
        }
        for (std::size_t i = 0; i < counted.size(); ++i) {
            KernelRun& run = *counted[i];
            const auto sim = witness.counts.find(run.stride);
            if (hardware.counted) {
                run.counts = hardware.counts[i];
                run.count_source = "hardware";
                if (sim != witness.counts.end()) {
                    // The GPU counted every block of the grid; the simulator, the blocks it ran,
                    // compared at the grid's scale. Its lines say where a conflict is, which the
                    // GPU's launch totals cannot.
                    run.count_note = counters::difference_note(
                        as_counter_counts(hardware.counts[i]), geometry_.grid.count(),
                        as_counter_counts(sim->second), sim->second.blocks);
                    run.witness = sim->second;
                }
            } else if (sim != witness.counts.end()) {
                run.counts = sim->second;
                run.count_source = "simulator";
            }
            sink_.run(run);
        }
        sink_.environment(environment_);
    }

    // Tells the parent that `stage` begins, with its limit (its deadline, and whose fault a stop
    // in it is); what the stage before took of the student's margin is spent.
    void enter(const Stage& stage, const StageLimit& limit) {
        spend_students_stage();
        stage_ = stage;
        sink_.stage(stage, limit);
    }

    // What the student's stage that just ended took beyond its allowance comes off the margin.
    void spend_students_stage() {
        if (students_stage_) {
            budget_.spent(seconds_since(students_stage_->first), students_stage_->second);
            students_stage_.reset();
        }
    }

    // A stage of the student's code, with what it may take (limits.hpp); the run limit where the
    // device did not say how long the exercise's own kernels took.
    void enter_students(const Stage& stage, const std::optional<Allowance>& allowance) {
        if (!allowance) {
            return enter(stage, stage.kind == Stage::Kind::run && !block_instructions_.empty()
                                    ? simulated_run_limit(stage.stride)
                                    : run_limit_);
        }
        // The stage before is spent first: its limit is what the margin has left after it.
        spend_students_stage();
        enter(stage, budget_.limit(*allowance));
        students_stage_.emplace(Clock::now(), *allowance);
    }

    void stop(const Stage& stage, Ending ending, const std::string& message) {
        sink_.interruption(blame(stage, ending, message));
    }

    // The modules, then the device's context, go before its lock does.
    void release_device() {
        loaded_.clear();
        if (device_ && held_) {
            held_ = false;
            device_->release();
            environment_.gpu_held_until = unix_seconds();
            sink_.environment(environment_);
        }
    }

    void finish() {
        release_device();
        collect_timed_checks();  // where the count stopped the grade
        if (simulator_.valid()) {
            simulator_.wait();  // it reads this grade's members
        }
        figures_.wall_seconds = seconds_since(began_);
        sink_.measured(figures_);
    }

    const Exercise& exercise_;
    const WorkerOptions& options_;
    ProgressSink& sink_;
    const DeviceChoice& choice_;
    const PipelineHooks& hooks_;
    const Clock::time_point began_;
    const double run_limit_;
    StudentBudget budget_;
    GradeFigures figures_;
    Environment environment_;
    std::map<std::string, CompiledKernel> compiled_;
    std::unique_ptr<Device> device_;
    bool held_ = false;  // acquired, and not released yet
    std::map<std::string, std::unique_ptr<LoadedKernel>> loaded_;
    LaunchGeometry geometry_;
    GradePlan plan_;
    std::vector<KernelRun> runs_;  // one per case of the plan, in its order, as they complete
    std::vector<InputWords> inputs_;
    std::map<std::pair<std::string, int>, std::vector<float>> oracle_outputs_;
    // How many blocks each of the oracle's runs covered, where it ran only some (the simulator).
    std::map<std::pair<std::string, int>, std::uint64_t> oracle_blocks_;
    // The most warp instructions a block of the exercise's kernels issued, by input and stride,
    // where the device counts them (the simulator): the student's budget there.
    std::map<std::pair<std::string, int>, std::uint64_t> block_instructions_;
    // What each exercise kernel took on the device, by kernel, stride and input, where it says.
    std::map<std::tuple<std::string, int, std::string>, double> reference_ms_;
    std::future<SimulatorWitness> simulator_;
    Stage stage_{Stage::Kind::answers};  // the stage entered last (enter())
    // The student's stage under way, from when, with what it may take before the margin.
    std::optional<std::pair<Clock::time_point, Allowance>> students_stage_;
    // The timed launches' checks, by index in runs_, while they run (time_cases()).
    std::vector<std::pair<std::size_t, std::future<OutputComparison>>> timed_checks_;
};

}  // namespace

void run_pipeline(const Exercise& exercise, const WorkerOptions& options, ProgressSink& sink,
                  const DeviceChoice& choice, const PipelineHooks& hooks) {
    Grade(exercise, options, sink, choice, hooks).run();
}

}  // namespace grader
