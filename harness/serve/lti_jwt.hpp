#pragma once

// JSON Web Tokens, signatures and keys for LTI 1.3, each from a library: the token's parts, its
// base64url and its RS256 signature from cpp-jwt (Debian's libcpp-jwt-dev, header-only over
// OpenSSL), the keys themselves (an RSA pair made, a JSON Web Key read or written) from
// OpenSSL 3. Neither library reads a JWK, so the key's two numbers go between them here, and
// nothing else.
//
// Where this grader was built without cpp-jwt (Ubuntu 22.04 has no libcpp-jwt-dev), every
// function throws JwtError saying so: `grader serve` then serves tokens alone.

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace grader::serve::lti {

// A token or a key that cannot be read, made or trusted; what() says why, in a few words.
class JwtError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Whether this build has cpp-jwt (LTI 1.3), and if not, the sentence that says what to install.
bool jwt_available();
const char* jwt_missing_reason();

// The tool's own RSA key (2048 bits), as PKCS#8 PEM.
std::string new_private_key_pem();
// Its public half as a JWK: kty, alg RS256, use sig, n, e, and its kid (RFC 7638's thumbprint).
nlohmann::json public_jwk(const std::string& private_pem);
// A platform's JWK (RSA: n and e) as the PEM public key cpp-jwt verifies with. JwtError where
// it is not an RSA key of at least 2048 bits.
std::string public_pem_from_jwk(const nlohmann::json& jwk);

// The header of a token, read before its signature is checked (its kid chooses the key).
nlohmann::json unverified_header(const std::string& token);
// The claims of a token signed RS256 with the key; JwtError otherwise: another algorithm (none,
// HS256), a signature that does not verify, exp passed or nbf not reached by more than
// `leeway_seconds`.
nlohmann::json verified_claims(const std::string& token, const std::string& public_pem,
                               unsigned leeway_seconds);
// A token of these claims, signed RS256 with the private key, its header naming `kid`.
std::string signed_token(const nlohmann::json& claims, const std::string& private_pem,
                         const std::string& kid);

}  // namespace grader::serve::lti
