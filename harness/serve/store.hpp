#pragma once

// The service's state in one SQLite file: who may submit (tokens, kept as SHA-256), every
// attempt, and the two queues of grades (the simulator's and the GPU's). Written through
// transactions in WAL mode with full syncs, so a crash of the service, or of the machine, loses
// no attempt that was answered as received; grades that were running when it stopped are queued
// again when it starts (Store::resume).
//
// The queues are fair between students: a grade's round is one more than the later of the
// queue's current round and its student's last grade still waiting or running, and grades are
// taken by round, then by arrival. One student's ten submissions take ten rounds: each other
// student's single one is graded before their second.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct sqlite3;

namespace grader::serve {

// The state file cannot be opened, read or written; what() says which and why, kind() what
// kind of trouble it is: another process holding its lock past the busy timeout, a full disk
// (or quota, or file size limit), or anything else.
class StoreError : public std::runtime_error {
public:
    enum class Kind { other, busy, full };
    explicit StoreError(const std::string& message, Kind kind = Kind::other)
        : std::runtime_error(message), kind_(kind) {}
    Kind kind() const noexcept { return kind_; }

private:
    Kind kind_;
};

enum class Role { student, instructor };
const char* to_string(Role role);

struct Person {
    std::int64_t id = 0;
    std::string login;
    std::string name;
    Role role = Role::student;
    std::optional<std::int64_t> expires_at;  // Unix seconds; none: never
    bool revoked = false;
    std::int64_t issued_at = 0;
};

// The two kinds of grade an attempt gets: the simulator's at once, the GPU's in its turn.
enum class Lane { sim, gpu };
const char* to_string(Lane lane);
std::optional<Lane> lane_from_string(std::string_view text);

enum class JobState { queued, running, done };
const char* to_string(JobState state);

struct Job {
    std::int64_t attempt = 0;
    Lane lane = Lane::sim;
    JobState state = JobState::queued;
    std::int64_t round = 0;
    int starts = 0;  // how often a grade of it began (a crash midway begins it again)
    double enqueued_at = 0.0;
    double started_at = 0.0;
    double finished_at = 0.0;
    std::string verdict;  // "pass", "fail", "ungradable"; empty until done
    double score = 0.0;
    double max_score = 0.0;
    std::string summary;
    // Done as ungradable because the service could not grade it (its worker would not start,
    // however often tried): the attempt does not count against the student's rate.
    bool services_fault = false;
};

struct Attempt {
    std::int64_t id = 0;
    std::int64_t person = 0;
    std::string login;
    int number = 0;  // the student's own count: their 3rd attempt
    std::string exercise;
    std::string folder;  // under the state folder's attempts/: a random name, never a login
    double created_at = 0.0;
    std::vector<std::string> files;
    std::vector<Job> jobs;  // by lane

    const Job* job(Lane lane) const;
};

// Where a queued grade stands: grades ahead of it, and being graded now.
struct QueuePlace {
    std::int64_t ahead = 0;
    std::int64_t running = 0;
};

struct QueueCounts {
    std::int64_t queued = 0;
    std::int64_t running = 0;
    std::int64_t done = 0;
};

class Store {
public:
    // Opens the state file, creating it (mode 0600) and its tables where missing. Its folder is
    // checked as the GPU lock's is (open_private_folder: made 0700 where missing; refused where
    // it is a link, another user's, or writable by others), and so is the file and what SQLite
    // keeps beside it (a plain file of this user's with one link, writable by no one else): a
    // folder another user made first could hand that user the class's tokens and reports.
    // Throws StoreError, its message one line. A write waits `busy_seconds` for another
    // process's lock (a read in WAL mode never waits for a write); a request's own write (an
    // upload) waits `request_busy_seconds` at most, so that a held lock answers it 503, not late.
    explicit Store(const std::filesystem::path& file, double busy_seconds = 10.0,
                   double request_busy_seconds = 2.0);
    ~Store();
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;

    // People. issue_token replaces any earlier token of the same login (the old one stops
    // working) and returns the new one: the only time it exists outside the person's hands.
    std::string issue_token(const std::string& login, const std::string& name, Role role,
                            std::optional<std::int64_t> expires_at, std::int64_t now);
    std::optional<Person> person_by_token(std::string_view token);
    std::optional<Person> person_by_login(const std::string& login);
    std::vector<Person> people();
    bool revoke(const std::string& login);

    // Adds an attempt with one queued grade per lane, in one transaction; returns its id.
    // A request's write: it waits request_busy_seconds at most.
    std::int64_t add_attempt(std::int64_t person, const std::string& exercise,
                             const std::string& folder, const std::vector<std::string>& files,
                             const std::vector<Lane>& lanes, double now);
    std::optional<Attempt> attempt(std::int64_t id);
    // Newest first; person 0: everyone's. At most `limit`, and only those older than the attempt
    // `before` where it is not 0 (the next page of a list).
    std::vector<Attempt> attempts(std::int64_t person, std::size_t limit, std::int64_t before = 0);
    // Attempts of a person created after `since`, and the oldest of them (for the rate limit);
    // an attempt that the service failed to grade (Job::services_fault) is not counted.
    std::int64_t attempts_since(std::int64_t person, double since, double* oldest);

    // The queues. claim_next takes the next grade of a lane (fairly) and marks it running.
    std::optional<Job> claim_next(Lane lane, double now);
    void finish(std::int64_t attempt, Lane lane, const std::string& verdict, double score,
                double max_score, const std::string& summary, double now,
                bool services_fault = false);
    // A running grade back into its queue, with its round (a Slurm wave that never came back).
    // `refund`: its start is not counted (the service stopped it, or could not start it).
    void requeue(std::int64_t attempt, Lane lane, bool refund = false);
    // At start: grades left running by a stopped service are queued again, keeping their round
    // (their place); one that has already begun `max_starts` times is finished as ungradable
    // instead, with why, so a submission that brings the service down cannot do it for ever.
    // Returns how many were queued again, and how many given up.
    std::pair<std::int64_t, std::int64_t> resume(int max_starts, double now);
    QueuePlace place(std::int64_t attempt, Lane lane);
    QueueCounts counts(Lane lane);

private:
    // Two connections: reads go through `reader_` and never wait behind a write that waits for
    // another process's lock; writes through `writer_`, one at a time.
    std::timed_mutex write_mutex_;
    std::mutex read_mutex_;
    sqlite3* writer_ = nullptr;
    sqlite3* reader_ = nullptr;
    double busy_seconds_;
    double request_busy_seconds_;
};

}  // namespace grader::serve
