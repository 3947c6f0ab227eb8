// Output-stationary implicit GEMM for sparse convolution on tensor cores (mma.sync m16n8k16,
// fp16 operands, fp32 accumulation; sm_80 and newer, TMA weight loads on sm_90).
//
//   for each tile of BM output rows (persistent loop) and BN output channels (grid.y):
//     map   = out_in[rows, 0:K]                    -> shared memory (coalesced, BM*K contiguous ints)
//     mask  = OR over rows of (map[row, k] >= 0)   -> offsets no row of the tile needs are skipped
//     acc   = 0
//     for each active offset k, for each BK chunk c of the input channels:   (STAGES-deep pipeline)
//       A[r, :] = x[map[r, k], c : c + BK]   cp.async gather; rows without a neighbour are zeroed
//                                            with a shared-memory store (no memory request)
//       B[n, :] = W[k, n0 + n, c : c + BK]   cp.async, or one TMA bulk copy of a pre-tiled slice
//       acc += A * B^T                       (ldmatrix + mma.sync)
//     y[rows, n0 : n0 + BN] = epilogue(acc)  (bias, activation -> fp16 tile in shared memory, then
//                                            16-byte stores with the residual add and ReLU)
//
// Every output element is produced by one thread with a fixed summation order (offsets
// ascending, channels ascending), so results are deterministic and independent of the tile
// shape, the pipeline depth and of which offsets a tile skips.
//
// INT8 (MODE kI8, docs/int8.md): the same kernel on int8 rows. Two int8 channels are one 16-bit
// "unit": a 16-byte copy moves 16 channels, a BK-unit chunk holds 2*BK channels, and ldmatrix
// gives exactly the m16n8k32 s8 fragments (rows x 4 bytes), so the loaders and the shared-memory
// layout are unchanged; mma.sync m16n8k32 accumulates in int32 (exact). MODE kF16Q keeps fp16
// operands but, like kI8, ends in the quantization-aware epilogue (q_epilogue below) that stores
// int8 or fp16 and applies an int8 / fp16 residual Add exactly as the CPU oracle does. The wgmma tiles
// (WG) take both modes too: kI8 with wgmma m64nNk32 s8, kF16Q with the fp16 instructions.
#pragma once

#include <type_traits>
#include <vector>

#include "backends/cuda/common.cuh"
#include "backends/cuda/igemm_sm90_ptx.cuh"
#include "backends/cuda/ptx.cuh"
#include "backends/cuda/q_epilogue.cuh"

namespace scn::cuda {
namespace igemm {

inline constexpr int kMaxMapK = 32;  // kernels with K <= 32 stage the map in shared memory and skip offsets

using ptx::cp_async16;
using ptx::cp_async4;
using ptx::cp_async_commit;
using ptx::cp_async_wait;
using ptx::ldmatrix_x2;
using ptx::ldmatrix_x4_at;
using ptx::mma_16816;
using ptx::mma_16816_s8;
using ptx::mma_16832_s8;
using ptx::smem_addr;

using ptx::grid_dependency_wait;
using ptx::grid_launch_dependents;

template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES, int G, bool WG = false>
struct Tile {
  static constexpr int kThreads = WARPS_M * WARPS_N * 32;
  static constexpr int WM = BM / WARPS_M;
  static constexpr int WN = BN / WARPS_N;
  static constexpr int MT = WM / 16;  // mma tiles per warp along M
  static constexpr int NT = WN / 8;   // along N
  // smem row (halves): padded for conflict-free ldmatrix, or (wgmma) 64 halves in the 128-byte swizzle
  static constexpr int LDS = igemm_smem_row(BK, WG);
  static constexpr int A_SUB = BM * LDS;  // one offset's A tile
  static constexpr int B_SUB = BN * LDS;  // one offset's B tile (= one pre-tiled TMA slice)
  static constexpr int A_STAGE = G * A_SUB;
  static constexpr int B_STAGE = G * B_SUB;
  static constexpr int LDC = BN + 8;  // epilogue staging row (halves)
  static constexpr size_t kPipeBytes = size_t(STAGES) * (A_STAGE + B_STAGE) * sizeof(__half);
  static constexpr size_t kStageBytes = size_t(BM) * LDC * sizeof(__half);
  static constexpr int LDR = BN + 4;  // split-K partial sums (floats)
  static constexpr size_t kRedBytes = size_t(BM) * LDR * sizeof(float);
  static constexpr size_t kMax2 = kPipeBytes > kStageBytes ? kPipeBytes : kStageBytes;
  static constexpr size_t kMainBytes = kMax2 > kRedBytes ? kMax2 : kRedBytes;
  static constexpr size_t kMapOff = (kMainBytes + 15) / 16 * 16;
  static constexpr size_t kBarOff = kMapOff + size_t(BM) * kMaxMapK * 4 + (kMaxMapK + 4) * 4;
  // wgmma tiles align the dynamic shared memory to 1024 bytes themselves (the swizzle's period)
  static constexpr size_t kSmem = (kBarOff + 7) / 8 * 8 + STAGES * 8 + (WG ? 1024 : 0);
  static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tile must be a multiple of 16x16");
  static_assert(BK % 16 == 0 || BK == 8, "BK must be a multiple of 16 (or 8: 16 int8 channels)");
  static_assert(STAGES >= 2, "at least two stages");
  static_assert(!WG || ((BK == 64 || BK == 32) && BM == 16 * WARPS_M && WARPS_M % 4 == 0 && WARPS_N == 1 &&
                        (BN == 64 || BN == 128)),
                "wgmma tiles: one warpgroup per 64 rows, 64- or 32-unit (128- or 64-byte) rows, N 64 or 128");
  /// Bytes of one pre-tiled weight slice (TMA layout): BN rows of LDS halves.
  static constexpr uint32_t kBSliceBytes = uint32_t(B_SUB * sizeof(__half));

  // Load assignment: a thread copies SEG consecutive 16-byte chunks of one row (one map read and
  // one address per segment). seg_for makes segments as long as possible while every thread keeps
  // an item, so a lane takes most of a row and a warp's copy instruction touches up to 32 rows'
  // lines; the copy path's work per gathered line bounds the gathers. So rows of 64 bytes or more
  // (CPR >= 4, every wgmma tile) are gathered one chunk per lane, consecutive lanes covering whole
  // rows (32 / CPR rows per instruction), except in the deeper wgmma tiles: they keep a step's MMAs
  // in flight, and there an item per chunk (its registers, its map read) costs more than the lines
  // save, so they copy two. Rows of 16 or 32 bytes keep seg_for: one chunk per lane cost the
  // mma.sync tiles registers and gained nothing. Measured: docs/benchmarks.md, sessions 38-39. The
  // weight slices (B) are contiguous rows: seg_for.
  static constexpr int CPR = BK / 8;
  static constexpr int seg_for(int rows) {
    int seg = CPR;
    while (seg > 1 && rows * (CPR / seg) < kThreads) seg /= 2;
    return seg;
  }
  static constexpr int A_SEG = CPR < 4 ? seg_for(BM) : (WG && STAGES > 2 ? 2 : 1);
  static_assert(CPR % A_SEG == 0, "a row's chunks split into whole segments");
  static constexpr int A_ITEMS = BM * (CPR / A_SEG);
  static constexpr int A_ITERS = (A_ITEMS + kThreads - 1) / kThreads;
  static constexpr int B_SEG = seg_for(BN);
  static constexpr int B_ITEMS = BN * (CPR / B_SEG);
  static constexpr int B_ITERS = (B_ITEMS + kThreads - 1) / kThreads;
};

// G > 1: one pipeline step covers G active offsets (requires BK == cin_p, one channel chunk), so
// layers with few channels run G times fewer, larger steps. MINB > 0 caps registers so that MINB
// blocks fit on an SM. SPLIT > 1 (sm_90): a cluster of SPLIT CTAs (grid z) shares each row tile,
// CTA z summing the kernel offsets k with k % SPLIT == z; the partial sums meet in shared memory
// and each CTA reduces a slice of the rows over the cluster in rank order (deterministic, no
// global workspace). Results then depend on SPLIT but on nothing else of the configuration — in fp16;
// int8 partial sums are int32 and exact, so there every SPLIT gives the unsplit tiles' bits.
template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES, bool TMA_B, int G, int MINB, int SPLIT,
          int MODE, bool WG>
__global__ void __launch_bounds__(WARPS_M* WARPS_N * 32, MINB) igemm_kernel(const ConvArgs a) {
  using T = Tile<BM, BN, BK, WARPS_M, WARPS_N, STAGES, G, WG>;
  static_assert(!WG || TMA_B, "wgmma tiles: TMA weights");
  static_assert(!WG || BK == 64 || MODE == kI8, "fp16 wgmma tiles: 64-channel chunks");
  static_assert(MODE != kF16Q || SPLIT == 1, "the fp16-operand quantizing epilogue has no split-K variant");
  static_assert(BK % 16 == 0 || MODE == kI8, "BK = 8 units (16 channels) exists for int8 operands only");
  using AccT = std::conditional_t<MODE == kI8, int, float>;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  uint8_t* smem = smem_raw;
  if constexpr (WG) smem += (1024u - (smem_addr(smem_raw) & 1023u)) & 1023u;
  __half* sA = reinterpret_cast<__half*>(smem);
  __half* sB = sA + STAGES * T::A_STAGE;
  __half* sC = reinterpret_cast<__half*>(smem);  // epilogue staging (after the pipeline drained)
  int32_t* sMap = reinterpret_cast<int32_t*>(smem + T::kMapOff);
  int32_t* sOff = sMap + BM * kMaxMapK;
  uint32_t* sMask = reinterpret_cast<uint32_t*>(sOff + kMaxMapK);
  uint64_t* sBar = reinterpret_cast<uint64_t*>(smem + (T::kBarOff + 7) / 8 * 8);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int64_t n = rows_of(a.n_out, a.cap_out);
  const int64_t ntiles = (n + BM - 1) / BM;
  const int n0 = blockIdx.y * BN;
  const int K = a.K;
  const bool map_smem = K <= kMaxMapK;
  const int chunks = a.cin_p / BK;
  const int cin_p = a.cin_p;
  const __half* __restrict__ x = static_cast<const __half*>(a.x);
  const __half* __restrict__ wt = static_cast<const __half*>(a.w_tma);

  // Per-thread load assignment (fixed for the whole kernel).
  int a_row[T::A_ITERS], a_dst[T::A_ITERS], a_col[T::A_ITERS];
  bool a_on[T::A_ITERS];
#pragma unroll
  for (int it = 0; it < T::A_ITERS; ++it) {
    const int item = tid + it * T::kThreads;
    a_on[it] = item < T::A_ITEMS;
    const int r = item / (T::CPR / T::A_SEG), sg = item % (T::CPR / T::A_SEG);
    a_row[it] = r;
    a_col[it] = sg * T::A_SEG * 8;
    a_dst[it] = r * T::LDS + sg * T::A_SEG * 8;
  }
  const __half* b_src[T::B_ITERS];
  int b_dst[T::B_ITERS];
  bool b_on[T::B_ITERS];
#pragma unroll
  for (int it = 0; it < T::B_ITERS; ++it) {
    const int item = tid + it * T::kThreads;
    b_on[it] = item < T::B_ITEMS;
    const int r = item / (T::CPR / T::B_SEG), sg = item % (T::CPR / T::B_SEG);
    b_src[it] = static_cast<const __half*>(a.w) + int64_t(n0 + r) * cin_p + sg * T::B_SEG * 8;
    b_dst[it] = r * T::LDS + sg * T::B_SEG * 8;
  }
  const int64_t w_kstride = int64_t(a.cout_w) * cin_p;
  // Lane constants of the gathers and ldmatrix reads, pinned in registers (ptx::pinned) so that a step
  // adds its stage offset to them instead of recomputing the swizzle arithmetic. a_sm: byte address of
  // the item's first 16-byte chunk in stage 0; chunk q of the segment is a_sm + 16 q, or (wgmma) a_sm ^ 16 q
  // (a segment's chunks c..c+SEG-1 start at a multiple of SEG, so c + q = c ^ q, and the 128-byte swizzle
  // XORs bits 4..6 of the row's 128-byte-aligned address only). a_src: the byte address of column a_col.
  uint32_t a_sm[T::A_ITERS];
  uint64_t a_src[T::A_ITERS];
#pragma unroll
  for (int it = 0; it < T::A_ITERS; ++it) {
    const int r = a_row[it], c16 = a_col[it] >> 3;
    a_sm[it] =
        ptx::pinned(smem_addr(sA) + 2u * uint32_t(WG ? r * T::LDS + (wg_swizzle_chunk(c16, r, BK) << 3) : a_dst[it]));
    a_src[it] = reinterpret_cast<uint64_t>(x + a_col[it]);
  }
  const uint32_t lm_a = ptx::pinned(smem_addr(sA + (wm * T::WM + (lane & 15)) * T::LDS + (lane >> 4) * 8));
  const uint32_t lm_b =
      ptx::pinned(smem_addr(sB + (wn * T::WN + (lane & 7) + (lane >> 4) * 8) * T::LDS + ((lane >> 3) & 1) * 8));

  if constexpr (TMA_B) {
    if (tid == 0) {
      for (int s = 0; s < STAGES; ++s) mbar_init(&sBar[s], 1);
      mbar_fence_init();
    }
    __syncthreads();
  }
  uint32_t gstep = 0;  // pipeline steps issued by this block so far (TMA slots and phases)

  for (int64_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
    const int64_t m0 = tile * BM;
    // the next conv may launch once every block has started its last tile (the grid never exceeds
    // one resident wave, so its blocks only take the places this one's leave), or (pdl_late) once
    // every block has reached its last epilogue, which leaves the places freed before to other streams
    const bool last_tile = tile + gridDim.x >= ntiles;
    if (last_tile && !a.pdl_late) grid_launch_dependents();
    // map_late: the map was written by a kernel this grid may overlap (launched programmatically after it,
    // or joining the map stream after it): no map entry is read before the wait
    if (a.map_late && tile == blockIdx.x) grid_dependency_wait();
    __syncthreads();  // the previous tile is done with shared memory
    if constexpr (WG && TMA_B) {
      // the epilogue's shared-memory writes (generic proxy) before this tile's first weight copies (async proxy)
      if (tid == 0) fence_proxy_async();
    }
    int nact = K;
    if (map_smem) {
      if (tid == 0) *sMask = 0u;
      __syncthreads();
      // Stage the tile's map with asynchronous copies (one round trip per tile instead of one per
      // element: Nsight Compute showed the per-element loads as the conv kernels' top stall),
      // then derive the offsets used by any row from shared memory.
      {
        // BM * K is a multiple of 4 and the tile's entries are contiguous and 16-byte aligned
        const int64_t base = m0 * K;
        const int64_t limit = n * K;
        for (int c = tid; c < BM * K / 4; c += T::kThreads) {
          const int64_t e = base + 4 * c;
          if (e + 4 <= limit) {
            cp_async16(sMap + 4 * c, a.out_in + e);
          } else {
#pragma unroll
            for (int q = 0; q < 4; ++q) sMap[4 * c + q] = e + q < limit ? __ldg(a.out_in + e + q) : -1;
          }
        }
      }
      cp_async_commit();
      cp_async_wait<0>();
      __syncthreads();
      uint32_t mine = 0;
      {
        int kk = tid % K;
        const int kstep = T::kThreads % K;
        for (int i = tid; i < BM * K; i += T::kThreads) {
          if (sMap[i] >= 0) mine |= 1u << kk;
          kk += kstep;
          if (kk >= K) kk -= K;
        }
      }
      mine = __reduce_or_sync(0xffffffffu, mine);
      if (lane == 0 && mine) atomicOr(sMask, mine);
      __syncthreads();
      uint32_t mask = *sMask;
      if constexpr (SPLIT > 1) {
        uint32_t mine_z = 0;
        const uint32_t z = blockIdx.z;
        for (uint32_t k = z; k < 32; k += SPLIT) mine_z |= 1u << k;
        mask &= mine_z;
      }
      nact = __popc(mask);
      if (warp == 0) {
        if ((mask >> lane) & 1u) sOff[__popc(mask & ((1u << lane) - 1u))] = lane;
      }
      __syncthreads();
    }
    if (tile == blockIdx.x) grid_dependency_wait();  // the first tile's map is staged: now the inputs
    // step -> (offset group, channel chunk); G > 1 only runs with one chunk
    const int nsteps = G > 1 ? (nact + G - 1) / G : nact * chunks;

    // loader state: next step's first offset index and channel chunk
    int ld_kk = 0, ld_c = 0;
    uint32_t ld_slot = gstep % STAGES;
    auto load_next = [&]() {
      const int c0 = ld_c * BK;
      __half* stB = sB + ld_slot * T::B_STAGE;
      const int issued = G > 1 ? min(G, nact - ld_kk) : 1;  // offsets this step covers (one left at least)
      if constexpr (TMA_B) {
        if (tid == 0) {
          // the slot was last read by this tile's MMAs: by ldmatrix (generic proxy) in the mma.sync tiles, which
          // the async-proxy write must be ordered after; wgmma reads through the async proxy itself (its wait
          // and the step's barrier order it), so the wgmma tiles fence once per tile instead (above)
          if constexpr (!WG) fence_proxy_async();
          expect_tx(&sBar[ld_slot], uint32_t(issued) * T::kBSliceBytes);
          for (int g = 0; g < issued; ++g) {
            const int k = map_smem ? sOff[ld_kk + g] : ld_kk + g;
            const __half* src = wt + ((int64_t(k) * chunks + ld_c) * gridDim.y + blockIdx.y) * T::B_SUB;
            tma_load_1d(stB + g * T::B_SUB, src, T::kBSliceBytes, &sBar[ld_slot]);
          }
        }
      }
#pragma unroll
      for (int g = 0; g < G; ++g) {
        if (g >= issued) break;
        const int kk = ld_kk + g;
        const int k = map_smem ? sOff[kk] : kk;
#pragma unroll
        for (int it = 0; it < T::A_ITERS; ++it) {
          if (T::A_ITEMS % T::kThreads != 0 && !a_on[it]) continue;
          int32_t src_row;
          if (map_smem) {
            src_row = sMap[a_row[it] * K + k];
          } else {
            src_row = m0 + a_row[it] < n ? __ldg(a.out_in + (m0 + a_row[it]) * K + k) : -1;
          }
          // rows without a neighbour: zero-fill copies (the ignore-src predicate; no memory request)
          const uint64_t src = ptx::mad_wide_u32(uint32_t(max(src_row, 0)), uint32_t(cin_p) * 2u, a_src[it] + 2u * c0);
          const uint32_t stage = 2u * uint32_t(ld_slot * T::A_STAGE + g * T::A_SUB);
#pragma unroll
          for (int q = 0; q < T::A_SEG; ++q) {
            const uint32_t dst = (WG ? a_sm[it] ^ (16u * q) : a_sm[it] + 16u * q) + stage;
            ptx::cp_async16_row(dst, reinterpret_cast<const void*>(src + 16u * q), src_row);
          }
        }
        if constexpr (!TMA_B) {
          __half* dB = stB + g * T::B_SUB;
          const int64_t wofs = int64_t(k) * w_kstride + c0;
#pragma unroll
          for (int it = 0; it < T::B_ITERS; ++it) {
            if (T::B_ITEMS % T::kThreads != 0 && !b_on[it]) continue;
#pragma unroll
            for (int q = 0; q < T::B_SEG; ++q) cp_async16(dB + b_dst[it] + q * 8, b_src[it] + wofs + q * 8);
          }
        }
      }
      // advance
      if (G > 1) {
        ld_kk += G;
      } else if (++ld_c == chunks) {
        ld_c = 0;
        ++ld_kk;
      }
      ld_slot = ld_slot + 1 == STAGES ? 0 : ld_slot + 1;
    };

    AccT acc[T::MT][T::NT][4];
#pragma unroll
    for (int i = 0; i < T::MT; ++i)
#pragma unroll
      for (int j = 0; j < T::NT; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[i][j][q] = AccT(0);

    // Loads run LOOK steps ahead. wgmma tiles with three or more stages keep one step's MMAs in
    // flight while the next step waits for its data: a stage is refilled two steps after its MMAs
    // were issued, when wgmma.wait_group 1 of the step in between has retired them in every warpgroup.
    constexpr bool kAsyncMma = WG && STAGES >= 3;
    constexpr int LOOK = kAsyncMma ? STAGES - 2 : STAGES - 1;
#pragma unroll
    for (int s = 0; s < LOOK; ++s) {
      if (s < nsteps) load_next();
      cp_async_commit();
    }

    uint32_t slot = gstep % STAGES;
    uint32_t phase = (gstep / STAGES) & 1u;
    int grp_left = nact;  // G > 1: offsets not yet consumed
    for (int step = 0; step < nsteps; ++step) {
      cp_async_wait<LOOK - 1>();
      // wgmma reads shared memory through the async proxy: order this thread's gathers and zero
      // stores before it (the barrier below then publishes them to the warpgroup)
      if constexpr (WG) fence_proxy_async();
      if constexpr (TMA_B) mbar_wait(&sBar[slot], phase);
      __syncthreads();
      if (step + LOOK < nsteps) load_next();
      cp_async_commit();

      const int nsub = G > 1 ? (grp_left < G ? grp_left : G) : 1;
      grp_left -= G;
      if constexpr (WG) wg_fence();
#pragma unroll
      for (int g = 0; g < G; ++g) {
        if (g >= nsub) break;
        const __half* tA = sA + slot * T::A_STAGE + g * T::A_SUB;
        const __half* tB = sB + slot * T::B_STAGE + g * T::B_SUB;
        if constexpr (WG) {
          // warpgroup j: rows 64j..64j+63 x BN += A(64 x 16) * B(BN x 16)^T per 16 channels (B shared by
          // the warpgroups); a 16-channel step moves the descriptors' start by 32 bytes inside the
          // swizzled 128-byte rows
          const uint64_t da = wg_desc<BK>(tA + (warp >> 2) * 64 * T::LDS), db = wg_desc<BK>(tB);
#pragma unroll
          for (int kk = 0; kk < BK / 16; ++kk) {
            if constexpr (MODE == kI8 && BN == 64)
              wgmma_m64n64k32_s8(acc[0], da + 2 * kk, db + 2 * kk);
            else if constexpr (MODE == kI8)
              wgmma_m64n128k32_s8(acc[0], da + 2 * kk, db + 2 * kk);
            else if constexpr (BN == 64)
              wgmma_m64n64k16(acc[0], da + 2 * kk, db + 2 * kk);
            else
              wgmma_m64n128k16(acc[0], da + 2 * kk, db + 2 * kk);
          }
        } else {
          if constexpr (BK == 8) {
            // 16 int8 channels: one m16n8k16 step (A rows and B rows of 16 bytes, ldmatrix .x2)
            uint32_t af[T::MT][2];
            uint32_t bf[T::NT];
#pragma unroll
            for (int i = 0; i < T::MT; ++i) ldmatrix_x2(af[i], tA + (wm * T::WM + i * 16 + (lane & 15)) * T::LDS);
#pragma unroll
            for (int j = 0; j < T::NT / 2; ++j) {
              uint32_t r[2];
              ldmatrix_x2(r, tB + (wn * T::WN + j * 16 + (lane & 15)) * T::LDS);
              bf[2 * j] = r[0];
              bf[2 * j + 1] = r[1];
            }
#pragma unroll
            for (int i = 0; i < T::MT; ++i)
#pragma unroll
              for (int j = 0; j < T::NT; ++j) {
                if constexpr (MODE == kI8) mma_16816_s8(acc[i][j], af[i], bf[j]);
              }
          }
#pragma unroll
          for (int kk = 0; kk < BK / 16; ++kk) {
            uint32_t af[T::MT][4];
            uint32_t bf[T::NT][2];
            const uint32_t st_a = lm_a + 2u * uint32_t(slot * T::A_STAGE + g * T::A_SUB);
            const uint32_t st_b = lm_b + 2u * uint32_t(slot * T::B_STAGE + g * T::B_SUB);
#pragma unroll
            for (int i = 0; i < T::MT; ++i) ldmatrix_x4_at(af[i], st_a + 2u * (i * 16 * T::LDS + kk * 16));
#pragma unroll
            for (int j = 0; j < T::NT / 2; ++j) {
              uint32_t r[4];
              ldmatrix_x4_at(r, st_b + 2u * (j * 16 * T::LDS + kk * 16));
              bf[2 * j][0] = r[0];
              bf[2 * j][1] = r[1];
              bf[2 * j + 1][0] = r[2];
              bf[2 * j + 1][1] = r[3];
            }
            if constexpr (MODE == kI8) {
#pragma unroll
              for (int i = 0; i < T::MT; ++i)
#pragma unroll
                for (int j = 0; j < T::NT; ++j) mma_16832_s8(acc[i][j], af[i], bf[j][0], bf[j][1]);
            } else {
#pragma unroll
              for (int i = 0; i < T::MT; ++i)
#pragma unroll
                for (int j = 0; j < T::NT; ++j) mma_16816(acc[i][j], af[i], bf[j][0], bf[j][1]);
            }
          }
        }
      }
      if constexpr (kAsyncMma) {  // the previous step's MMAs are done; this step's run on
        wg_commit();
        wg_wait<1>();
      } else if constexpr (WG) {  // the step's MMAs finish before the next barrier frees their stage
        wg_commit();
        wg_wait<0>();
        wg_fence_acc(acc[0]);
      }
      if (++slot == STAGES) {
        slot = 0;
        phase ^= 1u;
      }
    }
    if constexpr (kAsyncMma) {
      wg_wait<0>();
      wg_fence_acc(acc[0]);
    }
    cp_async_wait<0>();
    gstep += uint32_t(nsteps);
    if (last_tile && a.pdl_late) grid_launch_dependents();
    __syncthreads();  // every warp is done with the pipeline buffers: reuse them for staging

    if constexpr (SPLIT > 1) {
      // partial sums -> shared memory; the cluster meets; CTA z reduces rows [z*BM/S, (z+1)*BM/S)
      AccT* sRed = reinterpret_cast<AccT*>(smem);
#pragma unroll
      for (int i = 0; i < T::MT; ++i)
#pragma unroll
        for (int j = 0; j < T::NT; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int rl = wm * T::WM + i * 16 + (lane >> 2) + h * 8;
            const int cl = wn * T::WN + j * 8 + (lane & 3) * 2;
            if constexpr (MODE == kI8)
              *reinterpret_cast<int2*>(sRed + rl * T::LDR + cl) = make_int2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
            else
              *reinterpret_cast<float2*>(sRed + rl * T::LDR + cl) = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
          }
      cluster_sync();
      const uint32_t z = cluster_rank();
      constexpr int ROWS = BM / SPLIT;
      if constexpr (MODE == kI8) {
        // int32 sums over the cluster, then the unsplit tiles' quantization-aware epilogue (both passes in
        // one: q_conv_value, the activation, q_store8), the last N tile zero-filling the row padding
        const QEpilogue qe = *a.q;
        const int col_end = blockIdx.y + 1 == gridDim.y ? q_pad_end(qe) : n0 + BN;
        const int per_row = (col_end - n0) / 8;
        with_q_store_form<true>(a, qe, [&](auto form) {
          for (int i = tid; i < ROWS * per_row; i += T::kThreads) {
            const int rl = int(z) * ROWS + i / per_row, c8 = (i % per_row) * 8;
            const int64_t row = m0 + rl;
            const int col = n0 + c8;
            if (row >= n) continue;
            float v[8];
            if (col < a.cout) {
              int sum[8];
              peer_sum8<SPLIT>(sRed + rl * T::LDR + c8, sum);
              // the unsplit tiles' per-column value, written out as there: one helper for both changed the int8
              // tiles' register allocation (benchmarks.md, session 29)
#pragma unroll
              for (int q = 0; q < 8; ++q) {
                const int cq = col + q;
                const float mul = cq < a.cout_w ? qe.mult[cq] : 0.f;
                const float b = cq < a.cout_w ? a.bias[cq] : 0.f;
                v[q] = apply_act(q_conv_value(sum[q], mul, b), a.act, a.alpha);
              }
            } else {
#pragma unroll
              for (int q = 0; q < 8; ++q) v[q] = 0.f;
            }
            q_store8<decltype(form)::value>(a, qe, row, col, v);
          }
        });
      } else {
        constexpr int CPRC = BN / 8;
        const __half* __restrict__ res = static_cast<const __half*>(a.residual);
        __half* y = static_cast<__half*>(a.y);
        for (int i = tid; i < ROWS * CPRC; i += T::kThreads) {
          const int rl = int(z) * ROWS + i / CPRC, c8 = (i % CPRC) * 8;
          const int64_t row = m0 + rl;
          const int col = n0 + c8;
          if (row >= n || col >= a.cout_p) continue;
          float v[8];
          peer_sum8<SPLIT>(sRed + rl * T::LDR + c8, v);
          // store8_residual_relu's roundings, written out: calling it loads the residual after the math, which
          // the split tiles pay for in registers and time (benchmarks.md, session 29)
          alignas(16) __half rr[8];
          if (res) *reinterpret_cast<uint4*>(rr) = *reinterpret_cast<const uint4*>(res + row * a.cout_p + col);
          alignas(16) __half out[8];
#pragma unroll
          for (int q = 0; q < 8; ++q) {
            const int cq = col + q;
            float f = cq < a.cout ? __half2float(__float2half_rn(apply_act(v[q] + a.bias[cq], a.act, a.alpha))) : 0.f;
            if (res) f = __half2float(__float2half_rn(f + __half2float(rr[q])));
            if (a.relu_after) f = f > 0.f ? f : 0.f;
            out[q] = __float2half_rn(f);
          }
          *reinterpret_cast<uint4*>(y + row * a.cout_p + col) = *reinterpret_cast<const uint4*>(out);
        }
      }
      cluster_sync();  // peers are done reading this CTA's partial sums
    } else if constexpr (MODE != kF16) {
      // Quantization-aware epilogue. Pass 1: fragments -> float act(...) in shared memory.
      const QEpilogue qe = *a.q;
      float* sRed = reinterpret_cast<float*>(smem);
#pragma unroll
      for (int i = 0; i < T::MT; ++i)
#pragma unroll
        for (int j = 0; j < T::NT; ++j) {
          const int cl = wn * T::WN + j * 8 + (lane & 3) * 2;
          const int col = n0 + cl;
          const float b0 = col < a.cout_w ? a.bias[col] : 0.f;
          const float b1 = col + 1 < a.cout_w ? a.bias[col + 1] : 0.f;
          float mul0 = 0.f, mul1 = 0.f;
          if constexpr (MODE == kI8) {
            mul0 = col < a.cout_w ? qe.mult[col] : 0.f;
            mul1 = col + 1 < a.cout_w ? qe.mult[col + 1] : 0.f;
          }
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int rl = wm * T::WM + i * 16 + (lane >> 2) + h * 8;
            const float y0 = q_conv_value(acc[i][j][2 * h], mul0, b0);
            const float y1 = q_conv_value(acc[i][j][2 * h + 1], mul1, b1);
            *reinterpret_cast<float2*>(sRed + rl * T::LDR + cl) =
                make_float2(apply_act(y0, a.act, a.alpha), apply_act(y1, a.act, a.alpha));
          }
        }
      __syncthreads();
      // Pass 2: 8 columns per item; the last N tile also zero-fills the row padding up to the stride
      // (of y, and of the second output y2 when there is one).
      const int col_end = blockIdx.y + 1 == gridDim.y ? q_pad_end(qe) : n0 + BN;
      const int per_row = (col_end - n0) / 8;
      with_q_store_form<MODE == kI8>(a, qe, [&](auto form) {
        for (int i = tid; i < BM * per_row; i += T::kThreads) {
          const int rl = i / per_row, c8 = (i % per_row) * 8;
          const int64_t row = m0 + rl;
          const int col = n0 + c8;
          if (row >= n) continue;
          float v[8];
          if (col < a.cout) {
            const float4 lo = *reinterpret_cast<const float4*>(sRed + rl * T::LDR + c8);
            const float4 hi = *reinterpret_cast<const float4*>(sRed + rl * T::LDR + c8 + 4);
            v[0] = lo.x;
            v[1] = lo.y;
            v[2] = lo.z;
            v[3] = lo.w;
            v[4] = hi.x;
            v[5] = hi.y;
            v[6] = hi.z;
            v[7] = hi.w;
          } else {
#pragma unroll
            for (int q = 0; q < 8; ++q) v[q] = 0.f;
          }
          q_store8<decltype(form)::value>(a, qe, row, col, v);
        }
      });
    } else {
      // Epilogue pass 1: fragments -> half(act(acc + bias)) in shared memory (0 beyond cout).
#pragma unroll
      for (int i = 0; i < T::MT; ++i) {
#pragma unroll
        for (int j = 0; j < T::NT; ++j) {
          const int cl = wn * T::WN + j * 8 + (lane & 3) * 2;
          const int col = n0 + cl;
          const float b0 = col < a.cout_w ? a.bias[col] : 0.f;
          const float b1 = col + 1 < a.cout_w ? a.bias[col + 1] : 0.f;
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int rl = wm * T::WM + i * 16 + (lane >> 2) + h * 8;
            const float v0 = col < a.cout ? apply_act(acc[i][j][2 * h] + b0, a.act, a.alpha) : 0.f;
            const float v1 = col + 1 < a.cout ? apply_act(acc[i][j][2 * h + 1] + b1, a.act, a.alpha) : 0.f;
            *reinterpret_cast<__half2*>(sC + rl * T::LDC + cl) = __floats2half2_rn(v0, v1);
          }
        }
      }
      __syncthreads();
      // Pass 2: 16-byte rows out, with the residual add (rounded like an fp16 Add) and the ReLU.
      const __half* __restrict__ res = static_cast<const __half*>(a.residual);
      __half* y = static_cast<__half*>(a.y);
      constexpr int CPRC = BN / 8;
      for (int i = tid; i < BM * CPRC; i += T::kThreads) {
        const int rl = i / CPRC, c8 = (i % CPRC) * 8;
        const int64_t row = m0 + rl;
        const int col = n0 + c8;
        if (row >= n || col >= a.cout_p) continue;
        alignas(16) __half v[8];
        *reinterpret_cast<uint4*>(v) = *reinterpret_cast<const uint4*>(sC + rl * T::LDC + c8);
        store8_residual_relu(y, res, row * a.cout_p + col, a.relu_after, v);
      }
    }
  }
  // Blocks without a tile get here directly: they too let the next kernel launch, and wait, so that
  // this grid completes only after its predecessor (the next kernel relies on that).
  grid_launch_dependents();
  grid_dependency_wait();
}

/// A compiled tile configuration. What depends on the GPU (blocks per SM, ...) is in the per-device
/// launch limits of implicit_gemm.cu, not here: the registry is shared by every device of the process.
struct Instance {
  IgemmConfig cfg;
  void (*kernel)(const ConvArgs);
  size_t smem;
  int threads;
};

/// One compiled tile configuration; its name is derived from these arguments when it is registered
/// (igemm_config_name), so no instance carries a hand-typed name.
template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES, bool TMA_B, int G = 1, int MINB = 1,
          int SPLIT = 1, int MODE = kF16, bool WG = false>
inline Instance make_instance() {
  using T = Tile<BM, BN, BK, WARPS_M, WARPS_N, STAGES, G, WG>;
  static_assert(SPLIT == 1 || BM % SPLIT == 0, "rows must split evenly over the cluster");
  return Instance{{BM, BN, BK, WARPS_M, WARPS_N, STAGES, TMA_B, G, SPLIT, MODE, nullptr, WG, MINB},
                  &igemm_kernel<BM, BN, BK, WARPS_M, WARPS_N, STAGES, TMA_B, G, MINB, SPLIT, MODE, WG>,
                  T::kSmem,
                  T::kThreads};
}

// Instance lists, one per translation unit so that nvcc compiles them in parallel; registered in
// this order (implicit_gemm.cu), which is the order of ties in the heuristic and the tuner.
void add_instances_fp16_n16(std::vector<Instance>& v);
void add_instances_fp16_n32(std::vector<Instance>& v);
void add_instances_fp16_n64(std::vector<Instance>& v);
void add_instances_fp16_n128(std::vector<Instance>& v);
void add_instances_fp16_split(std::vector<Instance>& v);
void add_instances_fp16_latency(std::vector<Instance>& v);
void add_instances_int8_fp16_operands(std::vector<Instance>& v);  // kF16Q (INT8 engines)
void add_instances_int8(std::vector<Instance>& v);                // kI8
void add_instances_fp16_wgmma(std::vector<Instance>& v);          // wgmma (sm_90a object, only when built for sm_90)
void add_instances_fp16_wgmma_ws(std::vector<Instance>& v);       // warp-specialised wgmma (same object)
void add_instances_int8_wgmma(std::vector<Instance>& v);          // kI8 and kF16Q wgmma (same object)

}  // namespace igemm
}  // namespace scn::cuda
