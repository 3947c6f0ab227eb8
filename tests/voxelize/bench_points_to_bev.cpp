// Benchmark (a tool, not a test): raw points -> BEV map on the GPU, as one CUDA graph holding the
// CUDA voxelizer and the engine's forward (scn::time_points_to_bev: the engine bound by device count,
// so the voxel count never leaves the device). Also times the voxelizer alone and the engine alone on
// the same voxels (each its own graph), so the three figures of docs/benchmarks.md come from one run.
// --batch-sweep 1,2,4,8: the same for batches of B frames (Voxelizer::run_batch + the forward in one
// graph; frame k is the cloud turned by 40 k degrees about z, so every frame is as large as the cloud
// and differs from the others), one voxelizer and one engine of max_batch B per batch size, frames/s, and the
// voxelizer's device memory; --parallel-frames N: the sweep's voxelizers work on at most N frames at once.
//
//   bench_points_to_bev MODEL.onnx POINTS.bin [--preset nuscenes-centerpoint] [--runs 500] [--warmup 50]
//                       [--batch-sweep 1,2,4,8 [--parallel-frames N]]
//
// Medians of CUDA-event timings around graph launches, after warm-up. Exit 77 without a GPU.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "scn/engine.h"
#include "scn/error.h"
#include "scn/onnx.h"
#include "scn/points.h"
#include "scn/points_to_bev.h"
#include "scn/timing.h"
#include "scn/voxelize.h"

namespace {

// The host cloud [P, C >= 2] (float32) turned by `degrees` about z (columns 0 and 1 are x and y).
scn::Tensor turned(const scn::Tensor& cloud, double degrees) {
  if (cloud.dtype() != scn::DType::Float32) throw scn::Error("--batch-sweep: the point file must hold float32 points");
  scn::Tensor out = scn::Tensor::from_host(cloud.data(), cloud.shape(), cloud.dtype());
  const double a = degrees * 3.14159265358979323846 / 180.0;
  const float c = float(std::cos(a)), sn = float(std::sin(a));
  const int64_t cols = cloud.dim(1);
  auto* p = static_cast<float*>(out.data());
  for (int64_t i = 0; i < cloud.dim(0); ++i) {
    float* r = p + i * cols;
    const float x = r[0], y = r[1];
    r[0] = c * x - sn * y;
    r[1] = sn * x + c * y;
  }
  return out;
}

std::vector<int> parse_batches(const std::string& text) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    size_t used = 0;
    int b = 0;
    try {
      b = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || b < 1 || b > 64)
      throw scn::Error("--batch-sweep '" + text + "': '" + item + "' is not a batch size from 1 to 64");
    out.push_back(b);
    pos = end + 1;
  }
  return out;
}

struct PipelineTimes {
  int64_t voxels = 0;
  size_t vox_bytes = 0;               ///< the voxelizer's workspace_bytes()
  double both = 0, vox = 0, eng = 0;  ///< medians, ms: voxelizer + network, voxelizer alone, network alone
};

// One voxelizer and one engine (max_batch = the frame count) for `frames`, timed by scn::time_points_to_bev (one
// frame through Voxelizer::run, several as a batch through run_batch; each measurement one CUDA graph).
PipelineTimes time_pipeline(const std::string& model, const scn::VoxelizerConfig& cfg, int64_t max_points,
                            const std::vector<scn::Tensor>& frames, int parallel_frames, int warmup, int runs) {
  const int b = int(frames.size());
  scn::BuildOptions o;
  o.backend = scn::Backend::Cuda;
  o.precision = scn::Precision::Fp16;
  o.max_input_voxels = cfg.max_voxels;
  o.max_batch = b;
  o.cuda_graph = false;  // captured with the voxelizer into one graph
  auto engine = scn::load_engine_from_onnx(model, o);
  auto vox = scn::Voxelizer::create(cfg, scn::Backend::Cuda, max_points, 0, b, parallel_frames);
  const scn::PointsToBevTiming t = scn::time_points_to_bev(*engine, *vox, frames, scn::model_grid(cfg), warmup, runs);
  PipelineTimes p;
  p.voxels = t.voxels;
  p.vox_bytes = vox->workspace_bytes();
  p.both = scn::summarize_timings(t.total_ms).median;
  p.vox = scn::summarize_timings(t.voxelizer_ms).median;
  p.eng = scn::summarize_timings(t.network_ms).median;
  return p;
}

// --batch-sweep: points -> BEV for batches of frames, each batch size on its own voxelizer and engine (0: a lane per
// frame).
void run_batch_sweep(const std::string& model, const scn::VoxelizerConfig& cfg, const scn::Tensor& cloud,
                     const std::vector<int>& batches, int parallel_frames, int warmup, int runs) {
  int most = 0;
  for (int b : batches) most = std::max(most, b);
  std::vector<scn::Tensor> frames;
  for (int k = 0; k < most; ++k) frames.push_back(turned(cloud, 40.0 * k).to(scn::Device::Cuda));
  double fps1 = 0;
  for (int b : batches) {
    const std::vector<scn::Tensor> batch(frames.begin(), frames.begin() + b);
    const int pf = parallel_frames == 0 ? b : std::min(parallel_frames, b);
    const PipelineTimes t = time_pipeline(model, cfg, cloud.dim(0), batch, pf, warmup, runs);
    const double fps = 1000.0 * b / t.both;
    if (fps1 == 0) fps1 = fps;
    std::printf(
        "batch %2d: %lld voxels; points->BEV one graph median %.4f ms = %.0f frames/s (x%.2f batch %d); voxelizer "
        "%.4f ms (%d parallel frame%s, %.1f MiB), network %.4f ms\n",
        b, (long long)t.voxels, t.both, fps, fps / fps1, batches.front(), t.vox, pf, pf == 1 ? "" : "s",
        double(t.vox_bytes) / 1048576.0, t.eng);
    std::fflush(stdout);
  }
}

int run(int argc, char** argv) {
  std::vector<std::string> pos;
  std::string preset = "nuscenes-centerpoint";
  std::string batch_sweep;
  int runs = 500, warmup = 50, parallel_frames = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw scn::Error(a + ": missing value");
      return argv[++i];
    };
    if (a == "--preset")
      preset = next();
    else if (a == "--runs")
      runs = std::stoi(next());
    else if (a == "--warmup")
      warmup = std::stoi(next());
    else if (a == "--batch-sweep")
      batch_sweep = next();
    else if (a == "--parallel-frames")
      parallel_frames = std::stoi(next());
    else
      pos.push_back(a);
  }
  if (pos.size() != 2) {
    std::fprintf(stderr,
                 "usage: bench_points_to_bev MODEL.onnx POINTS [--preset NAME] [--runs N] [--warmup N] "
                 "[--batch-sweep 1,2,4,8 [--parallel-frames N]]\n");
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  const scn::VoxelizerConfig cfg = scn::voxelizer_preset(preset);
  scn::PointFileOptions po;
  po.columns = cfg.point_columns;
  const scn::Tensor host_points = scn::read_points(pos[1], po);
  if (!batch_sweep.empty()) {
    std::printf("points      %s: %lld points per frame, preset %s; model %s (fp16, CUDA)\n", pos[1].c_str(),
                (long long)host_points.dim(0), preset.c_str(), pos[0].c_str());
    run_batch_sweep(pos[0], cfg, host_points, parse_batches(batch_sweep), parallel_frames, warmup, runs);
    return 0;
  }
  const scn::Int3 grid = scn::model_grid(cfg);
  const PipelineTimes t = time_pipeline(pos[0], cfg, host_points.dim(0), {host_points}, 1, warmup, runs);
  std::printf("points      %s: %lld points, preset %s, %lld voxels, grid %dx%dx%d\n", pos[1].c_str(),
              (long long)host_points.dim(0), preset.c_str(), (long long)t.voxels, grid[0], grid[1], grid[2]);
  std::printf("model       %s (fp16, CUDA)\n", pos[0].c_str());
  std::printf("points->BEV one graph (voxelizer + network): median %.4f ms (%d runs after %d warm-up)\n", t.both, runs,
              warmup);
  std::printf("voxelizer alone (graph):                      median %.4f ms\n", t.vox);
  std::printf("network alone on the same voxels (graph):     median %.4f ms\n", t.eng);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_points_to_bev: %s\n", e.what());
    return 1;
  }
}
