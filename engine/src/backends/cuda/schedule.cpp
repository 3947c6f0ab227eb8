// Scheduling: kernel maps depend only on coordinates, so they are built on a second (map) stream,
// each slot released when the main stream reaches the first conv of the slot `map_lookahead`
// places earlier and joined before its own first conv; with CudaOptions::stream_priorities the graph is
// captured from a stream of the highest priority with per-node priorities (off by default: every node at one);
// convs launch programmatically (sm_90) where the kernel before them did not write their map.
// docs/cuda_backend.md "Execution".
#include <algorithm>
#include <climits>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_engine.h"
#include "plan/arena_layout.h"

namespace scn::cuda {

/// Release point of every map slot (the node whose step releases its build on the map stream).
void CudaEngine::plan_release_points() {
  // Kernel maps depend only on coordinates: with a map stream, slot j of the build order is
  // released when the main stream reaches the first conv of slot j - lookahead (the slots before
  // right after the inputs) and built on the side stream while earlier levels convolve.
  const ReleasePoints r = scn::plan_release_points(steps_, an(), lookahead_);
  lookahead_ = r.lookahead;
  map_order_ = r.map_order;
  release_node_ = r.release;
  release_base_ = release_node_;
  sites_root_ = sites_ahead_roots(an(), opt(), r);
}

void CudaEngine::create_streams() {
  if (lookahead_ == 0) return;
  SCN_CUDA_CHECK(cudaStreamCreateWithFlags(&side_stream_, cudaStreamNonBlocking));
  if (opt().stream_priorities && use_graph_) {
    // The graph is captured from a stream of the highest priority (the map stream keeps the lowest), and
    // instantiated with per-node priorities: when a conv and map kernels both have blocks waiting, the
    // conv's go first. Each conv grid is sized to fill the GPU once, so a map block that takes its place
    // would push a conv block into a second wave; map blocks fill the convs' tails instead.
    int least = 0, greatest = 0;
    SCN_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    SCN_CUDA_CHECK(cudaStreamCreateWithPriority(&capture_stream_, cudaStreamNonBlocking, greatest));
  }
  ev_release_.assign(an().maps.size(), nullptr);
  ev_built_.assign(an().maps.size(), nullptr);
  for (auto& e : ev_release_) SCN_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  for (auto& e : ev_built_) SCN_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  SCN_CUDA_CHECK(cudaEventCreateWithFlags(&ev_join_, cudaEventDisableTiming));
  if (std::any_of(sites_root_.begin(), sites_root_.end(), [](int r) { return r >= 0; })) {
    // the sites stream at the map stream's (lowest) priority
    SCN_CUDA_CHECK(cudaStreamCreateWithFlags(&sites_stream_, cudaStreamNonBlocking));
    ev_sites_.assign(an().maps.size(), nullptr);
    for (auto& e : ev_sites_) SCN_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    SCN_CUDA_CHECK(cudaEventCreateWithFlags(&ev_sites_join_, cudaEventDisableTiming));
  }
}

void CudaEngine::destroy_streams() {
  if (side_stream_) cudaStreamSynchronize(side_stream_);
  if (sites_stream_) cudaStreamSynchronize(sites_stream_);
  for (auto e : ev_sites_) cudaEventDestroy(e);
  if (ev_sites_join_) cudaEventDestroy(ev_sites_join_);
  if (sites_stream_) cudaStreamDestroy(sites_stream_);
  for (auto e : ev_release_) cudaEventDestroy(e);
  for (auto e : ev_built_) cudaEventDestroy(e);
  if (ev_join_) cudaEventDestroy(ev_join_);
  if (side_stream_) cudaStreamDestroy(side_stream_);
  if (capture_stream_) cudaStreamDestroy(capture_stream_);
}

void CudaEngine::destroy_graph() {
  for (auto& [label, exec] : execs_) cudaGraphExecDestroy(exec);
  execs_.clear();
  exec_valid_ = false;
}

/// The bound size bucket's graph (tile_buckets.cpp): captured at its first forward, and again for every
/// bucket after the arena or the input staging moved (exec_valid_ false).
cudaGraphExec_t CudaEngine::bucket_graph(cudaStream_t s) {
  if (!exec_valid_) destroy_graph();
  const auto it = execs_.find(bucket_.label);
  if (it != execs_.end()) return it->second;
  capture(s);
  return execs_.at(bucket_.label);
}

/// Captures the forward with the bound bucket's tiles into execs_.
void CudaEngine::capture(cudaStream_t s) {
  if (capture_stream_) s = capture_stream_;  // capture records the stream's priority in every kernel node
  SCN_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  try {
    enqueue(s, nullptr);
  } catch (...) {
    cudaStreamEndCapture(s, &graph);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    throw;
  }
  SCN_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e =
      cudaGraphInstantiate(&exec, graph, capture_stream_ ? cudaGraphInstantiateFlagUseNodePriority : 0);
  cudaGraphDestroy(graph);
  SCN_CUDA_CHECK(e);
  execs_[bucket_.label] = exec;
  exec_valid_ = true;
}

void CudaEngine::enqueue(cudaStream_t s, std::vector<cudaEvent_t>* ev) {
  const GraphAnalysis& ana = an();
  if (ev || lookahead_ == 0) {  // profiling, or no map stream: every step in order on `s`
    for (size_t i = 0; i < steps_.size(); ++i) {
      if (ev) SCN_CUDA_CHECK(cudaEventRecord((*ev)[i], s));
      run_step(steps_[i], s);
    }
    if (ev) SCN_CUDA_CHECK(cudaEventRecord(ev->back(), s));
    return;
  }
  // Map builds on the side stream, released at their release node, joined before their first conv,
  // except the first map: the first conv needs it at once, so it is built on `s`, beside the map
  // stream's start on the next maps. Convs launch programmatically (launch_igemm, launch_osplit); a conv whose
  // map comes from a kernel it may overlap — the first map's kernel just before it, or the map-stream kernel it
  // joins (in the CUDA graph that edge is programmatic too) — reads the map only after its wait (map_late; after
  // the first map its blocks so take the map kernel's SMs before the map stream's next kernels do). The input step's
  // and the first map's site-index and map kernels launch programmatically too. The map stream's kernels launch in
  // stream order: launched early, their waiting blocks would hold SM room beside the convs (docs/benchmarks.md, session
  // 20).
  const bool pdl = programmatic();
  const int inline_map = map_order_.empty() ? -1 : map_order_[0];
  // A strided first map generates its output sites on `s`: a map reading those sites (the next
  // level's, or the inverse of that conv) is released only after it, or it would read them unbuilt.
  const bool inline_generates = inline_map >= 0 && ana.maps[size_t(inline_map)].kind == MapKind::Strided;
  auto needs_inline = [&](int m) {
    const int gen = ana.maps[size_t(inline_map)].out_sites;
    return inline_generates && (ana.maps[size_t(m)].in_sites == gen || ana.maps[size_t(m)].out_sites == gen);
  };
  bool inline_done = inline_map < 0;
  size_t next_build = 0;
  bool inputs_done = false;
  bool map_just_built = false;
  bool side_used = false;  // (joining a stream with no captured work is an error in graph capture)
  bool sites_used = false;
  // A map step on `on`. A strided slot whose sites are built ahead waits for them and builds its map; a root records
  // its sites built and queues the site sets of the slots that follow it on the sites stream (in build order, each
  // from the previous level's bitmap), which run while the levels before them convolve.
  auto map_step = [&](int m, cudaStream_t on, bool chained) {
    const MapSlot& ms = ana.maps[size_t(m)];
    if (ms.kind != MapKind::Strided) {
      run_step(Step{StepKind::Map, ms.first_node, m}, on, chained);
      return;
    }
    if (sites_root_[size_t(m)] >= 0) {
      SCN_CUDA_CHECK(cudaStreamWaitEvent(on, ev_sites_[size_t(m)], 0));
    } else {
      build_strided_sites(m, on, chained);
      if (std::find(sites_root_.begin(), sites_root_.end(), m) != sites_root_.end()) {
        sites_used = true;
        SCN_CUDA_CHECK(cudaEventRecord(ev_sites_[size_t(m)], on));
        SCN_CUDA_CHECK(cudaStreamWaitEvent(sites_stream_, ev_sites_[size_t(m)], 0));
        for (int a : map_order_)
          if (sites_root_[size_t(a)] == m) {
            build_strided_sites(a, sites_stream_, false);
            emit_strided(a, sites_stream_, false);
            SCN_CUDA_CHECK(cudaEventRecord(ev_sites_[size_t(a)], sites_stream_));
          }
      }
    }
    finish_strided(m, on, chained, sites_root_[size_t(m)] >= 0);
  };
  auto release_up_to = [&](int node) {
    while (next_build < map_order_.size() && release_node_[size_t(map_order_[next_build])] <= node) {
      const int m = map_order_[next_build];
      if (m != inline_map && !inline_done && needs_inline(m)) break;  // map builds stay in order
      ++next_build;
      if (m == inline_map) continue;
      side_used = true;
      SCN_CUDA_CHECK(cudaEventRecord(ev_release_[size_t(m)], s));
      SCN_CUDA_CHECK(cudaStreamWaitEvent(side_stream_, ev_release_[size_t(m)], 0));
      map_step(m, side_stream_, false);
      SCN_CUDA_CHECK(cudaEventRecord(ev_built_[size_t(m)], side_stream_));
    }
  };
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& st = steps_[i];
    if (st.kind != StepKind::Input && !inputs_done) {
      inputs_done = true;
      release_up_to(0);
    }
    if (st.kind == StepKind::Map) {
      if (st.slot == inline_map) {
        map_step(st.slot, s, pdl);
        map_just_built = true;
        inline_done = true;
        release_up_to(st.node);
      }
      continue;
    }
    if (inputs_done) release_up_to(st.node);
    const bool joins =
        st.kind == StepKind::Conv && st.slot != inline_map && ana.maps[size_t(st.slot)].first_node == st.node;
    if (joins) SCN_CUDA_CHECK(cudaStreamWaitEvent(s, ev_built_[size_t(st.slot)], 0));
    run_step(st, s, pdl, map_just_built || joins);
    map_just_built = false;
  }
  if (!inputs_done) release_up_to(0);
  release_up_to(INT_MAX);
  if (side_used) {
    SCN_CUDA_CHECK(cudaEventRecord(ev_join_, side_stream_));
    SCN_CUDA_CHECK(cudaStreamWaitEvent(s, ev_join_, 0));
  }
  if (sites_used) {
    SCN_CUDA_CHECK(cudaEventRecord(ev_sites_join_, sites_stream_));
    SCN_CUDA_CHECK(cudaStreamWaitEvent(s, ev_sites_join_, 0));
  }
}

}  // namespace scn::cuda
