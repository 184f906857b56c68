// The build without cpp-jwt (CMake found no libcpp-jwt-dev: Ubuntu 22.04 has none): LTI 1.3 is
// off, and every use of it says why; `grader serve` serves tokens alone.
#include "serve/lti_jwt.hpp"

namespace grader::serve::lti {
namespace {

[[noreturn]] void missing() {
    throw JwtError(jwt_missing_reason());
}

}  // namespace

bool jwt_available() {
    return false;
}

const char* jwt_missing_reason() {
    return "this grader was built without cpp-jwt (Debian's libcpp-jwt-dev, in Debian 12 and "
           "13 and Ubuntu 24.04): LTI 1.3 is off; install it and build again";
}

std::string new_private_key_pem() {
    missing();
}

nlohmann::json public_jwk(const std::string&) {
    missing();
}

std::string public_pem_from_jwk(const nlohmann::json&) {
    missing();
}

nlohmann::json unverified_header(const std::string&) {
    missing();
}

nlohmann::json verified_claims(const std::string&, const std::string&, unsigned) {
    missing();
}

std::string signed_token(const nlohmann::json&, const std::string&, const std::string&) {
    missing();
}

}  // namespace grader::serve::lti
