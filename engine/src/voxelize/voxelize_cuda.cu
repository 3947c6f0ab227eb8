// The CUDA voxelizer: points on the device -> voxel features / indices on the device, the voxel
// count left in device memory. Bitwise equal to the CPU oracle (voxelize_cpu.cpp), without a sort:
//   1. classify: one thread per point, cell key (voxel_rules.h, the CPU's code); kept points set
//      their cell's bit in a bitmap of the grid's cells;
//   2. rank: an exclusive sum (CUB) of the popcounts of groups of four bitmap words; a voxel's id is
//      the rank of its cell's bit, so voxels come out in ascending key order as on the CPU;
//   3. count: each kept point takes its voxel's id and its arrival order in that voxel (atomics:
//      the order is arbitrary, and step 5 restores input order);
//   4. an exclusive sum of the voxels' point counts (CUB); scatter: each point's position into its
//      voxel's segment, and (its first thread) the voxel count, clamped to max_voxels, and the
//      overflow flag;
//   5. features: a thread per voxel of at most 16 points sorts their positions in registers; a
//      warp per larger voxel (listed, then a second kernel) picks its segment's
//      max_points_per_voxel smallest positions; either way the first points in input order,
//      summed per column in that order with round-to-nearest adds and one divide, as the CPU does.
// Design and measurements: docs/voxelize.md, docs/benchmarks.md.
// run() enqueues only: no allocation (workspace sized at construction), no host synchronisation.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cub/device/device_scan.cuh>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_mem.h"
#include "scn/error.h"
#include "voxelize/voxel_rules.h"
#include "voxelize/voxelize_internal.h"

namespace scn::vox {

namespace {

constexpr int kThreads = 256;
/// The most points a CUDA voxel keeps (max_points_per_voxel): the features kernel lists them in
/// shared memory.
constexpr int kMaxKept = 64;

struct DeviceStats {
  unsigned long long out_of_range, non_finite, full;
  int32_t voxels_found;  ///< occupied cells before clamping to max_voxels
  int32_t overflow;      ///< 1 when voxels_found > max_voxels
};

__device__ __forceinline__ float load(const float* p) { return *p; }
__device__ __forceinline__ float load(const __half* p) { return __half2float(*p); }
__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(__half* p, float v) { *p = __float2half_rn(v); }

/// Bitmap words per rank entry: the rank scan covers a quarter of the words, and a lookup adds the
/// popcounts of at most three neighbouring words (one 32-byte sector).
constexpr int kRankGroup = 4;

/// Set bits in the kRankGroup words of group g (the rank scan's input).
struct GroupPopcount {
  const unsigned long long* bits;
  __host__ __device__ int32_t operator()(int32_t g) const {
#ifdef __CUDA_ARCH__
    const unsigned long long* w = bits + int64_t(g) * kRankGroup;
    return __popcll(w[0]) + __popcll(w[1]) + __popcll(w[2]) + __popcll(w[3]);
#else
    return g * 0;  // never called on the host
#endif
  }
};

/// The rank of a set cell bit among all set bits: its voxel id.
__device__ __forceinline__ int32_t cell_rank(const unsigned long long* __restrict__ bits,
                                             const int32_t* __restrict__ group_rank, uint32_t key) {
  const uint32_t w = key >> 6;
  int32_t r = group_rank[w / kRankGroup];
  for (uint32_t j = w & ~uint32_t(kRankGroup - 1); j < w; ++j) r += __popcll(bits[j]);
  return r + __popcll(bits[w] & ((1ull << (key & 63)) - 1ull));
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    classify_kernel(const T* __restrict__ pts, int64_t P, int C, Geometry g, uint32_t* __restrict__ keys,
                    unsigned long long* __restrict__ bits, DeviceStats* st) {
  const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  int cls = -1;
  if (i < P) {
    const T* row = pts + i * C;
    uint32_t key;
    cls = classify_point(g, load(row), load(row + 1), load(row + 2), &key);
    keys[i] = key;
    if (cls == kKept) atomicOr(bits + (key >> 6), 1ull << (key & 63));
  }
  const int non_finite = __syncthreads_count(cls == kNonFinite);
  const int out = __syncthreads_count(cls == kOutOfRange);
  if (threadIdx.x == 0) {
    if (non_finite) atomicAdd(&st->non_finite, (unsigned long long)non_finite);
    if (out) atomicAdd(&st->out_of_range, (unsigned long long)out);
  }
}

/// Voxel id (the rank of the cell's bit) and arrival order of every kept point; counts per voxel.
__global__ void __launch_bounds__(kThreads)
    count_kernel(const uint32_t* __restrict__ keys, int64_t P, uint32_t dropped_key,
                 const unsigned long long* __restrict__ bits, const int32_t* __restrict__ word_rank, int32_t max_voxels,
                 int32_t* __restrict__ vid, int32_t* __restrict__ order, int32_t* __restrict__ counts) {
  const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= P) return;
  const uint32_t key = keys[i];
  int32_t v = -1;
  if (key != dropped_key) {
    v = cell_rank(bits, word_rank, key);
    if (v < max_voxels)
      order[i] = atomicAdd(counts + v, 1);
    else
      v = -1;  // beyond the capacity: an overflow (finalize), never written
  }
  vid[i] = v;
}

/// The voxel count (clamped to max_voxels, so nothing writes past the buffers) and the overflow flag.
__device__ __forceinline__ void finalize(const unsigned long long* bits, const int32_t* group_rank, int64_t groups,
                                         int32_t max_voxels, DeviceStats* st, int32_t* count) {
  const int32_t n = groups ? group_rank[groups - 1] + GroupPopcount{bits}(int32_t(groups - 1)) : 0;
  st->voxels_found = n;
  st->overflow = n > max_voxels ? 1 : 0;
  *count = n > max_voxels ? max_voxels : n;
}

__global__ void finalize_kernel(const unsigned long long* bits, const int32_t* group_rank, int64_t groups,
                                int32_t max_voxels, DeviceStats* st, int32_t* count) {
  finalize(bits, group_rank, groups, max_voxels, st, count);
}

/// Each point's position into its voxel's segment; the first thread also finalizes the count.
__global__ void __launch_bounds__(kThreads)
    scatter_kernel(int64_t P, const int32_t* __restrict__ vid, const int32_t* __restrict__ order,
                   const int32_t* __restrict__ offsets, uint32_t* __restrict__ slots, const unsigned long long* bits,
                   const int32_t* group_rank, int64_t groups, int32_t max_voxels, DeviceStats* st, int32_t* count) {
  const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i == 0) finalize(bits, group_rank, groups, max_voxels, st, count);
  if (i >= P) return;
  const int32_t v = vid[i];
  if (v >= 0) slots[offsets[v] + order[i]] = uint32_t(i);
}

struct FeatureArgs {
  const uint32_t* keys;    // per point
  const int32_t* counts;   // points per voxel
  const int32_t* offsets;  // first slot per voxel
  const uint32_t* slots;   // point positions grouped by voxel (any order inside a voxel)
  const int32_t* count;    // voxels to write
  const int* columns;      // feature columns
  int F, C, max_points, mean, batch;
};

constexpr int kWarpsPerBlock = kThreads / 32;
/// Point values a warp loads at once for its voxel's features (kept points x feature columns); wider
/// voxels load column by column.
constexpr int kStagedValues = 256;
/// Voxels of at most this many points (most of them) are done by one thread, their positions
/// sorted in registers; larger ones by the whole warp.
constexpr int kSmallVoxel = 16;
/// Feature columns a thread sums at once (more columns: the warp path).
constexpr int kThreadColumns = 8;

/// The voxel's row (b, i0, i1, i2) and its feature sums over the points at positions first[0..used),
/// ascending: per column round-to-nearest adds in that order, then one divide (the CPU's arithmetic).
template <typename T, typename O>
__device__ __forceinline__ void write_voxel_thread(const T* __restrict__ pts, const Geometry& g, const FeatureArgs& a,
                                                   O* __restrict__ feat, int4* __restrict__ idx, int64_t v,
                                                   const uint32_t (&first)[kSmallVoxel], int32_t kept) {
  int32_t row[4];
  key_to_index(g, a.keys[first[0]], a.batch, row);
  idx[v] = make_int4(row[0], row[1], row[2], row[3]);
  const int32_t used = a.mean ? kept : 1;
  int cols[kThreadColumns];
#pragma unroll
  for (int j = 0; j < kThreadColumns; ++j) cols[j] = j < a.F ? a.columns[j] : 0;
  float sum[kThreadColumns];
#pragma unroll
  for (int k = 0; k < kSmallVoxel; ++k)
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

/// A voxel of any size done by the whole warp: its kept points are the `kept` smallest positions of
/// its segment, found in ascending order one per round (each lane takes the smallest position above
/// the last one among its share of the segment, then the warp's minimum); the warp loads their
/// values together and lanes sum one column each. Returns the points beyond the limit.
template <typename T, typename O>
__device__ void write_voxel_warp(const T* __restrict__ pts, const Geometry& g, const FeatureArgs& a,
                                 O* __restrict__ feat, int4* __restrict__ idx, int64_t v, uint32_t* chosen,
                                 float* staged) {
  const int lane = threadIdx.x & 31;
  const int32_t total = a.counts[v], start = a.offsets[v];
  const int32_t kept = total < a.max_points ? total : a.max_points;
  int64_t last = -1;
  for (int32_t r = 0; r < kept; ++r) {
    uint32_t best = 0xffffffffu;
    for (int32_t k = lane; k < total; k += 32) {
      const uint32_t p = a.slots[start + k];
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
    if (lane < a.F) {
      float sum = staged[lane];
      for (int32_t k = 1; k < used; ++k) sum = __fadd_rn(sum, staged[k * a.F + lane]);
      store(feat + v * a.F + lane, a.mean ? __fdiv_rn(sum, float(kept)) : sum);
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

/// One thread per voxel for the small voxels (their <= kSmallVoxel positions sorted in registers by
/// a bitonic network: the first `kept` are the first points in input order). Larger voxels (and
/// feature sets wider than kThreadColumns) go to a list that big_voxels_kernel spreads over warps:
/// they cluster in key order (dense ground near the sensor), so one warp must not meet them in a row.
template <typename T, typename O>
__global__ void __launch_bounds__(kThreads)
    features_kernel(const T* __restrict__ pts, Geometry g, FeatureArgs a, O* __restrict__ feat, int4* __restrict__ idx,
                    int32_t* __restrict__ big_list, int32_t* big_count, DeviceStats* st) {
  const int lane = threadIdx.x & 31;
  const int32_t n = *a.count;
  unsigned excess = 0;
  const int64_t stride = int64_t(gridDim.x) * kThreads;
  for (int64_t v0 = int64_t(blockIdx.x) * kThreads + (threadIdx.x & ~31); v0 < n; v0 += stride) {  // warp-uniform
    const int64_t v = v0 + lane;
    bool big = false;
    if (v < n) {
      const int32_t total = a.counts[v], start = a.offsets[v];
      const int32_t kept = total < a.max_points ? total : a.max_points;
      excess += unsigned(total - kept);
      big = total > kSmallVoxel || a.F > kThreadColumns;
      if (!big) {
        uint32_t first[kSmallVoxel];
#pragma unroll
        for (int k = 0; k < kSmallVoxel; ++k) first[k] = k < total ? a.slots[start + k] : 0xffffffffu;
#pragma unroll
        for (int size = 2; size <= kSmallVoxel; size <<= 1)
#pragma unroll
          for (int j = size >> 1; j > 0; j >>= 1)
#pragma unroll
            for (int i = 0; i < kSmallVoxel; ++i) {
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
    if (bigs) {  // one atomic per warp for its large voxels' places in the list
      const int leader = __ffs(bigs) - 1;
      int32_t base = 0;
      if (lane == leader) base = atomicAdd(big_count, __popc(bigs));
      base = __shfl_sync(0xffffffffu, base, leader);
      if (big) big_list[base + __popc(bigs & ((1u << lane) - 1u))] = int32_t(v);
    }
  }
  const unsigned warp_excess = __reduce_add_sync(0xffffffffu, excess);
  if (lane == 0 && warp_excess) atomicAdd(&st->full, (unsigned long long)warp_excess);
}

/// The listed large voxels, one warp each (write_voxel_warp).
template <typename T, typename O>
__global__ void __launch_bounds__(kThreads)
    big_voxels_kernel(const T* __restrict__ pts, Geometry g, FeatureArgs a, O* __restrict__ feat,
                      int4* __restrict__ idx, const int32_t* __restrict__ big_list, const int32_t* big_count) {
  __shared__ uint32_t chosen[kWarpsPerBlock][kMaxKept];
  __shared__ float staged[kWarpsPerBlock][kStagedValues];
  const int w = threadIdx.x >> 5;
  const int32_t nb = *big_count;
  for (int32_t i = blockIdx.x * kWarpsPerBlock + w; i < nb; i += gridDim.x * kWarpsPerBlock)
    write_voxel_warp(pts, g, a, feat, idx, big_list[i], chosen[w], staged[w]);
}

using DeviceBuffer = cuda::DevMem;  // owned device memory (backends/cuda/cuda_mem.h)

class CudaVoxelizer final : public Voxelizer {
 public:
  CudaVoxelizer(const VoxelizerConfig& c, int64_t max_points, int device)
      : Voxelizer(c, max_points), device_(device), g_(make_geometry(c)) {
    SCN_CHECK(c.max_points_per_voxel <= kMaxKept, "voxelizer '", c.name,
              "': max_points_per_voxel = ", c.max_points_per_voxel, " exceeds the CUDA voxelizer's limit of ", kMaxKept,
              " (the CPU voxelizer has none)");
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    SCN_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
    const size_t P = size_t(max_points);
    F_ = int(c.feature_columns.size());
    groups_ = ((int64_t(g_.cells) + 63) / 64 + kRankGroup - 1) / kRankGroup;
    bits_.alloc(size_t(groups_) * kRankGroup * 8);
    word_rank_.alloc(size_t(groups_) * 4);
    for (DeviceBuffer* b : {&keys_, &vid_, &order_, &slots_}) b->alloc(P * 4);
    const size_t V = size_t(std::min<int64_t>(max_points, c.max_voxels));
    counts_.alloc((V + 1) * 4);
    offsets_.alloc((V + 1) * 4);
    big_list_.alloc((V + 1) * 4);
    staging_.alloc(P * size_t(c.point_columns) * 4);
    small_.alloc(256);
    columns_.alloc(size_t(F_) * sizeof(int));
    SCN_CUDA_CHECK(
        cudaMemcpy(columns_.get(), c.feature_columns.data(), size_t(F_) * sizeof(int), cudaMemcpyHostToDevice));
    features_.alloc(size_t(c.max_voxels) * size_t(F_) * dtype_size(c.feature_dtype));
    indices_.alloc(size_t(c.max_voxels) * 16);
    temp_.alloc(temp_bytes(max_points));
    SCN_CUDA_CHECK(cudaMemset(small_.get(), 0, small_.bytes()));
  }

  Backend backend() const override { return Backend::Cuda; }

  void run(const Tensor& points, void* stream) override {
    check_points(points, config_, "CUDA");
    const int64_t P = points.dim(0);
    SCN_CHECK(P <= max_points_, "voxelizer '", config_.name, "': ", P, " points exceed max_points = ", max_points_,
              " the CUDA voxelizer was created for (its workspace is sized once)");
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    const void* pts = points.data();
    if (points.device() == Device::Host && P > 0) {  // a pageable copy: the host waits for it
      SCN_CUDA_CHECK(cudaMemcpyAsync(staging_.get(), points.data(), points.bytes(), cudaMemcpyHostToDevice, s));
      pts = staging_.get();
    }
    SCN_CUDA_CHECK(cudaMemsetAsync(small_.get(), 0, small_.bytes(), s));
    SCN_CUDA_CHECK(cudaMemsetAsync(bits_.get(), 0, bits_.bytes(), s));
    const int64_t V = std::min<int64_t>(P, config_.max_voxels);  // voxels that can be written
    const int blocks = int(std::max<int64_t>(1, (P + kThreads - 1) / kThreads));
    if (P > 0) {
      SCN_CUDA_CHECK(cudaMemsetAsync(counts_.get(), 0, size_t(V + 1) * 4, s));
      if (points.dtype() == DType::Float32)
        classify_kernel<<<blocks, kThreads, 0, s>>>(static_cast<const float*>(pts), P, config_.point_columns, g_,
                                                    keys_.get<uint32_t>(), bits(), stats_ptr());
      else
        classify_kernel<<<blocks, kThreads, 0, s>>>(static_cast<const __half*>(pts), P, config_.point_columns, g_,
                                                    keys_.get<uint32_t>(), bits(), stats_ptr());
      SCN_CUDA_LAUNCHED();
    }
    size_t temp = temp_.bytes();
    SCN_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp_.get(), temp, group_popcounts(), word_rank_.get<int32_t>(),
                                                 int(groups_), s));
    if (P > 0) {
      count_kernel<<<blocks, kThreads, 0, s>>>(keys_.get<uint32_t>(), P, g_.cells, bits(), word_rank_.get<int32_t>(),
                                               int32_t(config_.max_voxels), vid_.get<int32_t>(), order_.get<int32_t>(),
                                               counts_.get<int32_t>());
      SCN_CUDA_LAUNCHED();
      temp = temp_.bytes();
      SCN_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp_.get(), temp, counts_.get<int32_t>(), offsets_.get<int32_t>(),
                                                   int(V + 1), s));
      scatter_kernel<<<blocks, kThreads, 0, s>>>(P, vid_.get<int32_t>(), order_.get<int32_t>(), offsets_.get<int32_t>(),
                                                 slots_.get<uint32_t>(), bits(), word_rank_.get<int32_t>(), groups_,
                                                 int32_t(config_.max_voxels), stats_ptr(), count_ptr());
      SCN_CUDA_LAUNCHED();
    } else {
      finalize_kernel<<<1, 1, 0, s>>>(bits(), word_rank_.get<int32_t>(), groups_, int32_t(config_.max_voxels),
                                      stats_ptr(), count_ptr());
      SCN_CUDA_LAUNCHED();
    }
    if (V > 0) {
      FeatureArgs a{keys_.get<uint32_t>(),
                    counts_.get<int32_t>(),
                    offsets_.get<int32_t>(),
                    slots_.get<uint32_t>(),
                    count_ptr(),
                    columns_.get<int>(),
                    F_,
                    config_.point_columns,
                    config_.max_points_per_voxel,
                    config_.reduction == VoxelReduction::Mean ? 1 : 0,
                    config_.batch_index};
      const int fblocks = int(std::min<int64_t>((V + kThreads - 1) / kThreads, int64_t(sm_count_) * 8));
      launch_features(pts, points.dtype(), a, fblocks, s);
    }
    stream_ = s;
    points_ = P;
    ran_ = true;
  }

  int64_t count() override {
    sync();
    check_errors();
    int32_t n = 0;
    SCN_CUDA_CHECK(cudaMemcpy(&n, count_ptr(), 4, cudaMemcpyDeviceToHost));
    return n;
  }
  const int32_t* device_count() const override { return count_ptr(); }
  Tensor features() override {
    const int64_t n = count();
    return Tensor::wrap(features_.get(), {n, F_}, config_.feature_dtype, Device::Cuda);
  }
  Tensor indices() override {
    const int64_t n = count();
    return Tensor::wrap(indices_.get(), {n, 4}, DType::Int32, Device::Cuda);
  }
  Tensor features_buffer() override {
    return Tensor::wrap(features_.get(), {config_.max_voxels, F_}, config_.feature_dtype, Device::Cuda);
  }
  Tensor indices_buffer() override {
    return Tensor::wrap(indices_.get(), {config_.max_voxels, 4}, DType::Int32, Device::Cuda);
  }
  VoxelizeStats stats() override {
    const DeviceStats d = read_stats();
    VoxelizeStats s;
    s.points = points_;
    s.voxels = d.voxels_found;
    s.dropped_out_of_range = int64_t(d.out_of_range);
    s.dropped_non_finite = int64_t(d.non_finite);
    s.dropped_full = int64_t(d.full);
    return s;
  }
  void check_errors() override {
    const DeviceStats d = read_stats();
    SCN_CHECK(!d.overflow, overflow_message(config_, d.voxels_found, points_));
  }
  std::vector<double> time_run(const Tensor& points, int warmup, int runs) override {
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    const Tensor dev = points.to(Device::Cuda);  // time the voxelizer, not the upload
    cudaStream_t s = nullptr;
    SCN_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t a = nullptr, b = nullptr;
    SCN_CUDA_CHECK(cudaEventCreate(&a));
    SCN_CUDA_CHECK(cudaEventCreate(&b));
    std::vector<double> ms;
    for (int i = 0; i < warmup + runs; ++i) {
      SCN_CUDA_CHECK(cudaEventRecord(a, s));
      run(dev, s);
      SCN_CUDA_CHECK(cudaEventRecord(b, s));
      SCN_CUDA_CHECK(cudaEventSynchronize(b));
      float t = 0.f;
      SCN_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
      if (i >= warmup) ms.push_back(double(t));
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    stream_ = nullptr;
    cudaStreamDestroy(s);
    check_errors();
    return ms;
  }

 private:
  DeviceStats* stats_ptr() const { return small_.get<DeviceStats>(); }
  unsigned long long* bits() const { return bits_.get<unsigned long long>(); }
  thrust::transform_iterator<GroupPopcount, thrust::counting_iterator<int32_t>> group_popcounts() const {
    return thrust::make_transform_iterator(thrust::counting_iterator<int32_t>(0), GroupPopcount{bits()});
  }
  int32_t* count_ptr() const { return reinterpret_cast<int32_t*>(small_.get<char>() + 128); }
  int32_t* big_count_ptr() const { return reinterpret_cast<int32_t*>(small_.get<char>() + 192); }

  size_t temp_bytes(int64_t P) const {
    size_t rank = 0, scan = 0;
    const int64_t V = std::min<int64_t>(P, config_.max_voxels);
    SCN_CUDA_CHECK(
        cub::DeviceScan::ExclusiveSum(nullptr, rank, group_popcounts(), static_cast<int32_t*>(nullptr), int(groups_)));
    SCN_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan, static_cast<int32_t*>(nullptr),
                                                 static_cast<int32_t*>(nullptr), int(V + 1)));
    return std::max({rank, scan, size_t(16)});
  }

  void launch_features(const void* pts, DType in, const FeatureArgs& a, int blocks, cudaStream_t s) {
    const bool half_out = config_.feature_dtype == DType::Float16;
    if (in == DType::Float32 && half_out)
      launch_features_as(static_cast<const float*>(pts), features_.get<__half>(), a, blocks, s);
    else if (in == DType::Float32)
      launch_features_as(static_cast<const float*>(pts), features_.get<float>(), a, blocks, s);
    else if (half_out)
      launch_features_as(static_cast<const __half*>(pts), features_.get<__half>(), a, blocks, s);
    else
      launch_features_as(static_cast<const __half*>(pts), features_.get<float>(), a, blocks, s);
  }

  template <typename T, typename O>
  void launch_features_as(const T* pts, O* feat, const FeatureArgs& a, int blocks, cudaStream_t s) {
    int4* idx = indices_.get<int4>();
    features_kernel<<<blocks, kThreads, 0, s>>>(pts, g_, a, feat, idx, big_list_.get<int32_t>(), big_count_ptr(),
                                                stats_ptr());
    SCN_CUDA_LAUNCHED();
    big_voxels_kernel<<<sm_count_ * 4, kThreads, 0, s>>>(pts, g_, a, feat, idx, big_list_.get<int32_t>(),
                                                         big_count_ptr());
    SCN_CUDA_LAUNCHED();
  }

  void sync() {
    SCN_CHECK(ran_, "voxelizer '", config_.name, "': no run() yet");
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    SCN_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  DeviceStats read_stats() {
    sync();
    DeviceStats d{};
    SCN_CUDA_CHECK(cudaMemcpy(&d, stats_ptr(), sizeof(d), cudaMemcpyDeviceToHost));
    return d;
  }

  int device_;
  Geometry g_;
  int sm_count_ = 1;
  int F_ = 0;
  int64_t groups_ = 0;  ///< rank entries: bitmap words (grid cells / 64) / kRankGroup, rounded up
  DeviceBuffer bits_, word_rank_, keys_, vid_, order_, slots_, counts_, offsets_, big_list_;
  DeviceBuffer staging_, small_, columns_, features_, indices_, temp_;
  cudaStream_t stream_ = nullptr;
  int64_t points_ = 0;
  bool ran_ = false;
};

static_assert(sizeof(DeviceStats) <= 64, "DeviceStats fits its slot in small_");

}  // namespace

std::unique_ptr<Voxelizer> create_cuda_voxelizer(const VoxelizerConfig& config, int64_t max_points, int device) {
  return std::make_unique<CudaVoxelizer>(config, max_points, device);
}

}  // namespace scn::vox
