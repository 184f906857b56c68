#include "serve/http_server.hpp"

#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <ratio>
#include <set>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace grader::serve {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

std::chrono::milliseconds millis(double seconds) {
    return std::chrono::milliseconds(static_cast<long long>(seconds * 1000.0));
}

class Session;

// An accept that failed for want of a resource is tried again after this pause, doubled while
// it goes on: a listening socket with a connection waiting is always ready, so trying again at
// once would spin on a core.
constexpr std::chrono::milliseconds kFirstAcceptPause{50};
constexpr std::chrono::milliseconds kLongestAcceptPause{1000};

bool short_of_resources(const beast::error_code& error) {
    const int value = error.value();
    return error.category() == boost::system::system_category() &&
           (value == EMFILE || value == ENFILE || value == ENOBUFS || value == ENOMEM);
}

}  // namespace

std::size_t raise_open_file_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
        return 1024;
    }
    if (limit.rlim_cur != limit.rlim_max) {
        rlimit raised = limit;
        raised.rlim_cur = limit.rlim_max;
        if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) {
            limit = raised;
        }
    }
    // RLIM_INFINITY is not a count; a million is more than any connection cap needs.
    return limit.rlim_cur == RLIM_INFINITY
               ? std::size_t{1} << 20
               : static_cast<std::size_t>(std::min<rlim_t>(limit.rlim_cur, rlim_t{1} << 20));
}

void set_connection_caps(HttpOptions& options, std::size_t open_files, std::size_t reserved) {
    // Past this many, the memory of idle connections (a few KB each) matters more than the
    // descriptors: a course's service has a few thousand at its busiest.
    constexpr std::size_t kMostConnections = 16384;
    options.max_connections =
        std::min(kMostConnections,
                 std::max<std::size_t>(
                     16, open_files > reserved + 16 ? open_files - reserved : std::size_t{16}));
    if (options.max_connections_per_address > options.max_connections / 2) {
        options.max_connections_per_address = std::max<std::size_t>(1, options.max_connections / 2);
    }
}

// The sessions are owned by the handlers waiting in io, and io is destroyed first of what they
// use (members are destroyed in reverse order): a session that goes with it still finds the
// connections' table it leaves.
struct HttpServer::State {
    // Connections waiting for a request (or the rest of one), oldest first: the first to give
    // way to a new connection over a cap.
    using Waiting = std::set<std::pair<Clock::time_point, std::uint64_t>>;
    struct Connection {
        std::weak_ptr<Session> session;
        std::string address;
        std::optional<Clock::time_point> waiting_since;
    };
    struct Address {
        std::size_t connections = 0;
        Waiting waiting;
    };

    HttpOptions options;
    Handler handler;
    std::mutex mutex;
    std::unordered_map<std::uint64_t, Connection> connections;
    std::map<std::string, Address> addresses;
    Waiting waiting;
    std::uint64_t next_id = 1;
    bool stopped = false;
    std::chrono::milliseconds accept_pause = kFirstAcceptPause;
    bool accept_failing = false;
    std::vector<std::thread> threads;
    net::io_context io;
    tcp::acceptor acceptor{io};
    net::steady_timer accept_timer{io};

    // A new connection from `address`: its id, or 0 where it must be refused. Over a cap, the
    // longest-waiting connection of the address (or, over the total, of anyone) gives way: its
    // session is returned in `gives_way`, to be closed, and no longer counts.
    std::uint64_t admit(const std::string& address, std::shared_ptr<Session>& gives_way) {
        std::lock_guard<std::mutex> lock(mutex);
        Address& mine = addresses[address];
        std::optional<std::uint64_t> victim;
        if (options.max_connections_per_address > 0 &&
            mine.connections >= options.max_connections_per_address) {
            if (!mine.waiting.empty()) {
                victim = mine.waiting.begin()->second;
            }
        } else if (connections.size() >= options.max_connections) {
            if (!waiting.empty()) {
                victim = waiting.begin()->second;
            }
        } else {
            victim = 0;  // room: nobody gives way
        }
        if (!victim) {
            if (mine.connections == 0) {
                addresses.erase(address);
            }
            return 0;
        }
        if (*victim != 0) {
            gives_way = connections.at(*victim).session.lock();
            forget(*victim);
        }
        const std::uint64_t id = next_id++;
        connections.emplace(id, Connection{{}, address, std::nullopt});
        ++addresses[address].connections;
        return id;
    }
    void attach(std::uint64_t id, const std::shared_ptr<Session>& session) {
        std::lock_guard<std::mutex> lock(mutex);
        if (const auto found = connections.find(id); found != connections.end()) {
            found->second.session = session;
        }
    }
    // The connection waits for a request from now on (or stops waiting: it is being answered).
    void set_waiting(std::uint64_t id, bool is_waiting) {
        std::lock_guard<std::mutex> lock(mutex);
        const auto found = connections.find(id);
        if (found == connections.end()) {
            return;  // it gave way to another
        }
        Connection& connection = found->second;
        if (connection.waiting_since) {
            waiting.erase({*connection.waiting_since, id});
            addresses[connection.address].waiting.erase({*connection.waiting_since, id});
            connection.waiting_since.reset();
        }
        if (is_waiting) {
            connection.waiting_since = Clock::now();
            waiting.insert({*connection.waiting_since, id});
            addresses[connection.address].waiting.insert({*connection.waiting_since, id});
        }
    }
    void release(std::uint64_t id) {
        std::lock_guard<std::mutex> lock(mutex);
        forget(id);
    }
    // Under the mutex.
    void forget(std::uint64_t id) {
        const auto found = connections.find(id);
        if (found == connections.end()) {
            return;
        }
        const Connection& connection = found->second;
        const auto address = addresses.find(connection.address);
        if (connection.waiting_since) {
            waiting.erase({*connection.waiting_since, id});
            address->second.waiting.erase({*connection.waiting_since, id});
        }
        if (--address->second.connections == 0) {
            addresses.erase(address);
        }
        connections.erase(found);
    }

    void accept();
    void accepted(tcp::socket socket);
};

namespace {

// 503 and closed at once: written without waiting (a client that reads nothing costs no time),
// and whatever the socket does not take at once is dropped.
void refuse_at_once(tcp::socket& socket) {
    static const std::string body =
        "{\"error\": \"the service has too many connections open (from your address, or in "
        "all): try again in a few seconds\", \"status\": 503}\n";
    static const std::string answer =
        "HTTP/1.1 503 Service Unavailable\r\nServer: grader\r\nContent-Type: "
        "application/json\r\nRetry-After: 5\r\nConnection: close\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    (void)!::send(socket.native_handle(), answer.data(), answer.size(),
                  MSG_DONTWAIT | MSG_NOSIGNAL);
    beast::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
}

class Session : public std::enable_shared_from_this<Session> {
public:
    Session(tcp::socket socket, HttpServer::State* state, std::string peer, std::uint64_t id)
        : stream_(std::move(socket)), state_(state), peer_(std::move(peer)), id_(id) {}
    ~Session() { state_->release(id_); }

    void start() { read_header(); }

    // Another connection over a cap took this one's place: closed on its own strand.
    void give_way() {
        net::post(stream_.get_executor(), [self = shared_from_this()] { self->close(); });
    }

private:
    void read_header() {
        parser_.emplace();
        parser_->header_limit(static_cast<std::uint32_t>(state_->options.max_header_bytes));
        parser_->body_limit(state_->options.max_body_bytes);
        stream_.expires_after(
            millis(first_ ? state_->options.request_seconds : state_->options.idle_seconds));
        first_ = false;
        state_->set_waiting(id_, true);
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
            return close();  // gone, timed out (a slow client), gave way, or not HTTP
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
        state_->set_waiting(id_, false);
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
        const bool young = Clock::now() - born_ < millis(state_->options.connection_seconds);
        respond(response, request.keep_alive() && young, request.version());
    }

    // `unread_body`: the client is still sending the body this answers (see drain()).
    void refuse(int status, const std::string& message, bool unread_body = false) {
        state_->set_waiting(id_, false);
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
                                  // Draining, it is the first to give way to a new connection.
                                  self->state_->set_waiting(self->id_, true);
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
    std::uint64_t id_;
    Clock::time_point born_ = Clock::now();
    bool first_ = true;
    static constexpr std::size_t kMaxDrainedBytes = std::size_t{64} << 20;
    std::array<char, 16384> drained_buffer_{};
    std::size_t drained_ = 0;
};

}  // namespace

void HttpServer::State::accepted(tcp::socket socket) {
    beast::error_code ignored;
    const auto endpoint = socket.remote_endpoint(ignored);
    const std::string peer = ignored ? std::string("unknown") : endpoint.address().to_string();
    std::shared_ptr<Session> gives_way;
    const std::uint64_t id = admit(peer, gives_way);
    if (gives_way) {
        gives_way->give_way();
    }
    if (id == 0) {
        refuse_at_once(socket);
        return;
    }
    auto session = std::make_shared<Session>(std::move(socket), this, peer, id);
    attach(id, session);
    session->start();
}

void HttpServer::State::accept() {
    acceptor.async_accept(
        net::make_strand(io), [self = this](beast::error_code error, tcp::socket socket) {
            if (error == net::error::operation_aborted || !self->acceptor.is_open()) {
                return;
            }
            if (error && short_of_resources(error)) {
                if (!self->accept_failing && self->options.log) {
                    self->options.log("connections cannot be accepted for now (" + error.message() +
                                      "): trying again after a pause, doubled up to 1 s while "
                                      "it lasts");
                }
                self->accept_failing = true;
                self->accept_timer.expires_after(self->accept_pause);
                self->accept_pause = std::min(kLongestAcceptPause, self->accept_pause * 2);
                self->accept_timer.async_wait([self](beast::error_code waited) {
                    if (!waited) {
                        self->accept();
                    }
                });
                return;
            }
            if (!error) {
                if (self->accept_failing && self->options.log) {
                    self->options.log("connections are accepted again");
                }
                self->accept_failing = false;
                self->accept_pause = kFirstAcceptPause;
                self->accepted(std::move(socket));
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
        state->accept_timer.cancel();
    });
    state_->io.stop();  // pending handlers, and the sessions they own, go with io
    for (std::thread& thread : state_->threads) {
        if (thread.joinable()) {
            thread.join();
        }
    }
}

}  // namespace grader::serve
