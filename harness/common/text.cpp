#include "common/text.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <system_error>

namespace grader {

std::string fill_template(std::string_view text, const std::map<std::string, std::string>& values) {
    std::string out;
    out.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) {
        if (text[i] == '{') {
            const std::size_t close = text.find('}', i + 1);
            if (close != std::string_view::npos) {
                const std::string name(text.substr(i + 1, close - i - 1));
                const auto found = values.find(name);
                if (found != values.end()) {
                    out += found->second;
                    i = close + 1;
                    continue;
                }
            }
        }
        out += text[i++];
    }
    return out;
}

std::optional<TextPosition> first_invalid_utf8(std::string_view text) {
    TextPosition position;
    std::size_t i = 0;
    while (i < text.size()) {
        const auto byte = static_cast<unsigned char>(text[i]);
        std::size_t length = 0;
        std::uint32_t min_code_point = 0;
        if (byte < 0x80) {
            length = 1;
        } else if ((byte & 0xE0) == 0xC0) {
            length = 2;
            min_code_point = 0x80;
        } else if ((byte & 0xF0) == 0xE0) {
            length = 3;
            min_code_point = 0x800;
        } else if ((byte & 0xF8) == 0xF0) {
            length = 4;
            min_code_point = 0x10000;
        } else {
            return position;
        }
        if (i + length > text.size()) {
            return position;
        }
        std::uint32_t code_point = length == 1 ? byte : byte & (0x7F >> length);
        for (std::size_t k = 1; k < length; ++k) {
            const auto next = static_cast<unsigned char>(text[i + k]);
            if ((next & 0xC0) != 0x80) {
                return position;
            }
            code_point = (code_point << 6) | (next & 0x3F);
        }
        if (code_point < min_code_point || code_point > 0x10FFFF ||
            (code_point >= 0xD800 && code_point <= 0xDFFF)) {
            return position;
        }
        if (byte == '\n') {
            ++position.line;
            position.column = 1;
        } else {
            ++position.column;
        }
        i += length;
    }
    return std::nullopt;
}

std::optional<std::string> read_file_bounded(const std::filesystem::path& path,
                                             std::size_t max_bytes, std::string& why) {
    std::error_code error;
    const auto status = std::filesystem::status(path, error);
    if (error || !std::filesystem::exists(status)) {
        why = "not found";
        return std::nullopt;
    }
    if (!std::filesystem::is_regular_file(status)) {
        why = "not a regular file";
        return std::nullopt;
    }
    const auto size = std::filesystem::file_size(path, error);
    if (error) {
        why = "unreadable: " + error.message();
        return std::nullopt;
    }
    if (size > max_bytes) {
        why = std::to_string(size) + " bytes, more than the limit of " + std::to_string(max_bytes);
        return std::nullopt;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        why = "unreadable";
        return std::nullopt;
    }
    std::string content(static_cast<std::size_t>(size), '\0');
    in.read(content.data(), static_cast<std::streamsize>(size));
    if (static_cast<std::size_t>(in.gcount()) != size) {
        why = "could not be read whole";
        return std::nullopt;
    }
    return content;
}

std::string format_number(double value, int decimals) {
    if (!std::isfinite(value)) {
        return std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf");
    }
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    std::string text(buffer);
    if (text.find('.') != std::string::npos) {
        while (!text.empty() && text.back() == '0') {
            text.pop_back();
        }
        if (!text.empty() && text.back() == '.') {
            text.pop_back();
        }
    }
    return text == "-0" ? "0" : text;
}

}  // namespace grader
