// The grading pipeline, written once for every device: compile every kernel, load them, plan
// every launch, run each kernel at each stride with each input (the oracle first, so the
// student's outputs compare with its), time them against each other, count, and report every
// observation as it happens.

#include "grade/pipeline.hpp"

#include <cxxabi.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "checks/checks.hpp"
#include "common/clock.hpp"
#include "common/kernel_ids.hpp"
#include "common/version.hpp"
#include "compile/compile.hpp"
#include "compile/compile_cache.hpp"
#include "device/backend.hpp"
#include "grade/compiles.hpp"
#include "grade/correctness_runs.hpp"
#include "grade/grade.hpp"
#include "grade/launches.hpp"
#include "grade/plan.hpp"
#include "grade/run_slots.hpp"
#include "grade/shared_counts.hpp"
#include "grade/sources.hpp"
#include "grade/stage.hpp"
#include "grade/stages.hpp"
#include "grade/timing_rounds.hpp"
#include "measure/outputs.hpp"
#include "model/measurements.hpp"

namespace grader {
namespace {

using Clock = std::chrono::steady_clock;

// One grade, in the order its parts run: the compiles beside the device's start, the load and the
// plan, the correctness runs (correctness_runs.hpp), the timing rounds (timing_rounds.hpp), the
// count (shared_counts.hpp), the device given back, then what needs only the CPU.
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
          stages_(sink, options.run_seconds_override > 0 ? options.run_seconds_override
                                                         : exercise.limits.run_seconds) {}

    void run() {
        const bool with_student = options_.mode != WorkerOptions::Mode::reference_only;
        announce(with_student);
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
        if (compile_and_open_device(with_student)) {
            inputs_ = inputs.get();
            grade_on_device();
        }
        finish();
    }

private:
    // The grade's seed, the strides it draws, the environment, and the answers file.
    void announce(bool with_student) {
        figures_.seed = options_.seed;
        figures_.unnamed_strides =
            with_student ? draw_unnamed_strides(exercise_, options_.seed) : std::vector<int>{};
        sink_.measured(figures_);
        environment_.backend = std::string(to_string(choice_.backend));
        environment_.grader_version = kGraderVersion;
        try {
            environment_.nvrtc_version = nvrtc_version_cached(default_compile_cache_dir());
        } catch (const NvrtcError&) {
            // Left blank where NVRTC cannot be loaded: the compile stage stops and says why.
        }
        sink_.environment(environment_);
        if (with_student) {
            stages_.enter({Stage::Kind::answers}, exercise_.limits.compile_seconds);
            sink_.submission(load_submission(options_.submission_dir, exercise_));
        }
    }

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
        stages_.enter({Stage::Kind::compile}, compile_limit);
        KernelSources sources = load_kernel_sources(
            exercise_, with_student ? options_.submission_dir : std::filesystem::path{},
            choice_.arch);
        const bool poison = choice_.open && choice_.shared_poison && sources.shared_poison;
        UntrustedCompileOptions compile_options;
        compile_options.grader_executable =
            hooks_.grader_executable.empty() ? current_executable() : hooks_.grader_executable;
        compile_options.seconds = exercise_.limits.compile_seconds;
        compile_options.memory_bytes = exercise_.limits.memory_bytes;
        compiles_.emplace(exercise_, std::move(sources), poison, compile_options);
        if (choice_.open) {
            device_ = choice_.open();
            figures_.context_seconds = device_->open_seconds();
        }
        bool exercise_compiled = false;
        try {
            exercise_compiled = compiles_->finish(with_student, environment_, sink_);
        } catch (const NvrtcError& error) {
            stages_.stop(Stage{Stage::Kind::compile}, Ending::harness_error, error.what());
            return false;
        } catch (const std::runtime_error& error) {
            stages_.stop(Stage{Stage::Kind::compile}, Ending::harness_error,
                         std::string("the confined compile failed: ") + error.what());
            return false;
        }
        if (compiles_->shared_poison()) {
            device_->set_shared_poison(*compiles_->shared_poison());
        }
        if (!device_) {
            environment_.gpu_available = false;
            sink_.environment(environment_);
            stages_.stop(Stage{Stage::Kind::compile}, Ending::no_gpu,
                         "no GPU: " + choice_.no_gpu_reason +
                             ". A GPU is needed for timing; the answers file, the include vetting, "
                             "the compile for " +
                             choice_.arch + " and the signature check ran without one.");
            return false;
        }
        // A kernel of the exercise's own that does not compile: the checks report the machine.
        return exercise_compiled;
    }

    // Load, run, time and count on the device, then give it back and merge what the CPU made.
    void grade_on_device() {
        std::optional<HardwareCounts> hardware;
        try {
            if (!load() ||
                !CorrectnessRuns(exercise_, *device_, plan_, *slots_, stages_, sink_).run(runs_)) {
                return;
            }
            start_witness();
            if (!timing_.time(*device_, plan_, *slots_, stages_, runs_, environment_, figures_,
                              sink_)) {
                return;
            }
            hardware = counts_.count(*device_, plan_, *slots_, stages_);
        } catch (const std::runtime_error& error) {
            // The device itself failed outside any kernel (a device server that went away, a
            // driver call that failed): the machine's fault, at the stage it happened in, even
            // where that stage runs the student's code. A kernel's own end is an outcome, never
            // an exception (device.hpp).
            stages_.stop(stages_.current(), Ending::harness_error,
                         std::string("the device failed: ") + error.what());
            return;
        }
        // The GPU's work is done: it goes to the next grade before the witness is waited for.
        release_device();
        timing_.collect_checks(runs_, sink_);
        if (hardware) {
            counts_.merge(*hardware, plan_.launches.geometry.grid.count(), runs_, environment_,
                          sink_);
        }
    }

    // Takes the device, loads every kernel that compiled, gives it the inputs and the plan.
    // False where grading cannot go on.
    bool load() {
        // Compiles overlap freely; a GPU itself is used by one grade at a time, machine-wide.
        if (device_->capabilities().locks) {
            stages_.enter({Stage::Kind::wait_for_device}, 7 * 24 * 3600.0);
            environment_.gpu_bus_id = device_->acquire();
            environment_.gpu_held_from = unix_seconds();
            sink_.environment(environment_);
        }
        stages_.enter({Stage::Kind::load}, stages_.run_limit());
        for (const KernelSpec& spec : exercise_.kernels) {
            const auto found = compiles_->kernels().find(spec.id);
            if (found != compiles_->kernels().end() &&
                !(spec.is_student() ? load_student(spec, found->second)
                                    : load_exercise_kernel(spec, found->second))) {
                return false;
            }
        }
        const LaunchGeometry geometry = device_->geometry(*loaded_.at(exercise_.oracle()->id));
        device_->describe(environment_);
        sink_.environment(environment_);
        for (std::size_t i = 0; i < exercise_.inputs.size(); ++i) {
            device_->put_input(exercise_.inputs[i], inputs_[i]);
        }
        std::map<std::string, LoadedKernel*> loaded;
        for (const auto& [id, kernel] : loaded_) {
            loaded.emplace(id, kernel.get());
        }
        // The device's capabilities now: a device server's are known once its session began.
        plan_ = plan_grade(exercise_, loaded, figures_.unnamed_strides, device_->capabilities(),
                           geometry);
        slots_.emplace(exercise_, plan_, plan_.launches.geometry);
        device_->follow(plan_.launches);
        return true;
    }

    // False where the grade stops (the simulator cannot read the kernel).
    bool load_student(const KernelSpec& spec, CompiledKernel& compiled) {
        CompileOutcome& outcome = compiled.outcome;
        if (!outcome.ok || !outcome.abi_problem.empty()) {
            return true;
        }
        LoadResult result = device_->load(spec, compiled);
        if (result.unsupported) {
            stages_.stop({Stage::Kind::load}, Ending::unsupported,
                         result.problem + " in " + kernel_title(exercise_, spec.id));
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
        LoadResult result = device_->load(spec, compiled);
        if (!result.kernel) {
            stages_.stop(Stage{Stage::Kind::load, spec.id},
                         result.unsupported ? Ending::unsupported : Ending::harness_error,
                         "the exercise's kernel " + kernel_title(exercise_, spec.id) +
                             " could not be loaded: " + result.problem);
            return false;
        }
        loaded_.emplace(spec.id, std::move(result.kernel));
        return true;
    }

    // The simulator's witness of the student's kernel: CPU work while the GPU times, on a device
    // that does not count as it runs.
    void start_witness() {
        const auto& kernels = compiles_->kernels();
        const auto compiled = kernels.find(std::string(kStudentKernel));
        if (device_->capabilities().counts_as_it_runs || compiled == kernels.end() ||
            !compiled->second.outcome.ok) {
            return;
        }
        counts_.start_witness(exercise_, options_.seed, compiled->second, inputs_.front(), plan_);
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
        timing_.collect_checks(runs_, sink_);  // where the count stopped the grade
        counts_.wait();                        // the witness reads this grade's members
        figures_.wall_seconds = std::chrono::duration<double>(Clock::now() - began_).count();
        sink_.measured(figures_);
    }

    const Exercise& exercise_;
    const WorkerOptions& options_;
    ProgressSink& sink_;
    const DeviceChoice& choice_;
    const PipelineHooks& hooks_;
    const Clock::time_point began_;
    GradeStages stages_;
    GradeFigures figures_;
    Environment environment_;
    std::optional<GradeCompiles> compiles_;
    std::unique_ptr<Device> device_;
    std::map<std::string, std::unique_ptr<LoadedKernel>> loaded_;
    GradePlan plan_;
    std::optional<RunSlots> slots_;  // one for each run of the plan
    std::vector<KernelRun> runs_;    // one per case of the plan, in its order, as they complete
    std::vector<InputWords> inputs_;
    TimingRounds timing_;
    SharedCounts counts_;
};

}  // namespace

void run_pipeline(const Exercise& exercise, const WorkerOptions& options, ProgressSink& sink,
                  const DeviceChoice& choice, const PipelineHooks& hooks) {
    Grade(exercise, options, sink, choice, hooks).run();
}

}  // namespace grader
