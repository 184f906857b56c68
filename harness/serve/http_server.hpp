#pragma once

// The HTTP/1.1 server of `grader serve`, over Boost.Beast: it reads a request within limits and
// hands it to a handler (Api::handle). What a hostile or broken client can do costs it its own
// connection only: headers over a limit (431), a body over a limit (413, said before it is
// read), a request that does not arrive within its deadline however slowly it trickles (the
// connection is closed), a connection kept past its lifetime (closed after its next answer).
//
// Connections are capped in all and per address, right after accept: a connection over a cap
// takes the place of the one of its address (or, over the total, of anyone's) that has waited
// longest for a request to arrive; where none is waiting, it is answered 503 and closed at once.
// So idle connections, however many and however often reopened, never keep a client that asks
// for something from being answered, and never spend the descriptors the grades need
// (connection_caps derives the total from the open-file limit). An accept that fails for want
// of descriptors or memory is tried again after a pause, not at once.
// HTTPS comes from the reverse proxy in front (docs/serve.md: nginx, Caddy).

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "serve/api.hpp"
#include "serve/http_messages.hpp"

namespace grader::serve {

struct HttpOptions {
    std::string address = "127.0.0.1";
    unsigned short port = 8080;  // 0: any free port (port() says which)
    int threads = 4;
    std::size_t max_header_bytes = 16 * 1024;
    std::size_t max_body_bytes = 4 * 1024 * 1024;
    double request_seconds = 30.0;  // a request's headers and body must arrive within this
    double idle_seconds = 15.0;     // a kept-alive connection may wait this long for the next
    // A connection's whole life: the first answer after it closes the connection, so that no
    // holder keeps one open for ever with a cheap request now and then.
    double connection_seconds = 120.0;
    std::size_t max_connections = 1024;
    std::size_t max_connections_per_address = 256;  // 0: no limit (behind a proxy, all is one)
    // What the server has to say for the operator's log (accept failing for want of
    // descriptors): the library prints nothing itself.
    std::function<void(const std::string&)> log;
};

// The process's open-file limit raised to its hard limit (a connection is a descriptor); returns
// the limit now in force.
std::size_t raise_open_file_limit();

// The total connection cap for `open_files` descriptors, leaving `reserved` to everything else
// (the grades' pipes and files, the state file); at least 16, at most 16,384. The per-address
// cap is kept within half of it, so that one address never holds every connection.
void set_connection_caps(HttpOptions& options, std::size_t open_files, std::size_t reserved);

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
