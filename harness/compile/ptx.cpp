// What PTX text says about an entry, and the ABI comparison. Pure text work, no NVRTC.

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compile/compile.hpp"
#include "exercise/exercise.hpp"
#include "text/text_safety.hpp"

namespace grader {
namespace {

bool is_ptx_identifier_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$' || c == '%';
}

std::vector<std::string> words(std::string_view text) {
    std::vector<std::string> result;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])) != 0) {
            ++i;
        }
        const std::size_t start = i;
        while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])) == 0) {
            ++i;
        }
        if (i > start) {
            result.emplace_back(text.substr(start, i - start));
        }
    }
    return result;
}

// Bytes of a PTX fundamental type: .u64 8, .f32 4, .b8 1, .pred 1 ...; 0 where unknown.
std::size_t type_bytes(const std::string& type) {
    if (type == ".pred") {
        return 1;
    }
    if (type.size() < 3 || type[0] != '.') {
        return 0;
    }
    const std::string bits = type.substr(2);
    if (type == ".f16x2" || type == ".bf16x2") {
        return 4;
    }
    if (bits == "8" || bits == "16" || bits == "32" || bits == "64" || bits == "128") {
        return static_cast<std::size_t>(std::stoi(bits)) / 8;
    }
    if (type == ".bf16") {
        return 2;
    }
    return 0;
}

PtxParam parse_param(std::string_view declaration) {
    PtxParam param;
    std::vector<std::string> parts = words(declaration);
    if (!parts.empty() && parts.front() == ".param") {
        parts.erase(parts.begin());
    }
    if (parts.empty()) {
        return param;
    }
    std::string name = parts.back();
    parts.pop_back();
    std::size_t count = 1;
    std::string array;
    const std::size_t bracket = name.find('[');
    if (bracket != std::string::npos) {
        array = name.substr(bracket);
        count = static_cast<std::size_t>(std::strtoull(array.c_str() + 1, nullptr, 10));
    }
    std::size_t element = 0;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (!param.ptx_type.empty()) {
            param.ptx_type += ' ';
        }
        param.ptx_type += parts[i];
        const std::size_t bytes = type_bytes(parts[i]);
        if (bytes != 0) {
            element = bytes;
        }
        if (parts[i] == ".align" && i + 1 < parts.size()) {
            param.ptx_type += ' ' + parts[++i];
        }
    }
    param.ptx_type += array;
    param.size = element * count;
    return param;
}

}  // namespace

PtxEntry ptx_entry(std::string_view ptx, std::string_view entry_name) {
    PtxEntry entry;
    std::size_t search = 0;
    while (true) {
        const std::size_t keyword = ptx.find(".entry", search);
        if (keyword == std::string_view::npos) {
            return entry;
        }
        search = keyword + 6;
        std::size_t i = search;
        while (i < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[i])) != 0) {
            ++i;
        }
        const std::size_t name_start = i;
        while (i < ptx.size() && is_ptx_identifier_char(ptx[i])) {
            ++i;
        }
        if (ptx.substr(name_start, i - name_start) != entry_name || i == name_start + 0) {
            continue;
        }
        entry.found = true;
        while (i < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[i])) != 0) {
            ++i;
        }
        if (i >= ptx.size() || ptx[i] != '(') {
            return entry;  // an entry without parameters
        }
        const std::size_t close = ptx.find(')', i);
        const std::string_view list = ptx.substr(
            i + 1, close == std::string_view::npos ? std::string_view::npos : close - i - 1);
        std::size_t start = 0;
        while (start <= list.size()) {
            const std::size_t comma = list.find(',', start);
            const std::string_view declaration = list.substr(
                start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
            if (declaration.find(".param") != std::string_view::npos) {
                entry.params.push_back(parse_param(declaration));
            }
            if (comma == std::string_view::npos) {
                break;
            }
            start = comma + 1;
        }
        return entry;
    }
}

namespace {

// Linear scanning of PTX lines, never a regex: std::regex recurses once per character it
// repeats, so a line of half a megabyte (an asm string of blanks) overflows the stack.

bool is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == '\n';
}

bool is_word_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

void skip_blanks(std::string_view text, std::size_t& i) {
    while (i < text.size() && is_blank(text[i])) {
        ++i;
    }
}

// At least one blank, skipped; false where there is none.
bool skip_some_blanks(std::string_view text, std::size_t& i) {
    const std::size_t start = i;
    skip_blanks(text, i);
    return i > start;
}

// At least one digit, returned; empty where there is none.
std::string_view digits_at(std::string_view text, std::size_t& i) {
    const std::size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) {
        ++i;
    }
    return text.substr(start, i - start);
}

bool keyword_at(std::string_view text, std::size_t i, std::string_view keyword) {
    return text.substr(i, keyword.size()) == keyword;
}

// `.file N "path"` at the start of a line (after blanks): N and the path.
bool file_directive(std::string_view line, std::string_view& number, std::string_view& path) {
    std::size_t i = 0;
    skip_blanks(line, i);
    if (!keyword_at(line, i, ".file")) {
        return false;
    }
    i += 5;
    if (!skip_some_blanks(line, i) || (number = digits_at(line, i)).empty() ||
        !skip_some_blanks(line, i) || i >= line.size() || line[i] != '"') {
        return false;
    }
    const std::size_t close = line.find('"', i + 1);
    if (close == std::string_view::npos) {
        return false;
    }
    path = line.substr(i + 1, close - i - 1);
    return true;
}

// `.loc FILE LINE [COLUMN]` at the start of a line; `column` is empty where none is given.
bool loc_directive(std::string_view line, std::string_view& file, std::string_view& number,
                   std::string_view& column) {
    std::size_t i = 0;
    skip_blanks(line, i);
    if (!keyword_at(line, i, ".loc")) {
        return false;
    }
    i += 4;
    if (!(skip_some_blanks(line, i) && !(file = digits_at(line, i)).empty() &&
          skip_some_blanks(line, i) && !(number = digits_at(line, i)).empty())) {
        return false;
    }
    column = skip_some_blanks(line, i) ? digits_at(line, i) : std::string_view();
    return true;
}

// The first clock register the line names ("%clock64"), as a whole word; empty where none.
std::string_view clock_register(std::string_view line) {
    static constexpr std::string_view kRegisters[] = {"globaltimer_lo", "globaltimer_hi",
                                                      "globaltimer", "clock64", "clock"};
    for (std::size_t at = line.find('%'); at != std::string_view::npos;
         at = line.find('%', at + 1)) {
        for (const std::string_view name : kRegisters) {
            const std::size_t end = at + 1 + name.size();
            if (keyword_at(line, at + 1, name) &&
                (end >= line.size() || !is_word_char(line[end]))) {
                return line.substr(at, name.size() + 1);
            }
        }
    }
    return {};
}

// `nanosleep` as the line's instruction, with or without a guard predicate (`@%p1`, `@!%p1`).
bool sleep_instruction(std::string_view line) {
    std::size_t i = 0;
    skip_blanks(line, i);
    if (i < line.size() && line[i] == '@') {
        std::size_t guard = i + 1;
        if (guard < line.size() && line[guard] == '!') {
            ++guard;
        }
        if (guard < line.size() && line[guard] == '%') {
            std::size_t name = guard + 1;
            while (name < line.size() && is_word_char(line[name])) {
                ++name;
            }
            std::size_t after = name;
            if (name > guard + 1 && skip_some_blanks(line, after)) {
                i = after;
            }
        }
    }
    const std::size_t end = i + 9;
    return keyword_at(line, i, "nanosleep") && (end >= line.size() || !is_word_char(line[end]));
}

}  // namespace

std::vector<std::string> ptx_clock_reads(std::string_view ptx, std::size_t max_reads) {
    // A .file name is whatever a line of the PTX says (an asm comment can forge one): bounded.
    constexpr std::size_t kMaxFileName = 120;
    std::map<std::string, std::string, std::less<>> files;
    std::string where = "an unknown line";
    std::vector<std::string> reads;
    std::set<std::string, std::less<>> seen;
    std::size_t left_out = 0;
    std::size_t start = 0;
    while (start < ptx.size()) {
        std::size_t end = ptx.find('\n', start);
        if (end == std::string_view::npos) {
            end = ptx.size();
        }
        const std::string_view line = ptx.substr(start, end - start);
        start = end + 1;
        std::string_view first;
        std::string_view second;
        if (file_directive(line, first, second)) {
            if (files.size() < 4096 || files.count(first) != 0) {
                const std::string_view base = second.substr(second.find_last_of('/') + 1);
                files[std::string(first.substr(0, 20))] = text::shorten(base, kMaxFileName);
            }
            continue;
        }
        std::string_view column;
        if (loc_directive(line, first, second, column)) {
            // FILE:LINE:COLUMN, as the grader writes every location; "line N" without a file.
            const auto file = files.find(first.substr(0, 20));
            where = (file == files.end() ? "line " : file->second + ":") +
                    std::string(second.substr(0, 20)) +
                    (column.empty() || column == "0" ? std::string()
                                                     : ":" + std::string(column.substr(0, 20)));
            continue;
        }
        std::string what(clock_register(line));
        if (what.empty() && sleep_instruction(line)) {
            what = "nanosleep";
        }
        if (!what.empty()) {
            std::string read = what + " at " + where;
            if (seen.count(read) == 0) {
                if (reads.size() < max_reads) {
                    seen.insert(read);
                    reads.push_back(std::move(read));
                } else if (seen.size() < 65536) {
                    seen.insert(std::move(read));
                    ++left_out;
                } else {
                    ++left_out;  // counted without remembering: may count a repeat twice
                }
            }
        }
    }
    if (left_out > 0) {
        reads.push_back("and " + std::to_string(left_out) + " more (the list was cut)");
    }
    return reads;
}

std::string ptx_without_host_paths(std::string_view ptx) {
    // `.file N "/dir/name"` becomes `.file N "name"`, wherever it stands.
    std::string out;
    out.reserve(ptx.size());
    std::size_t copied = 0;
    for (std::size_t at = ptx.find(".file"); at != std::string_view::npos;
         at = ptx.find(".file", at + 1)) {
        std::size_t i = at + 5;
        if (!skip_some_blanks(ptx, i) || digits_at(ptx, i).empty() || !skip_some_blanks(ptx, i) ||
            i >= ptx.size() || ptx[i] != '"') {
            continue;
        }
        const std::size_t close = ptx.find('"', i + 1);
        if (close == std::string_view::npos) {
            break;
        }
        const std::size_t slash = ptx.substr(i + 1, close - i - 1).find_last_of('/');
        if (slash == std::string_view::npos) {
            continue;
        }
        out.append(ptx.substr(copied, i + 1 - copied));
        copied = i + 1 + slash + 1;
        at = close;
    }
    out.append(ptx.substr(copied));
    return out;
}

std::string abi_problem(const std::vector<std::size_t>& sizes,
                        const std::vector<KernelParameter>& abi, std::string_view kernel_name) {
    if (sizes.size() != abi.size()) {
        std::string signature = kernel_name.empty() ? "kernel" : std::string(kernel_name);
        signature += "(";
        for (std::size_t i = 0; i < abi.size(); ++i) {
            signature += (i > 0 ? ", " : "") + abi[i].type + " " + abi[i].name;
        }
        signature += ")";
        auto parameters = [](std::size_t n) {
            return std::to_string(n) + (n == 1 ? " parameter" : " parameters");
        };
        return "the kernel has " + parameters(sizes.size()) + "; the ABI has " +
               std::to_string(abi.size()) + ": " + signature;
    }
    for (std::size_t i = 0; i < abi.size(); ++i) {
        if (sizes[i] != abi[i].size_bytes) {
            auto bytes = [](std::size_t n) {
                return std::to_string(n) + (n == 1 ? " byte" : " bytes");
            };
            return "parameter " + std::to_string(i + 1) + " (" + abi[i].name + ") is " +
                   bytes(sizes[i]) + "; the ABI expects " + abi[i].type + ", " +
                   bytes(abi[i].size_bytes);
        }
    }
    return {};
}

std::string demangle(const std::string& lowered_name) {
    int status = 0;
    const std::unique_ptr<char, void (*)(void*)> demangled(
        abi::__cxa_demangle(lowered_name.c_str(), nullptr, nullptr, &status), std::free);
    if (status != 0 || !demangled) {
        return lowered_name;
    }
    return demangled.get();
}

}  // namespace grader
