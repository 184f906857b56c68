#include "batch/shard.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

#include "batch/batch.hpp"
#include "common/files.hpp"
#include "common/text.hpp"

namespace grader {
namespace {

// A manifest larger than this is not one the grader wrote.
constexpr std::size_t kManifestMaxBytes = std::size_t{16} << 20;
// Exercise files are small; one larger than this is hashed by its size alone.
constexpr std::size_t kExerciseFileMaxBytes = std::size_t{16} << 20;

class Fnv1a64 {
public:
    void add(std::string_view bytes) { hash_ = fnv1a(bytes, hash_); }
    // A length before each piece, so that ("ab","c") and ("a","bc") differ.
    void add_piece(std::string_view bytes) {
        add(std::to_string(bytes.size()) + ":");
        add(bytes);
    }
    std::string hex() const {
        char text[17];
        std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash_));
        return text;
    }

private:
    std::uint64_t hash_ = kFnv1aOffset;
};

std::string from_hex(const std::string& hex) {
    if (hex.size() % 2 != 0) {
        throw std::runtime_error("a hex name of odd length");
    }
    std::string bytes;
    for (std::size_t i = 0; i < hex.size(); i += 2) {
        bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    }
    return bytes;
}

std::string trimmed(std::string text) {
    const auto first = text.find_first_not_of(" \t\r\n");
    const auto last = text.find_last_not_of(" \t\r\n");
    return first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
}

// "Key: value" from a /proc/driver/nvidia file.
std::string proc_field(const std::string& text, const std::string& key) {
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        const std::string line = text.substr(start, end - start);
        if (line.rfind(key + ":", 0) == 0) {
            return trimmed(line.substr(key.size() + 1));
        }
        start = end + 1;
    }
    return {};
}

}  // namespace

std::optional<Shard> parse_shard(const std::string& text, std::string& why) {
    const auto slash = text.find('/');
    const auto all_digits = [](const std::string& part) {
        return !part.empty() && part.size() <= 6 &&
               std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (slash == std::string::npos || !all_digits(text.substr(0, slash)) ||
        !all_digits(text.substr(slash + 1))) {
        why = "--shard takes I/N, this task's index and the number of tasks, e.g. 3/8";
        return std::nullopt;
    }
    Shard shard;
    shard.index = std::stoi(text.substr(0, slash));
    shard.count = std::stoi(text.substr(slash + 1));
    if (shard.count < 1 || shard.index >= shard.count) {
        why = "--shard " + text + ": the index counts from 0 and stays below the number of tasks";
        return std::nullopt;
    }
    return shard;
}

std::string class_digest(const std::vector<BatchSubmission>& submissions) {
    Fnv1a64 hash;
    for (const auto& submission : submissions) {
        hash.add_piece(submission.folder_name);
    }
    return hash.hex();
}

std::string exercise_digest(const Exercise& exercise) {
    std::vector<std::filesystem::path> files;
    std::error_code error;
    for (std::filesystem::recursive_directory_iterator it(exercise.directory, error), end;
         !error && it != end; it.increment(error)) {
        if (it->is_regular_file(error)) {
            files.push_back(it->path().lexically_relative(exercise.directory));
        }
    }
    std::sort(files.begin(), files.end());
    Fnv1a64 hash;
    for (const auto& file : files) {
        hash.add_piece(file.generic_string());
        std::string why;
        const auto content =
            read_file_bounded(exercise.directory / file, kExerciseFileMaxBytes, why);
        hash.add_piece(content ? *content : "unreadable: " + why);
    }
    return hash.hex();
}

GpuIdentity gpu_identity(const std::string& bus_id) {
    GpuIdentity gpu;
    gpu.bus_id = bus_id;
    std::string lower = bus_id;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::string why;
    // The driver names the folder with a four-digit domain; a bus id may carry eight.
    for (const std::string& name : {lower, lower.size() > 12 ? lower.substr(4) : lower}) {
        const auto info = read_file_bounded(
            std::filesystem::path("/proc/driver/nvidia/gpus") / name / "information", 1 << 16, why);
        if (info) {
            gpu.name = proc_field(*info, "Model");
            gpu.uuid = proc_field(*info, "GPU UUID");
            break;
        }
    }
    if (const auto version = read_file_bounded("/proc/driver/nvidia/version", 1 << 16, why)) {
        // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar 5 ..."
        const std::string line = proc_field(*version, "NVRM version");
        const auto module = line.find("Module");
        if (module != std::string::npos) {
            const std::string rest = trimmed(line.substr(module + 6));
            gpu.driver = rest.substr(0, rest.find(' '));
        }
    }
    return gpu;
}

std::map<std::string, std::string> scheduler_environment() {
    std::map<std::string, std::string> found;
    for (const char* name :
         {"SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_JOB_NODELIST",
          "SLURMD_NODENAME", "SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "SLURM_RESTART_COUNT",
          "CUDA_VISIBLE_DEVICES", "JOB_COMPLETION_INDEX"}) {
        if (const char* value = std::getenv(name)) {
            found[name] = value;
        }
    }
    return found;
}

std::string host_name() {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) {
        return {};
    }
    return name;
}

nlohmann::json manifest_to_json(const ShardManifest& manifest) {
    nlohmann::json skipped = nlohmann::json::array();
    for (const auto& entry : manifest.skipped) {
        // A name is any bytes; JSON holds text.
        skipped.push_back({{"name_hex", hex_bytes(entry.name)}, {"reason", entry.reason}});
    }
    nlohmann::json folders_hex = nlohmann::json::array();
    for (const auto& folder : manifest.class_folders) {
        folders_hex.push_back(hex_bytes(folder));
    }
    nlohmann::json gpus = nlohmann::json::array();
    for (const auto& gpu : manifest.gpus) {
        gpus.push_back({{"bus_id", gpu.bus_id},
                        {"name", gpu.name},
                        {"uuid", gpu.uuid},
                        {"driver", gpu.driver}});
    }
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& run : manifest.runs) {
        runs.push_back({{"started_at", run.started_at},
                        {"finished_at", run.finished_at},
                        {"graded", run.graded},
                        {"kept", run.kept},
                        {"interrupted", run.interrupted}});
    }
    return {{"format", "grader-shard-1"},
            {"shard", {{"index", manifest.shard.index}, {"count", manifest.shard.count}}},
            {"class",
             {{"digest", manifest.class_digest},
              {"students", manifest.class_students},
              {"folders_hex", folders_hex},
              {"skipped", skipped}}},
            {"assigned", manifest.assigned},
            {"exercise", {{"id", manifest.exercise_id}, {"digest", manifest.exercise_digest}}},
            {"grader_version", manifest.grader_version},
            {"backend", manifest.backend},
            {"host", manifest.host},
            {"scheduler", manifest.scheduler},
            {"gpus", gpus},
            {"runs", runs},
            {"complete", manifest.complete}};
}

ShardManifest manifest_from_json(const nlohmann::json& json) {
    if (!json.is_object() || json.value("format", "") != "grader-shard-1") {
        throw std::runtime_error("not a grader shard manifest");
    }
    ShardManifest manifest;
    try {
        manifest.shard.index = json.at("shard").at("index").get<int>();
        manifest.shard.count = json.at("shard").at("count").get<int>();
        manifest.class_digest = json.at("class").at("digest").get<std::string>();
        manifest.class_students = json.at("class").at("students").get<std::vector<std::string>>();
        for (const auto& folder : json.at("class").at("folders_hex")) {
            manifest.class_folders.push_back(from_hex(folder.get<std::string>()));
        }
        if (manifest.class_folders.size() != manifest.class_students.size()) {
            throw std::runtime_error("its class lists disagree in length");
        }
        for (const auto& entry : json.at("class").at("skipped")) {
            manifest.skipped.push_back({from_hex(entry.at("name_hex").get<std::string>()),
                                        entry.at("reason").get<std::string>()});
        }
        manifest.assigned = json.at("assigned").get<std::vector<std::string>>();
        manifest.exercise_id = json.at("exercise").at("id").get<std::string>();
        manifest.exercise_digest = json.at("exercise").at("digest").get<std::string>();
        manifest.grader_version = json.at("grader_version").get<std::string>();
        manifest.backend = json.at("backend").get<std::string>();
        manifest.host = json.value("host", "");
        manifest.scheduler = json.value("scheduler", nlohmann::json::object())
                                 .get<std::map<std::string, std::string>>();
        for (const auto& gpu : json.value("gpus", nlohmann::json::array())) {
            manifest.gpus.push_back({gpu.value("bus_id", ""), gpu.value("name", ""),
                                     gpu.value("uuid", ""), gpu.value("driver", "")});
        }
        for (const auto& run : json.value("runs", nlohmann::json::array())) {
            manifest.runs.push_back({run.value("started_at", ""), run.value("finished_at", ""),
                                     run.value("graded", std::size_t{0}),
                                     run.value("kept", std::size_t{0}),
                                     run.value("interrupted", false)});
        }
        manifest.complete = json.value("complete", false);
    } catch (const nlohmann::json::exception& error) {
        throw std::runtime_error(std::string("a field is missing or of the wrong type (") +
                                 error.what() + ")");
    }
    if (manifest.shard.count < 1 || manifest.shard.index < 0 ||
        manifest.shard.index >= manifest.shard.count) {
        throw std::runtime_error("its shard index is not below its shard count");
    }
    return manifest;
}

std::optional<ShardManifest> read_manifest(const std::filesystem::path& shard_dir) {
    const auto file = shard_dir / kShardManifestFile;
    std::error_code error;
    if (!std::filesystem::exists(file, error)) {
        return std::nullopt;
    }
    std::string why;
    const auto text = read_file_bounded(file, kManifestMaxBytes, why);
    if (!text) {
        throw std::runtime_error("cannot read " + file.string() + ": " + why);
    }
    const auto json = nlohmann::json::parse(*text, nullptr, false);
    if (json.is_discarded()) {
        throw std::runtime_error(file.string() + " is not JSON");
    }
    try {
        return manifest_from_json(json);
    } catch (const std::runtime_error& problem) {
        throw std::runtime_error(file.string() + ": " + problem.what());
    }
}

void write_manifest(const std::filesystem::path& shard_dir, const ShardManifest& manifest) {
    create_output_folders(shard_dir);
    const auto replace = nlohmann::json::error_handler_t::replace;
    write_file_atomically(shard_dir / kShardManifestFile,
                          manifest_to_json(manifest).dump(2, ' ', false, replace) + "\n");
}

}  // namespace grader
