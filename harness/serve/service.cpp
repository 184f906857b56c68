#include "serve/service.hpp"

#include <errno.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <exception>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>

#include "batch/batch.hpp"
#include "common/clock.hpp"
#include "common/cores.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "grade/grade.hpp"
#include "grade/protocol.hpp"
#include "grade/worker_options.hpp"
#include "model/json.hpp"
#include "report/writers.hpp"
#include "serve/gpu_runners.hpp"
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

// A folder of this user's alone for an attempt (common/files's checks: no link, this user's,
// nobody else may write in it), made where missing.
void make_private_folder(const fs::path& folder) {
    create_output_folders(folder, Sharing::owner_only);
    std::string why;
    if (!open_private_folder(folder, why).valid()) {
        throw StoreError("the folder " + text::visible_line(why) + ": refused");
    }
}

// The attempt's folder, its files written once, private and on the disk (with their folders'
// entries) before the attempt is recorded. A write that failed for want of room is a full store.
void write_attempt_files(const fs::path& dir, const std::vector<UploadedFile>& files) {
    try {
        make_private_folder(dir);
        make_private_folder(dir / kFilesFolder);
        for (const UploadedFile& file : files) {
            write_file_atomically(dir / kFilesFolder / file.name, file.bytes, Sharing::owner_only);
        }
        sync_folder(dir / kFilesFolder);
        sync_folder(dir);
    } catch (const std::system_error& error) {
        throw StoreError(error.what(), kind_of_errno(error.code().value()));
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
    std::string why;
    if (!open_private_folder(options_.state_dir / kAttemptsFolder, why).valid()) {
        throw StoreError("the state folder's " + text::visible_line(why) + ": refused");
    }
    if (options_.gpu) {
        if (options_.slurm.submit_script.empty()) {
            gpu_ = std::make_unique<LocalGpus>(*this);
        } else {
            gpu_ = std::make_unique<SlurmCluster>(*this);
        }
    }
}

Service::~Service() {
    stop();
}

int long_grade_places(const ServiceOptions& options, int ordinary) {
    return options.long_grades > 0 ? options.long_grades : std::max(1, ordinary / 2);
}

int Service::grades_at_once() const {
    const int sim = std::max(1, options_.sim_jobs);
    const int grades = sim + long_grade_places(options_, sim) + 1;  // and the lane tables
    return grades + (gpu_ ? gpu_->grades_at_once() : 0);
}

std::pair<std::int64_t, std::int64_t> Service::start() {
    const auto resumed = store_->resume(options_.max_starts, now_seconds());
    started_ = true;
    start_lane(Lane::sim, 0, std::max(1, options_.sim_jobs), nullptr);
    if (gpu_) {
        gpu_->start();
    }
    return resumed;
}

void Service::start_lane(Lane lane, int device, int ordinary, const LocalGpus* gpus) {
    const int extra = long_grade_places(options_, ordinary);
    places_.push_back(std::make_unique<LanePlaces>(ordinary, extra, options_.long_grade_seconds));
    LanePlaces* places = places_.back().get();
    for (int i = 0; i < ordinary + extra; ++i) {
        threads_.emplace_back(
            [this, places, lane, device, gpus] { grade_loop(*places, lane, device, gpus); });
    }
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
    if (gpu_) {
        gpu_->stop();
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
        write_attempt_files(dir, upload.files);
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

fs::path Service::files_dir(const Attempt& attempt) const {
    return attempt_dir(attempt) / kFilesFolder;
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
    return read_student_file(files_dir(attempt), name, options_.upload.max_file_bytes, why);
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

void Service::grade_one(const Job& job, int device, const LocalGpus* gpus) {
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
    grade.submission_dir = files_dir(*attempt);
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
            if (gpus != nullptr) {
                grade.device_server = gpus->device_server(exercise->id, device);
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
            WorkerTask task;
            task.mode = WorkerOptions::Mode::explain;
            task.explain_strides = {3, 8, 16, 32};
            const WorkerResult explained = run_worker_process(*exercise, grade, report->seed, task);
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

void Service::grade_loop(LanePlaces& places, Lane lane, int device, const LocalGpus* gpus) {
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
            grade_one(*job, device, gpus);
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

}  // namespace grader::serve
