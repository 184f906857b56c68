#pragma once

// What the parts of a grade say of a launch: how a kernel is named, how a launch's end reads as
// the stage's ending, and how long a line a launch reports may be.

#include <cstddef>
#include <string>

#include "device/device.hpp"
#include "exercise/exercise.hpp"
#include "grade/stage.hpp"

namespace grader {

// A launch's stop message names places from the PTX's .file lines, which an asm comment can
// forge at any length: it is bounded before it joins a message of the worker.
inline constexpr std::size_t kMaxLaunchLineBytes = 600;

// How a launch that did not complete ends its stage.
Ending ending_of(DeviceLaunch::End end);

// "probeSharedStride (student)", "transposeTiled (padded)".
std::string kernel_title(const Exercise& exercise, const std::string& kernel);

}  // namespace grader
