// Voxelizer::create and the CPU Voxelizer (voxelize() behind the reusable interface).
#include <chrono>
#include <cstring>

#include "scn/engine.h"
#include "scn/error.h"
#include "scn/timing.h"
#include "voxelize/voxelize_internal.h"

namespace scn {

namespace {

class CpuVoxelizer final : public Voxelizer {
 public:
  CpuVoxelizer(const VoxelizerConfig& c, int64_t max_points, int max_batch, int parallel_frames)
      : Voxelizer(c, max_points, max_batch, parallel_frames) {}

  Backend backend() const override { return Backend::Cpu; }

  void run(const Tensor& points, void*) override {
    vox::check_frame(points, config_, max_points_, "CPU voxelizer");
    ran_ = false;
    last_run_frames_ = 0;
    result_ = voxelize(points, config_);
    ran_ = true;
    last_run_frames_ = 1;
  }
  void run_batch(const std::vector<Tensor>& frames, void*) override {
    vox::check_batch(config_, frames.size(), max_batch_);
    for (const Tensor& f : frames) vox::check_frame(f, config_, max_points_, "CPU voxelizer");
    ran_ = false;
    last_run_frames_ = 0;
    std::vector<VoxelizeResult> parts;
    for (size_t b = 0; b < frames.size(); ++b) parts.push_back(voxelize(frames[b], vox::frame_config(config_, int(b))));
    result_ = concatenate(parts);
    ran_ = true;
    last_run_frames_ = int(frames.size());
  }
  int64_t count() override { return done().stats.voxels; }
  const int32_t* device_count() const override { return nullptr; }
  Tensor features() override { return done().features; }
  Tensor indices() override { return done().indices; }
  Tensor features_buffer() override { return done().features; }
  Tensor indices_buffer() override { return done().indices; }
  VoxelizeStats stats() override { return done().stats; }
  void check_errors() override {}
  std::vector<double> time_run(const Tensor& points, int warmup, int runs) override {
    check_timing_counts("voxelizer '" + config_.name + "': time_run", warmup, runs);
    for (int i = 0; i < warmup; ++i) run(points, nullptr);
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      run(points, nullptr);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return ms;
  }

 private:
  /// The frames' voxels one after another (their batch indices already set), statistics summed.
  VoxelizeResult concatenate(const std::vector<VoxelizeResult>& parts) const {
    int64_t n = 0;
    for (const VoxelizeResult& p : parts) n += p.stats.voxels;
    const int64_t F = int64_t(config_.feature_columns.size());
    VoxelizeResult r;
    r.features = Tensor::empty({n, F}, config_.feature_dtype);
    r.indices = Tensor::empty({n, 4}, DType::Int32);
    size_t fo = 0, io = 0;
    for (const VoxelizeResult& p : parts) {
      if (p.features.bytes())
        std::memcpy(static_cast<char*>(r.features.data()) + fo, p.features.data(), p.features.bytes());
      if (p.indices.bytes())
        std::memcpy(static_cast<char*>(r.indices.data()) + io, p.indices.data(), p.indices.bytes());
      fo += p.features.bytes();
      io += p.indices.bytes();
      r.stats.points += p.stats.points;
      r.stats.voxels += p.stats.voxels;
      r.stats.dropped_out_of_range += p.stats.dropped_out_of_range;
      r.stats.dropped_non_finite += p.stats.dropped_non_finite;
      r.stats.dropped_full += p.stats.dropped_full;
    }
    return r;
  }

  const VoxelizeResult& done() const {
    SCN_CHECK(ran_, "voxelizer '", config_.name, "': no successful run() yet");
    return result_;
  }
  VoxelizeResult result_;
  bool ran_ = false;
};

}  // namespace

std::unique_ptr<Voxelizer> Voxelizer::create(const VoxelizerConfig& config, Backend backend, int64_t max_points,
                                             int device, int max_batch, int parallel_frames) {
  validate(config);
  SCN_CHECK(max_points >= 1 && max_points < (int64_t(1) << 31), "voxelizer '", config.name,
            "': max_points = ", max_points, " must lie in 1..2^31-1");
  SCN_CHECK(max_batch >= 1 && int64_t(max_batch) * config.max_voxels < (int64_t(1) << 31), "voxelizer '", config.name,
            "': max_batch = ", max_batch, " must be at least 1, with max_batch x max_voxels (", config.max_voxels,
            ") below 2^31");
  SCN_CHECK(parallel_frames >= 0 && parallel_frames <= max_batch, "voxelizer '", config.name,
            "': parallel_frames = ", parallel_frames, " must lie in 0..max_batch (", max_batch, "); 0 means max_batch");
  if (parallel_frames == 0) parallel_frames = max_batch;
  if (backend == Backend::Auto) backend = cuda_available() ? Backend::Cuda : Backend::Cpu;
  if (backend == Backend::Cpu) return std::make_unique<CpuVoxelizer>(config, max_points, max_batch, parallel_frames);
#ifdef SCN_WITH_CUDA
  return vox::create_cuda_voxelizer(config, max_points, device, max_batch, parallel_frames);
#else
  SCN_FAIL("voxelizer '", config.name,
           "': the CUDA backend was requested but this build of scn has no CUDA (configure with -DSCN_WITH_CUDA=ON)");
#endif
}

}  // namespace scn
