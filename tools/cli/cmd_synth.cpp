// scn synth --voxels N --seed S --features F --indices I [--points P.bin]: a synthetic LiDAR-like frame
// (voxels, and the raw points before voxelization).
#include <algorithm>
#include <cstdio>

#include "commands.h"
#include "common.h"
#include "scn/half.h"
#include "scn/points.h"
#include "synthetic_frame.h"

namespace scn::cli {

CLI::App* add_synth(CLI::App& app, SynthArgs& a) {
  CLI::App* c = app.add_subcommand("synth", "Write a synthetic LiDAR-like voxel frame (features + indices)");
  c->add_option("--voxels", a.voxels, "Exact voxel count per frame (0: whatever the default scan gives)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(0), int64_t(1) << 30));
  c->add_option("--seed", a.seed, "Scene seed (same seed and options: same frame)")->capture_default_str();
  c->add_option("--order", a.order, "Index order: zyx = (b, z, y, x), xyz = (b, x, y, z)")
      ->capture_default_str()
      ->check(CLI::IsMember({"zyx", "xyz"}));
  c->add_option("--preset", a.preset,
                "nuscenes: 32 beams, 10 sweeps, grid 41x1440x1440, 5 features; kitti: 64 beams, 1 sweep, "
                "grid 41x1600x1408, 4 features")
      ->capture_default_str()
      ->check(CLI::IsMember(synth::FrameOptions::preset_names()));
  c->add_option("--trim", a.trim, "How the surplus over --voxels is dropped: random (seeded) or farthest")
      ->capture_default_str()
      ->check(CLI::IsMember({"random", "farthest"}));
  c->add_option("--grid", a.grid, "Grid override in the --order index order (coordinates beyond it are dropped)")
      ->check(grid_validator());
  c->add_option("--channels", a.channels, "Feature channels: 5 (x, y, z, intensity, time lag) or 4; 0: the preset's")
      ->capture_default_str()
      ->check(CLI::IsMember({0, 4, 5}));
  c->add_option("--batch-index", a.batch_index, "Batch index written in column 0 (single frame)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 16));
  c->add_option("--batch-size", a.batch_size, "Frames to concatenate (batch indices 0..B-1, seeds derived from --seed)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  c->add_option("--features", a.features, "Output features .tensor (float16 [N, C])");
  c->add_option("--indices", a.indices, "Output indices .tensor (int32 [N, 4])");
  c->add_option("--points", a.points,
                "Also (or only) write the raw points the scan produced inside the range, before voxelization: "
                "float32 .bin rows of C values (x, y, z, intensity[, time lag]), KITTI / nuScenes layout");
  c->add_option("--azimuth-steps", a.azimuth_steps, "Rays per beam and revolution (0: the preset's)")
      ->check(CLI::Range(0, 1 << 20));
  c->add_option("--sweeps", a.sweeps, "Sweeps merged at most (0: the preset's)")->check(CLI::Range(0, 1000));
  c->add_flag("--quiet", a.quiet, "Print nothing");
  return c;
}

int run_synth(const SynthArgs& a) {
  synth::FrameOptions o = synth::FrameOptions::preset(a.preset);
  o.voxels = a.voxels;
  o.seed = a.seed;
  o.order = a.order == "xyz" ? synth::IndexOrder::Xyz : synth::IndexOrder::Zyx;
  o.trim = a.trim == "farthest" ? synth::Trim::Farthest : synth::Trim::Random;
  o.batch_index = a.batch_index;
  if (a.channels) o.channels = a.channels;
  if (a.azimuth_steps) o.azimuth_steps = a.azimuth_steps;
  if (a.sweeps) o.sweeps = a.sweeps;
  o.keep_points = !a.points.empty();
  SCN_CHECK(!a.features.empty() == !a.indices.empty(), "--features and --indices go together");
  SCN_CHECK(!a.features.empty() || o.keep_points, "give --features and --indices, or --points");
  SCN_CHECK(!o.keep_points || a.batch_size == 1, "--points writes one frame: --batch-size must be 1");
  if (!a.grid.empty()) {
    const Int3 g = parse_grid(a.grid);
    o.grid_zyx = o.order == synth::IndexOrder::Zyx ? std::array<int32_t, 3>{g[0], g[1], g[2]}
                                                   : std::array<int32_t, 3>{g[2], g[1], g[0]};
  }
  SCN_CHECK(a.batch_size == 1 || a.batch_index == 0, "--batch-index and --batch-size > 1 exclude each other");
  // every output checked before the scan is generated; all are written, or none
  if (!a.features.empty()) {
    check_output_file("--features", a.features);
    check_output_file("--indices", a.indices);
  }
  if (o.keep_points) check_output_file("--points", a.points);

  const int64_t t0 = now_ns();
  const synth::Frame f = a.batch_size > 1 ? synth::generate_batch(o, a.batch_size) : synth::generate_frame(o);
  const double ms = ms_since(t0);

  OutputSet files;
  if (!a.features.empty()) {
    files.add_tensor(a.features, synth::features_tensor(f));
    files.add_tensor(a.indices, synth::indices_tensor(f));
  }
  if (o.keep_points)  // float32 rows of C values: the .bin layout write_points_bin writes
    files.add_bytes(
        a.points, std::string(reinterpret_cast<const char*>(f.raw_points.data()), f.raw_points.size() * sizeof(float)));
  files.commit();
  if (a.quiet) return 0;

  // Per-axis coordinate ranges and feature ranges.
  int32_t lo[3] = {INT32_MAX, INT32_MAX, INT32_MAX}, hi[3] = {-1, -1, -1};
  for (int64_t i = 0; i < f.num_voxels; ++i)
    for (int d = 0; d < 3; ++d) {
      lo[d] = std::min(lo[d], f.indices[size_t(4 * i + 1 + d)]);
      hi[d] = std::max(hi[d], f.indices[size_t(4 * i + 1 + d)]);
    }
  const char* axes = a.order == "xyz" ? "xyz" : "zyx";
  std::printf("voxels    %lld (%lld before trimming, %s trim), %d channels, batch %d\n",
              static_cast<long long>(f.num_voxels), static_cast<long long>(f.voxels_before_trim), a.trim.c_str(),
              f.channels, a.batch_size);
  std::printf("grid      %s (%s)\n", int3_string(Int3{f.grid[0], f.grid[1], f.grid[2]}).c_str(), axes);
  if (f.num_voxels > 0)
    std::printf("coords    %c %d..%d, %c %d..%d, %c %d..%d\n", axes[0], lo[0], hi[0], axes[1], lo[1], hi[1], axes[2],
                lo[2], hi[2]);
  const char* names[5] = {"x", "y", "z", "intensity", "time lag"};
  for (int c = 0; c < f.channels && f.num_voxels > 0; ++c) {
    float mn = 1e30f, mx = -1e30f;
    double sum = 0;
    for (int64_t i = 0; i < f.num_voxels; ++i) {
      const float v = half_to_float(f.features[size_t(i * f.channels + c)]);
      mn = std::min(mn, v);
      mx = std::max(mx, v);
      sum += v;
    }
    std::printf("feature   %-9s %.3f..%.3f, mean %.3f\n", names[c], mn, mx, sum / double(f.num_voxels));
  }
  std::printf("scan      %d sweeps, %d beams x %d passes, %d azimuth steps, %d objects, %lld points\n", f.sweeps,
              f.beams, f.passes, f.azimuth_steps, f.objects, static_cast<long long>(f.points));
  std::printf("time      %.1f ms\n", ms);
  if (!a.features.empty()) std::printf("wrote     %s, %s\n", a.features.c_str(), a.indices.c_str());
  if (o.keep_points)
    std::printf("wrote     %s: %lld points x %d float32 (inside the range, scan order)\n", a.points.c_str(),
                static_cast<long long>(f.raw_points.size() / size_t(o.channels)), o.channels);
  return 0;
}

}  // namespace scn::cli
