// Warp-independent implicit GEMM for convs of 16/32 input channels (16/32 output channels; fp16 also 64:
// the strided 32 -> 64 conv) on any kernel map of 27 offsets (docs/cuda_backend.md, "Where the time goes
// (issue 19)"). The tiles of implicit_gemm.cuh walk a tile's offsets in block-wide pipeline
// steps: every step waits at a __syncthreads for the slowest warp and reloads a weight slice. Here:
//
//   block:  all K x COUT x CIN weights -> shared memory once (persistent grid), one barrier in all
//   team:   P warps sharing a slab of WR rows; warp g of the team sums the offsets k with k % P == g
//   warp:   map entries of its rows for its offsets -> registers (independent loads, one round trip);
//           then its own STAGES-deep cp.async pipeline over those offsets: gather (rows without a
//           neighbour are not copied: their lanes point ldmatrix at a zero chunk) -> __syncwarp ->
//           ldmatrix -> mma.sync; an offset no row of the slab uses, or a 16-row block without a
//           neighbour, issues no MMA
//   end:    P == 1: the warp's epilogue; P > 1: partial sums -> shared memory, a named barrier of the
//           team, each warp reduces a slice of the rows in the fixed order g = 0, 1, .., P-1
//
// Summation order per output element: P == 1 sums offsets ascending, channels ascending (the order
// of implicit_gemm.cuh's tiles: bitwise the same result); P > 1 sums ((part_0 + part_1) + ..) with
// part_g over offsets k = g, g + P, .. ascending. Either way it depends on P only, never on WR,
// STAGES or the warps per block, so all configs of one P give the same bits.
//
// INT8 engines (docs/int8.md): MODE kI8 reads rows of int8 channels, counted like the tiles in 16-bit
// units of two (CIN = 8 or 16 units: 16 or 32 channels), int8 weights, mma.sync s8 -> s32; the int32
// sums are exact, so every P and every config gives the bits of the int8 tiles. MODE kF16Q sums fp16
// operands like kF16 (the same order per P). Both meet their partial sums in shared memory (also for
// P == 1) and store them with the tiles' quantization-aware epilogue (q_epilogue.cuh).
#pragma once

#include <cstdint>
#include <type_traits>

#include "backends/cuda/common.cuh"
#include "backends/cuda/igemm_offset_split.h"
#include "backends/cuda/ptx.cuh"
#include "backends/cuda/q_epilogue.cuh"

namespace scn::cuda {
namespace osplit {

using ptx::cp_async16;
using ptx::ldmatrix_x2_at;
using ptx::ldmatrix_x4_at;
using ptx::mma_16816;
using ptx::mma_16816_s8;
using ptx::mma_16832_s8;
using ptx::named_barrier_sync;
using ptx::smem_addr;

/// Rows of C halves (C/8 16-byte chunks) unpadded, chunk c of row r stored at c ^ ((r / (8 / CPR)) % CPR):
/// the 8 rows of an ldmatrix phase (consecutive, starting at a multiple of 8) hit 8 distinct bank groups.
/// (Rows of one chunk, 16-byte int8 rows, are unswizzled: 8 consecutive rows are one 128-byte line.)
template <int C>
__device__ __forceinline__ int swz(int r, int c) {
  constexpr int CPR = C / 8;
  if constexpr (CPR == 1) return 0;
  constexpr int RPL = 8 / CPR;  // rows per 128-byte line
  return (c ^ ((r / RPL) % CPR)) * 8;
}

/// The P warps of team `team` meet (a named barrier; one warp: __syncwarp).
template <int P>
__device__ __forceinline__ void team_sync(int team) {
  if constexpr (P == 1)
    __syncwarp();
  else
    named_barrier_sync(1 + team, P * 32);
}

/// CIN: 16-bit units per input row (fp16 channels, or pairs of int8 channels with MODE kI8).
template <int CIN, int COUT, int WR, int P, int STAGES, int WARPS, int MODE = kF16, int KK = 27>
struct Cfg {
  static_assert(MODE == kF16 || MODE == kF16Q || MODE == kI8, "a kernel mode of implicit_gemm.cuh");
  static_assert(MODE == kI8 ? (CIN == 8 || CIN == 16) : (CIN == 16 || CIN == 32),
                "16 or 32 input channels (int8: 8 or 16 units)");
  static_assert(COUT == 16 || COUT == 32 || (COUT == 64 && MODE == kF16), "16 or 32 output channels (fp16: or 64)");
  static_assert(WR == 32 || WR == 64, "slabs of 32 or 64 rows");
  static_assert(WARPS % P == 0 && (P == 1 || WARPS / P <= 15), "whole teams, at most 15 named barriers");
  static_assert(WR % P == 0, "each warp of a team reduces whole rows");
  static_assert(STAGES >= 2, "at least two stages");
  static constexpr int kThreads = WARPS * 32;
  static constexpr int TEAMS = WARPS / P;
  static constexpr int KG = (KK + P - 1) / P;  // offsets per group
  static constexpr int RH = WR / 32;           // rows per lane in the map registers
  static constexpr int MT = WR / 16, NT = COUT / 8;
  static constexpr int CPR = CIN / 8;
  static constexpr int STAGE = WR * CIN;  // halves of one stage
  static constexpr int LDC = COUT + 8;    // epilogue staging row (halves)
  static constexpr int LDR = COUT + 4;    // partial sums row (floats / int32)
  // the fp16 epilogue of P == 1 stages halves; partial sums (P > 1, and every int8 config) 32-bit words
  static constexpr bool kPartials = P > 1 || MODE != kF16;
  static constexpr int EPI_HALVES = kPartials ? WR * LDR * 2 : WR * LDC;
  static constexpr int MAP_HALVES = WR * KK * 2;  // a slab's map rows (int32), staged at the slab's start
  static constexpr int MAX_HALVES = EPI_HALVES > MAP_HALVES ? EPI_HALVES : MAP_HALVES;
  // the stages, reused by the map staging and the epilogue (a warp's region holds what they need)
  static constexpr int STAGES_HALVES = STAGES * STAGE;
  static constexpr int WARP_HALVES = STAGES_HALVES > MAX_HALVES ? STAGES_HALVES : MAX_HALVES;
  static constexpr size_t kWeightHalves = size_t(KK) * COUT * CIN;
  // 16 zero bytes after the stages: the A fragments of rows without a neighbour at an offset (not copied)
  static constexpr size_t kZeroOff = (kWeightHalves + size_t(WARPS) * WARP_HALVES) * 2;
  static constexpr size_t kSmem = kZeroOff + 16;
};

template <int CIN, int COUT, int WR, int P, int STAGES, int WARPS, int MODE = kF16, int KK = 27>
__global__ void __launch_bounds__(WARPS * 32, 1) osplit_kernel(const ConvArgs a) {
  using C = Cfg<CIN, COUT, WR, P, STAGES, WARPS, MODE, KK>;
  using AccT = std::conditional_t<MODE == kI8, int, float>;
  extern __shared__ __align__(128) uint8_t smem[];
  __half* sW = reinterpret_cast<__half*>(smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int team = warp / P, g = warp % P;
  __half* sS = sW + C::kWeightHalves + size_t(warp) * C::WARP_HALVES;
  if (tid == 0) *reinterpret_cast<uint4*>(smem + C::kZeroOff) = make_uint4(0u, 0u, 0u, 0u);  // before the barrier below

  // The row count comes from the map stream, not from the previous conv: readable before the wait.
  const int64_t n = rows_of(a.n_out, a.cap_out);
  const int64_t nslabs = (n + WR - 1) / WR;
  // The block's slabs: base + team, + step, .. below end. At most two rounds of the grid's teams (a frame
  // like nuScenes'): every block a contiguous run, the runs as even as the grid allows, so that every SM
  // carries about the same number of slabs (whole groups of TEAMS dealt round by round leave a partial last
  // round on the first blocks only, and the other SMs idle). More rounds (large frames, batches): the grid's
  // teams take the next gridDim * TEAMS consecutive slabs together, round by round, where the imbalance of
  // the last round is small and this order measured faster (docs/benchmarks.md, session 42).
  const int64_t bi = blockIdx.x, stride = int64_t(gridDim.x) * C::TEAMS;
  const bool even_runs = nslabs <= 2 * stride;
  const int64_t bper = nslabs / gridDim.x, bextra = nslabs - bper * gridDim.x;
  const int64_t base = even_runs ? bi * bper + (bi < bextra ? bi : bextra) : bi * C::TEAMS;
  const int64_t step = even_runs ? int64_t(C::TEAMS) : stride;
  const int64_t end = even_runs ? base + bper + (bi < bextra ? 1 : 0) : nslabs;
  // Weights [k][co][ci] of the conv (a.w is [K][cout_w][cin_p]), swizzled rows; waited for below. A block
  // without a slab (the grid is sized from the planned capacity, the frame may be smaller) stages none.
  if (base < end) {
    const __half* w = static_cast<const __half*>(a.w);
    for (int i = tid; i < KK * COUT * C::CPR; i += C::kThreads) {
      const int c = i % C::CPR, co = (i / C::CPR) % COUT, k = i / (C::CPR * COUT);
      cp_async16(sW + (k * COUT + co) * CIN + swz<CIN>(co, c), w + (int64_t(k) * a.cout_w + co) * CIN + c * 8);
    }
    ptx::cp_async_commit();
  }

  const __half* __restrict__ x = static_cast<const __half*>(a.x);
  const int32_t* __restrict__ out_in = a.out_in;
  // The slab's map rows (WR x KK int32, contiguous in out_in) -> this warp's stage region, by coalesced
  // 16-byte copies of the chunks wholly below row n, and the end of row n - 1 (in the chunk row n starts
  // in) by one lane's word loads and stores: a copy of fewer bytes reads only them, but compute-sanitizer's
  // initcheck counts it as a 16-byte read of the never written row n. That chunk gets no copy (its
  // zero-fill would race the stores); read_map reads no row from n on. A lane loading its own row's
  // entries from global memory instead touches another 128-byte line per lane and offset: KK line lookups
  // per row in the L1, several times what the row's gathers take.
  static_assert(WR * KK % 4 == 0, "a slab's map rows are whole 16-byte chunks");
  auto stage_map = [&](int64_t slab) {
    const int64_t left = n - slab * WR;
    const int valid = int(left < WR ? left : WR) * KK * 4;  // bytes of rows < n
    const char* src = reinterpret_cast<const char*>(out_in + slab * WR * KK);
    const uint32_t dst = smem_addr(sS);
#pragma unroll
    for (int c = lane; c < WR * KK / 4; c += 32) {
      if (16 * c + 16 <= valid) ptx::cp_async16_n(dst + 16 * c, src + 16 * c, 16u);
    }
    const int tail = valid % 16, ct = valid / 16;  // rows end on a word: 0, 4, 8 or 12 bytes
    if (tail != 0 && lane == ct % 32) {
      const int32_t* sw = out_in + slab * WR * KK + 4 * ct;
      int32_t* d = reinterpret_cast<int32_t*>(sS) + 4 * ct;
#pragma unroll 1
      for (int j = 0; j < tail / 4; ++j) d[j] = __ldcg(sw + j);  // through L2, as the copies
    }
  };
  // map entries of this lane's rows (lane + 32 h) for the group's offsets g, g + P, .. from the staged
  // rows (word stride KK, odd: the 32 lanes hit 32 banks)
  int mp[C::RH][C::KG];
  auto read_map = [&](int64_t slab) {
    const int32_t* sm = reinterpret_cast<const int32_t*>(sS);
#pragma unroll
    for (int h = 0; h < C::RH; ++h) {
      const int64_t row = slab * WR + lane + 32 * h;
#pragma unroll
      for (int j = 0; j < C::KG; ++j)
        mp[h][j] = (row < n && g + j * P < KK) ? sm[(lane + 32 * h) * KK + g + j * P] : -1;
    }
  };
  const int64_t slab0 = base + team;
  if (slab0 < end && !a.map_late) stage_map(slab0);  // in flight beside the weights
  ptx::cp_async_commit();
  ptx::cp_async_wait_mem<0>();
  __syncthreads();  // the weights have landed (every thread waited for its own copies)
  // Launched programmatically, the grid got here while the previous kernel may still run: the weights,
  // the row count and the map are not its outputs (unless map_late: the map kernel just before it);
  // activations are, so wait for it now.
  ptx::grid_dependency_wait();

  // Lane constants, pinned in registers (the unrolled offset loop adds immediates only). A row's swizzle
  // depends on its index modulo 8 only (swz), and the copy instructions, 16-row MMA blocks and 16-row
  // weight blocks start at multiples of 8 rows, so one base per lane and 16-column chunk k covers them.
  static_assert((32 / C::CPR) % 8 == 0, "copy instructions start at multiples of 8 rows");
  const int cl = lane % C::CPR, rsub = lane / C::CPR;
  const uint64_t x_chunk = reinterpret_cast<uint64_t>(x + cl * 8);
  const uint32_t dst0 = ptx::pinned(smem_addr(sS + rsub * CIN + swz<CIN>(rsub, cl)));
  const uint32_t zero_chunk = ptx::pinned(smem_addr(smem + C::kZeroOff));
  // the ballot bit of the row whose A address this lane gives ldmatrix, in 16-row blocks 2i and 2i + 1
  const uint32_t row_bit[2] = {1u << (lane & 15), 1u << (16 + (lane & 15))};
  // MMA k-blocks per row: fp16 m16n8k16 per 16 channels; int8 one m16n8k32 (32 channels, the 32-byte
  // rows of the fp16 16-channel case, the same fragments) or one m16n8k16 (16 channels, 16-byte rows)
  constexpr bool kRow16B = MODE == kI8 && CIN == 8;
  constexpr int KB = MODE == kI8 ? 1 : CIN / 16;
  uint32_t a_lane[KB], b_lane[KB];
#pragma unroll
  for (int kk = 0; kk < KB; ++kk) {
    if constexpr (kRow16B) {  // ldmatrix x2 of A rows 0-15; x2 / x4 of weight rows 0-15 / 0-31, one chunk each
      a_lane[kk] = ptx::pinned(smem_addr(sS + (lane & 15) * CIN));
      b_lane[kk] = ptx::pinned(smem_addr(sW + (g * COUT + lane % COUT) * CIN));
    } else {
      const int ra = lane & 15, rb = (lane & 7) + (lane >> 4) * 8;
      a_lane[kk] = ptx::pinned(smem_addr(sS + ra * CIN + swz<CIN>(ra, kk * 2 + (lane >> 4))));
      b_lane[kk] = ptx::pinned(smem_addr(sW + (g * COUT + rb) * CIN + swz<CIN>(rb, kk * 2 + ((lane >> 3) & 1))));
    }
  }

  for (int64_t slab = slab0; slab < end; slab += step) {
    const int64_t r0 = slab * WR;
    // the stage region is free: the last slab's epilogue ended with its team's sync (map_late: the first
    // slab's map is staged here too, after the wait)
    if (slab != slab0 || a.map_late) {
      stage_map(slab);
      ptx::cp_async_commit();
      ptx::cp_async_wait_mem<0>();
      __syncwarp();
    }
    read_map(slab);
    __syncwarp();  // every lane has read the staged map before the gathers overwrite the stage region
    // The block's last round (its first team has no further slab): let the next kernel launch, so
    // its blocks stage their weights and maps on the SMs this grid's blocks leave, while the rest
    // still run. Its own griddepcontrol.wait still waits for this grid to complete.
    if (slab - team + step >= end) ptx::grid_launch_dependents();

    // gather of the group's j-th offset into stage slot s: a warp instruction copies 32 / CPR whole rows
    // (rows 32h + q * 32 / CPR + rsub, q = it % CPR); every address is a lane constant plus an immediate
    auto issue = [&](int j, int s) {
#pragma unroll
      for (int it = 0; it < WR * C::CPR / 32; ++it) {
        const int h = it / C::CPR, q = it % C::CPR;
        // one chunk per row: this lane's own row (no shuffle)
        const int src_row = C::CPR == 1 ? mp[h][j] : __shfl_sync(0xffffffffu, mp[h][j], q * (32 / C::CPR) + rsub);
        const uint64_t src = ptx::mad_wide_u32(uint32_t(src_row), CIN * 2, x_chunk);  // read only if src_row >= 0
        ptx::cp_async16_if_row(dst0 + 2 * (s * C::STAGE + (h * 32 + q * (32 / C::CPR)) * CIN),
                               reinterpret_cast<const void*>(src), src_row);
      }
    };

    AccT acc[C::MT][C::NT][4];
#pragma unroll
    for (int i = 0; i < C::MT; ++i)
#pragma unroll
      for (int jn = 0; jn < C::NT; ++jn)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[i][jn][q] = AccT(0);

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < C::KG) issue(s, s);
      ptx::cp_async_commit();
    }
#pragma unroll
    for (int j = 0; j < C::KG; ++j) {
      ptx::cp_async_wait_mem<STAGES - 2>();
      __syncwarp();
      if (j + STAGES - 1 < C::KG) issue(j + STAGES - 1, (j + STAGES - 1) % STAGES);
      ptx::cp_async_commit();
      const int k = g + j * P;
      if (k >= KK) continue;
      // rows of the slab with a neighbour at offset k: 16-row blocks without one add nothing
      uint32_t has[C::RH];
      bool any = false;
#pragma unroll
      for (int h = 0; h < C::RH; ++h) {
        has[h] = __ballot_sync(0xffffffffu, mp[h][j] >= 0);
        any |= has[h] != 0u;
      }
      if (!any) continue;
      // 16-row block i has no row with a neighbour at offset k: it adds nothing
      auto block_empty = [&](int i) { return ((has[i / 2] >> ((i % 2) * 16)) & 0xffffu) == 0u; };
      // this lane's A address in block i: its row's staged chunk, or the zero chunk for a row that was
      // not copied (no neighbour)
      auto a_addr = [&](int kk, int i) {
        return (has[i / 2] & row_bit[i % 2]) ? a_lane[kk] + 2 * ((j % STAGES) * C::STAGE + i * 16 * CIN) : zero_chunk;
      };
#pragma unroll
      for (int kk = 0; kk < KB; ++kk) {
        if constexpr (kRow16B) {  // int8, 16 channels: m16n8k16 s8, one A register pair, one B register
          uint32_t bf[C::NT];
          if constexpr (COUT == 16) {
            uint32_t r[2];
            ldmatrix_x2_at(r, b_lane[kk] + 2 * (j * P * COUT * CIN));
            bf[0] = r[0];
            bf[1] = r[1];
          } else {
            uint32_t r[4];
            ldmatrix_x4_at(r, b_lane[kk] + 2 * (j * P * COUT * CIN));
#pragma unroll
            for (int jn = 0; jn < 4; ++jn) bf[jn] = r[jn];
          }
#pragma unroll
          for (int i = 0; i < C::MT; ++i) {
            if (block_empty(i)) continue;
            uint32_t af[2];
            ldmatrix_x2_at(af, a_addr(kk, i));
#pragma unroll
            for (int jn = 0; jn < C::NT; ++jn) mma_16816_s8(acc[i][jn], af, bf[jn]);
          }
        } else {
          uint32_t bf[C::NT][2];
#pragma unroll
          for (int jn = 0; jn < C::NT / 2; ++jn) {
            uint32_t r[4];
            ldmatrix_x4_at(r, b_lane[kk] + 2 * (j * P * COUT * CIN + jn * 16 * CIN));
            bf[2 * jn][0] = r[0];
            bf[2 * jn][1] = r[1];
            bf[2 * jn + 1][0] = r[2];
            bf[2 * jn + 1][1] = r[3];
          }
#pragma unroll
          for (int i = 0; i < C::MT; ++i) {
            if (block_empty(i)) continue;
            uint32_t af[4];
            ldmatrix_x4_at(af, a_addr(kk, i));
#pragma unroll
            for (int jn = 0; jn < C::NT; ++jn) {
              if constexpr (MODE == kI8)
                mma_16832_s8(acc[i][jn], af, bf[jn][0], bf[jn][1]);
              else
                mma_16816(acc[i][jn], af, bf[jn][0], bf[jn][1]);
            }
          }
        }
      }
    }
    ptx::cp_async_wait_mem<0>();
    __syncwarp();  // every lane is done with the stages: reuse them for the epilogue

    const __half* __restrict__ res = static_cast<const __half*>(a.residual);
    __half* y = static_cast<__half*>(a.y);
    // writes one 8-column chunk: v = half(act(acc + bias)) values, then the residual add and the ReLU
    auto store8 = [&](int64_t row, int c8, __half(&v)[8]) {
      store8_residual_relu(y, res, row * a.cout_p + c8, a.relu_after, v);
    };

    if constexpr (!C::kPartials) {
      // fragments -> half(act(acc + bias)) in the warp's staging rows, then 16-byte rows out
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
            const int rl = i * 16 + (lane >> 2) + h * 8;
            const float v0 = col < a.cout ? apply_act(acc[i][jn][2 * h] + b0, a.act, a.alpha) : 0.f;
            const float v1 = col + 1 < a.cout ? apply_act(acc[i][jn][2 * h + 1] + b1, a.act, a.alpha) : 0.f;
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
        store8(row, c8, v);
      }
      __syncwarp();  // the staging rows are read before the next slab's gathers land there
    } else {
      // partial sums -> this warp's stages; the team meets; warp g reduces rows [g WR/P, (g+1) WR/P)
      AccT* sR = reinterpret_cast<AccT*>(sS);
#pragma unroll
      for (int i = 0; i < C::MT; ++i)
#pragma unroll
        for (int jn = 0; jn < C::NT; ++jn)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int rl = i * 16 + (lane >> 2) + h * 8;
            const int cl = jn * 8 + (lane & 3) * 2;
            if constexpr (MODE == kI8)
              *reinterpret_cast<int2*>(sR + rl * C::LDR + cl) = make_int2(acc[i][jn][2 * h], acc[i][jn][2 * h + 1]);
            else
              *reinterpret_cast<float2*>(sR + rl * C::LDR + cl) = make_float2(acc[i][jn][2 * h], acc[i][jn][2 * h + 1]);
          }
      team_sync<P>(team);
      constexpr int ROWS = WR / P;
      const AccT* base = reinterpret_cast<const AccT*>(sW + C::kWeightHalves + size_t(team) * P * C::WARP_HALVES);
      // the sum of the team's parts for 8 columns of local row rl, in the order p = 0, 1, .., P-1
      auto reduce8 = [&](int rl, int c8, AccT(&v)[8]) {
#pragma unroll
        for (int q = 0; q < 8; ++q) v[q] = base[rl * C::LDR + c8 + q];
#pragma unroll
        for (int p = 1; p < P; ++p) {
          const AccT* part = base + size_t(p) * C::WARP_HALVES / 2;  // warp p's stages, as 32-bit words
#pragma unroll
          for (int q = 0; q < 8; ++q) v[q] += part[rl * C::LDR + c8 + q];
        }
      };
      if constexpr (MODE == kF16) {
        for (int it = lane; it < ROWS * (COUT / 8); it += 32) {
          const int rl = g * ROWS + it / (COUT / 8), c8 = (it % (COUT / 8)) * 8;
          const int64_t row = r0 + rl;
          if (row >= n) continue;
          float v[8];
          reduce8(rl, c8, v);
          alignas(16) __half o[8];
#pragma unroll
          for (int q = 0; q < 8; ++q) {
            const int col = c8 + q;
            o[q] = __float2half_rn(col < a.cout ? apply_act(v[q] + a.bias[col], a.act, a.alpha) : 0.f);
          }
          store8(row, c8, o);
        }
      } else {
        // the tiles' quantization-aware epilogue: act(q_conv_value), then q_store8; the row padding up
        // to y's (or y2's) stride is written as zeros
        // a copy in registers: through a reference the compiler would read every field again after each
        // store, since y might alias *a.q
        const QEpilogue qe = *a.q;
        const int per_row = q_pad_end(qe) / 8;
        auto items = [&](auto form) {
          for (int it = lane; it < ROWS * per_row; it += 32) {
            const int rl = g * ROWS + it / per_row, c8 = (it % per_row) * 8;
            const int64_t row = r0 + rl;
            if (row >= n) continue;
            float v[8];
            if (c8 < a.cout) {  // then c8 + 7 < COUT (a.cout <= COUT): inside the partial sums' rows
              AccT s8[8];
              reduce8(rl, c8, s8);
#pragma unroll
              for (int q = 0; q < 8; ++q) {
                const int col = c8 + q;
                const float m = MODE == kI8 ? qe.mult[col] : 0.f;  // fp16 operands have no multiplier
                v[q] = apply_act(q_conv_value(s8[q], m, a.bias[col]), a.act, a.alpha);
              }
            } else {
#pragma unroll
              for (int q = 0; q < 8; ++q) v[q] = 0.f;
            }
            q_store8<decltype(form)::value>(a, qe, row, c8, v);
          }
        };
        with_q_store_form<MODE == kI8>(a, qe, items);
      }
      team_sync<P>(team);  // peers are done reading the partial sums
    }
  }
}

}  // namespace osplit
}  // namespace scn::cuda
