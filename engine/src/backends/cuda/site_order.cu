// Generated site sets in neighbour-row order (CudaOptions::site_order, docs/cuda_backend.md "Site sets").
//
// A conv tile multiplies an offset's 16-row block (osplit, the mma.sync tiles) or a whole offset step (the
// wgmma tiles) when any of its rows has a neighbour there. In bitmap order a tile mixes rows at the edge of
// the occupied region with rows inside it, so nearly every block of every offset runs. Grouping rows by
// which kernel rows at the neighbouring planes (i0 - 1, i0 + 1) hold a site — six bits, bitmap order within
// a group — leaves whole offsets and blocks without a neighbour. Each output row's sum is the same
// wherever the row sits, so the outputs are bitwise those of bitmap order; only the work changes.
//
//   order_keys_kernel:    key per row (by rank), a histogram of keys per group of kSiteOrderRows rows (a block per
//                         group at a time, the grid capped by the SMs)
//   order_scan_kernel:    a block per key: exclusive prefix of its counts over the groups, and its total
//   order_scatter_kernel: row = rows of smaller keys + rows of the same key in earlier groups + in its
//                         own group before it (stable), perm[rank] = row, coords[row] = the rank's coordinates
// Three short launches of one row per thread: on the map stream beside the convs, a kernel's latency chain
// (not its bytes) is what the next level's first conv may wait for.
#include <algorithm>

#include "backends/cuda/block_scan.cuh"
#include "backends/cuda/common.cuh"
#include "backends/cuda/per_device.h"

namespace scn::cuda {

namespace {

constexpr int kOrderThreads = kSiteOrderRows;  // one row per thread, one group of rows per block at a time
constexpr int kOrderWarps = kOrderThreads / 32;
static_assert(kOrderThreads % 32 == 0 && kOrderThreads <= 1024, "order block layout");
static_assert(kSiteOrderKeys <= kOrderThreads && kSiteOrderKeys <= 255, "one thread per key; keys fit a byte");

/// Groups the set's capacity holds, ceil(cap / kSiteOrderRows): the stride of one key's counts in t.hist (the
/// arena sizes it alike, plan/arena_layout.cpp).
__host__ __device__ __forceinline__ int64_t order_stride(const SiteIndex& s) {
  return (s.cap + kSiteOrderRows - 1) / kSiteOrderRows;
}

/// Groups of rows that hold rows of the frame: ceil(n / kSiteOrderRows).
__device__ __forceinline__ int64_t order_groups(const SiteIndex& s) {
  return (rows_of(s.count, s.cap) + kSiteOrderRows - 1) / kSiteOrderRows;
}

/// Bit q of the key: kernel row q of the six at i0 - 1 (q = 0..2: i1 - 1, i1, i1 + 1) and i0 + 1 (q = 3..5)
/// holds a site among i2 - 1 .. i2 + 1. Every bitmap word is loaded before any is tested.
__device__ __forceinline__ uint32_t neighbour_rows_key(const SiteIndex& s, int4 c) {
  const int lo = c.w > 0 ? c.w - 1 : 0, hi = c.w + 1 < s.s2 ? c.w + 1 : s.s2 - 1;
  int64_t first[6];
  uint64_t w0[6], w1[6];
#pragma unroll
  for (int q = 0; q < 6; ++q) {
    const int i0 = c.y + (q < 3 ? -1 : 1), i1 = c.z + q % 3 - 1;
    const bool line = site_line_in_grid(s, c.x, i0, i1);
    first[q] = line ? site_key<int64_t>(s, c.x, i0, i1, lo) : -1;
    const int64_t last = first[q] + (hi - lo);
    w0[q] = line ? __ldg(s.bits + (first[q] >> 6)) : 0u;
    w1[q] = line && (last >> 6) != (first[q] >> 6) ? __ldg(s.bits + (last >> 6)) : w0[q];
  }
  uint32_t key = 0;
#pragma unroll
  for (int q = 0; q < 6; ++q) {
    if (first[q] < 0) continue;
    // the candidates' bits: up to three from bit (first & 63) of w0 on, continuing into w1
    const int b = int(first[q] & 63), n = hi - lo + 1;
    const uint64_t span = (uint64_t(1) << n) - 1u;
    const uint64_t in0 = (w0[q] >> b) & span;
    const uint64_t in1 = b + n > 64 ? (w1[q] << (64 - b)) & span : 0u;
    key |= uint32_t((in0 | in1) != 0) << q;
  }
  return key;
}

// The keys and scatter kernels walk the frame's groups with a grid capped by the SMs (launch_site_order), not one
// block per group of the capacity: an engine planned for more rows (a larger batch, the bounds) would otherwise launch
// thousands of blocks that only return, beside the convs.
__global__ void __launch_bounds__(kOrderThreads) order_keys_kernel(SiteIndex s, SiteOrderBuffers t, bool let_next) {
  wait_previous_kernel(let_next);
  __shared__ uint32_t hist[kSiteOrderKeys];
  const int64_t groups = order_groups(s), n = rows_of(s.count, s.cap);
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {  // block-uniform
    if (threadIdx.x < kSiteOrderKeys) hist[threadIdx.x] = 0;
    __syncthreads();
    const int64_t r = g * kSiteOrderRows + threadIdx.x;
    if (r < n) {
      const uint32_t key = neighbour_rows_key(s, t.coords_by_rank[r]);
      t.keys[r] = uint8_t(key);
      atomicAdd(&hist[key], 1u);  // a count: the order of the additions does not matter
    }
    __syncthreads();
    if (threadIdx.x < kSiteOrderKeys) t.hist[int64_t(threadIdx.x) * order_stride(s) + g] = hist[threadIdx.x];
    __syncthreads();  // read before the next group clears it
  }
}

// Block k: the exclusive prefix of key k's counts over the groups (in place) and key k's total, stored after
// the histograms. The keys' scans are independent: one block each, all at once.
using OrderScan = BlockScanInPlace<256, 8>;

__global__ void __launch_bounds__(256) order_scan_kernel(SiteIndex s, SiteOrderBuffers t, bool let_next) {
  wait_previous_kernel(let_next);
  __shared__ OrderScan::TempStorage tmp;
  const uint32_t total = OrderScan::run(tmp, t.hist + int64_t(blockIdx.x) * order_stride(s), order_groups(s));
  if (threadIdx.x == 0) t.hist[int64_t(kSiteOrderKeys) * order_stride(s) + blockIdx.x] = total;
}

__global__ void __launch_bounds__(kOrderThreads) order_scatter_kernel(SiteIndex s, SiteOrderBuffers t, bool let_next) {
  wait_previous_kernel(let_next);
  __shared__ uint32_t total[kSiteOrderKeys];                  // rows per key in the set, then per group its first row
  __shared__ uint32_t per_warp[kOrderWarps][kSiteOrderKeys];  // the group's rows per warp and key
  const int lane = int(threadIdx.x & 31), warp = int(threadIdx.x >> 5);
  const int64_t groups = order_groups(s), n = rows_of(s.count, s.cap);
  // thread k < kSiteOrderKeys: rows of the smaller keys in the whole set (the same for every group)
  if (threadIdx.x < kSiteOrderKeys)
    total[threadIdx.x] = t.hist[int64_t(kSiteOrderKeys) * order_stride(s) + threadIdx.x];
  __syncthreads();
  uint32_t smaller = 0;
  if (threadIdx.x < kSiteOrderKeys)
    for (int k = 0; k < int(threadIdx.x); ++k) smaller += total[k];
  __syncthreads();  // every thread has read `total`: the groups below reuse it
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {  // block-uniform
    const int64_t r = g * kSiteOrderRows + threadIdx.x;
    const bool valid = r < n;
    const uint32_t key = valid ? t.keys[r] : 0xffu;  // 0xff: no row (a group of its own, skipped)
    const int4 c = valid ? t.coords_by_rank[r] : int4{};
    uint32_t in_groups = 0;  // thread k < kSiteOrderKeys: rows of key k in the groups before this one
    if (threadIdx.x < kSiteOrderKeys) {
      in_groups = t.hist[int64_t(threadIdx.x) * order_stride(s) + g];
      for (int w = 0; w < kOrderWarps; ++w) per_warp[w][threadIdx.x] = 0;
    }
    __syncthreads();
    const uint32_t same = __match_any_sync(0xffffffffu, key);
    const uint32_t before_in_warp = uint32_t(__popc(same & ((1u << lane) - 1u)));
    if (valid && before_in_warp == 0) per_warp[warp][key] = uint32_t(__popc(same));
    __syncthreads();  // per_warp complete
    // thread k: the first row of key k in this group = rows of smaller keys + rows of key k in earlier groups
    if (threadIdx.x < kSiteOrderKeys) total[threadIdx.x] = smaller + in_groups;
    __syncthreads();
    if (valid) {
      uint32_t row = total[key] + before_in_warp;
      for (int w = 0; w < warp; ++w) row += per_warp[w][key];
      s.perm[r] = int32_t(row);
      s.coords[row] = c;
    }
    __syncthreads();  // total and per_warp read before the next group overwrites them
  }
}

/// Blocks of the keys and of the scatter kernel resident on one SM of device `d` at once (the lower of the two,
/// at least 1): the grid cap, since a second wave of blocks would only walk groups the first could have walked.
int order_blocks_per_sm(int d) {
  static PerDevice<int> table;
  return table.get_or_make(d, [] {
    int keys = 0, scatter = 0;
    SCN_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&keys, order_keys_kernel, kOrderThreads, 0));
    SCN_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&scatter, order_scatter_kernel, kOrderThreads, 0));
    return std::max(1, std::min(keys, scatter));
  });
}

}  // namespace

void launch_site_order(SiteIndex s, const SiteOrderBuffers& t, int sm_count, cudaStream_t st, bool pdl,
                       int max_blocks) {
  // the coordinates by rank into the temporary (the rows' order is not known yet)
  SiteIndex by_rank = s;
  by_rank.coords = t.coords_by_rank;
  by_rank.perm = nullptr;
  launch_emit_coords(by_rank, sm_count, st, pdl);
  // one block per group up to what is resident at once; larger sets loop, as a second wave of blocks would run anyway
  const int64_t cap_blocks =
      max_blocks > 0 ? max_blocks : int64_t(sm_count) * order_blocks_per_sm(current_cuda_device());
  const unsigned blocks = unsigned(std::min<int64_t>(order_stride(s), cap_blocks));
  launch_chained(order_keys_kernel, blocks, kOrderThreads, 0, st, pdl, s, t);
  SCN_CUDA_LAUNCHED();
  launch_chained(order_scan_kernel, unsigned(kSiteOrderKeys), 256, 0, st, pdl, s, t);
  SCN_CUDA_LAUNCHED();
  launch_chained(order_scatter_kernel, blocks, kOrderThreads, 0, st, pdl, s, t);
  SCN_CUDA_LAUNCHED();
}

void site_order_init() { order_blocks_per_sm(current_cuda_device()); }

}  // namespace scn::cuda
