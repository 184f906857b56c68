#pragma once

// `grader merge`: the shards of a class graded as a job array (batch --shard I/N), put back
// together. Every check comes first; only a class that is whole and consistent is written, and
// then exactly as one batch of the whole class writes it (write_class_stage), plus which GPU
// model graded whom and PrairieLearn's score upload.

#include <cstddef>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "batch/batch.hpp"
#include "batch/shard.hpp"
#include "exercise/exercise.hpp"
#include "report/class_outputs.hpp"

namespace grader {

// The shards cannot make one class: what is wrong, one line each, and the array indexes whose
// tasks must run again (empty where running them again would not help: shards of different
// classes, exercises, grader versions or backends).
class MergeRefused : public std::runtime_error {
public:
    MergeRefused(const std::vector<std::string>& problems, std::vector<int> rerun);
    const std::vector<std::string>& problems() const { return problems_; }
    const std::vector<int>& rerun() const { return rerun_; }

private:
    std::vector<std::string> problems_;
    std::vector<int> rerun_;
};

struct MergeOptions {
    std::vector<std::filesystem::path> shard_dirs;  // each a batch --shard output folder
    std::filesystem::path output_dir;               // created if missing
    std::string prairielearn_qid;  // the question of the score upload; empty: the exercise's id
};

struct MergeResult {
    std::size_t students = 0;
    int shard_count = 0;
    std::string backend;
    std::vector<ClassEntry> entries;
    // Who graded whom: "NVIDIA H200" (or "the PTX simulator") to the students it graded.
    std::map<std::string, std::vector<std::string>> graded_on;
    std::size_t ungradable = 0;
    std::vector<int> rerun_ungradable;  // the indexes whose students the machine could not grade
    ClassStageResult stage;
    std::filesystem::path prairielearn_scores;
    double wall_seconds = 0.0;
};

// Throws MergeRefused before writing anything where the shards do not make one class; BatchError
// for an output folder that is one of the shards or lies inside one; std::exception where a file
// cannot be written.
MergeResult merge_shards(const Exercise& exercise, const MergeOptions& options);

}  // namespace grader
