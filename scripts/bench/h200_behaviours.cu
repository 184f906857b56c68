// What a GPU shows a kernel that tries to tell it from the simulator without a clock: %warpid,
// shared memory's initial contents, .ftz, the order blocks start in, a flag set by another block,
// and a __device__ counter across launches. Run on the GPU machine:
//   nvcc -O2 -arch=sm_90 -o /tmp/behaviours scripts/bench/h200_behaviours.cu && /tmp/behaviours
// The simulator models each of these from what this prints (docs/measurements/).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <map>
#include <set>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call)                                                                          \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                     \
                   cudaGetErrorString(e_));                                                  \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

__device__ unsigned warpid_reg() { unsigned r; asm volatile("mov.u32 %0, %%warpid;" : "=r"(r)); return r; }
__device__ unsigned smid_reg() { unsigned r; asm volatile("mov.u32 %0, %%smid;" : "=r"(r)); return r; }
__device__ unsigned nwarpid_reg() { unsigned r; asm volatile("mov.u32 %0, %%nwarpid;" : "=r"(r)); return r; }

// One record per warp: block, warp in block, %warpid, %smid.
__global__ void record_warpid(unsigned* out) {
  unsigned warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) {
    unsigned i = (blockIdx.x * (blockDim.x / 32) + warp) * 4;
    out[i] = blockIdx.x; out[i + 1] = warp; out[i + 2] = warpid_reg(); out[i + 3] = smid_reg();
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) out[gridDim.x * (blockDim.x / 32) * 4] = nwarpid_reg();
}

// Writes a block-specific pattern into its whole shared tile (to leave behind).
__global__ void fill_shared(float marker) {
  __shared__ float tile[2048];
  for (int i = threadIdx.x; i < 2048; i += blockDim.x) tile[i] = marker + blockIdx.x + i * 1e-3f;
  __syncthreads();
  if (tile[(threadIdx.x * 7) % 2048] == -1.0f) tile[0] = 0;  // keeps the stores
}

// Reads the tile without writing it first: a hash per block and a sample of words.
__global__ void read_unwritten_shared(unsigned* hash, float* sample) {
  __shared__ float tile[2048];
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned h = 2166136261u;
    for (int i = 0; i < 2048; ++i) { h ^= __float_as_uint(tile[i]); h *= 16777619u; }
    hash[blockIdx.x] = h;
    for (int i = 0; i < 4; ++i) sample[blockIdx.x * 4 + i] = tile[i * 512];
  }
}

__global__ void ftz_products(const float* in, float* out) {
  float a = in[0], b = in[1], r_ftz, r_full, add_ftz;
  asm("mul.ftz.f32 %0, %1, %2;" : "=f"(r_ftz) : "f"(a), "f"(b));
  asm("mul.rn.f32 %0, %1, %2;" : "=f"(r_full) : "f"(a), "f"(b));
  asm("add.ftz.f32 %0, %1, 0f00000000;" : "=f"(add_ftz) : "f"(in[2]));  // subnormal input
  out[0] = r_ftz; out[1] = r_full; out[2] = add_ftz;
}

__device__ unsigned ticket;
__device__ unsigned launches_seen;
// The order blocks start in: each block's first thread takes a ticket.
__global__ void start_order(unsigned* order) {
  if (threadIdx.x == 0) order[blockIdx.x] = atomicAdd(&ticket, 1u);
}

// Block 0 waits (bounded) for a flag that the grid's last block sets.
__global__ void poll_flag(volatile unsigned* flag, unsigned* seen, unsigned long long spins) {
  if (threadIdx.x != 0) return;
  if (blockIdx.x == gridDim.x - 1) *flag = 1;
  if (blockIdx.x == 0) {
    unsigned long long n = 0;
    while (*flag == 0 && n < spins) ++n;
    seen[0] = *flag; seen[1] = (unsigned)n;
  }
}

__global__ void count_launches(unsigned* out) {
  if (threadIdx.x == 0) atomicAdd(&launches_seen, 1u);
  __syncthreads();
  if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = launches_seen;
}

int main() {
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, sm_%d%d\n", prop.name, prop.multiProcessorCount, prop.major,
              prop.minor);

  // 1. %warpid: the probe's grid (160 blocks of 256) and Part 2's block shape (32x8).
  for (int threads : {256, 1024}) {
    int blocks = 160, warps = blocks * threads / 32;
    unsigned* d; CHECK(cudaMalloc(&d, (warps * 4 + 1) * sizeof(unsigned)));
    record_warpid<<<blocks, threads>>>(d);
    CHECK(cudaDeviceSynchronize());
    std::vector<unsigned> h(warps * 4 + 1);
    CHECK(cudaMemcpy(h.data(), d, h.size() * 4, cudaMemcpyDeviceToHost));
    int equal = 0; std::map<unsigned, int> hist; std::set<unsigned> sms;
    for (int w = 0; w < warps; ++w) {
      equal += h[w * 4 + 1] == h[w * 4 + 2];
      hist[h[w * 4 + 2]]++; sms.insert(h[w * 4 + 3]);
    }
    std::printf("warpid, %d blocks of %d: %%warpid == threadIdx.x/32 in %d of %d warps; "
                "%%nwarpid %u; %zu distinct %%smid; %%warpid values:", blocks, threads, equal,
                warps, h[warps * 4], sms.size());
    for (auto& [v, n] : hist) std::printf(" %u:%d", v, n);
    std::printf("\n  first 3 blocks (block warp warpid smid):");
    for (int w = 0; w < 3 * threads / 32 && w < 24; ++w)
      std::printf(" [%u %u %u %u]", h[w * 4], h[w * 4 + 1], h[w * 4 + 2], h[w * 4 + 3]);
    std::printf("\n");
    CHECK(cudaFree(d));
  }

  // 2. Shared memory's initial contents: fresh, then after a kernel that left a pattern.
  {
    int blocks = 160;
    unsigned* hash; float* sample;
    CHECK(cudaMalloc(&hash, blocks * 4)); CHECK(cudaMalloc(&sample, blocks * 16));
    for (int round = 0; round < 3; ++round) {
      if (round == 1) fill_shared<<<blocks, 256>>>(1000.0f);
      if (round == 2) fill_shared<<<blocks, 256>>>(5000.0f);
      read_unwritten_shared<<<blocks, 256>>>(hash, sample);
      CHECK(cudaDeviceSynchronize());
      std::vector<unsigned> h(blocks); std::vector<float> s(blocks * 4);
      CHECK(cudaMemcpy(h.data(), hash, blocks * 4, cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(s.data(), sample, blocks * 16, cudaMemcpyDeviceToHost));
      std::set<unsigned> distinct(h.begin(), h.end());
      std::printf("shared initial contents, %s: %zu distinct hashes over %d blocks; "
                  "block 0 words 0,512,1024,1536: %g %g %g %g; block 159: %g %g %g %g\n",
                  round == 0 ? "after nothing" : round == 1 ? "after a fill of 1000+block"
                                                            : "after a fill of 5000+block",
                  distinct.size(), blocks, s[0], s[1], s[2], s[3], s[636], s[637], s[638], s[639]);
    }
    CHECK(cudaFree(hash)); CHECK(cudaFree(sample));
  }

  // 3. .ftz: a subnormal product and a subnormal input.
  {
    float in[3] = {1e-20f, 1e-20f, 1e-40f}, out[3];
    float *din, *dout;
    CHECK(cudaMalloc(&din, 12)); CHECK(cudaMalloc(&dout, 12));
    CHECK(cudaMemcpy(din, in, 12, cudaMemcpyHostToDevice));
    ftz_products<<<1, 1>>>(din, dout);
    CHECK(cudaMemcpy(out, dout, 12, cudaMemcpyDeviceToHost));
    std::printf("ftz: 1e-20*1e-20 with .ftz = %g, without = %g; 1e-40 + 0 with .ftz = %g\n",
                out[0], out[1], out[2]);
    CHECK(cudaFree(din)); CHECK(cudaFree(dout));
  }

  // 4. The order blocks start in, over a grid larger than the GPU holds at once.
  for (int blocks : {160, 16384}) {
    unsigned zero = 0; CHECK(cudaMemcpyToSymbol(ticket, &zero, 4));
    unsigned* d; CHECK(cudaMalloc(&d, blocks * 4));
    start_order<<<blocks, 256>>>(d);
    CHECK(cudaDeviceSynchronize());
    std::vector<unsigned> h(blocks);
    CHECK(cudaMemcpy(h.data(), d, blocks * 4, cudaMemcpyDeviceToHost));
    int in_place = 0, max_disp = 0;
    for (int b = 0; b < blocks; ++b) {
      in_place += h[b] == (unsigned)b;
      max_disp = std::max(max_disp, std::abs((int)h[b] - b));
    }
    std::printf("start order, %d blocks: %d start in blockIdx order; largest displacement %d; "
                "tickets of blocks 0..7:", blocks, in_place, max_disp);
    for (int b = 0; b < 8; ++b) std::printf(" %u", h[b]);
    std::printf("; of the last 4:");
    for (int b = blocks - 4; b < blocks; ++b) std::printf(" %u", h[b]);
    std::printf("\n");
    CHECK(cudaFree(d));
  }

  // 5. Block 0 polling a flag the last block sets (bounded spin).
  for (int blocks : {160, 16384}) {
    unsigned *flag, *seen;
    CHECK(cudaMalloc(&flag, 4)); CHECK(cudaMalloc(&seen, 8));
    CHECK(cudaMemset(flag, 0, 4)); CHECK(cudaMemset(seen, 0, 8));
    poll_flag<<<blocks, 256>>>(flag, seen, 1ull << 24);
    CHECK(cudaDeviceSynchronize());
    unsigned h[2]; CHECK(cudaMemcpy(h, seen, 8, cudaMemcpyDeviceToHost));
    std::printf("flag from the last block, %d blocks: block 0 saw %u after %u spins\n", blocks,
                h[0], h[1]);
    CHECK(cudaFree(flag)); CHECK(cudaFree(seen));
  }

  // 6. A __device__ counter across launches of one module.
  {
    unsigned* d; CHECK(cudaMalloc(&d, 4));
    unsigned values[3];
    for (int l = 0; l < 3; ++l) {
      count_launches<<<160, 256>>>(d);
      CHECK(cudaMemcpy(&values[l], d, 4, cudaMemcpyDeviceToHost));
    }
    std::printf("__device__ counter bumped by each of 160 blocks: block 0 read %u, %u, %u in "
                "launches 1..3 (globals persist across launches; block 0 sees others mid-launch)\n",
                values[0], values[1], values[2]);
    CHECK(cudaFree(d));
  }
  return 0;
}
