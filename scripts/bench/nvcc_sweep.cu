// The conventional alternative to the grader: one .cu file, built with nvcc and run, that times
// the lesson's probe at each stride against stride 1 (the course page's Part 1). The benchmark
// (scripts/bench/grade_bench.py) times compiling and running it beside a whole grade.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

constexpr unsigned int kProbeWords = 2048;
constexpr unsigned int kProbeMask = kProbeWords - 1;
constexpr int kProbeIters = 2048;

#define CHECK_CUDA(call)                                                                  \
    do {                                                                                  \
        cudaError_t status_ = (call);                                                     \
        if (status_ != cudaSuccess) {                                                     \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(status_)); \
            std::exit(1);                                                                 \
        }                                                                                 \
    } while (0)

__global__ void probeSharedStride(const float* __restrict__ in, float* __restrict__ out, size_t n,
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

int main() {
    int device = 0;
    cudaDeviceProp prop{};
    CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
    const int block = 256;
    int per_sm = 0;
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, probeSharedStride, block, 0));
    const int grid = per_sm * prop.multiProcessorCount;
    const size_t n = static_cast<size_t>(grid) * block;
    std::vector<float> ones(kProbeWords, 1.0f);
    float* in = nullptr;
    float* out = nullptr;
    CHECK_CUDA(cudaMalloc(&in, kProbeWords * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&out, n * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(in, ones.data(), kProbeWords * sizeof(float), cudaMemcpyHostToDevice));
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
    const int strides[] = {1, 2, 3, 4, 8, 16, 32, 33};
    std::vector<float> host(n);
    std::printf("GPU: %s\n  stride     time (ms)  vs stride 1\n", prop.name);
    float base_ms = 0.0f;
    for (const int stride : strides) {
        probeSharedStride<<<grid, block>>>(in, out, n, stride);  // warm-up
        CHECK_CUDA(cudaEventRecord(start));
        const int reps = 20;
        for (int r = 0; r < reps; ++r) {
            probeSharedStride<<<grid, block>>>(in, out, n, stride);
        }
        CHECK_CUDA(cudaEventRecord(stop));
        CHECK_CUDA(cudaEventSynchronize(stop));
        float ms = 0.0f;
        CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
        ms /= reps;
        CHECK_CUDA(cudaMemcpy(host.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
        for (size_t t = 0; t < n; ++t) {
            if (host[t] != 2048.0f) {
                std::printf("stride %d: thread %zu holds %f\n", stride, t, host[t]);
                return 1;
            }
        }
        if (stride == 1) {
            base_ms = ms;
        }
        std::printf("  %6d    %10.4f  %11.2f\n", stride, ms, ms / base_ms);
    }
    return 0;
}
