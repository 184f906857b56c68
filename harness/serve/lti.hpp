#pragma once

// `grader serve` as an LTI 1.3 tool (1EdTech's LTI Advantage): a course's LMS launches it with
// the student signed in, reads nothing from it but its keys, and receives every graded attempt's
// score in its gradebook. Tokens stay for courses without an LMS.
//
//   GET|POST /lti/login     OIDC login initiation: the platform names itself (iss, client_id)
//                           and the user (login_hint); the browser goes on to the platform's
//                           authorization endpoint with a state (also its cookie) and a nonce.
//   POST     /lti/launch    the platform's id_token: its RS256 signature checked against the
//                           platform's JWKS (a new kid is fetched: key rotation), then iss,
//                           aud/azp, exp/iat, the nonce (once), the deployment, the message type
//                           and version. A launch opens a session for the page (a token in the
//                           URL's fragment, which no server sees) as the student or, for the
//                           LTI vocabulary's instructor roles, as the instructor. Any check that
//                           fails refuses it in one line, with nothing recorded.
//   GET      /lti/jwks      the tool's public key: platforms check its signed requests with it.
//   GET      /api/lti/roster   (an instructor's session) the course's members, read by NRPS.
//
// Scores: each attempt made in a launch, once graded (on the GPU where the service has one, else
// on the simulator), is posted to the launch's line item by AGS (a client-credentials token got
// with a JWT signed by the tool's key, then POST .../scores): the best score so far or the
// latest, as the instructor chose. An outbox in the state file keeps each until the platform
// accepts it, retried with backoff; a restart loses none. An ungradable grade (the machine's
// fault) is not posted.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "serve/http_messages.hpp"
#include "serve/lti_store.hpp"
#include "serve/service.hpp"
#include "serve/store.hpp"

namespace grader::serve {

class Service;

// Which score a student's line item shows: their best graded attempt's, or their latest's.
enum class ScorePolicy { best, latest };
const char* to_string(ScorePolicy policy);
std::optional<ScorePolicy> score_policy_from_string(std::string_view text);

struct LtiOptions {
    // Where platforms and browsers reach the tool, as they see it
    // ("https://gpu.course.edu/grader"): the redirect_uri of its logins. Empty: http:// and the
    // request's Host.
    std::string public_url;
    ScorePolicy policy = ScorePolicy::best;
    double session_seconds = 8 * 3600.0;  // how long a launch's page stays signed in
    double login_seconds = 600.0;         // from login initiation to launch, at most
    unsigned leeway_seconds = 60;         // clock skew allowed on exp, nbf and iat
    double http_seconds = 20.0;           // each request to a platform, at most
    // An unknown kid fetches the platform's JWKS again at most this often, so that forged kids
    // cannot make the tool hammer the platform.
    double jwks_refetch_seconds = 5.0;
    // Logins begun and not yet launched that the state file keeps, the newest: anyone may begin
    // one (POST /lti/login with the course's public issuer), so they are bounded (about 20 MB).
    std::size_t most_pending_logins = 100000;
    double retry_first_seconds = 2.0;   // a refused score is tried again after this, doubling
    double retry_most_seconds = 600.0;  // ... up to this
    double poll_seconds = 0.5;          // how often finished grades are looked for
    std::function<void(const std::string&)> log;
};

// The tool's private key (PEM), made at first in STATE/lti/tool-key.pem (mode 0600; the folder
// 0700). StoreError where it cannot be made or read, or others may read it.
std::string tool_private_key(const std::filesystem::path& state_dir);

class Lti {
public:
    // Opens the LTI tables of the service's state file and the tool's key (made at first, in
    // STATE/lti/tool-key.pem, mode 0600). Throws StoreError, or lti::JwtError where this build
    // has no cpp-jwt.
    Lti(Service& service, LtiOptions options);
    ~Lti();  // stop()
    Lti(const Lti&) = delete;
    Lti& operator=(const Lti&) = delete;

    // Starts posting scores (the outbox left by an earlier run first); stop() ends it, once.
    void start();
    void stop();

    // /lti/login, /lti/launch, /lti/jwks; nullopt for any other path.
    std::optional<ApiResponse> handle(const ApiRequest& request, double now);

    // A launch's session token ("gl-" and 48 hex digits), as the page sends it.
    static bool is_session_token(std::string_view token);
    // The person a session is, in the role its launch gave; ServiceError(401) where it is unknown
    // or has expired.
    Person authenticate(const std::string& token, double now);
    // An attempt made in a launch's session: its score goes to that launch's line item.
    void attempt_made(const std::string& token, const Attempt& attempt, double now);
    // For /api/me: the launch's exercise, course and where its score goes; null for a token.
    nlohmann::json describe(const std::string& token, double now);
    // The course's members by NRPS, each with their attempts and best score here (an
    // instructor's session only; ServiceError otherwise).
    nlohmann::json roster(const std::string& token, double now);

    // The tool's public key set, as GET /lti/jwks answers it.
    nlohmann::json jwks() const;
    LtiStore& store() { return *store_; }

    // Posts what is due now (the score thread's one turn; the tests call it too). Returns how
    // many scores were accepted.
    int post_due_scores(double now);

private:
    ApiResponse login(const ApiRequest& request, const std::map<std::string, std::string>& form,
                      double now);
    ApiResponse launch(const ApiRequest& request, const std::map<std::string, std::string>& form,
                       double now);
    std::string platform_key(const LtiPlatform& platform, const std::string& kid, double now);
    std::string access_token(const LtiPlatform& platform, const std::string& scope, double now);
    std::string public_url(const ApiRequest& request) const;
    void score_loop();

    Service& service_;
    LtiOptions options_;
    std::unique_ptr<LtiStore> store_;
    std::string private_pem_;
    nlohmann::json public_jwk_;

    std::mutex keys_mutex_;
    // Each platform's keys by kid (PEM), and when its JWKS was last fetched.
    std::map<std::int64_t, std::map<std::string, std::string>> platform_keys_;
    std::map<std::int64_t, double> keys_fetched_at_;
    // Access tokens by platform and scope, with when each expires.
    std::map<std::pair<std::int64_t, std::string>, std::pair<std::string, double>> tokens_;

    std::mutex wake_mutex_;
    std::condition_variable wake_;
    std::atomic<bool> stopping_{false};
    std::thread thread_;
};

}  // namespace grader::serve
