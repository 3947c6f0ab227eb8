// The device arena of the bound frame: every buffer a forward writes (site indices, kernel maps,
// activations by buffer group, INT8 converted copies) requested with its lifetime in node steps
// under the current map release points, placed by plan_memory, and every device pointer into it.
// Planned when the inputs are bound and re-planned (EnginePlan::replan) only when the grids or the
// batch size change. Also the input staging, which lives outside the arena.
#include <algorithm>
#include <climits>
#include <cstdio>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_engine.h"
#include "core/options.h"

namespace scn::cuda {

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
  const GraphAnalysis& ana = an();
  release_node_ = release_base_;
  std::vector<BufferRequest> req;
  std::vector<std::string> req_label;
  collect_requests(req, req_label);
  // Map builds released early only where it pays: a map released `lookahead_` slots ahead is
  // alive beside the previous level's activations. From the last map backwards, release it one
  // slot ahead instead when that lowers the most bytes alive at once (the deep levels have small
  // maps and long convolutions, so the map stream keeps its head start where it needs it).
  if (lookahead_ > 1) {
    size_t best = peak_live_bytes(req, 256);
    for (size_t j = map_order_.size(); j-- > size_t(lookahead_);) {
      const int m = map_order_[j];
      const int old = release_node_[size_t(m)];
      const int later = ana.maps[size_t(map_order_[j - 1])].first_node;
      if (later <= old) continue;
      release_node_[size_t(m)] = later;
      std::vector<BufferRequest> r2;
      std::vector<std::string> l2;
      collect_requests(r2, l2);
      const size_t p = peak_live_bytes(r2, 256);
      if (p < best)
        best = p;
      else
        release_node_[size_t(m)] = old;
    }
    req.clear();
    req_label.clear();
    collect_requests(req, req_label);  // the request ids of the kept release points
  }
  place_arena(req, req_label);
}

/// Every buffer the forward needs (site indices, kernel maps, activations, input
/// staging) with its lifetime in node steps under the current release points; records the
/// request ids in sites_, map_req_ and value_req_.
void CudaEngine::collect_requests(std::vector<BufferRequest>& req, std::vector<std::string>& req_label) {
  const GraphAnalysis& ana = an();
  const FusionPlan& fu = fusion();
  const int batch = frame_.batch;
  const Graph& g = *graph_;
  const int end = int(g.nodes.size());
  std::string label;
  auto add_req = [&](size_t bytes, int first, int last) {
    req.push_back({bytes, first, std::max(first, last)});
    req_label.push_back(label);
    return int(req.size()) - 1;
  };

  // Site sets: capacities clipped by the grid, readers of the index and of the coordinates.
  for (int s = 0; s < ana.num_site_sets; ++s) {
    SiteInfo& si = sites_[size_t(s)];
    si.grid = frame_.shapes.site_shape[size_t(s)];
    const int64_t cells = int64_t(batch) * si.grid[0] * si.grid[1] * si.grid[2];
    si.cap = std::min(si.cap_build, cells);
    if (ana.site_input[size_t(s)] >= 0) si.cap = si.cap_build;  // input overflow is rejected on the host
    si.words = (cells + 63) / 64;
    SCN_CHECK(size_t(si.words) * 10 <= kMaxBitmapBytes, g.source, ": the grid ", int3_string(si.grid), " x batch ",
              batch, " needs a ", si.words * 10 / (1 << 20), " MiB site bitmap, more than the CUDA backend's limit of ",
              kMaxBitmapBytes >> 20, " MiB");
    si.producer_step = ana.site_producer[size_t(s)] >= 0 ? ana.site_producer[size_t(s)] : 0;
    si.index_last = si.producer_step;
    si.coords_last = si.producer_step;
  }
  for (int s = 0; s < ana.num_site_sets; ++s)
    if (ana.site_input[size_t(s)] < 0) {
      // generated: produced at the first conv of its strided slot
      for (const MapSlot& m : ana.maps)
        if (m.kind == MapKind::Strided && m.out_sites == s)
          sites_[size_t(s)].producer_step = release_node_[size_t(&m - &ana.maps[0])];
    }
  auto read_index = [&](int s, int step) {
    sites_[size_t(s)].index_last = std::max(sites_[size_t(s)].index_last, step);
    sites_[size_t(s)].coords_last = std::max(sites_[size_t(s)].coords_last, step);
  };
  for (const MapSlot& m : ana.maps) {
    switch (m.kind) {
      case MapKind::Subm:
        read_index(m.in_sites, m.first_node);
        break;
      case MapKind::Strided:
        read_index(m.in_sites, m.first_node);
        read_index(m.out_sites, m.first_node);
        break;
      case MapKind::Inverse: {
        const MapSlot& src = ana.maps[size_t(m.source_slot)];
        read_index(src.in_sites, m.first_node);
        read_index(src.out_sites, m.first_node);
        break;
      }
    }
  }
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (g.nodes[n].op == OpType::ScatterDense && !fu.absorbed[n])
      read_index(ana.value_sites[size_t(g.nodes[n].inputs[0])], int(n));
  for (int v : g.outputs)
    if (g.values[size_t(v)].sparse) {
      const int s = ana.value_sites[size_t(v)];
      sites_[size_t(s)].coords_last = end;
    }
  for (int s = 0; s < ana.num_site_sets; ++s) {
    SiteInfo& si = sites_[size_t(s)];
    const int p = si.producer_step;
    label = detail::concat("sites", s, " coords");
    si.req_coords = add_req(size_t(si.cap) * 16, p, si.coords_last);
    label = detail::concat("sites", s, " bits/rank/perm");
    si.req_bits = add_req(size_t(si.words) * 8, p, si.index_last);
    si.req_rank_local = add_req(size_t(si.words) * 2, p, si.index_last);
    si.req_rank_block = add_req(size_t(rank_blocks(si.words)) * 4, p, si.index_last);
    si.req_perm = si.generated ? -1 : add_req(size_t(si.cap) * 4, p, si.index_last);
  }
  // Kernel maps: out_in [cap_out x K], alive from the slot's build to its last conv.
  map_req_.assign(ana.maps.size(), -1);
  for (size_t m = 0; m < ana.maps.size(); ++m) {
    const MapSlot& ms = ana.maps[m];
    int last = ms.first_node;
    for (int n : ms.nodes) last = std::max(last, n);
    label = detail::concat("map", m, " (", g.nodes[size_t(ms.first_node)].name, ")");
    map_req_[m] =
        add_req(size_t(sites_[size_t(ms.out_sites)].cap) * size_t(ms.kernel_volume()) * 4, release_node_[m], last);
  }
  // Activations: one buffer per group, written at its writer's step, alive to the last reader.
  const size_t nv = g.values.size();
  std::vector<int> first(nv, INT_MAX), last(nv, -1);
  std::vector<size_t> bytes(nv, 0);
  for (size_t v = 0; v < nv; ++v) {
    const int w = fu.written_by[v];
    const bool materialised = w >= 0 && fu.materialized[v];
    if (!materialised) continue;
    const int r = plan_->groups.root(int(v));
    first[size_t(r)] = std::min(first[size_t(r)], w);
    int lu = ana.last_use[v];
    // a residual read by a fused conv is read at the conv
    last[size_t(r)] = std::max({last[size_t(r)], lu, w});
    const Value& val = g.values[v];
    size_t b;
    if (val.sparse) {
      b = size_t(sites_[size_t(ana.value_sites[v])].cap) * row_bytes(int(v));
    } else {
      int64_t e = 1;
      for (int64_t d : frame_.shapes.dense_shape[v]) e *= d;
      b = size_t(e) * 2;
    }
    bytes[size_t(r)] = std::max(bytes[size_t(r)], b);
  }
  // Values read through a Reshape view: their group lives as long as the view's readers.
  for (size_t v = 0; v < nv; ++v) {
    const int r = plan_->groups.root(int(v));
    if (first[size_t(r)] == INT_MAX) continue;
    last[size_t(r)] = std::max(last[size_t(r)], ana.last_use[v]);
  }
  value_req_.assign(nv, -1);
  for (size_t v = 0; v < nv; ++v)
    if (first[v] != INT_MAX) {
      label = detail::concat("value '", g.values[v].name, "'");
      value_req_[v] = add_req(bytes[v], first[v], last[v]);
    }
  // INT8 engines: converted copies, alive at their reader only.
  for (Shadow& sh : shadows_) {
    label = detail::concat("convert '", g.values[size_t(sh.value)].name, "' for ", g.nodes[size_t(sh.reader)].name);
    const size_t cap = size_t(sites_[size_t(ana.value_sites[size_t(sh.value)])].cap);
    sh.req =
        add_req(cap * size_t(sh.stride) * (sh.to_q ? 1 : 2), sh.producer >= 0 ? sh.producer : sh.reader, sh.reader);
  }
}

/// Offsets for the requests in one arena, and every device pointer into it.
void CudaEngine::place_arena(const std::vector<BufferRequest>& req, const std::vector<std::string>& req_label) {
  const Graph& g = *graph_;
  const GraphAnalysis& ana = an();
  const int batch = frame_.batch;
  const size_t nv = g.values.size();
  const MemoryPlan plan = plan_memory(req, 256);
  if (trace_plan()) {
    std::fprintf(stderr, "[plan] arena %.2f MB (most bytes alive at one step: %.2f MB), %zu buffers\n",
                 double(plan.total) / 1e6, double(peak_live_bytes(req, 256)) / 1e6, req.size());
    for (size_t i = 0; i < req.size(); ++i)
      std::fprintf(stderr, "[plan] %3zu %-28s %10.3f MB  steps %3d..%3d  @%.2f MB\n", i, req_label[i].c_str(),
                   double(req[i].bytes) / 1e6, req[i].first, req[i].last, double(plan.offsets[i]) / 1e6);
  }
  destroy_graph();
  arena_.reset();
  arena_.alloc(plan.total + 256);
  auto* base = arena_.get<uint8_t>();
  auto at = [&](int r) -> void* { return r < 0 ? nullptr : base + plan.offsets[size_t(r)]; };

  for (int s = 0; s < ana.num_site_sets; ++s) {
    SiteInfo& si = sites_[size_t(s)];
    SiteIndex& d = si.dev;
    d.bits = static_cast<uint64_t*>(at(si.req_bits));
    d.rank_local = static_cast<uint16_t*>(at(si.req_rank_local));
    d.rank_block = static_cast<uint32_t*>(at(si.req_rank_block));
    d.perm = static_cast<int32_t*>(at(si.req_perm));
    d.coords = static_cast<int4*>(at(si.req_coords));
    d.count = counts_.get<int>() + s;
    d.words = si.words;
    d.cap = si.cap;
    d.s0 = si.grid[0];
    d.s1 = si.grid[1];
    d.s2 = si.grid[2];
    d.batch = batch;
  }
  map_ptr_.assign(ana.maps.size(), nullptr);
  for (size_t m = 0; m < ana.maps.size(); ++m) map_ptr_[m] = static_cast<int32_t*>(at(map_req_[m]));
  value_ptr_.assign(nv, nullptr);
  for (size_t v = 0; v < nv; ++v) value_ptr_[v] = at(value_req_[size_t(plan_->groups.root(int(v)))]);
  for (Shadow& sh : shadows_) sh.ptr = at(sh.req);
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
    SCN_CUDA_CHECK(cudaEventCreateWithFlags(&in.copied, cudaEventDisableTiming));
    for (const Step& st : steps_)
      if (st.kind == StepKind::Input && st.slot == int(k)) in.node = st.node;
  }
  out_compact_ = std::vector<DevMem>(g.outputs.size());
}

void CudaEngine::stage_inputs(cudaStream_t s) {
  for (size_t k = 0; k < inputs_.size(); ++k) {
    InputSlot& in = inputs_[k];
    const SiteInfo& si = sites_[size_t(an().value_sites[size_t(graph_->inputs[k])])];
    if (in.device_count) {
      launch_stage_counted_rows(in.dev_features.data(), in.raw_feat.get(), in.channels * (in.raw_fp32 ? 4 : 2),
                                static_cast<const int32_t*>(in.dev_indices.data()), in.raw_idx.get<int32_t>(),
                                in.device_count, si.dev.count, si.cap_build, err_of(in.node) + kErrOverflow, sm_count_,
                                s);
    } else if (in.on_device) {
      const size_t fb = size_t(in.n) * size_t(in.channels) * (in.raw_fp32 ? 4 : 2);
      if (fb)
        SCN_CUDA_CHECK(cudaMemcpyAsync(in.raw_feat.get(), in.dev_features.data(), fb, cudaMemcpyDeviceToDevice, s));
      if (in.n)
        SCN_CUDA_CHECK(
            cudaMemcpyAsync(in.raw_idx.get(), in.dev_indices.data(), size_t(in.n) * 16, cudaMemcpyDeviceToDevice, s));
      launch_set_count(si.dev.count, int(in.n), s);
    } else if (s != own_stream_) {
      // the host data (and its count) were copied on the engine's stream by set_input
      SCN_CUDA_CHECK(cudaStreamWaitEvent(s, in.copied, 0));
    }
  }
}

}  // namespace scn::cuda
