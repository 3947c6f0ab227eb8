// Benchmark (a tool, not a test): raw points -> BEV map on the GPU, as one CUDA graph holding the
// CUDA voxelizer and the engine's forward (the engine bound with set_input_device_count, so the
// voxel count never leaves the device). Also times the voxelizer alone and the engine alone on the
// same voxels (its own graph), so the three figures of docs/benchmarks.md come from one run.
//
//   bench_points_to_bev MODEL.onnx POINTS.bin [--preset nuscenes-centerpoint] [--runs 500] [--warmup 50]
//
// Medians of CUDA-event timings around graph launches, after warm-up. Exit 77 without a GPU.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "scn/engine.h"
#include "scn/error.h"
#include "scn/onnx.h"
#include "scn/points.h"
#include "scn/timing.h"
#include "scn/voxelize.h"

namespace {

#define CK(x)                                                                                 \
  do {                                                                                        \
    const cudaError_t e_ = (x);                                                               \
    if (e_ != cudaSuccess) throw scn::Error(std::string(#x) + ": " + cudaGetErrorString(e_)); \
  } while (0)

// Times `runs` launches of `exec` on `s` after `warmup` ones; milliseconds per launch.
std::vector<double> time_graph(cudaGraphExec_t exec, cudaStream_t s, int warmup, int runs) {
  for (int i = 0; i < warmup; ++i) CK(cudaGraphLaunch(exec, s));
  CK(cudaStreamSynchronize(s));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    CK(cudaEventRecord(a, s));
    CK(cudaGraphLaunch(exec, s));
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float t = 0.f;
    CK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(double(t));
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms;
}

int run(int argc, char** argv) {
  std::vector<std::string> pos;
  std::string preset = "nuscenes-centerpoint";
  int runs = 500, warmup = 50;
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
    else
      pos.push_back(a);
  }
  if (pos.size() != 2) {
    std::fprintf(stderr, "usage: bench_points_to_bev MODEL.onnx POINTS [--preset NAME] [--runs N] [--warmup N]\n");
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
  const scn::Tensor points = host_points.to(scn::Device::Cuda);
  const scn::Int3 grid = scn::model_grid(cfg);

  scn::BuildOptions o;
  o.backend = scn::Backend::Cuda;
  o.precision = scn::Precision::Fp16;
  o.max_input_voxels = cfg.max_voxels;
  o.cuda_graph = false;  // captured below with the voxelizer into one graph
  auto engine = scn::load_engine_from_onnx(pos[0], o);
  auto vox = scn::Voxelizer::create(cfg, scn::Backend::Cuda, host_points.dim(0));
  engine->set_input_device_count(0, vox->features_buffer(), vox->indices_buffer(), vox->device_count(), grid);

  cudaStream_t s = nullptr;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  vox->run(points, s);  // first forward outside the capture: planning and autotuning
  engine->forward(s);
  CK(cudaStreamSynchronize(s));
  vox->check_errors();
  engine->check_errors();
  const int64_t voxels = vox->count();

  auto capture = [&](bool with_vox, bool with_engine) {
    cudaGraph_t g = nullptr;
    cudaGraphExec_t exec = nullptr;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    if (with_vox) vox->run(points, s);
    if (with_engine) engine->forward(s);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&exec, g, 0));
    cudaGraphDestroy(g);
    return exec;
  };
  cudaGraphExec_t both = capture(true, true), vox_only = capture(true, false), eng_only = capture(false, true);
  const double t_both = scn::summarize_timings(time_graph(both, s, warmup, runs)).median;
  const double t_vox = scn::summarize_timings(time_graph(vox_only, s, warmup, runs)).median;
  const double t_eng = scn::summarize_timings(time_graph(eng_only, s, warmup, runs)).median;
  vox->check_errors();
  engine->check_errors();
  std::printf("points      %s: %lld points, preset %s, %lld voxels, grid %dx%dx%d\n", pos[1].c_str(),
              (long long)host_points.dim(0), preset.c_str(), (long long)voxels, grid[0], grid[1], grid[2]);
  std::printf("model       %s (fp16, CUDA)\n", pos[0].c_str());
  std::printf("points->BEV one graph (voxelizer + network): median %.4f ms (%d runs after %d warm-up)\n", t_both, runs,
              warmup);
  std::printf("voxelizer alone (graph):                      median %.4f ms\n", t_vox);
  std::printf("network alone on the same voxels (graph):     median %.4f ms\n", t_eng);
  cudaGraphExecDestroy(both);
  cudaGraphExecDestroy(vox_only);
  cudaGraphExecDestroy(eng_only);
  cudaStreamDestroy(s);
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
