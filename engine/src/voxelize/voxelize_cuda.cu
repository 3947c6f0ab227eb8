// The CUDA voxelizer: points on the device -> voxel features / indices on the device, the voxel
// count left in device memory. Bitwise equal to the CPU oracle (voxelize_cpu.cpp):
//   1. classify: one thread per point, cell key (voxel_rules.h, the CPU's code) and position;
//   2. CUB radix sort of (key, position) over the key's bits: stable, so each voxel's points stay
//      in input order, and voxels come out in ascending key order as on the CPU;
//   3. CUB run-length encode (one run per voxel, dropped points last under key = cells) and an
//      exclusive sum of the run lengths (each voxel's first sorted entry);
//   4. finalize (one thread): the voxel count, clamped to max_voxels, and the overflow flag;
//   5. features: one thread per voxel walks its first max_points_per_voxel points in input order
//      (each point's columns loaded together) with round-to-nearest adds and one divide, as the CPU
//      does.
// run() enqueues only: no allocation (workspace sized at construction), no host synchronisation.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "scn/error.h"
#include "voxelize/voxel_rules.h"
#include "voxelize/voxelize_internal.h"

namespace scn::vox {

namespace {

constexpr int kThreads = 256;

struct DeviceStats {
  unsigned long long out_of_range, non_finite, full;
  int32_t voxels_found;  ///< valid runs before clamping to max_voxels
  int32_t overflow;      ///< 1 when voxels_found > max_voxels
};

__device__ __forceinline__ float load(const float* p) { return *p; }
__device__ __forceinline__ float load(const __half* p) { return __half2float(*p); }
__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(__half* p, float v) { *p = __float2half_rn(v); }

template <typename T>
__global__ void __launch_bounds__(kThreads)
    classify_kernel(const T* __restrict__ pts, int64_t P, int C, Geometry g, uint32_t* __restrict__ keys,
                    uint32_t* __restrict__ pos, DeviceStats* st) {
  const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  int cls = -1;
  if (i < P) {
    const T* row = pts + i * C;
    uint32_t key;
    cls = classify_point(g, load(row), load(row + 1), load(row + 2), &key);
    keys[i] = key;
    pos[i] = uint32_t(i);
  }
  const int non_finite = __syncthreads_count(cls == kNonFinite);
  const int out = __syncthreads_count(cls == kOutOfRange);
  if (threadIdx.x == 0) {
    if (non_finite) atomicAdd(&st->non_finite, (unsigned long long)non_finite);
    if (out) atomicAdd(&st->out_of_range, (unsigned long long)out);
  }
}

__global__ void finalize_kernel(const int32_t* num_runs, const uint32_t* unique_keys, uint32_t dropped_key,
                                int32_t max_voxels, DeviceStats* st, int32_t* count) {
  int32_t n = *num_runs;
  if (n > 0 && unique_keys[n - 1] == dropped_key) --n;  // the run of dropped points sorts last
  st->voxels_found = n;
  st->overflow = n > max_voxels ? 1 : 0;
  *count = n > max_voxels ? max_voxels : n;
}

struct FeatureArgs {
  const uint32_t* keys;    // one per voxel (run)
  const int32_t* counts;   // points per voxel
  const int32_t* offsets;  // first sorted entry per voxel
  const uint32_t* pos;     // sorted input positions
  const int32_t* count;    // voxels to write
  const int* columns;      // feature columns
  int F, C, max_points, mean, batch;
  int64_t bound;  // host-known upper bound of the count (uniform loop trip count per warp)
};

/// Feature columns summed in registers per point (one pass over a voxel's points: each point's
/// position is read once and its columns loaded together); wider feature sets take chunks of it.
constexpr int kFeatureChunk = 8;

template <typename T, typename O>
__global__ void __launch_bounds__(kThreads)
    features_kernel(const T* __restrict__ pts, Geometry g, FeatureArgs a, O* __restrict__ feat, int4* __restrict__ idx,
                    DeviceStats* st) {
  const int32_t n = *a.count;
  for (int64_t base = int64_t(blockIdx.x) * kThreads; base < a.bound; base += int64_t(gridDim.x) * kThreads) {
    const int64_t v = base + threadIdx.x;
    unsigned excess = 0;
    if (v < n) {
      const int32_t total = a.counts[v], start = a.offsets[v];
      const int32_t kept = total < a.max_points ? total : a.max_points;
      excess = unsigned(total - kept);
      int32_t row[4];
      key_to_index(g, a.keys[v], a.batch, row);
      idx[v] = make_int4(row[0], row[1], row[2], row[3]);
      const int32_t used = a.mean ? kept : 1;
      for (int f0 = 0; f0 < a.F; f0 += kFeatureChunk) {
        // Per feature the points are added in input order with round-to-nearest adds, then one
        // divide: the CPU oracle's arithmetic, so the results are bitwise equal.
        float sum[kFeatureChunk];
        for (int32_t k = 0; k < used; ++k) {
          const T* p = pts + int64_t(a.pos[start + k]) * a.C;
#pragma unroll
          for (int j = 0; j < kFeatureChunk; ++j)
            if (f0 + j < a.F) {
              const float x = load(p + a.columns[f0 + j]);
              sum[j] = k == 0 ? x : __fadd_rn(sum[j], x);
            }
        }
#pragma unroll
        for (int j = 0; j < kFeatureChunk; ++j)
          if (f0 + j < a.F) store(feat + v * a.F + f0 + j, a.mean ? __fdiv_rn(sum[j], float(kept)) : sum[j]);
      }
    }
    const unsigned warp_excess = __reduce_add_sync(0xffffffffu, excess);
    if ((threadIdx.x & 31) == 0 && warp_excess) atomicAdd(&st->full, (unsigned long long)warp_excess);
  }
}

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes) SCN_CUDA_CHECK(cudaMalloc(&p_, bytes));
  }
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  template <typename T = void>
  T* get() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

class CudaVoxelizer final : public Voxelizer {
 public:
  CudaVoxelizer(const VoxelizerConfig& c, int64_t max_points, int device)
      : Voxelizer(c, max_points), device_(device), g_(make_geometry(c)) {
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    SCN_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
    const size_t P = size_t(max_points);
    F_ = int(c.feature_columns.size());
    for (DeviceBuffer* b : {&keys_in_, &keys_out_, &pos_in_, &pos_out_, &unique_, &counts_, &offsets_})
      *b = DeviceBuffer(P * 4);
    staging_ = DeviceBuffer(P * size_t(c.point_columns) * 4);
    small_ = DeviceBuffer(256);
    columns_ = DeviceBuffer(size_t(F_) * sizeof(int));
    SCN_CUDA_CHECK(
        cudaMemcpy(columns_.get(), c.feature_columns.data(), size_t(F_) * sizeof(int), cudaMemcpyHostToDevice));
    features_ = DeviceBuffer(size_t(c.max_voxels) * size_t(F_) * dtype_size(c.feature_dtype));
    indices_ = DeviceBuffer(size_t(c.max_voxels) * 16);
    temp_ = DeviceBuffer(temp_bytes(max_points));
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
    if (P > 0) {
      const int blocks = int((P + kThreads - 1) / kThreads);
      if (points.dtype() == DType::Float32)
        classify_kernel<<<blocks, kThreads, 0, s>>>(static_cast<const float*>(pts), P, config_.point_columns, g_,
                                                    keys_in_.get<uint32_t>(), pos_in_.get<uint32_t>(), stats_ptr());
      else
        classify_kernel<<<blocks, kThreads, 0, s>>>(static_cast<const __half*>(pts), P, config_.point_columns, g_,
                                                    keys_in_.get<uint32_t>(), pos_in_.get<uint32_t>(), stats_ptr());
      SCN_CUDA_LAUNCHED();
      size_t temp = temp_bytes(P);
      SCN_CHECK(temp <= temp_.bytes(), "voxelizer '", config_.name, "': CUB needs ", temp, " bytes of workspace for ",
                P, " points, ", temp_.bytes(), " were sized for max_points = ", max_points_);
      const int n = int(P);
      SCN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp_.get(), temp, keys_in_.get<uint32_t>(),
                                                     keys_out_.get<uint32_t>(), pos_in_.get<uint32_t>(),
                                                     pos_out_.get<uint32_t>(), n, 0, g_.key_bits, s));
      temp = temp_.bytes();
      SCN_CUDA_CHECK(cub::DeviceRunLengthEncode::Encode(temp_.get(), temp, keys_out_.get<uint32_t>(),
                                                        unique_.get<uint32_t>(), counts_.get<int32_t>(), num_runs(), n,
                                                        s));
      temp = temp_.bytes();
      SCN_CUDA_CHECK(
          cub::DeviceScan::ExclusiveSum(temp_.get(), temp, counts_.get<int32_t>(), offsets_.get<int32_t>(), n, s));
    }
    finalize_kernel<<<1, 1, 0, s>>>(num_runs(), unique_.get<uint32_t>(), g_.cells, int32_t(config_.max_voxels),
                                    stats_ptr(), count_ptr());
    SCN_CUDA_LAUNCHED();
    const int64_t bound = std::min<int64_t>(P, config_.max_voxels);
    if (bound > 0) {
      FeatureArgs a{unique_.get<uint32_t>(),
                    counts_.get<int32_t>(),
                    offsets_.get<int32_t>(),
                    pos_out_.get<uint32_t>(),
                    count_ptr(),
                    columns_.get<int>(),
                    F_,
                    config_.point_columns,
                    config_.max_points_per_voxel,
                    config_.reduction == VoxelReduction::Mean ? 1 : 0,
                    config_.batch_index,
                    bound};
      const int blocks = int(std::min<int64_t>((bound + kThreads - 1) / kThreads, int64_t(sm_count_) * 16));
      launch_features(pts, points.dtype(), a, blocks, s);
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
  int32_t* num_runs() const { return reinterpret_cast<int32_t*>(small_.get<char>() + 64); }
  int32_t* count_ptr() const { return reinterpret_cast<int32_t*>(small_.get<char>() + 128); }

  size_t temp_bytes(int64_t P) const {
    size_t sort = 0, rle = 0, scan = 0;
    const int n = int(P);
    SCN_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
        nullptr, sort, static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
        static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr), n, 0, g_.key_bits));
    SCN_CUDA_CHECK(cub::DeviceRunLengthEncode::Encode(nullptr, rle, static_cast<uint32_t*>(nullptr),
                                                      static_cast<uint32_t*>(nullptr), static_cast<int32_t*>(nullptr),
                                                      static_cast<int32_t*>(nullptr), n));
    SCN_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan, static_cast<int32_t*>(nullptr),
                                                 static_cast<int32_t*>(nullptr), n));
    return std::max({sort, rle, scan, size_t(16)});
  }

  void launch_features(const void* pts, DType in, const FeatureArgs& a, int blocks, cudaStream_t s) {
    int4* idx = indices_.get<int4>();
    const bool half_out = config_.feature_dtype == DType::Float16;
    if (in == DType::Float32 && half_out)
      features_kernel<<<blocks, kThreads, 0, s>>>(static_cast<const float*>(pts), g_, a, features_.get<__half>(), idx,
                                                  stats_ptr());
    else if (in == DType::Float32)
      features_kernel<<<blocks, kThreads, 0, s>>>(static_cast<const float*>(pts), g_, a, features_.get<float>(), idx,
                                                  stats_ptr());
    else if (half_out)
      features_kernel<<<blocks, kThreads, 0, s>>>(static_cast<const __half*>(pts), g_, a, features_.get<__half>(), idx,
                                                  stats_ptr());
    else
      features_kernel<<<blocks, kThreads, 0, s>>>(static_cast<const __half*>(pts), g_, a, features_.get<float>(), idx,
                                                  stats_ptr());
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
  DeviceBuffer keys_in_, keys_out_, pos_in_, pos_out_, unique_, counts_, offsets_;
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
