// `grader __worker`: the child process of a grade. Not for people; grade.cpp starts it.

#include <unistd.h>

#include "cli/commands.hpp"
#include "exercise/exercise.hpp"
#include "grade/worker.hpp"

namespace grader::cli {

void add_worker_command(CLI::App& app, Runner& run) {
    auto options = std::make_shared<WorkerOptions>();
    CLI::App* command = app.add_subcommand("__worker", "");
    command->group("");  // hidden from --help
    command->add_option("--exercise", options->exercise_dir)->required();
    command->add_option("--submission", options->submission_dir)->required();
    command->add_option("--device", options->device);
    command->add_option("--seed", options->seed);
    command->add_option("--backend", options->backend);
    command->add_option("--run-timeout", options->run_seconds_override);
    command->add_option("--device-lock", options->device_lock);
    command->callback([options, &run] {
        run = [options] {
            const Exercise exercise = load_exercise(options->exercise_dir);
            FdProgressSink sink(3);
            run_worker(exercise, *options, sink);
            return 0;
        };
    });
}

}  // namespace grader::cli
