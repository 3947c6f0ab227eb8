// Tile choices per size bucket of the frame (plan/size_buckets.h, docs/cuda_backend.md "Size
// buckets"). The fastest tile of a conv depends on its row count, so with the autotuner on the engine
// keeps the tuned config of every conv per bucket of the bound frame's voxel count; binding a frame
// selects its bucket's configs (a bucket not met before is tuned on that frame, autotune.cpp), and
// forward() replays that bucket's CUDA graph (schedule.cpp bucket_graph). All configs of a conv sum
// in one order, so switching buckets never changes the results.
#include <algorithm>
#include <iterator>
#include <set>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_engine.h"
#include "backends/cuda/tile_choice.h"

namespace scn::cuda {

/// The bucket of the bound frame, and its configs when it was tuned. With forced or heuristic tiles
/// (no autotuner) every frame is in one bucket: the tiles do not depend on its size.
void CudaEngine::select_bucket(bool device_count) {
  if (!autotune_) {
    bucket_ = size_bucket(0, 1, 0.0);
    return;
  }
  if (device_count) {
    bucket_ = device_count_bucket();  // the host does not know the count: one bucket for all of them
  } else {
    int64_t rows = 0;
    for (const InputSlot& in : inputs_) rows += in.n;
    bucket_ = size_bucket(rows, opt().tune_bucket_base, opt().tune_bucket_factor);
  }
  const auto it = bucket_tiles_.find(bucket_.label);
  if (it == bucket_tiles_.end()) return;  // tuned (or read from the cache) before the next forward
  for (size_t i = 0; i < convs_.size(); ++i) {
    convs_[i].set_kernel(it->second[i]);
    convs_[i].tuned = true;
  }
}

/// After tuning (or reading) the bound bucket: its configs, the weights they read, and a graph
/// captured for them at its next forward.
void CudaEngine::record_bucket_tiles() {
  std::vector<ConvKernel> kernels;
  for (const ConvPlan& c : convs_) kernels.push_back(c.kernel());
  bucket_tiles_[bucket_.label] = kernels;
  const auto ex = execs_.find(bucket_.label);
  if (ex != execs_.end()) {
    cudaGraphExecDestroy(ex->second);
    execs_.erase(ex);
  }
  keep_needed_weights();
}

/// Device weights of each conv: the TMA-tiled copy of every TMA config a tuned bucket (or the bound
/// frame) runs, and the plain weights while a non-TMA config runs it; the rest is freed. A bucket tuned
/// later packs what it needs again from the model (weights.cpp).
void CudaEngine::keep_needed_weights() {
  if (forwarded_) SCN_CUDA_CHECK(cudaEventSynchronize(done_event_));  // the last forward may read what goes
  SCN_CUDA_CHECK(cudaStreamSynchronize(own_stream_));
  for (size_t i = 0; i < convs_.size(); ++i) {
    ConvPlan& c = convs_[i];
    std::vector<ConvKernel> need{c.kernel()};
    for (const auto& [label, kernels] : bucket_tiles_) need.push_back(kernels[i]);
    std::set<int> layouts;
    bool plain = false;
    for (const ConvKernel& k : need) {
      if (k.osplit < 0 && igemm_config(k.cfg).tma)
        layouts.insert(tiled_layout(k.cfg));
      else
        plain = true;  // osplit and the non-TMA tiles read the plain weights
    }
    for (auto it = c.w_tiled.begin(); it != c.w_tiled.end();)
      it = layouts.count(it->first) ? std::next(it) : c.w_tiled.erase(it);
    if (!plain) c.w.reset();  // TMA kernels read only the tiled copy
  }
}

}  // namespace scn::cuda
