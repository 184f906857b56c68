// Day 15, Part 2 starter: the lesson's tiled transpose with a 32 x 32 tile. Reading a column of
// tile[32][32] is a stride of 32 words: every lane in one bank, a 32-way conflict. Make the tile
// conflict free (one column of padding, or an XOR swizzle of the column index), keep the output
// the exact transpose, and submit this file as transpose.cu with your submission.yaml.
//
// The grader compiles it with NVRTC and calls transposeTiled through a fixed ABI, so keep the
// name and the signature as they are:
//     transposeTiled(const float* in, float* out, int n)
// It launches 32 x 8 threads per block over an n/32 x n/32 grid, n = 4096.
// day15_transpose.h (kTileDim = 32, kBlockRows = 8) is the only header you may #include.
#include "day15_transpose.h"

__global__ void transposeTiled(const float* __restrict__ in,
                               float* __restrict__ out, int n) {
    __shared__ float tile[kTileDim][kTileDim];

    const int tx = static_cast<int>(threadIdx.x);
    const int ty = static_cast<int>(threadIdx.y);
    const int col = static_cast<int>(blockIdx.x) * kTileDim + tx;
    const int row = static_cast<int>(blockIdx.y) * kTileDim + ty;

    // Store a tile row by row: lanes tx = 0..31 write one row, conflict free.
    for (int k = 0; k < kTileDim; k += kBlockRows) {
        tile[ty + k][tx] = in[static_cast<size_t>(row + k) * n + col];
    }
    __syncthreads();

    // Read it column by column into the transposed position: lanes tx = 0..31 read one column.
    const int outCol = static_cast<int>(blockIdx.y) * kTileDim + tx;
    const int outRow = static_cast<int>(blockIdx.x) * kTileDim + ty;
    for (int k = 0; k < kTileDim; k += kBlockRows) {
        out[static_cast<size_t>(outRow + k) * n + outCol] = tile[tx][ty + k];
    }
}
