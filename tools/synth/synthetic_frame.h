// Synthetic LiDAR-like voxel frames for tests and benchmarks.
//
// A rotating multi-beam sensor scans a street scene (sloped, slightly bumpy ground; buildings,
// parked and moving cars, poles, trees, pedestrians, clutter) placed by a seeded RNG. Rays are
// cast analytically (plane, oriented boxes, vertical cylinders), several sweeps taken while the
// ego vehicle drives are merged with their time lag, and the hits are voxelized the way
// CenterPoint does: one voxel per occupied cell, features = mean (x, y, z, intensity, time lag).
//
// Exact voxel counts: sweeps are added one by one until at least `voxels` voxels exist. When one
// sweep already gives far too many, the scan is thinned (fewer beams, then fewer azimuth steps);
// when all sweeps give too few, further passes over the sweeps add beams between the earlier ones
// (elevation offsets 1/2, 1/4, 3/4, ... of the beam spacing), as a denser sensor would, and larger
// counts get more clutter objects. The surplus (typically under a few percent once passes run, up
// to ~50% for thinned scans) is then dropped: Trim::Random drops a seeded uniform subset,
// Trim::Farthest the voxels farthest from the sensor in x/y. Kept voxels stay in scan order
// (pass, sweep, azimuth, beam), the order a point-to-voxel hash produces.
//
// Everything is deterministic for a given seed and options: std::mt19937_64 (scene) and a
// splitmix64 stream (per-point noise) with hand-written uniform/normal transforms, since the std::
// distributions differ between standard libraries. Geometry uses the C math library, so bit-exact
// frames across platforms also need the same libm results.
//
// Speed (one core, Release): ~0.1 s for a default 10-sweep frame, ~0.5 s for 300k voxels.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "scn/error.h"
#include "scn/tensor.h"

namespace scn::synth {

enum class IndexOrder {
  Zyx,  ///< indices (b, z, y, x), grid (z, y, x): CenterPoint / OpenPCDet
  Xyz,  ///< indices (b, x, y, z), grid (x, y, z): BEVFusion exported with --origin
};

enum class Trim { Random, Farthest };

struct FrameOptions {
  int64_t voxels = 0;  ///< exact voxel count; 0 = whatever the configured scan yields
  uint64_t seed = 0;
  int32_t batch_index = 0;  ///< written into column 0 of the indices
  IndexOrder order = IndexOrder::Zyx;
  Trim trim = Trim::Random;
  int channels = 5;             ///< 5: x, y, z, intensity, time lag; 4: without the time lag
  float intensity_max = 255.f;  ///< intensity scale: 255 (nuScenes, integers) or 1 (KITTI reflectance)

  // Voxelization.
  std::array<float, 6> range{-54.f, -54.f, -5.f, 54.f, 54.f, 3.f};  ///< x0 y0 z0 x1 y1 z1 (m)
  std::array<float, 3> voxel_size{0.075f, 0.075f, 0.2f};            ///< x y z (m)
  /// Grid (z, y, x). 0 = derived as spconv does: (nz + 1, ny, nx) with n = range / voxel size.
  std::array<int32_t, 3> grid_zyx{0, 0, 0};

  // Sensor.
  int beams = 32;
  float elevation_min_deg = -30.f;
  float elevation_max_deg = 10.f;
  int azimuth_steps = 1084;    ///< rays per beam and revolution
  float sensor_height = 1.8f;  ///< above the ground; the sensor is the origin of the frame
  float max_range = 100.f;
  int sweeps = 10;               ///< sweeps merged at most (nuScenes: 10)
  float sweep_interval = 0.05f;  ///< seconds between sweeps (the time-lag step)
  /// Keep the raw points (those inside the range, before voxelization) in Frame::raw_points.
  bool keep_points = false;

  /// nuScenes / CenterPoint: the defaults above.
  static FrameOptions nuscenes();
  /// KITTI / OpenPCDet: 64 beams (-24.9..+2 deg), 1 sweep, range [0,-40,-3, 70.4,40,1],
  /// voxel 0.05 x 0.05 x 0.1, grid 41 x 1600 x 1408, 4 channels, reflectance 0..1.
  static FrameOptions kitti();
  /// The scene presets by name: "nuscenes", "kitti".
  static const std::vector<std::string>& preset_names();
  /// The preset of that name; another name is an scn::Error naming it and the presets.
  static FrameOptions preset(const std::string& name);
};

struct Frame {
  std::array<int32_t, 3> grid{0, 0, 0};  ///< in the index order of `indices`
  int channels = 0;
  int64_t num_voxels = 0;
  std::vector<uint16_t> features;  ///< [N, channels] IEEE float16 bits
  std::vector<int32_t> indices;    ///< [N, 4] (batch, i0, i1, i2)

  // How the frame was made.
  int sweeps = 0;  ///< sweeps merged
  int beams = 0;   ///< beams per pass
  int passes = 0;  ///< passes of extra beams (1: the configured sensor)
  int azimuth_steps = 0;
  int objects = 0;
  int attempts = 0;    ///< scans run to land on the requested count
  int64_t points = 0;  ///< points voxelized
  int64_t voxels_before_trim = 0;
  /// With FrameOptions::keep_points: [points, channels] float32 rows (x, y, z, intensity[, time
  /// lag]) in scan order, every point of the scan that produced the frame.
  std::vector<float> raw_points;
};

/// Grid of the options in (z, y, x) order.
std::array<int32_t, 3> grid_zyx(const FrameOptions& options);

/// Generates one frame. Throws scn::Error for invalid options or a count the scene cannot reach.
Frame generate_frame(const FrameOptions& options);

/// `batch_size` frames (seeds derived from options.seed, batch indices 0..batch_size-1)
/// concatenated into one; options.voxels is the count per frame.
Frame generate_batch(const FrameOptions& options, int batch_size);

/// float16 [N, C] / int32 [N, 4] host tensors of a frame.
Tensor features_tensor(const Frame& frame);
Tensor indices_tensor(const Frame& frame);

}  // namespace scn::synth
