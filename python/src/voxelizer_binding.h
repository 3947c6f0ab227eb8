// scn._scn._Voxelizer: an scn::Voxelizer called with DLPack point arrays (python/scn/_voxelizer.py wraps it), and
// what the engine's binding needs of it to bind its buffers as a device-count input (points -> BEV without a host
// wait).
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "arrays.h"
#include "scn/voxelize.h"

namespace scn::py {

/// "zyx" / "xyz", the spelling of the settings and of a model's ScatterDense `format`.
inline const char* voxel_order_name(VoxelOrder o) { return o == VoxelOrder::Zyx ? "zyx" : "xyz"; }

class PyVoxelizer {
 public:
  PyVoxelizer(const VoxelizerConfig& config, const std::string& device, int64_t max_points, int device_index,
              int max_batch, int parallel_frames);

  bool cuda() const { return vox_->backend() == scn::Backend::Cuda; }
  int device_index() const { return device_index_; }
  /// "the cpu voxelizer" / "the cuda:0 voxelizer", for messages.
  std::string label() const;
  scn::Voxelizer& get() { return *vox_; }
  const VoxelizerConfig& config() const { return vox_->config(); }
  std::mutex& mutex() { return mutex_; }

  /// The points of one call: one frame [P, point_columns] float32 / float16 (host, or the voxelizer's CUDA device), or
  /// a list / tuple of such frames (a batch), as tensors over the caller's memory.
  struct PointsCall {
    bool batch = false;               ///< a list / tuple: run_batch, frame b with batch index b
    std::vector<scn::Tensor> frames;  ///< one tensor per frame
    std::vector<Array> kept;          ///< the caller's arrays: kept alive until the voxelizer's next run
  };
  PointsCall import_points(nb::handle points) const;
  /// Enqueues the call (run or run_batch) on `stream`; the caller holds mutex() and has released the GIL.
  void enqueue(const PointsCall& call, void* stream);
  /// Keeps the points of the call just enqueued alive (CUDA reads them in stream order); with the GIL held, as the
  /// points of the previous call are let go of here.
  void keep_points(PointsCall&& call) { kept_points_ = std::move(call.kept); }

  /// Voxelizes `points`: one frame, or a list / tuple of frames as one batched input (frame b: batch index b)
  /// (CUDA: enqueued on `stream`, no host wait; CPU: at once).
  void run(nb::handle points, uintptr_t stream);
  /// Part 0: features [count, F], 1: indices [count, 4] of the last run (synchronises; a view of the voxelizer's
  /// buffers, valid until its next run) as an array of `framework` (0 capsule, 1 numpy, 2 torch).
  nb::object output(nb::handle self, int part, int framework);
  int64_t count();
  /// points, voxels, dropped out of range, dropped non-finite, dropped beyond max_points_per_voxel.
  std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t> stats();
  void check_errors();

 private:
  std::unique_ptr<scn::Voxelizer> vox_;
  int device_index_ = 0;
  Placement where_;  ///< where run() reads points
  std::vector<Array> kept_points_;
  std::mutex mutex_;
};

/// Registers VoxelizerConfig, the presets and _Voxelizer on the module.
void bind_voxelizer(nb::module_& m);

}  // namespace scn::py
