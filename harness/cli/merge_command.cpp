// `grader merge SHARD... --output DIR`: the shards of a class graded as a job array (`grader
// batch --shard I/N`) put back together into the class outputs one batch would have written.

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "batch/batch.hpp"
#include "batch/merge.hpp"
#include "batch/shard.hpp"
#include "cli/commands.hpp"
#include "cli/locations.hpp"
#include "common/text.hpp"
#include "exercise/exercise.hpp"
#include "text/text_safety.hpp"

namespace grader::cli {
namespace {

struct MergeCommandOptions {
    std::vector<std::filesystem::path> shards;
    std::filesystem::path output;
    std::filesystem::path exercise;
    std::string qid;
};

int run_merge_command(const MergeCommandOptions& options, const GlobalOptions& global) {
    // The shards' own exercise (their manifests say it), never a default. A manifest that cannot
    // be read names no exercise here: the merge refuses it below, with every other problem.
    std::optional<std::string> shards_exercise;
    for (const auto& shard : options.shards) {
        std::optional<ShardManifest> manifest;
        try {
            manifest = read_manifest(shard);
        } catch (const std::runtime_error&) {
            continue;
        }
        if (manifest && !manifest->exercise_id.empty()) {
            shards_exercise = manifest->exercise_id;
            break;
        }
    }
    std::string why;
    const auto exercise_dir =
        exercise_for_run(options.exercise, shards_exercise, "the shards (their manifests)", why);
    if (!exercise_dir) {
        spdlog::error("{}", why);
        return kExitUsage;
    }
    const Exercise exercise = load_exercise(*exercise_dir);
    MergeOptions merge;
    merge.shard_dirs = options.shards;
    merge.output_dir = options.output;
    merge.prairielearn_qid = options.qid;
    MergeResult result;
    try {
        result = merge_shards(exercise, merge);
    } catch (const MergeRefused& refused) {
        for (const auto& problem : refused.problems()) {
            spdlog::error("{}", text::visible_line(problem));
        }
        if (!refused.rerun().empty()) {
            // One line a script can read: the indexes for sbatch --array ("1,4-6").
            std::printf("rerun array indexes: %s\n", array_ranges(refused.rerun()).c_str());
            std::fflush(stdout);
        }
        spdlog::error("merge refused: nothing was written into {}",
                      text::visible_line(options.output.string()));
        return kExitMergeRefused;
    } catch (const BatchError& error) {
        spdlog::error("{}", text::visible_line(error.what()));
        return kExitUsage;
    }
    if (!global.quiet) {
        std::printf("merged %zu students from %d shards (%s) in %s s\n", result.students,
                    result.shard_count, result.backend.c_str(),
                    format_number(result.wall_seconds, 2).c_str());
        for (const auto& [device, students] : result.graded_on) {
            std::printf("graded on %s: %zu students\n", text::visible_line(device).c_str(),
                        students.size());
        }
        std::size_t gpu_models = 0;
        for (const auto& [device, students] : result.graded_on) {
            gpu_models += device != "the PTX simulator" && device != "no GPU (ungradable)";
        }
        if (gpu_models > 1) {
            std::printf(
                "this class was graded on %zu GPU models: timed numbers compare within a model, "
                "not across them (the gradebook's numbers column says which graded whom)\n",
                gpu_models);
        }
        if (result.stage.flagged > 0) {
            std::printf("%zu submissions to look at twice: see the gradebook and the class page\n",
                        result.stage.flagged);
        }
        for (const auto& file : result.stage.files) {
            std::printf("wrote %s\n", text::visible_line(file.string()).c_str());
        }
        std::printf("wrote %s\n", text::visible_line(result.prairielearn_scores.string()).c_str());
        std::fflush(stdout);
    }
    if (result.ungradable > 0) {
        std::printf("rerun array indexes: %s\n", array_ranges(result.rerun_ungradable).c_str());
        std::fflush(stdout);
        spdlog::error(
            "{} students are ungradable (the machine, not the student): run those array indexes "
            "again, then merge again",
            result.ungradable);
        return kExitUngradable;
    }
    return kExitPass;
}

}  // namespace

void add_merge_command(CLI::App& app, const GlobalOptions& global, Runner& run) {
    auto options = std::make_shared<MergeCommandOptions>();
    CLI::App* command = app.add_subcommand(
        "merge", "Put the shards of a class graded as a job array back together");
    command
        ->add_option("SHARDS", options->shards,
                     "The shards' output folders (batch --shard I/N --output ...), e.g. "
                     "RUN/shards/*")
        ->required();
    command->add_option("-o,--output", options->output, "Folder for the merged class outputs")
        ->required();
    command
        ->add_option("--exercise", options->exercise,
                     "The exercise the shards graded: its folder or bundled id (default: the "
                     "shards' own, as their manifests say; another is refused)")
        ->transform(exercise_locator());
    command->add_option("--prairielearn-qid", options->qid,
                        "The question id for prairielearn-scores.csv (default: the exercise's id)");
    command->footer(
        "Example:\n  grader merge run/shards/* -o run/class --exercise day15-padding\nwrites "
        "run/class/gradebook.csv, summary.json, class-report.html and prairielearn-scores.csv.");
    command->callback([options, &global, &run] {
        run = [options, &global] { return run_merge_command(*options, global); };
    });
}

}  // namespace grader::cli
