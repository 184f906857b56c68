#include "serve/tokens.hpp"

#include <openssl/evp.h>
#include <sys/random.h>
#include <sys/types.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace grader::serve {
namespace {

constexpr std::string_view kPrefix = "gs-";
constexpr std::size_t kRandomBytes = 24;

}  // namespace

std::string hex(const std::uint8_t* bytes, std::size_t count) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(count * 2);
    for (std::size_t i = 0; i < count; ++i) {
        out += digits[bytes[i] >> 4];
        out += digits[bytes[i] & 0xf];
    }
    return out;
}

std::string new_token() {
    std::uint8_t bytes[kRandomBytes];
    std::size_t got = 0;
    while (got < sizeof bytes) {
        const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            throw std::runtime_error(std::string("no random bytes for a token (getrandom): ") +
                                     std::strerror(errno));
        }
        got += static_cast<std::size_t>(n);
    }
    return std::string(kPrefix) + hex(bytes, sizeof bytes);
}

bool looks_like_token(std::string_view text) {
    if (text.size() != kPrefix.size() + 2 * kRandomBytes ||
        text.substr(0, kPrefix.size()) != kPrefix) {
        return false;
    }
    for (const char c : text.substr(kPrefix.size())) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return false;
        }
    }
    return true;
}

TokenHash hash_token(std::string_view token) {
    TokenHash digest{};
    unsigned int length = 0;
    if (EVP_Digest(token.data(), token.size(), digest.data(), &length, EVP_sha256(), nullptr) !=
            1 ||
        length != digest.size()) {
        throw std::runtime_error("SHA-256 of a token failed (OpenSSL's EVP_Digest)");
    }
    return digest;
}

}  // namespace grader::serve
