#include "serve/api.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/text.hpp"
#include "exercise/exercise.hpp"
#include "model/json.hpp"
#include "model/report.hpp"
#include "report/writers.hpp"
#include "serve/http_messages.hpp"
#include "serve/lti.hpp"
#include "serve/page_assets.hpp"
#include "serve/upload.hpp"
#include "text/text_safety.hpp"

namespace grader::serve {
namespace {

constexpr std::size_t kMaxBuckets = 20000;  // past this, idle buckets are dropped
constexpr std::size_t kListLimit = 200;

ApiResponse json_response(int status, const nlohmann::json& body) {
    ApiResponse response;
    response.status = status;
    response.body = text::json_text(body, 2) + "\n";
    return response;
}

// A whole number as a path or query gives it (an attempt's id, a page's size): digits only, at
// most 18 of them; nullopt otherwise.
std::optional<std::int64_t> whole_number(const std::string& text) {
    if (text.empty() || text.size() > 18 || !std::all_of(text.begin(), text.end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c));
        })) {
        return std::nullopt;
    }
    return std::stoll(text);
}

ApiResponse error_response(int status, const std::string& message, double retry_after = 0.0) {
    ApiResponse response = json_response(status, {{"error", message}, {"status", status}});
    if (retry_after > 0.0) {
        response.headers.emplace_back("Retry-After",
                                      std::to_string(static_cast<long>(std::ceil(retry_after))));
    }
    return response;
}

ApiResponse text_response(std::string content_type, std::string body) {
    ApiResponse response;
    response.content_type = std::move(content_type);
    response.body = std::move(body);
    return response;
}

struct Target {
    std::vector<std::string> path;  // decoded segments
    std::map<std::string, std::string> query;
};

Target parse_target(const std::string& target) {
    Target parsed;
    const std::size_t question = target.find('?');
    const std::string path = target.substr(0, question);
    std::size_t at = 0;
    while (at < path.size()) {
        const std::size_t slash = path.find('/', at);
        const std::string segment =
            path.substr(at, slash == std::string::npos ? slash : slash - at);
        if (!segment.empty()) {
            parsed.path.push_back(percent_decode(segment));
        }
        if (slash == std::string::npos) {
            break;
        }
        at = slash + 1;
    }
    if (question != std::string::npos) {
        parsed.query = parse_form(target.substr(question + 1));
    }
    return parsed;
}

std::string bearer_token(const ApiRequest& request) {
    const auto header = request.headers.find("authorization");
    if (header == request.headers.end()) {
        return {};
    }
    const std::string& value = header->second;
    if (value.size() > 7 &&
        (value.compare(0, 7, "Bearer ") == 0 || value.compare(0, 7, "bearer ") == 0)) {
        std::string token = value.substr(7);
        while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back())) != 0) {
            token.pop_back();
        }
        return token;
    }
    return {};
}

nlohmann::json lane_json(Service& service, const Attempt& attempt, const Job& job) {
    nlohmann::json lane = {{"state", to_string(job.state)},
                           {"enqueued_at", job.enqueued_at},
                           {"started_at", job.started_at},
                           {"finished_at", job.finished_at}};
    if (job.state == JobState::queued) {
        const QueuePlace place = service.store().place(attempt.id, job.lane);
        lane["ahead"] = place.ahead;
        lane["running"] = place.running;
    }
    if (job.state == JobState::done) {
        if (job.services_fault) {
            lane["services_fault"] = true;  // not counted against the student's rate
        }
        lane["verdict"] = job.verdict;
        lane["score"] = job.score;
        lane["max_score"] = job.max_score;
        lane["summary"] = job.summary;
    }
    return lane;
}

// The service's own state, as health() says it: "ok" false while the state cannot be written.
nlohmann::json service_health(Service& service) {
    const ServiceHealth health = service.health();
    nlohmann::json body = {{"ok", health.problem.empty()}};
    if (!health.problem.empty()) {
        body["problem"] = health.problem;
        body["problem_since"] = utc_text(health.since);
        body["unrecorded_grades"] = health.unrecorded;
    }
    if (health.disk_free_mb) {
        body["disk_free_mb"] = std::floor(*health.disk_free_mb);
    }
    return body;
}

std::optional<Lane> lane_of(const std::map<std::string, std::string>& query) {
    const auto lane = query.find("lane");
    return lane == query.end() ? Lane::sim : lane_from_string(lane->second).value_or(Lane::sim);
}

// One request being answered: what was asked, of whom, and (on a person's route) who asks.
struct ApiCall {
    Service& service;
    Lti* lti;
    const ApiRequest& request;
    const Target& target;
    double now;
    std::string token;
    Person person;  // on a route a person calls: the token's, already counted against their rate
};

// Who may call a route: anyone, or only a person a token names (Api::person_asking).
enum class Caller { anyone, person };

using Handler = ApiResponse (*)(ApiCall& call);

struct Route {
    const char* method;   // "GET" (HEAD too), "POST", or "*" for any
    const char* pattern;  // segments; "*" is any one, a last "**" any number (none too)
    Caller caller;
    Handler handler;
};

bool method_matches(const char* route, const std::string& method) {
    const std::string_view wanted(route);
    return wanted == "*" || wanted == method || (wanted == "GET" && method == "HEAD");
}

bool path_matches(std::string_view pattern, const std::vector<std::string>& path) {
    std::size_t at = 0;
    for (std::size_t begin = 1; begin <= pattern.size();) {
        const std::size_t slash = std::min(pattern.find('/', begin), pattern.size());
        const std::string_view segment = pattern.substr(begin, slash - begin);
        begin = slash + 1;
        if (segment.empty()) {
            continue;
        }
        if (segment == "**") {
            return true;
        }
        if (at == path.size() || (segment != "*" && segment != path[at])) {
            return false;
        }
        ++at;
    }
    return at == path.size();
}

ApiResponse page_html(ApiCall&) {
    return text_response("text/html; charset=utf-8", page::kHtml);
}

ApiResponse page_script(ApiCall&) {
    return text_response("text/javascript; charset=utf-8", page::kScript);
}

ApiResponse page_style(ApiCall&) {
    return text_response("text/css; charset=utf-8", page::kStyle);
}

ApiResponse nothing_here(ApiCall&) {
    return error_response(404, "nothing here: the page is at /");
}

ApiResponse no_such_api(ApiCall&) {
    return error_response(404, "no such API: see GET /api/me, /api/attempts");
}

ApiResponse lti_request(ApiCall& call) {
    if (call.lti != nullptr) {
        if (auto answer = call.lti->handle(call.request, call.now)) {
            return *answer;
        }
    }
    return nothing_here(call);
}

ApiResponse health(ApiCall& call) {
    nlohmann::json body = service_health(call.service);
    try {
        const Counts counts = call.service.counts();
        body["queued"] = {{"sim", counts.sim.queued}, {"gpu", counts.gpu.queued}};
        body["running"] = {{"sim", counts.sim.running}, {"gpu", counts.gpu.running}};
    } catch (const StoreError& error) {
        call.service.store_failed(error);
        body = service_health(call.service);
    }
    body["gpu"] = call.service.options().gpu;
    return json_response(200, body);
}

ApiResponse me(ApiCall& call) {
    Service& service = call.service;
    nlohmann::json exercises = nlohmann::json::array();
    for (const Exercise& exercise : service.options().exercises) {
        exercises.push_back({{"id", exercise.id},
                             {"title", exercise.title},
                             {"files", {exercise.submission_source, exercise.submission_answers}}});
    }
    const auto [left, frees_in] = service.rate_left(call.person, call.now);
    nlohmann::json body = {{"login", call.person.login},
                           {"name", call.person.name},
                           {"role", to_string(call.person.role)},
                           {"exercises", exercises},
                           {"gpu", service.options().gpu},
                           // What an upload may be, so a client refuses (and says why) before
                           // it sends what a proxy would cut off.
                           {"upload",
                            {{"max_bytes", service.options().upload.max_total_bytes},
                             {"max_file_bytes", service.options().upload.max_file_bytes},
                             {"max_files", service.options().upload.max_files}}},
                           {"rate",
                            {{"limit", service.options().rate.count},
                             {"window_seconds", service.options().rate.window_seconds},
                             {"left", left},
                             {"next_in_seconds", frees_in}}}};
    if (call.person.role == Role::instructor) {
        body["service"] = service_health(service);
    }
    if (call.lti != nullptr) {
        body["lti"] = call.lti->describe(call.token, call.now);
    }
    return json_response(200, body);
}

ApiResponse lti_roster(ApiCall& call) {
    if (call.lti == nullptr) {
        return no_such_api(call);
    }
    return json_response(200, call.lti->roster(call.token, call.now));
}

ApiResponse submit(ApiCall& call) {
    const auto type = call.request.headers.find("content-type");
    const std::string boundary =
        multipart_boundary(type == call.request.headers.end() ? "" : type->second);
    const Upload upload =
        parse_multipart(call.request.body, boundary, call.service.options().upload);
    const Attempt attempt = call.service.submit(call.person, upload, call.now);
    if (call.lti != nullptr) {
        call.lti->attempt_made(call.token, attempt, call.now);
    }
    return json_response(201, attempt_json(call.service, attempt));
}

ApiResponse attempts_method(ApiCall&) {
    return error_response(405, "attempts are listed (GET) or made (POST)");
}

// Whose attempts a list shows: the caller's; a student's an instructor names (?student=); the
// whole class's (?all, an instructor); 0 is everyone's.
std::int64_t whose_attempts(ApiCall& call) {
    const Person& person = call.person;
    const bool instructor = person.role == Role::instructor;
    const auto& query = call.target.query;
    if (const auto student = query.find("student"); student != query.end()) {
        const auto other = instructor ? call.service.store().person_by_login(student->second)
                                      : std::optional<Person>();
        if (!other && !(student->second == person.login)) {
            throw ServiceError(
                404, "no student '" + text::visible_line(student->second) + "' you may see");
        }
        return other ? other->id : person.id;
    }
    return instructor && query.count("all") != 0 ? 0 : person.id;
}

// A page: the newest `limit` (at most kListLimit) older than `before`; next_before asks for the
// page after it, where there may be one.
ApiResponse list_attempts(ApiCall& call) {
    const std::int64_t whose = whose_attempts(call);
    const auto& query = call.target.query;
    std::int64_t before = 0;
    if (const auto asked = query.find("before"); asked != query.end()) {
        const auto id = whole_number(asked->second);
        if (!id) {
            throw ServiceError(400, "before is an attempt's id, a whole number: got '" +
                                        text::visible_line(asked->second) + "'");
        }
        before = *id;
    }
    std::size_t limit = kListLimit;
    if (const auto asked = query.find("limit"); asked != query.end()) {
        const auto count = whole_number(asked->second);
        if (!count || *count < 1 || *count > static_cast<std::int64_t>(kListLimit)) {
            throw ServiceError(400, "limit is a whole number from 1 to " +
                                        std::to_string(kListLimit) + ": got '" +
                                        text::visible_line(asked->second) + "'");
        }
        limit = static_cast<std::size_t>(*count);
    }
    nlohmann::json list = nlohmann::json::array();
    const auto attempts = call.service.store().attempts(whose, limit, before);
    for (const Attempt& attempt : attempts) {
        list.push_back(attempt_json(call.service, attempt));
    }
    nlohmann::json body = {{"attempts", list}};
    if (attempts.size() == limit) {
        body["next_before"] = attempts.back().id;
    }
    return json_response(200, body);
}

// The attempt /api/attempts/N/... names, where the caller may see it; 404 otherwise.
Attempt attempt_asked(ApiCall& call) {
    const auto id = whole_number(call.target.path[2]);
    if (!id) {
        throw ServiceError(404, "no such attempt");
    }
    return call.service.visible_attempt(call.person, *id);
}

std::string format_asked(const ApiCall& call) {
    const auto& query = call.target.query;
    return query.count("format") != 0 ? query.at("format") : std::string(to_string(Format::html));
}

ApiResponse attempt(ApiCall& call) {
    const Attempt attempt = attempt_asked(call);
    nlohmann::json body = attempt_json(call.service, attempt);
    body["explain"] = call.service.has_explanation(attempt) ? "ready" : "pending";
    return json_response(200, body);
}

// The formats a lane's report is given in (?format=, named as report/formats.cpp names them).
constexpr Format kReportFormats[] = {Format::html, Format::text, Format::json, Format::markdown};

ApiResponse report(ApiCall& call) {
    const Attempt attempt = attempt_asked(call);
    const std::string format = format_asked(call);
    const auto lane = lane_of(call.target.query);
    const auto report = call.service.report(attempt, *lane);
    if (!report) {
        const Job* job = attempt.job(*lane);
        if (job != nullptr && job->state == JobState::done) {
            // Finished without a report: the machine's failure, said in its summary.
            return error_response(404, job->summary);
        }
        return error_response(404, std::string("the ") + to_string(*lane) +
                                       " report of this attempt is not ready yet");
    }
    std::vector<std::string> names;
    for (const Format offered : kReportFormats) {
        if (parse_format(format) == offered) {
            return text_response(content_type(offered),
                                 write_report(*report, offered, ReportOptions{}));
        }
        names.emplace_back(to_string(offered));
    }
    return error_response(400, "format is " + names_or(names));
}

ApiResponse explain(ApiCall& call) {
    const Attempt attempt = attempt_asked(call);
    const std::string format = format_asked(call);
    const auto explanation = call.service.explanation(attempt);
    if (!explanation) {
        return error_response(404, "the lane tables of this attempt are not ready yet");
    }
    const auto asked = parse_format(format);
    if (asked == Format::html) {
        return text_response(content_type(Format::html), write_explanation_html(*explanation));
    }
    if (asked == Format::json) {
        return json_response(200, nlohmann::json(*explanation));
    }
    return text_response(content_type(Format::text), write_explanation_text(*explanation, false));
}

ApiResponse submitted_file(ApiCall& call) {
    const Attempt attempt = attempt_asked(call);
    const std::string& name = call.target.path[4];
    const auto file = call.service.submitted_file(attempt, name);
    if (!file) {
        return error_response(404, "no file of that name in this attempt");
    }
    ApiResponse response = text_response("application/octet-stream", *file);
    response.headers.emplace_back("Content-Disposition", "attachment; filename=\"" + name + "\"");
    return response;
}

// Below an attempt, nothing else: said once the attempt is one the caller may see.
ApiResponse no_such_attempt_api(ApiCall& call) {
    attempt_asked(call);
    return no_such_api(call);
}

// Every route the service answers, the first that matches a request's method and path taking
// it. Below /api/ but health, a route is a person's: an unknown path there is answered 404 only
// to one whose token holds, and counts against their rate.
constexpr Route kRoutes[] = {
    // The page, and LTI's login and launch into it (serve/lti.hpp).
    {"GET", "/", Caller::anyone, page_html},
    {"GET", "/index.html", Caller::anyone, page_html},
    {"GET", "/page.js", Caller::anyone, page_script},
    {"GET", "/page.css", Caller::anyone, page_style},
    {"*", "/lti/**", Caller::anyone, lti_request},
    // The service's state and the queues' lengths; who the token is, the exercises, the rate
    // left; an LTI course's roster.
    {"GET", "/api/health", Caller::anyone, health},
    {"GET", "/api/me", Caller::person, me},
    {"GET", "/api/lti/roster", Caller::person, lti_roster},
    // An attempt made (multipart/form-data: the files or a zip, the exercise); attempts listed,
    // newest first (?student=LOGIN, ?all for an instructor; ?before=ID, ?limit=N).
    {"POST", "/api/attempts", Caller::person, submit},
    {"GET", "/api/attempts", Caller::person, list_attempts},
    {"*", "/api/attempts", Caller::person, attempts_method},
    // One attempt: each lane's state, place, verdict; a lane's report
    // (?lane=sim|gpu&format=html|text|json|markdown); the lane tables of `grader explain`
    // (?format=html|text|json); a file as it was submitted.
    {"GET", "/api/attempts/*", Caller::person, attempt},
    {"GET", "/api/attempts/*/report", Caller::person, report},
    {"GET", "/api/attempts/*/explain", Caller::person, explain},
    {"GET", "/api/attempts/*/files/*", Caller::person, submitted_file},
    {"GET", "/api/attempts/*/**", Caller::person, no_such_attempt_api},
    {"*", "/api/**", Caller::person, no_such_api},
    {"*", "/**", Caller::anyone, nothing_here},
};

const Route& route_for(const std::string& method, const std::vector<std::string>& path) {
    for (const Route& route : kRoutes) {
        if (method_matches(route.method, method) && path_matches(route.pattern, path)) {
            return route;
        }
    }
    return kRoutes[std::size(kRoutes) - 1];
}

}  // namespace

nlohmann::json attempt_json(Service& service, const Attempt& attempt) {
    nlohmann::json lanes = nlohmann::json::object();
    for (const Job& job : attempt.jobs) {
        lanes[to_string(job.lane)] = lane_json(service, attempt, job);
    }
    return {{"id", attempt.id},
            {"number", attempt.number},
            {"student", attempt.login},
            {"exercise", attempt.exercise},
            {"created_at", attempt.created_at},
            {"created", utc_text(attempt.created_at)},
            {"files", attempt.files},
            {"lanes", lanes}};
}

Api::Api(Service& service, RequestLimits limits, Lti* lti)
    : service_(service), limits_(limits), lti_(lti) {}

bool Api::take(std::map<std::string, std::pair<double, double>>& buckets, const std::string& key,
               double rate, double burst, double now, double& retry_after) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (buckets.size() > kMaxBuckets) {
        // Full buckets say nothing a new one would not: memory stays flat under any flood.
        for (auto it = buckets.begin(); it != buckets.end();) {
            const double level = it->second.first + (now - it->second.second) * rate;
            it = level >= burst ? buckets.erase(it) : std::next(it);
        }
    }
    auto [it, added] = buckets.try_emplace(key, burst, now);
    auto& [level, last] = it->second;
    level = std::min(burst, level + (now - last) * rate);
    last = now;
    if (level < 1.0) {
        retry_after = (1.0 - level) / rate;
        return false;
    }
    level -= 1.0;
    return true;
}

ApiResponse Api::handle(const ApiRequest& request) {
    const double now = now_seconds();
    ApiResponse response;
    try {
        response = route(request, now);
    } catch (const ServiceError& error) {
        response = error_response(error.status(), error.what(), error.retry_after());
    } catch (const UploadError& error) {
        response = error_response(error.status(), error.what());
    } catch (const StoreError& error) {
        // The service's own trouble (another process's lock, a full disk): this request fails,
        // the instructor is told (health, the log), and the next may work.
        service_.store_failed(error);
        response = error_response(503,
                                  "the service cannot record or read this now (its state is "
                                  "busy or its disk full): nothing of yours was lost; try again "
                                  "in a minute",
                                  60.0);
    } catch (const std::exception&) {
        // What went wrong may name the machine's folders: the operator's log has it, not the
        // answer.
        response = error_response(500,
                                  "the service failed to answer this request; try again, "
                                  "and tell your instructor if it lasts");
    }
    response.headers.emplace_back("Cache-Control", "no-store");
    response.headers.emplace_back("X-Content-Type-Options", "nosniff");
    response.headers.emplace_back("Referrer-Policy", "no-referrer");
    response.headers.emplace_back("X-Frame-Options", "DENY");
    response.headers.emplace_back("Content-Security-Policy",
                                  "default-src 'self'; img-src 'self' data:; object-src 'none'; "
                                  "base-uri 'none'; frame-ancestors 'none'");
    return response;
}

Person Api::person_asking(const ApiRequest& request, const std::string& token, double now) {
    double retry_after = 0.0;
    Person person;
    try {
        person = lti_ != nullptr && Lti::is_session_token(token)
                     ? lti_->authenticate(token, now)
                     : service_.authenticate(token, now);
    } catch (const ServiceError& error) {
        if (!take(failure_buckets_, request.peer, limits_.failed_tokens_per_minute / 60.0,
                  limits_.failed_tokens_per_minute, now, retry_after)) {
            throw ServiceError(429,
                               "too many requests with a wrong token from your address: wait "
                               "before trying again",
                               retry_after);
        }
        throw;
    }
    if (!take(person_buckets_, person.login, limits_.per_second, limits_.burst, now, retry_after)) {
        throw ServiceError(429,
                           "too many requests: the page asks every second or two, and so "
                           "should a script; wait a moment",
                           retry_after);
    }
    return person;
}

ApiResponse Api::route(const ApiRequest& request, double now) {
    const Target target = parse_target(request.target);
    const Route& route = route_for(request.method, target.path);
    ApiCall call{service_, lti_, request, target, now, bearer_token(request), {}};
    if (route.caller == Caller::person) {
        call.person = person_asking(request, call.token, now);
    }
    return route.handler(call);
}

}  // namespace grader::serve
