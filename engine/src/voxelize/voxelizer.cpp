// Voxelizer::create and the CPU Voxelizer (voxelize() behind the reusable interface).
#include <chrono>

#include "scn/engine.h"
#include "scn/error.h"
#include "voxelize/voxelize_internal.h"

namespace scn {

namespace {

class CpuVoxelizer final : public Voxelizer {
 public:
  CpuVoxelizer(const VoxelizerConfig& c, int64_t max_points) : Voxelizer(c, max_points) {}

  Backend backend() const override { return Backend::Cpu; }

  void run(const Tensor& points, void*) override {
    vox::check_points(points, config_, "CPU voxelizer");
    SCN_CHECK(points.dim(0) <= max_points_, "voxelizer '", config_.name, "': ", points.dim(0),
              " points exceed max_points = ", max_points_, " the voxelizer was created for");
    ran_ = false;
    result_ = voxelize(points, config_);
    ran_ = true;
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
  const VoxelizeResult& done() const {
    SCN_CHECK(ran_, "voxelizer '", config_.name, "': no successful run() yet");
    return result_;
  }
  VoxelizeResult result_;
  bool ran_ = false;
};

}  // namespace

std::unique_ptr<Voxelizer> Voxelizer::create(const VoxelizerConfig& config, Backend backend, int64_t max_points,
                                             int device) {
  validate(config);
  SCN_CHECK(max_points >= 1 && max_points < (int64_t(1) << 31), "voxelizer '", config.name,
            "': max_points = ", max_points, " must lie in 1..2^31-1");
  if (backend == Backend::Auto) backend = cuda_available() ? Backend::Cuda : Backend::Cpu;
  if (backend == Backend::Cpu) return std::make_unique<CpuVoxelizer>(config, max_points);
#ifdef SCN_WITH_CUDA
  return vox::create_cuda_voxelizer(config, max_points, device);
#else
  SCN_FAIL("voxelizer '", config.name,
           "': the CUDA backend was requested but this build of scn has no CUDA (configure with -DSCN_WITH_CUDA=ON)");
#endif
}

}  // namespace scn
