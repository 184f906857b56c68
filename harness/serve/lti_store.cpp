#include "serve/lti_store.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <utility>

#include "serve/sqlite.hpp"
#include "text/text_safety.hpp"

namespace grader::serve {
namespace {

using sqlite::execute;
using sqlite::Statement;
using sqlite::Transaction;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS lti_platforms(
  id INTEGER PRIMARY KEY,
  issuer TEXT NOT NULL,
  client_id TEXT NOT NULL,
  name TEXT NOT NULL DEFAULT '',
  auth_url TEXT NOT NULL,
  token_url TEXT NOT NULL,
  jwks_url TEXT NOT NULL,
  deployments TEXT NOT NULL,
  UNIQUE(issuer, client_id));
CREATE TABLE IF NOT EXISTS lti_logins(
  state TEXT PRIMARY KEY,
  nonce TEXT NOT NULL,
  platform INTEGER NOT NULL,
  created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS lti_nonces(nonce TEXT PRIMARY KEY, used_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS lti_users(
  platform INTEGER NOT NULL,
  subject TEXT NOT NULL,
  person INTEGER NOT NULL REFERENCES people(id),
  PRIMARY KEY(platform, subject));
CREATE TABLE IF NOT EXISTS lti_sessions(
  token_hash BLOB PRIMARY KEY,
  person INTEGER NOT NULL REFERENCES people(id),
  role TEXT NOT NULL CHECK(role IN ('student', 'instructor')),
  platform INTEGER NOT NULL,
  subject TEXT NOT NULL,
  deployment TEXT NOT NULL,
  context TEXT NOT NULL,
  context_title TEXT NOT NULL,
  resource_link TEXT NOT NULL,
  exercise TEXT NOT NULL,
  lineitem TEXT NOT NULL,
  memberships TEXT NOT NULL,
  expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS lti_attempts(
  attempt INTEGER PRIMARY KEY REFERENCES attempts(id),
  platform INTEGER NOT NULL,
  subject TEXT NOT NULL,
  lineitem TEXT NOT NULL,
  resource_link TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS lti_scores(
  id INTEGER PRIMARY KEY,
  attempt INTEGER NOT NULL UNIQUE REFERENCES attempts(id),
  platform INTEGER NOT NULL,
  subject TEXT NOT NULL,
  lineitem TEXT NOT NULL,
  score REAL NOT NULL,
  max_score REAL NOT NULL,
  comment TEXT NOT NULL,
  state TEXT NOT NULL CHECK(state IN ('pending', 'posted', 'superseded', 'skipped')),
  tries INTEGER NOT NULL DEFAULT 0,
  next_try_at REAL NOT NULL,
  last_error TEXT NOT NULL DEFAULT '',
  graded_at REAL NOT NULL,
  created_at REAL NOT NULL,
  posted_at REAL NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS lti_scores_due ON lti_scores(state, next_try_at);
CREATE INDEX IF NOT EXISTS lti_scores_of ON lti_scores(platform, subject, lineitem, state);
)sql";

constexpr const char* kPlatformColumns =
    "id, issuer, client_id, name, auth_url, token_url, jwks_url, deployments FROM lti_platforms";

LtiPlatform read_platform(const Statement& row) {
    LtiPlatform platform;
    platform.id = row.integer(0);
    platform.issuer = row.text(1);
    platform.client_id = row.text(2);
    platform.name = row.text(3);
    platform.auth_url = row.text(4);
    platform.token_url = row.text(5);
    platform.jwks_url = row.text(6);
    platform.deployments = row.strings(7);
    return platform;
}

constexpr const char* kScoreColumns =
    "id, attempt, platform, subject, lineitem, score, max_score, comment, state, tries, "
    "next_try_at, last_error, graded_at, posted_at FROM lti_scores";

LtiScore read_score(const Statement& row) {
    LtiScore score;
    score.id = row.integer(0);
    score.attempt = row.integer(1);
    score.platform = row.integer(2);
    score.subject = row.text(3);
    score.lineitem = row.text(4);
    score.score = row.real(5);
    score.max_score = row.real(6);
    score.comment = row.text(7);
    score.state = row.text(8);
    score.tries = static_cast<int>(row.integer(9));
    score.next_try_at = row.real(10);
    score.last_error = row.text(11);
    score.graded_at = row.real(12);
    score.posted_at = row.real(13);
    return score;
}

bool login_taken(sqlite3* db, const std::string& login) {
    Statement select(db, "SELECT 1 FROM people WHERE login = ?");
    select.bind(1, login);
    return select.step();
}

}  // namespace

LtiStore::LtiStore(const std::filesystem::path& file) {
    if (sqlite3_open_v2(file.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                        nullptr) != SQLITE_OK) {
        const std::string why = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
        sqlite3_close(db_);
        db_ = nullptr;
        throw StoreError("the state file " + text::visible_line(file.string()) +
                         " cannot be opened: " + why);
    }
    try {
        sqlite3_busy_timeout(db_, 10000);
        execute(db_, "PRAGMA synchronous = FULL");
        execute(db_, "PRAGMA foreign_keys = ON");
        Transaction transaction(db_);
        execute(db_, kSchema);
        transaction.commit();
    } catch (...) {
        sqlite3_close(db_);
        db_ = nullptr;
        throw;
    }
}

LtiStore::~LtiStore() {
    sqlite3_close(db_);
}

std::int64_t LtiStore::save_platform(const LtiPlatform& platform) {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement upsert(db_,
                     "INSERT INTO lti_platforms(issuer, client_id, name, auth_url, token_url, "
                     "jwks_url, deployments) VALUES(?, ?, ?, ?, ?, ?, ?) ON CONFLICT(issuer, "
                     "client_id) DO UPDATE SET name = excluded.name, auth_url = "
                     "excluded.auth_url, token_url = excluded.token_url, jwks_url = "
                     "excluded.jwks_url, deployments = excluded.deployments");
    upsert.bind(1, platform.issuer).bind(2, platform.client_id).bind(3, platform.name);
    upsert.bind(4, platform.auth_url).bind(5, platform.token_url).bind(6, platform.jwks_url);
    upsert.bind(7, platform.deployments);
    upsert.step();
    Statement id(db_, "SELECT id FROM lti_platforms WHERE issuer = ? AND client_id = ?");
    id.bind(1, platform.issuer).bind(2, platform.client_id);
    id.step();
    return id.integer(0);
}

std::vector<LtiPlatform> LtiStore::platforms() {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement select(db_, (std::string("SELECT ") + kPlatformColumns + " ORDER BY id").c_str());
    std::vector<LtiPlatform> platforms;
    while (select.step()) {
        platforms.push_back(read_platform(select));
    }
    return platforms;
}

std::optional<LtiPlatform> LtiStore::platform(std::int64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement select(db_, (std::string("SELECT ") + kPlatformColumns + " WHERE id = ?").c_str());
    select.bind(1, id);
    if (!select.step()) {
        return std::nullopt;
    }
    return read_platform(select);
}

bool LtiStore::remove_platform(const std::string& issuer, const std::string& client_id) {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement remove(db_, "DELETE FROM lti_platforms WHERE issuer = ? AND client_id = ?");
    remove.bind(1, issuer).bind(2, client_id);
    remove.step();
    return sqlite3_changes(db_) > 0;
}

void LtiStore::begin_login(const std::string& state, const std::string& nonce,
                           std::int64_t platform, double now) {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement insert(db_,
                     "INSERT INTO lti_logins(state, nonce, platform, created_at) VALUES(?, ?, ?, "
                     "?)");
    insert.bind(1, state).bind(2, nonce).bind(3, platform).bind(4, now);
    insert.step();
}

std::optional<LtiStore::Login> LtiStore::login(const std::string& state) {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement select(db_, "SELECT nonce, platform, created_at FROM lti_logins WHERE state = ?");
    select.bind(1, state);
    if (!select.step()) {
        return std::nullopt;
    }
    return Login{select.text(0), select.integer(1), select.real(2)};
}

bool LtiStore::finish_login(const std::string& state, const std::string& nonce, double now,
                            double older_than) {
    std::lock_guard<std::mutex> lock(mutex_);
    Transaction transaction(db_);
    Statement remove(db_, "DELETE FROM lti_logins WHERE state = ? AND nonce = ?");
    remove.bind(1, state).bind(2, nonce);
    remove.step();
    if (sqlite3_changes(db_) != 1) {
        return false;
    }
    Statement spend(db_,
                    "INSERT INTO lti_nonces(nonce, used_at) VALUES(?, ?) ON CONFLICT DO NOTHING");
    spend.bind(1, nonce).bind(2, now);
    spend.step();
    if (sqlite3_changes(db_) != 1) {
        return false;
    }
    Statement stale(db_, "DELETE FROM lti_logins WHERE created_at < ?");
    stale.bind(1, older_than);
    stale.step();
    transaction.commit();
    return true;
}

Person LtiStore::person_for(std::int64_t platform, const std::string& subject,
                            const std::string& wanted_login, const std::string& name, double now) {
    std::lock_guard<std::mutex> lock(mutex_);
    Transaction transaction(db_);
    Statement known(db_,
                    "SELECT p.id, p.login, p.name FROM lti_users u JOIN people p ON p.id = "
                    "u.person WHERE u.platform = ? AND u.subject = ?");
    known.bind(1, platform).bind(2, subject);
    Person person;
    if (known.step()) {
        person.id = known.integer(0);
        person.login = known.text(1);
        person.name = known.text(2);
        if (!name.empty() && name != person.name) {
            Statement rename(db_, "UPDATE people SET name = ? WHERE id = ?");
            rename.bind(1, name).bind(2, person.id);
            rename.step();
            person.name = name;
        }
        transaction.commit();
        return person;
    }
    // A login someone else holds (a token's student, another platform's user) is not theirs.
    std::string login = wanted_login;
    for (int suffix = 2; login_taken(db_, login); ++suffix) {
        login = wanted_login + "-" + std::to_string(suffix);
    }
    Statement insert(db_,
                     "INSERT INTO people(login, name, role, issued_at) VALUES(?, ?, 'student', ?)");
    insert.bind(1, login).bind(2, name).bind(3, static_cast<std::int64_t>(now));
    insert.step();
    person.id = sqlite3_last_insert_rowid(db_);
    person.login = login;
    person.name = name;
    Statement link(db_, "INSERT INTO lti_users(platform, subject, person) VALUES(?, ?, ?)");
    link.bind(1, platform).bind(2, subject).bind(3, person.id);
    link.step();
    transaction.commit();
    return person;
}

void LtiStore::open_session(const TokenHash& token, const LtiSession& session) {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement insert(db_,
                     "INSERT INTO lti_sessions(token_hash, person, role, platform, subject, "
                     "deployment, context, context_title, resource_link, exercise, lineitem, "
                     "memberships, expires_at) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    insert.bind_blob(1, token.data(), token.size());
    insert.bind(2, session.person).bind(3, std::string(to_string(session.role)));
    insert.bind(4, session.platform).bind(5, session.subject).bind(6, session.deployment);
    insert.bind(7, session.context).bind(8, session.context_title).bind(9, session.resource_link);
    insert.bind(10, session.exercise).bind(11, session.lineitem).bind(12, session.memberships);
    insert.bind(13, session.expires_at);
    insert.step();
}

std::optional<LtiSession> LtiStore::session(const TokenHash& token, double now) {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement select(db_,
                     "SELECT s.person, p.login, p.name, s.role, s.platform, s.subject, "
                     "s.deployment, s.context, s.context_title, s.resource_link, s.exercise, "
                     "s.lineitem, s.memberships, s.expires_at FROM lti_sessions s JOIN people p "
                     "ON p.id = s.person WHERE s.token_hash = ? AND s.expires_at > ?");
    select.bind_blob(1, token.data(), token.size());
    select.bind(2, now);
    if (!select.step()) {
        return std::nullopt;
    }
    LtiSession session;
    session.person = select.integer(0);
    session.login = select.text(1);
    session.name = select.text(2);
    session.role = select.text(3) == "instructor" ? Role::instructor : Role::student;
    session.platform = select.integer(4);
    session.subject = select.text(5);
    session.deployment = select.text(6);
    session.context = select.text(7);
    session.context_title = select.text(8);
    session.resource_link = select.text(9);
    session.exercise = select.text(10);
    session.lineitem = select.text(11);
    session.memberships = select.text(12);
    session.expires_at = select.real(13);
    return session;
}

void LtiStore::link_attempt(std::int64_t attempt, const LtiSession& session) {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement insert(db_,
                     "INSERT INTO lti_attempts(attempt, platform, subject, lineitem, "
                     "resource_link) VALUES(?, ?, ?, ?, ?)");
    insert.bind(1, attempt).bind(2, session.platform).bind(3, session.subject);
    insert.bind(4, session.lineitem).bind(5, session.resource_link);
    insert.step();
}

std::vector<LtiGraded> LtiStore::graded_without_score(std::size_t limit) {
    std::lock_guard<std::mutex> lock(mutex_);
    // The grade is the GPU's where the attempt has a GPU lane, else the simulator's.
    Statement select(
        db_,
        "SELECT l.attempt, l.platform, l.subject, l.lineitem, j.verdict, j.score, j.max_score, "
        "j.summary, j.finished_at FROM lti_attempts l JOIN jobs j ON j.attempt = l.attempt AND "
        "j.lane = (SELECT MIN(lane) FROM jobs g WHERE g.attempt = l.attempt) "  // 'gpu' < 'sim'
        "WHERE j.state = 'done' AND l.lineitem != '' AND NOT EXISTS (SELECT 1 FROM lti_scores s "
        "WHERE s.attempt = l.attempt) ORDER BY l.attempt LIMIT ?");
    select.bind(1, static_cast<std::int64_t>(limit));
    std::vector<LtiGraded> graded;
    while (select.step()) {
        LtiGraded one;
        one.attempt = select.integer(0);
        one.platform = select.integer(1);
        one.subject = select.text(2);
        one.lineitem = select.text(3);
        one.verdict = select.text(4);
        one.score = select.real(5);
        one.max_score = select.real(6);
        one.summary = select.text(7);
        one.finished_at = select.real(8);
        graded.push_back(one);
    }
    for (LtiGraded& one : graded) {
        Statement best(
            db_,
            "SELECT MAX(j.score) FROM lti_attempts l JOIN jobs j ON j.attempt = l.attempt AND "
            "j.lane = (SELECT MIN(lane) FROM jobs g WHERE g.attempt = l.attempt) WHERE "
            "l.platform = ? AND l.subject = ? AND l.lineitem = ? AND l.attempt <= ? AND j.state = "
            "'done' AND j.verdict != 'ungradable'");
        best.bind(1, one.platform).bind(2, one.subject).bind(3, one.lineitem).bind(4, one.attempt);
        best.step();
        one.best_score = best.is_null(0) ? one.score : best.real(0);
    }
    return graded;
}

void LtiStore::add_score(const LtiGraded& graded, double score, const std::string& state,
                         double now) {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement insert(db_,
                     "INSERT INTO lti_scores(attempt, platform, subject, lineitem, score, "
                     "max_score, comment, state, next_try_at, graded_at, created_at) VALUES(?, ?, "
                     "?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(attempt) DO NOTHING");
    insert.bind(1, graded.attempt).bind(2, graded.platform).bind(3, graded.subject);
    insert.bind(4, graded.lineitem).bind(5, score).bind(6, graded.max_score);
    insert.bind(7, graded.summary).bind(8, state).bind(9, now).bind(10, graded.finished_at);
    insert.bind(11, now);
    insert.step();
}

std::vector<LtiScore> LtiStore::due_scores(double now, std::size_t limit) {
    std::lock_guard<std::mutex> lock(mutex_);
    Transaction transaction(db_);
    // A newer pending score of the same line item is what the platform should end with: the
    // older ones are not posted after it.
    execute(db_,
            "UPDATE lti_scores SET state = 'superseded' WHERE state = 'pending' AND EXISTS "
            "(SELECT 1 FROM lti_scores n WHERE n.platform = lti_scores.platform AND n.subject = "
            "lti_scores.subject AND n.lineitem = lti_scores.lineitem AND n.id > lti_scores.id "
            "AND n.state IN ('pending', 'posted'))");
    Statement select(db_, (std::string("SELECT ") + kScoreColumns +
                           " WHERE state = 'pending' AND next_try_at <= ? ORDER BY id LIMIT ?")
                              .c_str());
    select.bind(1, now).bind(2, static_cast<std::int64_t>(limit));
    std::vector<LtiScore> due;
    while (select.step()) {
        due.push_back(read_score(select));
    }
    transaction.commit();
    return due;
}

void LtiStore::score_posted(std::int64_t id, double now) {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement update(db_,
                     "UPDATE lti_scores SET state = 'posted', posted_at = ?, tries = tries + 1, "
                     "last_error = '' WHERE id = ?");
    update.bind(1, now).bind(2, id);
    update.step();
}

void LtiStore::score_failed(std::int64_t id, const std::string& error, double next_try_at) {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement update(db_,
                     "UPDATE lti_scores SET tries = tries + 1, last_error = ?, next_try_at = ? "
                     "WHERE id = ?");
    update.bind(1, error).bind(2, next_try_at).bind(3, id);
    update.step();
}

std::vector<LtiScore> LtiStore::scores(std::int64_t attempt) {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement select(
        db_, (std::string("SELECT ") + kScoreColumns + " WHERE (? = 0 OR attempt = ?) ORDER BY id")
                 .c_str());
    select.bind(1, attempt).bind(2, attempt);
    std::vector<LtiScore> scores;
    while (select.step()) {
        scores.push_back(read_score(select));
    }
    return scores;
}

std::optional<LtiStore::Standing> LtiStore::standing(std::int64_t platform,
                                                     const std::string& subject) {
    std::lock_guard<std::mutex> lock(mutex_);
    Statement person(db_,
                     "SELECT p.login FROM lti_users u JOIN people p ON p.id = u.person WHERE "
                     "u.platform = ? AND u.subject = ?");
    person.bind(1, platform).bind(2, subject);
    if (!person.step()) {
        return std::nullopt;
    }
    Standing standing;
    standing.login = person.text(0);
    Statement counts(db_,
                     "SELECT COUNT(*), MAX(s.score), MAX(s.max_score) FROM lti_attempts l LEFT "
                     "JOIN lti_scores s ON s.attempt = l.attempt AND s.state != 'skipped' WHERE "
                     "l.platform = ? AND l.subject = ?");
    counts.bind(1, platform).bind(2, subject);
    counts.step();
    standing.attempts = counts.integer(0);
    standing.best = counts.real(1);
    standing.max_score = counts.real(2);
    Statement last(db_,
                   "SELECT state FROM lti_scores WHERE platform = ? AND subject = ? ORDER BY id "
                   "DESC LIMIT 1");
    last.bind(1, platform).bind(2, subject);
    if (last.step()) {
        standing.last_score_state = last.text(0);
    }
    return standing;
}

}  // namespace grader::serve
