// The grading pipeline, written once for every device: compile every kernel, load them, run each
// kernel at each stride with each input (the oracle first, so the student's outputs compare with
// its), time them against each other, and report every observation as it happens.

#include "grade/worker.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include "checks/checks.hpp"
#include "common/kernel_ids.hpp"
#include "common/version.hpp"
#include "compile/compile.hpp"
#include "compile/compile_cache.hpp"
#include "counters/counters.hpp"
#include "device/device.hpp"
#include "device/sim_device.hpp"
#include "grade/explain.hpp"
#include "grade/grade.hpp"
#include "grade/pipeline.hpp"
#include "grade/sources.hpp"
#include "grade/stage.hpp"
#include "measure/outputs.hpp"
#include "measure/statistics.hpp"
#include "model/measurements.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace {

using Clock = std::chrono::steady_clock;

double unix_seconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

double seconds_since(Clock::time_point began) {
    return std::chrono::duration<double>(Clock::now() - began).count();
}

// A line a launch reports (a race, a note) names places from the PTX's .file lines, which an asm
// comment can forge at any length: each is bounded before it joins a message of the worker.
constexpr std::size_t kMaxLaunchLineBytes = 600;
std::vector<std::string> bounded_lines(const std::vector<std::string>& lines) {
    std::vector<std::string> bounded;
    for (const std::string& line : lines) {
        bounded.push_back(text::shorten(line, kMaxLaunchLineBytes));
    }
    return bounded;
}

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

// The strides a kernel runs at; {0} without a sweep.
std::vector<int> strides_of(const Exercise& exercise, const std::string& kernel,
                            const std::vector<int>& unnamed) {
    if (!exercise.has_sweep()) {
        return {0};
    }
    return kernel == kStudentKernel ? student_strides_to_run(exercise, unnamed)
                                    : reference_strides_to_run(exercise, unnamed);
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
                                                      : exercise.limits.run_seconds) {}

    void run() {
        figures_.seed = options_.seed;
        const bool with_student = options_.mode != WorkerOptions::Mode::reference_only;
        figures_.unnamed_strides =
            with_student ? draw_unnamed_strides(exercise_, options_.seed) : std::vector<int>{};
        sink_.measured(figures_);

        environment_.backend = choice_.backend;
        environment_.grader_version = kGraderVersion;
        environment_.nvrtc_version = nvrtc_version();
        sink_.environment(environment_);

        if (with_student) {
            enter({Stage::Kind::answers}, exercise_.limits.compile_seconds);
            sink_.submission(load_submission(options_.submission_dir, exercise_));
        }
        // The inputs are the CPU's work, made beside the compile (Part 2's 16M random words take
        // a tenth of a second) and before the device is taken.
        std::future<std::vector<std::vector<float>>> inputs =
            std::async(std::launch::async, [this] {
                std::vector<std::vector<float>> made;
                for (const InputSpec& input : exercise_.inputs) {
                    made.push_back(make_input(input, exercise_.buffers.input_words, options_.seed));
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
            if (!device().counts_as_it_runs()) {
                // CPU work while the GPU is timed: the simulator's count of the student's kernel.
                simulator_ = std::async(std::launch::async, [this, strides = student_strides()] {
                    return simulate_student(strides);
                });
            }
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
        const std::string& arch = choice_.arch;
        const bool opens = static_cast<bool>(choice_.open);
        const KernelSources sources = load_kernel_sources(
            exercise_, with_student ? options_.submission_dir : std::filesystem::path{}, arch);

        // Every kernel compiles beside the device's start: each takes a good part of a second.
        std::vector<std::string> trusted_ids;
        std::vector<CompileRequest> trusted;
        for (const auto& [id, request] : sources.requests) {
            if (id != kStudentKernel) {
                trusted_ids.push_back(id);
                trusted.push_back(request);
            }
        }
        const bool poison = opens && choice_.shared_poison && sources.shared_poison;
        if (poison) {
            trusted.push_back(*sources.shared_poison);
        }
        const auto student = sources.requests.find(std::string(kStudentKernel));
        UntrustedCompileOptions compile_options;
        compile_options.grader_executable =
            hooks_.grader_executable.empty() ? current_executable() : hooks_.grader_executable;
        compile_options.seconds = exercise_.limits.compile_seconds;
        compile_options.memory_bytes = exercise_.limits.memory_bytes;
        // The exercise's own kernels compile here, each on a thread of its own, while the
        // student's compiles in a confined child: side by side, so the confinement costs a
        // grade the child's start, not a queue of compiles behind one another.
        std::future<ConfinedCompiles> compiles = std::async(std::launch::async, [&] {
            std::future<ConfinedCompiles> confined;
            if (student != sources.requests.end()) {
                confined = std::async(std::launch::async, [&] {
                    return compile_confined({}, student->second, compile_options);
                });
            }
            // The exercise's own kernels come from the machine's compile cache after the first
            // grade (compile_cache.hpp); the student's source is never cached.
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
        if (opens) {
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

        bool harness_compiled = true;
        for (std::size_t i = 0; i < trusted_ids.size(); ++i) {
            compiled_[trusted_ids[i]] = std::move(results.trusted[i]);
            harness_compiled = harness_compiled && compiled_[trusted_ids[i]].outcome.ok;
            sink_.compiled(trusted_ids[i], compiled_[trusted_ids[i]].outcome);
        }
        if (with_student) {
            CompiledKernel& compiled = compiled_[std::string(kStudentKernel)];
            if (student == sources.requests.end()) {
                compiled.outcome.attempted = false;
                compiled.outcome.log = sources.student_missing_reason;
            } else {
                compiled = std::move(results.student);
                environment_.confinement = compiled.confinement;
                if (compiled.outcome.ok) {
                    compiled.outcome.abi_problem =
                        abi_problem(compiled.outcome.param_sizes, exercise_.parameters);
                }
            }
            sink_.compiled(std::string(kStudentKernel), compiled.outcome);
            sink_.environment(environment_);
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
                     arch + " and the signature check ran without one.");
            return false;
        }
        // A kernel of the exercise's own that does not compile: the checks report the machine.
        return harness_compiled;
    }

    Device& device() { return *device_; }

    bool load() {
        // Compiles overlap freely; a GPU itself is used by one grade at a time, machine-wide.
        if (device().locks()) {
            enter({Stage::Kind::wait_for_device}, 7 * 24 * 3600.0);
            const std::string held = device().acquire();
            environment_.gpu_bus_id = held;
            environment_.gpu_held_from = unix_seconds();
            sink_.environment(environment_);
        }
        const Stage stage{Stage::Kind::load};
        enter(stage, run_limit_);
        for (const KernelSpec& spec : exercise_.kernels) {
            const auto found = compiled_.find(spec.id);
            if (found == compiled_.end()) {
                continue;
            }
            CompiledKernel& compiled = found->second;
            if (spec.is_student()) {
                CompileOutcome& outcome = compiled.outcome;
                if (!outcome.ok || !outcome.abi_problem.empty()) {
                    continue;
                }
                LoadResult result = device().load(spec, compiled);
                if (result.unsupported) {
                    stop(stage, Ending::unsupported,
                         result.problem + " in " + who(exercise_, spec.id));
                    return false;
                }
                if (!result.kernel) {
                    outcome.abi_problem = result.problem;
                } else {
                    if (!result.kernel->param_sizes.empty() &&
                        result.kernel->param_source == "driver") {
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
                continue;
            }
            LoadResult result = device().load(spec, compiled);
            if (!result.kernel) {
                stop(Stage{Stage::Kind::load, spec.id},
                     result.unsupported ? Ending::unsupported : Ending::harness_error,
                     "the exercise's kernel " + who(exercise_, spec.id) +
                         " could not be loaded: " + result.problem);
                return false;
            }
            loaded_.emplace(spec.id, std::move(result.kernel));
        }
        geometry_ = device().geometry(*loaded_.at(exercise_.oracle()->id));
        device().describe(environment_);
        sink_.environment(environment_);
        return true;
    }

    // Each kernel at each stride with each input: the exercise's kernels first, so that the
    // oracle's outputs are there when the student's arrive.
    bool run_cases() {
        const std::vector<std::vector<float>>& inputs = inputs_;
        const OutputPlacement placement = output_placement();
        const std::string oracle = exercise_.oracle()->id;
        std::vector<const KernelSpec*> order;
        for (const KernelSpec& spec : exercise_.kernels) {
            if (!spec.is_student() && loaded_.count(spec.id) != 0) {
                order.push_back(&spec);
            }
        }
        if (loaded_.count(std::string(kStudentKernel)) != 0) {
            order.push_back(&exercise_.kernel(std::string(kStudentKernel)));
        }
        // The student's outputs are compared with the oracle's on other threads while the device
        // runs the next case (a comparison of a million words is milliseconds the device would
        // sit idle); each run is reported, in order, once its comparisons are in.
        struct PendingRun {
            KernelRun run;
            std::vector<std::future<OutputComparison>> outputs;
        };
        std::deque<PendingRun> pending;
        const auto report_compared = [&](bool wait) {
            while (!pending.empty()) {
                PendingRun& front = pending.front();
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
                runs_.push_back(front.run);
                sink_.run(front.run);
                pending.pop_front();
            }
        };
        static const std::vector<float> no_outputs;
        // Every launch in order, each queued on the device one launch ahead of its run
        // (Device::queue_run): a device server runs it while this grade reads the one before.
        struct Planned {
            const LoadedKernel* kernel;
            int stride;
            std::size_t input;
        };
        std::vector<Planned> plan;
        for (const KernelSpec* spec : order) {
            for (const int stride : strides_of(exercise_, spec->id, figures_.unnamed_strides)) {
                for (std::size_t i = 0; i < exercise_.inputs.size(); ++i) {
                    if (launch_is_read(*spec, stride, i)) {
                        plan.push_back({loaded_.at(spec->id).get(), stride, i});
                    }
                }
            }
        }
        std::size_t next = 0;  // plan's next launch to run
        const auto queue = [&](std::size_t index) {
            if (index < plan.size()) {
                const Planned& p = plan[index];
                device().queue_run(*p.kernel, exercise_.inputs[p.input], inputs[p.input], p.stride,
                                   geometry_);
            }
        };
        queue(0);
        for (const KernelSpec* spec : order) {
            const LoadedKernel& kernel = *loaded_.at(spec->id);
            for (const int stride : strides_of(exercise_, spec->id, figures_.unnamed_strides)) {
                const Stage stage{Stage::Kind::run, spec->id, stride};
                enter(stage, spec->is_student() ? student_limit(stride) : run_limit_);
                PendingRun current;
                KernelRun& run = current.run;
                run.kernel = spec->id;
                run.stride = stride;
                for (std::size_t i = 0; i < exercise_.inputs.size(); ++i) {
                    if (!launch_is_read(*spec, stride, i)) {
                        continue;
                    }
                    const InputSpec& input = exercise_.inputs[i];
                    queue(++next);
                    // What was compared so far is reported before the grade stops, whichever
                    // way it stops.
                    const auto report_all = [&] {
                        report_compared(true);
                        for (auto& output : current.outputs) {
                            run.outputs.push_back(output.get());
                        }
                        sink_.run(run);
                    };
                    DeviceLaunch launch;
                    try {
                        launch = device().run(kernel, input, inputs[i], stride, geometry_);
                    } catch (const std::runtime_error&) {
                        report_all();  // the device failed (Grade::run says so)
                        throw;
                    }
                    if (launch.end != DeviceLaunch::End::completed) {
                        report_all();
                        stop(stage, ending_of(launch.end),
                             who(exercise_, spec->id) + " failed" +
                                 (stride > 0 ? " at stride " + std::to_string(stride) : "") + ": " +
                                 text::shorten(launch.message, kMaxLaunchLineBytes));
                        return false;
                    }
                    if (i == 0 && launch.counts) {
                        run.counts = launch.counts;
                        run.count_source = "simulator";
                    }
                    const std::vector<std::string> notes = bounded_lines(launch.notes);
                    run.notes.insert(run.notes.end(), notes.begin(), notes.end());
                    for (const std::string& race : bounded_lines(launch.races)) {
                        if (std::find(run.races.begin(), run.races.end(), race) ==
                            run.races.end()) {
                            run.races.push_back(race);
                        }
                    }
                    if (spec->id == oracle) {
                        if (launch.kernel_ms) {
                            oracle_ms_[stride].push_back(*launch.kernel_ms);
                        }
                        oracle_outputs_[{input.id, stride}] = std::move(launch.outputs);
                        oracle_blocks_[{input.id, stride}] = launch.blocks_run;
                    } else if (spec->is_student()) {
                        // The oracle's runs all came first: nothing writes the map meanwhile.
                        const auto expected = oracle_outputs_.find({input.id, stride});
                        const std::vector<float>& oracle_words =
                            expected == oracle_outputs_.end() ? no_outputs : expected->second;
                        OutputPlacement compared = placement;
                        compared.oracle_blocks = oracle_blocks_[{input.id, stride}];
                        current.outputs.push_back(std::async(
                            std::launch::async, [id = input.id, words = std::move(launch.outputs),
                                                 &oracle_words, compared] {
                                return compare_outputs(id, words, oracle_words, compared);
                            }));
                    }
                }
                pending.push_back(std::move(current));
                report_compared(false);
            }
        }
        report_compared(true);
        return true;
    }

    // Whether anything reads an exercise kernel's run with input `i` at `stride`, in a grade of
    // the student's kernel: where the student's kernel runs at that stride, its outputs (the
    // oracle's are compared), its time (the student's limit) and the simulator's instruction
    // count (the student's budget); at any stride, the simulator's count and modeled cost of the
    // timing input. An exercise kernel's run at a stride of its own is otherwise left out (on a
    // GPU its outputs were never read; it is still timed, and checked there by the timed
    // launches' own outputs).
    bool launch_is_read(const KernelSpec& spec, int stride, std::size_t i) const {
        if (spec.is_student() || loaded_.count(std::string(kStudentKernel)) == 0) {
            return true;
        }
        const std::vector<int> student =
            strides_of(exercise_, std::string(kStudentKernel), figures_.unnamed_strides);
        if (std::find(student.begin(), student.end(), stride) != student.end()) {
            return true;
        }
        return i == 0 && device_->counts_as_it_runs();
    }

    // The limit of the student's runs at `stride`: student_run_limit() of what the oracle took
    // for the same launches, where the device timed each of them (a GPU); else the run limit.
    StageLimit student_limit(int stride) const {
        const auto found = oracle_ms_.find(stride);
        if (found == oracle_ms_.end() || found->second.size() != exercise_.inputs.size()) {
            return run_limit_;
        }
        const double oracle_ms = std::accumulate(found->second.begin(), found->second.end(), 0.0);
        const KernelSpec& oracle = *exercise_.oracle();
        return student_run_limit(
            oracle_ms, "the " + (oracle.label.empty() ? oracle.name : oracle.label), run_limit_);
    }

    // The base a case's ratio is taken against: the same kernel at the ratio's stride, or the
    // exercise's baseline kernel.
    std::optional<std::size_t> base_index(const KernelRun& run) const {
        const Case base = exercise_.has_sweep() ? Case{run.kernel, exercise_.ratios.to_stride}
                                                : Case{exercise_.ratios.to_kernel, 0};
        for (std::size_t i = 0; i < runs_.size(); ++i) {
            if (runs_[i].kernel == base.kernel && runs_[i].stride == base.stride) {
                return i;
            }
        }
        return std::nullopt;
    }

    // Whether a run's samples may be the class's (TimedCase::reusable): an exercise kernel's run
    // whose ratio base is one too, and that is no student run's base, so that every ratio pairs
    // rounds of one measurement.
    bool reusable(const KernelRun& run) const {
        if (run.kernel == kStudentKernel) {
            return false;
        }
        const auto a_student_base = [this](const KernelRun& candidate) {
            return std::any_of(runs_.begin(), runs_.end(), [&](const KernelRun& other) {
                const auto base = base_index(other);
                return other.kernel == kStudentKernel && base &&
                       runs_[*base].kernel == candidate.kernel &&
                       runs_[*base].stride == candidate.stride;
            });
        };
        const auto base = base_index(run);
        return !a_student_base(run) && !(base && a_student_base(runs_[*base]));
    }

    OutputPlacement output_placement() const {
        return OutputPlacement{exercise_.buffers.output, geometry_.block.count(), 0,
                               geometry_.grid.count()};
    }

    std::vector<LoadedKernel*> loaded_kernels() const {
        std::vector<LoadedKernel*> kernels;
        for (const auto& [id, kernel] : loaded_) {
            kernels.push_back(kernel.get());
        }
        return kernels;
    }

    // False where a kernel failed in the timing rounds.
    bool time_cases() {
        if (!device().times() || runs_.empty()) {
            return true;
        }
        const bool student_timed = std::any_of(runs_.begin(), runs_.end(), [](const KernelRun& r) {
            return r.kernel == kStudentKernel;
        });
        const Stage stage{Stage::Kind::time, student_timed ? std::string(kStudentKernel) : ""};
        enter(stage, run_limit_);
        std::vector<TimedCase> cases;
        for (const KernelRun& run : runs_) {
            cases.push_back({loaded_.at(run.kernel).get(), run.stride, reusable(run)});
        }
        device().reload(loaded_kernels());
        TimingSamples samples =
            device().time(cases, exercise_.inputs.front(), inputs_.front(), geometry_);
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
        // The count, asked for before this grade reads the samples (count_on_device()).
        if (const std::vector<TimedCase> counted = count_cases(); !counted.empty()) {
            device().queue_count(loaded_kernels(), counted, exercise_.inputs.front(),
                                 inputs_.front(), geometry_);
        }
        for (std::size_t i = 0; i < runs_.size(); ++i) {
            if (samples.per_round_ms[i].empty()) {
                continue;
            }
            runs_[i].timing = summarize(samples.per_round_ms[i], samples.launches_per_sample[i]);
            runs_[i].timing->modeled = samples.modeled;
        }
        for (std::size_t i = 0; i < runs_.size(); ++i) {
            const auto base = base_index(runs_[i]);
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
        // The timed launches are checked as the correctness runs were, on threads of their own:
        // the count needs none of it, so the GPU goes on (collect_timed_checks()).
        const InputSpec& input = exercise_.inputs.front();
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
        for (const KernelRun& run : runs_) {
            sink_.run(run);
        }
        figures_.timing_rounds = samples.rounds;
        figures_.timing_seconds = samples.seconds;
        return true;
    }

    // The timed launches' checks, each added to its run once it is in.
    void collect_timed_checks() {
        for (auto& [i, check] : timed_checks_) {
            runs_[i].outputs.push_back(check.get());
            sink_.run(runs_[i]);
        }
        timed_checks_.clear();
    }

    // What the simulator sees of the student's kernel, from its PTX, where the grade itself runs
    // on a GPU: per stride, the fewest blocks it runs (SimDevice::blocks_for: the first and the
    // last of a 1-D grid, 8 of a 2-D one).
    struct SimulatorWitness {
        // The count that stands in where the GPU's counters cannot count, and that the GPU's
        // count is compared with.
        std::map<int, SharedAccessCounts> counts;
        // Shared-memory races: a GPU's output may come out right by the warps' timing (a
        // missing barrier), which no output check on a GPU can tell.
        std::map<int, std::vector<std::string>> races;
    };
    SimulatorWitness simulate_student(const std::vector<int>& strides) const {
        SimulatorWitness witness;
        const auto compiled = compiled_.find(std::string(kStudentKernel));
        if (compiled == compiled_.end() || !compiled->second.outcome.ok) {
            return witness;
        }
        SimDevice simulator(exercise_, options_.seed, SimDevice::StudentBlocks::sample);
        const KernelSpec& spec = exercise_.kernel(std::string(kStudentKernel));
        const LoadResult loaded = simulator.load(spec, compiled->second);
        if (!loaded.kernel) {
            return witness;
        }
        InputSpec input = exercise_.inputs.front();
        input.simulated_blocks = 1;
        const LaunchGeometry geometry = simulator.geometry(*loaded.kernel);
        for (const int stride : strides) {
            const DeviceLaunch launch =
                simulator.run(*loaded.kernel, input, inputs_.front(), stride, geometry);
            if (launch.end != DeviceLaunch::End::completed) {
                continue;
            }
            if (launch.counts) {
                witness.counts[stride] = *launch.counts;
            }
            if (!launch.races.empty()) {
                witness.races[stride] = bounded_lines(launch.races);
            }
        }
        return witness;
    }

    std::vector<int> student_strides() const {
        std::vector<int> strides;
        for (const KernelRun& run : runs_) {
            if (run.kernel == kStudentKernel) {
                strides.push_back(run.stride);
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

    // The launches the device counts after timing: the student's, on a device that does not
    // count as it runs; none otherwise.
    std::vector<TimedCase> count_cases() {
        std::vector<TimedCase> cases;
        if (device().counts_as_it_runs()) {
            return cases;
        }
        for (const KernelRun* run : counted_runs()) {
            cases.push_back({loaded_.at(run->kernel).get(), run->stride});
        }
        return cases;
    }

    // On a GPU, after timing: the hardware's own count of the student's shared-memory traffic.
    // Nothing where the device counts as it runs, or where a kernel failed while counted.
    std::optional<HardwareCounts> count_on_device() {
        const std::vector<TimedCase> cases = count_cases();
        if (cases.empty()) {
            return std::nullopt;
        }
        const Stage stage{Stage::Kind::count, std::string(kStudentKernel)};
        enter(stage, run_limit_);
        device().reload(loaded_kernels());
        HardwareCounts hardware =
            device().count(cases, exercise_.inputs.front(), inputs_.front(), geometry_);
        if (hardware.end != DeviceLaunch::End::completed) {
            stop(stage, ending_of(hardware.end),
                 "a kernel failed while its shared accesses were counted: " + hardware.message);
            return std::nullopt;
        }
        if (hardware.counted && hardware.counts.size() != cases.size()) {
            hardware.counted = false;
            hardware.reason = "the counters answered for " +
                              std::to_string(hardware.counts.size()) + " of " +
                              std::to_string(cases.size()) + " launches";
        }
        return hardware;
    }

    // Outside the device's lock: the hardware's counts beside the simulator's witness of the same
    // source (its races, and its count where the counters could not count).
    void merge_counts(const HardwareCounts& hardware) {
        const std::vector<KernelRun*> counted = counted_runs();
        const SimulatorWitness witness =
            simulator_.valid() ? simulator_.get() : simulate_student(student_strides());
        const std::map<int, SharedAccessCounts>& simulated = witness.counts;
        for (KernelRun* run : counted) {
            const auto races = witness.races.find(run->stride);
            if (races == witness.races.end()) {
                continue;
            }
            for (const std::string& race : races->second) {
                run->races.push_back("the simulator, running this source: " + race);
            }
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
            const auto sim = simulated.find(run.stride);
            if (hardware.counted) {
                run.counts = hardware.counts[i];
                run.count_source = "hardware";
                if (sim != simulated.end()) {
                    // The GPU counted every block of the grid; the simulator, the blocks it ran,
                    // compared at the grid's scale. Its lines say where a conflict is, which the
                    // GPU's launch totals cannot.
                    run.count_note = counters::difference_note(
                        as_counter_counts(hardware.counts[i]), geometry_.grid.count(),
                        as_counter_counts(sim->second), sim->second.blocks);
                    run.witness = sim->second;
                }
            } else if (sim != simulated.end()) {
                run.counts = sim->second;
                run.count_source = "simulator";
            }
            sink_.run(run);
        }
        sink_.environment(environment_);
    }

    // Tells the parent that `stage` begins, with its limit (its deadline, and whose fault a stop
    // in it is).
    void enter(const Stage& stage, const StageLimit& limit) {
        stage_ = stage;
        sink_.stage(stage, limit);
    }

    void stop(const Stage& stage, Ending ending, const std::string& message) {
        sink_.interruption(blame(stage, ending, message));
    }

    // The modules, then the device's context, go before its lock does.
    void release_device() {
        loaded_.clear();
        if (device_ && device_->held()) {
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
    GradeFigures figures_;
    Environment environment_;
    std::map<std::string, CompiledKernel> compiled_;
    std::unique_ptr<Device> device_;
    std::map<std::string, std::unique_ptr<LoadedKernel>> loaded_;
    LaunchGeometry geometry_;
    std::vector<KernelRun> runs_;
    std::vector<std::vector<float>> inputs_;
    std::map<std::pair<std::string, int>, std::vector<float>> oracle_outputs_;
    // How many blocks each of the oracle's runs covered, where it ran only some (the simulator).
    std::map<std::pair<std::string, int>, std::uint64_t> oracle_blocks_;
    // The oracle's time on the device at each stride, one entry per input (where it has one).
    std::map<int, std::vector<double>> oracle_ms_;
    std::future<SimulatorWitness> simulator_;
    Stage stage_{Stage::Kind::answers};  // the stage entered last (enter())
    // The timed launches' checks, by index in runs_, while they run (time_cases()).
    std::vector<std::pair<std::size_t, std::future<OutputComparison>>> timed_checks_;
};

}  // namespace

void run_pipeline(const Exercise& exercise, const WorkerOptions& options, ProgressSink& sink,
                  const DeviceChoice& choice, const PipelineHooks& hooks) {
    Grade(exercise, options, sink, choice, hooks).run();
}

void run_worker(const Exercise& exercise, const WorkerOptions& options, ProgressSink& sink) {
    if (options.mode == WorkerOptions::Mode::explain) {
        explain_kernel(exercise, options, sink);
        return;
    }
    run_pipeline(exercise, options, sink,
                 choose_device(exercise, options.backend, options.device, options.seed,
                               options.device_server));
}

}  // namespace grader
