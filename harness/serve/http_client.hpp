#pragma once

// The client side of the service's API, for `grader submit` and the tests: one request, one
// answer, within a deadline. http:// and https:// (through OpenSSL, checking the server's
// certificate against the system's authorities, as a course's reverse proxy serves it).

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace grader::serve {

class HttpClientError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct HttpReply {
    int status = 0;
    std::map<std::string, std::string> headers;  // names in lower case
    std::string body;
};

struct ServerUrl {
    bool tls = false;
    std::string host;
    std::string port;
    std::string prefix;  // a path the API lies under, without the final '/': "/grader"
};

// "http://host:8080", "https://gpu.course.edu/grader". Throws HttpClientError for anything else.
ServerUrl parse_server_url(const std::string& url);

// Sends one request (HTTP/1.1, Connection: close) to url.prefix + target. Throws HttpClientError
// where no answer came: the server cannot be reached, the deadline passed, a TLS failure.
HttpReply http_request(const ServerUrl& url, const std::string& method, const std::string& target,
                       const std::vector<std::pair<std::string, std::string>>& headers,
                       const std::string& body, double timeout_seconds);

// A multipart/form-data body of text fields and files, and its Content-Type.
struct MultipartBody {
    std::string content_type;
    std::string body;
};
MultipartBody multipart_body(const std::vector<std::pair<std::string, std::string>>& fields,
                             const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace grader::serve
