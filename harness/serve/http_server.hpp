#pragma once

// The HTTP/1.1 server of `grader serve`, over Boost.Beast: it reads a request within limits and
// hands it to a handler (Api::handle). What a hostile or broken client can do costs it its own
// connection only: headers over a limit (431), a body over a limit (413, said before it is
// read), a request that does not arrive within its deadline however slowly it trickles (the
// connection is closed), more connections than allowed at once from one address or in all (503,
// closed). HTTPS comes from the reverse proxy in front (docs/serve.md: nginx, Caddy).

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "serve/api.hpp"

namespace grader::serve {

struct HttpOptions {
    std::string address = "127.0.0.1";
    unsigned short port = 8080;  // 0: any free port (port() says which)
    int threads = 4;
    std::size_t max_header_bytes = 16 * 1024;
    std::size_t max_body_bytes = 4 * 1024 * 1024;
    double request_seconds = 30.0;  // a request's headers and body must arrive within this
    double idle_seconds = 30.0;     // a kept-alive connection may wait this long for the next
    std::size_t max_connections = 1024;
    std::size_t max_connections_per_address = 256;  // 0: no limit (behind a proxy, all is one)
};

class HttpServer {
public:
    using Handler = std::function<ApiResponse(const ApiRequest&)>;
    // Binds and listens; throws std::runtime_error naming the address where it cannot.
    HttpServer(const HttpOptions& options, Handler handler);
    ~HttpServer();  // stop()
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    unsigned short port() const;
    // Serves on options.threads threads until stop(); returns at once.
    void start();
    // Stops accepting and closes every connection; waits for the threads. Once.
    void stop();

    struct State;  // defined in the .cpp; its sessions share it

private:
    std::unique_ptr<State> state_;
};

}  // namespace grader::serve
