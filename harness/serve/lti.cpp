#include "serve/lti.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <exception>
#include <stdexcept>
#include <vector>

#include "common/files.hpp"
#include "exercise/exercise.hpp"
#include "serve/http_client.hpp"
#include "serve/lti_jwt.hpp"
#include "serve/service.hpp"
#include "serve/tokens.hpp"
#include "text/text_safety.hpp"

namespace grader::serve {
namespace fs = std::filesystem;
namespace {

// The claims of LTI 1.3 (1EdTech's LTI Core, AGS and NRPS specifications).
constexpr const char* kClaim = "https://purl.imsglobal.org/spec/lti/claim/";
constexpr const char* kAgsClaim = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint";
constexpr const char* kNrpsClaim =
    "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice";
constexpr const char* kScoreScope = "https://purl.imsglobal.org/spec/lti-ags/scope/score";
constexpr const char* kRosterScope =
    "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly";
constexpr const char* kRoleVocabulary = "http://purl.imsglobal.org/vocab/lis/v2/";
constexpr const char* kSessionPrefix = "gl-";
constexpr const char* kKeyFile = "tool-key.pem";
constexpr std::size_t kRosterPages = 50;

// A launch refused: the status, and the one line the browser shows and the log keeps.
class Refusal : public std::runtime_error {
public:
    Refusal(int status, const std::string& why) : std::runtime_error(why), status_(status) {}
    int status() const { return status_; }

private:
    int status_;
};

std::string claim(const char* name) {
    return std::string(kClaim) + name;
}

std::string string_claim(const nlohmann::json& claims, const std::string& name) {
    const auto found = claims.find(name);
    return found != claims.end() && found->is_string() ? found->get<std::string>() : std::string();
}

std::string member_string(const nlohmann::json& object, const char* name) {
    if (!object.is_object()) {
        return {};
    }
    return string_claim(object, name);
}

std::string random_hex() {
    return new_token().substr(3);  // 192 random bits
}

std::string percent_encode(const std::string& text) {
    std::string out;
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (std::isalnum(byte) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
            out += c;
        } else {
            char escaped[4];
            std::snprintf(escaped, sizeof escaped, "%%%02X", byte);
            out += escaped;
        }
    }
    return out;
}

std::string form_body(const std::vector<std::pair<std::string, std::string>>& fields) {
    std::string body;
    for (const auto& [name, value] : fields) {
        body += (body.empty() ? "" : "&") + percent_encode(name) + "=" + percent_encode(value);
    }
    return body;
}

std::map<std::string, std::string> cookies(const ApiRequest& request) {
    std::map<std::string, std::string> found;
    const auto header = request.headers.find("cookie");
    if (header == request.headers.end()) {
        return found;
    }
    std::size_t at = 0;
    const std::string& text = header->second;
    while (at < text.size()) {
        const std::size_t end = std::min(text.find(';', at), text.size());
        std::string pair = text.substr(at, end - at);
        pair.erase(0, pair.find_first_not_of(' '));
        const std::size_t equals = pair.find('=');
        if (equals != std::string::npos) {
            found[pair.substr(0, equals)] = pair.substr(equals + 1);
        }
        at = end + 1;
    }
    return found;
}

// An absolute URL as the HTTP client takes it: the server, and the path with its query.
std::pair<ServerUrl, std::string> split_url(const std::string& url) {
    const std::size_t question = url.find('?');
    const std::string query = question == std::string::npos ? "" : url.substr(question);
    ServerUrl server = parse_server_url(url.substr(0, question));
    return {server, query};
}

// AGS's line item URL with /scores added to its path, before any query.
std::string scores_url(const std::string& lineitem) {
    const std::size_t question = lineitem.find('?');
    std::string path = lineitem.substr(0, question);
    while (!path.empty() && path.back() == '/') {
        path.pop_back();
    }
    return path + "/scores" + (question == std::string::npos ? "" : lineitem.substr(question));
}

HttpReply call(const std::string& url, const std::string& method,
               const std::vector<std::pair<std::string, std::string>>& headers,
               const std::string& body, double seconds) {
    const auto [server, query] = split_url(url);
    return http_request(server, method, query, headers, body, seconds);
}

std::string iso8601(double seconds) {
    const auto whole = static_cast<std::time_t>(seconds);
    std::tm utc{};
    ::gmtime_r(&whole, &utc);
    char text[40];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
    char millis[8];
    std::snprintf(millis, sizeof millis, ".%03dZ",
                  static_cast<int>((seconds - static_cast<double>(whole)) * 1000.0) % 1000);
    return std::string(text) + millis;
}

ApiResponse plain(int status, const std::string& text) {
    ApiResponse response;
    response.status = status;
    response.content_type = "text/plain; charset=utf-8";
    response.body = text + "\n";
    return response;
}

// Roles of the LTI vocabulary (lis v2) that see the instructor's view: the course's instructors,
// teaching assistants, content developers and administrators, and the institution's or system's
// administrators. Anything else (Learner, Mentor, a role of another vocabulary) is a student.
bool instructor_role(const nlohmann::json& roles) {
    if (!roles.is_array()) {
        return false;
    }
    for (const auto& role : roles) {
        if (!role.is_string()) {
            continue;
        }
        const std::string text = role.get<std::string>();
        if (text.rfind(kRoleVocabulary, 0) != 0) {
            continue;
        }
        const std::string rest = text.substr(std::string(kRoleVocabulary).size());
        if (rest == "membership#Instructor" || rest == "membership#Administrator" ||
            rest == "membership#ContentDeveloper" ||
            rest == "membership/Instructor#TeachingAssistant" ||
            rest == "institution/person#Administrator" || rest == "system/person#Administrator") {
            return true;
        }
    }
    return false;
}

// The login a platform's user gets here: their username on the platform where it says one
// (Moodle's ext claim, OIDC's preferred_username), else their email, else their id there.
std::string wanted_login(const nlohmann::json& claims, const std::string& subject) {
    std::string login =
        member_string(claims.value(claim("ext"), nlohmann::json()), "user_username");
    if (login.empty()) {
        login = string_claim(claims, "preferred_username");
    }
    if (login.empty()) {
        login = member_string(claims.value(claim("lis"), nlohmann::json()), "person_sourcedid");
    }
    if (login.empty()) {
        login = string_claim(claims, "email");
    }
    if (login.empty()) {
        login = "lti-" + subject;
    }
    return text::shorten(text::visible_line(login), 64);
}

std::string display_name(const nlohmann::json& claims) {
    std::string name = string_claim(claims, "name");
    if (name.empty()) {
        name = string_claim(claims, "given_name");
        const std::string family = string_claim(claims, "family_name");
        name += (name.empty() || family.empty() ? "" : " ") + family;
    }
    return text::shorten(text::visible_line(name), 120);
}

// The exercise a resource link is: its custom parameter exercise=ID, else ?exercise=ID on its
// target_link_uri, else the service's first.
std::string launched_exercise(const nlohmann::json& claims) {
    std::string id = member_string(claims.value(claim("custom"), nlohmann::json()), "exercise");
    if (id.empty()) {
        const std::string target = string_claim(claims, claim("target_link_uri"));
        const std::size_t at = target.find("exercise=");
        if (at != std::string::npos && at > 0 && (target[at - 1] == '?' || target[at - 1] == '&')) {
            id = target.substr(at + 9, target.find('&', at) - (at + 9));
        }
    }
    return id;
}

// The platform's authorization endpoint said no (OIDC's error response): refused, saying why.
void refuse_platform_error(const std::map<std::string, std::string>& form) {
    const auto error = form.find("error");
    if (error == form.end()) {
        return;
    }
    const auto detail = form.find("error_description");
    throw Refusal(401,
                  "the platform refused the sign-in: " +
                      text::shorten(text::visible_line(error->second), 60) +
                      (detail == form.end()
                           ? std::string()
                           : " (" + text::shorten(text::visible_line(detail->second), 200) + ")"));
}

// An id_token's verified claims are this launch's: from the platform whose login it ends, for
// this tool, issued just now, with the login's nonce.
void check_claims_are_this_launchs(const nlohmann::json& claims, const LtiPlatform& platform,
                                   const LtiOptions& options, const std::string& nonce,
                                   double now) {
    if (string_claim(claims, "iss") != platform.issuer) {
        throw Refusal(401, "its issuer (iss) is not the platform whose login it ends");
    }
    const nlohmann::json audience = claims.value("aud", nlohmann::json());
    const bool ours = audience == platform.client_id ||
                      (audience.is_array() && std::find(audience.begin(), audience.end(),
                                                        platform.client_id) != audience.end());
    if (!ours) {
        throw Refusal(401, "its audience (aud) is not this tool's client_id");
    }
    if ((audience.is_array() && audience.size() > 1) || claims.contains("azp")) {
        if (string_claim(claims, "azp") != platform.client_id) {
            throw Refusal(401, "its authorized party (azp) is not this tool's client_id");
        }
    }
    if (!claims.contains("exp") || !claims["exp"].is_number()) {
        throw Refusal(401, "its id_token has no expiry (exp)");
    }
    if (!claims.contains("iat") || !claims["iat"].is_number() ||
        claims["iat"].get<double>() > now + options.leeway_seconds ||
        claims["iat"].get<double>() < now - options.login_seconds) {
        throw Refusal(401, "its id_token was not issued just now (iat)");
    }
    if (string_claim(claims, "nonce") != nonce) {
        throw Refusal(401, "its nonce is not the one this login sent");
    }
}

// The session a resource link launch opens, from its claims (its person and exercise apart):
// refused where it is not an LTI 1.3.0 resource link launch of a registered deployment, or names
// no user or link.
LtiSession launch_session(const nlohmann::json& claims, const LtiPlatform& platform) {
    const std::string deployment = string_claim(claims, claim("deployment_id"));
    if (std::find(platform.deployments.begin(), platform.deployments.end(), deployment) ==
        platform.deployments.end()) {
        throw Refusal(401, "its deployment '" + text::shorten(text::visible_line(deployment), 100) +
                               "' is not one registered for this platform");
    }
    const std::string type = string_claim(claims, claim("message_type"));
    if (type != "LtiResourceLinkRequest") {
        throw Refusal(400, "its message type '" + text::shorten(text::visible_line(type), 60) +
                               "' is not a resource link launch (LtiResourceLinkRequest)");
    }
    if (string_claim(claims, claim("version")) != "1.3.0") {
        throw Refusal(400, "it is not LTI version 1.3.0");
    }
    LtiSession session;
    session.subject = string_claim(claims, "sub");
    if (session.subject.empty()) {
        throw Refusal(400, "it names no user (sub): anonymous launches are not graded");
    }
    const nlohmann::json link = claims.value(claim("resource_link"), nlohmann::json());
    session.resource_link = member_string(link, "id");
    if (session.resource_link.empty()) {
        throw Refusal(400, "it names no resource link");
    }
    session.role = instructor_role(claims.value(claim("roles"), nlohmann::json()))
                       ? Role::instructor
                       : Role::student;
    session.platform = platform.id;
    session.deployment = deployment;
    const nlohmann::json context = claims.value(claim("context"), nlohmann::json());
    session.context = member_string(context, "id");
    session.context_title = text::shorten(text::visible_line(member_string(context, "title").empty()
                                                                 ? member_string(context, "label")
                                                                 : member_string(context, "title")),
                                          200);
    const nlohmann::json ags = claims.value(kAgsClaim, nlohmann::json());
    const nlohmann::json scopes =
        ags.is_object() ? ags.value("scope", nlohmann::json()) : nlohmann::json();
    if (scopes.is_array() && std::find(scopes.begin(), scopes.end(), kScoreScope) != scopes.end()) {
        session.lineitem = member_string(ags, "lineitem");
    }
    session.memberships =
        member_string(claims.value(kNrpsClaim, nlohmann::json()), "context_memberships_url");
    return session;
}

std::string read_key_file(const fs::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        return {};
    }
    const Descriptor held(fd);
    struct stat status {};
    if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
        throw StoreError("the tool's key " + text::visible_line(path.string()) +
                         " is not a plain file");
    }
    if ((status.st_mode & 077) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(status.st_mode & 0777));
        throw StoreError("the tool's key " + text::visible_line(path.string()) +
                         " may be read by others (mode " + mode +
                         "): chmod 600 it, or remove it for a new one (then register the new "
                         "key with every platform)");
    }
    std::string pem;
    char buffer[4096];
    ssize_t got = 0;
    while ((got = ::read(fd, buffer, sizeof buffer)) > 0) {
        pem.append(buffer, static_cast<std::size_t>(got));
    }
    return pem;
}

}  // namespace

std::string tool_private_key(const fs::path& state_dir) {
    const fs::path folder = state_dir / "lti";
    std::string why;
    if (!open_private_folder(folder, why).valid()) {
        throw StoreError(why);
    }
    const fs::path key_file = folder / kKeyFile;
    std::string pem = read_key_file(key_file);
    if (pem.empty()) {
        pem = lti::new_private_key_pem();
        write_file_atomically(key_file, pem, Sharing::owner_only);
    }
    return pem;
}

const char* to_string(ScorePolicy policy) {
    return policy == ScorePolicy::latest ? "latest" : "best";
}

std::optional<ScorePolicy> score_policy_from_string(std::string_view text) {
    if (text == "best") {
        return ScorePolicy::best;
    }
    if (text == "latest") {
        return ScorePolicy::latest;
    }
    return std::nullopt;
}

Lti::Lti(Service& service, LtiOptions options) : service_(service), options_(std::move(options)) {
    if (!lti::jwt_available()) {
        throw lti::JwtError(lti::jwt_missing_reason());
    }
    private_pem_ = tool_private_key(service_.options().state_dir);
    public_jwk_ = lti::public_jwk(private_pem_);
    store_ = std::make_unique<LtiStore>(service_.options().state_dir / "state.sqlite");
}

Lti::~Lti() {
    stop();
}

void Lti::start() {
    thread_ = std::thread([this] { score_loop(); });
}

void Lti::stop() {
    if (stopping_.exchange(true)) {
        return;
    }
    {
        std::lock_guard<std::mutex> lock(wake_mutex_);
        wake_.notify_all();
    }
    if (thread_.joinable()) {
        thread_.join();
    }
}

nlohmann::json Lti::jwks() const {
    return {{"keys", nlohmann::json::array({public_jwk_})}};
}

bool Lti::is_session_token(std::string_view token) {
    return token.rfind(kSessionPrefix, 0) == 0;
}

std::string Lti::public_url(const ApiRequest& request) const {
    if (!options_.public_url.empty()) {
        return options_.public_url;
    }
    const auto host = request.headers.find("host");
    return "http://" + (host == request.headers.end() ? std::string("127.0.0.1") : host->second);
}

std::optional<ApiResponse> Lti::handle(const ApiRequest& request, double now) {
    const std::size_t question = request.target.find('?');
    const std::string path = request.target.substr(0, question);
    std::map<std::string, std::string> form = question == std::string::npos
                                                  ? std::map<std::string, std::string>()
                                                  : parse_form(request.target.substr(question + 1));
    if (request.method == "POST") {
        for (auto& [name, value] : parse_form(request.body)) {
            form[name] = value;
        }
    }
    if (path == "/lti/jwks" && (request.method == "GET" || request.method == "HEAD")) {
        ApiResponse response;
        response.body = text::json_text(jwks(), 2) + "\n";
        return response;
    }
    if (path == "/lti/login" && (request.method == "GET" || request.method == "POST")) {
        return login(request, form, now);
    }
    if (path == "/lti/launch" && request.method == "POST") {
        return launch(request, form, now);
    }
    if (path.rfind("/lti/", 0) == 0) {
        return plain(404, "no such LTI endpoint: /lti/login, /lti/launch and /lti/jwks are");
    }
    return std::nullopt;
}

ApiResponse Lti::login(const ApiRequest& request, const std::map<std::string, std::string>& form,
                       double now) {
    const auto field = [&](const char* name) {
        const auto found = form.find(name);
        return found == form.end() ? std::string() : found->second;
    };
    const std::string issuer = field("iss");
    const std::string client_id = field("client_id");
    const std::string login_hint = field("login_hint");
    if (issuer.empty() || login_hint.empty()) {
        return plain(400, "LTI login refused: it names no issuer (iss) or no user (login_hint)");
    }
    std::vector<LtiPlatform> matching;
    for (const LtiPlatform& platform : store_->platforms()) {
        if (platform.issuer == issuer && (client_id.empty() || platform.client_id == client_id)) {
            matching.push_back(platform);
        }
    }
    if (matching.size() != 1) {
        const std::string why =
            matching.empty()
                ? "no platform '" + text::shorten(text::visible_line(issuer), 200) +
                      "' with this client_id is registered here (grader lti platform add)"
                : "several registrations of '" + text::shorten(text::visible_line(issuer), 200) +
                      "' are here, and the login names no client_id";
        if (options_.log) {
            options_.log("LTI login refused: " + why);
        }
        return plain(400, "LTI login refused: " + why);
    }
    const LtiPlatform& platform = matching.front();
    const std::string state = random_hex();
    const std::string nonce = random_hex();
    store_->begin_login(state, nonce, platform.id, now);
    std::vector<std::pair<std::string, std::string>> query = {
        {"scope", "openid"},
        {"response_type", "id_token"},
        {"response_mode", "form_post"},
        {"prompt", "none"},
        {"client_id", platform.client_id},
        {"redirect_uri", public_url(request) + "/lti/launch"},
        {"login_hint", login_hint},
        {"state", state},
        {"nonce", nonce}};
    if (const std::string hint = field("lti_message_hint"); !hint.empty()) {
        query.emplace_back("lti_message_hint", hint);
    }
    ApiResponse response = plain(302, "to the platform's sign-in");
    response.headers.emplace_back(
        "Location", platform.auth_url +
                        (platform.auth_url.find('?') == std::string::npos ? "?" : "&") +
                        form_body(query));
    // The browser that began the login must be the one that ends it (a launch posted from
    // elsewhere with a stolen state lacks it). SameSite=None lets the platform's cross-site form
    // post bring it back; browsers take that only with Secure, i.e. over HTTPS.
    const bool https = public_url(request).rfind("https://", 0) == 0;
    response.headers.emplace_back(
        "Set-Cookie", "lti-state-" + state + "=1; Path=/; Max-Age=" +
                          std::to_string(static_cast<long>(options_.login_seconds)) + "; HttpOnly" +
                          (https ? "; SameSite=None; Secure" : "; SameSite=Lax"));
    return response;
}

ApiResponse Lti::launch(const ApiRequest& request, const std::map<std::string, std::string>& form,
                        double now) {
    try {
        const auto id_token = form.find("id_token");
        const auto state = form.find("state");
        refuse_platform_error(form);
        if (id_token == form.end() || id_token->second.empty()) {
            throw Refusal(400, "it carries no id_token");
        }
        if (state == form.end() || state->second.empty()) {
            throw Refusal(400, "it carries no state");
        }
        const auto began = store_->login(state->second);
        if (!began || began->created_at < now - options_.login_seconds) {
            throw Refusal(401, "its state is not a login begun here in the last " +
                                   std::to_string(static_cast<long>(options_.login_seconds / 60)) +
                                   " minutes, or was used already (a launch is good once)");
        }
        if (cookies(request).count("lti-state-" + state->second) == 0) {
            throw Refusal(401,
                          "this browser did not begin the login (its state cookie is missing): "
                          "open the activity again from the course");
        }
        const auto platform = store_->platform(began->platform);
        if (!platform) {
            throw Refusal(401, "its platform is no longer registered here");
        }
        nlohmann::json header;
        try {
            header = lti::unverified_header(id_token->second);
        } catch (const lti::JwtError& error) {
            throw Refusal(401, std::string("its id_token: ") + error.what());
        }
        const std::string kid = member_string(header, "kid");
        if (kid.empty()) {
            throw Refusal(401, "its id_token's header names no key (kid)");
        }
        const std::string key = platform_key(*platform, kid, now);
        nlohmann::json claims;
        try {
            claims = lti::verified_claims(id_token->second, key, options_.leeway_seconds);
        } catch (const lti::JwtError& error) {
            throw Refusal(401, std::string("its id_token: ") + error.what());
        }
        check_claims_are_this_launchs(claims, *platform, options_, began->nonce, now);
        LtiSession session = launch_session(claims, *platform);
        session.exercise = launched_exercise(claims);
        if (session.exercise.empty()) {
            session.exercise = service_.options().exercises.front().id;
        } else if (service_.exercise(session.exercise) == nullptr) {
            throw Refusal(400, "its exercise '" +
                                   text::shorten(text::visible_line(session.exercise), 80) +
                                   "' is not one this service grades");
        }
        // Every check passed: only now is anything recorded, and the login spent with its nonce.
        if (!store_->finish_login(state->second, began->nonce, now, now - options_.login_seconds)) {
            throw Refusal(401, "its login or nonce was used already (a launch is good once)");
        }
        const Person person =
            store_->person_for(platform->id, session.subject, wanted_login(claims, session.subject),
                               display_name(claims), now);
        session.person = person.id;
        session.expires_at = now + options_.session_seconds;
        const std::string token = kSessionPrefix + random_hex();
        store_->open_session(hash_token(token), session);
        ApiResponse response = plain(303, "to the page");
        // The page takes the session from the fragment, which no server or log sees.
        response.headers.emplace_back("Location", "../#lti=" + token);
        response.headers.emplace_back(
            "Set-Cookie", "lti-state-" + state->second + "=; Path=/; Max-Age=0; HttpOnly");
        return response;
    } catch (const Refusal& refusal) {
        if (options_.log) {
            options_.log(std::string("LTI launch refused: ") + refusal.what());
        }
        return plain(refusal.status(), std::string("LTI launch refused: ") + refusal.what());
    }
}

std::string Lti::platform_key(const LtiPlatform& platform, const std::string& kid, double now) {
    std::lock_guard<std::mutex> lock(keys_mutex_);
    auto& keys = platform_keys_[platform.id];
    if (const auto found = keys.find(kid); found != keys.end()) {
        return found->second;
    }
    // A kid not seen yet: the platform may have rotated its key, and its JWKS is fetched again.
    const auto fetched = keys_fetched_at_.find(platform.id);
    if (fetched == keys_fetched_at_.end() ||
        now - fetched->second >= options_.jwks_refetch_seconds) {
        keys_fetched_at_[platform.id] = now;
        try {
            const HttpReply reply = call(platform.jwks_url, "GET", {{"Accept", "application/json"}},
                                         "", options_.http_seconds);
            const auto set = nlohmann::json::parse(reply.body, nullptr, false);
            if (reply.status != 200 || !set.is_object() || !set.contains("keys") ||
                !set["keys"].is_array()) {
                throw Refusal(503, "the platform's keys (JWKS) could not be read: it answered " +
                                       std::to_string(reply.status));
            }
            std::map<std::string, std::string> fresh;
            for (const auto& jwk : set["keys"]) {
                const std::string id = member_string(jwk, "kid");
                try {
                    if (!id.empty()) {
                        fresh[id] = lti::public_pem_from_jwk(jwk);
                    }
                } catch (const lti::JwtError& error) {
                    if (options_.log) {
                        options_.log("the platform " + platform.issuer + "'s key " +
                                     text::visible_line(id) + " is not used: " + error.what());
                    }
                }
            }
            keys = std::move(fresh);
        } catch (const HttpClientError& error) {
            throw Refusal(503, std::string("the platform's keys (JWKS) could not be fetched: ") +
                                   error.what());
        }
    }
    if (const auto found = keys.find(kid); found != keys.end()) {
        return found->second;
    }
    throw Refusal(401, "its id_token is signed with a key ('" +
                           text::shorten(text::visible_line(kid), 80) +
                           "') that the platform's JWKS does not hold");
}

Person Lti::authenticate(const std::string& token, double now) {
    const auto session = store_->session(hash_token(token), now);
    if (!session) {
        throw ServiceError(401,
                           "this course session has ended or is not known here: open the "
                           "activity again from the course");
    }
    Person person;
    person.id = session->person;
    person.login = session->login;
    person.name = session->name;
    person.role = session->role;
    return person;
}

void Lti::attempt_made(const std::string& token, const Attempt& attempt, double now) {
    if (!is_session_token(token)) {
        return;
    }
    const auto session = store_->session(hash_token(token), now);
    // Scores go only where the launch's activity is this exercise: a resource link per exercise.
    if (session && session->exercise == attempt.exercise) {
        store_->link_attempt(attempt.id, *session);
    }
    std::lock_guard<std::mutex> lock(wake_mutex_);
    wake_.notify_all();
}

nlohmann::json Lti::describe(const std::string& token, double now) {
    if (!is_session_token(token)) {
        return nullptr;
    }
    const auto session = store_->session(hash_token(token), now);
    if (!session) {
        return nullptr;
    }
    const auto platform = store_->platform(session->platform);
    nlohmann::json described = {
        {"platform", platform ? platform->name : std::string()},
        {"course", session->context_title},
        {"exercise", session->exercise},
        {"gradebook", !session->lineitem.empty()},
        {"policy", to_string(options_.policy)},
        {"roster", session->role == Role::instructor && !session->memberships.empty()}};
    if (const auto standing = store_->standing(session->platform, session->subject)) {
        described["last_score"] = standing->last_score_state;
    }
    return described;
}

std::string Lti::access_token(const LtiPlatform& platform, const std::string& scope, double now) {
    {
        std::lock_guard<std::mutex> lock(keys_mutex_);
        const auto cached = tokens_.find({platform.id, scope});
        if (cached != tokens_.end() && cached->second.second > now) {
            return cached->second.first;
        }
    }
    // The client-credentials grant with a JWT signed by the tool's key (RFC 7523), as LTI's
    // security framework has it: the platform checks it against the tool's JWKS.
    const nlohmann::json assertion = {{"iss", platform.client_id},
                                      {"sub", platform.client_id},
                                      {"aud", platform.token_url},
                                      {"iat", static_cast<std::int64_t>(now)},
                                      {"exp", static_cast<std::int64_t>(now) + 300},
                                      {"jti", random_hex()}};
    const std::string body = form_body(
        {{"grant_type", "client_credentials"},
         {"client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
         {"client_assertion",
          lti::signed_token(assertion, private_pem_, public_jwk_.value("kid", ""))},
         {"scope", scope}});
    const HttpReply reply = call(
        platform.token_url, "POST",
        {{"Content-Type", "application/x-www-form-urlencoded"}, {"Accept", "application/json"}},
        body, options_.http_seconds);
    const auto answer = nlohmann::json::parse(reply.body, nullptr, false);
    if (reply.status != 200 || !answer.is_object() || !answer.contains("access_token") ||
        !answer["access_token"].is_string()) {
        throw std::runtime_error("the platform's token endpoint answered " +
                                 std::to_string(reply.status) + ": " +
                                 text::shorten(text::visible_line(reply.body), 200));
    }
    const double lasts = answer.contains("expires_in") && answer["expires_in"].is_number()
                             ? answer["expires_in"].get<double>()
                             : 3600.0;
    const std::string token = answer["access_token"].get<std::string>();
    std::lock_guard<std::mutex> lock(keys_mutex_);
    tokens_[{platform.id, scope}] = {token, now + std::max(0.0, lasts - 30.0)};
    return token;
}

int Lti::post_due_scores(double now) {
    for (const LtiGraded& graded : store_->graded_without_score(100)) {
        if (graded.verdict == "ungradable") {
            store_->add_score(graded, 0.0, "skipped", now);
        } else {
            store_->add_score(
                graded, options_.policy == ScorePolicy::best ? graded.best_score : graded.score,
                "pending", now);
        }
    }
    int accepted = 0;
    for (const LtiScore& score : store_->due_scores(now, 50)) {
        if (stopping_) {
            break;
        }
        const double next_try =
            now + std::min(options_.retry_most_seconds,
                           options_.retry_first_seconds * std::pow(2.0, std::min(score.tries, 20)));
        const auto platform = store_->platform(score.platform);
        if (!platform) {
            store_->score_failed(score.id, "its platform is no longer registered", next_try);
            continue;
        }
        try {
            const std::string token = access_token(*platform, kScoreScope, now);
            const nlohmann::json body = {{"userId", score.subject},
                                         {"scoreGiven", score.score},
                                         {"scoreMaximum", score.max_score},
                                         {"activityProgress", "Completed"},
                                         {"gradingProgress", "FullyGraded"},
                                         {"timestamp", iso8601(now)},
                                         {"comment", text::shorten(score.comment, 1000)}};
            const HttpReply reply = call(scores_url(score.lineitem), "POST",
                                         {{"Content-Type", "application/vnd.ims.lis.v1.score+json"},
                                          {"Authorization", "Bearer " + token}},
                                         body.dump(), options_.http_seconds);
            if (reply.status >= 200 && reply.status < 300) {
                store_->score_posted(score.id, now_seconds());  // when the platform said yes
                ++accepted;
                continue;
            }
            if (reply.status == 401 || reply.status == 403) {
                std::lock_guard<std::mutex> lock(keys_mutex_);
                tokens_.erase({platform->id, kScoreScope});
            }
            store_->score_failed(score.id,
                                 "the platform answered " + std::to_string(reply.status) + ": " +
                                     text::shorten(text::visible_line(reply.body), 200),
                                 next_try);
        } catch (const std::exception& error) {
            store_->score_failed(score.id, error.what(), next_try);
        }
    }
    return accepted;
}

void Lti::score_loop() {
    while (!stopping_) {
        try {
            post_due_scores(now_seconds());
        } catch (const std::exception& error) {
            if (options_.log) {
                options_.log(std::string("LTI scores could not be posted: ") + error.what());
            }
        }
        std::unique_lock<std::mutex> lock(wake_mutex_);
        wake_.wait_for(
            lock, std::chrono::milliseconds(static_cast<long>(options_.poll_seconds * 1000.0)));
    }
}

nlohmann::json Lti::roster(const std::string& token, double now) {
    const auto session =
        is_session_token(token) ? store_->session(hash_token(token), now) : std::nullopt;
    if (!session || session->role != Role::instructor) {
        throw ServiceError(403, "the roster is read from the course by an instructor's launch");
    }
    if (session->memberships.empty()) {
        throw ServiceError(404, "the course's platform offers no roster (NRPS) to this tool");
    }
    const auto platform = store_->platform(session->platform);
    if (!platform) {
        throw ServiceError(404, "this course's platform is no longer registered here");
    }
    nlohmann::json members = nlohmann::json::array();
    std::string url = session->memberships;
    try {
        const std::string access = access_token(*platform, kRosterScope, now);
        for (std::size_t page = 0; page < kRosterPages && !url.empty(); ++page) {
            const HttpReply reply =
                call(url, "GET",
                     {{"Accept", "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"},
                      {"Authorization", "Bearer " + access}},
                     "", options_.http_seconds);
            const auto container = nlohmann::json::parse(reply.body, nullptr, false);
            if (reply.status != 200 || !container.is_object() ||
                !container.value("members", nlohmann::json()).is_array()) {
                throw ServiceError(502,
                                   "the course's roster could not be read: the platform "
                                   "answered " +
                                       std::to_string(reply.status));
            }
            for (const auto& member : container["members"]) {
                const std::string user = member_string(member, "user_id");
                nlohmann::json row = {
                    {"user_id", user},
                    {"name", text::visible_line(member_string(member, "name"))},
                    {"email", text::visible_line(member_string(member, "email"))},
                    {"status", member.value("status", "Active")},
                    {"instructor", instructor_role(member.value("roles", nlohmann::json()))}};
                if (const auto standing = store_->standing(platform->id, user)) {
                    row["login"] = standing->login;
                    row["attempts"] = standing->attempts;
                    row["best"] = standing->best;
                    row["max_score"] = standing->max_score;
                    row["score"] = standing->last_score_state;
                } else {
                    row["attempts"] = 0;
                }
                members.push_back(row);
            }
            // The next page, where the platform's Link header names one.
            url.clear();
            const auto link = reply.headers.find("link");
            if (link != reply.headers.end()) {
                const std::size_t next = link->second.find("rel=\"next\"");
                const std::size_t open =
                    next == std::string::npos ? std::string::npos : link->second.rfind('<', next);
                const std::size_t close =
                    open == std::string::npos ? std::string::npos : link->second.find('>', open);
                if (close != std::string::npos) {
                    url = link->second.substr(open + 1, close - open - 1);
                }
            }
        }
    } catch (const ServiceError&) {
        throw;
    } catch (const std::exception& error) {
        if (options_.log) {
            options_.log(std::string("the roster could not be read: ") + error.what());
        }
        throw ServiceError(502, "the course's roster could not be read from the platform");
    }
    return {{"course", session->context_title}, {"members", members}};
}

}  // namespace grader::serve
