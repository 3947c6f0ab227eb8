// Union-staged implicit GEMM ("ustage"; docs/cuda_backend.md, "The union-staged tile"). The tiles of
// implicit_gemm.cuh and the osplit warps gather one input row per (output row, kernel offset) pair,
// offset after offset, each gather a dependent round trip. In bitmap order the rows of a tile share
// most of their neighbours (3.5-5x fewer distinct input rows than pairs on the real frame, levels
// 1-3), so here:
//
//   per map:  stage_plan_kernel deduplicates each tile's 27 x BM entries once (a shared-memory hash
//             table), writes the tile's distinct input rows and each entry's slot among them; every
//             conv on the map reuses it
//   block:    all 27 x COUT x CIN weights -> shared memory once (persistent grid)
//   team:     one tile at a time: its slots and its distinct rows -> shared memory (every copy in
//             flight at once: one round trip for the whole tile), a named barrier, then
//   warp:     BM / WARPS rows; per offset ascending: slot of each row -> ldmatrix from the staged row
//             (absent neighbours read a zero row) -> mma.sync; 16-row blocks without a neighbour
//             issue no MMA; no barrier and no global load inside the offset loop
//   overflow: a tile with more distinct rows than the team's room (count -1 in the plan) stages its
//             entries without deduplication, G = UCAP / BM offsets per pass
//
// Summation order per output element: offsets ascending, channels ascending, one m16n8k16 MMA per 16
// channels: that of implicit_gemm.cuh's tiles (and osplit with one group), so the result is theirs,
// bit for bit, whatever the config or the mode of a tile.
#pragma once

#include <cub/block/block_scan.cuh>
#include <cstdint>
#include <vector>

#include "backends/cuda/common.cuh"
#include "backends/cuda/igemm_offset_split.cuh"
#include "backends/cuda/igemm_union_staged.h"
#include "backends/cuda/ptx.cuh"

namespace scn::cuda {
namespace ustage {

constexpr int kK = 27;

// ---- wgmma with A in registers (sm_90a objects only: the WG kernels) ------------------------------
// B (the weights of one offset, [COUT][CIN] K-major) is read by the tensor cores from shared memory
// without swizzle: 8 x 8-half core matrices of 128 contiguous bytes, the COUT / 8 of one 8-channel
// group side by side (SBO 128 bytes), channel groups COUT / 8 * 128 bytes apart (LBO).
__device__ __forceinline__ uint64_t wg_desc_plain(const void* p, uint32_t lbo, uint32_t sbo) {
  return ((uint64_t(ptx::smem_addr(p)) & 0x3FFFFu) >> 4) | (uint64_t(lbo >> 4) << 16) | (uint64_t(sbo >> 4) << 32);
}
__device__ __forceinline__ void wg_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wg_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void wg_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
#define SCN_US_ACC4(j) "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
/// D(64 x 16|32, f32) += A(64 x 16, f16, registers: the mma.m16n8k16 fragment of each warp's 16 rows)
/// * B(16|32 x 16, f16, K-major, shared memory)^T, one warpgroup.
__device__ __forceinline__ void wgmma_rA(float (&d)[2][4], const uint32_t (&a)[4], uint64_t db) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, "
      "p, 1, 1, 0;\n}\n"
      : SCN_US_ACC4(0), SCN_US_ACC4(1)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
#else
  __trap();
#endif
}
__device__ __forceinline__ void wgmma_rA(float (&d)[4][4], const uint32_t (&a)[4], uint64_t db) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "
      "%13, %14, %15}, {%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"
      : SCN_US_ACC4(0), SCN_US_ACC4(1), SCN_US_ACC4(2), SCN_US_ACC4(3)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
#else
  __trap();
#endif
}
#undef SCN_US_ACC4

/// Hash table slots of the plan kernel for BM-row tiles (power of two, load <= 0.43).
constexpr int plan_table_size(int bm) { return bm * 64; }

/// One block per tile (persistent), THREADS = 4 * BM, 7 entries each (thread t: positions
/// [7t, 7t + 7), so thread order is position order): the tile's entries go into a shared-memory hash
/// table (open addressing) that keeps each row's first position; an entry at its row's first
/// position is a head; an exclusive scan of the heads in position order gives each distinct row its
/// slot. The rows are listed in order of first use (row-major over [row][offset]), deterministic.
template <int BM>
__global__ void __launch_bounds__(4 * BM) stage_plan_kernel(const int32_t* __restrict__ out_in, const int* n_out,
                                                            const StagePlan p) {
  constexpr int THREADS = 4 * BM, ENTRIES = BM * kK, ITEMS = (ENTRIES + THREADS - 1) / THREADS;
  constexpr int HS = plan_table_size(BM);
  static_assert((HS & (HS - 1)) == 0, "table size is a power of two");
  using Scan = cub::BlockScan<int, THREADS>;
  __shared__ typename Scan::TempStorage scan;
  extern __shared__ int32_t table[];  // dynamic: 2 * HS ints
  int32_t* hkey = table;
  int32_t* hval = table + HS;  // first position of the row, then its slot
  const int tid = threadIdx.x;
  const int64_t n = rows_of(n_out, p.cap_out);
  const int64_t ntiles = (n + BM - 1) / BM;
  for (int64_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
    for (int i = tid; i < HS; i += THREADS) {
      hkey[i] = -1;
      hval[i] = INT32_MAX;
    }
    const int64_t base = tile * ENTRIES, limit = n * kK;
    int32_t v[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int e = tid * ITEMS + i;
      v[i] = (e < ENTRIES && base + e < limit) ? __ldg(out_in + base + e) : -1;
    }
    __syncthreads();  // table cleared
    int h[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      h[i] = -1;
      if (v[i] < 0) continue;
      int at = int((uint32_t(v[i]) * 2654435761u) >> 7) & (HS - 1);
      while (true) {
        const int old = atomicCAS(&hkey[at], -1, v[i]);
        if (old == -1 || old == v[i]) break;
        at = (at + 1) & (HS - 1);
      }
      atomicMin(&hval[at], tid * ITEMS + i);
      h[i] = at;
    }
    __syncthreads();  // every row's first position is known
    int heads = 0;
    bool head[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      head[i] = h[i] >= 0 && hval[h[i]] == tid * ITEMS + i;
      heads += head[i];
    }
    int first = 0, total = 0;
    Scan(scan).ExclusiveSum(heads, first, total);
    const bool fits = total <= p.ucap;
    __syncthreads();  // every head is found before the table's values become slots
    if (fits) {
#pragma unroll
      for (int i = 0; i < ITEMS; ++i)
        if (head[i]) {
          hval[h[i]] = first;
          p.rows[tile * p.ucap + first] = v[i];
          ++first;
        }
    }
    __syncthreads();  // slots in the table
    if (fits) {
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        const int e = tid * ITEMS + i;
        if (e < ENTRIES) p.slots[base + e] = h[i] >= 0 ? uint16_t(hval[h[i]]) : kStageZeroSlot;
      }
    }
    if (tid == 0) p.count[tile] = fits ? total : -1;
    __syncthreads();  // the table is cleared for the next tile only after every read
  }
}

template <int CIN, int COUT, int BM, int UCAP, int WARPS, int TEAMS>
struct Cfg {
  static_assert(CIN == 16 || CIN == 32 || CIN == 64, "16, 32 or 64 input channels");
  static_assert(COUT == 16 || COUT == 32 || COUT == 64, "16, 32 or 64 output channels");
  static_assert(BM % (16 * WARPS) == 0, "whole 16-row blocks per warp");
  static_assert(UCAP % (32 * WARPS) == 0 && UCAP >= BM, "staged rows: whole lanes per warp, at least one offset");
  static_assert(TEAMS >= 1 && TEAMS <= 15, "named barriers 1..15");
  static constexpr int kTeamThreads = WARPS * 32;
  static constexpr int kThreads = TEAMS * kTeamThreads;
  static constexpr int WR = BM / WARPS;  // rows per warp
  static constexpr int MT = WR / 16, NT = COUT / 8;
  static constexpr int CPR = CIN / 8;  // 16-byte chunks per row
  static constexpr int RJ = UCAP / WARPS / 32;  // distinct rows per lane when staging
  static constexpr int G = UCAP / BM;  // offsets per pass of an overflowing tile
  static constexpr int LDC = COUT + 8;  // epilogue staging row (halves)
  static constexpr size_t kWeightHalves = size_t(kK) * COUT * CIN;
  static constexpr size_t kXHalves = size_t(UCAP + 1) * CIN;  // + the zero row at slot UCAP
  static constexpr size_t kSlotHalves = (size_t(BM) * kK + 7) / 8 * 8;
  static constexpr size_t kStageHalves = size_t(BM) * LDC;
  static constexpr size_t kTeamHalves = kXHalves + kSlotHalves + kStageHalves;
  static constexpr size_t kSmem = (kWeightHalves + TEAMS * kTeamHalves) * 2;
};

template <int CIN, int COUT, int BM, int UCAP, int WARPS, int TEAMS, bool WG>
__global__ void __launch_bounds__(TEAMS* WARPS * 32, 1) ustage_kernel(const ConvArgs a, const StagePlan p) {
  using C = Cfg<CIN, COUT, BM, UCAP, WARPS, TEAMS>;
  static_assert(!WG || (WARPS == 4 && BM == 64 && COUT <= 32), "wgmma: one warpgroup per 64-row tile, N 16 or 32");
  constexpr uint32_t kLbo = COUT / 8 * 128;  // WG weights: bytes between 8-channel groups
  using osplit::swz;
  using osplit::team_sync;
  extern __shared__ __align__(128) uint8_t smem[];
  __half* sW = reinterpret_cast<__half*>(smem);
  const uint64_t tstart = uint64_t(clock64());
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int team = warp / WARPS, tw = warp % WARPS, ttid = tid % C::kTeamThreads;
  __half* sX = sW + C::kWeightHalves + size_t(team) * C::kTeamHalves;
  uint16_t* sSlot = reinterpret_cast<uint16_t*>(sX + C::kXHalves);
  __half* sC = sX + C::kXHalves + C::kSlotHalves + size_t(tw) * C::WR * C::LDC;  // this warp's epilogue rows

  // Weights [k][co][ci] (a.w is [K][cout_w][cin_p]), swizzled rows as osplit's; waited for below.
  {
    const __half* w = static_cast<const __half*>(a.w);
    for (int i = tid; i < kK * COUT * C::CPR; i += C::kThreads) {
      const int c = i % C::CPR, co = (i / C::CPR) % COUT, k = i / (C::CPR * COUT);
      __half* dst = WG ? sW + ((k * C::CPR + c) * (COUT / 8) + co / 8) * 64 + (co % 8) * 8
                       : sW + (k * COUT + co) * CIN + swz<CIN>(co, c);
      ptx::cp_async16(dst, w + (int64_t(k) * a.cout_w + co) * CIN + c * 8);
    }
    ptx::cp_async_commit();
  }
  if (ttid < C::CPR) *reinterpret_cast<uint4*>(sX + size_t(UCAP) * CIN + ttid * 8) = make_uint4(0u, 0u, 0u, 0u);

  const int64_t n = rows_of(a.n_out, a.cap_out);
  const int64_t ntiles = (n + BM - 1) / BM;
  const __half* __restrict__ x = static_cast<const __half*>(a.x);
  ptx::cp_async_wait_mem<0>();
  if constexpr (WG) asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // wgmma reads B via the async proxy
  __syncthreads();  // weights and zero rows in place
  // Launched programmatically the grid may get here while the previous conv runs: the plan, the map,
  // the row count and the weights are not its outputs, the activations are.
  ptx::grid_dependency_wait();
  // EXPERIMENT trace: per team [start, weights in, then per tile: begin, staged, computed, stored]
  auto gt = [] { return uint64_t(clock64()); };
  uint64_t* tr = p.trace ? p.trace + (int64_t(blockIdx.x) * TEAMS + team) * 34 : nullptr;
  const bool trl = tr && ttid == 0;
  if (trl) { tr[0] = tstart; tr[1] = gt(); }
  int ntr = 0;

  const int64_t stride = int64_t(gridDim.x) * TEAMS;
  for (int64_t tile = int64_t(blockIdx.x) * TEAMS + team; tile < ntiles; tile += stride) {
    if (tile - team + stride >= ntiles) ptx::grid_launch_dependents();  // the block's last round
    const int64_t m0 = tile * BM;
    // the tile's row count and its distinct rows (read before the count is known: one round trip)
    const int U = __ldg(p.count + tile);
    int rv[C::RJ];
#pragma unroll
    for (int j = 0; j < C::RJ; ++j) rv[j] = __ldg(p.rows + tile * UCAP + tw * (UCAP / WARPS) + j * 32 + lane);
    team_sync(1 + team, C::kTeamThreads);  // the team is done with the previous tile's staged rows
    if (trl && ntr < 8) tr[2 + 4 * ntr] = gt();

    float acc[C::MT][C::NT][4];
#pragma unroll
    for (int i = 0; i < C::MT; ++i)
#pragma unroll
      for (int jn = 0; jn < C::NT; ++jn)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[i][jn][q] = 0.f;

    // offset k from the staged rows: per 16-row block with a neighbour, CIN / 16 MMA steps over the
    // COUT columns; s[i]: the slot of this lane's row of block i
    auto step = [&](int k, const int (&s)[C::MT]) {
      bool has[C::MT];
      bool any = false;
#pragma unroll
      for (int i = 0; i < C::MT; ++i) {
        has[i] = __any_sync(0xffffffffu, s[i] != UCAP);
        any |= has[i];
      }
      if (!any) return;
      const __half* tB = sW + k * COUT * CIN;
#pragma unroll
      for (int kk = 0; kk < CIN / 16; ++kk) {
        uint32_t bf[C::NT][2];
#pragma unroll
        for (int jn = 0; jn < C::NT / 2; ++jn) {
          const int row = jn * 16 + (lane & 7) + (lane >> 4) * 8;
          uint32_t r4[4];
          ptx::ldmatrix_x4(r4, tB + row * CIN + swz<CIN>(row, kk * 2 + ((lane >> 3) & 1)));
          bf[2 * jn][0] = r4[0];
          bf[2 * jn][1] = r4[1];
          bf[2 * jn + 1][0] = r4[2];
          bf[2 * jn + 1][1] = r4[3];
        }
#pragma unroll
        for (int i = 0; i < C::MT; ++i) {
          if (!has[i]) continue;
          uint32_t af[4];
          ptx::ldmatrix_x4(af, sX + s[i] * CIN + swz<CIN>(s[i], kk * 2 + (lane >> 4)));
#pragma unroll
          for (int jn = 0; jn < C::NT; ++jn) ptx::mma_16816(acc[i][jn], af, bf[jn][0], bf[jn][1]);
        }
      }
    };
    // slot of this lane's row of block i at offset k (absent: the zero row)
    auto slot_of = [&](int i, int k) {
      const int sl = sSlot[(tw * C::WR + i * 16 + (lane & 15)) * kK + k];
      return sl == kStageZeroSlot ? UCAP : sl;
    };

    if (U >= 0) {
      // the tile's slots and distinct rows: every copy in flight at once
      const uint16_t* gs = p.slots + tile * BM * kK;
      for (int c = ttid; c < BM * kK / 8; c += C::kTeamThreads) ptx::cp_async16(sSlot + c * 8, gs + c * 8);
#pragma unroll
      for (int j = 0; j < C::RJ; ++j) {
        const int u0 = tw * (UCAP / WARPS) + j * 32;
        if (u0 >= U) break;
#pragma unroll
        for (int q = 0; q < C::CPR; ++q) {
          const int rl = q * (32 / C::CPR) + lane / C::CPR, c = lane % C::CPR;  // CPR lanes per row
          const int src = __shfl_sync(0xffffffffu, rv[j], rl);
          const int u = u0 + rl;
          if (u < U) ptx::cp_async16(sX + u * CIN + swz<CIN>(u, c), x + int64_t(src) * CIN + c * 8);
        }
      }
      ptx::cp_async_commit();
      ptx::cp_async_wait_mem<0>();
      team_sync(1 + team, C::kTeamThreads);
      if (trl && ntr < 8) tr[3 + 4 * ntr] = gt();
      if constexpr (WG) {
        // one warpgroup: the A fragments of offset k + 1 load (ldmatrix by slot) while offset k's wgmma runs
        uint32_t af[2][CIN / 16][4];
        auto load_a = [&](int k, uint32_t(&dst)[CIN / 16][4]) {
          const int sl = slot_of(0, k);
#pragma unroll
          for (int kk = 0; kk < CIN / 16; ++kk)
            ptx::ldmatrix_x4(dst[kk], sX + sl * CIN + swz<CIN>(sl, kk * 2 + (lane >> 4)));
        };
        load_a(0, af[0]);
#pragma unroll
        for (int k = 0; k < kK; ++k) {
          wg_fence();
#pragma unroll
          for (int kk = 0; kk < CIN / 16; ++kk)
            wgmma_rA(acc[0], af[k & 1][kk], wg_desc_plain(sW + (k * C::CPR + 2 * kk) * (COUT / 8) * 64, kLbo, 128));
          wg_commit();
          if (k + 1 < kK) {
            wg_wait<1>();  // offset k - 1's wgmma is done with the registers about to be loaded
            load_a(k + 1, af[(k + 1) & 1]);
          }
        }
        wg_wait<0>();
      } else {
        // software pipeline over the offsets: the fragments of offset k + 1 (A by slot, B) load while
        // offset k's MMAs run; every offset runs (absent rows read the zero row), no branch between
        struct Frag {
          uint32_t a[C::MT][CIN / 16][4];
          uint32_t b[CIN / 16][C::NT][2];
        };
        auto load_frag = [&](int k, Frag& f) {
#pragma unroll
          for (int i = 0; i < C::MT; ++i) {
            const int sl = slot_of(i, k);
#pragma unroll
            for (int kk = 0; kk < CIN / 16; ++kk)
              ptx::ldmatrix_x4(f.a[i][kk], sX + sl * CIN + swz<CIN>(sl, kk * 2 + (lane >> 4)));
          }
          const __half* tB = sW + k * COUT * CIN;
#pragma unroll
          for (int kk = 0; kk < CIN / 16; ++kk)
#pragma unroll
            for (int jn = 0; jn < C::NT / 2; ++jn) {
              const int row = jn * 16 + (lane & 7) + (lane >> 4) * 8;
              uint32_t r4[4];
              ptx::ldmatrix_x4(r4, tB + row * CIN + swz<CIN>(row, kk * 2 + ((lane >> 3) & 1)));
              f.b[kk][2 * jn][0] = r4[0];
              f.b[kk][2 * jn][1] = r4[1];
              f.b[kk][2 * jn + 1][0] = r4[2];
              f.b[kk][2 * jn + 1][1] = r4[3];
            }
        };
        Frag f[2];
        load_frag(0, f[0]);
#pragma unroll
        for (int k = 0; k < kK; ++k) {
          if (k + 1 < kK) load_frag(k + 1, f[(k + 1) & 1]);
          const Frag& c = f[k & 1];
#pragma unroll
          for (int kk = 0; kk < CIN / 16; ++kk)
#pragma unroll
            for (int i = 0; i < C::MT; ++i)
#pragma unroll
              for (int jn = 0; jn < C::NT; ++jn) ptx::mma_16816(acc[i][jn], c.a[i][kk], c.b[kk][jn][0], c.b[kk][jn][1]);
        }
      }

    } else {
      // more distinct rows than room: G offsets per pass, one staged row per entry
      for (int k0 = 0; k0 < kK; k0 += C::G) {
        const int kn = kK - k0 < C::G ? kK - k0 : C::G;
        if (k0 > 0) team_sync(1 + team, C::kTeamThreads);  // the previous pass's rows are read
        for (int it = ttid; it < BM * kn * C::CPR; it += C::kTeamThreads) {
          const int c = it % C::CPR, e = it / C::CPR, r = e % BM, j = e / BM;
          const int64_t row = m0 + r;
          const int32_t v = row < n ? __ldg(a.out_in + row * kK + k0 + j) : -1;
          const int slot = j * BM + r;
          if (c == 0) sSlot[r * kK + k0 + j] = v >= 0 ? uint16_t(slot) : kStageZeroSlot;
          if (v >= 0) ptx::cp_async16(sX + slot * CIN + swz<CIN>(slot, c), x + int64_t(v) * CIN + c * 8);
        }
        ptx::cp_async_commit();
        ptx::cp_async_wait_mem<0>();
        team_sync(1 + team, C::kTeamThreads);
        for (int k = k0; k < k0 + kn; ++k) {
          if constexpr (WG) {
            const int sl = slot_of(0, k);
            uint32_t af[CIN / 16][4];
#pragma unroll
            for (int kk = 0; kk < CIN / 16; ++kk)
              ptx::ldmatrix_x4(af[kk], sX + sl * CIN + swz<CIN>(sl, kk * 2 + (lane >> 4)));
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < CIN / 16; ++kk)
              wgmma_rA(acc[0], af[kk], wg_desc_plain(sW + (k * C::CPR + 2 * kk) * (COUT / 8) * 64, kLbo, 128));
            wg_commit();
            wg_wait<0>();
          } else {
            int s1[C::MT];
#pragma unroll
            for (int i = 0; i < C::MT; ++i) s1[i] = slot_of(i, k);
            step(k, s1);
          }
        }

      }
    }

    // epilogue: fragments -> half(act(acc + bias)) in the warp's staging rows -> 16-byte rows out
    if (trl && ntr < 8) tr[4 + 4 * ntr] = gt();
    const __half* __restrict__ res = static_cast<const __half*>(a.residual);
    __half* y = static_cast<__half*>(a.y);
#pragma unroll
    for (int i = 0; i < C::MT; ++i)
#pragma unroll
      for (int jn = 0; jn < C::NT; ++jn) {
        const int col = jn * 8 + (lane & 3) * 2;
        const float b0 = col < a.cout_w ? a.bias[col] : 0.f;
        const float b1 = col + 1 < a.cout_w ? a.bias[col + 1] : 0.f;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int rl = i * 16 + (lane >> 2) + h * 8;
          const float v0 = col < a.cout ? apply_act(acc[i][jn][2 * h] + b0, a.act, a.alpha) : 0.f;
          const float v1 = col + 1 < a.cout ? apply_act(acc[i][jn][2 * h + 1] + b1, a.act, a.alpha) : 0.f;
          *reinterpret_cast<__half2*>(sC + rl * C::LDC + col) = __floats2half2_rn(v0, v1);
        }
      }
    __syncwarp();
    for (int it = lane; it < C::WR * (COUT / 8); it += 32) {
      const int rl = it / (COUT / 8), c8 = (it % (COUT / 8)) * 8;
      const int64_t row = m0 + tw * C::WR + rl;
      if (row >= n) continue;
      alignas(16) __half v[8];
      *reinterpret_cast<uint4*>(v) = *reinterpret_cast<const uint4*>(sC + rl * C::LDC + c8);
      store8_residual_relu(y, res, row * a.cout_p + c8, a.relu_after, v);
    }
    __syncwarp();  // the staging rows are read before the next tile writes them
    if (trl && ntr < 8) tr[5 + 4 * ntr] = gt();
    ++ntr;
  }
}

/// A registered instance (igemm_union_staged.cu; the wgmma ones come from igemm_union_staged_wgmma.cu,
/// an sm_90a object).
struct UstageInstance {
  UstageConfig cfg;
  void (*kernel)(const ConvArgs, const StagePlan);
  size_t smem;
  int blocks_per_sm;
  bool pdl = false;
};

template <int CIN, int COUT, int BM, int UCAP, int W, int T, bool WG>
UstageInstance make(const char* name) {
  return UstageInstance{{CIN, COUT, BM, UCAP, W, T, name, WG}, &ustage_kernel<CIN, COUT, BM, UCAP, W, T, WG>,
                        Cfg<CIN, COUT, BM, UCAP, W, T>::kSmem, 0};
}

void add_instances_wgmma(std::vector<UstageInstance>& v);

}  // namespace ustage
}  // namespace scn::cuda
