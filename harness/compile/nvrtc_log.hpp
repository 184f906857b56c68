#pragma once

// NVRTC's log read by the compile step, which alone knows the compiler's words: its error lines,
// each with the place it names and what kind of error it is, as typed values the diagnosis
// switches on.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace grader {

struct CompileLogError {
    // What a student does about "expected a ';'" is not what they do about an undefined name.
    enum class Kind { syntax, undefined_name, type, other };
    std::string line;  // the log's line, as NVRTC wrote it (host paths already removed)
    std::string file;  // the place it names: "probe.cu", line 35 (column 5, where given)
    int line_number = 0;
    int column = 0;
    Kind kind = Kind::other;
};

// The log's lines that report an error, at most `most`, in order.
std::vector<CompileLogError> compile_log_errors(std::string_view log, std::size_t most);

}  // namespace grader
