#pragma once

// A class split over the tasks of a job array (Slurm, a Kubernetes indexed job): shard I of N
// grades the submissions at positions I, I+N, I+2N ... of the sorted class folder, computed alone
// by every task with no coordination. Each shard's output folder holds the students' report
// folders and shard.json, the manifest `grader merge` reads to put the class back together.

#include <cstddef>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "exercise/exercise.hpp"
#include "report/class_outputs.hpp"

namespace grader {

struct BatchSubmission;

struct Shard {
    int index = 0;  // 0 <= index < count
    int count = 1;
};

// The most tasks a class is split over: a job array's own limit (Slurm's MaxArraySize) is 1001 by
// default, and a count beyond this in a shard's manifest is a forged one.
inline constexpr int kMaxShardCount = 10000;

// "I/N" with 0 <= I < N <= kMaxShardCount; nullopt (and why) for anything else.
std::optional<Shard> parse_shard(const std::string& text, std::string& why);

// Sorted indexes as a job array takes them (sbatch --array): "0,3-5,9"; after max_ranges ranges,
// ",...".
std::string array_ranges(const std::vector<int>& indexes, std::size_t max_ranges = 1000);

// Whether the submission at this position of the sorted class belongs to the shard.
inline bool in_shard(std::size_t position, const Shard& shard) {
    return static_cast<int>(position % static_cast<std::size_t>(shard.count)) == shard.index;
}

// The manifest's file name in a shard's output folder.
inline constexpr const char* kShardManifestFile = "shard.json";

// Digests that two shards compare to know they graded the same thing: the class folder's
// submission names (raw bytes, in order), and every file of the exercise folder (path and
// content). FNV-1a 64, as hex.
std::string class_digest(const std::vector<BatchSubmission>& submissions);
std::string exercise_digest(const Exercise& exercise);

// A GPU as the driver names it, read from /proc/driver/nvidia without initializing CUDA; empty
// fields where the driver does not say.
struct GpuIdentity {
    std::string bus_id;
    std::string name;
    std::string uuid;
    std::string driver;
};
GpuIdentity gpu_identity(const std::string& bus_id);

// What a shard writes about itself. Written when it starts (complete false) and again when it
// ends; a restarted shard appends a run.
struct ShardRun {
    std::string started_at;
    std::string finished_at;  // empty while running, or where the task was killed
    std::size_t graded = 0;
    std::size_t kept = 0;
    bool interrupted = false;
};

struct ShardManifest {
    Shard shard;
    std::string class_digest;
    std::vector<std::string> class_students;  // every submission's output name, sorted by folder
    std::vector<std::string> class_folders;   // their folders' names as found (any bytes)
    std::vector<SkippedEntry> skipped;        // what the class folder holds that is no submission
    std::vector<std::string> assigned;        // this shard's output names
    std::string exercise_id;
    std::string exercise_digest;
    std::string grader_version;
    std::string backend;  // "cuda" or "sim"
    std::string host;
    // The scheduler's view of the task: SLURM_JOB_ID, SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID,
    // SLURM_JOB_GPUS, SLURM_RESTART_COUNT, CUDA_VISIBLE_DEVICES, JOB_COMPLETION_INDEX where set.
    std::map<std::string, std::string> scheduler;
    std::vector<GpuIdentity> gpus;  // the GPUs this shard's grades held
    std::vector<ShardRun> runs;     // one per start of the task, oldest first
    bool complete = false;          // every assigned submission has a report
};

nlohmann::json manifest_to_json(const ShardManifest& manifest);
// Throws std::runtime_error naming the field at fault ("field class.students[3] is ..."): every
// field batch writes is checked, and the class list as batch would list it (class_digest
// recomputed, each output name batch's for its folder, `assigned` the shard's share), since the
// merge writes a folder for each name.
ShardManifest manifest_from_json(const nlohmann::json& json);
// nullopt where missing; throws std::runtime_error, naming the file, where present but not a
// manifest. The file is read without following a link.
std::optional<ShardManifest> read_manifest(const std::filesystem::path& shard_dir);
void write_manifest(const std::filesystem::path& shard_dir, const ShardManifest& manifest);

// The scheduler's variables of this process (see ShardManifest::scheduler) and the host name.
std::map<std::string, std::string> scheduler_environment();
std::string host_name();

}  // namespace grader
