// The reference probe: the lesson's kernel, verbatim. The grader builds it with exactly the
// options it uses for the student's kernel, because code generation moves the ratios.
#include "day15_probe.h"

__global__ void probeSharedStride(const float* __restrict__ in,
                                  float* __restrict__ out, size_t n,
                                  int stride) {
    __shared__ float tile[kProbeWords];

    const unsigned int tid = threadIdx.x;
    for (unsigned int w = tid; w < kProbeWords; w += blockDim.x) {
        tile[w] = in[w];
    }
    __syncthreads();

    const unsigned int base = tid * static_cast<unsigned int>(stride);
    float acc = 0.0f;
    for (int k = 0; k < kProbeIters; ++k) {
        acc += tile[(base + static_cast<unsigned int>(k)) & kProbeMask];
    }

    const size_t t = blockIdx.x * static_cast<size_t>(blockDim.x) + tid;
    if (t < n) {
        out[t] = acc;
    }
}
