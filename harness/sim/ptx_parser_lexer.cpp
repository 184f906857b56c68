// PTX text to tokens, and the literals tokens hold (integers, immediates). See ptx_parser.hpp.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "sim/program.hpp"
#include "sim/ptx_parser.hpp"
#include "sim/sim.hpp"

namespace grader::sim::detail {

namespace {

bool is_word_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.' || c == '$' ||
           c == '%';
}
bool is_word_char(char c) {
    return is_word_start(c) || (c >= '0' && c <= '9');
}

}  // namespace

std::vector<Token> tokenize(std::string_view text) {
    std::vector<Token> tokens;
    int line = 1;
    std::size_t i = 0;
    const std::size_t n = text.size();
    while (i < n) {
        const char c = text[i];
        if (c == '\n') {
            ++line;
            ++i;
        } else if (c == ' ' || c == '\t' || c == '\r') {
            ++i;
        } else if (c == '/' && i + 1 < n && text[i + 1] == '/') {
            while (i < n && text[i] != '\n')
                ++i;
        } else if (c == '/' && i + 1 < n && text[i + 1] == '*') {
            i += 2;
            while (i + 1 < n && !(text[i] == '*' && text[i + 1] == '/')) {
                if (text[i] == '\n')
                    ++line;
                ++i;
            }
            i += 2;
        } else if (c == '"') {
            std::size_t j = i + 1;
            while (j < n && text[j] != '"' && text[j] != '\n')
                ++j;
            if (j >= n || text[j] != '"')
                throw ParseError(line, "unterminated string");
            tokens.push_back({TokenKind::string, text.substr(i + 1, j - i - 1), line});
            i = j + 1;
        } else if (is_word_start(c)) {
            std::size_t j = i + 1;
            while (j < n) {
                if (is_word_char(text[j])) {
                    ++j;
                } else if (text[j] == ':' && j + 1 < n && text[j + 1] == ':') {
                    j += 2;  // state-space qualifiers such as shared::cta
                } else {
                    break;
                }
            }
            tokens.push_back({TokenKind::word, text.substr(i, j - i), line});
            i = j;
        } else if (c >= '0' && c <= '9') {
            std::size_t j = i + 1;
            while (j < n && (is_word_char(text[j]) && text[j] != '%' && text[j] != '$'))
                ++j;
            tokens.push_back({TokenKind::number, text.substr(i, j - i), line});
            i = j;
        } else if (std::strchr(",;:[]{}()<>+-!|=@", c) != nullptr) {
            tokens.push_back({TokenKind::punct, text.substr(i, 1), line});
            ++i;
        } else {
            throw ParseError(line, std::string("unexpected character '") + c + "'");
        }
    }
    tokens.push_back({TokenKind::end, {}, line});
    return tokens;
}

bool parse_integer(std::string_view text, std::uint64_t& value) {
    std::string s(text);
    if (!s.empty() && (s.back() == 'U' || s.back() == 'u'))
        s.pop_back();
    if (s.empty())
        return false;
    int base = 10;
    std::size_t start = 0;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        start = 2;
    } else if (s.size() > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
        base = 2;
        start = 2;
    } else if (s.size() > 1 && s[0] == '0') {
        base = 8;
        start = 1;
    }
    std::uint64_t v = 0;
    for (std::size_t k = start; k < s.size(); ++k) {
        const char c = s[k];
        unsigned digit = 0;
        if (c >= '0' && c <= '9') {
            digit = static_cast<unsigned>(c - '0');
        } else if (c >= 'a' && c <= 'f') {
            digit = static_cast<unsigned>(c - 'a' + 10);
        } else if (c >= 'A' && c <= 'F') {
            digit = static_cast<unsigned>(c - 'A' + 10);
        } else {
            return false;
        }
        if (digit >= static_cast<unsigned>(base))
            return false;
        v = v * static_cast<unsigned>(base) + digit;
    }
    value = v;
    return true;
}

// An immediate's raw bits for an operand of type `type`: 0fXXXXXXXX and 0dXXXXXXXXXXXXXXXX are
// IEEE bit patterns; integers are two's complement; a decimal float is converted.
bool parse_immediate(std::string_view text, bool negative, Type type, std::uint64_t& bits) {
    if (text.size() > 2 && text[0] == '0' &&
        (text[1] == 'f' || text[1] == 'F' || text[1] == 'd' || text[1] == 'D')) {
        std::uint64_t raw = 0;
        if (!parse_integer("0x" + std::string(text.substr(2)), raw))
            return false;
        const bool single = text[1] == 'f' || text[1] == 'F';
        if (negative)
            raw ^= single ? 0x80000000ull : 0x8000000000000000ull;
        if (single && type == Type::f64) {
            float f = 0;
            const auto r32 = static_cast<std::uint32_t>(raw);
            std::memcpy(&f, &r32, 4);
            const double d = f;
            std::memcpy(&bits, &d, 8);
        } else {
            bits = raw;
        }
        return true;
    }
    if (text.find_first_of(".eE") != std::string_view::npos &&
        text.find('x') == std::string_view::npos) {
        double d = std::stod(std::string(text));
        if (negative)
            d = -d;
        if (type == Type::f32) {
            const float f = static_cast<float>(d);
            std::uint32_t r32 = 0;
            std::memcpy(&r32, &f, 4);
            bits = r32;
        } else {
            std::memcpy(&bits, &d, 8);
        }
        return true;
    }
    std::uint64_t v = 0;
    if (!parse_integer(text, v))
        return false;
    if (is_float(type)) {
        // An integer literal for a float operand means that value.
        const double d = negative ? -static_cast<double>(v) : static_cast<double>(v);
        if (type == Type::f32) {
            const float f = static_cast<float>(d);
            std::uint32_t r32 = 0;
            std::memcpy(&r32, &f, 4);
            bits = r32;
        } else {
            std::memcpy(&bits, &d, 8);
        }
        return true;
    }
    bits = negative ? (~v + 1) : v;
    return true;
}

void Parser::expect(std::string_view text) {
    if (!at(text)) {
        throw ParseError(peek().line, "expected '" + std::string(text) + "', found '" +
                                          std::string(peek().text) + "'");
    }
    next();
}

void Parser::skip_line(int line) {
    while (peek().kind != TokenKind::end && peek().line == line)
        next();
}

void Parser::skip_to_semicolon() {
    while (peek().kind != TokenKind::end && !at(";"))
        next();
    expect(";");
}

void Parser::skip_braced_block() {
    expect("{");
    int depth = 1;
    while (depth > 0) {
        const Token& t = next();
        if (t.kind == TokenKind::end)
            throw ParseError(t.line, "unbalanced '{'");
        if (t.kind == TokenKind::punct && t.text == "{")
            ++depth;
        if (t.kind == TokenKind::punct && t.text == "}")
            --depth;
    }
}

}  // namespace grader::sim::detail
