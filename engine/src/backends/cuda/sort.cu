// Row order by neighbour mask: rows with similar masks share tiles in the implicit GEMM, so a
// tile's union of active kernel offsets stays close to its rows' own (fewer pipeline steps, fewer
// multiply-adds on zero rows).
//
// A counting sort of the live rows only, by a 12-bit key reduced from the mask: histogram in
// shared memory, a per-block exclusive scan of the 4096 buckets, scatter with warp-aggregated
// atomics. Three graph nodes, no host sync, cost proportional to the frame, not the capacity.
// (A CUB radix sort of the full mask over the capacity was measured first: 40-60 µs per map.)
// The order inside a bucket depends on atomic timing, which is harmless: each output row keeps
// its own summation order, so results never depend on which rows share a tile.
#include <cub/block/block_scan.cuh>

#include "backends/cuda/common.cuh"

namespace scn::cuda {

namespace {

constexpr int kScanThreads = 256;
static_assert(kRowBuckets % kScanThreads == 0, "buckets per scan thread");

/// The bucket of a row: the mask itself when it has at most 12 bits; else which "lines" (runs of
/// k2 consecutive offsets along the innermost kernel axis) hold a neighbour, most significant,
/// followed by which positions along that axis do (when they fit); else the mask's top 12 bits.
__device__ __forceinline__ uint32_t row_key(uint32_t mask, const RowKey& rk) {
  if (rk.K <= kRowKeyBits) return mask;
  const int lines = rk.K / rk.k2;
  const uint32_t line_bits = (1u << rk.k2) - 1u;
  if (rk.K % rk.k2 != 0 || lines > kRowKeyBits) return mask >> (rk.K - kRowKeyBits);
  uint32_t lm = 0, pos = 0;
  for (int j = 0; j < lines; ++j) {
    const uint32_t l = (mask >> (j * rk.k2)) & line_bits;
    lm |= (l != 0u ? 1u : 0u) << j;
    pos |= l;
  }
  return rk.with_positions && lines + rk.k2 <= kRowKeyBits ? (lm << rk.k2) | pos : lm;
}

__global__ void __launch_bounds__(kScanThreads) bucket_hist_kernel(const uint32_t* __restrict__ masks,
                                                                   const int* count, int64_t cap, RowKey rk,
                                                                   uint32_t* __restrict__ hist) {
  __shared__ uint32_t h[kRowBuckets];
  for (int b = threadIdx.x; b < kRowBuckets; b += blockDim.x) h[b] = 0u;
  __syncthreads();
  const int64_t n = rows_of(count, cap);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    atomicAdd(&h[row_key(masks[i], rk)], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < kRowBuckets; b += blockDim.x)
    if (h[b]) atomicAdd(&hist[b], h[b]);
}

__global__ void __launch_bounds__(kScanThreads) bucket_scatter_kernel(const uint32_t* __restrict__ masks,
                                                                      const int* count, int64_t cap, RowKey rk,
                                                                      const uint32_t* __restrict__ hist,
                                                                      uint32_t* __restrict__ cursor,
                                                                      int32_t* __restrict__ order) {
  // Every block scans the histogram itself (4096 buckets: 16 per thread), so no separate scan pass.
  constexpr int kPer = kRowBuckets / kScanThreads;
  using Scan = cub::BlockScan<uint32_t, kScanThreads>;
  __shared__ uint32_t base[kRowBuckets];
  __shared__ typename Scan::TempStorage scan;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  uint32_t local[kPer];
  uint32_t sum = 0;
#pragma unroll
  for (int q = 0; q < kPer; ++q) {
    local[q] = hist[tid * kPer + q];
    sum += local[q];
  }
  uint32_t run = 0;
  Scan(scan).ExclusiveSum(sum, run);
#pragma unroll
  for (int q = 0; q < kPer; ++q) {
    base[tid * kPer + q] = run;
    run += local[q];
  }
  __syncthreads();

  const int64_t n = rows_of(count, cap);
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  // warp-uniform trip count: every lane reaches the warp-wide calls below together
  for (int64_t i0 = blockIdx.x * int64_t(blockDim.x) + warp * 32; i0 < n; i0 += stride) {
    const int64_t i = i0 + lane;
    const bool valid = i < n;
    const uint32_t active = __ballot_sync(0xffffffffu, valid);
    if (!valid) continue;
    const uint32_t key = row_key(masks[i], rk);
    const uint32_t peers = __match_any_sync(active, key);
    const int leader = __ffs(peers) - 1;
    uint32_t first = 0;
    if (lane == leader) first = atomicAdd(&cursor[key], uint32_t(__popc(peers)));
    first = __shfl_sync(peers, first, leader);
    const uint32_t rank = __popc(peers & ((1u << lane) - 1u));
    order[base[key] + first + rank] = int32_t(i);
  }
}

}  // namespace

void launch_bucket_rows(const uint32_t* masks, const int* count, int64_t cap, RowKey rk, uint32_t* hist_cursor,
                        int32_t* order, int sm, cudaStream_t st) {
  SCN_CUDA_CHECK(cudaMemsetAsync(hist_cursor, 0, size_t(2 * kRowBuckets) * sizeof(uint32_t), st));
  const int blocks = grid_for(cap, kScanThreads, sm, 2);
  bucket_hist_kernel<<<blocks, kScanThreads, 0, st>>>(masks, count, cap, rk, hist_cursor);
  SCN_CUDA_LAUNCHED();
  bucket_scatter_kernel<<<blocks, kScanThreads, 0, st>>>(masks, count, cap, rk, hist_cursor,
                                                         hist_cursor + kRowBuckets, order);
  SCN_CUDA_LAUNCHED();
}

}  // namespace scn::cuda
