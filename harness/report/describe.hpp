#pragma once

// Observations said in words, where more than one writer says them: the checks' details and the
// report's list of wrong outputs name a wrong element the same way.

#include <cstdint>
#include <string>

#include "model/measurements.hpp"
#include "model/observations.hpp"

namespace grader {

// "stride 8: thread 1234 (block 4, thread 210) holds 1024, expected 2048; 17 of 270336 threads
// wrong", or "row 17, column 3 holds 1.5, expected -2.25; 1024 of 16384 elements wrong".
// The stride is left out where it is 0 (an exercise without a sweep).
std::string describe_wrong_output(int stride, const OutputComparison& result);

// A value an output held: "1024", "2047.5", or "NaN (the output ... was never written)".
std::string describe_value(double value);

// Where a source line of shared accesses is, as the checks' details, the report's line table and
// `grader explain` name it: "probe.cu:34", "line 34" where the PTX names no file, "a line the PTX
// does not name". The file name is the PTX's, which a student's asm can forge: writers make it
// safe for their format.
std::string describe_line_place(const std::string& file, int line);

// "128-bit", or "" for the usual 32-bit accesses (and a width not known).
std::string describe_access_width(std::uint32_t bytes_per_lane);

}  // namespace grader
