#include "serve/service.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <exception>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <system_error>

#include "batch/batch.hpp"
#include "batch/device_servers.hpp"
#include "batch/shard.hpp"
#include "common/clock.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "grade/grade.hpp"
#include "grade/protocol.hpp"
#include "isolation/child.hpp"
#include "model/json.hpp"
#include "report/writers.hpp"
#include "serve/tokens.hpp"
#include "text/text_safety.hpp"

namespace grader::serve {
namespace fs = std::filesystem;
namespace {

constexpr const char* kStateFile = "state.sqlite";
constexpr const char* kAttemptsFolder = "attempts";
constexpr const char* kFilesFolder = "files";
constexpr const char* kExplainFile = "explain.json";

std::string report_file(Lane lane) {
    return std::string(to_string(lane)) + ".json";
}

void make_private_folder(const fs::path& folder) {
    if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) {
        throw StoreError("the folder " + text::visible_line(folder.string()) +
                         " cannot be created: " + std::strerror(errno));
    }
}

// Written once, never through a link, private, and on the disk before the attempt is recorded.
void write_new_file(const fs::path& path, const std::string& bytes) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        throw StoreError("an uploaded file cannot be written: " +
                         std::string(std::strerror(errno)));
    }
    std::size_t written = 0;
    while (written < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            const int error = errno;
            ::close(fd);
            throw StoreError("an uploaded file cannot be written: " +
                             std::string(std::strerror(error)));
        }
        written += static_cast<std::size_t>(n);
    }
    ::fsync(fd);
    ::close(fd);
}

void sync_folder(const fs::path& folder) {
    const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

std::string random_folder_name() {
    return new_token().substr(3, 32);  // 128 random bits, hex
}

std::string plural(std::int64_t count, const std::string& one, const std::string& many) {
    return std::to_string(count) + " " + (count == 1 ? one : many);
}

std::string wait_text(double seconds) {
    const auto minutes = static_cast<long>(std::ceil(seconds / 60.0));
    return seconds < 90 ? std::to_string(static_cast<long>(std::ceil(seconds))) + " s"
                        : std::to_string(minutes) + " minutes";
}

}  // namespace

std::string utc_text(double seconds) {
    const auto whole = static_cast<std::time_t>(seconds);
    std::tm utc{};
    ::gmtime_r(&whole, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &utc);
    return text;
}

double now_seconds() {
    return unix_seconds();
}

Service::Service(ServiceOptions options) : options_(std::move(options)) {
    if (options_.exercises.empty()) {
        throw ServiceError(500, "the service was given no exercise to grade");
    }
    make_private_folder(options_.state_dir);
    make_private_folder(options_.state_dir / kAttemptsFolder);
    store_ = std::make_unique<Store>(options_.state_dir / kStateFile);
}

Service::~Service() {
    stop();
}

std::pair<std::int64_t, std::int64_t> Service::start() {
    const auto resumed = store_->resume(options_.max_starts, now_seconds());
    started_ = true;
    if (options_.gpu && options_.slurm.submit_script.empty()) {
        for (const Exercise& exercise : options_.exercises) {
            device_servers_[exercise.id] =
                std::make_unique<DeviceServers>(options_.worker_executable, exercise.directory);
        }
        // Each server started now, so that the first student's grade finds it listening.
        threads_.emplace_back([this] {
            for (const auto& [id, servers] : device_servers_) {
                for (const int device : options_.devices) {
                    if (stopping_) {
                        return;
                    }
                    if (servers->socket_for(device).empty() && options_.log) {
                        options_.log("the device server of GPU " + std::to_string(device) +
                                     " for " + id +
                                     " would not start: its grades open the GPU themselves");
                    }
                }
            }
        });
    }
    for (int i = 0; i < std::max(1, options_.sim_jobs); ++i) {
        threads_.emplace_back([this] { grade_loop(Lane::sim, 0); });
    }
    if (options_.gpu) {
        if (!options_.slurm.submit_script.empty()) {
            threads_.emplace_back([this] { slurm_loop(); });
        } else {
            for (int i = 0; i < std::max(1, options_.gpu_jobs_per_device); ++i) {
                for (const int device : options_.devices) {
                    threads_.emplace_back([this, device] { grade_loop(Lane::gpu, device); });
                }
            }
        }
    }
    return resumed;
}

void Service::stop() {
    if (stopping_.exchange(true)) {
        return;
    }
    {
        std::lock_guard<std::mutex> lock(wake_mutex_);
        wake_.notify_all();
    }
    for (const auto& [id, servers] : device_servers_) {
        servers->stop();
    }
    for (std::thread& thread : threads_) {
        if (thread.joinable()) {
            thread.join();
        }
    }
}

void Service::on_graded(std::function<void(std::int64_t, Lane)> callback) {
    std::lock_guard<std::mutex> lock(callback_mutex_);
    on_graded_ = std::move(callback);
}

const Exercise* Service::exercise(const std::string& id) const {
    for (const Exercise& exercise : options_.exercises) {
        if (exercise.id == id) {
            return &exercise;
        }
    }
    return nullptr;
}

Counts Service::counts() {
    return {store_->counts(Lane::sim), store_->counts(Lane::gpu)};
}

Person Service::authenticate(const std::string& token, double now) {
    if (token.empty()) {
        throw ServiceError(401, "no token: paste the token your instructor gave you");
    }
    const auto person = store_->person_by_token(token);
    if (!person) {
        throw ServiceError(401, looks_like_token(token)
                                    ? "this token is not known here: it was replaced by a newer "
                                      "one or never issued; ask your instructor for yours"
                                    : "this is not a token as the instructor's are (gs- and 48 "
                                      "letters and digits): check that it was copied whole");
    }
    if (person->revoked) {
        throw ServiceError(401, "this token was revoked by your instructor");
    }
    if (person->expires_at && static_cast<double>(*person->expires_at) <= now) {
        throw ServiceError(401, "this token expired on " +
                                    utc_text(static_cast<double>(*person->expires_at)) +
                                    ": ask your instructor for a new one");
    }
    return *person;
}

std::pair<int, double> Service::rate_left(const Person& person, double now) {
    double oldest = 0.0;
    const std::int64_t used =
        store_->attempts_since(person.id, now - options_.rate.window_seconds, &oldest);
    const int left = std::max<int>(0, options_.rate.count - static_cast<int>(used));
    const double frees_in = used > 0 ? oldest + options_.rate.window_seconds - now : 0.0;
    return {left, std::max(0.0, frees_in)};
}

Attempt Service::submit(const Person& person, const Upload& upload, double now) {
    // The exercise: as named, else the one whose kernel file was sent, else the first.
    const Exercise* chosen = nullptr;
    if (const auto named = upload.fields.find("exercise");
        named != upload.fields.end() && !named->second.empty()) {
        chosen = exercise(named->second);
        if (chosen == nullptr) {
            std::string ids;
            for (const Exercise& e : options_.exercises) {
                ids += (ids.empty() ? "" : ", ") + e.id;
            }
            throw ServiceError(400, "this service grades no exercise '" +
                                        text::visible_line(text::shorten(named->second, 80)) +
                                        "'; it grades " + ids);
        }
    } else {
        for (const Exercise& e : options_.exercises) {
            for (const UploadedFile& file : upload.files) {
                if (chosen == nullptr && file.name == e.submission_source) {
                    chosen = &e;
                }
            }
        }
        chosen = chosen != nullptr ? chosen : &options_.exercises.front();
    }
    const std::set<std::string> taken = {chosen->submission_source, chosen->submission_answers};
    std::vector<std::string> names;
    for (const UploadedFile& file : upload.files) {
        if (taken.count(file.name) == 0) {
            throw ServiceError(400, "'" + text::visible_line(file.name) + "' is not a file " +
                                        chosen->id + " takes: send " + chosen->submission_source +
                                        " and " + chosen->submission_answers +
                                        " (or a zip of them)");
        }
        names.push_back(file.name);
    }
    std::sort(names.begin(), names.end());

    std::vector<Lane> lanes = {Lane::sim};
    if (options_.gpu) {
        lanes.push_back(Lane::gpu);
    }
    std::lock_guard<std::mutex> lock(submit_mutex_);
    const auto [left, frees_in] = rate_left(person, now);
    if (left <= 0) {
        throw ServiceError(429,
                           "you have made " + plural(options_.rate.count, "attempt", "attempts") +
                               " in the last " + wait_text(options_.rate.window_seconds) +
                               ", the most your instructor allows; your next is allowed in " +
                               wait_text(frees_in),
                           frees_in);
    }
    for (const Lane lane : lanes) {
        if (store_->counts(lane).queued >= static_cast<std::int64_t>(options_.max_queued)) {
            throw ServiceError(503,
                               "the queue is full (" + std::to_string(options_.max_queued) +
                                   " grades waiting): try again in a minute",
                               60.0);
        }
    }
    const std::string folder = random_folder_name();
    const fs::path dir = options_.state_dir / kAttemptsFolder / folder;
    make_private_folder(dir);
    make_private_folder(dir / kFilesFolder);
    for (const UploadedFile& file : upload.files) {
        write_new_file(dir / kFilesFolder / file.name, file.bytes);
    }
    sync_folder(dir / kFilesFolder);
    sync_folder(dir);
    const std::int64_t id = store_->add_attempt(person.id, chosen->id, folder, names, lanes, now);
    {
        std::lock_guard<std::mutex> wake_lock(wake_mutex_);
        wake_.notify_all();
    }
    return *store_->attempt(id);
}

Attempt Service::visible_attempt(const Person& person, std::int64_t id) {
    auto attempt = store_->attempt(id);
    if (!attempt || (person.role != Role::instructor && attempt->person != person.id)) {
        throw ServiceError(404, "no attempt " + std::to_string(id) + " of yours");
    }
    return *attempt;
}

fs::path Service::attempt_dir(const Attempt& attempt) const {
    return options_.state_dir / kAttemptsFolder / attempt.folder;
}

std::optional<Report> Service::report(const Attempt& attempt, Lane lane) {
    return read_report_json(attempt_dir(attempt) / report_file(lane));
}

std::optional<Explanation> Service::explanation(const Attempt& attempt) {
    std::ifstream in(attempt_dir(attempt) / kExplainFile);
    if (!in) {
        return std::nullopt;
    }
    const auto json = nlohmann::json::parse(in, nullptr, false);
    try {
        return json.is_discarded() ? std::nullopt
                                   : std::optional<Explanation>(json.get<Explanation>());
    } catch (const nlohmann::json::exception&) {
        return std::nullopt;
    }
}

bool Service::has_explanation(const Attempt& attempt) const {
    std::error_code ignored;
    return fs::exists(attempt_dir(attempt) / kExplainFile, ignored);
}

std::optional<std::string> Service::submitted_file(const Attempt& attempt,
                                                   const std::string& name) {
    if (std::find(attempt.files.begin(), attempt.files.end(), name) == attempt.files.end()) {
        return std::nullopt;
    }
    std::string why;
    return read_student_file(attempt_dir(attempt) / kFilesFolder, name,
                             options_.upload.max_file_bytes, why);
}

void Service::record(const Attempt& attempt, Lane lane, const Report& report) {
    write_file_atomically(attempt_dir(attempt) / report_file(lane), write_json(report));
    store_->finish(attempt.id, lane, to_string(report.verdict), report.score, report.max_score,
                   report.summary, now_seconds());
    std::function<void(std::int64_t, Lane)> callback;
    {
        std::lock_guard<std::mutex> lock(callback_mutex_);
        callback = on_graded_;
    }
    if (callback) {
        callback(attempt.id, lane);
    }
}

void Service::grade_one(const Job& job, int device) {
    const auto attempt = store_->attempt(job.attempt);
    if (!attempt) {
        return;
    }
    const Exercise* exercise = this->exercise(attempt->exercise);
    if (exercise == nullptr) {
        store_->finish(attempt->id, job.lane, "ungradable", 0, 0,
                       "this service no longer grades " + attempt->exercise +
                           "; your instructor can regrade it",
                       now_seconds());
        return;
    }
    GradeOptions grade;
    grade.submission_dir = attempt_dir(*attempt) / kFilesFolder;
    grade.submission_label = "attempt " + std::to_string(attempt->number);
    grade.device = device;
    grade.backend = job.lane == Lane::sim ? "sim" : "cuda";
    grade.run_seconds_override = options_.run_seconds_override;
    grade.worker_executable = options_.worker_executable;
    if (const auto others = options_.other_exercise_sources.find(exercise->id);
        others != options_.other_exercise_sources.end()) {
        grade.other_exercise_sources = others->second;
    }
    try {
        if (job.lane == Lane::gpu) {
            if (const auto servers = device_servers_.find(exercise->id);
                servers != device_servers_.end()) {
                grade.device_server = servers->second->socket_for(device);
            }
        }
        const Report report = grade_submission(*exercise, grade);
        record(*attempt, job.lane, report);
        if (job.lane == Lane::sim) {
            // The lane tables of `grader explain`, after the report, which the student reads
            // first; under the same limits and confinement.
            const WorkerResult explained = run_worker_process(
                *exercise, grade, report.seed, {"--explain", "--explain-strides", "3,8,16,32"});
            if (explained.observations.lane_tables) {
                write_file_atomically(
                    attempt_dir(*attempt) / kExplainFile,
                    text::json_text(nlohmann::json(*explained.observations.lane_tables), 0));
            }
        }
    } catch (const std::exception& error) {
        if (options_.log) {
            options_.log("attempt " + std::to_string(attempt->id) + " (" + to_string(job.lane) +
                         "): the grader failed: " + error.what());
        }
        store_->finish(attempt->id, job.lane, "ungradable", 0, 0,
                       "the grader could not grade this attempt: the machine's fault, not the "
                       "submission's; the service's log says why",
                       now_seconds());
    }
}

void Service::grade_loop(Lane lane, int device) {
    while (!stopping_) {
        std::optional<Job> job;
        try {
            job = store_->claim_next(lane, now_seconds());
        } catch (const std::exception& error) {
            if (options_.log) {
                options_.log(std::string("the queue could not be read: ") + error.what());
            }
        }
        if (!job) {
            std::unique_lock<std::mutex> lock(wake_mutex_);
            wake_.wait_for(lock, std::chrono::seconds(1));
            continue;
        }
        grade_one(*job, device);
    }
}

void Service::slurm_loop() {
    // A wave: the next queued GPU grades, fairly ordered, of one exercise, as a class folder of
    // links to their files; scripts/slurm/submit.sh grades it as a job array of `grader batch
    // --shard` and merges it; each report is read back from the merged class.
    std::size_t wave_number = 0;
    while (!stopping_) {
        std::vector<Job> wave;
        std::string exercise_id;
        while (static_cast<int>(wave.size()) < std::max(1, options_.slurm.wave_size)) {
            auto job = store_->claim_next(Lane::gpu, now_seconds());
            if (!job) {
                break;
            }
            const auto attempt = store_->attempt(job->attempt);
            if (!attempt) {
                continue;
            }
            if (!exercise_id.empty() && attempt->exercise != exercise_id) {
                store_->requeue(job->attempt, Lane::gpu);  // the next wave's
                break;
            }
            exercise_id = attempt->exercise;
            wave.push_back(*job);
        }
        if (wave.empty()) {
            std::unique_lock<std::mutex> lock(wake_mutex_);
            wake_.wait_for(lock, std::chrono::seconds(1));
            continue;
        }
        const Exercise* exercise = this->exercise(exercise_id);
        const fs::path run = options_.state_dir / "slurm" /
                             ("wave-" + std::to_string(static_cast<long>(now_seconds())) + "-" +
                              std::to_string(++wave_number));
        std::map<std::string, Attempt> by_folder;
        try {
            fs::create_directories(run / "submissions");
            for (const Job& job : wave) {
                const auto attempt = store_->attempt(job.attempt);
                by_folder[attempt->folder] = *attempt;
                // Copies: a batch follows no link, and a student's file must have one link alone.
                fs::create_directory(run / "submissions" / attempt->folder);
                for (const std::string& name : attempt->files) {
                    fs::copy_file(attempt_dir(*attempt) / kFilesFolder / name,
                                  run / "submissions" / attempt->folder / name);
                }
            }
            ChildLimits limits;
            limits.seconds = 300.0;  // sbatch twice
            const ChildResult submitted = run_child(
                {"/usr/bin/env", "GRADER=" + options_.worker_executable.string(),
                 "GRADER_BACKEND=" + options_.slurm.backend, options_.slurm.submit_script.string(),
                 (run / "submissions").string(), run.string(),
                 std::to_string(std::max(1, options_.slurm.tasks)), "--exercise",
                 exercise == nullptr ? exercise_id : exercise->directory.string()},
                limits, [](const std::string&) { return 0.0; });
            std::ofstream(run / "submit.log") << submitted.output << submitted.error;
            if (submitted.end != ChildResult::End::exited || submitted.exit_code != 0) {
                throw std::runtime_error("scripts/slurm/submit.sh failed; see " +
                                         (run / "submit.log").string());
            }
        } catch (const std::exception& error) {
            // The service's fault, said to each student at once: a wave never submitted has
            // nothing to wait for, and its lanes would say "being graded" until the deadline.
            if (options_.log) {
                options_.log(std::string("a Slurm wave could not be submitted: ") + error.what());
            }
            for (const Job& job : wave) {
                store_->finish(job.attempt, Lane::gpu, "ungradable", 0, 0,
                               "the service could not hand this grade to the course's GPU "
                               "cluster (its Slurm submission failed): the service's fault, not "
                               "your submission's; the instructor has the details in the "
                               "service's log",
                               now_seconds());
            }
            continue;
        }
        // Each task of the array writes RUN/shards/I/<folder>/report.json as it grades: a report
        // is filed as soon as it is there. The wave is over when every task has written its
        // shard.json (or at the deadline); the merge's class outputs are not waited for.
        const int tasks = std::max(1, options_.slurm.tasks);
        const double deadline = now_seconds() + options_.slurm.wait_seconds;
        std::vector<Job> pending = wave;
        const auto file_found = [&] {
            std::vector<Job> left;
            for (const Job& job : pending) {
                const auto attempt = store_->attempt(job.attempt);
                std::optional<Report> report;
                for (int task = 0; task < tasks && !report; ++task) {
                    report = read_report_json(run / "shards" / std::to_string(task) /
                                              attempt->folder / "report.json");
                }
                if (report) {
                    record(*attempt, Lane::gpu, *report);
                } else {
                    left.push_back(job);
                }
            }
            pending = std::move(left);
        };
        const auto tasks_done = [&] {
            for (int task = 0; task < tasks; ++task) {
                if (!fs::exists(run / "shards" / std::to_string(task) / kShardManifestFile)) {
                    return false;
                }
            }
            return true;
        };
        while (!stopping_ && !pending.empty() && now_seconds() < deadline) {
            const bool over = tasks_done();
            file_found();
            if (over) {
                break;
            }
            std::unique_lock<std::mutex> lock(wake_mutex_);
            wake_.wait_for(lock, std::chrono::seconds(1));
        }
        if (stopping_) {
            return;  // the wave's grades are queued again at the next start
        }
        bool retry = false;
        for (const Job& job : pending) {
            if (job.starts >= options_.max_starts) {
                store_->finish(job.attempt, Lane::gpu, "ungradable", 0, 0,
                               "the Slurm cluster returned no report for this attempt " +
                                   std::to_string(job.starts) +
                                   " times: the machine's fault, not the submission's",
                               now_seconds());
            } else {
                store_->requeue(job.attempt, Lane::gpu);
                retry = true;
            }
        }
        if (retry) {
            // A wave that came back short is not resent at once: the cluster may need a moment.
            std::unique_lock<std::mutex> lock(wake_mutex_);
            wake_.wait_for(lock, std::chrono::seconds(5), [this] { return stopping_.load(); });
        }
    }
}

}  // namespace grader::serve
