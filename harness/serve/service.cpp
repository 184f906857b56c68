#include "serve/service.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
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
#include "common/cores.hpp"
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

// A write that failed for want of room (a full disk, a quota, RLIMIT_FSIZE) is a full store.
StoreError::Kind kind_of_errno(int error) {
    return error == ENOSPC || error == EDQUOT || error == EFBIG ? StoreError::Kind::full
                                                                : StoreError::Kind::other;
}

void make_private_folder(const fs::path& folder) {
    if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) {
        const int error = errno;
        throw StoreError("the folder " + text::visible_line(folder.string()) +
                             " cannot be created: " + std::strerror(error),
                         kind_of_errno(error));
    }
}

// Written once, never through a link, private, and on the disk before the attempt is recorded.
void write_new_file(const fs::path& path, const std::string& bytes) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        const int error = errno;
        throw StoreError("an uploaded file cannot be written: " + std::string(std::strerror(error)),
                         kind_of_errno(error));
    }
    std::size_t written = 0;
    while (written < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            const int error = n == 0 ? ENOSPC : errno;
            ::close(fd);
            throw StoreError(
                "an uploaded file cannot be written: " + std::string(std::strerror(error)),
                kind_of_errno(error));
        }
        written += static_cast<std::size_t>(n);
    }
    const bool synced = ::fsync(fd) == 0;
    const int error = errno;
    ::close(fd);
    if (!synced) {
        throw StoreError("an uploaded file cannot be written: " + std::string(std::strerror(error)),
                         kind_of_errno(error));
    }
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

// A lane's places on one device: `ordinary` grades at once, and `extra` more for grades that
// have run past long_seconds. Such a grade gives its ordinary place to the next grade in the
// queue and goes on in an extra place, so a slow attempt holds no place another student waits
// for; where every extra place is taken, it keeps its own. The threads without a place (there
// are `extra` of them at least) move the long grades, as they look for a place.
class LanePlaces {
public:
    using Clock = std::chrono::steady_clock;

    LanePlaces(int ordinary, int extra, double long_seconds)
        : free_ordinary_(ordinary),
          free_extra_(extra),
          long_after_(std::chrono::milliseconds(static_cast<long long>(long_seconds * 1000))) {}

    // An ordinary place, or 0 once `stopping`.
    std::uint64_t take(const std::atomic<bool>& stopping) {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            if (stopping) {
                return 0;
            }
            move_long_grades();
            if (free_ordinary_ > 0) {
                --free_ordinary_;
                const std::uint64_t ticket = next_ticket_++;
                held_[ticket] = Held{};
                return ticket;
            }
            changed_.wait_for(lock, std::chrono::milliseconds(100));
        }
    }
    // The place's grade begins now (from here it may become long).
    void began(std::uint64_t ticket) {
        std::lock_guard<std::mutex> lock(mutex_);
        held_[ticket].began = Clock::now();
    }
    void give_back(std::uint64_t ticket) {
        std::lock_guard<std::mutex> lock(mutex_);
        const auto found = held_.find(ticket);
        ++(found->second.extra ? free_extra_ : free_ordinary_);
        held_.erase(found);
        changed_.notify_all();
    }
    void wake_all() {
        std::lock_guard<std::mutex> lock(mutex_);
        changed_.notify_all();
    }

private:
    struct Held {
        std::optional<Clock::time_point> began;
        bool extra = false;
    };
    // Under the mutex.
    void move_long_grades() {
        const auto now = Clock::now();
        for (auto& [ticket, held] : held_) {
            if (free_extra_ == 0) {
                return;
            }
            if (!held.extra && held.began && now - *held.began >= long_after_) {
                held.extra = true;
                --free_extra_;
                ++free_ordinary_;
            }
        }
    }

    std::mutex mutex_;
    std::condition_variable changed_;
    int free_ordinary_;
    int free_extra_;
    Clock::duration long_after_;
    std::map<std::uint64_t, Held> held_;
    std::uint64_t next_ticket_ = 1;
};

Service::Service(ServiceOptions options) : options_(std::move(options)) {
    if (options_.exercises.empty()) {
        throw ServiceError(500, "the service was given no exercise to grade");
    }
    // The state folder is checked (and made) by the store, as the GPU lock's is; then the
    // attempts' folder inside it.
    store_ = std::make_unique<Store>(options_.state_dir / kStateFile, options_.store_busy_seconds);
    make_private_folder(options_.state_dir / kAttemptsFolder);
    std::string why;
    if (!open_private_folder(options_.state_dir / kAttemptsFolder, why).valid()) {
        throw StoreError("the state folder's " + text::visible_line(why) + ": refused");
    }
}

Service::~Service() {
    stop();
}

namespace {

int long_places(const ServiceOptions& options, int ordinary) {
    return options.long_grades > 0 ? options.long_grades : std::max(1, ordinary / 2);
}

}  // namespace

int Service::grades_at_once() const {
    const int sim = std::max(1, options_.sim_jobs);
    int grades = sim + long_places(options_, sim) + 1;  // and the lane tables of `explain`
    if (options_.gpu) {
        const int gpu = std::max(1, options_.gpu_jobs_per_device);
        grades += options_.slurm.submit_script.empty()
                      ? (gpu + long_places(options_, gpu)) *
                            static_cast<int>(std::max<std::size_t>(1, options_.devices.size()))
                      : 1;
    }
    return grades;
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
    const auto lane_threads = [this](Lane lane, int device, int ordinary) {
        const int extra = long_places(options_, ordinary);
        places_.push_back(
            std::make_unique<LanePlaces>(ordinary, extra, options_.long_grade_seconds));
        LanePlaces* places = places_.back().get();
        for (int i = 0; i < ordinary + extra; ++i) {
            threads_.emplace_back(
                [this, places, lane, device] { grade_loop(*places, lane, device); });
        }
    };
    lane_threads(Lane::sim, 0, std::max(1, options_.sim_jobs));
    if (options_.gpu) {
        if (!options_.slurm.submit_script.empty()) {
            threads_.emplace_back([this] { slurm_loop(); });
        } else {
            for (const int device : options_.devices) {
                lane_threads(Lane::gpu, device, std::max(1, options_.gpu_jobs_per_device));
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
    for (const auto& places : places_) {
        places->wake_all();
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

bool Service::pause(double seconds) {
    std::unique_lock<std::mutex> lock(wake_mutex_);
    return !wake_.wait_for(lock, std::chrono::milliseconds(static_cast<long long>(seconds * 1000)),
                           [this] { return stopping_.load(); });
}

void Service::store_failed(const StoreError& error) {
    std::lock_guard<std::mutex> lock(health_mutex_);
    const bool news = health_.problem.empty() || health_.kind != error.kind();
    if (health_.problem.empty()) {
        health_.since = now_seconds();
    }
    health_.kind = error.kind();
    health_.problem =
        error.kind() == StoreError::Kind::full
            ? "the disk holding the service's state is full: uploads are refused (503) and "
              "finished grades wait in memory until they can be recorded; make room on it"
            : (error.kind() == StoreError::Kind::busy
                   ? "another process holds the state file's lock (a backup, an sqlite3 shell?): "
                     "uploads are refused (503) and finished grades wait in memory until it lets "
                     "go"
                   : "the state file cannot be read or written: the service's log says why");
    if (news && options_.log) {
        options_.log(health_.problem + " (" + error.what() + ")");
    }
}

void Service::store_worked() {
    std::lock_guard<std::mutex> lock(health_mutex_);
    if (!health_.problem.empty()) {
        if (options_.log) {
            options_.log("the state file is written again, after " +
                         std::to_string(static_cast<long>(now_seconds() - health_.since)) +
                         " s of: " + health_.problem);
        }
        health_.problem.clear();
    }
}

ServiceHealth Service::health() {
    ServiceHealth health;
    {
        std::lock_guard<std::mutex> lock(health_mutex_);
        health = health_;
    }
    struct statvfs disk {};
    if (::statvfs(options_.state_dir.c_str(), &disk) == 0) {
        health.disk_free_mb = static_cast<double>(disk.f_bavail) *
                              static_cast<double>(disk.f_frsize) / (1024.0 * 1024.0);
    }
    return health;
}

bool Service::until_written(const std::function<void()>& write, bool writes) {
    double wait = 1.0;
    for (;;) {
        try {
            write();
            if (writes) {
                store_worked();
            }
            return true;
        } catch (const StoreError& error) {
            store_failed(error);
        } catch (const std::system_error& error) {
            store_failed(StoreError(error.what(), kind_of_errno(error.code().value())));
        }
        if (!pause(wait)) {
            return false;
        }
        wait = std::min(30.0, wait * 2);
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
    std::int64_t id = 0;
    try {
        make_private_folder(dir);
        make_private_folder(dir / kFilesFolder);
        for (const UploadedFile& file : upload.files) {
            write_new_file(dir / kFilesFolder / file.name, file.bytes);
        }
        sync_folder(dir / kFilesFolder);
        sync_folder(dir);
        id = store_->add_attempt(person.id, chosen->id, folder, names, lanes, now);
    } catch (const StoreError& error) {
        // Nothing is kept of an attempt the state could not take: the student is told to try
        // again (503), and it does not count against their rate.
        std::error_code ignored;
        fs::remove_all(dir, ignored);
        store_failed(error);
        throw;
    }
    store_worked();
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
    bool waited = false;
    const bool written = until_written([&] {
        try {
            write_file_atomically(attempt_dir(attempt) / report_file(lane), write_json(report));
            store_->finish(attempt.id, lane, to_string(report.verdict), report.score,
                           report.max_score, report.summary, now_seconds());
        } catch (const std::exception&) {
            if (!waited) {
                waited = true;
                std::lock_guard<std::mutex> lock(health_mutex_);
                ++health_.unrecorded;
            }
            throw;
        }
    });
    if (waited) {
        std::lock_guard<std::mutex> lock(health_mutex_);
        --health_.unrecorded;
    }
    if (!written) {
        // Stopped before the state could be written: the grade is still running in the state
        // file, and the next start queues it again.
        return;
    }
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
    std::optional<Attempt> attempt;
    if (!until_written([&] { attempt = store_->attempt(job.attempt); }, false) || !attempt) {
        return;
    }
    const Exercise* exercise = this->exercise(attempt->exercise);
    if (exercise == nullptr) {
        until_written([&] {
            store_->finish(attempt->id, job.lane, "ungradable", 0, 0,
                           "this service no longer grades " + attempt->exercise +
                               "; your instructor can regrade it",
                           now_seconds(), true);
        });
        return;
    }
    GradeOptions grade;
    grade.submission_dir = attempt_dir(*attempt) / kFilesFolder;
    grade.submission_label = "attempt " + std::to_string(attempt->number);
    grade.device = device;
    grade.backend = job.lane == Lane::sim ? "sim" : "cuda";
    // Each of the simulator lane's grades runs its blocks on its share of the cores.
    grade.sim_threads =
        std::max(1u, usable_cores() / static_cast<unsigned>(std::max(1, options_.sim_jobs)));
    grade.run_seconds_override = options_.run_seconds_override;
    grade.worker_executable = options_.worker_executable;
    grade.cancel = &stopping_;
    if (const auto others = options_.other_exercise_sources.find(exercise->id);
        others != options_.other_exercise_sources.end()) {
        grade.other_exercise_sources = others->second;
    }
    // A stop cuts the grade off: it goes back to its place in the queue, its start not counted.
    const auto cut_off = [&] {
        until_written([&] { store_->requeue(attempt->id, job.lane, true); });
    };
    const std::string named =
        "attempt " + std::to_string(attempt->id) + " (" + to_string(job.lane) + ")";
    std::optional<Report> report;
    double wait = 1.0;
    for (int tries = 0; !report; ++tries) {
        try {
            if (job.lane == Lane::gpu) {
                if (const auto servers = device_servers_.find(exercise->id);
                    servers != device_servers_.end()) {
                    grade.device_server = servers->second->socket_for(device);
                }
            }
            report = grade_submission(*exercise, grade);
        } catch (const GradeCancelled&) {
            return cut_off();
        } catch (const std::exception& error) {
            // The grade could not start (no descriptor for a pipe, fork failing): the service's
            // trouble, not the student's; tried again after a pause.
            if (options_.log) {
                options_.log(named + ": the grader failed (try " + std::to_string(tries + 1) +
                             "): " + error.what());
            }
            if (tries >= options_.service_retries) {
                until_written([&] {
                    store_->finish(attempt->id, job.lane, "ungradable", 0, 0,
                                   "the service could not grade this attempt (tried " +
                                       std::to_string(tries + 1) +
                                       " times): the machine's fault, not the submission's, and "
                                       "it does not count against your attempts; the service's "
                                       "log says why",
                                   now_seconds(), true);
                });
                return;
            }
            if (!pause(wait)) {
                return cut_off();
            }
            wait = std::min(30.0, wait * 2);
        }
    }
    record(*attempt, job.lane, *report);
    if (job.lane == Lane::sim && !stopping_) {
        // The lane tables of `grader explain`, after the report, which the student reads first;
        // under the same limits and confinement. Without them the report stands.
        try {
            const WorkerResult explained = run_worker_process(
                *exercise, grade, report->seed, {"--explain", "--explain-strides", "3,8,16,32"});
            if (explained.observations.lane_tables) {
                write_file_atomically(
                    attempt_dir(*attempt) / kExplainFile,
                    text::json_text(nlohmann::json(*explained.observations.lane_tables), 0));
            }
        } catch (const GradeCancelled&) {
        } catch (const std::exception& error) {
            if (options_.log) {
                options_.log(named + ": the lane tables could not be made: " + error.what());
            }
        }
    }
}

void Service::grade_loop(LanePlaces& places, Lane lane, int device) {
    while (!stopping_) {
        const std::uint64_t place = places.take(stopping_);
        if (place == 0) {
            return;
        }
        std::optional<Job> job;
        try {
            job = store_->claim_next(lane, now_seconds());
            if (job) {
                store_worked();  // a write went through
            }
        } catch (const StoreError& error) {
            store_failed(error);
        } catch (const std::exception& error) {
            if (options_.log) {
                options_.log(std::string("the queue could not be read: ") + error.what());
            }
        }
        if (!job) {
            places.give_back(place);
            std::unique_lock<std::mutex> lock(wake_mutex_);
            wake_.wait_for(lock, std::chrono::seconds(1));
            continue;
        }
        places.began(place);
        try {
            grade_one(*job, device);
        } catch (const std::exception& error) {
            // Nothing of one grade may end the service; the grade stays running in the state
            // file, to be queued again at the next start.
            if (options_.log) {
                options_.log("attempt " + std::to_string(job->attempt) +
                             ": the grade failed in the service: " + error.what());
            }
        }
        places.give_back(place);
    }
}

void Service::slurm_loop() {
    // A wave: the next queued GPU grades, fairly ordered, of one exercise, as a class folder of
    // links to their files; scripts/slurm/submit.sh grades it as a job array of `grader batch
    // --shard` and merges it; each report is read back from the merged class.
    std::size_t wave_number = 0;
    while (!stopping_) {
        try {
            slurm_wave(wave_number);
        } catch (const StoreError& error) {
            // The wave's grades stay running in the state file, queued again at the next start.
            store_failed(error);
            pause(5.0);
        } catch (const std::exception& error) {
            if (options_.log) {
                options_.log(std::string("a Slurm wave failed in the service: ") + error.what());
            }
            pause(5.0);
        }
    }
}

std::vector<Job> Service::claim_wave(std::string& exercise_id) {
    std::vector<Job> wave;
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
    return wave;
}

bool Service::submit_wave(const std::vector<Job>& wave, const std::string& exercise_id,
                          const fs::path& run) {
    const Exercise* exercise = this->exercise(exercise_id);
    try {
        fs::create_directories(run / "submissions");
        for (const Job& job : wave) {
            const auto attempt = store_->attempt(job.attempt);
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
        // The service's fault, said to each student at once: a wave never submitted has nothing
        // to wait for, and its lanes would say "being graded" until the deadline.
        if (options_.log) {
            options_.log(std::string("a Slurm wave could not be submitted: ") + error.what());
        }
        for (const Job& job : wave) {
            store_->finish(job.attempt, Lane::gpu, "ungradable", 0, 0,
                           "the service could not hand this grade to the course's GPU cluster "
                           "(its Slurm submission failed): the service's fault, not your "
                           "submission's; the instructor has the details in the service's log",
                           now_seconds(), true);
        }
        return false;
    }
    return true;
}

std::vector<Job> Service::collect_wave(std::vector<Job> pending, const fs::path& run) {
    const int tasks = std::max(1, options_.slurm.tasks);
    const double deadline = now_seconds() + options_.slurm.wait_seconds;
    const auto file_found = [&] {
        std::vector<Job> left;
        for (const Job& job : pending) {
            const auto attempt = store_->attempt(job.attempt);
            std::optional<Report> report;
            for (int task = 0; task < tasks && !report; ++task) {
                report = read_report_json(run / "shards" / std::to_string(task) / attempt->folder /
                                          "report.json");
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
    return pending;
}

void Service::settle_wave(const std::vector<Job>& pending) {
    if (stopping_) {
        // The wave's grades go back to their places, their starts not counted.
        for (const Job& job : pending) {
            until_written([&] { store_->requeue(job.attempt, Lane::gpu, true); });
        }
        return;
    }
    bool retry = false;
    for (const Job& job : pending) {
        if (job.starts >= options_.max_starts) {
            store_->finish(job.attempt, Lane::gpu, "ungradable", 0, 0,
                           "the Slurm cluster returned no report for this attempt " +
                               std::to_string(job.starts) +
                               " times: the machine's fault, not the submission's",
                           now_seconds(), true);
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

void Service::slurm_wave(std::size_t& wave_number) {
    std::string exercise_id;
    const std::vector<Job> wave = claim_wave(exercise_id);
    if (wave.empty()) {
        std::unique_lock<std::mutex> lock(wake_mutex_);
        wake_.wait_for(lock, std::chrono::seconds(1));
        return;
    }
    const fs::path run = options_.state_dir / "slurm" /
                         ("wave-" + std::to_string(static_cast<long>(now_seconds())) + "-" +
                          std::to_string(++wave_number));
    if (!submit_wave(wave, exercise_id, run)) {
        return;
    }
    // Each task of the array writes RUN/shards/I/<folder>/report.json as it grades: a report is
    // filed as soon as it is there. The wave is over when every task has written its shard.json
    // (or at the deadline); the merge's class outputs are not waited for.
    settle_wave(collect_wave(wave, run));
}

}  // namespace grader::serve
