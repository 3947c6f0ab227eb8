// The device arena of the bound frame: its layout planned on the host (plan/arena_layout.h: every
// buffer a forward writes with its lifetime, the map release points, the placement), allocated
// here with every device pointer into it. Planned when the inputs are bound and re-planned
// (EnginePlan::replan) when the grids, the batch size or the capacities change. Also the input
// staging, which lives outside the arena.
#include <algorithm>
#include <climits>
#include <cstdio>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_engine.h"
#include "core/options.h"
#include "plan/arena_layout.h"

namespace scn::cuda {

static_assert(kRankBlock == kRankBlockWords, "the host layout sizes rank blocks as the kernels do");
static_assert(kSiteOrderRows == kSiteOrderBlockRows && kSiteOrderKeys == kSiteOrderBuckets,
              "the host layout sizes the order's histograms as the kernels do");

void CudaEngine::ensure_planned() {
  std::vector<Int3> grids;
  for (const auto& in : inputs_) grids.push_back(in.grid);
  if (planned_ && grids == frame_.grids && batch_ == frame_.batch) return;
  if (forwarded_) SCN_CUDA_CHECK(cudaEventSynchronize(done_event_));
  SCN_CUDA_CHECK(cudaStreamSynchronize(own_stream_));
  frame_ = plan_->replan(grids, batch_);  // the shapes of this frame (the one re-planning entry point)
  plan_arena();
  planned_ = true;
  exec_valid_ = false;
}

void CudaEngine::plan_arena() {
  const Graph& g = *graph_;
  const GraphAnalysis& ana = an();
  const int batch = frame_.batch;
  const size_t nv = g.values.size();
  ArenaInputs in;
  in.graph = graph_.get();
  in.analysis = &ana;
  in.fusion = &fusion();
  in.groups = &plan_->groups;
  in.shapes = &frame_.shapes;
  in.batch = batch;
  for (const SiteInfo& si : sites_) {
    in.site_capacity.push_back(si.cap_build);
    in.site_generated.push_back(si.generated);
    in.site_ordered.push_back(si.ordered);
  }
  in.row_bytes = [this](int v) { return row_bytes(v); };
  for (const Shadow& sh : shadows_) in.shadows.push_back({sh.value, sh.reader, sh.producer, sh.stride, sh.to_q});
  in.sites_ahead = sites_root_;
  in.release.release = release_base_;
  in.release.map_order = map_order_;
  in.release.lookahead = lookahead_;
  const ArenaLayout lay = plan_arena_layout(in);
  release_node_ = lay.release;
  for (int s = 0; s < ana.num_site_sets; ++s) {
    const ArenaSite& a = lay.sites[size_t(s)];
    SCN_CHECK(size_t(a.words) * 10 <= kMaxBitmapBytes, g.source, ": the grid ", int3_string(a.grid), " x batch ", batch,
              " needs a ", a.words * 10 / (1 << 20), " MiB site bitmap, more than the CUDA backend's limit of ",
              kMaxBitmapBytes >> 20, " MiB");
  }
  const MemoryPlan& plan = lay.memory;
  if (trace_plan()) {
    std::fprintf(stderr, "[plan] arena %.2f MB (most bytes alive at one step: %.2f MB), %zu buffers\n",
                 double(plan.total) / 1e6, double(lay.peak_live) / 1e6, lay.requests.size());
    for (size_t i = 0; i < lay.requests.size(); ++i)
      std::fprintf(stderr, "[plan] %3zu %-28s %10.3f MB  steps %3d..%3d  @%.2f MB\n", i, lay.labels[i].c_str(),
                   double(lay.requests[i].bytes) / 1e6, lay.requests[i].first, lay.requests[i].last,
                   double(plan.offsets[i]) / 1e6);
  }
  destroy_graph();
  // A new arena: the old one is freed here unless views of it (the outputs handed out, which share it) live on.
  arena_ = std::make_shared<DevMem>();
  arena_->alloc(plan.total + 256);
  auto* base = arena_->get<uint8_t>();
  auto at = [&](int r) -> void* { return r < 0 ? nullptr : base + plan.offsets[size_t(r)]; };

  for (int s = 0; s < ana.num_site_sets; ++s) {
    SiteInfo& si = sites_[size_t(s)];
    const ArenaSite& a = lay.sites[size_t(s)];
    si.grid = a.grid;
    si.cap = a.cap;
    si.words = a.words;
    si.producer_step = a.producer_step;
    si.index_last = a.index_last;
    si.coords_last = a.coords_last;
    SiteIndex& d = si.dev;
    d.bits = static_cast<uint64_t*>(at(a.req_bits));
    d.rank_local = static_cast<uint16_t*>(at(a.req_rank_local));
    d.rank_block = static_cast<uint32_t*>(at(a.req_rank_block));
    d.perm = static_cast<int32_t*>(at(a.req_perm));
    d.coords = static_cast<int4*>(at(a.req_coords));
    si.order = {};
    if (si.ordered) {
      si.order.coords_by_rank = static_cast<int4*>(at(a.req_order_coords));
      si.order.keys = static_cast<uint8_t*>(at(a.req_order_keys));
      si.order.hist = static_cast<uint32_t*>(at(a.req_order_hist));
    }
    d.count = counts_.get<int>() + s;
    d.words = si.words;
    d.cap = si.cap;
    d.s0 = si.grid[0];
    d.s1 = si.grid[1];
    d.s2 = si.grid[2];
    d.batch = batch;
  }
  map_ptr_.assign(ana.maps.size(), nullptr);
  for (size_t m = 0; m < ana.maps.size(); ++m) map_ptr_[m] = static_cast<int32_t*>(at(lay.map_req[m]));
  value_ptr_.assign(nv, nullptr);
  for (size_t v = 0; v < nv; ++v) value_ptr_[v] = at(lay.value_req[size_t(plan_->groups.root(int(v)))]);
  for (size_t k = 0; k < shadows_.size(); ++k) shadows_[k].ptr = at(lay.shadow_req[k]);
  for (ConvPlan& c : convs_)  // epilogue parameters, with the second output's arena address
    if (c.mode != 0) {
      const QEpilogue q = q_epilogue(c);
      SCN_CUDA_CHECK(cudaMemcpy(c.qargs.get(), &q, sizeof(QEpilogue), cudaMemcpyHostToDevice));
    }
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const int v = g.outputs[k];
    const Value& val = g.values[size_t(v)];
    if (val.sparse && (round_up16(val.channels) != val.channels || q8(v)))
      out_compact_[k].alloc(size_t(sites_[size_t(ana.value_sites[size_t(v)])].cap) * size_t(val.channels) * 2);
  }
}

void CudaEngine::prepare_inputs() {
  const Graph& g = *graph_;
  inputs_ = std::vector<InputSlot>(g.inputs.size());
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    InputSlot& in = inputs_[k];
    in.channels = g.values[size_t(g.inputs[k])].channels;
    const int64_t cap = sites_[size_t(an().value_sites[size_t(g.inputs[k])])].cap_build;
    in.raw_feat.alloc(size_t(cap) * size_t(in.channels) * 2 + 16);  // fp16; grows once for fp32 inputs
    in.raw_idx.alloc(size_t(cap) * 16 + 16);
    in.host_feat.alloc(size_t(cap) * size_t(in.channels) * 4 + 16);
    in.host_idx.alloc(size_t(cap) * 16 + 16);
    in.host_count.alloc(16);
    in.source.alloc(sizeof(InputSource));
    SCN_CUDA_CHECK(cudaEventCreateWithFlags(&in.copied, cudaEventDisableTiming));
    for (const Step& st : steps_)
      if (st.kind == StepKind::Input && st.slot == int(k)) in.node = st.node;
  }
  out_compact_ = std::vector<DevMem>(g.outputs.size());
}

void CudaEngine::stage_inputs(cudaStream_t s, bool in_capture) {
  for (size_t k = 0; k < inputs_.size(); ++k) {
    InputSlot& in = inputs_[k];
    const SiteInfo& si = sites_[size_t(an().value_sites[size_t(graph_->inputs[k])])];
    if (in.device_count) {
      // The count is clamped to the rows that are both planned and bound: a count past the bound buffers' rows is an
      // error like one past the capacity (its own message), never a read beyond the caller's memory.
      launch_stage_counted_rows(in.dev_features.data(), in.raw_feat.get(), in.channels * (in.raw_fp32 ? 4 : 2),
                                static_cast<const int32_t*>(in.dev_indices.data()), in.raw_idx.get<int32_t>(),
                                in.device_count, si.dev.count, si.cap_build, in.dev_features.dim(0),
                                err_of(in.node) + kErrOverflow, sm_count_, s);
    } else if (in.on_device) {
      // Read in place by the input step: only the buffers' addresses and the row count are written (in stream
      // order before the forward's kernels), and only when they differ from what an earlier forward wrote —
      // except inside a caller's stream capture, whose graph must carry its own write.
      const InputSource src{in.dev_features.data(), static_cast<const int32_t*>(in.dev_indices.data())};
      if (in_capture || src.features != in.written.features || src.indices != in.written.indices ||
          in.n != in.written_rows) {
        launch_set_input_source(in.source.get<InputSource>(), src, si.dev.count, int(in.n), s);
        in.written = src;
        in.written_rows = in.n;
      }
    } else if (s != own_stream_) {
      // the host data (and its count) were copied on the engine's stream by set_input
      SCN_CUDA_CHECK(cudaStreamWaitEvent(s, in.copied, 0));
    }
  }
}

}  // namespace scn::cuda
