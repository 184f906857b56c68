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
#include <string_view>

#include "exercise/exercise.hpp"
#include "model/json.hpp"
#include "report/writers.hpp"
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

std::string percent_decode(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%' && i + 2 < text.size() &&
            std::isxdigit(static_cast<unsigned char>(text[i + 1])) != 0 &&
            std::isxdigit(static_cast<unsigned char>(text[i + 2])) != 0) {
            out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
            i += 2;
        } else {
            out += text[i] == '+' ? ' ' : text[i];
        }
    }
    return out;
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

}  // namespace

std::map<std::string, std::string> parse_form(const std::string& text) {
    std::map<std::string, std::string> fields;
    std::size_t begin = 0;
    while (begin <= text.size()) {
        const std::size_t amp = std::min(text.find('&', begin), text.size());
        const std::string pair = text.substr(begin, amp - begin);
        const std::size_t equals = pair.find('=');
        if (!pair.empty()) {
            fields[percent_decode(pair.substr(0, equals))] =
                equals == std::string::npos ? "" : percent_decode(pair.substr(equals + 1));
        }
        begin = amp + 1;
    }
    return fields;
}

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

ApiResponse Api::route(const ApiRequest& request, double now) {
    const Target target = parse_target(request.target);
    const auto& path = target.path;
    const bool get = request.method == "GET" || request.method == "HEAD";

    if (get && (path.empty() || (path.size() == 1 && path[0] == "index.html"))) {
        return text_response("text/html; charset=utf-8", page::kHtml);
    }
    if (get && path.size() == 1 && path[0] == "page.js") {
        return text_response("text/javascript; charset=utf-8", page::kScript);
    }
    if (get && path.size() == 1 && path[0] == "page.css") {
        return text_response("text/css; charset=utf-8", page::kStyle);
    }
    if (lti_ != nullptr && !path.empty() && path[0] == "lti") {
        if (auto answer = lti_->handle(request, now)) {
            return *answer;
        }
    }
    if (path.empty() || path[0] != "api") {
        return error_response(404, "nothing here: the page is at /");
    }
    if (get && path.size() == 2 && path[1] == "health") {
        nlohmann::json body = service_health(service_);
        try {
            const Counts counts = service_.counts();
            body["queued"] = {{"sim", counts.sim.queued}, {"gpu", counts.gpu.queued}};
            body["running"] = {{"sim", counts.sim.running}, {"gpu", counts.gpu.running}};
        } catch (const StoreError& error) {
            service_.store_failed(error);
            body = service_health(service_);
        }
        body["gpu"] = service_.options().gpu;
        return json_response(200, body);
    }

    // Everything else is someone's: who, first.
    double retry_after = 0.0;
    const std::string token = bearer_token(request);
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
    const bool instructor = person.role == Role::instructor;

    if (get && path.size() == 2 && path[1] == "me") {
        nlohmann::json exercises = nlohmann::json::array();
        for (const Exercise& exercise : service_.options().exercises) {
            exercises.push_back(
                {{"id", exercise.id},
                 {"title", exercise.title},
                 {"files", {exercise.submission_source, exercise.submission_answers}}});
        }
        const auto [left, frees_in] = service_.rate_left(person, now);
        nlohmann::json body = {{"login", person.login},
                               {"name", person.name},
                               {"role", to_string(person.role)},
                               {"exercises", exercises},
                               {"gpu", service_.options().gpu},
                               {"rate",
                                {{"limit", service_.options().rate.count},
                                 {"window_seconds", service_.options().rate.window_seconds},
                                 {"left", left},
                                 {"next_in_seconds", frees_in}}}};
        if (instructor) {
            body["service"] = service_health(service_);
        }
        if (lti_ != nullptr) {
            body["lti"] = lti_->describe(token, now);
        }
        return json_response(200, body);
    }
    if (get && path.size() == 3 && path[1] == "lti" && path[2] == "roster" && lti_ != nullptr) {
        return json_response(200, lti_->roster(token, now));
    }
    if (path.size() == 2 && path[1] == "attempts") {
        if (request.method == "POST") {
            const auto type = request.headers.find("content-type");
            const std::string boundary =
                multipart_boundary(type == request.headers.end() ? "" : type->second);
            const Upload upload =
                parse_multipart(request.body, boundary, service_.options().upload);
            const Attempt attempt = service_.submit(person, upload, now);
            if (lti_ != nullptr) {
                lti_->attempt_made(token, attempt, now);
            }
            return json_response(201, attempt_json(service_, attempt));
        }
        if (!get) {
            return error_response(405, "attempts are listed (GET) or made (POST)");
        }
        std::int64_t whose = person.id;
        if (const auto student = target.query.find("student"); student != target.query.end()) {
            const auto other = instructor ? service_.store().person_by_login(student->second)
                                          : std::optional<Person>();
            if (!other && !(student->second == person.login)) {
                throw ServiceError(
                    404, "no student '" + text::visible_line(student->second) + "' you may see");
            }
            whose = other ? other->id : person.id;
        } else if (instructor && target.query.count("all") != 0) {
            whose = 0;
        }
        // A page: the newest `limit` (at most kListLimit) older than `before`; next_before asks
        // for the page after it, where there may be one.
        std::int64_t before = 0;
        if (const auto query = target.query.find("before"); query != target.query.end()) {
            const auto id = whole_number(query->second);
            if (!id) {
                throw ServiceError(400, "before is an attempt's id, a whole number: got '" +
                                            text::visible_line(query->second) + "'");
            }
            before = *id;
        }
        std::size_t limit = kListLimit;
        if (const auto query = target.query.find("limit"); query != target.query.end()) {
            const auto count = whole_number(query->second);
            if (!count || *count < 1 || *count > static_cast<std::int64_t>(kListLimit)) {
                throw ServiceError(400, "limit is a whole number from 1 to " +
                                            std::to_string(kListLimit) + ": got '" +
                                            text::visible_line(query->second) + "'");
            }
            limit = static_cast<std::size_t>(*count);
        }
        nlohmann::json list = nlohmann::json::array();
        const auto attempts = service_.store().attempts(whose, limit, before);
        for (const Attempt& attempt : attempts) {
            list.push_back(attempt_json(service_, attempt));
        }
        nlohmann::json body = {{"attempts", list}};
        if (attempts.size() == limit) {
            body["next_before"] = attempts.back().id;
        }
        return json_response(200, body);
    }
    if (get && path.size() >= 3 && path[1] == "attempts") {
        const auto id = whole_number(path[2]);
        if (!id) {
            return error_response(404, "no such attempt");
        }
        const Attempt attempt = service_.visible_attempt(person, *id);
        if (path.size() == 3) {
            nlohmann::json body = attempt_json(service_, attempt);
            body["explain"] = service_.has_explanation(attempt) ? "ready" : "pending";
            return json_response(200, body);
        }
        const auto format =
            target.query.count("format") != 0 ? target.query.at("format") : std::string("html");
        if (path.size() == 4 && path[3] == "report") {
            const auto lane = lane_of(target.query);
            const auto report = service_.report(attempt, *lane);
            if (!report) {
                const Job* job = attempt.job(*lane);
                if (job != nullptr && job->state == JobState::done) {
                    // Finished without a report: the machine's failure, said in its summary.
                    return error_response(404, job->summary);
                }
                return error_response(404, std::string("the ") + to_string(*lane) +
                                               " report of this attempt is not ready yet");
            }
            if (format == "html") {
                return text_response("text/html; charset=utf-8", write_report_html(*report));
            }
            if (format == "json") {
                return text_response("application/json", write_json(*report));
            }
            if (format == "markdown") {
                return text_response("text/markdown; charset=utf-8", write_markdown(*report));
            }
            if (format == "text") {
                return text_response("text/plain; charset=utf-8", write_text(*report, {}));
            }
            return error_response(400, "format is html, text, json or markdown");
        }
        if (path.size() == 4 && path[3] == "explain") {
            const auto explanation = service_.explanation(attempt);
            if (!explanation) {
                return error_response(404, "the lane tables of this attempt are not ready yet");
            }
            if (format == "html") {
                return text_response("text/html; charset=utf-8",
                                     write_explanation_html(*explanation));
            }
            if (format == "json") {
                return json_response(200, nlohmann::json(*explanation));
            }
            return text_response("text/plain; charset=utf-8",
                                 write_explanation_text(*explanation, false));
        }
        if (path.size() == 5 && path[3] == "files") {
            const auto file = service_.submitted_file(attempt, path[4]);
            if (!file) {
                return error_response(404, "no file of that name in this attempt");
            }
            ApiResponse response = text_response("application/octet-stream", *file);
            response.headers.emplace_back("Content-Disposition",
                                          "attachment; filename=\"" + path[4] + "\"");
            return response;
        }
    }
    return error_response(404, "no such API: see GET /api/me, /api/attempts");
}

}  // namespace grader::serve
