// What PTX text says about an entry, and the ABI comparison. Pure text work, no NVRTC.

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "compile/compile.hpp"

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

std::vector<std::string> ptx_clock_reads(std::string_view ptx) {
    static const std::regex file_directive(R"re(^\s*\.file\s+(\d+)\s+"([^"]*)")re");
    static const std::regex loc_directive(R"(^\s*\.loc\s+(\d+)\s+(\d+))");
    static const std::regex clock_register(
        R"(%(globaltimer_lo|globaltimer_hi|globaltimer|clock64|clock)\b)");
    static const std::regex sleep_instruction(R"(^\s*(@!?%\w+\s+)?nanosleep\b)");
    std::map<std::string, std::string> files;
    std::string where = "an unknown line";
    std::vector<std::string> reads;
    std::size_t start = 0;
    while (start < ptx.size()) {
        std::size_t end = ptx.find('\n', start);
        if (end == std::string_view::npos) {
            end = ptx.size();
        }
        const std::string line(ptx.substr(start, end - start));
        start = end + 1;
        std::smatch match;
        if (std::regex_search(line, match, file_directive)) {
            const std::string path = match[2].str();
            files[match[1].str()] = path.substr(path.find_last_of('/') + 1);
            continue;
        }
        if (std::regex_search(line, match, loc_directive)) {
            const auto file = files.find(match[1].str());
            where = (file == files.end() ? std::string("the kernel") : file->second) + " line " +
                    match[2].str();
            continue;
        }
        std::string what;
        if (std::regex_search(line, match, clock_register)) {
            what = "%" + match[1].str();
        } else if (std::regex_search(line, match, sleep_instruction)) {
            what = "nanosleep";
        }
        if (!what.empty()) {
            const std::string read = what + " at " + where;
            if (std::find(reads.begin(), reads.end(), read) == reads.end()) {
                reads.push_back(read);
            }
        }
    }
    return reads;
}

std::string ptx_without_host_paths(std::string_view ptx) {
    static const std::regex file_directive(R"((\.file\s+\d+\s+")([^"]*/)([^"/]*"))");
    return std::regex_replace(std::string(ptx), file_directive, "$1$3");
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
