#pragma once

// What one launch showed, as plain values the findings carry too: its outputs compared with the
// oracle's, and its shared accesses counted line by line.

#include <cstdint>
#include <optional>
#include <string>

namespace grader {

// One kernel's outputs with one input, compared element by element with the oracle's (the
// exercise's trusted kernel, run the same way): equal values where the oracle wrote, and no
// element left unwritten. The first element at fault, and how many were.
struct OutputComparison {
    std::string input;   // the input's id, e.g. "ones"
    bool timed = false;  // what a timed launch left, checked after the timing
    bool ran = false;
    bool ok = false;
    bool matrix = false;         // elements are placed by row and column, not by thread
    double expected = 0.0;       // the oracle's first value (every thread's, for a constant input)
    std::uint64_t elements = 0;  // compared: those the oracle wrote and those nothing wrote
    std::uint64_t bad_elements = 0;
    std::uint64_t unwritten = 0;  // of bad_elements, those no block of the kernel wrote
    // Where the oracle ran only some of the grid's blocks (the simulator; the kernel itself ran
    // every block): the values were compared in the elements of compared_blocks of the grid's
    // grid_blocks blocks. 0: in every element.
    std::uint64_t compared_blocks = 0;
    std::uint64_t grid_blocks = 0;
    std::optional<std::uint64_t> first_bad;  // index in the output buffer
    std::uint64_t first_bad_block = 0;       // per-thread layout: its block (linear) and thread
    std::uint32_t first_bad_thread_in_block = 0;
    std::uint64_t first_bad_row = 0;  // matrix layout
    std::uint64_t first_bad_column = 0;
    double first_bad_value = 0.0;      // may be NaN (poison never overwritten) or infinite
    bool first_bad_wrote_nan = false;  // the NaN in first_bad_value is one the kernel wrote
    bool first_bad_unwritten = false;  // no block of the kernel wrote the first wrong element
    double first_bad_expected = 0.0;   // may be NaN: the oracle's run did not reach it
};

// One source line's shared loads (or stores), as the simulator counted them in the PTX.
struct SharedLineCounts {
    std::string file;  // the .file name the PTX gives, as the student's source can forge it
    int line = 0;
    bool store = false;
    std::uint32_t bytes_per_lane = 4;  // the widest access of the line: 1, 2, 4, 8 or 16
    std::uint64_t requests = 0;
    std::uint64_t wavefronts = 0;
    std::uint64_t ideal_wavefronts = 0;  // the fewest the accesses' widths allow
    // The line's conflict degree: its worst instruction's wavefronts over the fewest.
    double degree = 0.0;
    // Where the worst request's lanes read a tile narrower than a warp, row by row: lanes_per_row
    // consecutive lanes in each row, rows row_pitch words apart (a [16][17] tile read by a warp of
    // 32 spans two rows 17 words apart); 0 where the lanes are one row, or no such tile
    // (warp_row_span, model/bank_model.hpp).
    std::uint32_t lanes_per_row = 0;
    std::uint32_t row_pitch = 0;
};

}  // namespace grader
