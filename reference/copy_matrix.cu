// The lesson's Part 2 baseline: a straight copy over the same buffers, with the transposes'
// launch (32 x 8 threads per block, one 32 x 32 tile per block) and the same 128 MiB moved, so
// each transpose is reported as a percentage of it.
#include "day15_transpose.h"

__global__ void copyMatrix(const float* __restrict__ in,
                           float* __restrict__ out, int n) {
    const int col = static_cast<int>(blockIdx.x) * kTileDim + static_cast<int>(threadIdx.x);
    const int row = static_cast<int>(blockIdx.y) * kTileDim + static_cast<int>(threadIdx.y);
    for (int k = 0; k < kTileDim; k += kBlockRows) {
        const size_t at = static_cast<size_t>(row + k) * n + col;
        out[at] = in[at];
    }
}
