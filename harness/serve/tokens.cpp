#include "serve/tokens.hpp"

#include <sys/random.h>
#include <sys/types.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <stdexcept>

#include "common/text.hpp"

namespace grader::serve {
namespace {

constexpr std::string_view kPrefix = "gs-";
constexpr std::size_t kRandomBytes = 24;

}  // namespace

std::string new_token() {
    char bytes[kRandomBytes];
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
    return std::string(kPrefix) + hex_bytes(std::string_view(bytes, sizeof bytes));
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
    return sha256(token);
}

}  // namespace grader::serve
