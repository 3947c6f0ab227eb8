// Warp-specialised implicit GEMM on wgmma (sm_90a, fp16, 64/128 output channels; name suffix "ws").
//
// The wgmma tiles of implicit_gemm.cuh run every warp through the same per-step chain: wait for the
// gathers, a block barrier, issue the next gathers, issue the MMAs. Here the two jobs live in
// different warps and meet only on mbarriers:
//
//   warpgroup 0 (producer): for each tile of BM rows (persistent loop), each active offset, each
//     64-channel chunk: wait until the ring slot is free ("empty" mbarrier), TMA the weight slice
//     (expect_tx on the slot's "full" mbarrier), gather the BM input rows with cp.async (rows
//     without a neighbour: zero-fill copies, no memory request), and lets the hardware arrive on
//     the slot's "full" mbarrier when its copies have landed (cp.async.mbarrier.arrive.noinc), so
//     it never waits for its own data, only for free slots: every slot the consumers do not hold
//     is in flight.
//   warpgroups 1..C (consumers, 64 rows each): wait "full", issue the step's wgmma, wait for them
//     and release the slot ("empty"); after a tile's last step the epilogue
//     (bias, activation, residual, ReLU) runs from the accumulators while the producer already
//     gathers the next tile.
//
// A CTA with several tiles (large frames, batches) changes tiles with the producer staging the next
// tile's map — a chain of dependent global loads that leaves the ring empty, then the consumers idle.
// MAP_AHEAD tiles fetch that map one tile ahead instead: one bulk copy of the next tile's entries (they
// are contiguous) into a second shared buffer, issued as a tile's copies start, so the change of tiles
// only rearranges shared memory (one more map's worth of shared memory; the tuner weighs that).
//
// Summation order per output element: offsets ascending, channels ascending, one k16 block at a
// time into fp32 — the order of every non-split tile, so the output is bitwise theirs.
#pragma once

#include "backends/cuda/implicit_gemm.cuh"

namespace scn::cuda::igemm {

/// Map entries each producer thread loads before it stores any (independent loads in flight). 6 is the most
/// that leaves the 64-channel tiles at two blocks per SM (76 registers; 8 takes 86, 14 takes 95).
inline constexpr int kMapBatch = 6;

/// A barrier of the producer warpgroup alone (id 1; 0 is __syncthreads).
__device__ __forceinline__ void producer_barrier() { ptx::named_barrier_sync(1, 128); }

template <int BM, int BN, int STAGES, bool MAP_AHEAD>
struct WsTile {
  static constexpr int kConsumers = BM / 64;
  static constexpr int kThreads = 128 * (kConsumers + 1);
  static constexpr int BK = 64;            // one 128-byte swizzled row per operand row and step
  static constexpr int A_STAGE = BM * BK;  // halves
  static constexpr int B_STAGE = BN * BK;  // halves
  static constexpr uint32_t kBSliceBytes = uint32_t(B_STAGE * 2);
  static constexpr size_t kPipeBytes = size_t(STAGES) * (A_STAGE + B_STAGE) * 2;
  static constexpr int RI = BM / 16;  // rows per producer thread: g, g + 16, ..., g + 16 (RI - 1)
  // then the producer's tile map [kMaxMapK][16][RI], (MAP_AHEAD) the next tile's map entries as stored
  // [BM][K], full[STAGES], empty[STAGES], (MAP_AHEAD) the next map's barrier, info[STAGES], masks[2][4],
  // the block's bias[BN]
  static constexpr size_t kMapOff = kPipeBytes;
  static constexpr size_t kMapBytes = size_t(kMaxMapK) * BM * 4;
  static constexpr size_t kRawOff = kMapOff + kMapBytes;
  static constexpr size_t kBarOff = kRawOff + (MAP_AHEAD ? kMapBytes : 0);
  static constexpr size_t kSmem = kBarOff + STAGES * 16 + (MAP_AHEAD ? 8 : 0) + STAGES * 4 + 8 * 4 + BN * 4 + 1024;
  static_assert(BM == 64 || BM == 128, "one or two consumer warpgroups");
  static_assert(BN == 64 || BN == 128, "wgmma N of 64 or 128");
  static_assert(STAGES >= 3, "at least two steps in flight while the consumers hold one slot");
};

template <int BM, int BN, int STAGES, bool MAP_AHEAD>
__global__ void __launch_bounds__(WsTile<BM, BN, STAGES, MAP_AHEAD>::kThreads, 1) igemm_ws_kernel(const ConvArgs a) {
  using T = WsTile<BM, BN, STAGES, MAP_AHEAD>;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  uint8_t* smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
  __half* sA = reinterpret_cast<__half*>(smem);
  __half* sB = sA + STAGES * T::A_STAGE;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + T::kBarOff);
  uint64_t* empty = full + STAGES;
  uint64_t* map_bar = empty + STAGES;                                 // MAP_AHEAD: the next tile's entries landed
  int* info = reinterpret_cast<int*>(map_bar + (MAP_AHEAD ? 1 : 0));  // 1: the slot's step is its tile's last
  uint32_t* wmask = reinterpret_cast<uint32_t*>(info + STAGES);       // [2][4]: the producer warps' offset masks
  float* bias_s = reinterpret_cast<float*>(wmask + 8);                // bias[n0 .. n0 + BN), 0 beyond cout_w
  // the producer's tile map: entry (k, row g + 16 i) at [(k * 16 + g) * RI + i], in 16-byte units of x (-1: none)
  int* map_s = reinterpret_cast<int*>(smem + T::kMapOff);
  // MAP_AHEAD: the next tile's map entries, [row][k] as the kernel map stores them
  int* map_next = reinterpret_cast<int*>(smem + T::kRawOff);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t n = rows_of(a.n_out, a.cap_out);
  const int64_t ntiles = (n + BM - 1) / BM;
  const int K = a.K;
  const int chunks = a.cin_p / T::BK;
  const int n0 = blockIdx.y * BN;

  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 128 + 1);             // every producer thread + the TMA arrival
      mbar_init(&empty[s], 4 * T::kConsumers);  // lane 0 of every consumer warp
    }
    if constexpr (MAP_AHEAD) mbar_init(map_bar, 1);  // thread 0's expect_tx
    mbar_fence_init();
  }
  // the bias is a weight, not an output of the previous kernel: read before grid_dependency_wait. Kept in
  // shared memory because the epilogue's global loads would each wait behind the previous column's store.
  if (tid < BN) bias_s[tid] = n0 + tid < a.cout_w ? a.bias[n0 + tid] : 0.f;
  __syncthreads();

  if (warp < 4) {
    // ---------------- producer ----------------
    const __half* __restrict__ x = static_cast<const __half*>(a.x);
    const __half* __restrict__ wt = static_cast<const __half*>(a.w_tma);
    const int ptid = tid;  // 0..127
    // Copy assignment: eight lanes per 128-byte row (lane & 7 = its 16-byte chunk), so that one warp
    // instruction moves four whole rows (whole sectors); this thread's rows are g, g + 16, g + 32, ...
    const int ch = ptid & 7, g = ptid >> 3;
    // map staging: this thread's first entry of a tile is (row0, k0); each next one is 128 entries on
    const int row0 = ptid / K, k0 = ptid - row0 * K, step_row = 128 / K, step_k = 128 - step_row * K;
    const int units = a.cin_p / 8;  // 16-byte units per input row
    uint32_t slot = 0, phase = 0;   // ring position of the next step, and its round's parity
    bool wrapped = false;           // every slot has been filled once: wait until the consumers free it
    int parity = 0;
    bool ahead = false;      // MAP_AHEAD: this tile's entries are in map_next (a bulk copy on map_bar)
    uint32_t map_phase = 0;  // map_bar's parity for the next copy
    // map_late: the map was written by a kernel this grid may overlap: read no entry before the wait
    bool waited = a.map_late;
    if (waited) grid_dependency_wait();
    for (int64_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
      const int64_t m0 = tile * BM;
      if (tile + gridDim.x >= ntiles && !a.pdl_late) grid_launch_dependents();
      // the tile's map, transposed into map_s (the entries of a tile are contiguous: coalesced reads) as
      // row offsets in 16-byte units, which keep an int for inputs below 32 GiB, and the offsets any row of
      // the tile uses
      producer_barrier();  // every producer thread has issued the previous tile's copies (map_s is free)
      uint32_t mine = 0;
      const int total = BM * K;
      int row = row0, mk = k0;  // this thread's next entry: row, offset
      // the entry (row, mk) into map_s, then (row, mk) advanced by 128 entries without a division
      auto place = [&](int e) {
        map_s[(mk * 16 + (row & 15)) * T::RI + (row >> 4)] = e >= 0 ? e * units : -1;
        if (e >= 0) mine |= 1u << mk;
        row += step_row;
        mk += step_k;
        if (mk >= K) {
          mk -= K;
          ++row;
        }
      };
      if (MAP_AHEAD && ahead) {
        // fetched while the previous tile ran: rearranged from shared memory (a full tile: every entry exists)
        mbar_wait(map_bar, map_phase);
        map_phase ^= 1u;
        for (int i = ptid; i < total; i += 128) place(map_next[i]);
      } else {
        // kMapBatch loads in flight per thread (one round trip per batch, not one per entry)
        const int64_t base = m0 * K, limit = n * K;
        for (int i0 = ptid; i0 < total; i0 += 128 * kMapBatch) {
          int ent[kMapBatch];
#pragma unroll
          for (int b = 0; b < kMapBatch; ++b) {
            const int i = i0 + 128 * b;
            ent[b] = i < total && base + i < limit ? __ldg(a.out_in + base + i) : -1;
          }
#pragma unroll
          for (int b = 0; b < kMapBatch; ++b)
            if (i0 + 128 * b < total) place(ent[b]);  // past the end: the tile's last entries, nothing follows
        }
      }
      mine = __reduce_or_sync(0xffffffffu, mine);
      if (lane == 0) wmask[parity * 4 + warp] = mine;
      producer_barrier();
      uint32_t mask = wmask[parity * 4] | wmask[parity * 4 + 1] | wmask[parity * 4 + 2] | wmask[parity * 4 + 3];
      parity ^= 1;
      if (mask == 0) mask = 1u;  // a tile without entries still runs one (all-zero) step: its rows get the bias
      if (!waited) {
        grid_dependency_wait();  // the first tile's map is read: now the inputs
        waited = true;
      }
      if constexpr (MAP_AHEAD) {
        // the next tile's entries, one bulk copy (after the wait: the map may come from the previous kernel;
        // after the barrier above: every producer thread is done reading map_next). A last, partial tile
        // is staged from global memory as before (its entries end inside a 16-byte unit).
        const int64_t next = tile + gridDim.x;
        ahead = next < ntiles && (next + 1) * BM <= n;
        if (ahead && ptid == 0) {
          fence_proxy_async();  // the generic reads of map_next before the bulk copy rewrites it
          const uint32_t bytes = uint32_t(BM * K * 4);
          expect_tx(map_bar, bytes);
          tma_load_1d(map_next, a.out_in + next * BM * K, bytes, map_bar);
        }
      }
      while (mask) {
        const int k = __ffs(mask) - 1;
        mask &= mask - 1u;
        for (int c = 0; c < chunks; ++c) {
          if (wrapped) mbar_wait(&empty[slot], phase ^ 1u);
          if (ptid == 0) {
            info[slot] = mask == 0u && c + 1 == chunks;
            expect_tx(&full[slot], T::kBSliceBytes);
            tma_load_1d(sB + slot * T::B_STAGE, wt + ((int64_t(k) * chunks + c) * gridDim.y + blockIdx.y) * T::B_STAGE,
                        T::kBSliceBytes, &full[slot]);
          }
          // rows g + 16 i share the swizzle (r % 8 = g % 8): chunk ch of each lands at one offset, 2 KiB apart
          __half* dA = sA + slot * T::A_STAGE + g * T::BK + ((ch ^ (g & 7)) << 3);
          // each copy's source: one wide multiply-add of the 32-bit row offset onto a 64-bit base (the
          // producer's instructions per step set the pace of the ring)
          const uint64_t xc = reinterpret_cast<uint64_t>(reinterpret_cast<const uint4*>(x) + c * (T::BK / 8) + ch);
          int e[T::RI];
#pragma unroll
          for (int i = 0; i < T::RI; i += 4)
            *reinterpret_cast<int4*>(e + i) = *reinterpret_cast<const int4*>(map_s + (k * 16 + g) * T::RI + i);
#pragma unroll
          for (int i = 0; i < T::RI; ++i)  // no neighbour: a zero-fill copy (no memory request)
            ptx::cp_async16_row(smem_addr(dA + i * 16 * T::BK),
                                reinterpret_cast<const void*>(ptx::mad_wide_u32(uint32_t(max(e[i], 0)), 16u, xc)),
                                e[i]);
          cp_async_arrive_noinc(&full[slot]);  // arrives once this thread's copies have landed
          if (++slot == STAGES) {
            slot = 0;
            phase ^= 1u;
            wrapped = true;
          }
        }
      }
    }
    cp_async_wait<0>();
  } else {
    // ---------------- consumers ----------------
    const int cw = warp - 4;  // consumer warp 0 .. 4C-1
    const int wg = cw >> 2;   // consumer warpgroup: rows 64 wg .. 64 wg + 63 of the tile
    grid_dependency_wait();   // the residual and y belong to earlier kernels
    uint32_t slot = 0, phase = 0;
    // the stages' descriptors differ only in the start address field (shared memory below 256 KiB)
    const uint64_t da0 = wg_desc<T::BK>(sA + wg * 64 * T::BK), db0 = wg_desc<T::BK>(sB);
    for (int64_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
      const int64_t m0 = tile * BM;
      const bool last_tile = tile + gridDim.x >= ntiles;
      float acc[BN / 8][4];
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[j][q] = 0.f;
      for (;;) {
        mbar_wait(&full[slot], phase);
        const bool last = info[slot] != 0;
        // the gathers are cp.async writes (generic proxy) and wgmma reads through the async proxy:
        // order what the acquire on "full" made visible before the MMAs read it
        fence_proxy_async();
        const uint64_t da = da0 + slot * uint32_t(T::A_STAGE * 2 / 16), db = db0 + slot * uint32_t(T::B_STAGE * 2 / 16);
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < T::BK / 16; ++kk) {
          if constexpr (BN == 64)
            wgmma_m64n64k16(acc, da + 2 * kk, db + 2 * kk);
          else
            wgmma_m64n128k16(acc, da + 2 * kk, db + 2 * kk);
        }
        wg_commit();
        // the slot is released as soon as its MMAs are done: the producer runs STAGES - 1 steps ahead
        // (a wgmma group kept in flight across steps would hold a second slot and leave it one step less)
        wg_wait<0>();
        if (lane == 0) mbar_arrive(&empty[slot]);
        if (++slot == STAGES) {
          slot = 0;
          phase ^= 1u;
        }
        if (last) break;
      }
      wg_fence_acc(acc);
      if (last_tile && a.pdl_late) grid_launch_dependents();

      // epilogue from the accumulators: rows 16 (warp in group) + lane / 4 (+ 8), two columns per n8 block.
      // The four lanes of a row regroup their pairs (a 4 x 4 transpose in two shuffle rounds), so that lane q
      // loads and stores whole 16-byte chunks, those of the n8 blocks 4 g + q: a quarter of the memory
      // instructions, which otherwise queue behind the producer's gathers of the next tile.
      const __half* __restrict__ res = static_cast<const __half*>(a.residual);
      __half* y = static_cast<__half*>(a.y);
      const int q = lane & 3;
      constexpr int G4 = BN / 32;  // groups of four n8 blocks
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t row = m0 + wg * 64 + (cw & 3) * 16 + (lane >> 2) + h * 8;
        const bool live = row < n;  // a lane past the last row still takes part in the shuffles
#pragma unroll
        for (int g = 0; g < G4; ++g) {
          // e[i]: half(act(acc + bias)) of n8 block 4 g + i, columns 2 q and 2 q + 1 (half2 bits); after the
          // exchange e[s]: block 4 g + q, columns 2 s and 2 s + 1
          uint32_t e[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int j = 4 * g + i, col = n0 + j * 8 + q * 2;
            const float b0 = bias_s[col - n0], b1 = bias_s[col - n0 + 1];
            const float v0 = col < a.cout ? apply_act(acc[j][2 * h] + b0, a.act, a.alpha) : 0.f;
            const float v1 = col + 1 < a.cout ? apply_act(acc[j][2 * h + 1] + b1, a.act, a.alpha) : 0.f;
            const __half2 o = __floats2half2_rn(v0, v1);  // the fp16 conv output
            e[i] = *reinterpret_cast<const uint32_t*>(&o);
          }
          // round b (lane bit b, index bit b): of each pair of elements whose indices differ in bit b, a lane
          // keeps the one whose bit b equals its own and trades the other with lane q ^ b
#pragma unroll
          for (int b = 1; b <= 2; b <<= 1)
#pragma unroll
            for (int p = 0; p < 2; ++p) {
              const int lo = b == 1 ? 2 * p : p, hi = lo | b;  // the pair's indices, bit b clear and set
              const uint32_t got = __shfl_xor_sync(0xffffffffu, (q & b) ? e[lo] : e[hi], b);
              if (q & b)
                e[lo] = got;
              else
                e[hi] = got;
            }
          const int col = n0 + (4 * g + q) * 8;
          if (!live || col >= a.cout_p) continue;
          alignas(16) __half v[8];
          *reinterpret_cast<uint4*>(v) = make_uint4(e[0], e[1], e[2], e[3]);
          // then the fp16 Add and the ReLU, rounded as an unfused Add and Relu (the tiles' and osplit's helper)
          store8_residual_relu(y, res, row * a.cout_p + col, a.relu_after, v);
        }
      }
    }
  }
  // Blocks without a tile get here directly: they too let the next kernel launch, and wait, so that
  // this grid completes only after its predecessor (the next kernel relies on that).
  grid_launch_dependents();
  grid_dependency_wait();
}

/// The registry entry of a warp-specialised tile (implicit_gemm.cuh Instance; name from its fields).
template <int BM, int BN, int STAGES, bool MAP_AHEAD = false>
inline Instance make_ws_instance() {
  using T = WsTile<BM, BN, STAGES, MAP_AHEAD>;
  IgemmConfig c{BM, BN, T::BK, 4 * (T::kConsumers + 1), 1, STAGES, true, 1, 1, kF16, nullptr, true, 1};
  c.ws = true;
  c.map_ahead = MAP_AHEAD;
  return Instance{c, &igemm_ws_kernel<BM, BN, STAGES, MAP_AHEAD>, T::kSmem, T::kThreads};
}

}  // namespace scn::cuda::igemm
