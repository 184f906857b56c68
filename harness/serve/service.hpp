#pragma once

// The service behind `grader serve`, apart from HTTP: who is asking (tokens), taking an upload
// into an attempt, the two queues and the threads that grade them, and what a person may read
// back. Every grade is `grader grade`'s: grade_submission() in a confined worker process, on the
// simulator for the report at once, and on a GPU through its device server (the batch's
// DeviceServers) in its turn, or through a Slurm cluster (scripts/slurm) where asked.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "exercise/exercise.hpp"
#include "model/explanation.hpp"
#include "model/report.hpp"
#include "serve/store.hpp"
#include "serve/upload.hpp"

namespace grader {
class DeviceServers;
}

namespace grader::serve {

// How many attempts a student may make in a window of time (the instructor's --rate).
struct RateLimit {
    int count = 20;
    double window_seconds = 3600.0;
};

// Where the GPU's grades go instead of this machine's GPUs: a Slurm cluster, one job array of
// `grader batch --shard` tasks per wave of queued grades (scripts/slurm/submit.sh), read back
// from the merged class.
struct SlurmOptions {
    std::filesystem::path submit_script;  // scripts/slurm/submit.sh; empty: local GPUs
    std::string backend = "cuda";         // GRADER_BACKEND for the tasks (sim: a test cluster)
    int tasks = 1;                        // tasks (GPUs) per wave
    int wave_size = 32;                   // grades handed over at once, at most
    double wait_seconds = 1800.0;         // a wave's results are waited for at most this long
};

struct ServiceOptions {
    std::filesystem::path state_dir;  // created (mode 0700) where missing
    std::vector<Exercise> exercises;  // the first is the default
    // For each exercise id, GradeOptions::other_exercise_sources.
    std::map<std::string, std::map<std::string, std::string>> other_exercise_sources;
    std::filesystem::path worker_executable;  // the grader, for `grader __worker`
    bool gpu = false;                         // a GPU lane: local devices, or Slurm
    std::vector<int> devices;                 // local GPUs, where gpu and no Slurm
    int gpu_jobs_per_device = 4;              // as the batch's default with device servers
    int sim_jobs = 2;
    RateLimit rate;
    std::size_t max_queued = 5000;  // grades waiting in one lane, past which uploads wait
    UploadLimits upload;
    int max_starts = 3;  // a grade the service died during this often is not begun again
    // A grade whose worker cannot be started (no descriptor for its pipes, fork failing) is
    // tried again this many times, after pauses of 1, 2, 4 ... s; then it is ungradable as the
    // service's fault, and the attempt does not count against the student's rate.
    int service_retries = 5;
    // A grade that has run this long gives its place among a lane's sim_jobs (or a GPU's
    // gpu_jobs_per_device) to the next in the queue and goes on in one of `long_grades` places
    // kept for long grades (0: half the lane's places, at least one), so that a slow attempt
    // never holds a lane that another student waits for.
    double long_grade_seconds = 5.0;
    int long_grades = 0;
    double store_busy_seconds = 10.0;  // a grade's write waits this long for another's lock
    double run_seconds_override = 0.0;
    SlurmOptions slurm;
    // What the service has to say for its operator's log (a grade that the harness failed, a
    // device server that would not start): the library prints nothing itself.
    std::function<void(const std::string&)> log;
};

// An answer the API gives instead of what was asked: the HTTP status and a sentence for the
// person (never a host path), with the seconds to wait where the status is 429.
class ServiceError : public std::runtime_error {
public:
    ServiceError(int status, const std::string& message, double retry_after = 0.0)
        : std::runtime_error(message), status_(status), retry_after_(retry_after) {}
    int status() const noexcept { return status_; }
    double retry_after() const noexcept { return retry_after_; }

private:
    int status_;
    double retry_after_;
};

struct Counts {
    QueueCounts sim;
    QueueCounts gpu;
};

// What the instructor should know of the service's own state (GET /api/health, an instructor's
// GET /api/me, the log): the state file failing to be written (another process's lock, a full
// disk) since when, and the room left on the state folder's disk.
struct ServiceHealth {
    std::string problem;  // empty: none
    StoreError::Kind kind = StoreError::Kind::other;
    double since = 0.0;
    std::int64_t unrecorded = 0;  // finished grades waiting in memory to be recorded
    std::optional<double> disk_free_mb;
};

class LanePlaces;  // service.cpp: a lane's places, ordinary and long

class Service {
public:
    explicit Service(ServiceOptions options);
    ~Service();  // stop()
    Service(const Service&) = delete;
    Service& operator=(const Service&) = delete;

    // Queues again what a stopped service left running, then starts the graders' threads (and,
    // on GPUs, each device server, so the first grade finds it warm). Returns what resume found.
    std::pair<std::int64_t, std::int64_t> start();
    // No new grade begins; the workers of grades in flight are stopped at once and their grades
    // queued again without counting a start (they are begun afresh at the next start). Once.
    void stop();

    // Grades that may run at once (each holds a few descriptors: its worker's pipes, files).
    int grades_at_once() const;

    const ServiceOptions& options() const { return options_; }
    Store& store() { return *store_; }

    // The person a token names; ServiceError(401) for a missing, unknown, revoked or expired one,
    // saying which.
    Person authenticate(const std::string& token, double now);

    // Takes an upload into a new attempt with its grades queued. ServiceError: 400 for an
    // unknown exercise or a file the exercise does not take, 429 past the rate limit (with the
    // seconds until the next attempt is allowed), 503 where the queue is full.
    Attempt submit(const Person& person, const Upload& upload, double now);

    // An attempt a person may see (their own; any, for an instructor); ServiceError(404)
    // otherwise, the same whether it exists or not.
    Attempt visible_attempt(const Person& person, std::int64_t id);

    // A lane's report (nullopt until it is done), the lane tables of `explain`, a submitted file.
    std::optional<Report> report(const Attempt& attempt, Lane lane);
    std::optional<Explanation> explanation(const Attempt& attempt);
    bool has_explanation(const Attempt& attempt) const;  // without reading it
    std::optional<std::string> submitted_file(const Attempt& attempt, const std::string& name);

    const Exercise* exercise(const std::string& id) const;
    Counts counts();
    ServiceHealth health();
    // A read or write of the state that failed, or worked: kept for health(), logged when it
    // changes.
    void store_failed(const StoreError& error);
    void store_worked();
    // How many attempts the person has left in the current window, and when the next frees.
    std::pair<int, double> rate_left(const Person& person, double now);

    // Called after each grade is stored (tests and the benchmark wait on it).
    void on_graded(std::function<void(std::int64_t attempt, Lane lane)> callback);

private:
    void grade_loop(LanePlaces& places, Lane lane, int device);
    void slurm_loop();
    // One wave of the GPU's grades through Slurm: claimed, submitted, collected, settled.
    void slurm_wave(std::size_t& wave_number);
    // The next queued GPU grades, fairly ordered, of one exercise (the first of another goes
    // back for the next wave), at most the wave's size.
    std::vector<Job> claim_wave(std::string& exercise_id);
    // The wave's files copied into RUN/submissions and handed to the submit script. False where
    // that failed: it is logged, and the wave's attempts end at once as the service's fault.
    bool submit_wave(const std::vector<Job>& wave, const std::string& exercise_id,
                     const std::filesystem::path& run);
    // Each report filed as a task writes it, until every task is done, the deadline or a stop;
    // the grades left without one.
    std::vector<Job> collect_wave(std::vector<Job> pending, const std::filesystem::path& run);
    // Grades left: queued again (their starts not counted where the service stops), or
    // ungradable past max_starts.
    void settle_wave(const std::vector<Job>& pending);
    void grade_one(const Job& job, int device);
    void record(const Attempt& attempt, Lane lane, const Report& report);
    // Runs `write` until it works, pausing 1, 2, 4 ... 30 s between tries while the state
    // cannot be written (or read, where !writes); false where the service stopped first.
    bool until_written(const std::function<void()>& write, bool writes = true);
    // Waits `seconds`, or until stop(); false where stopped.
    bool pause(double seconds);
    std::filesystem::path attempt_dir(const Attempt& attempt) const;

    ServiceOptions options_;
    std::unique_ptr<Store> store_;
    std::map<std::string, std::unique_ptr<DeviceServers>> device_servers_;  // by exercise id
    std::mutex submit_mutex_;  // a student's rate is checked and spent at once
    std::mutex wake_mutex_;
    std::condition_variable wake_;
    std::atomic<bool> stopping_{false};
    bool started_ = false;
    std::vector<std::unique_ptr<LanePlaces>> places_;
    std::vector<std::thread> threads_;
    std::mutex health_mutex_;
    ServiceHealth health_;
    std::mutex callback_mutex_;
    std::function<void(std::int64_t, Lane)> on_graded_;
};

// Seconds since the epoch, as the service records times.
double now_seconds();
// "2027-01-31 23:59 UTC".
std::string utc_text(double seconds);

}  // namespace grader::serve
