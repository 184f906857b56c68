// What the red team's sim_fidelity fixtures of 2026-12-06 observe, measured on a GPU
// (scripts/gpu-check.sh OUT redteam): __sinf and __cosf far outside sin.approx's documented
// range; the cycles 64 dependent fmaf, one global load and __nanosleep(1000) take between two
// clock64() reads; printf's result; and the launch of a kernel under __launch_bounds__(128) with
// 256 threads. The simulator's side is the fixtures' grades there (test_sim_fixtures).
#include <algorithm>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

__global__ void approx_far(float* out) {
    const int k = static_cast<int>(threadIdx.x);
    if (k < 8) {
        const float x = 100000.0f + 1234.5f * static_cast<float>(k);
        out[4 * k] = __sinf(x);
        out[4 * k + 1] = sinf(x);
        const float y = -300000.0f - 777.25f * static_cast<float>(k);
        out[4 * k + 2] = __cosf(y);
        out[4 * k + 3] = cosf(y);
    }
}

// As fma_latency_sniffing and load_latency_sniffing time them, per thread of 2 blocks of 256.
__global__ void latencies(const float* in, long long* fma_cycles, long long* load_cycles,
                          long long* sleep_cycles) {
    const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    const float seed = in[0];
    long long t0 = clock64();
    float x = seed + static_cast<float>(t0 >> 62);
#pragma unroll
    for (int k = 0; k < 64; ++k) {
        x = fmaf(x, 1.0001f, 0.5f);
    }
    long long t1 = x != 12345.0f ? clock64() : t0;
    fma_cycles[t] = t1 - t0;
    t0 = clock64();
    const float v = in[1 + (t0 >> 62)];
    t1 = v != 12345.0f ? clock64() : t0;
    load_cycles[t] = t1 - t0;
    t0 = clock64();
    __nanosleep(1000u + static_cast<unsigned int>(t0 >> 62));
    t1 = clock64();
    sleep_cycles[t] = t1 - t0;
}

#include "../../tests/fixtures/kernels/printf_results.cu"
#include "../../tests/fixtures/sim/times_latencies.cu"
#include "../../tests/fixtures/sim/whole_grid.cu"

__global__ void printf_result(int* out) { out[0] = printf("printf_result: %d\n", 1); }

__global__ void __launch_bounds__(128) bounded(float* out) { out[threadIdx.x] = 1.0f; }

int main() {
    cudaDeviceProp prop{};
    if (const cudaError_t error = cudaGetDeviceProperties(&prop, 0); error != cudaSuccess) {
        std::printf("no GPU: %s\n", cudaGetErrorString(error));
        return 1;
    }
    std::printf("device: %s, sm_%d%d\n", prop.name, prop.major, prop.minor);

    float* d_out = nullptr;
    cudaMalloc(&d_out, 32 * sizeof(float));
    approx_far<<<1, 32>>>(d_out);
    float h[32];
    cudaMemcpy(h, d_out, sizeof h, cudaMemcpyDeviceToHost);
    float worst_sin = 0.0f, worst_cos = 0.0f;
    for (int k = 0; k < 8; ++k) {
        std::printf("  x=%.2f __sinf %.9g sinf %.9g | x=%.2f __cosf %.9g cosf %.9g\n",
                    100000.0f + 1234.5f * k, h[4 * k], h[4 * k + 1], -300000.0f - 777.25f * k,
                    h[4 * k + 2], h[4 * k + 3]);
        worst_sin = fmaxf(worst_sin, fabsf(h[4 * k] - h[4 * k + 1]));
        worst_cos = fmaxf(worst_cos, fabsf(h[4 * k + 2] - h[4 * k + 3]));
    }
    std::printf("approx far out: largest |__sinf - sinf| %g, |__cosf - cosf| %g (the fixtures "
                "are honest below 1e-5)\n",
                worst_sin, worst_cos);

    const int threads = 512;
    float ones[2] = {1.0f, 1.0f};
    float* d_in = nullptr;
    long long *d_fma = nullptr, *d_load = nullptr, *d_sleep = nullptr;
    cudaMalloc(&d_in, sizeof ones);
    cudaMemcpy(d_in, ones, sizeof ones, cudaMemcpyHostToDevice);
    cudaMalloc(&d_fma, threads * sizeof(long long));
    cudaMalloc(&d_load, threads * sizeof(long long));
    cudaMalloc(&d_sleep, threads * sizeof(long long));
    latencies<<<2, 256>>>(d_in, d_fma, d_load, d_sleep);
    long long fma[threads], load[threads], sleep[threads];
    cudaMemcpy(fma, d_fma, sizeof fma, cudaMemcpyDeviceToHost);
    cudaMemcpy(load, d_load, sizeof load, cudaMemcpyDeviceToHost);
    cudaMemcpy(sleep, d_sleep, sizeof sleep, cudaMemcpyDeviceToHost);
    long long fma_min = fma[0], fma_max = fma[0], load_min = load[0], load_max = load[0];
    long long sleep_min = sleep[0], sleep_max = sleep[0];
    int fma_under = 0, load_under = 0, sleep_in = 0;
    for (int t = 0; t < threads; ++t) {
        fma_min = fma[t] < fma_min ? fma[t] : fma_min;
        fma_max = fma[t] > fma_max ? fma[t] : fma_max;
        load_min = load[t] < load_min ? load[t] : load_min;
        load_max = load[t] > load_max ? load[t] : load_max;
        fma_under += fma[t] < 160;
        load_under += load[t] < 24;
        sleep_min = sleep[t] < sleep_min ? sleep[t] : sleep_min;
        sleep_max = sleep[t] > sleep_max ? sleep[t] : sleep_max;
        sleep_in += sleep[t] >= 1500 && sleep[t] <= 1540;
    }
    std::printf("64 dependent fmaf between clock64() reads: %lld to %lld cycles, %d of %d threads "
                "under 160\n",
                fma_min, fma_max, fma_under, threads);
    std::printf("a global load and a compare between clock64() reads: %lld to %lld cycles, %d of "
                "%d threads under 24\n",
                load_min, load_max, load_under, threads);
    std::printf("__nanosleep(1000) between clock64() reads: %lld to %lld cycles, %d of %d threads "
                "in [1500, 1540]\n",
                sleep_min, sleep_max, sleep_in, threads);

    int* d_parsed = nullptr;
    int parsed = -100;
    cudaMalloc(&d_parsed, sizeof parsed);
    printf_result<<<1, 1>>>(d_parsed);
    cudaMemcpy(&parsed, d_parsed, sizeof parsed, cudaMemcpyDeviceToHost);
    std::printf("printf of one argument returned %d\n", parsed);
    // The simulator's test of printf's results (tests/test_sim.cpp) expects 0 2 1 3 here.
    int* d_results = nullptr;
    int results[32] = {};
    cudaMalloc(&d_results, sizeof results);
    printfResults<<<1, 32>>>(d_results, 5);
    cudaMemcpy(results, d_results, sizeof results, cudaMemcpyDeviceToHost);
    long long* d_latencies = nullptr;
    long long latencies[3] = {};
    float* d_in2 = nullptr;
    const float in2[2] = {1.0f, 2.0f};
    cudaMalloc(&d_in2, sizeof in2);
    cudaMemcpy(d_in2, in2, sizeof in2, cudaMemcpyHostToDevice);
    cudaMalloc(&d_latencies, sizeof latencies);
    timesLatencies<<<1, 32>>>(d_in2, d_latencies);
    cudaMemcpy(latencies, d_latencies, sizeof latencies, cudaMemcpyDeviceToHost);
    std::printf("times_latencies.cu: 64 dependent fmaf %lld cycles, a load not waited for %lld, "
                "a load waited for %lld (the simulator's model: >= 256, < 8, >= 36)\n",
                latencies[0], latencies[1], latencies[2]);
    // test_sim_grid's polling case: 160 blocks of 128, each polling its partner 200 times.
    float* d_polled = nullptr;
    std::vector<float> polled(160 * 128);
    cudaMalloc(&d_polled, polled.size() * sizeof(float));
    pollsPartner<<<160, 128>>>(d_in2, d_polled, 200);
    cudaMemcpy(polled.data(), d_polled, polled.size() * sizeof(float), cudaMemcpyDeviceToHost);
    int unseen = 0;
    float most_polls = 0.0f;
    for (int b = 0; b < 160; ++b) {
        unseen += polled[b * 128] < 0.0f ? 1 : 0;
        most_polls = std::max(most_polls, polled[b * 128]);
    }
    std::printf("whole_grid.cu's pollsPartner: %d of 160 blocks never saw their partner in 200 "
                "polls, the most polls taken %.0f (the simulator: 0)\n",
                unseen, most_polls);
    std::printf("printf_results.cu's four formats returned %d %d %d %d (the simulator: 0 2 1 3)\n",
                results[0], results[1], results[2], results[3]);

    cudaGetLastError();
    bounded<<<1, 256>>>(d_out);
    const cudaError_t launch = cudaGetLastError();
    const cudaError_t sync = cudaDeviceSynchronize();
    std::printf("__launch_bounds__(128) launched with 256 threads: launch %s (%s), sync %s\n",
                cudaGetErrorName(launch), cudaGetErrorString(launch), cudaGetErrorName(sync));
    return 0;
}
