#include "batch/shard.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <utility>

#include "batch/batch.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "text/text_safety.hpp"

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

// The bytes of a hex string; nullopt for anything but pairs of hex digits.
std::optional<std::string> from_hex(const std::string& hex) {
    const auto digit = [](char c) {
        return c >= '0' && c <= '9'   ? c - '0'
               : c >= 'a' && c <= 'f' ? c - 'a' + 10
               : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                      : -1;
    };
    if (hex.size() % 2 != 0) {
        return std::nullopt;
    }
    std::string bytes;
    for (std::size_t i = 0; i < hex.size(); i += 2) {
        const int high = digit(hex[i]);
        const int low = digit(hex[i + 1]);
        if (high < 0 || low < 0) {
            return std::nullopt;
        }
        bytes += static_cast<char>(high * 16 + low);
    }
    return bytes;
}

// A manifest that is not what `grader batch --shard` writes: the field at fault, and how.
std::runtime_error bad_field(const std::string& path, const std::string& problem) {
    return std::runtime_error("field " + path + " " + problem);
}

// The field at a dotted path ("class.students"); throws bad_field where it is missing.
const nlohmann::json& field(const nlohmann::json& json, const std::string& path) {
    const nlohmann::json* at = &json;
    std::size_t start = 0;
    for (;;) {
        const auto dot = path.find('.', start);
        const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
        if (!at->is_object() || !at->contains(key)) {
            throw bad_field(path, "is missing");
        }
        at = &at->at(key);
        if (dot == std::string::npos) {
            return *at;
        }
        start = dot + 1;
    }
}

std::string text_field(const nlohmann::json& json, const std::string& path) {
    const nlohmann::json& value = field(json, path);
    if (!value.is_string()) {
        throw bad_field(path, std::string("is a ") + value.type_name() + ", not a string");
    }
    return value.get<std::string>();
}

int integer_field(const nlohmann::json& json, const std::string& path, long long low,
                  long long high) {
    const nlohmann::json& value = field(json, path);
    if (!value.is_number_integer()) {
        throw bad_field(path, std::string("is a ") + value.type_name() + ", not a whole number");
    }
    const bool in_range =
        value.is_number_unsigned()
            ? value.get<unsigned long long>() <= static_cast<unsigned long long>(high)
            : value.get<long long>() >= low && value.get<long long>() <= high;
    if (!in_range) {
        throw bad_field(path, "is " + value.dump() + ", not from " + std::to_string(low) + " to " +
                                  std::to_string(high));
    }
    return static_cast<int>(value.get<long long>());
}

std::vector<std::string> text_list(const nlohmann::json& json, const std::string& path) {
    const nlohmann::json& value = field(json, path);
    if (!value.is_array()) {
        throw bad_field(path, std::string("is a ") + value.type_name() + ", not a list");
    }
    std::vector<std::string> texts;
    for (std::size_t i = 0; i < value.size(); ++i) {
        if (!value[i].is_string()) {
            throw bad_field(path + "[" + std::to_string(i) + "]",
                            std::string("is a ") + value[i].type_name() + ", not a string");
        }
        texts.push_back(value[i].get<std::string>());
    }
    return texts;
}

std::string bytes_field(const std::string& hex, const std::string& path) {
    auto bytes = from_hex(hex);
    if (!bytes) {
        throw bad_field(path,
                        "is not a name in hex ('" + text::visible_line(hex.substr(0, 64)) + "')");
    }
    return std::move(*bytes);
}

// The class list of a manifest, checked as `grader batch` made it: names a class folder can
// list as submissions, in its order, each named for its reports as batch names it, and the
// digest of that list. Nothing here is taken from the manifest on trust: the merge writes into
// OUTPUT/<student>/ for each of these names.
void check_class(const ShardManifest& manifest) {
    const auto& folders = manifest.class_folders;
    std::vector<BatchSubmission> named;
    for (std::size_t i = 0; i < folders.size(); ++i) {
        const std::string where = "class.folders_hex[" + std::to_string(i) + "]";
        if (!listed_as_submission(folders[i])) {
            throw bad_field(where, "('" + text::visible_line(folders[i]) +
                                       "') is no name batch lists as a submission (hidden, empty, "
                                       "or with a '/')");
        }
        if (i > 0 && !(folders[i - 1] < folders[i])) {
            throw bad_field(where, "('" + text::visible_line(folders[i]) +
                                       "') is out of the order batch lists a class in (sorted, "
                                       "each name once)");
        }
        named.push_back({folders[i], {}, {}});
    }
    try {
        name_submissions(named, {}, "the class folder");
    } catch (const BatchError& error) {
        throw bad_field("class.folders_hex", std::string("cannot be one class: ") + error.what());
    }
    for (std::size_t i = 0; i < named.size(); ++i) {
        if (manifest.class_students[i] != named[i].student) {
            throw bad_field("class.students[" + std::to_string(i) + "]",
                            "is '" + text::visible_line(manifest.class_students[i]) +
                                "', where batch files the reports of the folder '" +
                                submission_key(folders[i]) + "' under '" +
                                text::visible_line(named[i].student) + "'");
        }
    }
    const std::string digest = class_digest(named);
    if (manifest.class_digest != digest) {
        throw bad_field("class.digest", "is '" + text::visible_line(manifest.class_digest) +
                                            "', where the class list's digest is '" + digest +
                                            "': the list was changed after the shard wrote it");
    }
    std::vector<std::string> share;
    for (std::size_t i = 0; i < named.size(); ++i) {
        if (in_shard(i, manifest.shard)) {
            share.push_back(named[i].student);
        }
    }
    if (manifest.assigned != share) {
        throw bad_field("assigned", "is not shard " + std::to_string(manifest.shard.index) +
                                        " of " + std::to_string(manifest.shard.count) +
                                        "'s share of the class list");
    }
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
    if (shard.count > kMaxShardCount) {
        why = "--shard " + text + ": a class is split over at most " +
              std::to_string(kMaxShardCount) + " tasks";
        return std::nullopt;
    }
    return shard;
}

std::string array_ranges(const std::vector<int>& indexes, std::size_t max_ranges) {
    std::string text;
    std::size_t ranges = 0;
    for (std::size_t i = 0; i < indexes.size();) {
        std::size_t last = i;
        while (last + 1 < indexes.size() && indexes[last + 1] == indexes[last] + 1) {
            ++last;
        }
        if (ranges == max_ranges) {
            return text + ",...";
        }
        text += (text.empty() ? "" : ",") + std::to_string(indexes[i]);
        if (last > i) {
            text += "-" + std::to_string(indexes[last]);
        }
        ++ranges;
        i = last + 1;
    }
    return text;
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
    if (!json.is_object() || !json.contains("format") || json.at("format") != "grader-shard-1") {
        throw std::runtime_error(
            "not a grader shard manifest (its field format is not "
            "\"grader-shard-1\")");
    }
    ShardManifest manifest;
    manifest.shard.count = integer_field(json, "shard.count", 1, kMaxShardCount);
    manifest.shard.index = integer_field(json, "shard.index", 0, manifest.shard.count - 1);
    manifest.class_digest = text_field(json, "class.digest");
    manifest.class_students = text_list(json, "class.students");
    const auto folders_hex = text_list(json, "class.folders_hex");
    for (std::size_t i = 0; i < folders_hex.size(); ++i) {
        manifest.class_folders.push_back(
            bytes_field(folders_hex[i], "class.folders_hex[" + std::to_string(i) + "]"));
    }
    if (manifest.class_folders.size() != manifest.class_students.size()) {
        throw bad_field("class.students", "has " + std::to_string(manifest.class_students.size()) +
                                              " names and class.folders_hex " +
                                              std::to_string(manifest.class_folders.size()));
    }
    // A named path: GCC 14 takes a reference returned by a call given a temporary string for one
    // into that string (-Wdangling-reference).
    const std::string skipped_path = "class.skipped";
    const nlohmann::json& skipped = field(json, skipped_path);
    if (!skipped.is_array()) {
        throw bad_field(skipped_path, "is not a list");
    }
    for (std::size_t i = 0; i < skipped.size(); ++i) {
        const std::string where = "class.skipped[" + std::to_string(i) + "]";
        if (!skipped[i].is_object()) {
            throw bad_field(where, "is not an object");
        }
        manifest.skipped.push_back(
            {bytes_field(text_field(skipped[i], "name_hex"), where + ".name_hex"),
             text_field(skipped[i], "reason")});
    }
    manifest.assigned = text_list(json, "assigned");
    manifest.exercise_id = text_field(json, "exercise.id");
    manifest.exercise_digest = text_field(json, "exercise.digest");
    manifest.grader_version = text_field(json, "grader_version");
    manifest.backend = text_field(json, "backend");
    if (manifest.backend != "cuda" && manifest.backend != "sim") {
        throw bad_field("backend", "is '" + text::visible_line(manifest.backend) +
                                       "', not \"cuda\" or \"sim\"");
    }
    check_class(manifest);
    // What the shard says of where and when it ran is shown, never used as a path.
    try {
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
        throw std::runtime_error(
            std::string(
                "a field of host, scheduler, gpus, runs or complete is of the wrong type (") +
            error.what() + ")");
    }
    return manifest;
}

std::optional<ShardManifest> read_manifest(const std::filesystem::path& shard_dir) {
    const auto file = shard_dir / kShardManifestFile;
    std::error_code error;
    if (!std::filesystem::exists(std::filesystem::symlink_status(file, error))) {
        return std::nullopt;
    }
    std::string why;
    const auto text = read_file_beneath(shard_dir, kShardManifestFile, kManifestMaxBytes, why);
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
