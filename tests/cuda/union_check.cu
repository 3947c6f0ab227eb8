// Prototype (session 24, not kept): a union-staged level-3 tile. Each CTA (a 64-row tile, BN output channels)
// stages the distinct input rows its map entries reach once (host-made plan: the rows, and each (row, offset)'s slot),
// then walks the tile's offsets with the weights by TMA and the A fragments read from the staged rows at per-lane
// ldmatrix addresses (register-A wgmma). Same summation order as the unsplit wgmma tiles.
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/implicit_gemm.cuh"
#include "backends/cuda/kernels.h"
#include "core/half.h"
#include "scn/error.h"
#include "scn/tensor.h"

using namespace scn;
using namespace scn::cuda;

namespace {

#define CK(expr)                                                                                           \
  do {                                                                                                     \
    const cudaError_t e_ = (expr);                                                                         \
    if (e_ != cudaSuccess)                                                                                 \
      throw scn::Error(std::string("CUDA error in ") + #expr + ": " + cudaGetErrorString(e_) + " (line " + \
                       std::to_string(__LINE__) + ")");                                                    \
  } while (0)

constexpr int kK = 27;
constexpr int kC = 128;
constexpr int kRowB = 272;  // padded staged row (bytes): conflict-free ldmatrix phases

#define SCN_ACC4(j) "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
__device__ __forceinline__ void wgmma_ra(float (&d)[16][4], const uint32_t (&a)[4], uint64_t db) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n"
      "}\n"
      : SCN_ACC4(0), SCN_ACC4(1), SCN_ACC4(2), SCN_ACC4(3), SCN_ACC4(4), SCN_ACC4(5), SCN_ACC4(6), SCN_ACC4(7),
        SCN_ACC4(8), SCN_ACC4(9), SCN_ACC4(10), SCN_ACC4(11), SCN_ACC4(12), SCN_ACC4(13), SCN_ACC4(14), SCN_ACC4(15)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
#else
  __trap();
#endif
}
__device__ __forceinline__ void wgmma_ra(float (&d)[8][4], const uint32_t (&a)[4], uint64_t db) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n"
      "}\n"
      : SCN_ACC4(0), SCN_ACC4(1), SCN_ACC4(2), SCN_ACC4(3), SCN_ACC4(4), SCN_ACC4(5), SCN_ACC4(6), SCN_ACC4(7)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
#else
  __trap();
#endif
}
#undef SCN_ACC4

struct UArgs {
  const __half* x;
  const __half* wt;  // igemm_tile_weights of an m64n<BN>k64 wgmma config: [27][2][128/BN][BN][64] swizzled
  const int32_t* tile_rows;
  const int32_t* tile_off;
  const int16_t* slots;  // [ntiles * 64][27]
  const uint32_t* tile_mask;
  const float* bias;
  __half* y;
  int n, umax;
};

template <int BN, int S>
struct UCfg {
  static constexpr int kWs = 2 * BN * 128;  // one offset's weights (two 64-channel slices)
  static size_t smem(int umax) { return size_t(S) * kWs + size_t(umax + 1) * kRowB + 64 * kK * 2 + S * 8 + 1024; }
};

// PROBE (timing only): 0 full, 1 no MMA, 2 no staging copies
template <int BN, int S, int PROBE>
__global__ void __launch_bounds__(128, 1) union_kernel(const UArgs a) {
  using namespace scn::cuda::igemm;
  constexpr int NY = 128 / BN;
  constexpr int kWs = UCfg<BN, S>::kWs;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  uint8_t* smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
  uint8_t* sW = smem;
  uint8_t* sU = smem + S * kWs;
  uint8_t* sZ = sU + size_t(a.umax) * kRowB;
  int16_t* sSl = reinterpret_cast<int16_t*>(sZ + kRowB);
  uint64_t* bar = reinterpret_cast<uint64_t*>(sSl + 64 * kK);
  const int tile = blockIdx.x, j = blockIdx.y;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const uint32_t mask = __ldg(a.tile_mask + tile);
  const int nact = __popc(mask);
  if (tid == 0) {
    for (int s = 0; s < S; ++s) mbar_init(&bar[s], 1);
    mbar_fence_init();
  }
  __syncthreads();
  uint32_t ml = mask;  // thread 0: offsets not yet loaded
  auto load_w = [&](int slot) {
    const int k = __ffs(ml) - 1;
    ml &= ml - 1u;
    expect_tx(&bar[slot], uint32_t(kWs));
    for (int ch = 0; ch < 2; ++ch)
      tma_load_1d(sW + slot * kWs + ch * BN * 128, a.wt + (size_t(k * 2 + ch) * NY + j) * BN * 64, BN * 128,
                  &bar[slot]);
  };
  if (tid == 0)
    for (int i = 0; i < S && i < nact; ++i) load_w(i);
  const int u0 = a.tile_off[tile], nu = a.tile_off[tile + 1] - u0;
  if constexpr (PROBE != 2) {
    for (int i = tid; i < nu * 16; i += 128) {
      const int rr = i >> 4, c = i & 15;
      cp_async16(sU + rr * kRowB + c * 16, a.x + int64_t(__ldg(a.tile_rows + u0 + rr)) * kC + c * 8);
    }
  }
  for (int i = tid; i < 64 * kK * 2 / 16; i += 128)
    cp_async16(reinterpret_cast<uint8_t*>(sSl) + 16 * i,
               reinterpret_cast<const uint8_t*>(a.slots + size_t(tile) * 64 * kK) + 16 * i);
  for (int i = tid; i < kRowB / 4; i += 128) reinterpret_cast<uint32_t*>(sZ)[i] = 0u;
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();

  float acc[BN / 8][4];
#pragma unroll
  for (int q = 0; q < BN / 8; ++q) acc[q][0] = acc[q][1] = acc[q][2] = acc[q][3] = 0.f;
  const int lr = 16 * warp + (lane & 15);
  const uint32_t lane_col = uint32_t(lane >> 4) * 16u;
  const uint32_t u_base = smem_addr(sU) + lane_col, z_addr = smem_addr(sZ) + lane_col;
  uint32_t mc = mask;
  for (int i = 0; i < nact; ++i) {
    const int k = __ffs(mc) - 1;
    mc &= mc - 1u;
    const int slot = i % S;
    mbar_wait(&bar[slot], uint32_t(i / S) & 1u);
    const int s = sSl[lr * kK + k];
    const uint32_t addr = s >= 0 ? u_base + uint32_t(s) * kRowB : z_addr;
    uint32_t af[8][4];
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) ptx::ldmatrix_x4_at(af[kk], addr + 32u * kk);
    if constexpr (PROBE != 1) {
      wg_fence();
#pragma unroll
      for (int kk = 0; kk < 8; ++kk)
        wgmma_ra(acc, af[kk], wg_desc(sW + slot * kWs + (kk >> 2) * BN * 128) + 2 * (kk & 3));
      wg_commit();
      wg_wait<0>();
      wg_fence_acc(acc);
    } else {
#pragma unroll
      for (int kk = 0; kk < 8; ++kk) acc[kk % (BN / 8)][0] += __uint_as_float(af[kk][0] & 0x3f000000u);
    }
    __syncthreads();  // every warp's MMAs are done with the weight slot
    if (tid == 0 && i + S < nact) load_w(slot);
  }
  const int64_t m0 = int64_t(tile) * 64;
#pragma unroll
  for (int q = 0; q < BN / 8; ++q)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = m0 + 16 * warp + (lane >> 2) + 8 * h;
      const int col = j * BN + 8 * q + 2 * (lane & 3);
      if (row >= a.n) continue;
      float v0 = acc[q][2 * h] + a.bias[col], v1 = acc[q][2 * h + 1] + a.bias[col + 1];
      v0 = v0 > 0.f ? v0 : 0.f;
      v1 = v1 > 0.f ? v1 : 0.f;
      *reinterpret_cast<__half2*>(a.y + row * kC + col) = __floats2half2_rn(v0, v1);
    }
}

// W warpgroups per CTA, warpgroup w computing output channels [w*BN, (w+1)*BN) of the same tile (BN = 128 / W) from the
// shared staged rows, each with its own weight ring; MMAs asynchronous (the next offset's A fragments are loaded
// while the current ones multiply).
template <int W, int S>
struct U2Cfg {
  static constexpr int BN = 128 / W;
  static constexpr int kWs = 2 * BN * 128;
  static size_t smem(int umax) {
    return size_t(W) * S * kWs + size_t(umax + 1) * kRowB + 64 * kK * 2 + size_t(W) * S * 8 + 1024;
  }
};
template <int W, int S>
__global__ void __launch_bounds__(W * 128, 1) union2_kernel(const UArgs a) {
  using namespace scn::cuda::igemm;
  constexpr int BN = 128 / W, NY = W;
  constexpr int kWs = U2Cfg<W, S>::kWs;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  uint8_t* smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
  const int tid = threadIdx.x, wg = tid >> 7, t = tid & 127, warp = t >> 5, lane = tid & 31;
  uint8_t* sW = smem + size_t(wg) * S * kWs;
  uint8_t* sU = smem + size_t(W) * S * kWs;
  uint8_t* sZ = sU + size_t(a.umax) * kRowB;
  int16_t* sSl = reinterpret_cast<int16_t*>(sZ + kRowB);
  uint64_t* bar = reinterpret_cast<uint64_t*>(sSl + 64 * kK) + wg * S;
  const int tile = blockIdx.x, j = wg;
  const uint32_t mask = __ldg(a.tile_mask + tile);
  const int nact = __popc(mask);
  if (t == 0) {
    for (int q = 0; q < S; ++q) mbar_init(&bar[q], 1);
    mbar_fence_init();
  }
  __syncthreads();
  uint32_t ml = mask;
  auto load_w = [&](int slot) {
    const int k = __ffs(ml) - 1;
    ml &= ml - 1u;
    expect_tx(&bar[slot], uint32_t(kWs));
    for (int ch = 0; ch < 2; ++ch)
      tma_load_1d(sW + slot * kWs + ch * BN * 128, a.wt + (size_t(k * 2 + ch) * NY + j) * BN * 64, BN * 128,
                  &bar[slot]);
  };
  if (t == 0)
    for (int i = 0; i < S && i < nact; ++i) load_w(i);
  const int u0 = a.tile_off[tile], nu = a.tile_off[tile + 1] - u0;
  for (int i = tid; i < nu * 16; i += W * 128) {
    const int rr = i >> 4, c = i & 15;
    cp_async16(sU + rr * kRowB + c * 16, a.x + int64_t(__ldg(a.tile_rows + u0 + rr)) * kC + c * 8);
  }
  for (int i = tid; i < 64 * kK * 2 / 16; i += W * 128)
    cp_async16(reinterpret_cast<uint8_t*>(sSl) + 16 * i,
               reinterpret_cast<const uint8_t*>(a.slots + size_t(tile) * 64 * kK) + 16 * i);
  for (int i = tid; i < kRowB / 4; i += W * 128) reinterpret_cast<uint32_t*>(sZ)[i] = 0u;
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();

  float acc[BN / 8][4];
#pragma unroll
  for (int q = 0; q < BN / 8; ++q) acc[q][0] = acc[q][1] = acc[q][2] = acc[q][3] = 0.f;
  const int lr = 16 * warp + (lane & 15);
  const uint32_t lane_col = uint32_t(lane >> 4) * 16u;
  const uint32_t u_base = smem_addr(sU) + lane_col, z_addr = smem_addr(sZ) + lane_col;
  uint32_t mc = mask;
  int kc = 0;  // the offset whose fragments are loaded next
  auto load_a = [&](uint32_t(&af)[8][4], int i) {
    kc = __ffs(mc) - 1;
    mc &= mc - 1u;
    mbar_wait(&bar[i % S], uint32_t(i / S) & 1u);
    const int s = sSl[lr * kK + kc];
    const uint32_t addr = s >= 0 ? u_base + uint32_t(s) * kRowB : z_addr;
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) ptx::ldmatrix_x4_at(af[kk], addr + 32u * kk);
  };
  auto mma = [&](const uint32_t(&af)[8][4], int i) {
    wg_fence();
#pragma unroll
    for (int kk = 0; kk < 8; ++kk)
      wgmma_ra(acc, af[kk], wg_desc(sW + (i % S) * kWs + (kk >> 2) * BN * 128) + 2 * (kk & 3));
    wg_commit();
  };
  auto release = [&](int i) {  // step i's MMAs are done in this warpgroup: its weight slot takes step i + S
    ptx::named_barrier_sync(1 + wg, 128);
    if (t == 0 && i + S < nact) load_w(i % S);
  };
  uint32_t af0[8][4], af1[8][4];
  if (nact > 0) load_a(af0, 0);
  for (int i = 0; i < nact; i += 2) {
    mma(af0, i);
    if (i + 1 < nact) {
      wg_wait<1>();
      if (i >= 1) release(i - 1);
      load_a(af1, i + 1);
      mma(af1, i + 1);
    }
    wg_wait<1>();
    release(i);
    if (i + 2 < nact) load_a(af0, i + 2);
  }
  wg_wait<0>();
  wg_fence_acc(acc);
  const int64_t m0 = int64_t(tile) * 64;
#pragma unroll
  for (int q = 0; q < BN / 8; ++q)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = m0 + 16 * warp + (lane >> 2) + 8 * h;
      const int col = j * BN + 8 * q + 2 * (lane & 3);
      if (row >= a.n) continue;
      float v0 = acc[q][2 * h] + a.bias[col], v1 = acc[q][2 * h + 1] + a.bias[col + 1];
      v0 = v0 > 0.f ? v0 : 0.f;
      v1 = v1 > 0.f ? v1 : 0.f;
      *reinterpret_cast<__half2*>(a.y + row * kC + col) = __floats2half2_rn(v0, v1);
    }
}

// Channel halves outer: the union's rows staged 64 channels at a time (128-byte rows, 16-byte chunk q of slot s at
// q ^ (s % 8)), every active offset walked per half with 8 KiB weight slices (BN = 64, the grid's y the N half).
// Sums in another order than the tiles (halves outer): checked against fp64, not bitwise.
template <int S, int CIN, int G = 1>
struct U3Cfg {
  static constexpr int kWs = G * 64 * 128;  // G offsets' 64-channel weight slices per ring slot
  static size_t smem(int umax) { return size_t(S) * kWs + size_t(umax) * 128 + 128 + 64 * kK * 2 + S * 8 + 1024; }
};
// G offsets per step: one step's A fragments of its G offsets come from the same staged rows (no extra gathers), its
// MMAs accumulate them in ascending order, as G steps would.
template <int S, int CIN, int G = 1>
__global__ void __launch_bounds__(128) union3_kernel(const UArgs a) {
  using namespace scn::cuda::igemm;
  constexpr int BN = 64, NY = CIN / 64, PASSES = CIN / 64, kSl = 64 * 128, kWs = U3Cfg<S, CIN, G>::kWs;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  uint8_t* smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
  uint8_t* sW = smem;
  uint8_t* sU = smem + S * kWs;
  uint8_t* sZ = sU + size_t(a.umax) * 128;
  int16_t* sSl = reinterpret_cast<int16_t*>(sZ + 128);
  uint64_t* bar = reinterpret_cast<uint64_t*>(sSl + 64 * kK);
  const int tile = blockIdx.x, j = blockIdx.y;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const uint32_t mask = __ldg(a.tile_mask + tile);
  const int nact = __popc(mask), per_pass = (nact + G - 1) / G, nsteps = PASSES * per_pass;
  if (tid == 0) {
    for (int q = 0; q < S; ++q) mbar_init(&bar[q], 1);
    mbar_fence_init();
  }
  __syncthreads();
  uint32_t ml = mask;
  int lc = 0;
  auto load_w = [&](int slot) {
    if (ml == 0) {
      ml = mask;
      ++lc;
    }
    int ks[G], ng = 0;
#pragma unroll
    for (int g = 0; g < G; ++g) {
      ks[g] = ml ? __ffs(ml) - 1 : -1;
      if (ml) ++ng;
      ml &= ml - 1u;
    }
    expect_tx(&bar[slot], uint32_t(ng * kSl));
#pragma unroll
    for (int g = 0; g < G; ++g)
      if (ks[g] >= 0)
        tma_load_1d(sW + slot * kWs + g * kSl, a.wt + (size_t(ks[g] * PASSES + lc) * NY + j) * BN * 64, kSl,
                    &bar[slot]);
  };
  if (tid == 0)
    for (int i = 0; i < S && i < nsteps; ++i) load_w(i);
  const int u0 = a.tile_off[tile], nu = a.tile_off[tile + 1] - u0;
  auto stage = [&](int c) {
    for (int i = tid; i < nu * 8; i += 128) {
      const int rr = i >> 3, q = i & 7;
      cp_async16(sU + rr * 128 + ((q ^ (rr & 7)) << 4),
                 a.x + int64_t(__ldg(a.tile_rows + u0 + rr)) * CIN + c * 64 + q * 8);
    }
    cp_async_commit();
  };
  stage(0);
  for (int i = tid; i < 64 * kK * 2 / 16; i += 128)
    cp_async16(reinterpret_cast<uint8_t*>(sSl) + 16 * i,
               reinterpret_cast<const uint8_t*>(a.slots + size_t(tile) * 64 * kK) + 16 * i);
  for (int i = tid; i < 32; i += 128) reinterpret_cast<uint32_t*>(sZ)[i] = 0u;
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();

  float acc[8][4];
#pragma unroll
  for (int q = 0; q < 8; ++q) acc[q][0] = acc[q][1] = acc[q][2] = acc[q][3] = 0.f;
  const int lr = 16 * warp + (lane & 15);
  const uint32_t hi = uint32_t(lane >> 4);
  const uint32_t u_base = smem_addr(sU), z_addr = smem_addr(sZ);
  uint32_t mc = mask;
  auto load_a = [&](uint32_t(&af)[G][4][4], int& ng, int i) {
    if (PASSES == 2 && i == per_pass) {  // second half: every warp has read the first half's rows
      __syncthreads();
      stage(1);
      cp_async_wait<0>();
      __syncthreads();
      mc = mask;
    }
    mbar_wait(&bar[i % S], uint32_t(i / S) & 1u);
    ng = 0;
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const int k = mc ? __ffs(mc) - 1 : 0;
      if (mc) ++ng;
      mc &= mc - 1u;
      const int s = g < ng ? sSl[lr * kK + k] : -1;
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        const uint32_t q = uint32_t(2 * kk) + hi;
        const uint32_t addr = s >= 0 ? u_base + uint32_t(s) * 128u + ((q ^ uint32_t(s & 7)) << 4) : z_addr + (q << 4);
        ptx::ldmatrix_x4_at(af[g][kk], addr);
      }
    }
  };
  auto mma = [&](const uint32_t(&af)[G][4][4], int ng, int i) {
    wg_fence();
#pragma unroll
    for (int g = 0; g < G; ++g)
      if (g < ng) {
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) wgmma_ra(acc, af[g][kk], wg_desc(sW + (i % S) * kWs + g * kSl) + 2 * kk);
      }
    wg_commit();
  };
  auto release = [&](int i) {
    __syncthreads();
    if (tid == 0 && i + S < nsteps) load_w(i % S);
  };
  uint32_t af0[G][4][4], af1[G][4][4];
  int ng0 = 0, ng1 = 0;
  if (nsteps > 0) load_a(af0, ng0, 0);
  for (int i = 0; i < nsteps; i += 2) {
    mma(af0, ng0, i);
    if (i + 1 < nsteps) {
      wg_wait<1>();
      if (i >= 1) release(i - 1);
      load_a(af1, ng1, i + 1);
      mma(af1, ng1, i + 1);
    }
    wg_wait<1>();
    release(i);
    if (i + 2 < nsteps) load_a(af0, ng0, i + 2);
  }
  wg_wait<0>();
  wg_fence_acc(acc);
  const int64_t m0 = int64_t(tile) * 64;
#pragma unroll
  for (int q = 0; q < 8; ++q)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = m0 + 16 * warp + (lane >> 2) + 8 * h;
      const int col = j * BN + 8 * q + 2 * (lane & 3);
      if (row >= a.n) continue;
      float v0 = acc[q][2 * h] + a.bias[col], v1 = acc[q][2 * h + 1] + a.bias[col + 1];
      v0 = v0 > 0.f ? v0 : 0.f;
      v1 = v1 > 0.f ? v1 : 0.f;
      *reinterpret_cast<__half2*>(a.y + row * CIN + col) = __floats2half2_rn(v0, v1);
    }
}

struct Buf {
  void* p = nullptr;
  size_t bytes = 0;
  explicit Buf(size_t n) : bytes(n) { CK(cudaMalloc(&p, n < 16 ? 16 : n)); }
  ~Buf() { cudaFree(p); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(p);
  }
  template <typename T>
  void up(const std::vector<T>& v) {
    CK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  template <typename T>
  std::vector<T> down(size_t n) const {
    std::vector<T> v(n);
    CK(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }
};

struct Sites {
  SiteIndex s;
  Buf bits, rank_local, rank_block, perm, coords, count;
  Sites(int s0, int s1, int s2, int64_t cap, bool with_perm)
      : bits(words(s0, s1, s2) * 8),
        rank_local(words(s0, s1, s2) * 2),
        rank_block(size_t(rank_blocks(int64_t(words(s0, s1, s2)))) * 4),
        perm(with_perm ? size_t(cap) * 4 : 16),
        coords(size_t(cap) * 16),
        count(4) {
    s.bits = bits.as<uint64_t>();
    s.rank_local = rank_local.as<uint16_t>();
    s.rank_block = rank_block.as<uint32_t>();
    s.perm = with_perm ? perm.as<int32_t>() : nullptr;
    s.coords = coords.as<int4>();
    s.count = count.as<int>();
    s.words = int64_t(words(s0, s1, s2));
    s.cap = cap;
    s.s0 = s0;
    s.s1 = s1;
    s.s2 = s2;
    s.batch = 1;
    CK(cudaMemset(bits.p, 0, bits.bytes));
  }
  static size_t words(int s0, int s1, int s2) { return (size_t(s0) * s1 * s2 + 63) / 64; }
};

std::vector<uint16_t> random_halves(size_t n, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(0.05f, 1.f);
  std::bernoulli_distribution sign(0.5);
  std::vector<uint16_t> v(n);
  for (auto& hv : v) hv = float_to_half((sign(rng) ? -1.f : 1.f) * u(rng) * scale);
  return v;
}

template <typename F>
std::pair<double, double> time_kernel(F launch, int runs, cudaStream_t st) {
  for (int i = 0; i < 20; ++i) launch();
  std::vector<cudaEvent_t> ev(size_t(runs) + 1);
  for (auto& e : ev) CK(cudaEventCreate(&e));
  CK(cudaEventRecord(ev[0], st));
  for (int i = 0; i < runs; ++i) {
    launch();
    CK(cudaEventRecord(ev[size_t(i) + 1], st));
  }
  CK(cudaStreamSynchronize(st));
  std::vector<double> tt(static_cast<size_t>(runs));
  for (int i = 0; i < runs; ++i) {
    float ms = 0.f;
    CK(cudaEventElapsedTime(&ms, ev[size_t(i)], ev[size_t(i) + 1]));
    tt[size_t(i)] = ms * 1000.0;
  }
  for (auto& e : ev) CK(cudaEventDestroy(e));
  std::sort(tt.begin(), tt.end());
  return {tt[tt.size() / 2], tt.front()};
}

struct Variant {
  const char* name;
  int bn;
  void (*kernel)(const UArgs);
  size_t (*smem)(int);
  int wgs = 0;  // > 0: union2_kernel with this many warpgroups (grid: one CTA per tile)
};
template <int S, int CIN, int G = 1>
Variant make_u3(const char* name) {
  return Variant{name, 64, &union3_kernel<S, CIN, G>, &U3Cfg<S, CIN, G>::smem, 0};
}
template <int W, int S>
Variant make_u2(const char* name) {
  return Variant{name, 128 / W, &union2_kernel<W, S>, &U2Cfg<W, S>::smem, W};
}
template <int BN, int S, int PROBE = 0>
Variant make_variant(const char* name) {
  return Variant{name, BN, &union_kernel<BN, S, PROBE>, &UCfg<BN, S>::smem};
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = SCN_SHARED_DATA_DIR "/nuscenes-centerpoint";
  int runs = 200;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--data" && i + 1 < argc) data = argv[++i];
    if (s == "--runs" && i + 1 < argc) runs = std::atoi(argv[++i]);
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  int failures = 0;
  try {
    cudaDeviceProp prop{};
    CK(cudaGetDeviceProperties(&prop, 0));
    const int sm = prop.multiProcessorCount;
    std::printf("device: %s (%d SMs)\n", prop.name, sm);
    igemm_init();
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    std::mt19937 rng(24);
    const Tensor idx = Tensor::load(data + "/in_indices_zyx.torch.int32.tensor");
    const int64_t n0 = idx.dim(0);
    Buf d_idx(size_t(n0) * 16), d_feat(size_t(n0) * 32), x0(size_t(n0) * 32);
    CK(cudaMemcpy(d_idx.p, idx.data(), size_t(n0) * 16, cudaMemcpyHostToDevice));
    d_feat.up(random_halves(size_t(n0) * 16, 1.f, rng));
    std::vector<ErrSlot> einit(kNumErrKinds, ErrSlot{0, LLONG_MAX, 0, 0});
    Buf err(sizeof(ErrSlot) * kNumErrKinds);
    err.up(einit);
    Sites s0(41, 1440, 1440, n0, true);
    const int n0i = int(n0);
    CK(cudaMemcpy(s0.count.p, &n0i, 4, cudaMemcpyHostToDevice));
    launch_input_sites_features(d_idx.as<int32_t>(), d_feat.p, false, 16, 16, x0.p, s0.s, err.as<ErrSlot>(), sm, st);
    launch_rank(s0.s, false, nullptr, sm, st);
    launch_build_perm(s0.s, sm, st);
    const MapGeom down{3, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1};
    const MapGeom down3{3, 3, 3, 2, 2, 2, 0, 1, 1, 1, 1, 1};
    const MapGeom subm{3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    Sites s1(21, 720, 720, 2 * n0, false);
    launch_strided_mark(s0.s, s1.s, down, sm, st);
    launch_rank(s1.s, true, err.as<ErrSlot>(), sm, st);
    launch_emit_coords(s1.s, sm, st);
    Sites s2(11, 360, 360, 2 * n0, false);
    launch_strided_mark(s1.s, s2.s, down, sm, st);
    launch_rank(s2.s, true, err.as<ErrSlot>(), sm, st);
    launch_emit_coords(s2.s, sm, st);
    Sites s3(5, 180, 180, n0, false);
    launch_strided_mark(s2.s, s3.s, down3, sm, st);
    launch_rank(s3.s, true, err.as<ErrSlot>(), sm, st);
    launch_emit_coords(s3.s, sm, st);
    CK(cudaStreamSynchronize(st));
    const int n = s3.count.down<int>(1)[0];
    Buf map(size_t(n) * kK * 4);
    launch_subm_map(s3.s, subm, map.as<int32_t>(), MapKernel::Rows, sm, st);
    CK(cudaStreamSynchronize(st));
    auto run_level = [&](const char* level, int n, const Buf& map, int C, const std::vector<const char*>& refs,
                         const std::vector<Variant>& variants) {
      const std::vector<int32_t> hmap = map.down<int32_t>(size_t(n) * kK);
      const int ntiles = (n + 63) / 64;
      // the plan: per tile its distinct input rows (ascending) and each (row, offset)'s slot among them
      std::vector<uint32_t> mask(size_t(ntiles), 0u);
      std::vector<int32_t> tile_off(size_t(ntiles) + 1, 0), tile_rows;
      std::vector<int16_t> slots(size_t(ntiles) * 64 * kK, int16_t(-1));
      int umax = 0;
      int64_t pairs = 0;
      for (int t = 0; t < ntiles; ++t) {
        std::vector<int32_t> u;
        for (int r = 0; r < 64 && t * 64 + r < n; ++r)
          for (int k = 0; k < kK; ++k) {
            const int32_t v = hmap[size_t(t * 64 + r) * kK + size_t(k)];
            if (v >= 0) u.push_back(v), mask[size_t(t)] |= 1u << k, ++pairs;
          }
        std::sort(u.begin(), u.end());
        u.erase(std::unique(u.begin(), u.end()), u.end());
        for (int r = 0; r < 64 && t * 64 + r < n; ++r)
          for (int k = 0; k < kK; ++k) {
            const int32_t v = hmap[size_t(t * 64 + r) * kK + size_t(k)];
            if (v >= 0)
              slots[(size_t(t) * 64 + size_t(r)) * kK + size_t(k)] =
                  int16_t(std::lower_bound(u.begin(), u.end(), v) - u.begin());
          }
        umax = std::max(umax, int(u.size()));
        tile_rows.insert(tile_rows.end(), u.begin(), u.end());
        tile_off[size_t(t) + 1] = int32_t(tile_rows.size());
      }
      int64_t steps = 0;
      for (uint32_t m : mask) steps += __builtin_popcount(m);
      std::printf(
          "%s: %d sites, %lld pairs, %d tiles, %lld steps (%.1f per tile), distinct rows %.1f per tile "
          "(largest %d)\n",
          level, n, (long long)pairs, ntiles, (long long)steps, double(steps) / ntiles,
          double(tile_rows.size()) / ntiles, umax);

      const std::vector<uint16_t> hx = random_halves(size_t(n) * C, 1.f, rng);
      const float wscale = 1.f / std::sqrt(float(kK * C) * 0.3f);
      std::vector<uint16_t> w(size_t(kK) * 128 * C, 0);
      for (int k = 0; k < kK; ++k) {
        const std::vector<uint16_t> wk = random_halves(size_t(C) * C, wscale, rng);
        std::copy(wk.begin(), wk.end(), w.begin() + long(size_t(k) * 128 * C));
      }
      std::vector<float> bias(C);
      for (int c = 0; c < C; ++c) bias[size_t(c)] = half_to_float(random_halves(1, 0.2f, rng)[0]);
      Buf d_x(hx.size() * 2), d_w(w.size() * 2), d_bias(C * 4), d_mask(mask.size() * 4), d_count(4),
          d_rows(tile_rows.size() * 4 + 16), d_off(tile_off.size() * 4), d_slots(slots.size() * 2);
      d_x.up(hx);
      d_w.up(w);
      d_bias.up(bias);
      d_mask.up(mask);
      d_rows.up(tile_rows);
      d_off.up(tile_off);
      d_slots.up(slots);
      CK(cudaMemcpy(d_count.p, &n, 4, cudaMemcpyHostToDevice));
      Buf d_y(size_t(n) * C * 2), d_y2(size_t(n) * C * 2);

      std::vector<uint16_t> y_ref;  // the unsplit wgmma tile: the same summation order
      for (const char* name : refs) {
        const int id = igemm_find_config(name);
        if (id < 0) continue;
        const std::vector<uint16_t> wt = igemm_tile_weights(id, w, kK, 128, C, C);
        Buf d_wt(wt.size() * 2);
        d_wt.up(wt);
        ConvArgs ca;
        ca.x = d_x.p;
        ca.out_in = map.as<int32_t>();
        ca.w = d_w.p;
        ca.w_tma = d_wt.p;
        ca.bias = d_bias.as<float>();
        ca.y = d_y.p;
        ca.n_out = d_count.as<int>();
        ca.cap_out = n;
        ca.K = kK;
        ca.cin_p = C;
        ca.cout = C;
        ca.cout_p = C;
        ca.cout_w = 128;
        ca.act = Act::ReLU;
        launch_igemm(id, ca, sm, st);
        CK(cudaStreamSynchronize(st));
        const std::vector<uint16_t> yt = d_y.down<uint16_t>(size_t(n) * C);
        if (y_ref.empty()) y_ref = yt;
        int64_t diff = 0;
        for (size_t i = 0; i < yt.size(); ++i) diff += yt[i] != y_ref[i];
        const auto tm = time_kernel([&] { launch_igemm(id, ca, sm, st); }, runs, st);
        std::printf("tile %-22s median %7.2f us  min %7.2f  differs from %s in %lld\n", name, tm.first, tm.second,
                    refs.front(), (long long)diff);
      }
      for (const Variant& v : variants) {
        const int id = igemm_find_config(v.bn == 64 ? "m64n64k64s3twg" : "m64n128k64s3twg");
        if (v.wgs == 0 && C == 64 && v.bn != 64) continue;
        SCN_CHECK(id >= 0, "weights config missing");
        const std::vector<uint16_t> wt = igemm_tile_weights(id, w, kK, 128, C, C);
        Buf d_wt(wt.size() * 2);
        d_wt.up(wt);
        UArgs ua{d_x.as<__half>(),
                 d_wt.as<__half>(),
                 d_rows.as<int32_t>(),
                 d_off.as<int32_t>(),
                 d_slots.as<int16_t>(),
                 d_mask.as<uint32_t>(),
                 d_bias.as<float>(),
                 d_y2.as<__half>(),
                 n,
                 umax};
        const size_t smem = v.smem(umax);
        CK(cudaFuncSetAttribute(v.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
        int bps = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, v.kernel, 128, smem));
        const dim3 grid(unsigned(ntiles), unsigned(v.wgs ? 1 : C / v.bn));
        const int threads = v.wgs ? 128 * v.wgs : 128;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, v.kernel, threads, smem));
        auto launch = [&] { v.kernel<<<grid, threads, smem, st>>>(ua); };
        CK(cudaMemset(d_y2.p, 0, d_y2.bytes));
        launch();
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(st));
        const std::vector<uint16_t> ys = d_y2.down<uint16_t>(size_t(n) * C);
        int64_t diff = 0;
        for (size_t i = 0; i < ys.size(); ++i) diff += ys[i] != y_ref[i];
        const auto tm = time_kernel(launch, runs, st);
        std::printf(
            "%-24s median %7.2f us  min %7.2f  smem %zu B, %d/SM  differs from the unsplit tile in %lld of %zu\n",
            v.name, tm.first, tm.second, smem, bps, (long long)diff, ys.size());
        double num = 0, den = 0;
        for (size_t i = 0; i < ys.size(); ++i) {
          const double d = double(half_to_float(ys[i])) - half_to_float(y_ref[i]);
          num += d * d;
          den += double(half_to_float(y_ref[i])) * half_to_float(y_ref[i]);
        }
        std::printf("%-24s rel-L2 vs the unsplit tile %.2e\n", v.name, std::sqrt(num / den));
        if (std::sqrt(num / den) > 1e-3) ++failures;
      }
    };
    run_level("level 3", n, map, 128, {"m64n128k64s3twg", "m64n128k64s2tx2wg"},
              {make_u3<2, 128>("halves n64 s2"), make_u3<2, 128, 2>("halves n64 s2 g2"),
               make_u3<3, 128, 2>("halves n64 s3 g2"), make_u3<2, 128, 3>("halves n64 s2 g3")});
    const int n2 = s2.count.down<int>(1)[0];
    Buf map2(size_t(n2) * kK * 4);
    launch_subm_map(s2.s, subm, map2.as<int32_t>(), MapKernel::Rows, sm, st);
    CK(cudaStreamSynchronize(st));
    run_level(
        "level 2", n2, map2, 64, {"m64n64k64s3twg", "m128n64k64s3tw12wgws"},
        {make_u3<4, 64>("union c64 s4"), make_u3<2, 64, 2>("union c64 s2 g2"), make_u3<3, 64, 2>("union c64 s3 g2"),
         make_u3<4, 64, 2>("union c64 s4 g2"), make_u3<2, 64, 3>("union c64 s2 g3"),
         make_u3<3, 64, 3>("union c64 s3 g3"), make_u3<2, 64, 4>("union c64 s2 g4")});
    CK(cudaStreamDestroy(st));
  } catch (const std::exception& ex) {
    std::printf("FAIL: %s\n", ex.what());
    return 1;
  }
  std::printf("%s: %d failed\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
