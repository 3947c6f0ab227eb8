// The autotuner: at the first frame of each size bucket (tile_buckets.cpp), one pass over the steps on
// the engine's stream; every candidate kernel of each conv (conv_candidates: the tiles of tile_choice.h
// tune_candidates minus CudaOptions::tune_skip; for a conv of an osplit offset-group class the osplit
// configs of osplit_candidates, and for an int8 one both) is timed with events (2 warm-up launches, then
// the median of 11) and the fastest kept for that bucket. All candidates of a split or offset-group class
// sum in one order (int8 sums are exact), so tuning never changes the results. With
// CudaOptions::tuning_cache the decisions of every bucket are read from / written to a file (plan/tuning_cache.h).
#include <algorithm>
#include <cstdio>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_engine.h"
#include "backends/cuda/tile_choice.h"
#include "core/options.h"
#include "plan/tuning_cache.h"
#include "scn/timing.h"

namespace scn::cuda {

/// The osplit configs a conv may run: those of its offset-group class, or, for an unsplit conv of the tiles'
/// class, the one-group configs of its shape (the tiles' order, so the tiles' bits) — minus CudaOptions::tune_skip.
std::vector<int> CudaEngine::osplit_configs_for(const ConvPlan& c) const {
  const ConvShape shape = c.shape();
  std::vector<int> v = c.osplit_class > 0 ? osplit_candidates(shape, c.osplit_class)
                       : c.split == 1     ? osplit_tile_order_candidates(shape, cc_major_, opt().offset_groups)
                                          : std::vector<int>{};
  v.erase(std::remove_if(v.begin(), v.end(),
                         [&](int id) {
                           return std::find(tune_skip_osplit_.begin(), tune_skip_osplit_.end(), id) !=
                                  tune_skip_osplit_.end();
                         }),
          v.end());
  return v;
}

/// What the tuner times for a conv: the osplit configs it may run (osplit_configs_for), and the tiles of its
/// split class (minus CudaOptions::tune_skip) where the tiles may run it (ConvPlan::may_run_tiles).
std::vector<ConvKernel> CudaEngine::conv_candidates(const ConvPlan& c) const {
  std::vector<ConvKernel> v;
  for (int id : osplit_configs_for(c)) v.push_back(ConvKernel{-1, id});
  if (c.may_run_tiles())
    for (int id : tune_candidates(c.shape(), cc_major_, c.split))
      if (std::find(tune_skip_.begin(), tune_skip_.end(), id) == tune_skip_.end()) v.push_back(ConvKernel{id, -1});
  return v;
}

/// Times every candidate tile configuration of every conv on the bound input (one pass over
/// the steps on the engine's stream, each conv's candidates timed with events, then the
/// fastest run for real so later layers see real data) and keeps the fastest per conv for the
/// bound frame's size bucket. All candidates sum in the same order, so the choice never changes the
/// results.
void CudaEngine::autotune() {
  ++autotune_passes_;
  const bool trace = trace_autotune();
  if (trace) std::fprintf(stderr, "[autotune] size bucket %s\n", bucket_.label.c_str());
  // The pass writes the arena: the last forward (on any stream) must be done with it.
  if (forwarded_) SCN_CUDA_CHECK(cudaStreamWaitEvent(own_stream_, done_event_, 0));
  size_t scratch_bytes = 16;
  for (const ConvPlan& c : convs_)
    scratch_bytes =
        std::max(scratch_bytes, size_t(sites_[size_t(an().maps[size_t(c.slot)].out_sites)].cap) * size_t(c.cout_p) * 2);
  DevMem scratch;
  scratch.alloc(scratch_bytes);
  cudaEvent_t e0, e1;
  SCN_CUDA_CHECK(cudaEventCreate(&e0));
  SCN_CUDA_CHECK(cudaEventCreate(&e1));
  stage_inputs(own_stream_);
  for (const Step& st : steps_) {
    if (st.kind != StepKind::Conv) {
      run_step(st, own_stream_);
      continue;
    }
    ConvPlan& c = convs_[size_t(fusion().conv_of_node[size_t(st.node)])];
    const std::vector<ConvKernel> cands = conv_candidates(c);
    auto launch = [&](const ConvKernel& k, const ConvArgs& a) {
      if (k.osplit >= 0)
        launch_osplit(k.osplit, a, sm_count_, own_stream_);
      else
        launch_igemm(k.cfg, a, sm_count_, own_stream_);
    };
    ConvKernel best = c.kernel();
    double best_ms = 1e30;
    DevMem best_wt;
    std::vector<uint16_t> w_host;
    ensure_plain_weights(c);  // non-TMA candidates read them (dropped again after the pass if unused)
    for (const ConvKernel& k : cands) {
      const int id = k.cfg;
      DevMem wt;  // a TMA candidate's tiled weights, unless another bucket already runs it
      ConvArgs a = conv_args(c);
      if (k.osplit < 0 && igemm_config(id).tma) {
        const auto kept = c.w_tiled.find(tiled_layout(id));
        if (kept == c.w_tiled.end()) {
          if (w_host.empty()) w_host = pack_weights(c);
          wt = upload_tiled(c, id, w_host);
        }
        a.w_tma = kept != c.w_tiled.end() ? kept->second.get() : wt.get();
      } else {
        a.w_tma = nullptr;
      }
      if (a.residual && a.residual == a.y) a.y = scratch.get();  // in place: keep the identity intact
      launch(k, a);                                              // warm-up
      launch(k, a);
      // the median of 11 launches: candidates are often within 1-2 us, and a median of 5 picked
      // a slower tile for some layers from run to run
      std::vector<double> t(11);
      for (double& v : t) {
        SCN_CUDA_CHECK(cudaEventRecord(e0, own_stream_));
        launch(k, a);
        SCN_CUDA_CHECK(cudaEventRecord(e1, own_stream_));
        SCN_CUDA_CHECK(cudaEventSynchronize(e1));
        float ms = 0.f;
        SCN_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        v = ms;
      }
      const double med = summarize_timings(t).median;
      if (trace)
        std::fprintf(stderr, "[autotune] %s %s %.4f ms\n", graph_->nodes[size_t(c.node)].name.c_str(),
                     k.osplit >= 0 ? osplit_config(k.osplit).name : igemm_config(id).name, med);
      if (med < best_ms) {
        best_ms = med;
        best = k;
        best_wt = std::move(wt);
      }
    }
    c.set_kernel(best);
    if (best_wt.get()) c.w_tiled[tiled_layout(best.cfg)] = std::move(best_wt);
    c.tuned = true;
    run_step(st, own_stream_);
  }
  SCN_CUDA_CHECK(cudaStreamSynchronize(own_stream_));
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  record_bucket_tiles();
}

/// What the tuner's decisions depend on: the device, the CUDA versions, scn, the model, the
/// capacities and the options that shape the candidates.
TuningCache CudaEngine::tuning_key() const {
  cudaDeviceProp prop{};
  SCN_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  int runtime = 0, driver = 0;
  SCN_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  SCN_CUDA_CHECK(cudaDriverGetVersion(&driver));
  TuningCache k;
  k.key.emplace_back("gpu", prop.name);
  k.key.emplace_back("compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor));
  k.key.emplace_back("sm_count", std::to_string(prop.multiProcessorCount));
  k.key.emplace_back("cuda_runtime", std::to_string(runtime));
  k.key.emplace_back("cuda_driver", std::to_string(driver));
  k.key.emplace_back("scn", scn_version());
  k.key.emplace_back("model", model_digest(g()));
  // a build with other kernels (added configs, another class for some convs) re-tunes instead of
  // meeting names it cannot run
  std::vector<std::string> kernels = compiled_tile_names();
  for (const std::string& n : compiled_osplit_names()) kernels.push_back(n);
  k.key.emplace_back("kernels", names_digest(kernels));
  k.key.emplace_back("precision", precision_name(options_.precision));
  std::string caps;
  for (const SiteInfo& si : sites_) caps += (caps.empty() ? "" : ",") + std::to_string(si.cap);
  k.key.emplace_back("capacities", caps);
  k.key.emplace_back("split", std::to_string(opt().split));
  k.key.emplace_back("max_batch", std::to_string(options_.max_batch));  // the default split class follows it
  k.key.emplace_back("offset_groups", std::to_string(opt().offset_groups));
  // the tiles were timed on rows in this order (either order gives the same bits, not the same times)
  k.key.emplace_back("site_order", std::to_string(int(opt().site_order)));
  std::string skip;
  for (const std::string& t : opt().tune_skip) skip += (skip.empty() ? "" : ",") + t;
  k.key.emplace_back("tune_skip", skip);
  k.key.emplace_back("size_buckets", size_ladder(opt().tune_bucket_base, opt().tune_bucket_factor));
  return k;
}

/// The tiles of one size bucket of a matching cache; every conv must be listed with a compiled kernel the
/// tuner could have chosen for it (a tile of its split class, an osplit config of its offset-group class, or a
/// one-group osplit config of its shape), else the file is not what its key claims: an error naming it.
void CudaEngine::apply_tuning(const TuningBucket& bucket, const std::string& file) {
  SCN_CHECK(bucket.tiles.size() == convs_.size(), file, ": the tuning cache lists ", bucket.tiles.size(),
            " convolutions for size bucket '", bucket.label, "', the model has ", convs_.size());
  std::vector<ConvKernel> kernels;
  for (size_t i = 0; i < convs_.size(); ++i) {
    const ConvPlan& c = convs_[i];
    const auto& [node, tile] = bucket.tiles[i];
    SCN_CHECK(node == g().nodes[size_t(c.node)].name, file, ": tuning cache entry ", i + 1, " of size bucket '",
              bucket.label, "' is for node '", node, "', expected '", g().nodes[size_t(c.node)].name, "'");
    const int os = osplit_find_config(tile.c_str());
    if (os >= 0 || !c.may_run_tiles()) {  // an osplit config: one the conv may run (its class, or its shape's)
      const std::vector<int> fit = osplit_configs_for(c);
      SCN_CHECK(std::find(fit.begin(), fit.end(), os) != fit.end(), file, ": tuning cache kernel '", tile,
                "' for node '", node, "' is not a compiled osplit config of its class or shape here");
      kernels.push_back(ConvKernel{-1, os});
      continue;
    }
    const int id = find_tile(tile);
    SCN_CHECK(id >= 0 && igemm_config_fits(id, c.cin_p, cc_major_, c.K, c.mode) &&
                  same_split_class(igemm_config(id), c.shape(), c.split),
              file, ": tuning cache tile '", tile, "' for node '", node, "' is not a compiled tile of its kind here");
    kernels.push_back(ConvKernel{id, -1});
  }
  // The whole bucket is checked before any weights move.
  for (size_t i = 0; i < convs_.size(); ++i) {
    ConvPlan& c = convs_[i];
    const ConvKernel& k = kernels[i];
    const int id = k.cfg;
    if (k.osplit >= 0 || !igemm_config(id).tma)
      ensure_plain_weights(c);  // osplit and the non-TMA tiles read the plain weights
    else if (!c.w_tiled.count(tiled_layout(id)))
      c.w_tiled[tiled_layout(id)] = upload_tiled(c, id, pack_weights(c));
    c.set_kernel(k);
    c.tuned = true;
  }
  record_bucket_tiles();
}

/// The bound bucket's tiles: from CudaOptions::tuning_cache when the file's key matches and it holds
/// the bucket, else tuned (and the file rewritten with every bucket known).
void CudaEngine::tune_or_load() {
  const std::string& path = opt().tuning_cache;
  if (path.empty()) {
    autotune();
    return;
  }
  TuningCache now = tuning_key();
  if (!cache_ || cache_->key != now.key) {  // read once per key (the capacities follow the grids)
    if (const std::optional<TuningCache> file = read_tuning_cache(path)) {
      const std::string diff = key_difference(*file, now);
      if (diff.empty())
        now.buckets = file->buckets;
      else
        std::fprintf(stderr, "scn: tuning cache %s was written for another setup (%s); re-tuning\n", path.c_str(),
                     diff.c_str());
    }
    cache_ = now;
  }
  if (const TuningBucket* b = cache_->bucket(bucket_.label)) {
    apply_tuning(*b, path);
    return;
  }
  autotune();
  TuningBucket b{bucket_.label, {}};
  for (const ConvPlan& c : convs_) b.tiles.emplace_back(g().nodes[size_t(c.node)].name, conv_kernel_name(c));
  cache_->buckets.push_back(std::move(b));
  write_tuning_cache(path, *cache_);
}

}  // namespace scn::cuda
