#pragma once

// Tokens: what a student or an instructor types (or keeps in the page) to be known to the
// service. A token is 24 random bytes written as 48 hex digits after "gs-"; the service keeps
// only its SHA-256, so a copy of the state file lets no one submit as a student. 192 random bits
// need no salt nor a slow hash: nothing shorter than the token itself could be guessed.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace grader::serve {

using TokenHash = std::array<std::uint8_t, 32>;

// A fresh token from the kernel's random source. Throws std::runtime_error where none can be had.
std::string new_token();

// Whether the text has a token's form ("gs-" and 48 lower-case hex digits), before any look-up.
bool looks_like_token(std::string_view text);

// SHA-256 of the token (common/text.hpp's sha256), as the state file keeps it.
TokenHash hash_token(std::string_view token);

}  // namespace grader::serve
