#pragma once

// What the service's HTTP API takes and gives, apart from the sockets and the routes: a request
// in, a response out, and the decoding of a query string or a form. The API (api.hpp) and the
// LTI 1.3 tool (lti.hpp) both answer in these, so neither needs the other's header for them.

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace grader::serve {

struct ApiRequest {
    std::string method;                          // "GET", "POST", ...
    std::string target;                          // the path and query, as sent
    std::map<std::string, std::string> headers;  // names in lower case
    std::string body;
    std::string peer;  // the client's address, for the limits on failed tokens
};

struct ApiResponse {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
};

// The fields of a query string or an application/x-www-form-urlencoded body, decoded.
std::map<std::string, std::string> parse_form(const std::string& text);

// A URL's or a form's %XX escapes decoded, and '+' as a space.
std::string percent_decode(std::string_view text);

}  // namespace grader::serve
