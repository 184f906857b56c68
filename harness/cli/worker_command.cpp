// `grader __worker`: the child process of a grade. Not for people; grade.cpp starts it.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "device/device.hpp"
#include "device/device_server.hpp"
#include "exercise/exercise.hpp"
#include "grade/protocol.hpp"
#include "grade/worker.hpp"
#include "grade/worker_options.hpp"

namespace grader::cli {

void add_worker_command(CLI::App& app, Runner& run) {
    auto options = std::make_shared<WorkerOptions>();
    auto reference_only = std::make_shared<bool>(false);
    auto explain = std::make_shared<bool>(false);
    CLI::App* command = app.add_subcommand(WorkerFlags::command, "");
    command->group("");  // hidden from --help
    command->add_option(WorkerFlags::exercise, options->exercise_dir)->required();
    command->add_option(WorkerFlags::submission, options->submission_dir);
    command->add_option(WorkerFlags::device, options->device);
    command->add_option(WorkerFlags::seed, options->seed);
    command->add_option(WorkerFlags::backend, options->backend);
    command->add_option(WorkerFlags::device_server, options->device_server);
    command->add_option(WorkerFlags::run_timeout, options->run_seconds_override);
    command->add_option(WorkerFlags::sim_threads, options->sim_threads);
    command->add_flag(WorkerFlags::reference_only, *reference_only);
    command->add_flag(WorkerFlags::explain, *explain);
    command->add_option(WorkerFlags::explain_strides, options->explain_strides)->delimiter(',');
    command->add_flag(WorkerFlags::explain_reference, options->explain_reference);
    command->callback([options, reference_only, explain, &run] {
        run = [options, reference_only, explain]() -> int {
            options->mode = *explain          ? WorkerOptions::Mode::explain
                            : *reference_only ? WorkerOptions::Mode::reference_only
                                              : WorkerOptions::Mode::grade;
            // A grade's large buffers stay in the heap when freed, for the next launch's to
            // reuse (on the simulator a Part 2 grade took 1.1 s this way against 1.5 s).
            keep_large_buffers_in_heap();
            // GRADER_TRACE_STEPS=1: how long the device's steps took, on standard error, for the
            // benchmarks' timelines (scripts/bench/worker_timeline.py).
            if (std::getenv("GRADER_TRACE_STEPS") != nullptr) {
                options->trace = [](const std::string& step) {
                    std::fprintf(stderr, "grader: %s\n", step.c_str());
                };
            }
            const Exercise exercise = load_exercise(options->exercise_dir);
            FdProgressSink sink(3);
            run_worker(exercise, *options, sink);
            // Everything the grade observed has been sent, and the device was released (its
            // context ended, its lock given back): the process ends here, without the exit-time
            // teardown of the CUDA driver and CUPTI, which the grader would wait for before it
            // writes the report.
            std::fflush(nullptr);
            std::_Exit(0);
        };
    });
}

}  // namespace grader::cli
