// scn::time_points_to_bev on CUDA: the voxelizer's kernels and the engine's forward captured into one CUDA graph per
// measurement (both, the voxelizer alone, the forward alone; for host frames also their upload alone and the upload
// with both) and timed with CUDA events around its launches.
#include <cuda_runtime_api.h>

#include <cstring>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_mem.h"
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
  // Host frames go to the device once here (the voxelizer's time leaves the upload out, as Voxelizer::time_run), and
  // into pinned host memory, where a captured copy can read them (a capture cannot hold a copy from pageable memory)
  // for the upload's own measurements: the copies alone, and the voxelizer given the pinned frames (it copies each
  // on its lane's stream, so a batch's copies overlap other frames' kernels) followed by the forward.
  std::vector<Tensor> on_device, pinned_frames;
  std::vector<cuda::PinnedMem> pinned;
  for (const Tensor& f : frames) {
    on_device.push_back(f.device() == Device::Cuda ? f : f.to(Device::Cuda));
    pinned_frames.push_back(f);
    if (f.device() == Device::Host && f.bytes() > 0) {
      pinned.emplace_back();
      pinned.back().alloc(f.bytes());
      std::memcpy(pinned.back().get(), f.data(), f.bytes());
      pinned_frames.back() = Tensor::wrap(pinned.back().get(), f.shape(), f.dtype(), Device::Host);
    }
  }
  const cuda::OwnedStream ts;
  const auto upload = [&] {  // the pinned frames' copies into their device copies
    for (size_t b = 0; b < frames.size(); ++b)
      if (pinned_frames[b].data() != frames[b].data())
        SCN_CUDA_CHECK(cudaMemcpyAsync(on_device[b].data(), pinned_frames[b].data(), frames[b].bytes(),
                                       cudaMemcpyHostToDevice, ts.s));
  };
  GraphExec both, alone_vox, alone_net, alone_upload, from_host;
  capture(ts, both, [&] {
    run_frames(vox, on_device, ts.s);
    engine.forward(ts.s);
  });
  capture(ts, alone_vox, [&] { run_frames(vox, on_device, ts.s); });
  capture(ts, alone_net, [&] { engine.forward(ts.s); });
  t.total_ms = time_graph(ts, both, warmup, runs);
  t.voxelizer_ms = time_graph(ts, alone_vox, warmup, runs);
  t.network_ms = time_graph(ts, alone_net, warmup, runs);
  if (!pinned.empty()) {
    capture(ts, alone_upload, upload);
    capture(ts, from_host, [&] {
      run_frames(vox, pinned_frames, ts.s);
      engine.forward(ts.s);
    });
    t.upload_ms = time_graph(ts, alone_upload, warmup, runs);
    t.from_host_ms = time_graph(ts, from_host, warmup, runs);
  }
  SCN_CUDA_CHECK(cudaStreamSynchronize(ts.s));
  // The voxelizer's last run was the one captured on ts, which ends here: run the frames once more on the legacy
  // stream (the same rows), so that its count(), stats() and check_errors() afterwards wait on a live stream.
  run_frames(vox, on_device, nullptr);
  vox.check_errors();
  engine.check_errors();
  return t;
}

}  // namespace scn::vox
