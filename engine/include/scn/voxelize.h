// scn — voxelization: raw LiDAR points [P, C] -> voxel features [N, F] and indices [N, 4].
//
//   auto cfg = scn::voxelizer_preset("nuscenes-centerpoint");
//   scn::VoxelizeResult v = scn::voxelize(points, cfg);          // CPU, the oracle
//   engine->set_input(0, v.features, v.indices, scn::model_grid(cfg));
//
//   auto vox = scn::Voxelizer::create(cfg, scn::Backend::Cuda, 300000);  // CUDA: enqueue only
//   vox->run(device_points, stream);                                       // no host sync
//   const int32_t* n = vox->device_count();                                // N stays on the device
//   vox->run_batch({frame0, frame1}, stream);  // one batched input: batch index b for frame b (max_batch >= 2)
//   // a batch in less memory: Voxelizer::create(cfg, scn::Backend::Cuda, 300000, 0, 8, /*parallel_frames=*/2)
//
// The rules (docs/voxelize.md):
//  - cell of a point: floor((p - min) / size) per axis, in float32 (IEEE subtract, IEEE divide,
//    no FMA, no fast math), as NVIDIA's voxelization kernel computes it;
//  - a point is kept when x, y, z are finite, min <= p < max on every axis (half-open) and its
//    cell lies inside the grid; the others are dropped and counted (non-finite / out of range);
//  - a voxel keeps its first max_points_per_voxel points in INPUT order; the rest are counted;
//  - voxels come out in ascending order of their indices (i0, i1, i2) in the chosen index order;
//  - Mean: the kept points' columns summed in float32 in input order, then one divide by the
//    count (First: the first point's columns); CPU and CUDA results are bitwise equal;
//  - more voxels than max_voxels is an error (scn::Error; CUDA: a device flag raised by
//    check_errors()), never a silent truncation.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "scn/tensor.h"
#include "scn/types.h"

namespace scn {

enum class VoxelReduction { Mean, First };

/// Index order of the voxel indices and grids: Zyx = (b, z, y, x) as CenterPoint / OpenPCDet,
/// Xyz = (b, x, y, z) as BEVFusion exported with --origin.
enum class VoxelOrder { Zyx, Xyz };

struct VoxelizerConfig {
  std::string name = "custom";                   ///< preset name, for messages
  std::array<float, 6> range{0, 0, 0, 0, 0, 0};  ///< x0 y0 z0 x1 y1 z1 (metres), half-open [min, max)
  std::array<float, 3> voxel_size{0, 0, 0};      ///< x y z (metres)
  int max_points_per_voxel = 1;
  int64_t max_voxels = 1;
  VoxelReduction reduction = VoxelReduction::Mean;
  int point_columns = 4;                         ///< columns of a point row; x, y, z are columns 0, 1, 2
  std::vector<int> feature_columns{0, 1, 2, 3};  ///< point columns that become the features, in order
  VoxelOrder order = VoxelOrder::Zyx;
  int32_t batch_index = 0;               ///< written into column 0 of the indices
  DType feature_dtype = DType::Float16;  ///< Float16 or Float32
  /// spconv convention (OpenPCDet, CenterPoint, NVIDIA): the network's grid has one z plane more
  /// than the voxel grid (41 for 40). model_grid() adds it; check_grid() accepts both.
  bool model_z_plus_one = true;
};

/// Names of the presets: "nuscenes-centerpoint", "kitti-second", "waymo-centerpoint".
std::vector<std::string> voxelizer_preset_names();
/// A preset by name; throws scn::Error listing the names for an unknown one.
VoxelizerConfig voxelizer_preset(const std::string& name);
/// Throws scn::Error naming the field of the first invalid setting.
void validate(const VoxelizerConfig& config);

/// The voxel grid that follows from range and size (round((max - min) / size) per axis, in
/// float32 as NVIDIA's voxelizer does), in the config's index order.
Int3 voxel_grid(const VoxelizerConfig& config);
/// The grid to bind the network input with: voxel_grid() with one z plane more when
/// model_z_plus_one is set.
Int3 model_grid(const VoxelizerConfig& config);
/// Checks a model's input grid (in the config's index order) against the voxel grid. Returns a
/// one-line note of how they relate ("equal" or "z + 1 (spconv convention)"); throws scn::Error
/// saying both grids and which axis disagrees otherwise.
std::string check_grid(const VoxelizerConfig& config, const Int3& model_input_grid);

struct VoxelizeStats {
  int64_t points = 0;                ///< points given
  int64_t voxels = 0;                ///< voxels found (may exceed max_voxels: then an error)
  int64_t dropped_out_of_range = 0;  ///< outside [min, max) or outside the grid
  int64_t dropped_non_finite = 0;    ///< x, y or z NaN or infinite
  int64_t dropped_full = 0;          ///< beyond max_points_per_voxel in their voxel
  int64_t kept() const { return points - dropped_out_of_range - dropped_non_finite - dropped_full; }
};

struct VoxelizeResult {
  Tensor features;  ///< host [N, F], config.feature_dtype
  Tensor indices;   ///< host int32 [N, 4]: batch, i0, i1, i2
  VoxelizeStats stats;
};

/// CPU voxelization (the oracle). points: host [P, point_columns] float32 or float16. Throws
/// scn::Error for a bad config, a bad points tensor or more voxels than max_voxels.
VoxelizeResult voxelize(const Tensor& points, const VoxelizerConfig& config);

/// A reusable voxelizer with its buffers sized once. CPU: run() computes at once. CUDA: run()
/// only enqueues on the given stream (no allocation, no host synchronisation); the voxel count
/// stays in device memory; count(), stats(), features() and indices() synchronise.
class Voxelizer {
 public:
  virtual ~Voxelizer() = default;
  Voxelizer(const Voxelizer&) = delete;
  Voxelizer& operator=(const Voxelizer&) = delete;

  /// Backend::Auto picks CUDA when available. max_points: the largest point count run() accepts (per frame);
  /// max_batch: the most frames run_batch() accepts (CUDA sizes its batch buffers for max_batch x max_voxels rows).
  /// parallel_frames: how many frames of a batch the CUDA voxelizer works on at once, each in a workspace of its own
  /// (the cell bitmaps and per-point buffers, tens of MB at nuScenes scale: workspace_bytes()); 0 means max_batch.
  /// With fewer, frame b of a batch runs after frame b - parallel_frames in the same workspace: less memory, more
  /// time, the same output bits. 0 <= parallel_frames <= max_batch, else an scn::Error. The CPU voxelizer runs its
  /// frames one after another whatever the value.
  static std::unique_ptr<Voxelizer> create(const VoxelizerConfig& config, Backend backend, int64_t max_points,
                                           int device = 0, int max_batch = 1, int parallel_frames = 0);

  virtual Backend backend() const = 0;
  const VoxelizerConfig& config() const { return config_; }
  int64_t max_points() const { return max_points_; }
  int max_batch() const { return max_batch_; }
  /// Frames of a batch voxelized at once (create()'s parallel_frames, 0 resolved to max_batch).
  int parallel_frames() const { return parallel_frames_; }

  /// Voxelizes points [P, point_columns] (float32 / float16; CUDA: host or device tensor, host
  /// points are copied on the stream: from pinned host memory asynchronously, and inside a graph
  /// capture too). P > max_points is an scn::Error here.
  virtual void run(const Tensor& points, void* stream = nullptr) = 0;
  /// Voxelizes several frames (each [P_b, point_columns], as run() takes it) into one batched input: frame b's voxels
  /// follow those of frames 0..b-1, each frame's in run()'s order, with batch index b in column 0
  /// (config().batch_index is not used). 1 <= frames.size() <= max_batch(); max_points and max_voxels hold per frame.
  /// Until the next run: count() and device_count() give the batch's voxels, features() / indices() its rows, the
  /// buffers [max_batch x max_voxels, ...] (CUDA), stats() the sums over the frames, check_errors() any frame's
  /// overflow. CUDA: enqueued on `stream` like run(); frames 1.. run beside frame 0 on streams of the voxelizer's,
  /// forked from and joined to `stream` by events (docs/voxelize.md, "Batches of frames").
  virtual void run_batch(const std::vector<Tensor>& frames, void* stream = nullptr) = 0;
  /// Frames of the last run: 0 before any (and while a run fails), 1 after run(), N after run_batch() of N frames.
  /// bind_voxelizer_output checks its batch size against it.
  int last_run_frames() const { return last_run_frames_; }
  /// Voxel count; synchronises (CUDA) and raises a pending overflow error first.
  virtual int64_t count() = 0;
  /// CUDA: the int32 voxel count in device memory, written by every run() (min(found, max_voxels)) and run_batch()
  /// (the frames' sum); one address for both, 0 before any run. nullptr on the CPU backend.
  virtual const int32_t* device_count() const = 0;
  /// Features [count, F] and indices [count, 4] on the backend's device; synchronise.
  virtual Tensor features() = 0;
  virtual Tensor indices() = 0;
  /// The whole output buffers [max_batch x max_voxels, F] / [max_batch x max_voxels, 4] without synchronising (rows
  /// beyond the device count are undefined), for consumers that read the count on the device; run() and
  /// run_batch() both write them from row 0.
  virtual Tensor features_buffer() = 0;
  virtual Tensor indices_buffer() = 0;
  /// Statistics of the last run; synchronise.
  virtual VoxelizeStats stats() = 0;
  /// Raises a pending device-side error (more voxels than max_voxels) after the stream is done.
  virtual void check_errors() = 0;
  /// CUDA: times `runs` run() calls after `warmup` ones with CUDA events; milliseconds per run.
  /// CPU: wall clock.
  virtual std::vector<double> time_run(const Tensor& points, int warmup, int runs) = 0;
  /// Bytes of device memory the voxelizer holds, all allocated at create(): CUDA, a workspace per parallel frame (cell
  /// bitmaps, ranks, per-point and per-voxel buffers) and the output rows (max_batch x max_voxels); the
  /// CPU backend 0 (its buffers are host memory, sized by each run).
  virtual size_t workspace_bytes() const { return 0; }

 protected:
  Voxelizer(VoxelizerConfig config, int64_t max_points, int max_batch, int parallel_frames)
      : config_(std::move(config)), max_points_(max_points), max_batch_(max_batch), parallel_frames_(parallel_frames) {}
  VoxelizerConfig config_;
  int64_t max_points_;
  int max_batch_;
  int parallel_frames_;
  int last_run_frames_ = 0;  ///< set by the backends' run() / run_batch()
};

}  // namespace scn
