#pragma once

// The service's HTTP API and page, apart from the sockets: a request in, a response out. The
// HTTP server (http_server.hpp) and the tests call the same handle(). Every answer's text is
// the service's or the grader's writers' (text escaped by text/text_safety.hpp); no host path,
// and nothing of another student's unless an instructor asks. The routes, who may call each and
// what each answers are one table, kRoutes in api.cpp. The token travels as
// "Authorization: Bearer TOKEN".

#include <algorithm>
#include <cstddef>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "serve/http_messages.hpp"
#include "serve/service.hpp"
#include "serve/store.hpp"

namespace grader::serve {

class Lti;

// Requests a person, or an address whose tokens failed, may make: a bucket of `burst` refilled
// at `per_second`. Past it the answer is 429 with the seconds to wait.
struct RequestLimits {
    double per_second = 20.0;
    double burst = 60.0;
    double failed_tokens_per_minute = 20.0;  // per address: guessing tokens is slowed to this
};

class Api {
public:
    // With an Lti, the service is an LTI 1.3 tool too (/lti/..., and sessions its launches open).
    Api(Service& service, RequestLimits limits, Lti* lti = nullptr);
    ApiResponse handle(const ApiRequest& request);

private:
    // false where the bucket is empty; retry_after then says for how long.
    bool take(std::map<std::string, std::pair<double, double>>& buckets, const std::string& key,
              double rate, double burst, double now, double& retry_after);
    // The person the request's token names, counted against their rate (and a wrong token
    // against the address's); ServiceError(401 or 429) otherwise.
    Person person_asking(const ApiRequest& request, const std::string& token, double now);
    // The first of kRoutes (api.cpp) that takes the request, called for whoever may call it.
    ApiResponse route(const ApiRequest& request, double now);

    Service& service_;
    RequestLimits limits_;
    Lti* lti_;
    std::mutex mutex_;
    std::map<std::string, std::pair<double, double>> person_buckets_;  // tokens, last refill
    std::map<std::string, std::pair<double, double>> failure_buckets_;
};

// The JSON the API answers with for an attempt: each lane's state and, while queued, its place.
nlohmann::json attempt_json(Service& service, const Attempt& attempt);

}  // namespace grader::serve
