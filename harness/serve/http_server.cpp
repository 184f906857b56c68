#include "serve/http_server.hpp"

#include <algorithm>
#include <array>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace grader::serve {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

std::chrono::milliseconds millis(double seconds) {
    return std::chrono::milliseconds(static_cast<long long>(seconds * 1000.0));
}

}  // namespace

// The sessions are owned by the handlers waiting in io, and io is destroyed first of what they
// use (members are destroyed in reverse order): a session that goes with it still finds the
// counts it releases.
struct HttpServer::State {
    HttpOptions options;
    Handler handler;
    std::mutex mutex;
    std::size_t connections = 0;
    std::map<std::string, std::size_t> per_address;
    bool stopped = false;
    std::vector<std::thread> threads;
    net::io_context io;
    tcp::acceptor acceptor{io};

    // Whether a new connection from `address` may be served; counted where it may.
    bool admit(const std::string& address) {
        std::lock_guard<std::mutex> lock(mutex);
        if (connections >= options.max_connections ||
            (options.max_connections_per_address > 0 &&
             per_address[address] >= options.max_connections_per_address)) {
            if (per_address[address] == 0) {
                per_address.erase(address);
            }
            return false;
        }
        ++connections;
        ++per_address[address];
        return true;
    }
    void release(const std::string& address) {
        std::lock_guard<std::mutex> lock(mutex);
        --connections;
        if (--per_address[address] == 0) {
            per_address.erase(address);
        }
    }

    void accept();
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
public:
    Session(tcp::socket socket, HttpServer::State* state, std::string peer, bool admitted)
        : stream_(std::move(socket)), state_(state), peer_(std::move(peer)), admitted_(admitted) {}
    ~Session() {
        if (admitted_) {
            state_->release(peer_);
        }
    }

    void start() {
        if (!admitted_) {
            ApiResponse busy;
            busy.status = 503;
            busy.body =
                "{\"error\": \"the service has too many connections open (from your "
                "address, or in all): try again in a few seconds\", \"status\": 503}\n";
            busy.headers.emplace_back("Retry-After", "5");
            respond(busy, false);
            return;
        }
        read_header();
    }

private:
    void read_header() {
        parser_.emplace();
        parser_->header_limit(static_cast<std::uint32_t>(state_->options.max_header_bytes));
        parser_->body_limit(state_->options.max_body_bytes);
        stream_.expires_after(
            millis(first_ ? state_->options.request_seconds : state_->options.idle_seconds));
        first_ = false;
        http::async_read_header(stream_, buffer_, *parser_,
                                beast::bind_front_handler(&Session::on_header, shared_from_this()));
    }

    void on_header(beast::error_code error, std::size_t) {
        if (error == http::error::header_limit) {
            return refuse(431, "the request's headers are larger than " +
                                   std::to_string(state_->options.max_header_bytes / 1024) + " KB");
        }
        // Beast refuses a Content-Length over the body limit as soon as the header is read.
        const auto length = parser_->content_length();
        if ((error == http::error::body_limit || !error) && length &&
            *length > state_->options.max_body_bytes) {
            return refuse(413,
                          "the upload is " + std::to_string(*length / 1024) + " KB: at most " +
                              std::to_string(state_->options.max_body_bytes / 1024) +
                              " KB is taken (the exercise's files, or a zip of them)",
                          true);
        }
        if (error) {
            return close();  // gone, timed out (a slow client), or not HTTP
        }
        const auto& request = parser_->get();
        stream_.expires_after(millis(state_->options.request_seconds));
        if (beast::iequals(request[http::field::expect], "100-continue")) {
            auto proceed = std::make_shared<http::response<http::empty_body>>(
                http::status::continue_, request.version());
            http::async_write(
                stream_, *proceed,
                [self = shared_from_this(), proceed](beast::error_code e, std::size_t) {
                    if (e) {
                        return self->close();
                    }
                    self->read_body();
                });
            return;
        }
        read_body();
    }

    void read_body() {
        http::async_read(stream_, buffer_, *parser_,
                         beast::bind_front_handler(&Session::on_body, shared_from_this()));
    }

    void on_body(beast::error_code error, std::size_t) {
        if (error == http::error::body_limit) {
            return refuse(413,
                          "the upload is larger than " +
                              std::to_string(state_->options.max_body_bytes / 1024) +
                              " KB, the most taken",
                          true);
        }
        if (error) {
            return close();
        }
        auto request = parser_->release();
        ApiRequest api;
        api.method = std::string(request.method_string());
        api.target = std::string(request.target());
        for (const auto& field : request) {
            std::string name(field.name_string());
            for (char& c : name) {
                c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            }
            api.headers[name] = std::string(field.value());
        }
        api.body = std::move(request.body());
        api.peer = peer_;
        ApiResponse response;
        try {
            response = state_->handler(api);
        } catch (const std::exception&) {
            response.status = 500;
            response.body = "{\"error\": \"the service failed to answer\", \"status\": 500}\n";
        }
        if (request.method() == http::verb::head) {
            response.body.clear();
        }
        respond(response, request.keep_alive(), request.version());
    }

    // `unread_body`: the client is still sending the body this answers (see drain()).
    void refuse(int status, const std::string& message, bool unread_body = false) {
        ApiResponse response;
        response.status = status;
        std::string escaped;
        for (const char c : message) {
            escaped += c == '"' ? std::string("\\\"") : std::string(1, c);
        }
        response.body =
            "{\"error\": \"" + escaped + "\", \"status\": " + std::to_string(status) + "}\n";
        respond(response, false, 11, unread_body);
    }

    void respond(const ApiResponse& api, bool keep_alive, unsigned version = 11,
                 bool drain_after = false) {
        auto response = std::make_shared<http::response<http::string_body>>(
            static_cast<http::status>(api.status), version);
        response->set(http::field::server, "grader");
        response->set(http::field::content_type, api.content_type);
        for (const auto& [name, value] : api.headers) {
            response->set(name, value);
        }
        response->body() = api.body;
        response->keep_alive(keep_alive);
        response->prepare_payload();
        stream_.expires_after(millis(state_->options.request_seconds));
        http::async_write(stream_, *response,
                          [self = shared_from_this(), response, keep_alive, drain_after](
                              beast::error_code e, std::size_t) {
                              if (!e && drain_after) {
                                  return self->drain();
                              }
                              if (e || !keep_alive) {
                                  return self->close();
                              }
                              self->read_header();
                          });
    }

    // After an answer sent before the body was read (a 413): the client, or a proxy such as
    // nginx, is still sending the body. Closing at once would answer what it sends next with a
    // reset, which throws the answer away unread ("Broken pipe" in `grader submit`, a 502 from
    // nginx); reading and dropping what it sends, within the request's deadline and a bound,
    // lets it read the answer.
    void drain() {
        beast::error_code ignored;
        stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
        stream_.expires_after(millis(state_->options.request_seconds));
        stream_.async_read_some(
            net::buffer(drained_buffer_),
            [self = shared_from_this()](beast::error_code e, std::size_t bytes) {
                self->drained_ += bytes;
                if (e || self->drained_ > kMaxDrainedBytes) {
                    return self->close();
                }
                self->drain();
            });
    }

    void close() {
        beast::error_code ignored;
        stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
        stream_.close();
    }

    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
    std::optional<http::request_parser<http::string_body>> parser_;
    HttpServer::State* state_;
    std::string peer_;
    bool admitted_;
    bool first_ = true;
    static constexpr std::size_t kMaxDrainedBytes = std::size_t{64} << 20;
    std::array<char, 16384> drained_buffer_{};
    std::size_t drained_ = 0;
};

}  // namespace

void HttpServer::State::accept() {
    acceptor.async_accept(
        net::make_strand(io), [self = this](beast::error_code error, tcp::socket socket) {
            if (error == net::error::operation_aborted || !self->acceptor.is_open()) {
                return;
            }
            if (!error) {
                beast::error_code ignored;
                const auto endpoint = socket.remote_endpoint(ignored);
                const std::string peer =
                    ignored ? std::string("unknown") : endpoint.address().to_string();
                const bool admitted = self->admit(peer);
                std::make_shared<Session>(std::move(socket), self, peer, admitted)->start();
            }
            self->accept();
        });
}

HttpServer::HttpServer(const HttpOptions& options, Handler handler)
    : state_(std::make_unique<State>()) {
    state_->options = options;
    state_->handler = std::move(handler);
    beast::error_code error;
    const auto address = net::ip::make_address(options.address, error);
    if (error) {
        throw std::runtime_error("--listen " + options.address + ": not an IP address");
    }
    const tcp::endpoint endpoint(address, options.port);
    state_->acceptor.open(endpoint.protocol(), error);
    if (!error) {
        state_->acceptor.set_option(net::socket_base::reuse_address(true), error);
    }
    if (!error) {
        state_->acceptor.bind(endpoint, error);
    }
    if (!error) {
        state_->acceptor.listen(net::socket_base::max_listen_connections, error);
    }
    if (error) {
        throw std::runtime_error("cannot listen on " + options.address + ":" +
                                 std::to_string(options.port) + ": " + error.message());
    }
}

HttpServer::~HttpServer() {
    stop();
}

unsigned short HttpServer::port() const {
    beast::error_code ignored;
    return state_->acceptor.local_endpoint(ignored).port();
}

void HttpServer::start() {
    state_->accept();
    for (int i = 0; i < std::max(1, state_->options.threads); ++i) {
        state_->threads.emplace_back([state = state_.get()] { state->io.run(); });
    }
}

void HttpServer::stop() {
    if (!state_ || state_->stopped) {
        return;
    }
    state_->stopped = true;
    net::post(state_->io, [state = state_.get()] {
        beast::error_code ignored;
        state->acceptor.close(ignored);
    });
    state_->io.stop();  // pending handlers, and the sessions they own, go with io
    for (std::thread& thread : state_->threads) {
        if (thread.joinable()) {
            thread.join();
        }
    }
}

}  // namespace grader::serve
