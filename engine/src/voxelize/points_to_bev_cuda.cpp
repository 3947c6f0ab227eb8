// scn::time_points_to_bev on CUDA: the voxelizer's kernels and the engine's forward captured into one CUDA graph per
// measurement (both, the voxelizer alone, the forward alone) and timed with CUDA events around its launches.
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/stream_timing.h"
#include "scn/points_to_bev.h"
#include "voxelize/voxelize_internal.h"

namespace scn::vox {

namespace {

/// An instantiated graph, released with its owner.
struct GraphExec {
  cudaGraphExec_t exec = nullptr;
  GraphExec() = default;
  ~GraphExec() {
    if (exec) cudaGraphExecDestroy(exec);
  }
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
};

/// Captures what `work` enqueues on ts.s into g. A failure inside the capture ends it before the error goes on.
template <typename Work>
void capture(const cuda::OwnedStream& ts, GraphExec& g, const Work& work) {
  SCN_CUDA_CHECK(cudaStreamBeginCapture(ts.s, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  try {
    work();
  } catch (...) {
    cudaStreamEndCapture(ts.s, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  SCN_CUDA_CHECK(cudaStreamEndCapture(ts.s, &graph));
  const cudaError_t e = cudaGraphInstantiate(&g.exec, graph, 0);
  cudaGraphDestroy(graph);
  SCN_CUDA_CHECK(e);
}

/// Milliseconds of `runs` launches of g after `warmup` ones (cuda::time_enqueues).
std::vector<double> time_graph(const cuda::OwnedStream& ts, const GraphExec& g, int warmup, int runs) {
  for (int i = 0; i < warmup; ++i) SCN_CUDA_CHECK(cudaGraphLaunch(g.exec, ts.s));
  return cuda::time_enqueues(ts.s, runs, [&] { SCN_CUDA_CHECK(cudaGraphLaunch(g.exec, ts.s)); });
}

}  // namespace

PointsToBevTiming time_points_graphs(Engine& engine, Voxelizer& vox, const std::vector<Tensor>& frames,
                                     const Int3& grid, int warmup, int runs, int input) {
  const int batch = int(frames.size());
  // The first run on the legacy stream (the forward waits for it): it selects the voxelizer's device for the timing
  // stream, plans and tunes the engine for these voxels, and raises an overflow before anything is captured.
  run_frames(vox, frames, nullptr);
  bind_voxelizer_output(engine, vox, grid, batch, input);
  engine.forward();
  engine.check_errors();
  vox.check_errors();
  PointsToBevTiming t;
  t.voxels = vox.count();
  // host frames go to the device once here: a capture cannot hold a copy from pageable memory, and the upload is not
  // the voxelizer's time (as Voxelizer::time_run)
  std::vector<Tensor> on_device;
  for (const Tensor& f : frames) on_device.push_back(f.device() == Device::Cuda ? f : f.to(Device::Cuda));
  const cuda::OwnedStream ts;
  GraphExec both, alone_vox, alone_net;
  capture(ts, both, [&] {
    run_frames(vox, on_device, ts.s);
    engine.forward(ts.s);
  });
  capture(ts, alone_vox, [&] { run_frames(vox, on_device, ts.s); });
  capture(ts, alone_net, [&] { engine.forward(ts.s); });
  t.total_ms = time_graph(ts, both, warmup, runs);
  t.voxelizer_ms = time_graph(ts, alone_vox, warmup, runs);
  t.network_ms = time_graph(ts, alone_net, warmup, runs);
  SCN_CUDA_CHECK(cudaStreamSynchronize(ts.s));
  vox.check_errors();
  engine.check_errors();
  return t;
}

}  // namespace scn::vox
