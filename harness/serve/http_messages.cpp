#include "serve/http_messages.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>

namespace grader::serve {

std::string percent_decode(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%' && i + 2 < text.size() &&
            std::isxdigit(static_cast<unsigned char>(text[i + 1])) != 0 &&
            std::isxdigit(static_cast<unsigned char>(text[i + 2])) != 0) {
            out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
            i += 2;
        } else {
            out += text[i] == '+' ? ' ' : text[i];
        }
    }
    return out;
}

std::map<std::string, std::string> parse_form(const std::string& text) {
    std::map<std::string, std::string> fields;
    std::size_t begin = 0;
    while (begin <= text.size()) {
        const std::size_t amp = std::min(text.find('&', begin), text.size());
        const std::string pair = text.substr(begin, amp - begin);
        const std::size_t equals = pair.find('=');
        if (!pair.empty()) {
            fields[percent_decode(pair.substr(0, equals))] =
                equals == std::string::npos ? "" : percent_decode(pair.substr(equals + 1));
        }
        begin = amp + 1;
    }
    return fields;
}

}  // namespace grader::serve
