// The CUDA voxelizer's kernels (voxelize_cuda.cu, the only includer, launches them): points on the device ->
// voxel features / indices on the device, the voxel count left in device memory. Bitwise equal to the CPU oracle
// (voxelize_cpu.cpp), without a sort, in six kernels after one small memset:
//   1. classify: one thread per point, cell key (voxel_rules.h, the CPU's code); kept points set
//      their cell's bit in a bitmap of the grid's cells, and the point that makes a bitmap word
//      non-zero sets that word's bit in a second-level bitmap (one bit per 64 cells);
//   2. rank: through the second-level bitmap, only the non-zero bitmap words are read; each gets
//      its rank base (the set bits before it in its block of 2048 words); the last block to
//      finish scans the block totals. A voxel's id is the rank of its cell's bit, so voxels come
//      out in ascending key order as on the CPU; that block also writes the voxel count (clamped to
//      max_voxels, so nothing writes past the buffers) and the overflow flag;
//   3. count: each kept point takes its voxel id and its arrival order in that voxel (an atomic:
//      the order is arbitrary, step 5 restores input order); the first kSlots arrivals write their
//      position into the voxel's fixed slots, later ones ("spilled") keep (voxel, order);
//   4. features: a thread per voxel of at most kSlots points sorts its slots in registers; larger
//      voxels are listed, and each gets a region for its spilled positions;
//   5. spill: each spilled point writes its position into its voxel's region;
//   6. big voxels: a warp per listed voxel picks its max_points_per_voxel smallest positions among
//      slots and region. Either way the first points in input order, summed per column in that order
//      with round-to-nearest adds and one divide, as the CPU does. The same kernel then clears the
//      bitmap words the second-level bitmap lists, so the next run starts from a clean bitmap
//      without a memset of the whole grid.
// run_batch() runs each frame's kernels in a workspace (a lane, voxelize_cuda.cu; parallel_frames of them), the lanes
// side by side; a frame's features and big-voxel kernels write its rows behind those of the frames before it (its
// first row: their counts, summed on the device once they are known), so the batch needs no buffer of its own, and
// batch_state_kernel sums the frames' statistics (the batch's count stays on the device).
// Design and measurements: docs/voxelize.md, docs/benchmarks.md.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cub/block/block_scan.cuh>

#include "voxelize/voxel_rules.h"

namespace scn::vox {

namespace {  // one translation unit includes this file (voxelize_cuda.cu)

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
/// The most points a CUDA voxel keeps (max_points_per_voxel): the big-voxel kernel lists them in
/// shared memory.
constexpr int kMaxKept = 64;
/// Positions a voxel holds in its fixed slots. A voxel of at most this many points (most of them)
/// is done by one thread, its positions sorted in registers; larger ones by a warp.
constexpr int kSlots = 16;
/// Bitmap words per second-level word; a rank_kernel thread takes 8 of them (a byte of a
/// second-level word), so a block covers kThreads * 8 words.
constexpr int kWordsPerCoarse = 64;
constexpr int kWordsPerRankThread = 8;
constexpr int kRankBlockShift = 11;
static_assert(kThreads * kWordsPerRankThread == 1 << kRankBlockShift, "rank block = 2^kRankBlockShift words");
constexpr int kCoarsePerRankBlock = (kThreads * kWordsPerRankThread) / kWordsPerCoarse;
/// Block totals a thread of the last rank block scans at once.
constexpr int kTotalsPerThread = 4;

struct DeviceStats {
  unsigned long long out_of_range, non_finite, full;
  int32_t voxels_found;  ///< occupied cells before clamping to max_voxels
  int32_t overflow;      ///< 1 when voxels_found > max_voxels
};

/// Counters reset by the run's one memset (with DeviceStats).
struct DeviceCounters {
  int32_t count;         ///< voxels to write: voxels_found clamped to max_voxels
  int32_t big_count;     ///< voxels listed for the big-voxel kernel
  int32_t spill_total;   ///< spill positions handed out
  uint32_t rank_blocks;  ///< rank blocks finished (the last one scans the block totals)
};

/// The batch's count and statistics, written by batch_state_kernel after run_batch()'s frames.
struct BatchState {
  DeviceStats stats;       ///< the frames' statistics summed; overflow: any frame's
  int32_t total;           ///< the batch's rows so far (the engine's device count)
  int32_t overflow_frame;  ///< the first frame that overflowed, plus one (0: none)
  int32_t overflow_found;  ///< that frame's voxels_found
};

__device__ __forceinline__ float load(const float* p) { return *p; }
__device__ __forceinline__ float load(const __half* p) { return __half2float(*p); }
__device__ __forceinline__ void store(float* p, float v) { *p = isnan(v) ? __uint_as_float(kFeatureNanBits) : v; }
__device__ __forceinline__ void store(__half* p, float v) {
  *p = isnan(v) ? __ushort_as_half(kFeatureNanHalfBits) : __float2half_rn(v);
}

/// Classifies every point (keys, drop counts) and marks its cell in the bitmap and, on the word's
/// first bit, the word in the second-level bitmap. Also zeroes the per-voxel counts (this kernel
/// runs before anything reads or adds to them).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    classify_kernel(const T* __restrict__ pts, int64_t P, int C, Geometry g, uint32_t* __restrict__ keys,
                    unsigned long long* __restrict__ bits, unsigned long long* __restrict__ coarse,
                    int32_t* __restrict__ counts, int64_t V, DeviceStats* st) {
  const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i < V) counts[i] = 0;
  int cls = -1;
  if (i < P) {
    const T* row = pts + i * C;
    uint32_t key;
    cls = classify_point(g, load(row), load(row + 1), load(row + 2), &key);
    keys[i] = key;
    if (cls == kKept) {
      // Only the point that makes a bitmap word non-zero marks the word in the second-level bitmap:
      // marking it from every point (after a check of the word, or not) is slower (docs/voxelize.md).
      const uint32_t w = key >> 6;
      if (atomicOr(bits + w, 1ull << (key & 63)) == 0ull) atomicOr(coarse + (w >> 6), 1ull << (w & 63));
    }
  }
  const int non_finite = __syncthreads_count(cls == kNonFinite);
  const int out = __syncthreads_count(cls == kOutOfRange);
  if (threadIdx.x == 0) {
    if (non_finite) atomicAdd(&st->non_finite, (unsigned long long)non_finite);
    if (out) atomicAdd(&st->out_of_range, (unsigned long long)out);
  }
}

/// A block ranks 2^kRankBlockShift bitmap words, a thread the 8 under one byte of a second-level
/// word, reading only the non-zero ones: word_rank[w] = set bits in the block's words before w;
/// block_total[b] = the block's set bits. The last block to finish turns the totals into block
/// prefixes and writes the voxel count and the overflow flag.
__global__ void __launch_bounds__(kThreads)
    rank_kernel(const unsigned long long* __restrict__ bits, const unsigned long long* __restrict__ coarse,
                int64_t coarse_words, int32_t* __restrict__ word_rank, int32_t* __restrict__ block_total,
                int32_t* __restrict__ block_prefix, int32_t max_voxels, DeviceStats* st, DeviceCounters* ctr,
                int32_t* out_count) {
  using Scan = cub::BlockScan<int32_t, kThreads>;
  __shared__ typename Scan::TempStorage scan;
  __shared__ bool last;
  const int64_t c = int64_t(blockIdx.x) * kCoarsePerRankBlock + threadIdx.x / (kWordsPerCoarse / kWordsPerRankThread);
  const int shift = (threadIdx.x % (kWordsPerCoarse / kWordsPerRankThread)) * kWordsPerRankThread;
  const unsigned mask = c < coarse_words ? unsigned(coarse[c] >> shift) & 0xffu : 0u;
  const int64_t w0 = c * kWordsPerCoarse + shift;
  int32_t p[kWordsPerRankThread];
#pragma unroll
  for (int k = 0; k < kWordsPerRankThread; ++k) p[k] = (mask >> k) & 1u ? __popcll(bits[w0 + k]) : 0;
  int32_t sum = 0;
#pragma unroll
  for (int k = 0; k < kWordsPerRankThread; ++k) sum += p[k];
  int32_t before = 0, total = 0;
  Scan(scan).ExclusiveSum(sum, before, total);
#pragma unroll
  for (int k = 0; k < kWordsPerRankThread; ++k) {
    if ((mask >> k) & 1u) word_rank[w0 + k] = before;
    before += p[k];
  }
  if (threadIdx.x == 0) {
    block_total[blockIdx.x] = total;
    __threadfence();  // the total is visible before this block counts as finished
    last = atomicAdd(&ctr->rank_blocks, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  // The last block: exclusive prefixes of the block totals, kTotalsPerThread per thread per round.
  __threadfence();
  int32_t carry = 0;
  for (int64_t b0 = 0; b0 < gridDim.x; b0 += int64_t(kThreads) * kTotalsPerThread) {
    const int64_t b = b0 + int64_t(threadIdx.x) * kTotalsPerThread;
    int32_t t[kTotalsPerThread], run = 0;
#pragma unroll
    for (int k = 0; k < kTotalsPerThread; ++k) {
      t[k] = b + k < gridDim.x ? __ldcg(block_total + b + k) : 0;
      run += t[k];
    }
    int32_t base = 0, round = 0;
    __syncthreads();  // `scan` is reused
    Scan(scan).ExclusiveSum(run, base, round);
    base += carry;
#pragma unroll
    for (int k = 0; k < kTotalsPerThread; ++k) {
      if (b + k < gridDim.x) block_prefix[b + k] = base;
      base += t[k];
    }
    carry += round;
  }
  if (threadIdx.x == 0) {
    st->voxels_found = carry;
    st->overflow = carry > max_voxels ? 1 : 0;
    ctr->count = carry > max_voxels ? max_voxels : carry;
    if (out_count) *out_count = ctr->count;  // a single frame's run: its count is the output's count
  }
}

/// Voxel id (the rank of the cell's bit) and arrival order of every kept point; the first kSlots
/// arrivals of a voxel take its slots, later ones are spilled (spill_voxel, spill_order).
__global__ void __launch_bounds__(kThreads)
    count_kernel(const uint32_t* __restrict__ keys, int64_t P, uint32_t dropped_key,
                 const unsigned long long* __restrict__ bits, const int32_t* __restrict__ word_rank,
                 const int32_t* __restrict__ block_prefix, int32_t max_voxels, int32_t* __restrict__ counts,
                 uint32_t* __restrict__ slots, int32_t* __restrict__ spill_voxel, int32_t* __restrict__ spill_order) {
  const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= P) return;
  const uint32_t key = keys[i];
  int32_t spilled = -1;
  if (key != dropped_key) {
    const uint32_t w = key >> 6;
    const int32_t v =
        block_prefix[w >> kRankBlockShift] + word_rank[w] + __popcll(bits[w] & ((1ull << (key & 63)) - 1ull));
    if (v < max_voxels) {  // beyond the capacity: an overflow (rank_kernel's flag), never written
      const int32_t o = atomicAdd(counts + v, 1);
      if (o < kSlots) {
        slots[int64_t(v) * kSlots + o] = uint32_t(i);
      } else {
        spilled = v;
        spill_order[i] = o - kSlots;
      }
    }
  }
  spill_voxel[i] = spilled;
}

/// Each spilled point's position into its voxel's spill region (allocated by features_kernel).
__global__ void __launch_bounds__(kThreads)
    spill_kernel(int64_t P, const int32_t* __restrict__ spill_voxel, const int32_t* __restrict__ spill_order,
                 const int32_t* __restrict__ spill_base, uint32_t* __restrict__ spill) {
  const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= P) return;
  const int32_t v = spill_voxel[i];
  if (v >= 0) spill[spill_base[v] + spill_order[i]] = uint32_t(i);
}

struct FeatureArgs {
  const uint32_t* keys;       // per point
  const int32_t* counts;      // points per voxel
  const uint32_t* slots;      // kSlots positions per voxel (its first arrivals, any order)
  const int32_t* spill_base;  // per listed voxel of more than kSlots points: its region in `spill`
  const uint32_t* spill;      // the other positions of those voxels (any order)
  const int32_t* count;       // voxels to write; the frames before this one keep theirs at count - k * count_stride
  const int* columns;         // feature columns
  int F, C, max_points, mean, batch;
  int frame;         // frames of the batch before this one (their rows come first; run(): 0)
  int count_stride;  // int32 units between two frames' counts
};

/// The frame's first output row: the rows of the frames before it (their counts, final before this frame's kernels
/// that write rows run: stream order and the lanes' events, voxelize_cuda.cu).
__device__ __forceinline__ int64_t rows_before(const FeatureArgs& a) {
  int64_t rows = 0;
  for (int k = 1; k <= a.frame; ++k) rows += a.count[-int64_t(k) * a.count_stride];
  return rows;
}

/// Point values a warp loads at once for its voxel's features (kept points x feature columns); wider
/// voxels load column by column.
constexpr int kStagedValues = 256;
/// Feature columns a thread sums at once (more columns: the warp path).
constexpr int kThreadColumns = 8;

/// The voxel's row (b, i0, i1, i2) and its feature sums over the points at positions first[0..used),
/// ascending: per column round-to-nearest adds in that order, then one divide (the CPU's arithmetic).
template <typename T, typename O>
__device__ __forceinline__ void write_voxel_thread(const T* __restrict__ pts, const Geometry& g, const FeatureArgs& a,
                                                   O* __restrict__ feat, int4* __restrict__ idx, int64_t v,
                                                   const uint32_t (&first)[kSlots], int32_t kept) {
  int32_t row[4];
  key_to_index(g, a.keys[first[0]], a.batch, row);
  idx[v] = make_int4(row[0], row[1], row[2], row[3]);
  const int32_t used = a.mean ? kept : 1;
  int cols[kThreadColumns];
#pragma unroll
  for (int j = 0; j < kThreadColumns; ++j) cols[j] = j < a.F ? a.columns[j] : 0;
  float sum[kThreadColumns];
#pragma unroll
  for (int k = 0; k < kSlots; ++k)
    if (k < used) {
      const T* p = pts + int64_t(first[k]) * a.C;
#pragma unroll
      for (int j = 0; j < kThreadColumns; ++j)
        if (j < a.F) {
          const float x = load(p + cols[j]);
          sum[j] = k == 0 ? x : __fadd_rn(sum[j], x);
        }
    }
#pragma unroll
  for (int j = 0; j < kThreadColumns; ++j)
    if (j < a.F) store(feat + v * a.F + j, a.mean ? __fdiv_rn(sum[j], float(kept)) : sum[j]);
}

/// Positions a lane of the big-voxel warp keeps in registers while it picks the kept points.
constexpr int kCachedPerLane = 4;

/// Position k of voxel v's points: its slots, then its spill region.
__device__ __forceinline__ uint32_t position(const FeatureArgs& a, int64_t v, int32_t k, int32_t base) {
  return k < kSlots ? a.slots[v * kSlots + k] : a.spill[base + (k - kSlots)];
}

/// A voxel of any size done by the whole warp: its kept points are the `kept` smallest positions
/// among its slots and spill region, found in ascending order one per round (each lane takes the
/// smallest position above the last one among its share, then the warp's minimum); the warp loads
/// their values together and lanes sum one column each.
template <typename T, typename O>
__device__ void write_voxel_warp(const T* __restrict__ pts, const Geometry& g, const FeatureArgs& a,
                                 O* __restrict__ feat, int4* __restrict__ idx, int64_t v, uint32_t* chosen,
                                 float* staged) {
  const int lane = threadIdx.x & 31;
  const int32_t total = a.counts[v];
  const int32_t base = total > kSlots ? a.spill_base[v] : 0;
  const int32_t kept = total < a.max_points ? total : a.max_points;
  // the first kCachedPerLane * 32 positions stay in registers across the rounds
  uint32_t cached[kCachedPerLane];
#pragma unroll
  for (int j = 0; j < kCachedPerLane; ++j) {
    const int32_t k = lane + 32 * j;
    cached[j] = k < total ? position(a, v, k, base) : 0xffffffffu;
  }
  int64_t last = -1;
  for (int32_t r = 0; r < kept; ++r) {
    uint32_t best = 0xffffffffu;
#pragma unroll
    for (int j = 0; j < kCachedPerLane; ++j)
      if (int64_t(cached[j]) > last && cached[j] < best) best = cached[j];
    for (int32_t k = lane + 32 * kCachedPerLane; k < total; k += 32) {
      const uint32_t p = position(a, v, k, base);
      if (int64_t(p) > last && p < best) best = p;
    }
    best = __reduce_min_sync(0xffffffffu, best);
    if (lane == 0) chosen[r] = best;
    last = best;
  }
  __syncwarp();
  if (lane == 0) {
    int32_t row[4];
    key_to_index(g, a.keys[chosen[0]], a.batch, row);
    idx[v] = make_int4(row[0], row[1], row[2], row[3]);
  }
  const int32_t used = a.mean ? kept : 1;
  if (used * a.F <= kStagedValues) {
    // every (point, column) value loaded at once, then summed per column in point order
    for (int32_t e = lane; e < used * a.F; e += 32)
      staged[e] = load(pts + int64_t(chosen[e / a.F]) * a.C + a.columns[e % a.F]);
    __syncwarp();
    for (int f = lane; f < a.F; f += 32) {  // a feature set wider than the warp: lanes take every 32nd column
      float sum = staged[f];
      for (int32_t k = 1; k < used; ++k) sum = __fadd_rn(sum, staged[k * a.F + f]);
      store(feat + v * a.F + f, a.mean ? __fdiv_rn(sum, float(kept)) : sum);
    }
  } else {
    for (int f = lane; f < a.F; f += 32) {
      const int col = a.columns[f];
      float sum = load(pts + int64_t(chosen[0]) * a.C + col);
      for (int32_t k = 1; k < used; ++k) sum = __fadd_rn(sum, load(pts + int64_t(chosen[k]) * a.C + col));
      store(feat + v * a.F + f, a.mean ? __fdiv_rn(sum, float(kept)) : sum);
    }
  }
  __syncwarp();  // `chosen` and `staged` are reused by the warp's next voxel
}

/// One thread per voxel for the small voxels (their <= kSlots positions sorted in registers by a
/// bitonic network: the first `kept` are the first points in input order). Larger voxels (and
/// feature sets wider than kThreadColumns) go to a list that big_voxels_kernel spreads over warps:
/// they cluster in key order (dense ground near the sensor), so one warp must not meet them in a row.
/// A listed voxel of more than kSlots points also gets its spill region here.
template <typename T, typename O>
__global__ void __launch_bounds__(kThreads)
    features_kernel(const T* __restrict__ pts, Geometry g, FeatureArgs a, O* __restrict__ feat, int4* __restrict__ idx,
                    int32_t* __restrict__ big_list, int32_t* __restrict__ spill_base, DeviceCounters* ctr,
                    DeviceStats* st) {
  const int lane = threadIdx.x & 31;
  const int32_t n = *a.count;
  const int64_t first_row = rows_before(a);
  feat += first_row * a.F;
  idx += first_row;
  unsigned excess = 0;
  const int64_t stride = int64_t(gridDim.x) * kThreads;
  for (int64_t v0 = int64_t(blockIdx.x) * kThreads + (threadIdx.x & ~31); v0 < n; v0 += stride) {  // warp-uniform
    const int64_t v = v0 + lane;
    bool big = false;
    int32_t spilled = 0;
    if (v < n) {
      const int32_t total = a.counts[v];
      const int32_t kept = total < a.max_points ? total : a.max_points;
      excess += unsigned(total - kept);
      big = total > kSlots || a.F > kThreadColumns;
      if (total > kSlots) spilled = total - kSlots;
      if (!big) {
        // Only the voxel's first `total` slots were written: whole 16-byte chunks of them by one load, the
        // chunk holding the last one slot by slot, nothing past it (compute-sanitizer's initcheck reports a
        // read of unwritten words even where their values are replaced); the empty slots sort last.
        uint32_t first[kSlots];
        const uint32_t* sv = a.slots + v * kSlots;
#pragma unroll
        for (int q = 0; q < kSlots / 4; ++q) {
          if (4 * q + 4 <= total) {
            const uint4 x = reinterpret_cast<const uint4*>(sv)[q];
            first[4 * q] = x.x;
            first[4 * q + 1] = x.y;
            first[4 * q + 2] = x.z;
            first[4 * q + 3] = x.w;
          } else {
#pragma unroll
            for (int j = 0; j < 4; ++j) first[4 * q + j] = 4 * q + j < total ? sv[4 * q + j] : 0xffffffffu;
          }
        }
#pragma unroll
        for (int size = 2; size <= kSlots; size <<= 1)
#pragma unroll
          for (int j = size >> 1; j > 0; j >>= 1)
#pragma unroll
            for (int i = 0; i < kSlots; ++i) {
              const int l = i ^ j;
              if (l > i) {
                const uint32_t x = first[i], y = first[l];
                const bool up = (i & size) == 0;
                first[i] = up ? min(x, y) : max(x, y);
                first[l] = up ? max(x, y) : min(x, y);
              }
            }
        write_voxel_thread(pts, g, a, feat, idx, v, first, kept);
      }
    }
    const unsigned bigs = __ballot_sync(0xffffffffu, big);
    if (bigs) {  // one atomic per warp for its large voxels' list places, one for their spill regions
      const int leader = __ffs(bigs) - 1;
      int32_t spill_before = spilled;  // inclusive prefix over the lanes, made exclusive below
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const int32_t y = __shfl_up_sync(0xffffffffu, spill_before, d);
        if (lane >= d) spill_before += y;
      }
      const int32_t spill_sum = __shfl_sync(0xffffffffu, spill_before, 31);
      spill_before -= spilled;
      int32_t list_base = 0, region_base = 0;
      if (lane == leader) {
        list_base = atomicAdd(&ctr->big_count, __popc(bigs));
        if (spill_sum) region_base = atomicAdd(&ctr->spill_total, spill_sum);
      }
      list_base = __shfl_sync(0xffffffffu, list_base, leader);
      region_base = __shfl_sync(0xffffffffu, region_base, leader);
      if (big) big_list[list_base + __popc(bigs & ((1u << lane) - 1u))] = int32_t(v);
      if (spilled) spill_base[v] = region_base + spill_before;
    }
  }
  const unsigned warp_excess = __reduce_add_sync(0xffffffffu, excess);
  if (lane == 0 && warp_excess) atomicAdd(&st->full, (unsigned long long)warp_excess);
}

/// The listed large voxels, one warp each (write_voxel_warp); then the run's bitmap words and
/// second-level words are cleared (nothing reads the bitmap after count_kernel), so the next run
/// starts from zeros.
template <typename T, typename O>
__global__ void __launch_bounds__(kThreads)
    big_voxels_kernel(const T* __restrict__ pts, Geometry g, FeatureArgs a, O* __restrict__ feat,
                      int4* __restrict__ idx, const int32_t* __restrict__ big_list, const DeviceCounters* ctr,
                      unsigned long long* __restrict__ bits, unsigned long long* __restrict__ coarse,
                      int64_t coarse_words) {
  __shared__ uint32_t chosen[kWarpsPerBlock][kMaxKept];
  __shared__ float staged[kWarpsPerBlock][kStagedValues];
  const int w = threadIdx.x >> 5;
  const int32_t nb = ctr->big_count;
  const int64_t first_row = rows_before(a);
  feat += first_row * a.F;
  idx += first_row;
  for (int32_t i = blockIdx.x * kWarpsPerBlock + w; i < nb; i += gridDim.x * kWarpsPerBlock)
    write_voxel_warp(pts, g, a, feat, idx, big_list[i], chosen[w], staged[w]);
  // a thread per second-level word: one load each, then stores only
  for (int64_t c = int64_t(blockIdx.x) * kThreads + threadIdx.x; c < coarse_words; c += int64_t(gridDim.x) * kThreads) {
    unsigned long long cw = coarse[c];
    if (!cw) continue;
    coarse[c] = 0ull;
    for (; cw; cw &= cw - 1ull) bits[c * kWordsPerCoarse + (__ffsll(static_cast<long long>(cw)) - 1)] = 0ull;
  }
}

/// The batch's count and statistics (one thread): the frames' summed in frame order, the first frame that overflowed
/// named. Frame f's statistics and counters sit in its `small_stride` bytes of `small` (DeviceStats first,
/// DeviceCounters at `counters_offset`).
__global__ void batch_state_kernel(const char* __restrict__ small, int64_t small_stride, int counters_offset,
                                   int frames, BatchState* bs) {
  BatchState t{};
  for (int f = 0; f < frames; ++f) {
    const DeviceStats* st = reinterpret_cast<const DeviceStats*>(small + f * small_stride);
    t.total += reinterpret_cast<const DeviceCounters*>(small + f * small_stride + counters_offset)->count;
    t.stats.out_of_range += st->out_of_range;
    t.stats.non_finite += st->non_finite;
    t.stats.full += st->full;
    t.stats.voxels_found += st->voxels_found;
    if (st->overflow && !t.overflow_frame) {
      t.stats.overflow = 1;
      t.overflow_frame = f + 1;
      t.overflow_found = st->voxels_found;
    }
  }
  *bs = t;
}

}  // namespace

}  // namespace scn::vox
