// One block's exclusive prefix sum of a uint32 array in place (the rank's block sums, the site order's
// histograms): a single block, so no second launch and no grid-wide synchronisation for arrays of up
// to a few hundred thousand entries.
#pragma once

#include <cstdint>
#include <cub/block/block_load.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>

namespace scn::cuda {

/// Passes of Threads x Items values: each pass loads them coalesced (one round trip for all; a thread
/// walking its own contiguous run waited for each load in turn), scans, adds the carry of the passes
/// before and stores. Every thread of the block calls run(); it returns the total.
template <int Threads, int Items>
struct BlockScanInPlace {
  using Load = cub::BlockLoad<uint32_t, Threads, Items, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Store = cub::BlockStore<uint32_t, Threads, Items, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  using Scan = cub::BlockScan<uint32_t, Threads>;
  union TempStorage {
    typename Load::TempStorage load;
    typename Store::TempStorage store;
    typename Scan::TempStorage scan;
  };

  static __device__ uint32_t run(TempStorage& tmp, uint32_t* data, int64_t n) {
    constexpr int kPass = Threads * Items;
    uint32_t carry = 0;
    for (int64_t base = 0; base < n; base += kPass) {
      const int valid = int(n - base < kPass ? n - base : kPass);
      uint32_t v[Items];
      Load(tmp.load).Load(data + base, v, valid, 0u);
      __syncthreads();
      uint32_t total = 0;
      Scan(tmp.scan).ExclusiveSum(v, v, total);
      __syncthreads();
#pragma unroll
      for (int j = 0; j < Items; ++j) v[j] += carry;
      Store(tmp.store).Store(data + base, v, valid);
      __syncthreads();
      carry += total;
    }
    return carry;
  }
};

}  // namespace scn::cuda
