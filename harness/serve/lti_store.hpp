#pragma once

// LTI 1.3's state, in the service's SQLite file beside store.cpp's tables (its own connection;
// WAL lets both write): the platforms the instructor registered, OIDC logins under way (state and
// nonce, each good once), who each platform's users are here, the sessions a launch opens, which
// attempt was made in which launch, and the outbox of scores for the platforms' gradebooks. A
// score is in the outbox, on disk, before it is posted, and stays until a platform accepted it:
// a restart loses none.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/store.hpp"
#include "serve/tokens.hpp"

struct sqlite3;

namespace grader::serve {

// A platform (an LMS) as its administrator registered this tool there, and the instructor it
// here (`grader lti platform add`).
struct LtiPlatform {
    std::int64_t id = 0;
    std::string issuer;                    // iss of its id_tokens
    std::string client_id;                 // this tool's client_id there: aud of its id_tokens
    std::string name;                      // "Moodle", "Canvas": for people to read
    std::string auth_url;                  // its OIDC authorization endpoint
    std::string token_url;                 // its OAuth 2 token endpoint (AGS, NRPS)
    std::string jwks_url;                  // its public keys
    std::vector<std::string> deployments;  // deployment_id values this tool answers
};

// What a launch established, for as long as its session lasts.
struct LtiSession {
    std::int64_t person = 0;
    std::string login;
    std::string name;
    Role role = Role::student;
    std::int64_t platform = 0;
    std::string subject;  // the platform's user id (sub)
    std::string deployment;
    std::string context;  // the course's id and title on the platform
    std::string context_title;
    std::string resource_link;  // the activity launched: one per exercise
    std::string exercise;
    std::string lineitem;     // AGS: where its scores go; empty where the activity has no grade
    std::string memberships;  // NRPS: where its roster is read; empty where not offered
    double expires_at = 0.0;
};

// A score waiting for a platform: an attempt's grade (the best or latest, as the instructor
// chose) for one student's line item.
struct LtiScore {
    std::int64_t id = 0;
    std::int64_t attempt = 0;
    std::int64_t platform = 0;
    std::string subject;
    std::string lineitem;
    double score = 0.0;
    double max_score = 0.0;
    std::string comment;
    std::string state;  // pending, posted, superseded (a newer score of the same went first)
    int tries = 0;
    double next_try_at = 0.0;
    std::string last_error;
    double graded_at = 0.0;
    double posted_at = 0.0;
};

// An attempt made in a launch whose grade is done and has no score yet.
struct LtiGraded {
    std::int64_t attempt = 0;
    std::int64_t platform = 0;
    std::string subject;
    std::string lineitem;
    std::string verdict;
    double score = 0.0;
    double max_score = 0.0;
    double best_score = 0.0;  // the best graded score of this student's line item, this included
    std::string summary;
    double finished_at = 0.0;
};

class LtiStore {
public:
    // Opens the service's state file (Store made it) and adds the LTI tables where missing.
    explicit LtiStore(const std::filesystem::path& file);
    ~LtiStore();
    LtiStore(const LtiStore&) = delete;
    LtiStore& operator=(const LtiStore&) = delete;

    // Platforms, one per (issuer, client_id); adding one again replaces it.
    std::int64_t save_platform(const LtiPlatform& platform);
    std::vector<LtiPlatform> platforms();
    std::optional<LtiPlatform> platform(std::int64_t id);
    bool remove_platform(const std::string& issuer, const std::string& client_id);

    // An OIDC login: its state (the browser's cookie names it too) and nonce.
    void begin_login(const std::string& state, const std::string& nonce, std::int64_t platform,
                     double now);
    struct Login {
        std::string nonce;
        std::int64_t platform = 0;
        double created_at = 0.0;
    };
    std::optional<Login> login(const std::string& state);
    // Spends the login and its nonce together; false where either was spent already (a replay).
    // Logins older than `older_than` are dropped meanwhile.
    bool finish_login(const std::string& state, const std::string& nonce, double now,
                      double older_than);

    // The person a platform's user is here, made on their first launch. Their login is the
    // platform's username where it gives one, else their email or id; never another person's.
    Person person_for(std::int64_t platform, const std::string& subject,
                      const std::string& wanted_login, const std::string& name, double now);

    // Sessions, by the SHA-256 of their token (the token itself is only the browser's).
    void open_session(const TokenHash& token, const LtiSession& session);
    std::optional<LtiSession> session(const TokenHash& token, double now);

    // An attempt made in a launch: its score goes to this student's line item.
    void link_attempt(std::int64_t attempt, const LtiSession& session);
    // Attempts whose grade (the GPU's where the attempt has one, else the simulator's) is done and
    // which have no score yet, oldest first.
    std::vector<LtiGraded> graded_without_score(std::size_t limit);
    // The score of an attempt for the outbox (state "pending"), or "skipped" where its grade was
    // the machine's fault (ungradable): nothing is posted for it.
    void add_score(const LtiGraded& graded, double score, const std::string& state, double now);
    // Pending scores due by `now`, the newest of each student's line item; older pending ones of
    // the same line item are superseded by it.
    std::vector<LtiScore> due_scores(double now, std::size_t limit);
    void score_posted(std::int64_t id, double now);
    void score_failed(std::int64_t id, const std::string& error, double next_try_at);
    std::vector<LtiScore> scores(std::int64_t attempt = 0);
    // Per person: attempts made through LTI and the best score (the instructor's roster).
    struct Standing {
        std::string login;
        std::int64_t attempts = 0;
        double best = 0.0;
        double max_score = 0.0;
        std::string last_score_state;
    };
    std::optional<Standing> standing(std::int64_t platform, const std::string& subject);

private:
    std::mutex mutex_;
    sqlite3* db_ = nullptr;
};

}  // namespace grader::serve
