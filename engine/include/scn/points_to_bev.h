// scn — raw points to a network's outputs: a Voxelizer's output bound as an Engine input, and the whole path timed.
//
//   auto vox = scn::Voxelizer::create(cfg, scn::Backend::Cuda, 300000);
//   auto engine = scn::load_engine_from_onnx("backbone.onnx", options);
//   scn::PointsToBevTiming t = scn::time_points_to_bev(*engine, *vox, {points}, scn::model_grid(cfg), 50, 500);
//   // t.total_ms: voxelizer + network per run (CUDA: one CUDA graph), t.voxelizer_ms and t.network_ms alone;
//   // host points (CUDA): t.upload_ms their copy to the device, t.from_host_ms copy + voxelizer + network
//
// To run the path (not time it): bind_voxelizer_output() once (CUDA) or after each run (CPU), then
// Voxelizer::run(points, stream) and Engine::forward(stream) on one stream (docs/voxelize.md).
#pragma once

#include <cstdint>
#include <vector>

#include "scn/engine.h"
#include "scn/voxelize.h"

namespace scn {

/// Binds the voxelizer's output as graph input `input` of `engine`, a batch of `batch_size` frames (1: the last
/// run(); more: the last run_batch() of that many frames). CUDA: the voxelizer's buffers by device count
/// (Engine::set_input_device_count): bound once, each later run of the voxelizer is the next forward's input, no host
/// wait. CPU: the last run's voxels (Engine::set_input): bind again after each run. Engine and voxelizer must run on
/// the same backend (an scn::Error names both otherwise). batch_size must be the frames of the voxelizer's last run
/// (Voxelizer::last_run_frames; 1 before any run), else an scn::Error names both counts. CUDA: run() and run_batch()
/// write the same buffers and count, so a binding reads whatever ran last; the engine keeps the batch size it was
/// bound with: a later run of more frames is a device error naming a row's batch index (check_errors), one of fewer
/// frames leaves the later frames of the batch without voxels.
void bind_voxelizer_output(Engine& engine, Voxelizer& vox, const Int3& grid, int batch_size = 1, int input = 0);

struct PointsToBevTiming {
  std::vector<double> total_ms;      ///< points -> outputs per run: the voxelizer and the forward
  std::vector<double> voxelizer_ms;  ///< the voxelizer alone per run
  std::vector<double> network_ms;    ///< the forward alone per run, on the same voxels
  /// CUDA, frames given in host memory: the host frames' copies to the device alone per run (from pinned host memory,
  /// where a driver's buffer would be), and the voxelizer given the frames in pinned memory (it copies each on its
  /// lane's stream) followed by the forward, in one CUDA graph per run. Empty on the CPU and when every frame is
  /// already on the device (nothing to upload).
  std::vector<double> upload_ms;
  std::vector<double> from_host_ms;
  int64_t voxels = 0;  ///< voxels of the frames (their sum for a batch)
};

/// Times raw points -> outputs for `frames` (one frame: Voxelizer::run; several: run_batch, one batch of that many):
/// `runs` runs after `warmup` of each of the three measurements. A first run outside the timing plans and (CUDA)
/// tunes the engine for these voxels and raises any overflow. CUDA: each measurement is one CUDA graph (the
/// voxelizer's kernels and the forward captured together on a stream of its own, the voxel count never leaving the
/// device), timed with CUDA events around its launches. Host frames are copied to the device once for total_ms,
/// voxelizer_ms and network_ms (as Voxelizer::time_run, those figures leave the upload out) and are timed with it in
/// upload_ms and from_host_ms. CPU: wall clock of run + set_input + forward. The engine is left bound to the
/// voxelizer's output (bind_voxelizer_output), and the voxelizer having run the frames (CUDA: once more on the legacy
/// stream after the timing, whose stream ends with the call).
PointsToBevTiming time_points_to_bev(Engine& engine, Voxelizer& vox, const std::vector<Tensor>& frames,
                                     const Int3& grid, int warmup, int runs, int input = 0);

}  // namespace scn
