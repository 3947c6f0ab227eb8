// The CUDA voxelizer (scn::Voxelizer on CUDA): its buffers, sized once at construction, and the launches of the
// kernels of voxelize_kernels.cuh (whose header describes the six steps) for run() and run_batch(). A frame's kernels
// work in a lane (its bitmaps, ranks, per-point and per-voxel buffers) and write the frame's own statistics; run() uses
// lane 0 on the caller's stream, run_batch() gives frame b lane b mod parallel_frames, the lanes after the first on
// streams of their own forked from the caller's and joined to it, so the lanes' frames overlap (a lane's frames run one
// after another on its stream). Every frame writes its rows into the one output buffer behind those of the frames
// before it: its kernels that write rows wait (events) until every earlier frame has counted its voxels, then one
// kernel sums the batch's statistics. Both enqueue only: no allocation, no host synchronisation; count(), stats() and
// the outputs synchronise on the stream of the last run.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_mem.h"
#include "backends/cuda/stream_timing.h"
#include "scn/error.h"
#include "scn/timing.h"
#include "voxelize/voxelize_internal.h"
#include "voxelize/voxelize_kernels.cuh"

namespace scn::vox {

namespace {

using DeviceBuffer = cuda::DevMem;  // owned device memory (backends/cuda/cuda_mem.h)
using cuda::OwnedEvent;             // owned streams and events (backends/cuda/stream_timing.h)
using cuda::OwnedStream;

class CudaVoxelizer final : public Voxelizer {
 public:
  CudaVoxelizer(const VoxelizerConfig& c, int64_t max_points, int device, int max_batch, int parallel_frames)
      : Voxelizer(c, max_points, max_batch, parallel_frames), device_(device), g_(make_geometry(c)) {
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
    const size_t V = size_t(std::min<int64_t>(max_points, c.max_voxels));
    lanes_.resize(size_t(parallel_frames));
    for (size_t l = 0; l < lanes_.size(); ++l) {
      Lane& lane = lanes_[l];
      alloc(lane.bits, padded_words * 8);
      alloc(lane.coarse, size_t(coarse_words_) * 8);
      alloc(lane.word_rank, padded_words * 4);
      alloc(lane.block_total, size_t(rank_blocks_) * 4);
      alloc(lane.block_prefix, size_t(rank_blocks_) * 4);
      for (DeviceBuffer* b : {&lane.keys, &lane.spill_voxel, &lane.spill_order, &lane.spill}) alloc(*b, P * 4);
      alloc(lane.counts, (V + 1) * 4);
      alloc(lane.slots, (V + 1) * kSlots * 4);
      alloc(lane.spill_base, (V + 1) * 4);
      alloc(lane.big_list, (V + 1) * 4);
      alloc(lane.staging, P * size_t(c.point_columns) * 4);
      // The bitmaps start clear once; every run clears what it set (big_voxels_kernel).
      SCN_CUDA_CHECK(cudaMemset(lane.bits.get(), 0, lane.bits.bytes()));
      SCN_CUDA_CHECK(cudaMemset(lane.coarse.get(), 0, lane.coarse.bytes()));
      if (l > 0) {
        lane.stream = std::make_unique<OwnedStream>();
        lane.done = std::make_unique<OwnedEvent>();
      }
      if (parallel_frames > 1) lane.counted = std::make_unique<OwnedEvent>();
    }
    fork_ = std::make_unique<OwnedEvent>();  // streams and events on the voxelizer's device (set above)
    alloc(small_, size_t(max_batch) * kSmallBytes);
    SCN_CUDA_CHECK(cudaMemset(small_.get(), 0, small_.bytes()));
    alloc(batch_state_, sizeof(BatchState));
    SCN_CUDA_CHECK(cudaMemset(batch_state_.get(), 0, batch_state_.bytes()));  // device_count() is 0 before any run
    // The memsets above run on the legacy stream without a host wait; the copy below, from pageable memory,
    // synchronises that stream first, so a first run on a non-blocking stream finds them all written.
    alloc(columns_, size_t(F_) * sizeof(int));
    SCN_CUDA_CHECK(
        cudaMemcpy(columns_.get(), c.feature_columns.data(), size_t(F_) * sizeof(int), cudaMemcpyHostToDevice));
    row_bytes_ = size_t(F_) * dtype_size(c.feature_dtype);
    const size_t batch_rows = size_t(max_batch) * size_t(c.max_voxels);
    alloc(features_, batch_rows * row_bytes_);
    alloc(indices_, batch_rows * 16);
  }
  ~CudaVoxelizer() override { cudaSetDevice(device_); }  // then the members free the device's memory and streams

  Backend backend() const override { return Backend::Cuda; }
  size_t workspace_bytes() const override { return workspace_bytes_; }

  void run(const Tensor& points, void* stream) override {
    check_frame(points, config_, max_points_, "CUDA voxelizer");
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    batched_ = false;
    last_run_frames_ = 0;
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    enqueue(points, FramePlace{0, 0, config_.batch_index, false, true}, s);
    stream_ = s;
    points_ = points.dim(0);
    ran_ = true;
    last_run_frames_ = 1;
  }

  void run_batch(const std::vector<Tensor>& frames, void* stream) override {
    check_batch(config_, frames.size(), max_batch_);
    for (const Tensor& f : frames) check_frame(f, config_, max_points_, "CUDA voxelizer");  // before any enqueue
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    batched_ = false;
    last_run_frames_ = 0;
    // Lanes 1.. start after what the caller enqueued on s so far and end before the batch's statistics (events: no
    // host wait; inside the caller's graph capture they become parallel branches of it). Frame b works in lane b mod
    // L, after the lane's previous frame on the lane's stream; its rows come after every earlier frame has counted.
    const size_t nb = frames.size(), L = lanes_.size();
    const bool cross_lane = nb > 1 && L > 1;
    if (cross_lane) SCN_CUDA_CHECK(cudaEventRecord(fork_->e, s));
    frame_points_.clear();
    int64_t points = 0;
    for (size_t b = 0; b < nb; ++b) {
      const size_t l = b % L;
      Lane& lane = lanes_[l];
      cudaStream_t ls = l == 0 ? s : lane.stream->s;
      if (l > 0 && b == l) SCN_CUDA_CHECK(cudaStreamWaitEvent(ls, fork_->e, 0));  // the lane's first frame
      enqueue(frames[b], FramePlace{int(b), int(l), int(b), cross_lane, false}, ls);
      if (l > 0 && b + L >= nb) {  // the lane's last frame
        SCN_CUDA_CHECK(cudaEventRecord(lane.done->e, ls));
        SCN_CUDA_CHECK(cudaStreamWaitEvent(s, lane.done->e, 0));
      }
      frame_points_.push_back(frames[b].dim(0));
      points += frames[b].dim(0);
    }
    batch_state_kernel<<<1, 1, 0, s>>>(small_.get<char>(), int64_t(kSmallBytes), int(kCountersOffset), int(nb),
                                       batch_state());
    SCN_CUDA_LAUNCHED();
    stream_ = s;
    points_ = points;
    ran_ = true;
    batched_ = true;
    last_run_frames_ = int(nb);
  }

  int64_t count() override {
    sync();
    check_errors();
    int32_t n = 0;
    SCN_CUDA_CHECK(cudaMemcpy(&n, device_count(), 4, cudaMemcpyDeviceToHost));
    return n;
  }
  // One count and one pair of buffers for either kind of run: an engine bound once reads whatever ran last.
  const int32_t* device_count() const override { return &batch_state()->total; }
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
    check_timing_counts("voxelizer '" + config_.name + "': time_run", warmup, runs);
    SCN_CUDA_CHECK(cudaSetDevice(device_));
    const Tensor dev = points.to(Device::Cuda);  // time the voxelizer, not the upload
    std::vector<double> ms;
    {
      const OwnedStream s;
      for (int i = 0; i < warmup; ++i) run(dev, s.s);
      ms = cuda::time_enqueues(s.s, runs, [&] { run(dev, s.s); });
      SCN_CUDA_CHECK(cudaStreamSynchronize(s.s));
      stream_ = nullptr;  // this stream ends here (its work done): count() and stats() then use the legacy stream
    }
    check_errors();
    return ms;
  }

 private:
  /// Allocates b and counts it in workspace_bytes().
  void alloc(DeviceBuffer& b, size_t bytes) {
    b.alloc(bytes);
    workspace_bytes_ += b.bytes();
  }

  /// Where a frame runs and writes: frame f of the batch (its statistics slot; its rows follow frames 0..f-1's), in
  /// lane l (f mod the lanes), with this batch index in its rows. With cross_lane, the frames before f on lanes other
  /// than l ran on other streams: f records its lane's `counted` event once it has counted its voxels, and waits for
  /// those lanes' events (their latest frames, all before f) before it writes rows.
  struct FramePlace {
    int f, l, batch_index;
    bool cross_lane;
    bool
        single;  ///< run(): the frame's count is also the output's (BatchState::total, batch_state_kernel's in a batch)
  };

  /// Frame p.f's six kernels in lane p.l (its bitmaps and buffers), writing the frame's statistics and output rows,
  /// enqueued on s (the lane's previous frame before them on s).
  void enqueue(const Tensor& points, const FramePlace& p, cudaStream_t s) {
    const int f = p.f, l = p.l;
    Lane& lane = lanes_[size_t(l)];
    const int64_t P = points.dim(0);
    const void* pts = points.data();
    // host points: from pageable memory the host waits for the copy, from pinned memory it is asynchronous (and can be
    // captured into a graph)
    if (points.device() == Device::Host && P > 0) {
      SCN_CUDA_CHECK(cudaMemcpyAsync(lane.staging.get(), points.data(), points.bytes(), cudaMemcpyHostToDevice, s));
      pts = lane.staging.get();
    }
    SCN_CUDA_CHECK(cudaMemsetAsync(small_.get<char>() + size_t(f) * kSmallBytes, 0, kSmallBytes, s));
    const int64_t V = std::min<int64_t>(P, config_.max_voxels);  // voxels that can be written
    const int blocks = int(std::max<int64_t>(1, (P + kThreads - 1) / kThreads));
    unsigned long long* bits = lane.bits.get<unsigned long long>();
    unsigned long long* coarse = lane.coarse.get<unsigned long long>();
    if (P > 0) {
      if (points.dtype() == DType::Float32)
        classify_kernel<<<blocks, kThreads, 0, s>>>(static_cast<const float*>(pts), P, config_.point_columns, g_,
                                                    lane.keys.get<uint32_t>(), bits, coarse, lane.counts.get<int32_t>(),
                                                    V, stats(f));
      else
        classify_kernel<<<blocks, kThreads, 0, s>>>(static_cast<const __half*>(pts), P, config_.point_columns, g_,
                                                    lane.keys.get<uint32_t>(), bits, coarse, lane.counts.get<int32_t>(),
                                                    V, stats(f));
      SCN_CUDA_LAUNCHED();
    }
    rank_kernel<<<int(rank_blocks_), kThreads, 0, s>>>(
        bits, coarse, coarse_words_, lane.word_rank.get<int32_t>(), lane.block_total.get<int32_t>(),
        lane.block_prefix.get<int32_t>(), int32_t(config_.max_voxels), stats(f), counters(f),
        p.single ? &batch_state()->total : nullptr);
    SCN_CUDA_LAUNCHED();
    if (p.cross_lane) SCN_CUDA_CHECK(cudaEventRecord(lane.counted->e, s));
    if (P > 0) {
      count_kernel<<<blocks, kThreads, 0, s>>>(
          lane.keys.get<uint32_t>(), P, g_.cells, bits, lane.word_rank.get<int32_t>(), lane.block_prefix.get<int32_t>(),
          int32_t(config_.max_voxels), lane.counts.get<int32_t>(), lane.slots.get<uint32_t>(),
          lane.spill_voxel.get<int32_t>(), lane.spill_order.get<int32_t>());
      SCN_CUDA_LAUNCHED();
      FeatureArgs a{lane.keys.get<uint32_t>(),
                    lane.counts.get<int32_t>(),
                    lane.slots.get<uint32_t>(),
                    lane.spill_base.get<int32_t>(),
                    lane.spill.get<uint32_t>(),
                    &counters(f)->count,
                    columns_.get<int>(),
                    F_,
                    config_.point_columns,
                    config_.max_points_per_voxel,
                    config_.reduction == VoxelReduction::Mean ? 1 : 0,
                    p.batch_index,
                    f,
                    int(kSmallBytes / sizeof(int32_t))};
      const int fblocks = int(std::min<int64_t>((V + kThreads - 1) / kThreads, int64_t(sm_count_) * 8));
      if (p.cross_lane)  // the rows of the earlier frames on other lanes (lanes 0..f-1 hold a frame before f): counts
        for (int o = 0; o < std::min(f, int(lanes_.size())); ++o)
          if (o != l) SCN_CUDA_CHECK(cudaStreamWaitEvent(s, lanes_[size_t(o)].counted->e, 0));
      launch_features(pts, points.dtype(), a, f, l, P, blocks, fblocks, s);
    }
  }

  /// small_: per frame of max_batch kSmallBytes, DeviceStats then DeviceCounters (one memset per frame clears both).
  static constexpr size_t kCountersOffset = 64;
  static constexpr size_t kSmallBytes = 128;
  DeviceStats* stats(int f) const {
    return reinterpret_cast<DeviceStats*>(small_.get<char>() + size_t(f) * kSmallBytes);
  }
  DeviceCounters* counters(int f) const {
    return reinterpret_cast<DeviceCounters*>(small_.get<char>() + size_t(f) * kSmallBytes + kCountersOffset);
  }
  void launch_features(const void* pts, DType in, const FeatureArgs& a, int f, int l, int64_t P, int point_blocks,
                       int blocks, cudaStream_t s) {
    const bool half_out = config_.feature_dtype == DType::Float16;
    char* feat = features_.get<char>();  // the kernels start at the frame's first row (rows_before)
    if (in == DType::Float32 && half_out)
      launch_features_as(static_cast<const float*>(pts), reinterpret_cast<__half*>(feat), a, f, l, P, point_blocks,
                         blocks, s);
    else if (in == DType::Float32)
      launch_features_as(static_cast<const float*>(pts), reinterpret_cast<float*>(feat), a, f, l, P, point_blocks,
                         blocks, s);
    else if (half_out)
      launch_features_as(static_cast<const __half*>(pts), reinterpret_cast<__half*>(feat), a, f, l, P, point_blocks,
                         blocks, s);
    else
      launch_features_as(static_cast<const __half*>(pts), reinterpret_cast<float*>(feat), a, f, l, P, point_blocks,
                         blocks, s);
  }

  template <typename T, typename O>
  void launch_features_as(const T* pts, O* feat, const FeatureArgs& a, int f, int l, int64_t P, int point_blocks,
                          int blocks, cudaStream_t s) {
    Lane& lane = lanes_[size_t(l)];
    int4* idx = indices_.get<int4>();
    features_kernel<<<blocks, kThreads, 0, s>>>(pts, g_, a, feat, idx, lane.big_list.get<int32_t>(),
                                                lane.spill_base.get<int32_t>(), counters(f), stats(f));
    SCN_CUDA_LAUNCHED();
    spill_kernel<<<point_blocks, kThreads, 0, s>>>(P, lane.spill_voxel.get<int32_t>(), lane.spill_order.get<int32_t>(),
                                                   lane.spill_base.get<int32_t>(), lane.spill.get<uint32_t>());
    SCN_CUDA_LAUNCHED();
    big_voxels_kernel<<<sm_count_ * 4, kThreads, 0, s>>>(pts, g_, a, feat, idx, lane.big_list.get<int32_t>(),
                                                         counters(f), lane.bits.get<unsigned long long>(),
                                                         lane.coarse.get<unsigned long long>(), coarse_words_);
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
      SCN_CUDA_CHECK(cudaMemcpy(&d.stats, stats(0), sizeof(d.stats), cudaMemcpyDeviceToHost));
    return d;
  }
  BatchState* batch_state() const { return batch_state_.get<BatchState>(); }
  void* out_features() const { return features_.get(); }
  void* out_indices() const { return indices_.get(); }
  int64_t buffer_rows() const { return int64_t(max_batch_) * config_.max_voxels; }

  /// A frame's workspace (run(): lane 0; run_batch(): frame b in lane b mod parallel_frames). Lanes 1.. have their own
  /// stream and an event marking the end of their last frame.
  struct Lane {
    DeviceBuffer bits, coarse, word_rank, block_total, block_prefix;  // cell bitmaps and ranks
    DeviceBuffer keys, spill_voxel, spill_order, spill;               // per point
    DeviceBuffer counts, slots, spill_base, big_list;                 // per voxel
    DeviceBuffer staging;                                             // host points copied in
    std::unique_ptr<OwnedStream> stream;                              // lanes 1..
    std::unique_ptr<OwnedEvent> done;                                 // lanes 1..: their frames' end on `stream`
    std::unique_ptr<OwnedEvent> counted;  // parallel_frames > 1: its latest frame's voxels counted (FramePlace)
  };

  int device_;
  Geometry g_;
  int sm_count_ = 1;
  int F_ = 0;
  size_t row_bytes_ = 0;              ///< bytes of a feature row
  size_t workspace_bytes_ = 0;        ///< every buffer alloc() made
  int64_t coarse_words_ = 0;          ///< second-level words: bitmap words / kWordsPerCoarse, rounded up
  int64_t rank_blocks_ = 0;           ///< rank_kernel blocks: coarse_words_ / kCoarsePerRankBlock, rounded up
  std::vector<Lane> lanes_;           ///< parallel_frames of them
  std::unique_ptr<OwnedEvent> fork_;  ///< run_batch(): the caller's stream when the batch was enqueued
  DeviceBuffer small_, columns_;
  DeviceBuffer features_, indices_;  ///< the output rows: max_batch x max_voxels, each frame's behind the earlier ones'
  DeviceBuffer batch_state_;         ///< run_batch()'s count and statistics
  std::vector<int64_t> frame_points_;  ///< the last batch's point counts, for its overflow message
  cudaStream_t stream_ = nullptr;
  int64_t points_ = 0;
  bool ran_ = false;
  bool batched_ = false;  ///< the last run was run_batch(): its statistics are batch_state's
};

static_assert(sizeof(DeviceStats) <= 64, "DeviceStats fits its slot in small_");
static_assert(sizeof(DeviceCounters) <= 64, "DeviceCounters fits its slot in small_");

}  // namespace

std::unique_ptr<Voxelizer> create_cuda_voxelizer(const VoxelizerConfig& config, int64_t max_points, int device,
                                                 int max_batch, int parallel_frames) {
  return std::make_unique<CudaVoxelizer>(config, max_points, device, max_batch, parallel_frames);
}

}  // namespace scn::vox
