// The include vetting: a preprocessor-directive scanner for untrusted CUDA C++. It never
// evaluates #if: every branch is vetted, since a skipped branch is still read by the compiler's
// lexer and the cheapest safe rule is that no branch may name a host file.
//
// It reads the source the way the preprocessor does: line splices first, then comments (each
// one blank, however many lines it spans), then directives. Where NVRTC is known to read more
// directives than the standard has (a # after a /* */ comment that spans lines starts one, even
// mid-line), the rule is wider than both: every # and %: token outside a directive is vetted as
// the directive it may start, and inside a directive a # may only stringize a macro parameter.

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compile/compile.hpp"
#include "model/measurements.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace {

constexpr std::size_t kMaxEchoedChars = 60;

bool is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\f' || c == '\v';
}

bool is_identifier_start(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$' ||
           static_cast<unsigned char>(c) >= 0x80;
}

bool is_identifier_char(char c) {
    return is_identifier_start(c) || std::isdigit(static_cast<unsigned char>(c)) != 0;
}

bool is_digit(char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

// Directive names that do something to files or to what messages say; a macro parameter with one
// of these names may not be stringized (#include in a macro body is one token pair away from
// the directive, should a compiler ever end a directive where this scanner does not).
bool names_a_refused_directive(std::string_view name) {
    return name == "include" || name == "include_next" || name == "import" || name == "line" ||
           name == "pragma" || name == "embed";
}

// What the student wrote, on one line, shortened and with control characters shown, for a message.
std::string echo(std::string_view text) {
    return text::shorten(text::visible_line(text), kMaxEchoedChars + 3);
}

std::string allowed_list(const std::vector<std::string>& allowed_headers) {
    if (allowed_headers.empty()) {
        return "a submission may not include any file";
    }
    std::string list = "a submission may include only ";
    for (std::size_t i = 0; i < allowed_headers.size(); ++i) {
        if (i > 0) {
            list += (i + 1 == allowed_headers.size()) ? " and " : ", ";
        }
        list += "\"" + allowed_headers[i] + "\"";
    }
    return list;
}

const std::set<std::string, std::less<>>& harmless_directives() {
    static const std::set<std::string, std::less<>> names = {
        "define",  "undef",    "if",   "ifdef", "ifndef", "elif",
        "elifdef", "elifndef", "else", "endif", "error",  "warning"};
    return names;
}

// Pragmas that change diagnostics or code generation only; none of them names a file.
const std::set<std::string, std::less<>>& allowed_pragmas() {
    static const std::set<std::string, std::less<>> names = {"once",
                                                             "unroll",
                                                             "nounroll",
                                                             "nv_diag_suppress",
                                                             "nv_diag_default",
                                                             "nv_diag_warning",
                                                             "nv_diag_error",
                                                             "diag_suppress",
                                                             "diag_default",
                                                             "diag_warning",
                                                             "diag_error"};
    return names;
}

// Identifiers that reach the file system or emit a pragma no matter where they appear.
std::string forbidden_identifier_message(std::string_view identifier) {
    if (identifier.substr(0, 13) == "__has_include") {
        return std::string(identifier) + " is not allowed: a submission may not look for files";
    }
    if (identifier == "__has_embed") {
        return "__has_embed is not allowed: a submission may not look for files";
    }
    if (identifier == "_Pragma" || identifier == "__pragma") {
        return std::string(identifier) +
               " is not allowed; write #pragma unroll and the like "
               "as directives";
    }
    return {};
}

// The source after translation phase 2 (line splices removed, \r\n read as \n), with each
// character's offset in the original, so problems point at the student's own line and column.
struct LogicalText {
    std::string text;
    std::vector<std::size_t> physical;  // physical offset of text[i]; one extra for the end
};

LogicalText splice_lines(std::string_view source) {
    LogicalText logical;
    logical.text.reserve(source.size());
    logical.physical.reserve(source.size() + 1);
    // A UTF-8 byte-order mark at the start is no character of the program (compile_kernel drops
    // it before NVRTC, which would read it as an unrecognized token).
    std::size_t i =
        source.substr(0, kByteOrderMark.size()) == kByteOrderMark ? kByteOrderMark.size() : 0;
    while (i < source.size()) {
        if (source[i] == '\\' && i + 1 < source.size() && source[i + 1] == '\n') {
            i += 2;
            continue;
        }
        if (source[i] == '\\' && i + 2 < source.size() && source[i + 1] == '\r' &&
            source[i + 2] == '\n') {
            i += 3;
            continue;
        }
        if (source[i] == '\r' && i + 1 < source.size() && source[i + 1] == '\n') {
            ++i;
            continue;
        }
        logical.text += source[i];
        logical.physical.push_back(i);
        ++i;
    }
    logical.physical.push_back(source.size());
    return logical;
}

class Vetter {
public:
    Vetter(std::string_view source, const std::vector<std::string>& allowed_headers)
        : source_(source), allowed_(allowed_headers) {
        line_starts_.push_back(0);
        for (std::size_t i = 0; i < source_.size(); ++i) {
            if (source_[i] == '\n') {
                line_starts_.push_back(i + 1);
            }
        }
    }

    std::vector<SourceProblem> run() {
        check_characters();
        logical_ = splice_lines(source_);
        scan();
        check_hidden_directive_lines();
        std::stable_sort(problems_.begin(), problems_.end(),
                         [](const SourceProblem& a, const SourceProblem& b) {
                             return a.line != b.line ? a.line < b.line : a.column < b.column;
                         });
        return std::move(problems_);
    }

private:
    // Phase 1 and 2 hazards, on the physical text.
    void check_characters() {
        if (const std::size_t bad = text::first_invalid_utf8(source_);
            bad != std::string_view::npos) {
            char byte[8];
            std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(source_[bad]));
            add_physical(bad, std::string("the source is not UTF-8 text here (byte ") + byte +
                                  "); save the file as UTF-8");
        }
        for (std::size_t i = 0; i < source_.size(); ++i) {
            const char c = source_[i];
            if (c == '\0') {
                add_physical(i, "the source contains a NUL byte; save it as plain text");
            } else if (c == '\r' && (i + 1 >= source_.size() || source_[i + 1] != '\n')) {
                add_physical(i,
                             "a carriage return without a line feed is not allowed; save the "
                             "file with ordinary line endings");
            } else if (c == '?' && i + 2 < source_.size() && source_[i + 1] == '?' &&
                       std::string_view("=/'()!<>-").find(source_[i + 2]) !=
                           std::string_view::npos) {
                add_physical(i, "the trigraph ??" + std::string(1, source_[i + 2]) +
                                    " is not allowed; write the character it stands for");
                i += 2;
            } else if (c == '\\') {
                std::size_t j = i + 1;
                while (j < source_.size() && is_blank(source_[j])) {
                    ++j;
                }
                if (j > i + 1 &&
                    (j == source_.size() || source_[j] == '\n' || source_[j] == '\r')) {
                    add_physical(i,
                                 "a backslash followed by blanks at the end of a line is not "
                                 "allowed; remove the blanks or the backslash");
                }
            }
        }
    }

    void scan() {
        const std::string& t = logical_.text;
        std::size_t i = 0;
        while (i < t.size()) {
            const char c = t[i];
            if (c == '\n' || is_blank(c) || c == '\r') {
                ++i;
            } else if (c == '/' && at(i + 1) == '/') {
                i = skip_line_comment(i);
            } else if (c == '/' && at(i + 1) == '*') {
                i = skip_block_comment(i);
            } else if (is_hash(i)) {
                // By the standard a directive only where # starts a line; outside a directive a
                // # is no C++ at all, and NVRTC starts a directive after a comment spanning
                // lines even mid-line. So every # here is vetted as the directive it may start.
                i = directive(i);
            } else {
                i = token(i);
            }
        }
    }

    bool is_hash(std::size_t i) const { return at(i) == '#' || (at(i) == '%' && at(i + 1) == ':'); }

    std::size_t after_hash(std::size_t i) const { return i + (at(i) == '#' ? 1 : 2); }

    // What a # inside a directive may be: a stringizing # in a function-like macro's body, text
    // in #error and #warning, or nothing.
    enum class Body { other, message, function_like_macro };

    bool spans_lines(std::size_t from, std::size_t to) const {
        return line_of(logical_.physical[from]) !=
               line_of(logical_.physical[std::min(to, logical_.text.size())]);
    }

    // Token pasting builds identifiers the scan never sees whole (CAT(__has_, include),
    // CAT(_Pra, gma)), so it is refused wherever it appears. Returns the offset after the ##.
    std::size_t refuse_paste(std::size_t hash) {
        add_logical(hash,
                    "## (token pasting) is not allowed: it can build names that are refused, "
                    "such as __has_include and _Pragma; write the name out");
        return after_hash(after_hash(hash));
    }

    // A # (or %:) inside a directive's operands.
    std::size_t hash_in_directive(std::size_t hash, Body body) {
        const std::string& t = logical_.text;
        const std::size_t next = after_hash(hash);
        if (is_hash(next)) {
            return refuse_paste(hash);
        }
        if (body == Body::message) {
            return next;
        }
        if (body == Body::function_like_macro) {
            const std::size_t word = skip_directive_space(next);
            std::size_t word_end = word;
            while (word_end < t.size() && is_identifier_char(t[word_end])) {
                ++word_end;
            }
            const std::string name = t.substr(word, word_end - word);
            const bool parameter = name == "__VA_ARGS__" || name == "__VA_OPT__" ||
                                   std::find(macro_parameters_.begin(), macro_parameters_.end(),
                                             name) != macro_parameters_.end();
            if (parameter && !names_a_refused_directive(name)) {
                return word_end;
            }
            if (parameter) {
                add_logical(hash, "#" + name +
                                      " is not allowed: a parameter named like a directive may "
                                      "not be stringized; rename it");
                return word_end;
            }
        }
        add_logical(hash,
                    "# is allowed inside a directive only to stringize a parameter of a "
                    "function-like macro (#define S(x) #x)");
        return next;
    }

    // One token outside a directive's head; returns the offset after it.
    std::size_t token(std::size_t i) {
        const std::string& t = logical_.text;
        const char c = t[i];
        if (is_identifier_start(c)) {
            std::size_t j = i;
            while (j < t.size() && is_identifier_char(t[j])) {
                ++j;
            }
            const std::string_view identifier(t.data() + i, j - i);
            if (at(j) == '"' && (identifier == "R" || identifier == "u8R" || identifier == "uR" ||
                                 identifier == "UR" || identifier == "LR")) {
                return raw_string(j);
            }
            if ((at(j) == '"' || at(j) == '\'') && (identifier == "u8" || identifier == "u" ||
                                                    identifier == "U" || identifier == "L")) {
                return quoted(j);
            }
            const std::string message = forbidden_identifier_message(identifier);
            if (!message.empty()) {
                add_logical(i, message);
            }
            return j;
        }
        if (is_digit(c) || (c == '.' && is_digit(at(i + 1)))) {
            return pp_number(i);
        }
        if (c == '"' || c == '\'') {
            return quoted(i);
        }
        if (c == '\\' && (at(i + 1) == 'u' || at(i + 1) == 'U')) {
            add_logical(i, "universal character names (\\u, \\U) outside strings are not allowed");
            return i + 2;
        }
        return i + 1;
    }

    // A pp-number, with C++14 digit separators: 1'000 is one token, not a character literal.
    std::size_t pp_number(std::size_t i) const {
        const std::string& t = logical_.text;
        std::size_t j = i + 1;
        while (j < t.size()) {
            const char c = t[j];
            if ((c == '+' || c == '-') &&
                (t[j - 1] == 'e' || t[j - 1] == 'E' || t[j - 1] == 'p' || t[j - 1] == 'P')) {
                ++j;
            } else if (c == '\'' && j + 1 < t.size() && is_identifier_char(t[j + 1])) {
                j += 2;
            } else if (is_identifier_char(c) || c == '.') {
                ++j;
            } else {
                break;
            }
        }
        return j;
    }

    // A string or character literal; it never runs past the end of its line.
    std::size_t quoted(std::size_t i) const {
        const std::string& t = logical_.text;
        const char quote = t[i];
        std::size_t j = i + 1;
        while (j < t.size() && t[j] != '\n') {
            if (t[j] == '\\' && j + 1 < t.size() && t[j + 1] != '\n') {
                j += 2;
            } else if (t[j] == quote) {
                return j + 1;
            } else {
                ++j;
            }
        }
        return j;
    }

    // R"delim( ... )delim", at the opening quote.
    std::size_t raw_string(std::size_t quote) {
        const std::string& t = logical_.text;
        std::size_t j = quote + 1;
        while (j < t.size() && j - quote - 1 <= 16 && t[j] != '(') {
            const char c = t[j];
            if (is_blank(c) || c == ')' || c == '\\' || c == '\n' || c == '"') {
                break;
            }
            ++j;
        }
        if (at(j) != '(' || j - quote - 1 > 16) {
            add_logical(quote,
                        "malformed raw string delimiter; a raw string is R\"delim(...)delim\" "
                        "with at most 16 plain characters in delim");
            return j;
        }
        const std::string closing = ")" + t.substr(quote + 1, j - quote - 1) + "\"";
        const std::size_t end = t.find(closing, j + 1);
        if (end == std::string::npos) {
            add_logical(quote, "this raw string never ends; close it with " + closing);
            return t.size();
        }
        const std::size_t after = end + closing.size();
        // Splices inside a raw string are undone by the standard but not by every compiler.
        if (logical_.physical[after] - logical_.physical[quote] != after - quote) {
            add_logical(quote,
                        "a backslash at the end of a line inside a raw string is not "
                        "allowed");
        }
        return after;
    }

    std::size_t skip_line_comment(std::size_t i) const {
        const std::size_t end = logical_.text.find('\n', i);
        return end == std::string::npos ? logical_.text.size() : end;
    }

    std::size_t skip_block_comment(std::size_t i) {
        const std::size_t end = logical_.text.find("*/", i + 2);
        if (end == std::string::npos) {
            add_logical(i, "this /* comment is never closed; close it with */");
            return logical_.text.size();
        }
        return end + 2;
    }

    // Blanks and comments inside a directive; stops at the end of its logical line.
    std::size_t skip_directive_space(std::size_t i) {
        const std::string& t = logical_.text;
        while (i < t.size()) {
            if (is_blank(t[i]) || t[i] == '\r') {
                ++i;
            } else if (t[i] == '/' && at(i + 1) == '*') {
                i = skip_block_comment(i);
            } else if (t[i] == '/' && at(i + 1) == '/') {
                return skip_line_comment(i);
            } else {
                break;
            }
        }
        return i;
    }

    // The rest of a directive's logical line. A # that follows a /* */ comment spanning lines is
    // vetted as a new directive: NVRTC may read it as one.
    std::size_t end_of_line(std::size_t i, Body body = Body::other) {
        const std::string& t = logical_.text;
        while (i < t.size() && t[i] != '\n') {
            const std::size_t before = i;
            i = skip_directive_space(i);
            if (i >= t.size() || t[i] == '\n') {
                break;
            }
            if (is_hash(i)) {
                i = spans_lines(before, i) ? directive(i) : hash_in_directive(i, body);
            } else {
                i = token(i);
            }
        }
        return i;
    }

    // #define NAME or #define NAME(params): the body is vetted, and a # in it may only stringize
    // one of the parameters.
    std::size_t define(std::size_t after_name) {
        const std::string& t = logical_.text;
        macro_parameters_.clear();
        const std::size_t macro = skip_directive_space(after_name);
        std::size_t macro_end = macro;
        while (macro_end < t.size() && is_identifier_char(t[macro_end])) {
            ++macro_end;
        }
        if (const std::string message =
                forbidden_identifier_message(std::string_view(t).substr(macro, macro_end - macro));
            !message.empty()) {
            add_logical(macro, message);
        }
        if (macro_end == macro || at(macro_end) != '(') {
            return end_of_line(macro_end, Body::other);
        }
        std::size_t i = macro_end + 1;
        while (i < t.size() && t[i] != '\n') {
            i = skip_directive_space(i);
            if (at(i) == ')') {
                ++i;
                break;
            }
            if (is_identifier_start(at(i))) {
                std::size_t end = i;
                while (end < t.size() && is_identifier_char(t[end])) {
                    ++end;
                }
                const std::string name = t.substr(i, end - i);
                if (const std::string message = forbidden_identifier_message(name);
                    !message.empty()) {
                    add_logical(i, message);
                }
                macro_parameters_.push_back(name);
                i = end;
            } else if (at(i) == ',' || at(i) == '.') {
                ++i;
            } else {
                break;  // malformed: NVRTC will say so; the body is still vetted as code
            }
        }
        return end_of_line(i, Body::function_like_macro);
    }

    // A directive at its # or %:; returns the offset of the newline that ends it.
    std::size_t directive(std::size_t hash) {
        const std::string& t = logical_.text;
        vetted_hashes_.insert(hash);
        if (is_hash(after_hash(hash))) {
            return end_of_line(refuse_paste(hash));
        }
        std::size_t i = skip_directive_space(after_hash(hash));
        if (i >= t.size() || t[i] == '\n') {
            return i;  // the null directive
        }
        if (is_digit(t[i])) {
            add_logical(hash, "line markers (# " + echo(rest_of_line(i)) +
                                  ") are not allowed: they make messages name other files");
            return end_of_line(i);
        }
        std::size_t j = i;
        while (j < t.size() && is_identifier_char(t[j])) {
            ++j;
        }
        const std::string name = t.substr(i, j - i);
        if (name == "include") {
            return include_operand(hash, j);
        }
        if (name == "include_next" || name == "import") {
            add_logical(hash, "#" + name + " is not allowed; " + allowed_list(allowed_) +
                                  ", with #include");
            return end_of_line(j);
        }
        if (name == "line") {
            add_logical(hash, "#line is not allowed: it makes messages name other files");
            return end_of_line(j);
        }
        if (name == "pragma") {
            const std::size_t word = skip_directive_space(j);
            std::size_t word_end = word;
            while (word_end < t.size() && is_identifier_char(t[word_end])) {
                ++word_end;
            }
            const std::string pragma = t.substr(word, word_end - word);
            const bool empty_pragma = pragma.empty() && at(skip_directive_space(word)) == '\n';
            if (!empty_pragma && allowed_pragmas().count(pragma) == 0) {
                add_logical(hash, "#pragma " + echo(pragma.empty() ? rest_of_line(word) : pragma) +
                                      " is not allowed; a submission may use #pragma once, "
                                      "unroll, nounroll and nv_diag_suppress");
            }
            return end_of_line(word_end);
        }
        if (name == "define") {
            return define(j);
        }
        if (name == "error" || name == "warning") {
            return end_of_line(j, Body::message);
        }
        if (harmless_directives().count(name) == 0) {
            add_logical(hash, "#" + echo(name.empty() ? rest_of_line(i) : name) +
                                  " is not a directive a submission may use");
        }
        return end_of_line(j);
    }

    // The operand of #include must be a literal "name" or <name> that the exercise provides.
    std::size_t include_operand(std::size_t hash, std::size_t after_name) {
        const std::string& t = logical_.text;
        const std::size_t operand = skip_directive_space(after_name);
        const char open = at(operand);
        if (open != '"' && open != '<') {
            add_logical(hash, "computed #include is not allowed; " + allowed_list(allowed_) +
                                  ", written as #include \"name\"");
            return end_of_line(operand);
        }
        const char close = open == '"' ? '"' : '>';
        const std::size_t name_end = t.find_first_of(std::string{close, '\n'}, operand + 1);
        if (name_end == std::string::npos || t[name_end] != close) {
            add_logical(hash, "#include " + echo(rest_of_line(operand)) + " is not closed; " +
                                  allowed_list(allowed_));
            return end_of_line(operand);
        }
        const std::string name = t.substr(operand + 1, name_end - operand - 1);
        const std::string written = t.substr(operand, name_end + 1 - operand);
        if (std::find(allowed_.begin(), allowed_.end(), name) == allowed_.end()) {
            add_logical(hash,
                        "#include " + echo(written) + " is not allowed; " + allowed_list(allowed_));
            return end_of_line(name_end + 1);
        }
        const std::size_t after = skip_directive_space(name_end + 1);
        if (after < t.size() && t[after] != '\n') {
            add_logical(hash, "#include " + echo(written) +
                                  " must stand alone on its line; remove what follows it");
            return end_of_line(after);
        }
        return after;
    }

    // Second line of defence: a line that the scan above took for part of a comment, a literal
    // or a continued line, read from its start the way the preprocessor would read it were it
    // code (splices undone, comments as spaces, a comment spanning lines before the # as NVRTC
    // reads it): where that reads as a refused directive, it is refused at its #. So "#\" then
    // "include ..." on the next line, or "/**/#include ..." in a comment, cannot hide one.
    void check_hidden_directive_lines() {
        const std::string& t = logical_.text;
        next_comment_end_.assign(t.size() + 1, t.size());
        for (std::size_t i = t.size(); i-- > 1;) {
            next_comment_end_[i - 1] =
                t[i - 1] == '*' && t[i] == '/' ? i + 1 : next_comment_end_[i];
        }
        space_end_.assign(t.size() + 1, std::string::npos);
        std::set<std::size_t> read_hashes;
        for (const std::size_t start : line_starts_) {
            // Splicing is context-free, so the logical text from a line's start is what the
            // preprocessor reads from there.
            const std::size_t line = static_cast<std::size_t>(
                std::lower_bound(logical_.physical.begin(), logical_.physical.end(), start) -
                logical_.physical.begin());
            const std::size_t hash = skip_hidden_space(line);
            if (!is_hash(hash) || vetted_hashes_.count(hash) != 0 ||
                !read_hashes.insert(hash).second) {
                continue;
            }
            const std::size_t name = skip_hidden_space(after_hash(hash));
            std::size_t name_end = name;
            while (name_end < t.size() && is_identifier_char(t[name_end])) {
                ++name_end;
            }
            if (!hidden_line_is_refused(std::string_view(t).substr(name, name_end - name),
                                        hidden_rest_of_line(name_end))) {
                continue;
            }
            const std::size_t shown_end = std::min(t.find('\n', hash), hash + 4 * kMaxEchoedChars);
            add_logical(hash, "\"" + echo(std::string_view(t).substr(hash, shown_end - hash)) +
                                  "\" is inside a comment, string or continued line, but reads as "
                                  "a directive that is not allowed; delete the line");
        }
    }

    // Blanks and /* */ comments from i on, a comment spanning lines included; where they end.
    // Each comment's end is remembered, so reading every line of a long run of comments costs
    // one pass.
    std::size_t skip_hidden_space(std::size_t i) {
        const std::string& t = logical_.text;
        std::vector<std::size_t> comments;
        while (true) {
            while (i < t.size() && (is_blank(t[i]) || t[i] == '\r')) {
                ++i;
            }
            if (at(i) != '/' || at(i + 1) != '*') {
                break;
            }
            if (space_end_[i] != std::string::npos) {
                i = space_end_[i];
                break;
            }
            comments.push_back(i);
            i = next_comment_end_[i + 2];  // the end of the text where it is never closed
        }
        for (const std::size_t comment : comments) {
            space_end_[comment] = i;
        }
        return i;
    }

    // The rest of a hidden directive's line as the preprocessor would read it: comments as
    // spaces, a quoted name as written; no more than a refusal needs to read.
    std::string hidden_rest_of_line(std::size_t i) {
        constexpr std::size_t kMaxRead = 256;
        const std::string& t = logical_.text;
        std::string rest;
        while (i < t.size() && t[i] != '\n' && rest.size() < kMaxRead) {
            if (t[i] == '/' && at(i + 1) == '*') {
                rest += ' ';
                i = skip_hidden_space(i);
            } else if (t[i] == '/' && at(i + 1) == '/') {
                break;
            } else if (t[i] == '"' ||
                       (t[i] == '<' && rest.find_first_not_of(" \t\f\v\r") == std::string::npos)) {
                // A header name (or a string): a /* in it starts no comment.
                const char close = t[i] == '"' ? '"' : '>';
                std::size_t end = i + 1;
                while (end < t.size() && t[end] != close && t[end] != '\n') {
                    ++end;
                }
                end += at(end) == close ? 1 : 0;
                rest.append(t, i, end - i);
                i = end;
            } else {
                rest += t[i++];
            }
        }
        return rest;
    }

    bool hidden_line_is_refused(std::string_view name, std::string_view rest) const {
        if (name.empty()) {
            return rest.find_first_not_of(" \t\f\v\r\n") != std::string_view::npos &&
                   rest.find_first_not_of(" \t\f\v") != std::string_view::npos &&
                   is_digit(rest[rest.find_first_not_of(" \t\f\v")]);
        }
        if (name == "include") {
            const std::size_t open = rest.find_first_not_of(" \t\f\v");
            if (open == std::string_view::npos || (rest[open] != '"' && rest[open] != '<')) {
                return true;
            }
            const std::size_t close = rest.find(rest[open] == '"' ? '"' : '>', open + 1);
            if (close == std::string_view::npos) {
                return true;
            }
            const std::string header(rest.substr(open + 1, close - open - 1));
            return std::find(allowed_.begin(), allowed_.end(), header) == allowed_.end();
        }
        if (name == "pragma") {
            const std::size_t word = rest.find_first_not_of(" \t\f\v");
            std::size_t word_end = word;
            while (word_end < rest.size() && is_identifier_char(rest[word_end])) {
                ++word_end;
            }
            return word == std::string_view::npos ||
                   allowed_pragmas().count(rest.substr(word, word_end - word)) == 0;
        }
        return harmless_directives().count(name) == 0;
    }

    std::string rest_of_line(std::size_t i) const {
        const std::size_t end = logical_.text.find('\n', i);
        return logical_.text.substr(i, end == std::string::npos ? std::string::npos : end - i);
    }

    char at(std::size_t i) const { return i < logical_.text.size() ? logical_.text[i] : '\0'; }

    int line_of(std::size_t physical) const {
        const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), physical);
        return static_cast<int>(it - line_starts_.begin());
    }

    void add_physical(std::size_t physical, std::string message) {
        const int line = line_of(physical);
        const int column =
            static_cast<int>(physical - line_starts_[static_cast<std::size_t>(line - 1)]) + 1;
        problems_.push_back(SourceProblem{line, column, std::move(message)});
    }

    void add_logical(std::size_t logical, std::string message) {
        add_physical(logical_.physical[std::min(logical, logical_.text.size())],
                     std::move(message));
    }

    std::string_view source_;
    const std::vector<std::string>& allowed_;
    std::vector<std::size_t> line_starts_;
    LogicalText logical_;
    std::set<std::size_t> vetted_hashes_;        // each # the scan read as a directive
    std::vector<std::size_t> next_comment_end_;  // after the first */ at or after each offset
    std::vector<std::size_t> space_end_;         // skip_hidden_space() from each comment seen
    std::vector<std::string> macro_parameters_;  // of the #define being read
    std::vector<SourceProblem> problems_;
};

}  // namespace

std::vector<SourceProblem> vet_includes(std::string_view source,
                                        const std::vector<std::string>& allowed_headers) {
    return Vetter(source, allowed_headers).run();
}

std::string to_string(const SourceProblem& problem, std::string_view source_name) {
    std::string text(source_name);
    if (problem.line > 0) {
        text += ":" + std::to_string(problem.line);
        if (problem.column > 0) {
            text += ":" + std::to_string(problem.column);
        }
    }
    return text + ": " + problem.message;
}

}  // namespace grader
