// Provided by the grader: the only header a Day 15 submission may include.
#pragma once

constexpr unsigned int kProbeWords = 2048;            // words in the shared tile
constexpr unsigned int kProbeMask = kProbeWords - 1;  // 2048 is a power of two
constexpr int kProbeIters = 2048;                     // shared reads per thread
