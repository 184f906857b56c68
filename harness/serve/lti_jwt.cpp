// cpp-jwt's headers define functions that are not inline: they are included by this file alone.
#include "serve/lti_jwt.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/params.h>
#include <openssl/pem.h>

#include <cctype>
#include <cstddef>
#include <exception>
#include <jwt/jwt.hpp>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

namespace grader::serve::lti {
namespace {

constexpr int kKeyBits = 2048;

struct FreeKey {
    void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct FreeBio {
    void operator()(BIO* bio) const { BIO_free(bio); }
};
struct FreeBignum {
    void operator()(BIGNUM* number) const { BN_free(number); }
};
struct FreeContext {
    void operator()(EVP_PKEY_CTX* context) const { EVP_PKEY_CTX_free(context); }
};
struct FreeParamBuild {
    void operator()(OSSL_PARAM_BLD* build) const { OSSL_PARAM_BLD_free(build); }
};
struct FreeParams {
    void operator()(OSSL_PARAM* params) const { OSSL_PARAM_free(params); }
};
using Key = std::unique_ptr<EVP_PKEY, FreeKey>;
using Bio = std::unique_ptr<BIO, FreeBio>;
using Bignum = std::unique_ptr<BIGNUM, FreeBignum>;

std::string bio_text(BIO* bio) {
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio, &data);
    return size > 0 ? std::string(data, static_cast<std::size_t>(size)) : std::string();
}

std::string base64url(const std::string& bytes) {
    std::string encoded = jwt::base64_encode(bytes.data(), bytes.size());
    encoded.resize(jwt::base64_uri_encode(encoded.data(), encoded.size()));
    return encoded;
}

std::string big_endian(const BIGNUM* number) {
    std::string bytes(static_cast<std::size_t>(BN_num_bytes(number)), '\0');
    BN_bn2bin(number, reinterpret_cast<unsigned char*>(bytes.data()));
    return bytes;
}

Key read_private_key(const std::string& pem) {
    Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    Key key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
    if (!key || EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA) {
        throw JwtError("the tool's key is not an RSA private key in PEM");
    }
    return key;
}

// A JWK member that is a base64url number, as bytes; JwtError naming it otherwise.
std::string jwk_number(const nlohmann::json& jwk, const char* name) {
    const auto member = jwk.find(name);
    if (member == jwk.end() || !member->is_string() || member->get<std::string>().empty()) {
        throw JwtError(std::string("the key has no '") + name + "'");
    }
    const std::string text = member->get<std::string>();
    for (const char c : text) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_')) {
            throw JwtError(std::string("the key's '") + name + "' is not base64url");
        }
    }
    return jwt::base64_uri_decode(text.data(), text.size());
}

std::string describe(const std::error_code& error) {
    if (error.category() == jwt::theVerificationErrorCategory) {
        switch (static_cast<jwt::VerificationErrc>(error.value())) {
            case jwt::VerificationErrc::InvalidAlgorithm:
                return "it is not signed with RS256";
            case jwt::VerificationErrc::TokenExpired:
                return "it has expired (exp)";
            case jwt::VerificationErrc::ImmatureSignature:
                return "it is not valid yet (nbf)";
            case jwt::VerificationErrc::InvalidSignature:
                return "its signature does not verify with the platform's key";
            case jwt::VerificationErrc::TypeConversionError:
                return "a time claim (exp, nbf, iat) is not a number";
            default:
                break;
        }
    }
    if (error == jwt::AlgorithmErrc::VerificationErr) {
        return "its signature does not verify with the platform's key";
    }
    if (error == jwt::AlgorithmErrc::NoneAlgorithmUsed) {
        return "it is not signed (alg none)";
    }
    return "it cannot be read as a signed JWT (" + error.message() + ")";
}

}  // namespace

bool jwt_available() {
    return true;
}

const char* jwt_missing_reason() {
    return "";
}

std::string new_private_key_pem() {
    Key key(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<std::size_t>(kKeyBits)));
    Bio bio(BIO_new(BIO_s_mem()));
    if (!key || !bio ||
        PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) !=
            1) {
        throw JwtError("OpenSSL could not make an RSA key");
    }
    return bio_text(bio.get());
}

nlohmann::json public_jwk(const std::string& private_pem) {
    const Key key = read_private_key(private_pem);
    BIGNUM* modulus = nullptr;
    BIGNUM* exponent = nullptr;
    if (EVP_PKEY_get_bn_param(key.get(), OSSL_PKEY_PARAM_RSA_N, &modulus) != 1 ||
        EVP_PKEY_get_bn_param(key.get(), OSSL_PKEY_PARAM_RSA_E, &exponent) != 1) {
        BN_free(modulus);
        throw JwtError("the tool's key has no RSA modulus and exponent");
    }
    const Bignum n(modulus);
    const Bignum e(exponent);
    nlohmann::json jwk = {{"kty", "RSA"},
                          {"n", base64url(big_endian(n.get()))},
                          {"e", base64url(big_endian(e.get()))}};
    // RFC 7638: the SHA-256 of the required members in lexicographic order, without spaces (as
    // nlohmann's object, a sorted map, dumps them).
    const std::string canonical = jwk.dump();
    std::string digest(EVP_MAX_MD_SIZE, '\0');
    unsigned int size = 0;
    if (EVP_Digest(canonical.data(), canonical.size(),
                   reinterpret_cast<unsigned char*>(digest.data()), &size, EVP_sha256(),
                   nullptr) != 1) {
        throw JwtError("OpenSSL could not hash the tool's key");
    }
    digest.resize(size);
    jwk["kid"] = base64url(digest);
    jwk["alg"] = "RS256";
    jwk["use"] = "sig";
    return jwk;
}

std::string public_pem_from_jwk(const nlohmann::json& jwk) {
    if (!jwk.is_object() || jwk.value("kty", "") != "RSA") {
        throw JwtError("the key is not an RSA key (kty)");
    }
    if (jwk.contains("use") && jwk["use"] != "sig") {
        throw JwtError("the key is not for signatures (use)");
    }
    const std::string n_bytes = jwk_number(jwk, "n");
    const std::string e_bytes = jwk_number(jwk, "e");
    const Bignum n(BN_bin2bn(reinterpret_cast<const unsigned char*>(n_bytes.data()),
                             static_cast<int>(n_bytes.size()), nullptr));
    const Bignum e(BN_bin2bn(reinterpret_cast<const unsigned char*>(e_bytes.data()),
                             static_cast<int>(e_bytes.size()), nullptr));
    const std::unique_ptr<OSSL_PARAM_BLD, FreeParamBuild> build(OSSL_PARAM_BLD_new());
    if (!n || !e || !build ||
        OSSL_PARAM_BLD_push_BN(build.get(), OSSL_PKEY_PARAM_RSA_N, n.get()) != 1 ||
        OSSL_PARAM_BLD_push_BN(build.get(), OSSL_PKEY_PARAM_RSA_E, e.get()) != 1) {
        throw JwtError("OpenSSL could not read the key's numbers");
    }
    const std::unique_ptr<OSSL_PARAM, FreeParams> params(OSSL_PARAM_BLD_to_param(build.get()));
    const std::unique_ptr<EVP_PKEY_CTX, FreeContext> context(
        EVP_PKEY_CTX_new_from_name(nullptr, "RSA", nullptr));
    EVP_PKEY* made = nullptr;
    if (!params || !context || EVP_PKEY_fromdata_init(context.get()) != 1 ||
        EVP_PKEY_fromdata(context.get(), &made, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) {
        throw JwtError("OpenSSL does not take the key's numbers as an RSA key");
    }
    const Key key(made);
    if (EVP_PKEY_get_bits(key.get()) < kKeyBits) {
        throw JwtError("the key has " + std::to_string(EVP_PKEY_get_bits(key.get())) +
                       " bits, fewer than 2048");
    }
    Bio bio(BIO_new(BIO_s_mem()));
    if (!bio || PEM_write_bio_PUBKEY(bio.get(), key.get()) != 1) {
        throw JwtError("OpenSSL could not write the key");
    }
    return bio_text(bio.get());
}

nlohmann::json unverified_header(const std::string& token) {
    std::error_code error;
    try {
        const auto decoded = jwt::decode(token, jwt::params::algorithms({"RS256"}), error,
                                         jwt::params::verify(false));
        if (error) {
            throw JwtError(describe(error));
        }
        return decoded.header().create_json_obj();
    } catch (const JwtError&) {
        throw;
    } catch (const std::exception&) {
        throw JwtError("it cannot be read as a JWT");
    }
}

nlohmann::json verified_claims(const std::string& token, const std::string& public_pem,
                               unsigned leeway_seconds) {
    std::error_code error;
    try {
        const auto decoded = jwt::decode(token, jwt::params::algorithms({"RS256"}), error,
                                         jwt::params::secret(public_pem), jwt::params::verify(true),
                                         jwt::params::leeway(leeway_seconds));
        if (error) {
            throw JwtError(describe(error));
        }
        if (decoded.header().algo() != jwt::algorithm::RS256) {
            throw JwtError("it is not signed with RS256");
        }
        return decoded.payload().create_json_obj();
    } catch (const JwtError&) {
        throw;
    } catch (const std::exception&) {
        throw JwtError("it cannot be read as a signed JWT");
    }
}

std::string signed_token(const nlohmann::json& claims, const std::string& private_pem,
                         const std::string& kid) {
    try {
        jwt::jwt_object token{jwt::params::algorithm("RS256"), jwt::params::secret(private_pem)};
        token.header().add_header("kid", kid);
        for (const auto& [name, value] : claims.items()) {
            token.payload().add_claim(name, value);
        }
        std::error_code error;
        std::string signed_text = token.signature(error);
        if (error) {
            throw JwtError("the token could not be signed: " + error.message());
        }
        return signed_text;
    } catch (const JwtError&) {
        throw;
    } catch (const std::exception& failure) {
        throw JwtError(std::string("the token could not be signed: ") + failure.what());
    }
}

}  // namespace grader::serve::lti
