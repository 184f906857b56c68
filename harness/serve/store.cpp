#include "serve/store.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>

#include "common/files.hpp"
#include "serve/sqlite.hpp"
#include "serve/tokens.hpp"
#include "text/text_safety.hpp"

namespace grader::serve {
namespace {

using sqlite::execute;
using sqlite::kind_of_error;
using sqlite::Statement;
using sqlite::Transaction;
using sqlite::why_of_error;

constexpr int kSchemaVersion = 1;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS people(
  id INTEGER PRIMARY KEY,
  login TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL DEFAULT '',
  role TEXT NOT NULL CHECK(role IN ('student', 'instructor')),
  token_hash BLOB UNIQUE,
  expires_at INTEGER,
  revoked INTEGER NOT NULL DEFAULT 0,
  issued_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS attempts(
  id INTEGER PRIMARY KEY,
  person INTEGER NOT NULL REFERENCES people(id),
  number INTEGER NOT NULL,
  exercise TEXT NOT NULL,
  folder TEXT NOT NULL,
  created_at REAL NOT NULL,
  files TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS attempts_by_person ON attempts(person, created_at);
CREATE TABLE IF NOT EXISTS jobs(
  attempt INTEGER NOT NULL REFERENCES attempts(id),
  lane TEXT NOT NULL CHECK(lane IN ('sim', 'gpu')),
  person INTEGER NOT NULL,
  state TEXT NOT NULL CHECK(state IN ('queued', 'running', 'done')),
  round INTEGER NOT NULL,
  starts INTEGER NOT NULL DEFAULT 0,
  enqueued_at REAL NOT NULL,
  started_at REAL NOT NULL DEFAULT 0,
  finished_at REAL NOT NULL DEFAULT 0,
  verdict TEXT NOT NULL DEFAULT '',
  score REAL NOT NULL DEFAULT 0,
  max_score REAL NOT NULL DEFAULT 0,
  summary TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(attempt, lane));
CREATE INDEX IF NOT EXISTS jobs_in_turn ON jobs(lane, state, round, attempt);
CREATE INDEX IF NOT EXISTS jobs_by_person ON jobs(lane, person, state);
)sql";

Role role_from_string(const std::string& text) {
    return text == "instructor" ? Role::instructor : Role::student;
}

JobState state_from_string(const std::string& text) {
    return text == "done" ? JobState::done
                          : (text == "running" ? JobState::running : JobState::queued);
}

std::int64_t meta_value(sqlite3* db, const std::string& key, std::int64_t fallback) {
    Statement get(db, "SELECT value FROM meta WHERE key = ?");
    get.bind(1, key);
    return get.step() ? get.integer(0) : fallback;
}

void set_meta(sqlite3* db, const std::string& key, std::int64_t value) {
    Statement set(db,
                  "INSERT INTO meta(key, value) VALUES(?, ?) "
                  "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
    set.bind(1, key).bind(2, value);
    set.step();
}

constexpr const char* kPersonColumns =
    "id, login, name, role, expires_at, revoked, issued_at FROM people";

Person read_person(const Statement& row) {
    Person person;
    person.id = row.integer(0);
    person.login = row.text(1);
    person.name = row.text(2);
    person.role = role_from_string(row.text(3));
    if (!row.is_null(4)) {
        person.expires_at = row.integer(4);
    }
    person.revoked = row.integer(5) != 0;
    person.issued_at = row.integer(6);
    return person;
}

constexpr const char* kJobColumns =
    "attempt, lane, state, round, starts, enqueued_at, started_at, finished_at, verdict, score, "
    "max_score, summary, fault FROM jobs";

Job read_job(const Statement& row) {
    Job job;
    job.attempt = row.integer(0);
    job.lane = lane_from_string(row.text(1)).value_or(Lane::sim);
    job.state = state_from_string(row.text(2));
    job.round = row.integer(3);
    job.starts = static_cast<int>(row.integer(4));
    job.enqueued_at = row.real(5);
    job.started_at = row.real(6);
    job.finished_at = row.real(7);
    job.verdict = row.text(8);
    job.score = row.real(9);
    job.max_score = row.real(10);
    job.summary = row.text(11);
    job.services_fault = row.text(12) == "service";
    return job;
}

std::vector<Job> jobs_of(sqlite3* db, std::int64_t attempt) {
    Statement select(
        db, (std::string("SELECT ") + kJobColumns + " WHERE attempt = ? ORDER BY lane DESC")
                .c_str());  // 'sim' before 'gpu'
    select.bind(1, attempt);
    std::vector<Job> jobs;
    while (select.step()) {
        jobs.push_back(read_job(select));
    }
    return jobs;
}

constexpr const char* kAttemptColumns =
    "a.id, a.person, p.login, a.number, a.exercise, a.created_at, a.files, a.folder FROM attempts "
    "a "
    "JOIN "
    "people p ON p.id = a.person";

Attempt read_attempt(const Statement& row) {
    Attempt attempt;
    attempt.id = row.integer(0);
    attempt.person = row.integer(1);
    attempt.login = row.text(2);
    attempt.number = static_cast<int>(row.integer(3));
    attempt.exercise = row.text(4);
    attempt.created_at = row.real(5);
    attempt.folder = row.text(7);
    attempt.files = row.strings(6);
    return attempt;
}

// Columns added since schema 1, each where an older state file lacks it: the schema only grows,
// so an older grader still reads a newer file.
void add_missing_columns(sqlite3* db) {
    struct Column {
        const char* table;
        const char* name;
        const char* definition;
    };
    for (const Column& column : {Column{"jobs", "fault", "TEXT NOT NULL DEFAULT ''"}}) {
        Statement info(db, (std::string("SELECT COUNT(*) FROM pragma_table_info('") + column.table +
                            "') WHERE name = ?")
                               .c_str());
        info.bind(1, std::string(column.name));
        info.step();
        if (info.integer(0) == 0) {
            execute(db, (std::string("ALTER TABLE ") + column.table + " ADD COLUMN " + column.name +
                         " " + column.definition)
                            .c_str());
        }
    }
}

std::string mode_text(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

// The state file, or a file SQLite keeps beside it, as found in the folder open as `folder`:
// empty where it may be used, else why not. Where `create`, it is made (0600) if missing.
std::string unusable_state_file(int folder, const std::filesystem::path& path, bool create) {
    const std::string name = path.filename().string();
    const std::string shown = text::visible_line(path.string());
    Descriptor file(::openat(
        folder, name.c_str(),
        O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (create ? O_CREAT : 0), 0600));
    if (!file.valid()) {
        if (errno == ENOENT && !create) {
            return {};
        }
        return shown + (errno == ELOOP ? std::string(" is a symbolic link")
                                       : " cannot be opened: " + std::string(std::strerror(errno)));
    }
    struct stat status {};
    if (::fstat(file.get(), &status) != 0 || !S_ISREG(status.st_mode)) {
        return shown + " is not a plain file";
    }
    if (status.st_uid != ::geteuid()) {
        return shown + " belongs to user " + describe_user(status.st_uid) + ", not to this user, " +
               describe_user(::geteuid());
    }
    if (status.st_nlink != 1) {
        return shown + " has " + std::to_string(status.st_nlink) +
               " names (hard links): another may lead to it from anywhere";
    }
    if ((status.st_mode & 022) != 0) {
        return shown + " may be written by other users (mode " + mode_text(status.st_mode) + ")";
    }
    if ((status.st_mode & 077) != 0) {
        ::fchmod(file.get(), 0600);  // tokens' hashes and every attempt's record: this user's
    }
    return {};
}

// Waits at most this long for another process's lock, then restores the connection's wait.
class BusyWait {
public:
    BusyWait(sqlite3* db, double seconds, double restore) : db_(db), restore_(restore) {
        sqlite3_busy_timeout(db_, static_cast<int>(seconds * 1000.0));
    }
    ~BusyWait() { sqlite3_busy_timeout(db_, static_cast<int>(restore_ * 1000.0)); }
    BusyWait(const BusyWait&) = delete;
    BusyWait& operator=(const BusyWait&) = delete;

private:
    sqlite3* db_;
    double restore_;
};

sqlite3* open_connection(const std::filesystem::path& file, double busy_seconds) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(file.c_str(), &db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                        nullptr) != SQLITE_OK) {
        const std::string why = db != nullptr ? why_of_error(db) : "out of memory";
        const auto kind = db != nullptr ? kind_of_error(db) : StoreError::Kind::other;
        sqlite3_close(db);
        throw StoreError(
            "the state file " + text::visible_line(file.string()) + " cannot be opened: " + why,
            kind);
    }
    sqlite3_busy_timeout(db, static_cast<int>(busy_seconds * 1000.0));
    return db;
}

std::string virtual_round_key(Lane lane) {
    return std::string("round_") + to_string(lane);
}

}  // namespace

const char* to_string(Role role) {
    return role == Role::instructor ? "instructor" : "student";
}

const char* to_string(Lane lane) {
    return lane == Lane::gpu ? "gpu" : "sim";
}

std::optional<Lane> lane_from_string(std::string_view text) {
    if (text == "sim") {
        return Lane::sim;
    }
    if (text == "gpu") {
        return Lane::gpu;
    }
    return std::nullopt;
}

const char* to_string(JobState state) {
    switch (state) {
        case JobState::queued:
            return "queued";
        case JobState::running:
            return "running";
        case JobState::done:
            return "done";
    }
    return "queued";
}

const Job* Attempt::job(Lane lane) const {
    for (const Job& job : jobs) {
        if (job.lane == lane) {
            return &job;
        }
    }
    return nullptr;
}

Store::Store(const std::filesystem::path& file, double busy_seconds, double request_busy_seconds)
    : busy_seconds_(busy_seconds), request_busy_seconds_(request_busy_seconds) {
    const std::filesystem::path folder =
        file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
    std::string why;
    const Descriptor opened = open_private_folder(folder, why);
    if (!opened.valid()) {
        throw StoreError("the state folder " + text::visible_line(why) +
                         ": refused, as the class's tokens and reports are kept there (give "
                         "--state a folder of this user's)");
    }
    // Created private before SQLite opens it: tokens' hashes and every attempt's record.
    why = unusable_state_file(opened.get(), file, true);
    for (const char* beside : {"-wal", "-shm", "-journal"}) {
        if (why.empty()) {
            why = unusable_state_file(opened.get(), file.string() + beside, false);
        }
    }
    if (!why.empty()) {
        throw StoreError("the state file " + why +
                         ": refused, as the class's tokens and reports are kept there (remove "
                         "it, or give --state a folder of this user's)");
    }
    writer_ = open_connection(file, busy_seconds_);
    try {
        execute(writer_, "PRAGMA journal_mode = WAL");
        execute(writer_, "PRAGMA synchronous = FULL");
        execute(writer_, "PRAGMA foreign_keys = ON");
        Transaction transaction(writer_);
        execute(writer_, kSchema);
        add_missing_columns(writer_);
        const std::int64_t version = meta_value(writer_, "schema_version", 0);
        if (version > kSchemaVersion) {
            throw StoreError("the state file " + text::visible_line(file.string()) +
                             " was written by a newer grader (schema " + std::to_string(version) +
                             "); run that grader, or another --state");
        }
        set_meta(writer_, "schema_version", kSchemaVersion);
        transaction.commit();
        reader_ = open_connection(file, busy_seconds_);
    } catch (...) {
        sqlite3_close(writer_);
        writer_ = nullptr;
        throw;
    }
}

Store::~Store() {
    sqlite3_close(reader_);
    sqlite3_close(writer_);
}

std::string Store::issue_token(const std::string& login, const std::string& name, Role role,
                               std::optional<std::int64_t> expires_at, std::int64_t now) {
    const std::string token = new_token();
    const TokenHash hash = hash_token(token);
    std::lock_guard<std::timed_mutex> lock(write_mutex_);
    Statement upsert(writer_,
                     "INSERT INTO people(login, name, role, token_hash, expires_at, revoked, "
                     "issued_at) VALUES(?, ?, ?, ?, ?, 0, ?) ON CONFLICT(login) DO UPDATE SET "
                     "name = CASE WHEN excluded.name = '' THEN name ELSE excluded.name END, "
                     "role = excluded.role, token_hash = excluded.token_hash, "
                     "expires_at = excluded.expires_at, revoked = 0, issued_at = "
                     "excluded.issued_at");
    upsert.bind(1, login).bind(2, name).bind(3, std::string(to_string(role)));
    upsert.bind_blob(4, hash.data(), hash.size());
    if (expires_at) {
        upsert.bind(5, *expires_at);
    } else {
        upsert.bind_null(5);
    }
    upsert.bind(6, now);
    upsert.step();
    return token;
}

std::optional<Person> Store::person_by_token(std::string_view token) {
    if (!looks_like_token(token)) {
        return std::nullopt;
    }
    const TokenHash hash = hash_token(token);
    std::lock_guard<std::mutex> lock(read_mutex_);
    Statement select(reader_,
                     (std::string("SELECT ") + kPersonColumns + " WHERE token_hash = ?").c_str());
    select.bind_blob(1, hash.data(), hash.size());
    if (!select.step()) {
        return std::nullopt;
    }
    return read_person(select);
}

std::optional<Person> Store::person_by_login(const std::string& login) {
    std::lock_guard<std::mutex> lock(read_mutex_);
    Statement select(reader_,
                     (std::string("SELECT ") + kPersonColumns + " WHERE login = ?").c_str());
    select.bind(1, login);
    if (!select.step()) {
        return std::nullopt;
    }
    return read_person(select);
}

std::vector<Person> Store::people() {
    std::lock_guard<std::mutex> lock(read_mutex_);
    Statement select(reader_,
                     (std::string("SELECT ") + kPersonColumns + " ORDER BY login").c_str());
    std::vector<Person> people;
    while (select.step()) {
        people.push_back(read_person(select));
    }
    return people;
}

bool Store::revoke(const std::string& login) {
    std::lock_guard<std::timed_mutex> lock(write_mutex_);
    Statement update(writer_, "UPDATE people SET revoked = 1, token_hash = NULL WHERE login = ?");
    update.bind(1, login);
    update.step();
    return sqlite3_changes(writer_) > 0;
}

std::int64_t Store::add_attempt(std::int64_t person, const std::string& exercise,
                                const std::string& folder, const std::vector<std::string>& files,
                                const std::vector<Lane>& lanes, double now) {
    // A request waits a little, and is answered 503, rather than late.
    const auto wait =
        std::chrono::milliseconds(static_cast<long long>(request_busy_seconds_ * 1000));
    std::unique_lock<std::timed_mutex> lock(write_mutex_, wait);
    if (!lock.owns_lock()) {
        throw StoreError("the state file is busy: another write has waited for its lock",
                         StoreError::Kind::busy);
    }
    const BusyWait busy(writer_, request_busy_seconds_, busy_seconds_);
    Transaction transaction(writer_);
    Statement count(writer_, "SELECT COUNT(*) FROM attempts WHERE person = ?");
    count.bind(1, person);
    count.step();
    const std::int64_t number = count.integer(0) + 1;
    Statement insert(writer_,
                     "INSERT INTO attempts(person, number, exercise, folder, created_at, files) "
                     "VALUES(?, ?, ?, ?, ?, ?)");
    insert.bind(1, person).bind(2, number).bind(3, exercise).bind(4, folder).bind(5, now);
    insert.bind(6, files);
    insert.step();
    const std::int64_t attempt = sqlite3_last_insert_rowid(writer_);
    for (const Lane lane : lanes) {
        Statement last(writer_,
                       "SELECT MAX(round) FROM jobs WHERE lane = ? AND person = ? AND state IN "
                       "('queued', 'running')");
        last.bind(1, std::string(to_string(lane))).bind(2, person);
        last.step();
        const std::int64_t round =
            std::max(meta_value(writer_, virtual_round_key(lane), 0), last.integer(0)) + 1;
        Statement job(writer_,
                      "INSERT INTO jobs(attempt, lane, person, state, round, enqueued_at) "
                      "VALUES(?, ?, ?, 'queued', ?, ?)");
        job.bind(1, attempt).bind(2, std::string(to_string(lane))).bind(3, person);
        job.bind(4, round).bind(5, now);
        job.step();
    }
    transaction.commit();
    return attempt;
}

std::optional<Attempt> Store::attempt(std::int64_t id) {
    std::lock_guard<std::mutex> lock(read_mutex_);
    Statement select(reader_,
                     (std::string("SELECT ") + kAttemptColumns + " WHERE a.id = ?").c_str());
    select.bind(1, id);
    if (!select.step()) {
        return std::nullopt;
    }
    Attempt attempt = read_attempt(select);
    attempt.jobs = jobs_of(reader_, attempt.id);
    return attempt;
}

std::vector<Attempt> Store::attempts(std::int64_t person, std::size_t limit, std::int64_t before) {
    std::lock_guard<std::mutex> lock(read_mutex_);
    Statement select(reader_, (std::string("SELECT ") + kAttemptColumns +
                               " WHERE (? = 0 OR a.person = ?) AND (? = 0 OR a.id < ?)"
                               " ORDER BY a.id DESC LIMIT ?")
                                  .c_str());
    select.bind(1, person).bind(2, person).bind(3, before).bind(4, before);
    select.bind(5, static_cast<std::int64_t>(limit));
    std::vector<Attempt> attempts;
    while (select.step()) {
        attempts.push_back(read_attempt(select));
    }
    for (Attempt& attempt : attempts) {
        attempt.jobs = jobs_of(reader_, attempt.id);
    }
    return attempts;
}

std::int64_t Store::attempts_since(std::int64_t person, double since, double* oldest) {
    std::lock_guard<std::mutex> lock(read_mutex_);
    Statement select(reader_,
                     "SELECT COUNT(*), MIN(created_at) FROM attempts a WHERE person = ? AND "
                     "created_at > ? AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.attempt = a.id "
                     "AND j.fault = 'service')");
    select.bind(1, person).bind(2, since);
    select.step();
    if (oldest != nullptr) {
        *oldest = select.real(1);
    }
    return select.integer(0);
}

std::optional<Job> Store::claim_next(Lane lane, double now) {
    std::lock_guard<std::timed_mutex> lock(write_mutex_);
    Transaction transaction(writer_);
    Statement next(writer_, (std::string("SELECT ") + kJobColumns +
                             " WHERE lane = ? AND state = 'queued' ORDER BY round, attempt LIMIT 1")
                                .c_str());
    next.bind(1, std::string(to_string(lane)));
    if (!next.step()) {
        return std::nullopt;
    }
    Job job = read_job(next);
    Statement start(writer_,
                    "UPDATE jobs SET state = 'running', started_at = ?, starts = starts + 1 "
                    "WHERE attempt = ? AND lane = ?");
    start.bind(1, now).bind(2, job.attempt).bind(3, std::string(to_string(lane)));
    start.step();
    const std::string key = virtual_round_key(lane);
    set_meta(writer_, key, std::max(meta_value(writer_, key, 0), job.round));
    transaction.commit();
    job.state = JobState::running;
    job.started_at = now;
    job.starts += 1;
    return job;
}

void Store::finish(std::int64_t attempt, Lane lane, const std::string& verdict, double score,
                   double max_score, const std::string& summary, double now, bool services_fault) {
    std::lock_guard<std::timed_mutex> lock(write_mutex_);
    Statement update(writer_,
                     "UPDATE jobs SET state = 'done', finished_at = ?, verdict = ?, score = ?, "
                     "max_score = ?, summary = ?, fault = ? WHERE attempt = ? AND lane = ?");
    update.bind(1, now).bind(2, verdict).bind(3, score).bind(4, max_score).bind(5, summary);
    update.bind(6, std::string(services_fault ? "service" : ""));
    update.bind(7, attempt).bind(8, std::string(to_string(lane)));
    update.step();
}

void Store::requeue(std::int64_t attempt, Lane lane, bool refund) {
    std::lock_guard<std::timed_mutex> lock(write_mutex_);
    Statement update(
        writer_,
        "UPDATE jobs SET state = 'queued', starts = MAX(0, starts - ?) WHERE attempt = "
        "? AND lane = ? AND state = 'running'");
    update.bind(1, std::int64_t{refund ? 1 : 0}).bind(2, attempt);
    update.bind(3, std::string(to_string(lane)));
    update.step();
}

std::pair<std::int64_t, std::int64_t> Store::resume(int max_starts, double now) {
    std::lock_guard<std::timed_mutex> lock(write_mutex_);
    Transaction transaction(writer_);
    Statement give_up(writer_,
                      "UPDATE jobs SET state = 'done', finished_at = ?, verdict = 'ungradable', "
                      "summary = ? WHERE state = 'running' AND starts >= ?");
    give_up.bind(1, now);
    give_up.bind(2, "the service stopped during this grade " + std::to_string(max_starts) +
                        " times, so it was not tried again: the machine's fault, not the "
                        "submission's; your instructor can regrade it");
    give_up.bind(3, static_cast<std::int64_t>(max_starts));
    give_up.step();
    const std::int64_t given_up = sqlite3_changes(writer_);
    Statement requeue(writer_, "UPDATE jobs SET state = 'queued' WHERE state = 'running'");
    requeue.step();
    const std::int64_t requeued = sqlite3_changes(writer_);
    transaction.commit();
    return {requeued, given_up};
}

QueuePlace Store::place(std::int64_t attempt, Lane lane) {
    std::lock_guard<std::mutex> lock(read_mutex_);
    const std::string lane_name = to_string(lane);
    Statement ahead(reader_,
                    "SELECT COUNT(*) FROM jobs j, (SELECT round, attempt FROM jobs WHERE "
                    "attempt = ? AND lane = ?) me WHERE j.lane = ? AND j.state = 'queued' AND "
                    "(j.round < me.round OR (j.round = me.round AND j.attempt < me.attempt))");
    ahead.bind(1, attempt).bind(2, lane_name).bind(3, lane_name);
    ahead.step();
    Statement running(reader_, "SELECT COUNT(*) FROM jobs WHERE lane = ? AND state = 'running'");
    running.bind(1, lane_name);
    running.step();
    return {ahead.integer(0), running.integer(0)};
}

QueueCounts Store::counts(Lane lane) {
    std::lock_guard<std::mutex> lock(read_mutex_);
    Statement select(reader_, "SELECT state, COUNT(*) FROM jobs WHERE lane = ? GROUP BY state");
    select.bind(1, std::string(to_string(lane)));
    QueueCounts counts;
    while (select.step()) {
        const JobState state = state_from_string(select.text(0));
        (state == JobState::queued ? counts.queued
                                   : (state == JobState::running ? counts.running : counts.done)) =
            select.integer(1);
    }
    return counts;
}

}  // namespace grader::serve
