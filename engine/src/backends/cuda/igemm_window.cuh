// Kernel-row windows: the osplit kernel's structure (one warp per slab of 32 output rows, the weights
// staged once per block, a per-warp cp.async pipeline, no block barrier in the loop) with the gathers
// replaced by contiguous copies, for 3x3x3 fp16 convs whose input rows are in bitmap order (every level
// after the first: a strided conv emits its sites sorted by linear key).
//
// Why: osplit spends its time in the SM's copy path, at a cost per gathered (row, offset) pair whatever
// the row's width (docs/cuda_backend.md, "After session 16/17"). The three offsets of a kernel row
// (dz, dy) reach the input sites (z + dz, y + dy, x - 1 .. x + 1) of an output site: consecutive keys.
// For a slab of consecutive output rows the neighbours of one kernel row therefore lie in one short,
// contiguous range of input rows [lo, hi] (on the real frame's level 1: 25 rows on average for 32
// output rows and three offsets, where the gathers copy 1.55 rows per output row and kernel row as
// separate requests). One step of the pipeline copies that whole range (coalesced: four 64-byte rows per
// warp instruction) and the three offsets' A fragments are read from it at per-lane ldmatrix addresses
// (row e - lo for a neighbour e; the zero chunk for none). A range wider than WIN rows falls back to the
// gathers of the three offsets into three 32-row parts of the stage.
//
// Summation order: offset k adds into accumulator set k % P, offsets ascending, channels ascending; the
// sets are added in the order 0, 1, .., P - 1 before the bias. That is the order of osplit with P offset
// groups (and P == 1 the order of the implicit-GEMM tiles), so a window config gives the bits of its
// class; it is one more candidate the tuner times.
#pragma once

#include <climits>

#include "backends/cuda/igemm_offset_split.cuh"

namespace scn::cuda {
namespace osplit {

template <int CIN, int COUT, int P, int STAGES, int WARPS, int WIN>
struct WinCfg {
  static_assert(CIN == 16 || CIN == 32, "16 or 32 input channels");
  static_assert(COUT == 16 || COUT == 32 || COUT == 64, "16, 32 or 64 output channels");
  static_assert(P == 1 || P == 2, "one or two accumulator sets");
  static_assert(STAGES >= 2, "at least two stages");
  static_assert(WIN >= 48 && WIN % 16 == 0, "a stage holds the three offsets' gathers of the fallback");
  static constexpr int WR = 32, KK = 27, KR = 9;  // rows per slab, offsets, kernel rows of three offsets
  static constexpr int KS = 2 * KR;               // steps: (kernel row, 16-row block)
  static constexpr int kThreads = WARPS * 32;
  static constexpr int MT = WR / 16, NT = COUT / 8, CPR = CIN / 8;
  static constexpr int RPI = 32 / CPR;     // rows per copy instruction (whole rows)
  static constexpr int STAGE = WIN * CIN;  // halves of one stage
  static constexpr int LDC = COUT + 8;     // epilogue staging row (halves)
  static constexpr int EPI_HALVES = WR * LDC;
  static constexpr int MAP_HALVES = WR * KK * 2;
  static constexpr int MAX_HALVES = EPI_HALVES > MAP_HALVES ? EPI_HALVES : MAP_HALVES;
  static constexpr int STAGES_HALVES = STAGES * STAGE;
  static constexpr int WARP_HALVES = STAGES_HALVES > MAX_HALVES ? STAGES_HALVES : MAX_HALVES;
  static constexpr size_t kWeightHalves = size_t(KK) * COUT * CIN;
  static constexpr size_t kZeroOff = (kWeightHalves + size_t(WARPS) * WARP_HALVES) * 2;
  // per warp and step: the window's first row and its row count (warp-uniform; in shared memory rather than
  // in 2 x KS registers per lane)
  static constexpr size_t kWinOff = kZeroOff + 16;
  static constexpr size_t kSmem = kWinOff + size_t(WARPS) * KS * 8;
};

template <int CIN, int COUT, int P, int STAGES, int WARPS, int WIN>
__global__ void __launch_bounds__(WARPS * 32, 1) window_kernel(const ConvArgs a) {
  using C = WinCfg<CIN, COUT, P, STAGES, WARPS, WIN>;
  constexpr int WR = C::WR, KK = C::KK;
  extern __shared__ __align__(128) uint8_t smem[];
  __half* sW = reinterpret_cast<__half*>(smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  __half* sS = sW + C::kWeightHalves + size_t(warp) * C::WARP_HALVES;
  if (tid == 0) *reinterpret_cast<uint4*>(smem + C::kZeroOff) = make_uint4(0u, 0u, 0u, 0u);

  const int64_t n = rows_of(a.n_out, a.cap_out);
  const int64_t nslabs = (n + WR - 1) / WR;
  if (int64_t(blockIdx.x) * WARPS < nslabs) {
    stage_weights<CIN, COUT, KK>(sW, a, tid, C::kThreads);
    ptx::cp_async_commit();
  }
  const __half* __restrict__ x = static_cast<const __half*>(a.x);
  const int64_t slab0 = int64_t(blockIdx.x) * WARPS + warp;
  if (slab0 < nslabs && !a.map_late) stage_slab_map<WR, KK>(sS, a.out_in, slab0, n, lane);
  ptx::cp_async_commit();
  ptx::cp_async_wait_mem<0>();
  __syncthreads();
  ptx::grid_dependency_wait();  // as osplit: the activations belong to the previous kernel

  // lane constants (as osplit): copy chunk cl of rows rsub, rsub + RPI, ..; ldmatrix row lane & 15, chunk
  // kk * 2 + lane / 16
  const int cl = lane % C::CPR, rsub = lane / C::CPR;
  const uint64_t x_chunk = reinterpret_cast<uint64_t>(x + cl * 8);
  const uint32_t dst0 = ptx::pinned(smem_addr(sS + rsub * CIN + swz<CIN>(rsub, cl)));
  const uint32_t stage0 = ptx::pinned(smem_addr(sS));
  const uint32_t zero_chunk = ptx::pinned(smem_addr(smem + C::kZeroOff));
  constexpr int KB = CIN / 16;
  uint32_t b_lane[KB];
#pragma unroll
  for (int kk = 0; kk < KB; ++kk) {
    const int rb = (lane & 7) + (lane >> 4) * 8;
    b_lane[kk] = ptx::pinned(smem_addr(sW + rb * CIN + swz<CIN>(rb, kk * 2 + ((lane >> 3) & 1))));
  }

  const int64_t stride = int64_t(gridDim.x) * WARPS;
  for (int64_t slab = slab0; slab < nslabs; slab += stride) {
    const int64_t r0 = slab * WR;
    if (slab != slab0 || a.map_late) {
      stage_slab_map<WR, KK>(sS, a.out_in, slab, n, lane);
      ptx::cp_async_commit();
      ptx::cp_async_wait_mem<0>();
      __syncwarp();
    }
    int mp[KK];  // this lane's row's input row per offset (-1: none)
    {
      const int32_t* sm = reinterpret_cast<const int32_t*>(sS);
      const bool live = r0 + lane < n;
#pragma unroll
      for (int k = 0; k < KK; ++k) mp[k] = live ? sm[lane * KK + k] : -1;
    }
    __syncwarp();  // the staged map is read before the copies overwrite the region
    if (slab - warp + stride >= nslabs) ptx::grid_launch_dependents();  // the block's last round (as osplit)

    // per step u = (kernel row t = u / 2, 16-row block b = u % 2): the range [lo, lo + cnt) of input rows
    // the three offsets of t reach from the block's rows (cnt 0: none; -1: wider than WIN, gathered instead)
    int* const lo = reinterpret_cast<int*>(smem + C::kWinOff) + warp * 2 * C::KS;
    int* const cnt = lo + C::KS;
#pragma unroll
    for (int t = 0; t < C::KR; ++t) {
      int mn = INT_MAX, mx = -1;
#pragma unroll
      for (int d = 0; d < 3; ++d) {
        const int e = mp[3 * t + d];
        if (e >= 0) {
          mn = min(mn, e);
          mx = max(mx, e);
        }
      }
#pragma unroll
      for (int b = 0; b < 2; ++b) {
        const bool mine = (lane >> 4) == b;
        const int bmn = __reduce_min_sync(0xffffffffu, mine ? mn : INT_MAX);
        const int bmx = __reduce_max_sync(0xffffffffu, mine ? mx : -1);
        if (lane == 0) {
          lo[2 * t + b] = bmn;
          cnt[2 * t + b] = bmx < 0 ? 0 : (bmx - bmn < WIN ? bmx - bmn + 1 : -1);
        }
      }
    }

    __syncwarp();  // the windows are known to every lane
    auto issue = [&](int u, int s) {
      const int t = u / 2, b = u % 2;
      const uint32_t dst = dst0 + 2 * (s * C::STAGE);
      const int rows = cnt[u];
      if (rows > 0) {
        // rows lo .. lo + cnt - 1, whole rows per instruction (a row's swizzle repeats every 8 rows)
        const uint64_t src = ptx::mad_wide_u32(uint32_t(lo[u] + rsub), CIN * 2, x_chunk);
#pragma unroll
        for (int it = 0; it < WIN / C::RPI; ++it) {
          if (it * C::RPI >= rows) break;
          ptx::cp_async16_if_row(dst + 2 * (it * C::RPI * CIN),
                                 reinterpret_cast<const void*>(src + uint64_t(it * C::RPI * CIN * 2)),
                                 rows - 1 - it * C::RPI - rsub);
        }
      } else if (rows < 0) {
        // the gathers of osplit: offset d's neighbours of the block's rows to rows 16 d .. 16 d + 15
#pragma unroll
        for (int d = 0; d < 3; ++d)
#pragma unroll
          for (int q = 0; q < 16 / C::RPI; ++q) {
            const int src_row = __shfl_sync(0xffffffffu, mp[3 * t + d], 16 * b + q * C::RPI + rsub);
            const uint64_t src = ptx::mad_wide_u32(uint32_t(src_row), CIN * 2, x_chunk);
            ptx::cp_async16_if_row(dst + 2 * ((16 * d + q * C::RPI) * CIN), reinterpret_cast<const void*>(src),
                                   src_row);
          }
      }
    };

    float acc[P][C::MT][C::NT][4];
#pragma unroll
    for (int p = 0; p < P; ++p)
#pragma unroll
      for (int i = 0; i < C::MT; ++i)
#pragma unroll
        for (int jn = 0; jn < C::NT; ++jn)
#pragma unroll
          for (int q = 0; q < 4; ++q) acc[p][i][jn][q] = 0.f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < C::KS) issue(s, s);
      ptx::cp_async_commit();
    }
#pragma unroll
    for (int u = 0; u < C::KS; ++u) {
      ptx::cp_async_wait_mem<STAGES - 2>();
      __syncwarp();
      if (u + STAGES - 1 < C::KS) issue(u + STAGES - 1, (u + STAGES - 1) % STAGES);
      ptx::cp_async_commit();
      const int rows = cnt[u], first = lo[u];
      if (rows == 0) continue;
      const int t = u / 2, i = u % 2;
      const uint32_t sbase = stage0 + 2 * ((u % STAGES) * C::STAGE);
#pragma unroll
      for (int d = 0; d < 3; ++d) {
        const int k = 3 * t + d;
        // the input row that this lane's ldmatrix row (16 i + lane % 16) reads
        const int e = __shfl_sync(0xffffffffu, mp[k], 16 * i + (lane & 15));
        if (__ballot_sync(0xffffffffu, e >= 0) == 0u) continue;  // no row of the block has a neighbour at k
        uint32_t bf[C::NT][KB][2];
#pragma unroll
        for (int kk = 0; kk < KB; ++kk)
#pragma unroll
          for (int jn = 0; jn < C::NT / 2; ++jn) {
            uint32_t r[4];
            ptx::ldmatrix_x4_at(r, b_lane[kk] + 2 * (k * COUT * CIN + jn * 16 * CIN));
            bf[2 * jn][kk][0] = r[0];
            bf[2 * jn][kk][1] = r[1];
            bf[2 * jn + 1][kk][0] = r[2];
            bf[2 * jn + 1][kk][1] = r[3];
          }
        const int pos = rows > 0 ? e - first : 16 * d + (lane & 15);
#pragma unroll
        for (int kk = 0; kk < KB; ++kk) {
          const uint32_t addr = e >= 0 ? sbase + 2 * (pos * CIN + swz<CIN>(pos, kk * 2 + (lane >> 4))) : zero_chunk;
          uint32_t af[4];
          ptx::ldmatrix_x4_at(af, addr);
#pragma unroll
          for (int jn = 0; jn < C::NT; ++jn) ptx::mma_16816(acc[k % P][i][jn], af, bf[jn][kk][0], bf[jn][kk][1]);
        }
      }
    }
    ptx::cp_async_wait_mem<0>();
    __syncwarp();  // the stages are free: the epilogue stages its rows there

    // half(act((set 0 + set 1 + ..) + bias)) -> the warp's staging rows -> 16-byte rows out (residual, ReLU)
    const __half* __restrict__ res = static_cast<const __half*>(a.residual);
    __half* y = static_cast<__half*>(a.y);
    __half* sC = sS;
#pragma unroll
    for (int i = 0; i < C::MT; ++i)
#pragma unroll
      for (int jn = 0; jn < C::NT; ++jn) {
        const int col = jn * 8 + (lane & 3) * 2;
        const float b0 = col < a.cout_w ? a.bias[col] : 0.f;
        const float b1 = col + 1 < a.cout_w ? a.bias[col + 1] : 0.f;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float s0 = acc[0][i][jn][2 * h], s1 = acc[0][i][jn][2 * h + 1];
#pragma unroll
          for (int p = 1; p < P; ++p) {
            s0 += acc[p][i][jn][2 * h];
            s1 += acc[p][i][jn][2 * h + 1];
          }
          const int rl = i * 16 + (lane >> 2) + h * 8;
          const float v0 = col < a.cout ? apply_act(s0 + b0, a.act, a.alpha) : 0.f;
          const float v1 = col + 1 < a.cout ? apply_act(s1 + b1, a.act, a.alpha) : 0.f;
          *reinterpret_cast<__half2*>(sC + rl * C::LDC + col) = __floats2half2_rn(v0, v1);
        }
      }
    __syncwarp();
    for (int it = lane; it < WR * (COUT / 8); it += 32) {
      const int rl = it / (COUT / 8), c8 = (it % (COUT / 8)) * 8;
      const int64_t row = r0 + rl;
      if (row >= n) continue;
      alignas(16) __half v[8];
      *reinterpret_cast<uint4*>(v) = *reinterpret_cast<const uint4*>(sC + rl * C::LDC + c8);
      store8_residual_relu(y, res, row * a.cout_p + c8, a.relu_after, v);
    }
    __syncwarp();  // the staging rows are read before the next slab's map lands there
  }
}

}  // namespace osplit
}  // namespace scn::cuda
