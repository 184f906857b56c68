// What a GPU shows a kernel that tries to tell it from the simulator: %warpid, shared memory's
// initial contents, .ftz, the order blocks start in, a flag set by another block, a __device__
// counter across launches; and (sections 7-16, issue 30) %gridid per launch, NaN results,
// __fdividef's range, the approximate instructions against the correctly rounded results,
// %globaltimer's step, the generic addresses of shared and local memory, where cuMemAlloc puts
// the grade's buffers, the special registers the simulator models (%clock_hi, %pm, %envreg,
// %total_smem_size), uninitialised registers and local memory, and how far past the end of a
// buffer a read faults; and (sections 16-20, issue 42) CUDA's rounded intrinsics in every
// direction against the host's fesetround, atomic float adds of subnormals in global and shared
// memory, clock() read back to back, the blocks an SM holds of a kernel of over 200 registers,
// and %total_smem_size of a block whose declared shared memory is not whole allocation units.
// Run on the GPU machine (scripts/gpu-check.sh's `behaviours` section):
//   nvcc -O2 -arch=native -Xcompiler -frounding-math -I. -o /tmp/behaviours \
//     scripts/bench/h200_behaviours.cu && /tmp/behaviours [DIR]
// `/tmp/behaviours --shared-past N` reads shared word N of a 4,097-word (16,388-byte) block and
// says whether it faulted (a fault ends the process's context, so gpu-check runs one per N).
// With DIR, the approximate instructions' differences from the correctly rounded results over
// every mantissa are written there (rcp_approx.delta and the like: one signed byte per mantissa,
// in ulps). The simulator models each of these from what this prints (docs/simulator-fidelity.md).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <map>
#include <set>
#include <vector>
#include <cfenv>
#include <cuda_runtime.h>

// The kernel the simulator's test runs too (tests/test_sim_fidelity.cpp): every rounded
// intrinsic in every direction over a sweep of operands.
#include "tests/fixtures/sim/directed_rounding.cu"

static float __uint_as_float_host(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static double __longlong_as_double_host(unsigned long long u) { double d; std::memcpy(&d, &u, 8); return d; }

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


// ---- issue 30 ----

__device__ unsigned long long gridid_reg() {
  unsigned long long r; asm volatile("mov.u64 %0, %%gridid;" : "=l"(r)); return r;
}
__global__ void record_gridid(unsigned long long* out, int launch) {
  if (threadIdx.x == 0 && blockIdx.x == 0) out[launch] = gridid_reg();
}

// NaN results: what each float operation makes of a NaN with a payload (the kernel the
// simulator's test_sim_fidelity runs, and the bits it expects there).
#include "tests/fixtures/sim/nan_results.cu"

// __fdividef (div.approx.f32) and div.full.f32 with divisors at the top of the range.
__global__ void divide_huge(const float* in, float* out) {
  const float x = in[0], inf = in[1];
  for (int k = 0; k < 4; ++k) {
    const float y = in[2 + k];
    float a, b, c;
    asm("div.approx.f32 %0, %1, %2;" : "=f"(a) : "f"(x), "f"(y));
    asm("div.approx.f32 %0, %1, %2;" : "=f"(b) : "f"(inf), "f"(y));
    asm("div.full.f32 %0, %1, %2;" : "=f"(c) : "f"(x), "f"(y));
    out[3 * k] = a; out[3 * k + 1] = b; out[3 * k + 2] = c;
  }
}

// One approximate instruction over every mantissa of [lo, 2 lo): its bits, for the host to
// compare with the correctly rounded result.
enum Approx { kRcp, kRsqrt, kSqrt, kEx2, kLg2, kSin, kCos, kCount };
__global__ void approx_table(int op, float lo, unsigned* out) {
  const unsigned m = blockIdx.x * blockDim.x + threadIdx.x;
  if (m >= (1u << 23)) return;
  const float x = __uint_as_float(__float_as_uint(lo) + m);
  float r;
  switch (op) {
    case kRcp: asm("rcp.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    case kRsqrt: asm("rsqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    case kSqrt: asm("sqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    case kEx2: asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    case kLg2: asm("lg2.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    case kSin: asm("sin.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    default: asm("cos.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
  }
  out[m] = __float_as_uint(r);
}

// %globaltimer read back to back by one thread: the steps it moves in.
__global__ void timer_steps(unsigned long long* out, int reads) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  unsigned long long last, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(last));
  for (int k = 0; k < reads; ++k) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    out[k] = now - last;
    last = now;
  }
}

// Generic addresses of a shared and a local variable, per block.
__global__ void window_addresses(unsigned long long* out) {
  __shared__ float tile[2048];
  volatile float local[16];
  local[threadIdx.x % 16] = 1.0f;
  tile[threadIdx.x] = local[(threadIdx.x + 1) % 16];
  __syncthreads();
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = reinterpret_cast<unsigned long long>(&tile[0]);
    out[2 * blockIdx.x + 1] = reinterpret_cast<unsigned long long>(const_cast<float*>(&local[0]));
  }
  if (tile[(threadIdx.x * 7) % 2048] == -1.0f) out[0] = 0;
}

// Special registers the simulator models or reports as unsupported.
__global__ void other_specials(unsigned* out) {
  __shared__ float tile[2048];
  tile[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  unsigned v;
  asm volatile("mov.u32 %0, %%clock_hi;" : "=r"(v)); out[0] = v;
  asm volatile("mov.u32 %0, %%total_smem_size;" : "=r"(v)); out[1] = v;
  asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(v)); out[2] = v;
  asm volatile("mov.u32 %0, %%nsmid;" : "=r"(v)); out[3] = v;
  asm volatile("mov.u32 %0, %%pm0;" : "=r"(v)); out[4] = v;
  asm volatile("mov.u32 %0, %%pm7;" : "=r"(v)); out[5] = v;
  asm volatile("mov.u32 %0, %%envreg0;" : "=r"(v)); out[6] = v;
  asm volatile("mov.u32 %0, %%envreg1;" : "=r"(v)); out[7] = v;
  asm volatile("mov.u32 %0, %%envreg31;" : "=r"(v)); out[8] = v;
  out[9] = static_cast<unsigned>(tile[5]);
}

// A register and a local word read before anything writes them.
__global__ void unwritten_state(unsigned* out) {
  unsigned reg, loc;
  asm volatile("{ .reg .u32 never; mov.u32 %0, never; }" : "=r"(reg));
  asm volatile("{ .local .align 4 .b8 never[64]; ld.local.u32 %0, [never+32]; }" : "=r"(loc));
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  out[2 * t] = reg;
  out[2 * t + 1] = loc;
}

// A read at byte `offset` of a buffer (past its end where offset is large).
__global__ void read_at(const char* base, unsigned long long offset, unsigned* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = *reinterpret_cast<const unsigned*>(base + offset);
}

// ---- issue 42 ----

// Atomic float adds of a subnormal: out[0] a global word (0 at first) after red.add of it, out[1]
// a shared word after atomicAdd, out[2] a shared word through a generic pointer, out[3] what
// atomicAdd returned of a global word holding a subnormal, out[4] that word after adding 0;
// out[5], out[6] atomicAdd of a NaN with a payload to 1.0 in global and in shared memory.
__global__ void atomic_subnormals(const float* in, float* global, unsigned* out) {
  __shared__ float word[3];
  if (threadIdx.x == 0) { word[0] = 0.0f; word[1] = 0.0f; word[2] = 1.0f; }
  __syncthreads();
  if (threadIdx.x != 0) return;
  atomicAdd(&global[0], in[0]);
  atomicAdd(&word[0], in[0]);
  float* generic = in[1] > 0.0f ? &word[1] : &global[3];
  atomicAdd(generic, in[0]);
  const float old = atomicAdd(&global[1], 0.0f);
  atomicAdd(&global[2], in[2]);
  atomicAdd(&word[2], in[2]);
  out[0] = __float_as_uint(global[0]);
  out[1] = __float_as_uint(word[0]);
  out[2] = __float_as_uint(word[1]);
  out[3] = __float_as_uint(old);
  out[4] = __float_as_uint(global[1]);
  out[5] = __float_as_uint(global[2]);
  out[6] = __float_as_uint(word[2]);
}

// An atomicAdd of an f64 NaN with a payload (0x7ff8000000000123) to 1.0: out[0] in global memory,
// out[1] in shared.
__global__ void atomic_nan_wide(const double* in, double* global, unsigned long long* out) {
  __shared__ double word;
  if (threadIdx.x == 0) word = 1.0;
  __syncthreads();
  if (threadIdx.x != 0) return;
  atomicAdd(&global[0], in[0]);
  atomicAdd(&word, in[0]);
  out[0] = __double_as_longlong(global[0]);
  out[1] = __double_as_longlong(word);
}

// clock() and clock64() read back to back by one thread: the differences.
__global__ void clock_steps(unsigned* out32, unsigned long long* out64, int reads) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  for (int k = 0; k < reads; ++k) {
    unsigned a, b;
    asm volatile("mov.u32 %0, %%clock;" : "=r"(a));
    asm volatile("mov.u32 %0, %%clock;" : "=r"(b));
    out32[k] = b - a;
    unsigned long long c, d;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(d));
    out64[k] = d - c;
  }
}

// A kernel of over 200 registers (192 shared reads kept to the end, as the fixture
// register_heavy_grid_barrier does) that counts how many of its blocks are present at once.
__device__ unsigned present_blocks;
__device__ unsigned most_present;
__global__ void register_heavy(const float* in, float* out, int stride) {
  __shared__ float tile[2048];
  for (int w = threadIdx.x; w < 2048; w += blockDim.x) tile[w] = in[w];
  if (threadIdx.x == 0) {
    atomicMax(&most_present, atomicAdd(&present_blocks, 1u) + 1);
    const long long began = clock64();
    while (clock64() - began < 200000) {
      atomicMax(&most_present, *static_cast<volatile unsigned*>(&present_blocks));
    }
  }
  __syncthreads();
  const unsigned base = threadIdx.x * stride;
  float kept[192];
#pragma unroll
  for (int k = 0; k < 192; ++k) kept[k] = tile[(base + k) & 2047];
  float acc = 0.0f;
  for (int k = 192; k < 2048; ++k) acc += tile[(base + k) & 2047];
#pragma unroll
  for (int k = 0; k < 192; ++k) acc += kept[k];
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
  if (threadIdx.x == 0) atomicSub(&present_blocks, 1u);
}

// %total_smem_size of a block that declares 16,388 bytes (4,097 words), and a read of word
// `index` of it (past its declared end from 4,097 on).
__global__ void shared_past(int index, unsigned* out) {
  __shared__ unsigned tile[4097];
  volatile unsigned* words = tile;
  tile[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned total;
    asm volatile("mov.u32 %0, %%total_smem_size;" : "=r"(total));
    out[0] = total;
    out[1] = words[index];
  }
}

// Operands for the rounding sweep: random bits (NaNs, infinities, subnormals among them) and,
// half the time, one a few binades from the other with a few-bit significand, so that sums and
// products round or tie.
struct Operands {
  unsigned long long state = 0x9e3779b97f4a7c15ull;
  unsigned long long next() {
    state ^= state << 13; state ^= state >> 7; state ^= state << 17;
    return state;
  }
  float any_float(float near) {
    unsigned b = static_cast<unsigned>(next());
    if (next() % 2 == 0) {
      unsigned n; std::memcpy(&n, &near, 4);
      long long e = static_cast<long long>((n >> 23) & 0xff) + static_cast<long long>(next() % 61) - 30;
      e = std::max(0LL, std::min(254LL, e));
      b = (b & 0x80000000u) | (static_cast<unsigned>(e) << 23) | (static_cast<unsigned>(next() & next()) >> 9);
    }
    float f; std::memcpy(&f, &b, 4); return f;
  }
  double any_double(double near) {
    unsigned long long b = next();
    if (next() % 2 == 0) {
      unsigned long long n; std::memcpy(&n, &near, 8);
      long long e = static_cast<long long>((n >> 52) & 0x7ff) + static_cast<long long>(next() % 121) - 60;
      e = std::max(0LL, std::min(2046LL, e));
      b = (b & 0x8000000000000000ull) | (static_cast<unsigned long long>(e) << 52) | ((next() & next()) >> 12);
    }
    double d; std::memcpy(&d, &b, 8); return d;
  }
};

// The host's results of directedRounding's list, each under fesetround's mode (this file is built
// with -frounding-math): rn, rz, rd, ru for each operation.
static const char* const kRoundedNames[] = {
    "__fadd", "__fsub", "__fmul", "__fdiv", "__fmaf", "__frcp", "__fsqrt", "__double2float",
    "__int2float", "__uint2float", "__ll2float", "__ull2float", "__dadd", "__dsub", "__dmul",
    "__ddiv", "__fma", "__drcp", "__dsqrt", "__ll2double", "__ull2double"};
static void host_rounded(float a, float b, float c, double x, double y, double z, long long m,
                         unsigned long long* o) {
  const int modes[] = {FE_TONEAREST, FE_TOWARDZERO, FE_DOWNWARD, FE_UPWARD};
  volatile float va = a, vb = b, vc = c;
  volatile double vx = x, vy = y, vz = z;
  volatile long long vm = m;
  for (int r = 0; r < 4; ++r) {
    std::fesetround(modes[r]);
    const float f32[] = {va + vb, va - vb, va * vb, va / vb, std::fma(va, vb, vc), 1.0f / va,
                         std::sqrt(va), static_cast<float>(vx),
                         static_cast<float>(static_cast<int>(vm)),
                         static_cast<float>(static_cast<unsigned>(vm)), static_cast<float>(vm),
                         static_cast<float>(static_cast<unsigned long long>(vm))};
    const double f64[] = {vx + vy, vx - vy, vx * vy, vx / vy, std::fma(vx, vy, vz), 1.0 / vx,
                          std::sqrt(vx), static_cast<double>(vm),
                          static_cast<double>(static_cast<unsigned long long>(vm))};
    std::fesetround(FE_TONEAREST);
    for (int k = 0; k < 12; ++k) { unsigned u; std::memcpy(&u, &f32[k], 4); o[4 * k + r] = u; }
    for (int k = 0; k < 9; ++k) { unsigned long long u; std::memcpy(&u, &f64[k], 8); o[48 + 4 * k + r] = u; }
  }
}

static bool is_nan_bits(unsigned long long v, bool wide) {
  return wide ? ((v >> 52) & 0x7ff) == 0x7ff && (v & 0xfffffffffffffull) != 0
              : ((v >> 23) & 0xff) == 0xff && (v & 0x7fffffu) != 0;
}

// The correctly rounded result of an approximate instruction, from double precision.
float rounded(int op, float x) {
  const double d = x;
  switch (op) {
    case kRcp: return static_cast<float>(1.0 / d);
    case kRsqrt: return static_cast<float>(1.0 / std::sqrt(d));
    case kSqrt: return static_cast<float>(std::sqrt(d));
    case kEx2: return static_cast<float>(std::exp2(d));
    case kLg2: return static_cast<float>(std::log2(d));
    case kSin: return static_cast<float>(std::sin(d));
    default: return static_cast<float>(std::cos(d));
  }
}

int ulp_distance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : 127;
  auto key = [](float f) {
    int i; std::memcpy(&i, &f, 4);
    return i < 0 ? -(i & 0x7fffffff) : i;
  };
  const long long d = static_cast<long long>(key(a)) - key(b);
  return static_cast<int>(d > 126 ? 126 : d < -126 ? -126 : d);
}

int main(int argc, char** argv) {
  if (argc > 2 && std::strcmp(argv[1], "--shared-past") == 0) {
    const int index = std::atoi(argv[2]);
    unsigned* d; CHECK(cudaMalloc(&d, 8));
    shared_past<<<1, 256>>>(index, d);
    const cudaError_t e = cudaDeviceSynchronize();
    unsigned h[2] = {0, 0};
    if (e == cudaSuccess) CHECK(cudaMemcpy(h, d, 8, cudaMemcpyDeviceToHost));
    std::printf("shared word %d of a block declaring 4097 words (bytes %d to %d; 16388 declared): %s; "
                "total_smem_size %u\n", index, 4 * index, 4 * index + 3,
                e == cudaSuccess ? "no fault" : cudaGetErrorString(e), h[0]);
    return 0;
  }
  const char* table_dir = argc > 1 ? argv[1] : nullptr;
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
  // 7. %gridid in three launches of one kernel, another kernel between the second and third.
  {
    unsigned long long* d; CHECK(cudaMalloc(&d, 3 * sizeof(unsigned long long)));
    unsigned* scratch; CHECK(cudaMalloc(&scratch, 4));
    record_gridid<<<1, 32>>>(d, 0);
    record_gridid<<<1, 32>>>(d, 1);
    count_launches<<<1, 32>>>(scratch);
    record_gridid<<<1, 32>>>(d, 2);
    unsigned long long h[3]; CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    std::printf("gridid in launches 1, 2 and 4 (another kernel third): %llu %llu %llu\n", h[0], h[1], h[2]);
    CHECK(cudaFree(d)); CHECK(cudaFree(scratch));
  }

  // 8. NaN results, from quiet NaNs with payloads 0x123 and 0x456 (f32 and f64).
  {
    const unsigned long long in[4] = {0x7fc00123ull, 0x7fc00456ull, 0x7ff8000000000123ull,
                                      0x7ff8000000000456ull};
    unsigned long long *dIn, *dOut;
    CHECK(cudaMalloc(&dIn, sizeof in)); CHECK(cudaMalloc(&dOut, kNanResults * 8));
    CHECK(cudaMemcpy(dIn, in, sizeof in, cudaMemcpyHostToDevice));
    nanResults<<<1, 1>>>(dIn, dOut);
    unsigned long long out[kNanResults];
    CHECK(cudaMemcpy(out, dOut, sizeof out, cudaMemcpyDeviceToHost));
#define NAN_RESULT_NAME(name) #name,
    const char* names[] = {NAN_RESULTS(NAN_RESULT_NAME)};
    std::printf("NaN results (tests/fixtures/sim/nan_results.cu; test_sim_fidelity expects):");
    for (int k = 0; k < kNanResults; ++k) std::printf(" %s=0x%llx", names[k], out[k]);
    std::printf("\n");
    CHECK(cudaFree(dIn)); CHECK(cudaFree(dOut));
  }

  // 9. div.approx.f32 (__fdividef) and div.full.f32 with divisors 2^125, 2^126 * 1.5, 2^127, 3e38.
  {
    const float in[6] = {1.0f, INFINITY, std::ldexp(1.0f, 125), std::ldexp(1.5f, 126),
                         std::ldexp(1.0f, 127), 3e38f};
    float *dIn, *dOut;
    CHECK(cudaMalloc(&dIn, sizeof in)); CHECK(cudaMalloc(&dOut, 12 * 4));
    CHECK(cudaMemcpy(dIn, in, sizeof in, cudaMemcpyHostToDevice));
    divide_huge<<<1, 1>>>(dIn, dOut);
    float out[12]; CHECK(cudaMemcpy(out, dOut, sizeof out, cudaMemcpyDeviceToHost));
    std::printf("divide by 2^125, 1.5*2^126, 2^127, 3e38 (approx 1/y, approx inf/y, full 1/y):");
    for (int k = 0; k < 4; ++k) std::printf(" [%g %g %g]", out[3 * k], out[3 * k + 1], out[3 * k + 2]);
    std::printf("\n");
    CHECK(cudaFree(dIn)); CHECK(cudaFree(dOut));
  }

  // 10. The approximate instructions over every mantissa of one binade, against the correctly
  // rounded result: how many are off by 0, +-1, +-2 and more ulps, and an FNV-1a hash of the
  // results (a model of the instruction reproduces the hash only where it is bit-exact).
  {
    struct Range { int op; const char* name; float lo; };
    const Range ranges[] = {{kRcp, "rcp.approx", 1.0f}, {kRsqrt, "rsqrt.approx", 1.0f},
                            {kRsqrt, "rsqrt.approx", 2.0f}, {kSqrt, "sqrt.approx", 1.0f},
                            {kSqrt, "sqrt.approx", 2.0f}, {kEx2, "ex2.approx", 0.5f},
                            {kLg2, "lg2.approx", 1.0f}, {kSin, "sin.approx", 0.5f},
                            {kCos, "cos.approx", 0.5f}};
    const unsigned n = 1u << 23;
    unsigned* d; CHECK(cudaMalloc(&d, n * 4));
    std::vector<unsigned> h(n);
    std::vector<signed char> delta(n);
    for (const Range& r : ranges) {
      approx_table<<<n / 256, 256>>>(r.op, r.lo, d);
      CHECK(cudaMemcpy(h.data(), d, n * 4, cudaMemcpyDeviceToHost));
      long long counts[5] = {0, 0, 0, 0, 0};  // 0, +1, -1, +-2, more
      unsigned long long hash = 1469598103934665603ull;
      unsigned lo_bits; std::memcpy(&lo_bits, &r.lo, 4);
      for (unsigned m = 0; m < n; ++m) {
        float x, got; const unsigned xb = lo_bits + m;
        std::memcpy(&x, &xb, 4); std::memcpy(&got, &h[m], 4);
        const int u = ulp_distance(got, rounded(r.op, x));
        delta[m] = static_cast<signed char>(u);
        ++counts[u == 0 ? 0 : u == 1 ? 1 : u == -1 ? 2 : (u == 2 || u == -2) ? 3 : 4];
        hash = (hash ^ h[m]) * 1099511628211ull;
      }
      std::printf("%s over [%g, %g): exact %lld, +1 ulp %lld, -1 ulp %lld, 2 ulps %lld, more %lld; hash %016llx\n",
                  r.name, r.lo, 2 * r.lo, counts[0], counts[1], counts[2], counts[3], counts[4], hash);
      if (table_dir != nullptr) {
        char path[512];
        std::snprintf(path, sizeof path, "%s/%s_%g.delta", table_dir, r.name, r.lo);
        if (FILE* f = std::fopen(path, "wb")) { std::fwrite(delta.data(), 1, n, f); std::fclose(f); }
      }
    }
    CHECK(cudaFree(d));
  }

  // 11. %globaltimer's steps, read back to back.
  {
    const int reads = 4096;
    unsigned long long* d; CHECK(cudaMalloc(&d, reads * 8));
    timer_steps<<<1, 32>>>(d, reads);
    std::vector<unsigned long long> h(reads);
    CHECK(cudaMemcpy(h.data(), d, reads * 8, cudaMemcpyDeviceToHost));
    std::map<unsigned long long, int> steps;
    for (auto s : h) if (s != 0) steps[s]++;
    int zero = 0; for (auto s : h) zero += s == 0;
    std::printf("globaltimer, %d back-to-back reads: %d read the same as the one before; steps:", reads, zero);
    int shown = 0;
    for (auto& [s, c] : steps) { if (shown++ < 12) std::printf(" %llu ns x%d", s, c); }
    std::printf("\n");
    CHECK(cudaFree(d));
  }

  // 12. Generic addresses of shared and local memory, two blocks, two launches.
  {
    unsigned long long* d; CHECK(cudaMalloc(&d, 4 * 8));
    unsigned long long h[2][4];
    for (int l = 0; l < 2; ++l) {
      window_addresses<<<2, 256>>>(d);
      CHECK(cudaMemcpy(h[l], d, sizeof h[l], cudaMemcpyDeviceToHost));
    }
    std::printf("generic addresses (block 0 shared, local; block 1 shared, local), launch 1: %llx %llx %llx %llx; launch 2: %llx %llx %llx %llx\n",
                h[0][0], h[0][1], h[0][2], h[0][3], h[1][0], h[1][1], h[1][2], h[1][3]);
    CHECK(cudaFree(d));
  }

  // 13. Where cudaMalloc (cuMemAlloc) puts a grade's buffers: Part 1's 8 KiB input and 1 MiB
  // output (1056 blocks of 256), Part 2's two 64 MiB.
  {
    const size_t sizes[][2] = {{8192, 1056 * 256 * 4}, {64ull << 20, 64ull << 20}};
    for (auto& pair : sizes) {
      void *in, *out;
      CHECK(cudaMalloc(&in, pair[0])); CHECK(cudaMalloc(&out, pair[1]));
      std::printf("cudaMalloc %zu then %zu bytes: %p and %p (out - in = %lld, in mod 2 MiB = %llu)\n",
                  pair[0], pair[1], in, out,
                  static_cast<long long>(reinterpret_cast<char*>(out) - reinterpret_cast<char*>(in)),
                  static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(in) % (2u << 20)));
      CHECK(cudaFree(in)); CHECK(cudaFree(out));
    }
  }

  // 14. Special registers: %clock_hi, %total_smem_size (8 KiB static), %dynamic_smem_size,
  // %nsmid, %pm0, %pm7, %envreg0, %envreg1, %envreg31.
  {
    unsigned* d; CHECK(cudaMalloc(&d, 10 * 4));
    other_specials<<<1, 256>>>(d);
    unsigned h[10]; CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    std::printf("clock_hi %u, total_smem_size %u, dynamic_smem_size %u, nsmid %u, pm0 %u, pm7 %u, envreg0 %u, envreg1 %u, envreg31 %u\n",
                h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8]);
    CHECK(cudaFree(d));
  }

  // 15. A register and a local word nothing wrote, in 2 blocks of 64, twice.
  {
    unsigned* d; CHECK(cudaMalloc(&d, 2 * 64 * 2 * 4));
    for (int l = 0; l < 2; ++l) {
      unwritten_state<<<2, 64>>>(d);
      std::vector<unsigned> h(2 * 64 * 2);
      CHECK(cudaMemcpy(h.data(), d, h.size() * 4, cudaMemcpyDeviceToHost));
      std::set<unsigned> regs, locals;
      for (int t = 0; t < 128; ++t) { regs.insert(h[2 * t]); locals.insert(h[2 * t + 1]); }
      std::printf("unwritten state, launch %d: registers %zu distinct (thread 0: 0x%x, thread 127: 0x%x), local words %zu distinct (0x%x, 0x%x)\n",
                  l + 1, regs.size(), h[0], h[254], locals.size(), h[1], h[255]);
    }
    CHECK(cudaFree(d));
  }

  // 16. CUDA's rounded intrinsics (tests/fixtures/sim/directed_rounding.cu) against the host's
  // fesetround: how many results differ, by intrinsic, and a hash of the GPU's results.
  {
    const int samples = 1 << 16;
    Operands gen;
    std::vector<float> f(3 * samples); std::vector<double> d(3 * samples); std::vector<long long> m(samples);
    for (int k = 0; k < samples; ++k) {
      f[3 * k] = gen.any_float(1.0f); f[3 * k + 1] = gen.any_float(f[3 * k]);
      f[3 * k + 2] = gen.any_float(f[3 * k] * f[3 * k + 1]);
      d[3 * k] = gen.any_double(1.0); d[3 * k + 1] = gen.any_double(d[3 * k]);
      d[3 * k + 2] = gen.any_double(d[3 * k] * d[3 * k + 1]);
      m[k] = static_cast<long long>(gen.next() >> (gen.next() % 64)) * (gen.next() % 2 ? 1 : -1);
    }
    float* df; double* dd; long long* dm; unsigned long long* dout;
    CHECK(cudaMalloc(&df, f.size() * 4)); CHECK(cudaMalloc(&dd, d.size() * 8));
    CHECK(cudaMalloc(&dm, m.size() * 8)); CHECK(cudaMalloc(&dout, static_cast<size_t>(samples) * ROUNDING_RESULTS * 8));
    CHECK(cudaMemcpy(df, f.data(), f.size() * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dd, d.data(), d.size() * 8, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dm, m.data(), m.size() * 8, cudaMemcpyHostToDevice));
    directedRounding<<<samples / 256, 256>>>(df, dd, dm, dout, samples);
    std::vector<unsigned long long> got(static_cast<size_t>(samples) * ROUNDING_RESULTS);
    CHECK(cudaMemcpy(got.data(), dout, got.size() * 8, cudaMemcpyDeviceToHost));
    long long differ[ROUNDING_RESULTS] = {};
    long long total = 0;
    unsigned long long hash = 1469598103934665603ull;
    int shown = 0;
    for (int k = 0; k < samples; ++k) {
      unsigned long long want[ROUNDING_RESULTS];
      host_rounded(f[3 * k], f[3 * k + 1], f[3 * k + 2], d[3 * k], d[3 * k + 1], d[3 * k + 2], m[k], want);
      for (int j = 0; j < ROUNDING_RESULTS; ++j) {
        const unsigned long long g = got[static_cast<size_t>(k) * ROUNDING_RESULTS + j];
        hash = (hash ^ g) * 1099511628211ull;
        const bool wide = j >= 48;
        if (g != want[j] && !(is_nan_bits(g, wide) && is_nan_bits(want[j], wide))) {
          ++differ[j]; ++total;
          if (shown++ < 6)
            std::printf("  differs: %s_%s sample %d: GPU 0x%llx, host 0x%llx\n", kRoundedNames[j / 4],
                        "rn\0rz\0rd\0ru" + 3 * (j % 4), k, g, want[j]);
        }
      }
    }
    std::printf("directed rounding, %d samples x %d results: %lld differ from the host's fesetround; hash %016llx\n",
                samples, ROUNDING_RESULTS, total, hash);
    for (int j = 0; j < ROUNDING_RESULTS; ++j)
      if (differ[j] != 0) std::printf("  %s_%s: %lld differ\n", kRoundedNames[j / 4], "rn\0rz\0rd\0ru" + 3 * (j % 4), differ[j]);
    CHECK(cudaFree(df)); CHECK(cudaFree(dd)); CHECK(cudaFree(dm)); CHECK(cudaFree(dout));
  }

  // 17. Atomic float adds of 1e-40 (a subnormal) in global and shared memory, and of a NaN.
  {
    const float in[3] = {1e-40f, 1.0f, __uint_as_float_host(0x7fc00123u)};
    const float global[4] = {0.0f, 1e-39f, 1.0f, 0.0f};
    float *dIn, *dGlobal; unsigned* dOut;
    CHECK(cudaMalloc(&dIn, sizeof in)); CHECK(cudaMalloc(&dGlobal, sizeof global)); CHECK(cudaMalloc(&dOut, 7 * 4));
    CHECK(cudaMemcpy(dIn, in, sizeof in, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dGlobal, global, sizeof global, cudaMemcpyHostToDevice));
    atomic_subnormals<<<1, 32>>>(dIn, dGlobal, dOut);
    unsigned h[7]; CHECK(cudaMemcpy(h, dOut, sizeof h, cudaMemcpyDeviceToHost));
    std::printf("atomicAdd of 1e-40 (0x000116c2): global 0x%08x, shared 0x%08x, shared through a generic pointer 0x%08x; "
                "atomicAdd(0) to a global 1e-39 returned 0x%08x and left 0x%08x; NaN 0x7fc00123 + 1: global 0x%08x, shared 0x%08x\n",
                h[0], h[1], h[2], h[3], h[4], h[5], h[6]);
    CHECK(cudaFree(dIn)); CHECK(cudaFree(dGlobal)); CHECK(cudaFree(dOut));
    const double wideIn = __longlong_as_double_host(0x7ff8000000000123ull), wideGlobal = 1.0;
    double *dWideIn, *dWideGlobal; unsigned long long* dWideOut;
    CHECK(cudaMalloc(&dWideIn, 8)); CHECK(cudaMalloc(&dWideGlobal, 8)); CHECK(cudaMalloc(&dWideOut, 16));
    CHECK(cudaMemcpy(dWideIn, &wideIn, 8, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dWideGlobal, &wideGlobal, 8, cudaMemcpyHostToDevice));
    atomic_nan_wide<<<1, 32>>>(dWideIn, dWideGlobal, dWideOut);
    unsigned long long w[2]; CHECK(cudaMemcpy(w, dWideOut, sizeof w, cudaMemcpyDeviceToHost));
    std::printf("f64 atomicAdd of NaN 0x7ff8000000000123 to 1.0: global 0x%016llx, shared 0x%016llx\n", w[0], w[1]);
    CHECK(cudaFree(dWideIn)); CHECK(cudaFree(dWideGlobal)); CHECK(cudaFree(dWideOut));
  }

  // 18. clock() and clock64() read back to back.
  {
    const int reads = 1024;
    unsigned* d32; unsigned long long* d64;
    CHECK(cudaMalloc(&d32, reads * 4)); CHECK(cudaMalloc(&d64, reads * 8));
    clock_steps<<<1, 32>>>(d32, d64, reads);
    std::vector<unsigned> h32(reads); std::vector<unsigned long long> h64(reads);
    CHECK(cudaMemcpy(h32.data(), d32, reads * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(h64.data(), d64, reads * 8, cudaMemcpyDeviceToHost));
    std::map<unsigned long long, int> s32, s64;
    for (int k = 0; k < reads; ++k) { s32[h32[k]]++; s64[h64[k]]++; }
    std::printf("clock() read back to back, %d times:", reads);
    for (auto& [v, n] : s32) std::printf(" %llu x%d", v, n);
    std::printf("; clock64():");
    for (auto& [v, n] : s64) std::printf(" %llu x%d", v, n);
    std::printf("\n");
    CHECK(cudaFree(d32)); CHECK(cudaFree(d64));
  }

  // 19. A kernel of over 200 registers: ptxas's count, what the occupancy API says an SM holds
  // (blocks of 256), and how many of its blocks were present at once in a grid of 8 per SM.
  {
    cudaFuncAttributes attributes;
    CHECK(cudaFuncGetAttributes(&attributes, register_heavy));
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, register_heavy, 256, 0));
    const int blocks = 8 * prop.multiProcessorCount;
    float *din, *dout;
    CHECK(cudaMalloc(&din, 2048 * 4)); CHECK(cudaMalloc(&dout, static_cast<size_t>(blocks) * 256 * 4));
    CHECK(cudaMemset(din, 0, 2048 * 4));
    unsigned zero = 0;
    CHECK(cudaMemcpyToSymbol(present_blocks, &zero, 4)); CHECK(cudaMemcpyToSymbol(most_present, &zero, 4));
    register_heavy<<<blocks, 256>>>(din, dout, 1);
    CHECK(cudaDeviceSynchronize());
    unsigned most = 0; CHECK(cudaMemcpyFromSymbol(&most, most_present, 4));
    std::printf("register-heavy kernel: %d registers a thread, %zu bytes static shared; occupancy API: %d blocks of 256 an SM "
                "(%d on the GPU); at most %u of %d blocks present at once\n",
                attributes.numRegs, attributes.sharedSizeBytes, per_sm, per_sm * prop.multiProcessorCount, most, blocks);
    CHECK(cudaFree(din)); CHECK(cudaFree(dout));
  }

  // 20. %total_smem_size of a block that declares 16,388 bytes; reads past its end are
  // gpu-check's (one process each: `--shared-past N`).
  {
    unsigned* d; CHECK(cudaMalloc(&d, 8));
    shared_past<<<1, 256>>>(0, d);
    unsigned h[2]; CHECK(cudaMemcpy(h, d, 8, cudaMemcpyDeviceToHost));
    std::printf("a block declaring 16388 bytes of shared memory: total_smem_size %u; reservedSharedMemPerBlock %zu\n",
                h[0], prop.reservedSharedMemPerBlock);
    CHECK(cudaFree(d));
  }

  // 21. Reads past the end of an 8 KiB buffer: the first offset that faults ends this program
  // (the context is lost), so it comes last.
  {
    char* buf; CHECK(cudaMalloc(&buf, 8192));
    unsigned* d; CHECK(cudaMalloc(&d, 4));
    for (unsigned long long offset : {8192ull, 8192ull + 4096, 65536ull, 2ull << 20, 64ull << 20}) {
      read_at<<<1, 1>>>(buf, offset, d);
      const cudaError_t e = cudaDeviceSynchronize();
      std::printf("read at byte %llu of an 8 KiB buffer: %s\n", offset,
                  e == cudaSuccess ? "no fault" : cudaGetErrorString(e));
      std::fflush(stdout);
      if (e != cudaSuccess) return 0;
    }
  }
  return 0;
}
