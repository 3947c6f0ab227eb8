// Prototype (session 24): a weights-stationary level-3 conv (128 -> 128 channels, 3x3x3 submanifold) against the
// engine's wgmma tiles on the real frame's level-3 sites.
//
// Each CTA holds the weights of one group of consecutive kernel offsets in shared memory for the whole kernel and
// sweeps row tiles of 64 rows; each of its warpgroups runs its own cp.async ring of gathered A tiles (no weight
// copies in the loop, several gathers in flight). A group's partial sums (fp32) go to global memory; a second
// kernel sums the groups in a fixed order and applies the epilogue. Which offsets a row tile needs comes from a
// per-tile mask (host-made here).
//
//   stationary_check [--data DIR] [--runs N]
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
constexpr int kSlice = 128 * 64 * 2;  // bytes of one weight slice: 128 output rows x 64 input channels
constexpr int kASub = 64 * 64 * 2;    // bytes of one A sub-tile: 64 rows x 64 channels

struct StatArgs {
  const __half* x;
  const int32_t* out_in;
  const __half* wt;  // the wgmma tiles' weight layout: [27][2][128][64] swizzled
  const uint32_t* tile_mask;
  const int* n_out;
  float* partial;  // [G][cap][128]
  int64_t cap;
  int G, P;
  int kbeg[32];
};

template <int NG, int W, int S>
struct StatCfg {
  static constexpr int kLook = S >= 3 ? S - 2 : S - 1;
  static constexpr size_t kSmem = size_t(NG) * 2 * kSlice + size_t(W) * S * 2 * kASub + 1024;
};

// PROBE (timing only, outputs wrong): 0 full, 1 no copies issued, 2 no wgmma
template <int NG, int W, int S, int PROBE = 0>
__global__ void __launch_bounds__(W * 128, 1) stationary_kernel(const StatArgs a) {
  using namespace scn::cuda::igemm;
  constexpr bool kAsync = S >= 3;
  constexpr int LOOK = StatCfg<NG, W, S>::kLook;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  uint8_t* smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
  const int tid = threadIdx.x;
  const int wg = tid >> 7, t = tid & 127, warp = t >> 5, lane = tid & 31;
  const int g = int(blockIdx.x) % a.G, p = int(blockIdx.x) / a.G;
  const int kb = a.kbeg[g], ke = a.kbeg[g + 1];
  const uint32_t gbits = ((1u << ke) - 1u) & ~((1u << kb) - 1u);
  {
    const uint8_t* src = reinterpret_cast<const uint8_t*>(a.wt) + size_t(kb) * 2 * kSlice;
    const int n16 = (ke - kb) * 2 * kSlice / 16;
    for (int i = tid; i < n16; i += W * 128) cp_async16(smem + 16 * i, src + 16 * i);
    cp_async_commit();
  }
  uint8_t* sA = smem + size_t(NG) * 2 * kSlice + size_t(wg) * S * 2 * kASub;
  const int n = int(min(int64_t(*a.n_out), a.cap));
  const int64_t ntiles = (n + 63) / 64;
  const int64_t tstep = int64_t(a.P) * W;
  __shared__ uint32_t sMaskAll[W][64];
  uint32_t* sMask = sMaskAll[wg];
  if (t < 64) {
    const int64_t tile = int64_t(p) * W + wg + t * tstep;
    sMask[t] = tile < ntiles ? __ldg(a.tile_mask + tile) & gbits : 0u;
  }
  __syncthreads();
  const int r = t >> 1, h = t & 1;
  const uint32_t a_dst0 = smem_addr(sA) + uint32_t(h * kASub + r * 128);
  const __half* xh = a.x + 64 * h;

  // loader cursor: tile lt, its offsets not yet issued lbits, this thread's row's map entries of the group
  int64_t lt = int64_t(p) * W + wg;
  int lj = 0;
  uint32_t lbits = 0;
  int32_t lmap[NG], nmap[NG];
  auto load_map = [&](int64_t tile, int32_t(&m)[NG]) {
    const int64_t row = tile * 64 + r;
#pragma unroll
    for (int i = 0; i < NG; ++i)
      m[i] = (tile < ntiles && row < n && kb + i < ke) ? __ldg(a.out_in + row * kK + kb + i) : -1;
  };
  load_map(lt, lmap);
  load_map(lt + tstep, nmap);
  lbits = sMask[0];
  auto skip_empty = [&]() {
    while (lbits == 0 && lt < ntiles) {
      lt += tstep;
      ++lj;
#pragma unroll
      for (int i = 0; i < NG; ++i) lmap[i] = nmap[i];
      load_map(lt + tstep, nmap);
      lbits = lt < ntiles ? sMask[lj] : 0u;
    }
  };
  skip_empty();
  uint32_t lslot = 0;
  auto issue = [&]() {
    if (lbits == 0) return;
    const int k = __ffs(lbits) - 1;
    lbits &= lbits - 1u;
    int32_t src_row = -1;
#pragma unroll
    for (int i = 0; i < NG; ++i)
      if (kb + i == k) src_row = lmap[i];
    const __half* src = xh + int64_t(max(src_row, 0)) * kC;
    const uint32_t base = a_dst0 + lslot * 2 * kASub;
    if constexpr (PROBE != 1) {
#pragma unroll
      for (int c = 0; c < 8; ++c) ptx::cp_async16_row(base + uint32_t((c ^ (r & 7)) << 4), src + 8 * c, src_row);
    }
    lslot = lslot + 1 == S ? 0 : lslot + 1;
    skip_empty();
  };
#pragma unroll
  for (int s = 0; s < LOOK; ++s) {
    issue();
    cp_async_commit();
  }
  cp_async_wait<LOOK>();  // the weights (the oldest group)
  fence_proxy_async();
  __syncthreads();

  float acc[16][4];
#pragma unroll
  for (int j = 0; j < 16; ++j)
#pragma unroll
    for (int q = 0; q < 4; ++q) acc[j][q] = 0.f;
  uint32_t cslot = 0;
  for (int64_t ct = int64_t(p) * W + wg; ct < ntiles; ct += tstep) {
    uint32_t cbits = sMask[(ct - (int64_t(p) * W + wg)) / tstep];
    while (cbits) {
      const int k = __ffs(cbits) - 1;
      cbits &= cbits - 1u;
      cp_async_wait<LOOK - 1>();
      fence_proxy_async();
      ptx::named_barrier_sync(1 + wg, 128);
      issue();
      cp_async_commit();
      wg_fence();
      const uint8_t* stA = sA + cslot * 2 * kASub;
#pragma unroll
      for (int h2 = 0; h2 < 2; ++h2) {
        const uint64_t da = wg_desc(stA + h2 * kASub);
        const uint64_t db = wg_desc(smem + size_t((k - kb) * 2 + h2) * kSlice);
        if constexpr (PROBE != 2) {
#pragma unroll
          for (int kk = 0; kk < 4; ++kk) wgmma_m64n128k16(acc, da + 2 * kk, db + 2 * kk);
        }
      }
      wg_commit();
      if constexpr (kAsync) {
        wg_wait<1>();
      } else {
        wg_wait<0>();
        wg_fence_acc(acc);
      }
      cslot = cslot + 1 == S ? 0 : cslot + 1;
    }
    wg_wait<0>();
    wg_fence_acc(acc);
    const int64_t m0 = ct * 64;
    float* out = a.partial + (int64_t(g) * a.cap + m0) * kC;
#pragma unroll
    for (int j = 0; j < 16; ++j)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int rl = warp * 16 + (lane >> 2) + 8 * hh;
        const int col = 8 * j + 2 * (lane & 3);
        if (m0 + rl < n)
          *reinterpret_cast<float2*>(out + int64_t(rl) * kC + col) = make_float2(acc[j][2 * hh], acc[j][2 * hh + 1]);
        acc[j][2 * hh] = 0.f;
        acc[j][2 * hh + 1] = 0.f;
      }
  }
  cp_async_wait<0>();
}

// ---- variant "bulk": rows by 1D bulk copies (TMA) into padded rows, absent rows never copied (their ldmatrix lanes
// read a zero row), A fragments in registers (register-A wgmma), completion on one mbarrier per stage
__device__ __forceinline__ void wgmma_m64n128k16_ra(float (&d)[16][4], const uint32_t (&a)[4], uint64_t db) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define SCN_ACC4(j) "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
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
#undef SCN_ACC4
#else
  __trap();
#endif
}

constexpr int kRowB = 272;  // padded row (bytes): conflict-free ldmatrix phases
template <int NG, int W, int S>
struct BulkCfg {
  static constexpr int kStage = 64 * kRowB;
  static constexpr size_t kA = size_t(NG) * 2 * kSlice;
  static constexpr size_t kBar = kA + size_t(W) * S * kStage;
  static constexpr size_t kPres = kBar + size_t(W) * S * 8;
  static constexpr size_t kZero = kPres + size_t(W) * S * 8;
  static constexpr size_t kSmem = kZero + kRowB + 1024;
};

template <int NG, int W, int S>
__global__ void __launch_bounds__(W * 128, 1) bulk_kernel(const StatArgs a) {
  using namespace scn::cuda::igemm;
  using Cfg = BulkCfg<NG, W, S>;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  uint8_t* smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
  const int tid = threadIdx.x;
  const int wg = tid >> 7, t = tid & 127, warp = t >> 5, lane = tid & 31;
  const int g = int(blockIdx.x) % a.G, p = int(blockIdx.x) / a.G;
  const int kb = a.kbeg[g], ke = a.kbeg[g + 1];
  const uint32_t gbits = ((1u << ke) - 1u) & ~((1u << kb) - 1u);
  uint8_t* sA = smem + Cfg::kA + size_t(wg) * S * Cfg::kStage;
  uint64_t* bar = reinterpret_cast<uint64_t*>(smem + Cfg::kBar) + wg * S;
  uint64_t* pres = reinterpret_cast<uint64_t*>(smem + Cfg::kPres) + wg * S;
  uint8_t* zero = smem + Cfg::kZero;
  {
    const uint8_t* src = reinterpret_cast<const uint8_t*>(a.wt) + size_t(kb) * 2 * kSlice;
    const int n16 = (ke - kb) * 2 * kSlice / 16;
    for (int i = tid; i < n16; i += W * 128) cp_async16(smem + 16 * i, src + 16 * i);
    cp_async_commit();
    for (int i = tid; i < kRowB / 4; i += W * 128) reinterpret_cast<uint32_t*>(zero)[i] = 0u;
    if (t == 0) {
      for (int s = 0; s < S; ++s) mbar_init(&bar[s], 64);
      mbar_fence_init();
    }
    cp_async_wait<0>();
    fence_proxy_async();
    __syncthreads();
  }
  const int n = int(min(int64_t(*a.n_out), a.cap));
  const int64_t ntiles = (n + 63) / 64;
  const int64_t tstep = int64_t(a.P) * W;
  __shared__ uint32_t sMaskAll[W][64];
  uint32_t* sMask = sMaskAll[wg];
  if (t < 64) {
    const int64_t tile = int64_t(p) * W + wg + t * tstep;
    sMask[t] = tile < ntiles ? __ldg(a.tile_mask + tile) & gbits : 0u;
  }
  __syncthreads();
  const int r = t;  // producer row (t < 64)
  const bool producer = t < 64;

  int64_t lt = int64_t(p) * W + wg;
  int lj = 0;
  uint32_t lbits = 0;
  int32_t lmap[NG], nmap[NG];
  auto load_map = [&](int64_t tile, int32_t(&m)[NG]) {
    const int64_t row = tile * 64 + r;
#pragma unroll
    for (int i = 0; i < NG; ++i)
      m[i] = (producer && tile < ntiles && row < n && kb + i < ke) ? __ldg(a.out_in + row * kK + kb + i) : -1;
  };
  load_map(lt, lmap);
  load_map(lt + tstep, nmap);
  lbits = sMask[0];
  auto skip_empty = [&]() {
    while (lbits == 0 && lt < ntiles) {
      lt += tstep;
      ++lj;
#pragma unroll
      for (int i = 0; i < NG; ++i) lmap[i] = nmap[i];
      load_map(lt + tstep, nmap);
      lbits = lt < ntiles ? sMask[lj] : 0u;
    }
  };
  skip_empty();
  uint32_t lslot = 0;
  auto issue = [&]() {
    if (lbits == 0) return;
    const int k = __ffs(lbits) - 1;
    lbits &= lbits - 1u;
    if (producer) {
      int32_t src_row = -1;
#pragma unroll
      for (int i = 0; i < NG; ++i)
        if (kb + i == k) src_row = lmap[i];
      const uint32_t ball = __ballot_sync(0xffffffffu, src_row >= 0);
      if (lane == 0) reinterpret_cast<uint32_t*>(&pres[lslot])[warp] = ball;
      __syncwarp();
      if (src_row >= 0) {
        expect_tx(&bar[lslot], uint32_t(kC * 2));
        tma_load_1d(sA + lslot * Cfg::kStage + r * kRowB, a.x + int64_t(src_row) * kC, uint32_t(kC * 2), &bar[lslot]);
      } else {
        mbar_arrive(&bar[lslot]);
      }
    }
    lslot = lslot + 1 == S ? 0 : lslot + 1;
    skip_empty();
  };
  for (int s = 0; s < S; ++s) issue();

  float acc[16][4];
#pragma unroll
  for (int j = 0; j < 16; ++j)
#pragma unroll
    for (int q = 0; q < 4; ++q) acc[j][q] = 0.f;
  uint32_t cslot = 0, cphase = 0;
  const int lr = 16 * warp + (lane & 15);
  const uint32_t lane_col = uint32_t(lane >> 4) * 16u;
  const uint32_t a_base = smem_addr(sA) + uint32_t(lr * kRowB) + lane_col;
  const uint32_t z_addr = smem_addr(zero) + lane_col;
  for (int64_t ct = int64_t(p) * W + wg; ct < ntiles; ct += tstep) {
    uint32_t cbits = sMask[(ct - (int64_t(p) * W + wg)) / tstep];
    while (cbits) {
      const int k = __ffs(cbits) - 1;
      cbits &= cbits - 1u;
      mbar_wait(&bar[cslot], cphase);
      const uint64_t pm = pres[cslot];
      const uint32_t addr = ((pm >> lr) & 1u) ? a_base + cslot * Cfg::kStage : z_addr;
      uint32_t af[8][4];
#pragma unroll
      for (int kk = 0; kk < 8; ++kk) ptx::ldmatrix_x4_at(af[kk], addr + 32u * kk);
      ptx::named_barrier_sync(1 + wg, 128);  // every warp has read the stage: refill it
      issue();
      wg_fence();
#pragma unroll
      for (int kk = 0; kk < 8; ++kk) {
        const uint64_t db = wg_desc(smem + size_t((k - kb) * 2 + (kk >> 2)) * kSlice) + 2 * (kk & 3);
        wgmma_m64n128k16_ra(acc, af[kk], db);
      }
      wg_commit();
      wg_wait<0>();
      wg_fence_acc(acc);
      if (++cslot == S) {
        cslot = 0;
        cphase ^= 1u;
      }
    }
    const int64_t m0 = ct * 64;
    float* out = a.partial + (int64_t(g) * a.cap + m0) * kC;
#pragma unroll
    for (int j = 0; j < 16; ++j)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int rl = warp * 16 + (lane >> 2) + 8 * hh;
        const int col = 8 * j + 2 * (lane & 3);
        if (m0 + rl < n)
          *reinterpret_cast<float2*>(out + int64_t(rl) * kC + col) = make_float2(acc[j][2 * hh], acc[j][2 * hh + 1]);
        acc[j][2 * hh] = 0.f;
        acc[j][2 * hh + 1] = 0.f;
      }
  }
}

__global__ void stationary_reduce(const float* __restrict__ partial, int G, int64_t cap, const int* n_out,
                                  const float* __restrict__ bias, const __half* __restrict__ res, __half* y, bool relu,
                                  bool relu_after) {
  const int n = int(min(int64_t(*n_out), cap));
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < int64_t(n) * (kC / 8);
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / (kC / 8);
    const int c8 = int(i % (kC / 8)) * 8;
    float v[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int g = 0; g < G; ++g) {
      const float* pp = partial + (int64_t(g) * cap + row) * kC + c8;
      const float4 lo = *reinterpret_cast<const float4*>(pp);
      const float4 hi = *reinterpret_cast<const float4*>(pp + 4);
      v[0] += lo.x;
      v[1] += lo.y;
      v[2] += lo.z;
      v[3] += lo.w;
      v[4] += hi.x;
      v[5] += hi.y;
      v[6] += hi.z;
      v[7] += hi.w;
    }
    alignas(16) __half rr[8];
    if (res) *reinterpret_cast<uint4*>(rr) = *reinterpret_cast<const uint4*>(res + row * kC + c8);
    alignas(16) __half o[8];
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      float f = v[q] + bias[c8 + q];
      if (relu) f = f > 0.f ? f : 0.f;
      f = __half2float(__float2half_rn(f));
      if (res) f = __half2float(__float2half_rn(f + __half2float(rr[q])));
      if (relu_after) f = f > 0.f ? f : 0.f;
      o[q] = __float2half_rn(f);
    }
    *reinterpret_cast<uint4*>(y + row * kC + c8) = *reinterpret_cast<const uint4*>(o);
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
  int G;
  void (*kernel)(const StatArgs);
  size_t smem;
  int threads;
  int ctas_per_sm;
};

template <int NG, int W, int S, int PROBE = 0>
Variant make_variant(const char* name, int G) {
  return Variant{name, G, &stationary_kernel<NG, W, S, PROBE>, StatCfg<NG, W, S>::kSmem, W * 128, 1};
}
template <int NG, int W, int S>
Variant make_bulk(const char* name, int G) {
  return Variant{name, G, &bulk_kernel<NG, W, S>, BulkCfg<NG, W, S>::kSmem, W * 128, 1};
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

    const std::string idx_path = data + "/in_indices_zyx.torch.int32.tensor";
    const Tensor idx = Tensor::load(idx_path);
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
    const int64_t cap = n;
    Buf map(size_t(cap) * kK * 4);
    launch_subm_map(s3.s, subm, map.as<int32_t>(), MapKernel::Rows, sm, st);
    CK(cudaStreamSynchronize(st));
    const std::vector<int32_t> hmap = map.down<int32_t>(size_t(n) * kK);
    int64_t pairs = 0;
    for (int32_t v : hmap) pairs += v >= 0;
    const int64_t ntiles = (n + 63) / 64;
    std::vector<uint32_t> mask(size_t(ntiles), 0u);
    for (int64_t o = 0; o < n; ++o)
      for (int k = 0; k < kK; ++k)
        if (hmap[size_t(o) * kK + size_t(k)] >= 0) mask[size_t(o / 64)] |= 1u << k;
    int64_t steps = 0;
    for (uint32_t m : mask) steps += __builtin_popcount(m);
    std::printf("level 3: %d sites, %lld pairs (%.1f per row), %lld tiles, %lld tile-offset steps (%.1f per tile)\n", n,
                (long long)pairs, double(pairs) / n, (long long)ntiles, (long long)steps, double(steps) / ntiles);

    // problem data
    const std::vector<uint16_t> hx = random_halves(size_t(n) * kC, 1.f, rng);
    std::vector<uint16_t> w(size_t(kK) * kC * kC);
    const float wscale = 1.f / std::sqrt(float(kK * kC) * 0.3f);
    {
      auto rw = random_halves(w.size(), wscale, rng);
      w = rw;
    }
    std::vector<float> bias(kC);
    for (int c = 0; c < kC; ++c) bias[size_t(c)] = half_to_float(random_halves(1, 0.2f, rng)[0]);
    const std::vector<uint16_t> hres = random_halves(size_t(n) * kC, 1.f, rng);
    Buf d_x(hx.size() * 2), d_w(w.size() * 2), d_bias(kC * 4), d_res(hres.size() * 2), d_mask(mask.size() * 4);
    d_x.up(hx);
    d_w.up(w);
    d_bias.up(bias);
    d_res.up(hres);
    d_mask.up(mask);
    Buf d_count(4);
    CK(cudaMemcpy(d_count.p, &n, 4, cudaMemcpyHostToDevice));

    // host reference on every 7th row: y = half(relu(acc + b)) (relu epilogue) and the SBB form
    std::vector<float> wf(w.size()), xf(hx.size());
    for (size_t i = 0; i < w.size(); ++i) wf[i] = half_to_float(w[i]);
    for (size_t i = 0; i < hx.size(); ++i) xf[i] = half_to_float(hx[i]);
    auto reference = [&](bool sbb, std::vector<int64_t>& rows) {
      std::vector<float> out;
      std::vector<double> acc(kC);
      for (int64_t o = 0; o < n; o += 7) {
        rows.push_back(o);
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int k = 0; k < kK; ++k) {
          const int32_t in = hmap[size_t(o) * kK + size_t(k)];
          if (in < 0) continue;
          const float* xr = xf.data() + size_t(in) * kC;
          for (int c = 0; c < kC; ++c) {
            const float* wr = wf.data() + (size_t(k) * kC + size_t(c)) * kC;
            double s = 0;
            for (int ci = 0; ci < kC; ++ci) s += double(xr[ci]) * wr[ci];
            acc[size_t(c)] += s;
          }
        }
        for (int c = 0; c < kC; ++c) {
          float v = float(acc[size_t(c)]) + bias[size_t(c)];
          if (!sbb) v = v > 0.f ? v : 0.f;
          v = round_to_half(v);
          if (sbb) {
            v = round_to_half(v + half_to_float(hres[size_t(o) * kC + size_t(c)]));
            v = v > 0.f ? v : 0.f;
          }
          out.push_back(v);
        }
      }
      return out;
    };
    std::vector<int64_t> ref_rows;
    const std::vector<float> want = reference(false, ref_rows);
    auto rel_err = [&](const std::vector<uint16_t>& got) {
      double num = 0, den = 0, maxd = 0;
      for (size_t i = 0; i < ref_rows.size(); ++i)
        for (int c = 0; c < kC; ++c) {
          const double gv = half_to_float(got[size_t(ref_rows[i]) * kC + size_t(c)]);
          const double wv = want[i * kC + size_t(c)];
          num += (gv - wv) * (gv - wv);
          den += wv * wv;
          maxd = std::max(maxd, std::fabs(gv - wv) / (std::fabs(wv) + 1e-2));
        }
      return std::make_pair(std::sqrt(num / den), maxd);
    };

    Buf d_y(size_t(n) * kC * 2), d_y2(size_t(n) * kC * 2);
    // ---- the engine's tiles
    std::vector<uint16_t> y_tile;
    for (const char* name : {"m64n128k64s2tx2wg", "m128n128k64s2tw8x2wg", "m64n128k64s3twg", "m128n128k64s3tw8wg"}) {
      const int id = igemm_find_config(name);
      if (id < 0) {
        std::printf("tile %s: not compiled\n", name);
        continue;
      }
      const std::vector<uint16_t> wt = igemm_tile_weights(id, w, kK, kC, kC, kC);
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
      ca.cap_out = cap;
      ca.K = kK;
      ca.cin_p = kC;
      ca.cout = kC;
      ca.cout_p = kC;
      ca.cout_w = kC;
      ca.act = Act::ReLU;
      CK(cudaMemset(d_y.p, 0, d_y.bytes));
      launch_igemm(id, ca, sm, st);
      CK(cudaStreamSynchronize(st));
      const std::vector<uint16_t> yt = d_y.down<uint16_t>(size_t(n) * kC);
      const auto e = rel_err(yt);
      const auto tm = time_kernel([&] { launch_igemm(id, ca, sm, st); }, runs, st);
      std::printf("tile %-24s median %7.2f us  min %7.2f  rel-L2 vs fp64 %.2e  max rel %.2e\n", name, tm.first,
                  tm.second, e.first, e.second);
      if (e.first > 2e-3) ++failures;
      if (y_tile.empty()) y_tile = yt;
    }

    // ---- the weights-stationary prototype
    const int wid = igemm_find_config("m64n128k64s2tx2wg");
    SCN_CHECK(wid >= 0, "no m64n128k64s2tx2wg");
    const std::vector<uint16_t> wt = igemm_tile_weights(wid, w, kK, kC, kC, kC);
    Buf d_wt(wt.size() * 2);
    d_wt.up(wt);
    const Variant variants[] = {
        make_variant<5, 1, 4>("G6 NG5 W1 S4", 6),       make_variant<4, 1, 6>("G7 NG4 W1 S6", 7),
        make_variant<4, 2, 3>("G7 NG4 W2 S3", 7),       make_variant<5, 1, 4, 1>("G6 W1 S4 no-copy", 6),
        make_variant<5, 1, 4, 2>("G6 W1 S4 no-mma", 6), make_variant<4, 2, 3, 1>("G7 W2 S3 no-copy", 7),
        make_variant<4, 2, 3, 2>("G7 W2 S3 no-mma", 7), make_bulk<5, 1, 3>("bulk G6 NG5 W1 S3", 6),
        make_bulk<4, 1, 5>("bulk G7 NG4 W1 S5", 7),     make_bulk<4, 2, 2>("bulk G7 NG4 W2 S2", 7),
        make_bulk<3, 1, 7>("bulk G9 NG3 W1 S7", 9),     make_bulk<3, 2, 3>("bulk G9 NG3 W2 S3", 9),
    };
    for (const Variant& v : variants) {
      CK(cudaFuncSetAttribute(v.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(v.smem)));
      StatArgs sa{};
      sa.x = d_x.as<__half>();
      sa.out_in = map.as<int32_t>();
      sa.wt = d_wt.as<__half>();
      sa.tile_mask = d_mask.as<uint32_t>();
      sa.n_out = d_count.as<int>();
      sa.cap = cap;
      sa.G = v.G;
      sa.P = sm / v.G;
      for (int gi = 0; gi <= v.G; ++gi) sa.kbeg[gi] = (kK * gi + v.G - 1) / v.G;  // ceil split
      Buf d_part(size_t(v.G) * size_t(cap) * kC * 4);
      sa.partial = d_part.as<float>();
      const dim3 grid(unsigned(v.G * sa.P));
      auto launch_partial = [&] { v.kernel<<<grid, v.threads, v.smem, st>>>(sa); };
      auto launch_reduce = [&] {
        stationary_reduce<<<sm * 8, 256, 0, st>>>(d_part.as<float>(), v.G, cap, d_count.as<int>(), d_bias.as<float>(),
                                                  nullptr, d_y2.as<__half>(), true, false);
      };
      CK(cudaMemset(d_y2.p, 0, d_y2.bytes));
      launch_partial();
      launch_reduce();
      CK(cudaGetLastError());
      CK(cudaStreamSynchronize(st));
      const std::vector<uint16_t> ys = d_y2.down<uint16_t>(size_t(n) * kC);
      const auto e = rel_err(ys);
      int64_t diff = 0;
      for (size_t i = 0; i < ys.size(); ++i) diff += ys[i] != y_tile[i];
      const auto tp = time_kernel(launch_partial, runs, st);
      const auto tr = time_kernel(launch_reduce, runs, st);
      const auto tb = time_kernel(
          [&] {
            launch_partial();
            launch_reduce();
          },
          runs, st);
      std::printf(
          "stationary %-14s partial %7.2f us  reduce %6.2f  both %7.2f (min %7.2f)  rel-L2 vs fp64 %.2e  max rel "
          "%.2e  differs from the tile in %lld of %lld\n",
          v.name, tp.first, tr.first, tb.first, tb.second, e.first, e.second, (long long)diff, (long long)ys.size());
      if (e.first > 2e-3) ++failures;
    }
    CK(cudaStreamDestroy(st));
  } catch (const std::exception& ex) {
    std::printf("FAIL: %s\n", ex.what());
    return 1;
  }
  std::printf("%s: %d failed\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
