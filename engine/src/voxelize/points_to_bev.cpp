// scn::bind_voxelizer_output and scn::time_points_to_bev: the voxelizer's output as an engine input, and raw points ->
// outputs timed (the CPU here; CUDA graphs in points_to_bev_cuda.cpp).
#include "scn/points_to_bev.h"

#include <chrono>
#include <string>

#include "scn/error.h"
#include "scn/timing.h"
#include "voxelize/voxelize_internal.h"

namespace scn {

namespace {

void check_same_backend(const Engine& engine, const Voxelizer& vox) {
  SCN_CHECK(engine.backend() == vox.backend(), engine.graph().source, ": the engine runs on ",
            backend_name(engine.backend()), ", voxelizer '", vox.config().name, "' on ", backend_name(vox.backend()),
            "; build both for one backend");
}

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// Wall-clock milliseconds of `runs` calls of f after `warmup` untimed ones.
template <typename F>
std::vector<double> wall_times(int warmup, int runs, const F& f) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(ms_between(t0, std::chrono::steady_clock::now()));
  }
  return ms;
}

}  // namespace

namespace vox {

void run_frames(Voxelizer& vox, const std::vector<Tensor>& frames, void* stream) {
  if (frames.size() == 1)
    vox.run(frames[0], stream);
  else
    vox.run_batch(frames, stream);
}

}  // namespace vox

void bind_voxelizer_output(Engine& engine, Voxelizer& vox, const Int3& grid, int batch_size, int input) {
  check_same_backend(engine, vox);
  // The batch size is the engine's for every later forward (CUDA reads each later run through the same buffers and
  // count): bound to the frames that ran, a mismatch shows here rather than as empty frames or a device error.
  const int ran = vox.last_run_frames();
  SCN_CHECK(
      batch_size == (ran > 0 ? ran : 1), engine.graph().source, ": bind_voxelizer_output: batch_size ", batch_size,
      ", but voxelizer '", vox.config().name, "' ",
      ran > 0 ? "last ran " + std::to_string(ran) + (ran == 1 ? " frame" : " frames") : std::string("has not run"),
      " (bind a batch after a run_batch() of its frames; a single frame before or after run())");
  const InputLabels labels{"voxelizer '" + vox.config().name + "' features",
                           "voxelizer '" + vox.config().name + "' indices"};
  if (vox.backend() == Backend::Cuda)
    engine.set_input_device_count(input, vox.features_buffer(), vox.indices_buffer(), vox.device_count(), grid,
                                  batch_size, labels);
  else
    engine.set_input(input, vox.features(), vox.indices(), grid, batch_size, labels);
}

PointsToBevTiming time_points_to_bev(Engine& engine, Voxelizer& vox, const std::vector<Tensor>& frames,
                                     const Int3& grid, int warmup, int runs, int input) {
  check_same_backend(engine, vox);
  SCN_CHECK(!frames.empty(), engine.graph().source,
            ": time_points_to_bev got no frames (one frame, or a batch of up "
            "to max_batch)");
  check_timing_counts(engine.graph().source + ": time_points_to_bev", warmup, runs);
#ifdef SCN_WITH_CUDA
  if (vox.backend() == Backend::Cuda) return vox::time_points_graphs(engine, vox, frames, grid, warmup, runs, input);
#endif
  const int batch = int(frames.size());
  const auto voxelize = [&] { vox::run_frames(vox, frames, nullptr); };
  const auto both = [&] {
    voxelize();
    bind_voxelizer_output(engine, vox, grid, batch, input);
    engine.forward();
  };
  both();  // plans the engine for these voxels; raises an overflow
  engine.check_errors();
  PointsToBevTiming t;
  t.voxels = vox.count();
  t.total_ms = wall_times(warmup, runs, both);
  t.voxelizer_ms = wall_times(warmup, runs, voxelize);
  bind_voxelizer_output(engine, vox, grid, batch, input);
  t.network_ms = wall_times(warmup, runs, [&] { engine.forward(); });
  engine.check_errors();
  return t;
}

}  // namespace scn
