// scn voxelize POINTS --preset NAME --features F --indices I [--device cpu|cuda] [--bench N]:
// a point file to voxel features / indices, with the statistics; --bench times the voxelizer.
#include <cstdio>

#include "commands.h"
#include "common.h"
#include "scn/points.h"
#include "scn/timing.h"

namespace scn::cli {

CLI::App* add_voxelize(CLI::App& app, VoxelizeArgs& a) {
  CLI::App* c = app.add_subcommand("voxelize", "Voxelize a LiDAR point file into features + indices .tensor files");
  c->add_option("points", a.points, "Point file: .bin (float32), bin-f16 (NVIDIA), .tensor or .pcd")
      ->required()
      ->check(CLI::ExistingFile);
  add_voxel_options(c, a.vox, nullptr);
  c->add_option("--features", a.features, "Output features .tensor [N, F]");
  c->add_option("--indices", a.indices, "Output indices .tensor int32 [N, 4]");
  c->add_option("--device", a.device, "Voxelizer backend")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  c->add_option("--bench", a.bench, "Time N runs after --warmup ones (CUDA: CUDA events, points already on the device)")
      ->check(CLI::Range(1, 1000000));
  c->add_option("--warmup", a.warmup, "Warm-up runs before --bench")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  c->add_flag("--quiet", a.quiet, "Print nothing");
  return c;
}

int run_voxelize(const VoxelizeArgs& a) {
  SCN_CHECK(a.features.empty() == a.indices.empty(), "--features and --indices go together (",
            a.features.empty() ? "--indices " + a.indices : "--features " + a.features, " alone)");
  SCN_CHECK(a.bench > 0 || !a.features.empty(),
            "give --features and --indices to write the voxels (or --bench N to time only)");
  if (!a.features.empty()) {
    check_output_file("--features", a.features);
    check_output_file("--indices", a.indices);
  }
  const VoxelizerConfig c = make_voxelizer_config(a.vox);
  const int64_t t_read = now_ns();
  const Tensor points = read_point_file(a.points, a.vox, c);
  const double read_ms = ms_since(t_read);
  auto vox = Voxelizer::create(c, parse_backend(a.device), std::max<int64_t>(1, points.dim(0)));
  const int64_t t0 = now_ns();
  vox->run(points, nullptr);
  const VoxelizeStats s = vox->stats();
  vox->check_errors();
  const Tensor features = vox->features().to(Device::Host), indices = vox->indices().to(Device::Host);
  const double ms = ms_since(t0);
  if (!a.features.empty()) {
    OutputSet files;
    files.add_tensor(a.features, features);
    files.add_tensor(a.indices, indices);
    files.commit();
  }
  std::vector<double> times;
  if (a.bench > 0) times = vox->time_run(points, a.warmup, a.bench);
  if (a.quiet) return 0;

  std::printf("points      %s: %lld x %lld %s (read %.1f ms)\n", a.points.c_str(),
              static_cast<long long>(points.dim(0)), static_cast<long long>(points.dim(1)), dtype_name(points.dtype()),
              read_ms);
  std::printf("voxelizer   %s on %s: range [%g, %g, %g, %g, %g, %g), voxel %g x %g x %g, %d points/voxel, %s\n",
              c.name.c_str(), backend_name(vox->backend()), c.range[0], c.range[1], c.range[2], c.range[3], c.range[4],
              c.range[5], c.voxel_size[0], c.voxel_size[1], c.voxel_size[2], c.max_points_per_voxel,
              c.reduction == VoxelReduction::Mean ? "mean" : "first");
  std::printf("grid        %s (%s), model grid %s\n", int3_string(voxel_grid(c)).c_str(),
              c.order == VoxelOrder::Zyx ? "zyx" : "xyz", int3_string(model_grid(c)).c_str());
  std::printf("voxels      %lld of max %lld\n", static_cast<long long>(s.voxels), static_cast<long long>(c.max_voxels));
  std::printf("points kept %lld; dropped: %lld out of range, %lld non-finite, %lld beyond %d per voxel\n",
              static_cast<long long>(s.kept()), static_cast<long long>(s.dropped_out_of_range),
              static_cast<long long>(s.dropped_non_finite), static_cast<long long>(s.dropped_full),
              c.max_points_per_voxel);
  std::printf("time        %.3f ms (first run, with the copies)\n", ms);
  if (const size_t ws = vox->workspace_bytes())
    std::printf("workspace   %s of device memory\n", format_bytes(double(ws)).c_str());
  if (!times.empty()) {
    const TimingStats st = summarize_timings(times);
    std::printf("bench       median %.1f us, min %.1f us, p99 %.1f us over %lld runs (%d warm-up)\n", st.median * 1e3,
                st.min * 1e3, st.p99 * 1e3, static_cast<long long>(st.count), a.warmup);
  }
  if (!a.features.empty())
    std::printf("wrote       %s (%s), %s\n", a.features.c_str(), describe_tensor(features).c_str(), a.indices.c_str());
  return 0;
}

}  // namespace scn::cli
