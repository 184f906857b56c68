#include "serve/http_client.hpp"

#include <openssl/ssl.h>
#include <openssl/ssl3.h>
#include <openssl/tls1.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <exception>
#include <memory>
#include <type_traits>

#include "serve/tokens.hpp"

namespace grader::serve {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

namespace {

// Where an exchange stands; the handlers run on the caller's thread, inside io.run().
struct Exchange {
    http::request<http::string_body> request;
    http::response_parser<http::string_body> parser;
    beast::flat_buffer buffer;
    HttpReply reply;
    bool done = false;
    beast::error_code error;
};

template <typename Stream>
void write_then_read(Stream& stream, Exchange& exchange) {
    http::async_write(stream, exchange.request, [&](beast::error_code error, std::size_t) {
        // A server that refuses an upload (413) answers before it has read the body and may
        // close; its answer can still be read, and says why better than "Broken pipe".
        const bool refused_early =
            error == net::error::broken_pipe || error == net::error::connection_reset;
        if (error && !refused_early) {
            exchange.error = error;
            return;
        }
        const beast::error_code write_error = error;
        http::async_read(
            stream, exchange.buffer, exchange.parser,
            [&exchange, write_error](beast::error_code read_error, std::size_t) {
                if (read_error) {
                    exchange.error = write_error ? write_error : read_error;
                    return;
                }
                const auto& got = exchange.parser.get();
                exchange.reply.status = static_cast<int>(got.result_int());
                for (const auto& field : got) {
                    std::string name(field.name_string());
                    for (char& c : name) {
                        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                    }
                    exchange.reply.headers[name] = std::string(field.value());
                }
                exchange.reply.body = got.body();
                exchange.done = true;
            });
    });
}

}  // namespace

ServerUrl parse_server_url(const std::string& url) {
    ServerUrl parsed;
    std::string rest;
    if (url.rfind("http://", 0) == 0) {
        rest = url.substr(7);
    } else if (url.rfind("https://", 0) == 0) {
        parsed.tls = true;
        rest = url.substr(8);
    } else {
        throw HttpClientError("--server " + url +
                              ": give the service's address as http://HOST:PORT or "
                              "https://HOST[/PATH]");
    }
    const std::size_t slash = rest.find('/');
    std::string authority = rest.substr(0, slash);
    parsed.prefix = slash == std::string::npos ? "" : rest.substr(slash);
    while (!parsed.prefix.empty() && parsed.prefix.back() == '/') {
        parsed.prefix.pop_back();
    }
    const std::size_t colon = authority.rfind(':');
    if (colon != std::string::npos && authority.find(']') == std::string::npos) {
        parsed.host = authority.substr(0, colon);
        parsed.port = authority.substr(colon + 1);
    } else {
        parsed.host = authority;
        parsed.port = parsed.tls ? "443" : "80";
    }
    if (parsed.host.empty() || parsed.port.empty()) {
        throw HttpClientError("--server " + url + ": no host in the address");
    }
    return parsed;
}

HttpReply http_request(const ServerUrl& url, const std::string& method, const std::string& target,
                       const std::vector<std::pair<std::string, std::string>>& headers,
                       const std::string& body, double timeout_seconds) {
    const std::string where = (url.tls ? "https://" : "http://") + url.host + ":" + url.port;
    try {
        net::io_context io;
        Exchange exchange;
        exchange.request =
            http::request<http::string_body>(http::string_to_verb(method), url.prefix + target, 11);
        auto& request = exchange.request;
        request.set(http::field::host, url.host);
        request.set(http::field::user_agent, "grader-submit");
        for (const auto& [name, value] : headers) {
            request.set(name, value);
        }
        request.body() = body;
        request.keep_alive(false);
        request.prepare_payload();
        exchange.parser.body_limit(64 * 1024 * 1024);
        // Asynchronous, so that one deadline (the stream's) bounds the connection, the TLS
        // handshake, the request and the answer together.
        const auto deadline =
            std::chrono::milliseconds(static_cast<long long>(timeout_seconds * 1000));
        tcp::resolver resolver(io);
        const auto endpoints = resolver.resolve(url.host, url.port);
        ssl::context context(ssl::context::tls_client);
        if (!url.tls) {
            beast::tcp_stream stream(io);
            stream.expires_after(deadline);
            stream.async_connect(endpoints, [&](beast::error_code error, const auto&) {
                if (error) {
                    exchange.error = error;
                    return;
                }
                write_then_read(stream, exchange);
            });
            io.run();
        } else {
            context.set_default_verify_paths();
            context.set_verify_mode(ssl::verify_peer);
            beast::ssl_stream<beast::tcp_stream> stream(io, context);
            // SSL_set_tlsext_host_name, without the macro's C cast.
            if (SSL_ctrl(stream.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME,
                         TLSEXT_NAMETYPE_host_name, const_cast<char*>(url.host.c_str())) != 1) {
                throw HttpClientError(where + ": TLS: the server name cannot be set");
            }
            stream.set_verify_callback(ssl::host_name_verification(url.host));
            beast::get_lowest_layer(stream).expires_after(deadline);
            beast::get_lowest_layer(stream).async_connect(
                endpoints, [&](beast::error_code error, const auto&) {
                    if (error) {
                        exchange.error = error;
                        return;
                    }
                    stream.async_handshake(ssl::stream_base::client,
                                           [&](beast::error_code handshake_error) {
                                               if (handshake_error) {
                                                   exchange.error = handshake_error;
                                                   return;
                                               }
                                               write_then_read(stream, exchange);
                                           });
                });
            io.run();
        }
        if (exchange.error) {
            throw beast::system_error(exchange.error);
        }
        if (!exchange.done) {
            throw HttpClientError(where + " did not answer within " +
                                  std::to_string(static_cast<int>(timeout_seconds)) + " s");
        }
        return exchange.reply;
    } catch (const HttpClientError&) {
        throw;
    } catch (const beast::system_error& error) {
        if (error.code() == beast::error::timeout) {
            throw HttpClientError(where + " did not answer within " +
                                  std::to_string(static_cast<int>(timeout_seconds)) + " s");
        }
        throw HttpClientError(where + ": " + error.code().message());
    } catch (const std::exception& error) {
        throw HttpClientError(where + ": " + error.what());
    }
}

MultipartBody multipart_body(const std::vector<std::pair<std::string, std::string>>& fields,
                             const std::vector<std::pair<std::string, std::string>>& files) {
    const std::string boundary = "grader-" + new_token().substr(3, 32);
    MultipartBody made;
    made.content_type = "multipart/form-data; boundary=" + boundary;
    for (const auto& [name, value] : fields) {
        made.body += "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + name +
                     "\"\r\n\r\n" + value + "\r\n";
    }
    for (const auto& [name, bytes] : files) {
        std::string quoted;
        for (const char c : name) {
            quoted += c == '"' ? std::string("%22") : std::string(1, c);
        }
        made.body += "--" + boundary +
                     "\r\nContent-Disposition: form-data; name=\"files\"; filename=\"" + quoted +
                     "\"\r\nContent-Type: application/octet-stream\r\n\r\n" + bytes + "\r\n";
    }
    made.body += "--" + boundary + "--\r\n";
    return made;
}

}  // namespace grader::serve
