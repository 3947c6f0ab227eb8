// Warp-specialised implicit GEMM with resident weights, split over kernel offsets in a cluster
// (sm_90a, fp16, 64/128 output channels, up to 128 input channels; name suffix "rw").
//
// Why: a conv of the 128-channel level re-reads every weight slice once per row tile (the weights are
// most of its L2 traffic: docs/cuda_backend.md, "Where the time goes"). Here a cluster of SPLIT CTAs
// shares each 64-row tile and CTA z sums the offsets k with k % SPLIT == z, as the split tiles do; with
// SPLIT = 8 the weights of a CTA's offsets (at most ceil(27 / 8) = 4 offsets x 2 chunks of 64 input
// channels) fit in its shared memory, so each CTA loads them once (TMA, before it waits for the
// previous kernel) and keeps them for every tile it runs.
//
//   warpgroup 0 (producer): per tile, the map entries of this CTA's offsets, then for each active
//     offset and 64-channel chunk a ring slot of 64 gathered rows (cp.async; rows without a neighbour
//     are zero-fill copies, no memory request); the hardware arrives on the slot's "full" mbarrier when
//     the copies have landed (cp.async.mbarrier.arrive.noinc).
//   warpgroup 1 (consumer, 64 rows): wgmma from the slot and the resident weight slice, then releases
//     the slot ("empty"). After the tile: its partial sums into shared memory, a release to every CTA
//     of the cluster ("ready"); then the rows [z * 64 / SPLIT, (z + 1) * 64 / SPLIT) this CTA finishes:
//     the partial sums of every CTA read over distributed shared memory and added in rank order,
//     ((0 + p0) + p1) + ..., the split tiles' reduction, bias / activation / residual / ReLU, 16-byte
//     stores; then "freed" to every CTA (its staged partial sums of this tile have been read).
//
// Summation order per output element: within CTA z its offsets ascending, channels ascending, one k16
// block at a time into fp32; then the CTAs in rank order - the order of every split tile of the same
// SPLIT, so the output is bitwise theirs (WgmmaTilesMatchMmaSyncBitwise).
#pragma once

#include "backends/cuda/igemm_warp_specialized.cuh"

namespace scn::cuda::igemm {

/// A barrier of the consumer warpgroup alone (id 2; 1 is the producer's).
__device__ __forceinline__ void rw_consumer_barrier() { ptx::named_barrier_sync(2, 128); }

template <int BN, int STAGES, int SPLIT>
struct RwTile {
  static constexpr int BM = 64;
  static constexpr int BK = 64;  // one 128-byte swizzled row per operand row and step
  static constexpr int kThreads = 256;
  static constexpr int A_STAGE = BM * BK;  // halves
  static constexpr int B_SLICE = BN * BK;  // halves
  static constexpr uint32_t kBSliceBytes = uint32_t(B_SLICE * 2);
  static constexpr int RI = BM / 16;                              // rows per producer thread: g + 16 i
  static constexpr int kLocalK = (kMaxMapK + SPLIT - 1) / SPLIT;  // offsets of one CTA at most
  static constexpr int ROWS = BM / SPLIT;                         // rows each CTA finishes
  static constexpr int LDP = BN + 8;  // staged partial sums per row (floats): a warp's float2 stores take 2 wavefronts
  static constexpr size_t kWOff = 0;
  static constexpr size_t kAOff = kWOff + size_t(kResidentSlices) * B_SLICE * 2;
  static constexpr size_t kStgOff = kAOff + size_t(STAGES) * A_STAGE * 2;
  static constexpr size_t kMapOff = kStgOff + size_t(BM) * LDP * 4;
  static constexpr size_t kBiasOff = kMapOff + size_t(kLocalK) * BM * 4;
  static constexpr size_t kBarOff = kBiasOff + size_t(BN) * 4;
  // full[STAGES], empty[STAGES], wfull, ready, freed; info[STAGES]; masks[2][4]; 1024 for the alignment
  static constexpr size_t kSmem = kBarOff + (2 * STAGES + 3) * 8 + STAGES * 4 + 8 * 4 + 1024;
  static_assert(BN == 64 || BN == 128, "wgmma N of 64 or 128");
  static_assert(BM % SPLIT == 0 && SPLIT > 1, "rows split evenly over the cluster");
  static_assert(STAGES >= 2, "a slot in flight while the consumer holds one");
  static_assert(kSmem <= 227 * 1024, "one block per SM");
};

template <int BN, int STAGES, int SPLIT, int PROBE = 0>
__global__ void __launch_bounds__(256, 1) igemm_rw_kernel(const ConvArgs a) {
  using T = RwTile<BN, STAGES, SPLIT>;
  constexpr uint32_t kLast = 1u << 16, kEmpty = 1u << 17;  // info[slot]: (j * chunks + c) | flags
  extern __shared__ __align__(128) uint8_t smem_raw[];
  uint8_t* smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
  __half* sW = reinterpret_cast<__half*>(smem + T::kWOff);
  __half* sA = reinterpret_cast<__half*>(smem + T::kAOff);
  float* stg = reinterpret_cast<float*>(smem + T::kStgOff);  // this tile's partial sums [BM][LDP]
  // the producer's map: entry (local offset j, row g + 16 i) at [(j * 16 + g) * RI + i], in 16-byte units of x
  int* map_s = reinterpret_cast<int*>(smem + T::kMapOff);
  float* bias_s = reinterpret_cast<float*>(smem + T::kBiasOff);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + T::kBarOff);
  uint64_t* empty = full + STAGES;
  uint64_t* wfull = empty + STAGES;  // the resident weights have landed
  uint64_t* ready = wfull + 1;       // every CTA of the cluster has staged this tile's partial sums
  uint64_t* freed = ready + 1;       // every CTA has read the partial sums this CTA staged
  uint32_t* info = reinterpret_cast<uint32_t*>(freed + 1);
  uint32_t* wmask = info + STAGES;  // [2][4]: the producer warps' offset masks

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t n = rows_of(a.n_out, a.cap_out);
  const int64_t ntiles = (n + T::BM - 1) / T::BM;
  const int K = a.K;
  const int chunks = a.cin_p / T::BK;
  const int n0 = blockIdx.y * BN;
  const uint32_t z = cluster_rank();
  const int nlocal = int(z) < K ? (K - int(z) + SPLIT - 1) / SPLIT : 0;  // offsets z, z + SPLIT, ...

  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 128 + 1);  // every producer thread's copies + thread 0's step info
      mbar_init(&empty[s], 4);       // lane 0 of every consumer warp
    }
    mbar_init(wfull, 1);
    mbar_init(ready, SPLIT);  // one arrival per CTA of the cluster
    mbar_init(freed, SPLIT);
    mbar_fence_init();
  }
  if (tid < BN) bias_s[tid] = n0 + tid < a.cout_w ? a.bias[n0 + tid] : 0.f;
  cluster_sync();  // every CTA's barriers are initialised before any remote arrival

  if (warp < 4) {
    // ---------------- producer ----------------
    const int ptid = tid;
    if (ptid == 0) {
      // the resident weights: not written by the previous kernel, so loaded before waiting for it
      const __half* wt = static_cast<const __half*>(a.w_tma);
      if (nlocal == 0) {
        mbar_arrive(wfull);
      } else {
        expect_tx(wfull, uint32_t(nlocal * chunks) * T::kBSliceBytes);
        for (int j = 0; j < nlocal; ++j)
          for (int c = 0; c < chunks; ++c) {
            const int64_t k = int64_t(z) + int64_t(SPLIT) * j;
            tma_load_1d(sW + (j * chunks + c) * T::B_SLICE,
                        wt + ((k * chunks + c) * gridDim.y + blockIdx.y) * T::B_SLICE, T::kBSliceBytes, wfull);
          }
      }
    }
    const __half* __restrict__ x = static_cast<const __half*>(a.x);
    const int ch = ptid & 7, g = ptid >> 3;  // eight lanes per 128-byte row; rows g + 16 i
    const int units = a.cin_p / 8;
    uint32_t slot = 0, phase = 0;
    bool wrapped = false, waited = false;
    int parity = 0;
    for (int64_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
      const int64_t m0 = tile * T::BM;
      if (tile + gridDim.x >= ntiles && !a.pdl_late) grid_launch_dependents();
      producer_barrier();  // every producer thread has issued the previous tile's copies (map_s is free)
      uint32_t mine = 0;
      {
        // this CTA's column of the map: (row, offset z + SPLIT j), two loads in flight per thread
        int ent[2];
#pragma unroll
        for (int b = 0; b < 2; ++b) {
          const int idx = ptid + 128 * b, j = idx / T::BM, row = idx % T::BM;
          ent[b] = j < nlocal && m0 + row < n ? __ldg(a.out_in + (m0 + row) * K + int(z) + SPLIT * j) : -1;
        }
#pragma unroll
        for (int b = 0; b < 2; ++b) {
          const int idx = ptid + 128 * b, j = idx / T::BM, row = idx % T::BM;
          if (j < T::kLocalK) {
            map_s[(j * 16 + (row & 15)) * T::RI + (row >> 4)] = ent[b] >= 0 ? ent[b] * units : -1;
            if (ent[b] >= 0) mine |= 1u << j;
          }
        }
      }
      mine = __reduce_or_sync(0xffffffffu, mine);
      if (lane == 0) wmask[parity * 4 + warp] = mine;
      producer_barrier();
      uint32_t mask = wmask[parity * 4] | wmask[parity * 4 + 1] | wmask[parity * 4 + 2] | wmask[parity * 4 + 3];
      parity ^= 1;
      if (!waited) {
        grid_dependency_wait();  // the first tile's map is read: now the inputs
        waited = true;
      }
      if (mask == 0) {
        // no row of the tile has a neighbour at this CTA's offsets: one step without data, so that the
        // consumer still stages (zero) partial sums for the cluster
        if (wrapped) mbar_wait(&empty[slot], phase ^ 1u);
        if (ptid == 0) {
          info[slot] = kLast | kEmpty;
          mbar_arrive(&full[slot]);
        }
        cp_async_arrive_noinc(&full[slot]);
        if (++slot == STAGES) {
          slot = 0;
          phase ^= 1u;
          wrapped = true;
        }
        continue;
      }
      while (mask) {
        const int j = __ffs(mask) - 1;
        mask &= mask - 1u;
        for (int c = 0; c < chunks; ++c) {
          if (wrapped) mbar_wait(&empty[slot], phase ^ 1u);
          if (ptid == 0) {
            info[slot] = uint32_t(j * chunks + c) | (mask == 0u && c + 1 == chunks ? kLast : 0u);
            mbar_arrive(&full[slot]);  // release: the info is visible to whoever sees the phase complete
          }
          __half* dA = sA + slot * T::A_STAGE + g * T::BK + ((ch ^ (g & 7)) << 3);
          const uint64_t xc = reinterpret_cast<uint64_t>(reinterpret_cast<const uint4*>(x) + c * (T::BK / 8) + ch);
          int e[T::RI];
          *reinterpret_cast<int4*>(e) = *reinterpret_cast<const int4*>(map_s + (j * 16 + g) * T::RI);
          if (PROBE == 2) e[0] = e[1] = e[2] = e[3] = -1;
#pragma unroll
          for (int i = 0; i < T::RI; ++i)  // no neighbour: a zero-fill copy (no memory request)
            ptx::cp_async16_zfill(dA + i * 16 * T::BK,
                                  reinterpret_cast<const void*>(ptx::mad_wide_u32(uint32_t(max(e[i], 0)), 16u, xc)),
                                  e[i] >= 0 ? 16u : 0u);
          cp_async_arrive_noinc(&full[slot]);
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
    // ---------------- consumer ----------------
    const int cw = warp - 4, ctid = tid - 128;
    grid_dependency_wait();  // the residual and y belong to earlier kernels
    mbar_wait(wfull, 0);
    const uint64_t da0 = wg_desc(sA), dw0 = wg_desc(sW);
    const __half* __restrict__ res = static_cast<const __half*>(a.residual);
    __half* y = static_cast<__half*>(a.y);
    uint32_t slot = 0, phase = 0, done = 0;
    for (int64_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x, ++done) {
      const int64_t m0 = tile * T::BM;
      float acc[BN / 8][4];
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[j][q] = 0.f;
      for (;;) {
        mbar_wait(&full[slot], phase);
        const uint32_t inf = info[slot];
        if (!(inf & kEmpty)) {
          fence_proxy_async();  // the gathers are generic-proxy writes, wgmma reads through the async proxy
          const uint64_t da = da0 + slot * uint32_t(T::A_STAGE * 2 / 16);
          const uint64_t db = dw0 + (inf & 0xffffu) * uint32_t(T::B_SLICE * 2 / 16);
          wg_fence();
#pragma unroll
          for (int kk = 0; kk < T::BK / 16; ++kk) {
            if constexpr (BN == 64)
              wgmma_m64n64k16(acc, da + 2 * kk, db + 2 * kk);
            else
              wgmma_m64n128k16(acc, da + 2 * kk, db + 2 * kk);
          }
          wg_commit();
          wg_wait<0>();
        }
        if (lane == 0) mbar_arrive(&empty[slot]);
        if (++slot == STAGES) {
          slot = 0;
          phase ^= 1u;
        }
        if (inf & kLast) break;
      }
      wg_fence_acc(acc);
      if (tile + gridDim.x >= ntiles && a.pdl_late) grid_launch_dependents();

      // stage the partial sums once every CTA has read the previous tile's
      if (done > 0 && PROBE != 1) mbar_wait_cluster(freed, (done - 1) & 1u);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int rl = cw * 16 + (lane >> 2) + h * 8;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
          *reinterpret_cast<float2*>(stg + rl * T::LDP + j * 8 + (lane & 3) * 2) =
              make_float2(acc[j][2 * h], acc[j][2 * h + 1]);
      }
      fence_cluster();
      rw_consumer_barrier();
      if (ctid < SPLIT && PROBE != 1) mbar_arrive_peer(ready, uint32_t(ctid));  // one lane per CTA, in parallel
      if (PROBE != 1) mbar_wait_cluster(ready, done & 1u);

      // the rows this CTA finishes: every CTA's partial sums in rank order, then the split tiles' epilogue
      constexpr int CPRC = BN / 8;
      for (int i = ctid; i < T::ROWS * CPRC; i += 128) {
        const int rl = int(z) * T::ROWS + i / CPRC, c8 = (i % CPRC) * 8;
        const int64_t row = m0 + rl;
        const int col = n0 + c8;
        if (row >= n || col >= a.cout_p) continue;
        float4 p[2 * SPLIT];
#pragma unroll
        for (int r = 0; r < SPLIT; ++r) {
          p[2 * r] = PROBE == 1 ? *reinterpret_cast<const float4*>(stg + rl * T::LDP + c8)
                                : ld_peer_f4(stg + rl * T::LDP + c8, uint32_t(r));
          p[2 * r + 1] = PROBE == 1 ? *reinterpret_cast<const float4*>(stg + rl * T::LDP + c8 + 4)
                                    : ld_peer_f4(stg + rl * T::LDP + c8 + 4, uint32_t(r));
        }
        float v[8];
#pragma unroll
        for (int q = 0; q < 8; ++q) v[q] = 0.f;
#pragma unroll
        for (int r = 0; r < SPLIT; ++r) {
          v[0] += p[2 * r].x;
          v[1] += p[2 * r].y;
          v[2] += p[2 * r].z;
          v[3] += p[2 * r].w;
          v[4] += p[2 * r + 1].x;
          v[5] += p[2 * r + 1].y;
          v[6] += p[2 * r + 1].z;
          v[7] += p[2 * r + 1].w;
        }
        alignas(16) __half rr[8];
        if (res) *reinterpret_cast<uint4*>(rr) = *reinterpret_cast<const uint4*>(res + row * a.cout_p + col);
        alignas(16) __half out[8];
#pragma unroll
        for (int q = 0; q < 8; ++q) {
          const int cq = col + q;
          float f = cq < a.cout ? __half2float(__float2half_rn(apply_act(v[q] + bias_s[c8 + q], a.act, a.alpha))) : 0.f;
          if (res) f = __half2float(__float2half_rn(f + __half2float(rr[q])));
          if (a.relu_after) f = f > 0.f ? f : 0.f;
          out[q] = __float2half_rn(f);
        }
        *reinterpret_cast<uint4*>(y + row * a.cout_p + col) = *reinterpret_cast<const uint4*>(out);
      }
      rw_consumer_barrier();  // every read of the peers' partial sums has returned
      if (ctid < SPLIT && PROBE != 1) mbar_arrive_peer(freed, uint32_t(ctid));
    }
  }
  // Blocks without a tile get here directly: they too let the next kernel launch, and wait, so that
  // this grid completes only after its predecessor (the next kernel relies on that).
  grid_launch_dependents();
  grid_dependency_wait();
  cluster_sync();  // no CTA leaves while a peer may still read its shared memory or arrive on its barriers
}

/// The registry entry of a resident-weights tile (implicit_gemm.cuh Instance; name from its fields).
template <int BN, int STAGES, int SPLIT, int PROBE = 0>
inline Instance make_rw_instance() {
  using T = RwTile<BN, STAGES, SPLIT>;
  IgemmConfig c{T::BM, BN, T::BK, 8, 1, STAGES, true, 1, SPLIT, kF16, nullptr, true, 1};
  c.ws = true;
  c.resident_weights = true;
  return Instance{c, &igemm_rw_kernel<BN, STAGES, SPLIT, PROBE>, T::kSmem, T::kThreads, 1, false};
}

}  // namespace scn::cuda::igemm
