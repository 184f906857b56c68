// Day 15 starter: the lesson's probe. Submit this file as probe.cu with your submission.yaml.
//
// The grader compiles it with NVRTC and calls probeSharedStride through a fixed ABI, so keep the
// name and the signature exactly as they are:
//     probeSharedStride(const float* in, float* out, size_t n, int stride)
// day15_probe.h is provided by the grader and is the only header you may #include.
//
// What the grader checks with this kernel:
//   - every word of the tile is 1.0f, so every thread must end with exactly 2048.0;
//   - with a tile of random integers, every thread must hold the sum of the words it reads;
//   - its time at each stride, divided by its time at stride 1, must match the reference
//     kernel's at the same stride, including strides you did not name.
// The stride arrives as a run-time argument: one kernel serves every row of the table, so the
// rows execute the same instructions and only the addresses move.
#include "day15_probe.h"

__global__ void probeSharedStride(const float* __restrict__ in,
                                  float* __restrict__ out, size_t n,
                                  int stride) {
    __shared__ float tile[kProbeWords];

    // The whole block fills all kProbeWords words before anyone reads.
    const unsigned int tid = threadIdx.x;
    for (unsigned int w = tid; w < kProbeWords; w += blockDim.x) {
        tile[w] = in[w];
    }
    __syncthreads();

    // Lane L starts at word L * stride, so in each read it lands in bank
    // (L * stride + k) mod 32: how many lanes share a bank is gcd(stride, 32).
    const unsigned int base = tid * static_cast<unsigned int>(stride);
    float acc = 0.0f;
    for (int k = 0; k < kProbeIters; ++k) {
        acc += tile[(base + static_cast<unsigned int>(k)) & kProbeMask];
    }

    // The accumulator is the receipt that every read happened.
    const size_t t = blockIdx.x * static_cast<size_t>(blockDim.x) + tid;
    if (t < n) {
        out[t] = acc;
    }
}
