// osplit chains (docs/cuda_backend.md "osplit chains"): the consecutive fp16 submanifold convs of one
// kernel map in one persistent kernel. A launch per conv ends with a tail (the last round of slabs leaves
// teams idle) and a boundary (the next conv waits for the whole grid); here a team takes the next
// (conv, slab) item from a global counter, items in conv-major order, and waits only for the slabs of the
// conv before that hold the rows it gathers.
//
// Why a slab's own window is enough: a submanifold map is symmetric (o has neighbour i at offset k exactly
// when i has neighbour o at offset K-1-k) and contains the centre, so the slabs of conv j-1 that read the
// rows of slab s are exactly the slabs holding the neighbours of slab s. Conv j's slab s starts after
// those are done (read after write), and writes its rows, in place or into memory of an earlier conv's
// input, only after every conv-(j-1) slab that reads them is done (write after read; by induction every
// earlier conv too). The host chains only convs whose buffers alias row for row (same base) or not at all.
//
// Per item: the team's warps each wait for the done flags of the conv-(j-1) slabs their offsets' rows lie
// in (acquire), run osplit's slab pass (igemm_offset_split.cuh: the same summation order, so the bits of
// every osplit config of this P), and the team publishes its flag (release). Weights: a block holds
// `SLOTS` convs' weights; conv j replaces conv j - SLOTS once the block's items of that conv are done (the
// first team of the block to take a conv-j item loads them, the others wait for it). The grid's last block
// clears the flags and counters for the next launch.
#pragma once

#include <climits>

#include "backends/cuda/igemm_offset_split.cuh"
#include "backends/cuda/igemm_osplit_chain.h"

namespace scn::cuda {
namespace osplit {

template <int CIN, int COUT, int WR, int P, int STAGES, int WARPS, int SLOTS>
struct ChainCfg {
  using C = Cfg<CIN, COUT, WR, P, STAGES, WARPS, kF16>;
  static constexpr uint32_t kSlotBytes = uint32_t(C::kWeightHalves * 2);
  static constexpr size_t kStagesOff = size_t(SLOTS) * kSlotBytes;
  static constexpr size_t kZeroOff = kStagesOff + size_t(WARPS) * C::WARP_HALVES * 2;
  static constexpr size_t kSmem = kZeroOff + 16;
};

template <int CIN, int COUT, int WR, int P, int STAGES, int WARPS, int SLOTS>
__global__ void __launch_bounds__(WARPS * 32, 1) chain_kernel(const __grid_constant__ ChainArgs ca) {
  using CC = ChainCfg<CIN, COUT, WR, P, STAGES, WARPS, SLOTS>;
  using C = typename CC::C;
  constexpr int KK = 27;
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int s_item[C::TEAMS];  // a team's item * 2 + (it loads the conv's weights)
  __shared__ int s_lock, s_last;
  __shared__ int s_acq[kMaxChainConvs], s_done[kMaxChainConvs], s_ready[kMaxChainConvs];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int team = warp / P, g = warp % P;
  const bool leader = g == 0 && lane == 0;
  __half* sW0 = reinterpret_cast<__half*>(smem);
  auto slot = [&](int j) { return sW0 + size_t(j % SLOTS) * C::kWeightHalves; };
  __half* sS = reinterpret_cast<__half*>(smem + CC::kStagesOff) + size_t(warp) * C::WARP_HALVES;

  const int count = ca.count;
  // one row count for every conv of the chain (one site set), from the map stream: readable before the wait
  const int64_t n = rows_of(ca.conv[0].n_out, ca.conv[0].cap_out);
  const int nslabs = int((n + WR - 1) / WR);
  const int total = nslabs * count;
  if (tid == 0) {
    *reinterpret_cast<uint4*>(smem + CC::kZeroOff) = make_uint4(0u, 0u, 0u, 0u);
    s_lock = 0;
  }
  if (tid < kMaxChainConvs) {
    s_acq[tid] = 0;
    s_done[tid] = 0;
    s_ready[tid] = tid < SLOTS ? 1 : 0;  // the first SLOTS convs' weights are staged below
  }
  if (total > 0)
    for (int j = 0; j < count && j < SLOTS; ++j) stage_weights<CIN, COUT, KK>(ca.conv[j], slot(j), tid, C::kThreads);
  ptx::cp_async_commit();
  ptx::cp_async_wait_mem<0>();
  __syncthreads();
  // launched programmatically: the first conv's input is the previous kernel's output
  ptx::grid_dependency_wait();

  const Lanes<C, kF16> L = make_lanes<C, kF16>(sW0, sS, smem + CC::kZeroOff, lane, g);
  int* flags = ca.sync + 2;
  for (;;) {
    if (leader) {  // items in conv-major order; the block's takes of each conv counted under a lock
      while (atomicCAS(&s_lock, 0, 1) != 0) {
      }
      const int item = atomicAdd(ca.sync, 1);
      int first = 0;
      if (item < total) first = atomicAdd(&s_acq[item / nslabs], 1) == 0;
      __threadfence_block();
      atomicExch(&s_lock, 0);
      s_item[team] = item < total ? item * 2 + first : INT_MAX;
    }
    team_sync<P>(team);
    const int code = s_item[team];
    if (code == INT_MAX) break;
    const int item = code >> 1, j = item / nslabs, slab = item % nslabs;
    if (j >= SLOTS) {  // conv j's weights replace conv j - SLOTS's in the block
      if (code & 1) {
        if (leader) {  // every item of conv j - SLOTS this block took is done (no more are taken)
          const volatile int* done = s_done;
          const volatile int* acq = s_acq;
          while (done[j - SLOTS] != acq[j - SLOTS]) __nanosleep(32);
        }
        team_sync<P>(team);
        stage_weights<CIN, COUT, KK>(ca.conv[j], slot(j), g * 32 + lane, P * 32);
        ptx::cp_async_commit();
        ptx::cp_async_wait_mem<0>();
        team_sync<P>(team);
        if (leader) {
          __threadfence_block();
          atomicExch(&s_ready[j], 1);
        }
      } else {
        if (leader) {
          const volatile int* ready = s_ready;
          while (ready[j] == 0) __nanosleep(32);
          __threadfence_block();
        }
        team_sync<P>(team);
      }
    }
    const ConvArgs& a = ca.conv[j];
    stage_map<C, WR, KK>(a.out_in, n, slab, sS, lane);
    ptx::cp_async_commit();
    ptx::cp_async_wait_mem<0>();
    __syncwarp();
    const uint32_t w_off = uint32_t(j % SLOTS) * CC::kSlotBytes;
    slab_pass<CIN, COUT, WR, P, STAGES, WARPS, kF16, KK, true>(a, L, w_off, sS, n, slab, lane, g, team, [&](auto& mp) {
      if (j == 0) return;  // its input was written before the launch
      // the conv-(j-1) slabs holding the rows this warp gathers: done before any gather
      int lo = INT_MAX, hi = -1;
#pragma unroll
      for (int h = 0; h < C::RH; ++h)
#pragma unroll
        for (int q = 0; q < C::KG; ++q)
          if (mp[h][q] >= 0) {
            lo = min(lo, mp[h][q]);
            hi = max(hi, mp[h][q]);
          }
      lo = __reduce_min_sync(0xffffffffu, lo);
      hi = __reduce_max_sync(0xffffffffu, hi);
      if (hi < 0) return;
      const int* f = flags + int64_t(j - 1) * ca.max_slabs;
      for (int t = lo / WR + lane; t <= hi / WR; t += 32)
        while (ptx::ld_acquire_gpu(f + t) == 0) __nanosleep(20);
      __syncwarp();
    });
    // the team's rows are stored (P > 1: slab_pass ended with the team's barrier; P == 1: one warp)
    if (leader) {
      __threadfence();
      ptx::st_release_gpu(flags + int64_t(j) * ca.max_slabs + slab, 1);
      atomicAdd(&s_done[j], 1);
    }
  }
  // no item left for this team: the next kernel may launch (its griddepcontrol.wait waits for this grid)
  ptx::grid_launch_dependents();

  // the grid's last block clears the flags and counters for the next launch
  __syncthreads();
  if (tid == 0) {
    __threadfence();
    s_last = atomicAdd(ca.sync + 1, 1) == int(gridDim.x) - 1;
  }
  __syncthreads();
  if (s_last) {
    __threadfence();
    for (int i = tid; i < total; i += C::kThreads) flags[int64_t(i / nslabs) * ca.max_slabs + i % nslabs] = 0;
    if (tid == 0) {
      ca.sync[0] = 0;
      ca.sync[1] = 0;
    }
    __threadfence();
  }
}

}  // namespace osplit
}  // namespace scn::cuda
