#include "text/text_safety.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>

namespace grader::text {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

struct Decoded {
    char32_t code_point = 0;
    std::size_t length = 0;
};

// The well-formed UTF-8 sequence at text[at], or nullopt (Unicode's table 3-7: no overlong
// form, no surrogate, nothing past U+10FFFF).
std::optional<Decoded> decode(std::string_view text, std::size_t at) {
    const auto byte = static_cast<unsigned char>(text[at]);
    if (byte < 0x80) {
        return Decoded{byte, 1};
    }
    std::size_t length = 0;
    char32_t code_point = 0;
    char32_t smallest = 0;
    if (byte >= 0xC2 && byte <= 0xDF) {
        length = 2;
        code_point = byte & 0x1F;
        smallest = 0x80;
    } else if (byte >= 0xE0 && byte <= 0xEF) {
        length = 3;
        code_point = byte & 0x0F;
        smallest = 0x800;
    } else if (byte >= 0xF0 && byte <= 0xF4) {
        length = 4;
        code_point = byte & 0x07;
        smallest = 0x10000;
    } else {
        return std::nullopt;
    }
    if (at + length > text.size()) {
        return std::nullopt;
    }
    for (std::size_t k = 1; k < length; ++k) {
        const auto next = static_cast<unsigned char>(text[at + k]);
        if ((next & 0xC0) != 0x80) {
            return std::nullopt;
        }
        code_point = (code_point << 6) | (next & 0x3F);
    }
    if (code_point < smallest || code_point > 0x10FFFF ||
        (code_point >= 0xD800 && code_point <= 0xDFFF)) {
        return std::nullopt;
    }
    return Decoded{code_point, length};
}

void append_escape(std::string& out, char32_t code_point) {
    char escaped[16];
    if (code_point < 0x80) {
        std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned>(code_point));
    } else {
        std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(code_point));
    }
    out += escaped;
}

// A carriage return that does not end a line moves a terminal's cursor back over what was
// written; it is shown as the other controls are, or as "\r" beside "\n" on one line.
void append_lone_cr(std::string& out, bool keep_lines) {
    if (keep_lines) {
        append_escape(out, '\r');
    } else {
        out += "\\r";
    }
}

// Walks text as code points, repairing what is not UTF-8, and hands each to `emit` with its
// bytes (U+FFFD's for a bad byte).
template <typename Emit>
void for_each_code_point(std::string_view text, Emit&& emit) {
    std::size_t at = 0;
    while (at < text.size()) {
        if (const auto decoded = decode(text, at)) {
            emit(decoded->code_point, text.substr(at, decoded->length));
            at += decoded->length;
        } else {
            emit(char32_t{0xFFFD}, kReplacement);
            ++at;
        }
    }
}

std::string visible_text(std::string_view text, bool keep_lines) {
    std::string out;
    out.reserve(text.size());
    bool after_cr = false;
    for_each_code_point(text, [&](char32_t code_point, std::string_view bytes) {
        if (after_cr) {
            after_cr = false;
            if (code_point == '\n' && keep_lines) {
                out += '\n';  // a Windows line end is a line end
                return;
            }
            append_lone_cr(out, keep_lines);
        }
        if (code_point == '\r') {
            after_cr = true;
            return;
        }
        if (keep_lines && (code_point == '\n' || code_point == '\t')) {
            out += static_cast<char>(code_point);
        } else if (code_point == '\n') {
            out += "\\n";
        } else if (code_point == '\t') {
            out += "\\t";
        } else if (is_hidden_control(code_point)) {
            append_escape(out, code_point);
        } else {
            out.append(bytes);
        }
    });
    if (after_cr) {
        append_lone_cr(out, keep_lines);
    }
    return out;
}

std::string html_escape(const std::string& shown) {
    std::string out;
    out.reserve(shown.size());
    for (const char c : shown) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

bool is_ascii_alnum(char32_t c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Spaces, quotes, dashes and other punctuation outside ASCII that two copies of a sentence may
// differ by: Latin-1's punctuation, General Punctuation, CJK punctuation and the full-width
// forms of ASCII punctuation.
bool is_unicode_punctuation_or_space(char32_t c) {
    if (c >= 0xA0 && c <= 0xBF) {
        // Latin-1's symbols and punctuation, but not its superscript digits and fractions.
        return c != 0xB2 && c != 0xB3 && c != 0xB9 && c != 0xBC && c != 0xBD && c != 0xBE;
    }
    return c == 0xD7 || c == 0xF7 || (c >= 0x2000 && c <= 0x206F) || (c >= 0x3000 && c <= 0x303F) ||
           (c >= 0xFE10 && c <= 0xFE1F) || (c >= 0xFE30 && c <= 0xFE6F) ||
           (c >= 0xFF01 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20) ||
           (c >= 0xFF3B && c <= 0xFF40) || (c >= 0xFF5B && c <= 0xFF65);
}

// nlohmann's dump() (replacing bytes that are not UTF-8) escapes C0 controls and writes every
// other character raw. Each character still hidden lies inside a string, since JSON's structure
// is ASCII, and each is in the Basic Multilingual Plane, so one \uXXXX escape is the same value.
std::string escape_hidden_in_json(const std::string& dumped) {
    std::string out;
    out.reserve(dumped.size());
    for_each_code_point(dumped, [&](char32_t code_point, std::string_view bytes) {
        if (code_point >= 0x7F && is_hidden_control(code_point)) {
            char escaped[16];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(code_point));
            out += escaped;
        } else {
            out.append(bytes);
        }
    });
    return out;
}

template <typename Json>
std::string dump_json(const Json& document, int indent) {
    return escape_hidden_in_json(document.dump(indent, ' ', false, Json::error_handler_t::replace));
}

}  // namespace

std::string repair_utf8(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    for_each_code_point(bytes, [&](char32_t, std::string_view piece) { out.append(piece); });
    return out;
}

std::size_t first_invalid_utf8(std::string_view bytes) {
    std::size_t at = 0;
    while (at < bytes.size()) {
        const auto decoded = decode(bytes, at);
        if (!decoded) {
            return at;
        }
        at += decoded->length;
    }
    return std::string_view::npos;
}

bool is_hidden_control(char32_t c) {
    return c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F) || c == 0x061C || c == 0x200E ||
           c == 0x200F || (c >= 0x2028 && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069) ||
           c == 0xFFFE || c == 0xFFFF;
}

std::string visible(std::string_view text) {
    return visible_text(text, true);
}

std::string visible_line(std::string_view text) {
    return visible_text(text, false);
}

std::string html(std::string_view text) {
    return html_escape(visible(text));
}

std::string html_line(std::string_view text) {
    return html_escape(visible_line(text));
}

std::string xml(std::string_view text, XmlPlace place) {
    const bool attribute = place == XmlPlace::attribute;
    std::string out;
    for (const char c : visible(text)) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += attribute ? "&quot;" : "\"";
                break;
            case '\'':
                out += attribute ? "&apos;" : "'";
                break;
            case '\n':
                out += attribute ? "&#10;" : "\n";
                break;
            case '\t':
                out += attribute ? "&#9;" : "\t";
                break;
            default:
                out += c;
        }
    }
    return out;
}

namespace {

bool formula_character(char c) {
    return c == '=' || c == '+' || c == '-' || c == '@';
}

// What a formula needs to call a function, reach a program (DDE), or another sheet or book.
constexpr const char* kFormulaReach = "(|![";

// Whether a key that starts with +, - or @ can do nothing in a spreadsheet but show itself (or
// an error): letters, digits, spaces and . _ - + @ only, UTF-8 letters included.
bool harmless_key(std::string_view value) {
    return std::all_of(value.begin(), value.end(), [](char c) {
        const auto byte = static_cast<unsigned char>(c);
        return byte >= 0x80 || std::isalnum(byte) != 0 || c == ' ' || c == '.' || c == '_' ||
               c == '-' || c == '+' || c == '@';
    });
}

}  // namespace

std::string csv_field(std::string_view text, CsvCell cell) {
    const std::string shown = visible_line(text);
    std::string value;
    value.reserve(shown.size() + 2);
    // visible_line writes a leading tab or CR as "\t" or "\r": a backslash start is a control.
    const bool formula_start = !shown.empty() && (formula_character(shown[0]) || shown[0] == '\\');
    if (formula_start &&
        !(cell == CsvCell::key && shown[0] != '=' && shown[0] != '\\' && harmless_key(shown))) {
        value += '\'';
    }
    for (std::size_t i = 0; i < shown.size(); ++i) {
        value += shown[i];
        if (shown[i] != ';') {
            continue;
        }
        std::size_t next = i + 1;
        while (next < shown.size() && shown[next] == ' ') {
            value += shown[next++];
        }
        if (next < shown.size() && formula_character(shown[next])) {
            value += '\'';
        }
        i = next - 1;
    }
    if (value.find_first_of(",;\"") == std::string::npos &&
        value.find_first_of(kFormulaReach) == std::string::npos) {
        return value;
    }
    std::string quoted = "\"";
    for (const char c : value) {
        quoted += c;
        if (c == '"') {
            quoted += '"';
        }
    }
    return quoted + "\"";
}

std::string csv_row(const std::vector<std::string>& fields) {
    std::string row;
    for (std::size_t i = 0; i < fields.size(); ++i) {
        row += (i > 0 ? "," : "") + fields[i];
    }
    return row + "\r\n";
}

std::string markdown_inline(std::string_view text) {
    std::string out;
    for (const char c : visible(text)) {
        switch (c) {
            case '\n':
            case '\t':
                out += ' ';
                break;
            case '\\':
            case '`':
            case '*':
            case '_':
            case '[':
            case ']':
            case '<':
            case '>':
            case '|':
            case '#':
            case '~':
            case '!':
                out += '\\';
                out += c;
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::string json_text(const nlohmann::json& document, int indent) {
    return dump_json(document, indent);
}

std::string json_text(const nlohmann::ordered_json& document, int indent) {
    return dump_json(document, indent);
}

std::string url_path(std::string_view path) {
    static const char* const kHex = "0123456789ABCDEF";
    std::string out;
    for (const char c : path) {
        const auto byte = static_cast<unsigned char>(c);
        if (is_ascii_alnum(byte) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
            out += c;
        } else {
            out += '%';
            out += kHex[byte >> 4];
            out += kHex[byte & 0x0F];
        }
    }
    if (!out.empty() && out[0] == '/') {
        out.insert(out.begin(), '.');
    }
    return out;
}

std::string shorten(std::string_view text, std::size_t max_bytes) {
    if (text.size() <= max_bytes) {
        return std::string(text);
    }
    const std::size_t cut = utf8_boundary(text, max_bytes > 3 ? max_bytes - 3 : 0);
    return std::string(text.substr(0, cut)) + "...";
}

std::size_t utf8_boundary(std::string_view text, std::size_t at) {
    at = std::min(at, text.size());
    while (at > 0 && at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) {
        --at;
    }
    return at;
}

std::size_t display_width(std::string_view text) {
    std::size_t width = 0;
    for (const char c : text) {
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
            ++width;
        }
    }
    return width;
}

namespace {

struct IdFold {
    char32_t code_point;
    const char* folded;  // UTF-8
};

// Generated from Unicode's confusables.txt by scripts/generate-id-folding.py; it also defines
// GRADER_ID_IGNORABLE_RANGES.
constexpr IdFold kIdFolds[] = {
#include "text/id_folding_table.inc"
};

struct CodePointRange {
    char32_t first;
    char32_t last;
};
constexpr CodePointRange kIgnorable[] = {GRADER_ID_IGNORABLE_RANGES};

bool is_default_ignorable(char32_t c) {
    return std::any_of(std::begin(kIgnorable), std::end(kIgnorable),
                       [c](const CodePointRange& r) { return c >= r.first && c <= r.last; });
}

// A code point of the Basic Multilingual Plane in three bytes of UTF-8 (U+0800 to U+FFFF).
void append_three_byte_utf8(char32_t c, std::string& out) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
}

// Appends c's fold from the table, or c itself (`bytes`, its UTF-8) where it has none.
void append_fold(char32_t c, std::string_view bytes, std::string& key) {
    const auto found = std::lower_bound(
        std::begin(kIdFolds), std::end(kIdFolds), c,
        [](const IdFold& fold, char32_t wanted) { return fold.code_point < wanted; });
    if (found != std::end(kIdFolds) && found->code_point == c) {
        key += found->folded;
    } else {
        key.append(bytes);
    }
}

// Hangul syllables, decomposed as NFKD does it (the Unicode Standard, section 3.12): U+D55C is
// U+1112 U+1161 U+11AB. The table leaves them out, since the decomposition is arithmetic.
constexpr char32_t kSyllableFirst = 0xAC00;
constexpr char32_t kSyllableCount = 11172;
constexpr char32_t kLeadingFirst = 0x1100;
constexpr char32_t kVowelFirst = 0x1161;
constexpr char32_t kTrailingBefore = 0x11A7;  // a trailing index of 0 means none
constexpr char32_t kVowelCount = 21;
constexpr char32_t kTrailingCount = 28;

bool append_hangul_syllable_fold(char32_t c, std::string& key) {
    if (c < kSyllableFirst || c >= kSyllableFirst + kSyllableCount) {
        return false;
    }
    const char32_t index = c - kSyllableFirst;
    const char32_t jamo[3] = {
        kLeadingFirst + index / (kVowelCount * kTrailingCount),
        kVowelFirst + (index % (kVowelCount * kTrailingCount)) / kTrailingCount,
        kTrailingBefore + index % kTrailingCount};
    for (const char32_t part : jamo) {
        if (part == kTrailingBefore) {
            continue;
        }
        std::string bytes;
        append_three_byte_utf8(part, bytes);
        append_fold(part, bytes, key);
    }
    return true;
}

}  // namespace

namespace {

// The text as ids and sentences compare it: each code point through the table (a look-alike
// letter becomes the letter it imitates, case folded), default-ignorable code points and
// controls dropped.
std::string fold_look_alikes(std::string_view text) {
    std::string folded;
    for_each_code_point(text, [&](char32_t c, std::string_view bytes) {
        if (is_default_ignorable(c) || is_hidden_control(c)) {
            return;
        }
        if (!append_hangul_syllable_fold(c, folded)) {
            append_fold(c, bytes, folded);
        }
    });
    return folded;
}

}  // namespace

std::string id_key(std::string_view id) {
    const std::string key = fold_look_alikes(id);
    const std::size_t first = key.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) {
        return {};
    }
    return key.substr(first, key.find_last_not_of(" \t\r\n") - first + 1);
}

std::string comparison_key(std::string_view text) {
    // Punctuation and spaces go before the fold too: it maps some of them to letters (an em dash
    // to a katakana prolonged sound mark).
    std::string letters;
    for_each_code_point(text, [&](char32_t c, std::string_view bytes) {
        if (c < 0x80 ? !is_ascii_alnum(c) : is_unicode_punctuation_or_space(c)) {
            return;
        }
        letters.append(bytes);
    });
    std::string key;
    for_each_code_point(fold_look_alikes(letters), [&](char32_t c, std::string_view bytes) {
        if (c < 0x80) {
            if (is_ascii_alnum(c)) {
                key += static_cast<char>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
            }
            return;
        }
        if (is_hidden_control(c) || is_unicode_punctuation_or_space(c) || c == 0xFFFD ||
            c == 0xFEFF || c == 0x200B) {
            return;
        }
        if ((c >= 0xC0 && c <= 0xDE) && c != 0xD7) {
            // Latin-1's capitals are their small letters less 0x20; both encode in two bytes.
            const char32_t lower = c + 0x20;
            key += static_cast<char>(0xC0 | (lower >> 6));
            key += static_cast<char>(0x80 | (lower & 0x3F));
            return;
        }
        key.append(bytes);
    });
    return key;
}

}  // namespace grader::text
