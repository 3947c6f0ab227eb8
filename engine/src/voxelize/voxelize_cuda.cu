// The CUDA voxelizer (scn::Voxelizer on CUDA): its buffers, sized once at construction, and the launches of the
// kernels of voxelize_kernels.cuh (whose header describes the six steps) for run() and, frame after frame with the
// append, for run_batch(). Both enqueue only: no allocation, no host synchronisation; count(), stats() and the
// outputs synchronise on the stream of the last run.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_mem.h"
#include "scn/error.h"
#include "voxelize/voxelize_internal.h"
#include "voxelize/voxelize_kernels.cuh"

namespace scn::vox {

namespace {

using DeviceBuffer = cuda::DevMem;  // owned device memory (backends/cuda/cuda_mem.h)

class CudaVoxelizer final : public Voxelizer {
 public:
  CudaVoxelizer(const VoxelizerConfig& c, int64_t max_points, int device, int max_batch)
      : Voxelizer(c, max_points, max_batch), device_(device), g_(make_geometry(c)) {
    SCN_CHECK(c.max_points_per_voxel <= kMaxKept, "voxelizer '", c.name,
              "': max_points_per_voxel = ", c.max_points_per_voxel, " exceeds the CUDA voxelizer's limit of ", kMaxKept,
              " (the CPU voxelizer has none)");
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    SCN_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
    const size_t P = size_t(max_points);
    F_ = int(c.feature_columns.size());
    const int64_t words = (int64_t(g_.cells) + 63) / 64;
    coarse_words_ = (words + kWordsPerCoarse - 1) / kWordsPerCoarse;
    rank_blocks_ = (coarse_words_ + kCoarsePerRankBlock - 1) / kCoarsePerRankBlock;
    const size_t padded_words = size_t(coarse_words_) * kWordsPerCoarse;
    bits_.alloc(padded_words * 8);
    coarse_.alloc(size_t(coarse_words_) * 8);
    word_rank_.alloc(padded_words * 4);
    block_total_.alloc(size_t(rank_blocks_) * 4);
    block_prefix_.alloc(size_t(rank_blocks_) * 4);
    for (DeviceBuffer* b : {&keys_, &spill_voxel_, &spill_order_, &spill_}) b->alloc(P * 4);
    const size_t V = size_t(std::min<int64_t>(max_points, c.max_voxels));
    counts_.alloc((V + 1) * 4);
    slots_.alloc((V + 1) * kSlots * 4);
    spill_base_.alloc((V + 1) * 4);
    big_list_.alloc((V + 1) * 4);
    staging_.alloc(P * size_t(c.point_columns) * 4);
    small_.alloc(kSmallBytes);
    columns_.alloc(size_t(F_) * sizeof(int));
    SCN_CUDA_CHECK(
        cudaMemcpy(columns_.get(), c.feature_columns.data(), size_t(F_) * sizeof(int), cudaMemcpyHostToDevice));
    features_.alloc(size_t(c.max_voxels) * size_t(F_) * dtype_size(c.feature_dtype));
    indices_.alloc(size_t(c.max_voxels) * 16);
    const size_t batch_rows = size_t(max_batch) * size_t(c.max_voxels);
    batch_features_.alloc(batch_rows * size_t(F_) * dtype_size(c.feature_dtype));
    batch_indices_.alloc(batch_rows * 16);
    batch_state_.alloc(sizeof(BatchState));
    batch_offsets_.alloc(size_t(max_batch + 1) * 4);
    // The bitmaps start clear once; every run clears what it set (big_voxels_kernel).
    SCN_CUDA_CHECK(cudaMemset(bits_.get(), 0, bits_.bytes()));
    SCN_CUDA_CHECK(cudaMemset(coarse_.get(), 0, coarse_.bytes()));
    SCN_CUDA_CHECK(cudaMemset(small_.get(), 0, small_.bytes()));
  }

  Backend backend() const override { return Backend::Cuda; }

  void run(const Tensor& points, void* stream) override {
    check_frame(points);
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    batched_ = false;
    enqueue(points, static_cast<cudaStream_t>(stream));
  }

  void run_batch(const std::vector<Tensor>& frames, void* stream) override {
    check_batch(config_, frames.size(), max_batch_);
    for (const Tensor& f : frames) check_frame(f);  // before anything is enqueued
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    batched_ = false;
    SCN_CUDA_CHECK(cudaMemsetAsync(batch_state_.get(), 0, batch_state_.bytes(), s));
    SCN_CUDA_CHECK(cudaMemsetAsync(batch_offsets_.get(), 0, batch_offsets_.bytes(), s));
    const int row_units = int(size_t(F_) * dtype_size(config_.feature_dtype) / 2);
    const int blocks = int(std::max<int64_t>(
        1, std::min<int64_t>((config_.max_voxels + kThreads - 1) / kThreads, int64_t(sm_count_) * 8)));
    frame_points_.clear();
    int64_t points = 0;
    for (size_t b = 0; b < frames.size(); ++b) {
      enqueue(frames[b], s);
      append_frame_kernel<<<blocks, kThreads, 0, s>>>(
          features_.get<uint16_t>(), indices_.get<int4>(), counters(), stats_ptr(), row_units, int32_t(b),
          batch_features_.get<uint16_t>(), batch_indices_.get<int4>(), batch_offsets_.get<int32_t>(), batch_state());
      SCN_CUDA_LAUNCHED();
      frame_points_.push_back(frames[b].dim(0));
      points += frames[b].dim(0);
    }
    points_ = points;
    batched_ = true;
  }

  int64_t count() override {
    sync();
    check_errors();
    int32_t n = 0;
    SCN_CUDA_CHECK(cudaMemcpy(&n, device_count(), 4, cudaMemcpyDeviceToHost));
    return n;
  }
  const int32_t* device_count() const override { return batched_ ? &batch_state()->total : count_ptr(); }
  Tensor features() override {
    const int64_t n = count();
    return Tensor::wrap(out_features(), {n, F_}, config_.feature_dtype, Device::Cuda);
  }
  Tensor indices() override {
    const int64_t n = count();
    return Tensor::wrap(out_indices(), {n, 4}, DType::Int32, Device::Cuda);
  }
  Tensor features_buffer() override {
    return Tensor::wrap(out_features(), {buffer_rows(), F_}, config_.feature_dtype, Device::Cuda);
  }
  Tensor indices_buffer() override {
    return Tensor::wrap(out_indices(), {buffer_rows(), 4}, DType::Int32, Device::Cuda);
  }
  VoxelizeStats stats() override {
    const BatchState d = read_state();
    VoxelizeStats s;
    s.points = points_;
    s.voxels = d.stats.voxels_found;
    s.dropped_out_of_range = int64_t(d.stats.out_of_range);
    s.dropped_non_finite = int64_t(d.stats.non_finite);
    s.dropped_full = int64_t(d.stats.full);
    return s;
  }
  void check_errors() override {
    const BatchState d = read_state();
    if (!d.stats.overflow) return;
    if (!batched_) SCN_FAIL(overflow_message(config_, d.stats.voxels_found, points_));
    const int b = d.overflow_frame - 1;
    SCN_FAIL(overflow_message(frame_config(config_, b), d.overflow_found, frame_points_[size_t(b)]));
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
  void check_frame(const Tensor& points) const {
    check_points(points, config_, "CUDA");
    SCN_CHECK(points.dim(0) <= max_points_, "voxelizer '", config_.name, "': ", points.dim(0),
              " points exceed max_points = ", max_points_,
              " the CUDA voxelizer was created for (its workspace is sized once)");
  }

  /// One frame's six kernels into the frame buffers (run(); run_batch() once per frame).
  void enqueue(const Tensor& points, cudaStream_t s) {
    const int64_t P = points.dim(0);
    const void* pts = points.data();
    if (points.device() == Device::Host && P > 0) {  // a pageable copy: the host waits for it
      SCN_CUDA_CHECK(cudaMemcpyAsync(staging_.get(), points.data(), points.bytes(), cudaMemcpyHostToDevice, s));
      pts = staging_.get();
    }
    SCN_CUDA_CHECK(cudaMemsetAsync(small_.get(), 0, small_.bytes(), s));
    const int64_t V = std::min<int64_t>(P, config_.max_voxels);  // voxels that can be written
    const int blocks = int(std::max<int64_t>(1, (P + kThreads - 1) / kThreads));
    if (P > 0) {
      if (points.dtype() == DType::Float32)
        classify_kernel<<<blocks, kThreads, 0, s>>>(static_cast<const float*>(pts), P, config_.point_columns, g_,
                                                    keys_.get<uint32_t>(), bits(), coarse(), counts_.get<int32_t>(), V,
                                                    stats_ptr());
      else
        classify_kernel<<<blocks, kThreads, 0, s>>>(static_cast<const __half*>(pts), P, config_.point_columns, g_,
                                                    keys_.get<uint32_t>(), bits(), coarse(), counts_.get<int32_t>(), V,
                                                    stats_ptr());
      SCN_CUDA_LAUNCHED();
    }
    rank_kernel<<<int(rank_blocks_), kThreads, 0, s>>>(bits(), coarse(), coarse_words_, word_rank_.get<int32_t>(),
                                                       block_total_.get<int32_t>(), block_prefix_.get<int32_t>(),
                                                       int32_t(config_.max_voxels), stats_ptr(), counters());
    SCN_CUDA_LAUNCHED();
    if (P > 0) {
      count_kernel<<<blocks, kThreads, 0, s>>>(keys_.get<uint32_t>(), P, g_.cells, bits(), word_rank_.get<int32_t>(),
                                               block_prefix_.get<int32_t>(), int32_t(config_.max_voxels),
                                               counts_.get<int32_t>(), slots_.get<uint32_t>(),
                                               spill_voxel_.get<int32_t>(), spill_order_.get<int32_t>());
      SCN_CUDA_LAUNCHED();
      FeatureArgs a{keys_.get<uint32_t>(),
                    counts_.get<int32_t>(),
                    slots_.get<uint32_t>(),
                    spill_base_.get<int32_t>(),
                    spill_.get<uint32_t>(),
                    &counters()->count,
                    columns_.get<int>(),
                    F_,
                    config_.point_columns,
                    config_.max_points_per_voxel,
                    config_.reduction == VoxelReduction::Mean ? 1 : 0,
                    config_.batch_index};
      const int fblocks = int(std::min<int64_t>((V + kThreads - 1) / kThreads, int64_t(sm_count_) * 8));
      launch_features(pts, points.dtype(), a, P, blocks, fblocks, s);
    }
    stream_ = s;
    points_ = P;
    ran_ = true;
  }

  /// small_: DeviceStats, then DeviceCounters (one memset per run clears both).
  static constexpr size_t kCountersOffset = 64;
  static constexpr size_t kSmallBytes = 128;
  DeviceStats* stats_ptr() const { return small_.get<DeviceStats>(); }
  DeviceCounters* counters() const { return reinterpret_cast<DeviceCounters*>(small_.get<char>() + kCountersOffset); }
  int32_t* count_ptr() const { return &counters()->count; }
  unsigned long long* bits() const { return bits_.get<unsigned long long>(); }
  unsigned long long* coarse() const { return coarse_.get<unsigned long long>(); }

  void launch_features(const void* pts, DType in, const FeatureArgs& a, int64_t P, int point_blocks, int blocks,
                       cudaStream_t s) {
    const bool half_out = config_.feature_dtype == DType::Float16;
    if (in == DType::Float32 && half_out)
      launch_features_as(static_cast<const float*>(pts), features_.get<__half>(), a, P, point_blocks, blocks, s);
    else if (in == DType::Float32)
      launch_features_as(static_cast<const float*>(pts), features_.get<float>(), a, P, point_blocks, blocks, s);
    else if (half_out)
      launch_features_as(static_cast<const __half*>(pts), features_.get<__half>(), a, P, point_blocks, blocks, s);
    else
      launch_features_as(static_cast<const __half*>(pts), features_.get<float>(), a, P, point_blocks, blocks, s);
  }

  template <typename T, typename O>
  void launch_features_as(const T* pts, O* feat, const FeatureArgs& a, int64_t P, int point_blocks, int blocks,
                          cudaStream_t s) {
    int4* idx = indices_.get<int4>();
    features_kernel<<<blocks, kThreads, 0, s>>>(pts, g_, a, feat, idx, big_list_.get<int32_t>(),
                                                spill_base_.get<int32_t>(), counters(), stats_ptr());
    SCN_CUDA_LAUNCHED();
    spill_kernel<<<point_blocks, kThreads, 0, s>>>(P, spill_voxel_.get<int32_t>(), spill_order_.get<int32_t>(),
                                                   spill_base_.get<int32_t>(), spill_.get<uint32_t>());
    SCN_CUDA_LAUNCHED();
    big_voxels_kernel<<<sm_count_ * 4, kThreads, 0, s>>>(pts, g_, a, feat, idx, big_list_.get<int32_t>(), counters(),
                                                         bits(), coarse(), coarse_words_);
    SCN_CUDA_LAUNCHED();
  }

  void sync() {
    SCN_CHECK(ran_, "voxelizer '", config_.name, "': no run() yet");
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    SCN_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  /// The last run's statistics (a single frame's in the same form as a batch's).
  BatchState read_state() {
    sync();
    BatchState d{};
    if (batched_)
      SCN_CUDA_CHECK(cudaMemcpy(&d, batch_state(), sizeof(d), cudaMemcpyDeviceToHost));
    else
      SCN_CUDA_CHECK(cudaMemcpy(&d.stats, stats_ptr(), sizeof(d.stats), cudaMemcpyDeviceToHost));
    return d;
  }
  BatchState* batch_state() const { return batch_state_.get<BatchState>(); }
  void* out_features() const { return batched_ ? batch_features_.get() : features_.get(); }
  void* out_indices() const { return batched_ ? batch_indices_.get() : indices_.get(); }
  int64_t buffer_rows() const { return batched_ ? int64_t(max_batch_) * config_.max_voxels : config_.max_voxels; }

  int device_;
  Geometry g_;
  int sm_count_ = 1;
  int F_ = 0;
  int64_t coarse_words_ = 0;  ///< second-level words: bitmap words / kWordsPerCoarse, rounded up
  int64_t rank_blocks_ = 0;   ///< rank_kernel blocks: coarse_words_ / kCoarsePerRankBlock, rounded up
  DeviceBuffer bits_, coarse_, word_rank_, block_total_, block_prefix_;  // cell bitmaps and ranks
  DeviceBuffer keys_, spill_voxel_, spill_order_, spill_;                // per point
  DeviceBuffer counts_, slots_, spill_base_, big_list_;                  // per voxel
  DeviceBuffer staging_, small_, columns_, features_, indices_;
  DeviceBuffer batch_features_, batch_indices_, batch_state_, batch_offsets_;  // run_batch()'s output
  std::vector<int64_t> frame_points_;  ///< the last batch's point counts, for its overflow message
  cudaStream_t stream_ = nullptr;
  int64_t points_ = 0;
  bool ran_ = false;
  bool batched_ = false;  ///< the last run was run_batch(): the outputs are the batch buffers
};

static_assert(sizeof(DeviceStats) <= 64, "DeviceStats fits its slot in small_");
static_assert(sizeof(DeviceCounters) <= 64, "DeviceCounters fits its slot in small_");

}  // namespace

std::unique_ptr<Voxelizer> create_cuda_voxelizer(const VoxelizerConfig& config, int64_t max_points, int device,
                                                 int max_batch) {
  return std::make_unique<CudaVoxelizer>(config, max_points, device, max_batch);
}

}  // namespace scn::vox
