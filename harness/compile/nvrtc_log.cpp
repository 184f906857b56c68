#include "compile/nvrtc_log.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

namespace grader {
namespace {

bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

CompileLogError::Kind kind_of(std::string_view error) {
    for (const std::string_view undefined :
         {"is undefined", "was not declared", "undeclared", "has no member"}) {
        if (contains(error, undefined)) {
            return CompileLogError::Kind::undefined_name;
        }
    }
    for (const std::string_view type :
         {"incompatible", "cannot be used to initialize", "a value of type", "no suitable",
          "too few arguments", "too many arguments", "no instance of", "expression must have",
          "cannot be assigned", "argument of type", "conversion", "not a modifiable"}) {
        if (contains(error, type)) {
            return CompileLogError::Kind::type;
        }
    }
    for (const std::string_view syntax :
         {"expected a", "expected an", "unexpected", "unrecognized token", "missing closing",
          "unbalanced", "expected ", "extra text"}) {
        if (contains(error, syntax)) {
            return CompileLogError::Kind::syntax;
        }
    }
    return CompileLogError::Kind::other;
}

int number(std::string_view digits) {
    if (digits.empty() || digits.size() > 8 ||
        !std::all_of(digits.begin(), digits.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
        return 0;
    }
    return std::stoi(std::string(digits));
}

// The place of "probe.cu:35:5: error: ..." or "probe.cu(35): error: ...".
void read_place(std::string_view line, CompileLogError& error) {
    const std::size_t at = line.find(": error");
    if (at == std::string_view::npos) {
        return;
    }
    std::string_view place = line.substr(0, at);
    if (const std::size_t open = place.find('(');
        open != std::string_view::npos && !place.empty() && place.back() == ')') {
        error.file = std::string(place.substr(0, open));
        error.line_number = number(place.substr(open + 1, place.size() - open - 2));
        return;
    }
    // FILE:LINE[:COLUMN]
    const std::size_t last = place.rfind(':');
    if (last == std::string_view::npos) {
        return;
    }
    const std::size_t before = place.rfind(':', last - 1);
    if (before != std::string_view::npos && number(place.substr(before + 1, last - before - 1))) {
        error.file = std::string(place.substr(0, before));
        error.line_number = number(place.substr(before + 1, last - before - 1));
        error.column = number(place.substr(last + 1));
    } else {
        error.file = std::string(place.substr(0, last));
        error.line_number = number(place.substr(last + 1));
    }
}

}  // namespace

std::vector<CompileLogError> compile_log_errors(std::string_view log, std::size_t most) {
    std::vector<CompileLogError> errors;
    std::size_t start = 0;
    while (start < log.size() && errors.size() < most) {
        const std::size_t end = std::min(log.find('\n', start), log.size());
        const std::string_view line = log.substr(start, end - start);
        if (contains(line, "error")) {
            CompileLogError error;
            error.line = std::string(line);
            error.kind = kind_of(line);
            read_place(line, error);
            errors.push_back(std::move(error));
        }
        start = end + 1;
    }
    return errors;
}

}  // namespace grader
