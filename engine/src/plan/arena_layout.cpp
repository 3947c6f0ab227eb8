#include "plan/arena_layout.h"

#include <algorithm>
#include <climits>

#include "plan/strided_window.h"
#include "scn/error.h"

namespace scn {

namespace {

int64_t rank_blocks(int64_t words) { return (words + kRankBlockWords - 1) / kRankBlockWords; }

struct Collected {
  std::vector<BufferRequest> req;
  std::vector<std::string> label;
  std::vector<ArenaSite> sites;
  std::vector<int> map_req, value_req, shadow_req;
};

/// Every buffer the forward needs with its lifetime in steps under the release points `release`.
Collected collect(const ArenaInputs& in, const std::vector<int>& release) {
  const Graph& g = *in.graph;
  const GraphAnalysis& ana = *in.analysis;
  const FusionPlan& fu = *in.fusion;
  const int batch = in.batch;
  const int end = int(g.nodes.size());
  Collected c;
  std::string label;
  auto add_req = [&](size_t bytes, int first, int last) {
    c.req.push_back({bytes, first, std::max(first, last)});
    c.label.push_back(label);
    return int(c.req.size()) - 1;
  };

  // Site sets: capacities clipped by the grid, readers of the index and of the coordinates.
  c.sites.assign(size_t(ana.num_site_sets), ArenaSite{});
  for (int s = 0; s < ana.num_site_sets; ++s) {
    ArenaSite& si = c.sites[size_t(s)];
    si.grid = in.shapes->site_shape[size_t(s)];
    const int64_t cells = int64_t(batch) * si.grid[0] * si.grid[1] * si.grid[2];
    si.cap = std::min(in.site_capacity[size_t(s)], cells);
    if (ana.site_input[size_t(s)] >= 0) si.cap = in.site_capacity[size_t(s)];  // input overflow: rejected on the host
    si.words = (cells + 63) / 64;
    si.producer_step = ana.site_producer[size_t(s)] >= 0 ? ana.site_producer[size_t(s)] : 0;
    si.index_last = si.producer_step;
    si.coords_last = si.producer_step;
  }
  std::vector<int> built_by(size_t(ana.num_site_sets), 0);  // generated: the strided slot's first conv
  for (int s = 0; s < ana.num_site_sets; ++s)
    if (ana.site_input[size_t(s)] < 0) {
      // generated: produced at the first conv of its strided slot
      for (const MapSlot& m : ana.maps)
        if (m.kind == MapKind::Strided && m.out_sites == s) {
          c.sites[size_t(s)].producer_step = release[size_t(&m - &ana.maps[0])];
          built_by[size_t(s)] = m.first_node;
        }
    }
  for (size_t m = 0; m < in.sites_ahead.size(); ++m)
    if (in.sites_ahead[m] >= 0) {  // built once the root's sites are: from the root's release on
      ArenaSite& si = c.sites[size_t(ana.maps[m].out_sites)];
      si.producer_step = std::min(si.producer_step, release[size_t(in.sites_ahead[m])]);
    }
  auto read_index = [&](int s, int step) {
    c.sites[size_t(s)].index_last = std::max(c.sites[size_t(s)].index_last, step);
    c.sites[size_t(s)].coords_last = std::max(c.sites[size_t(s)].coords_last, step);
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
    if (g.values[size_t(v)].sparse) c.sites[size_t(ana.value_sites[size_t(v)])].coords_last = end;
  for (int s = 0; s < ana.num_site_sets; ++s) {
    ArenaSite& si = c.sites[size_t(s)];
    const int p = si.producer_step;
    label = detail::concat("sites", s, " coords");
    si.req_coords = add_req(size_t(si.cap) * 16, p, si.coords_last);
    label = detail::concat("sites", s, " bitmap");
    si.req_bits = add_req(size_t(si.words) * 8, p, si.index_last);
    label = detail::concat("sites", s, " rank (local)");
    si.req_rank_local = add_req(size_t(si.words) * 2, p, si.index_last);
    label = detail::concat("sites", s, " rank (blocks)");
    si.req_rank_block = add_req(size_t(rank_blocks(si.words)) * 4, p, si.index_last);
    label = detail::concat("sites", s, " perm");
    const bool ordered = in.site_ordered[size_t(s)];
    si.req_perm = in.site_generated[size_t(s)] && !ordered ? -1 : add_req(size_t(si.cap) * 4, p, si.index_last);
    if (ordered) {
      // the temporaries of the order, from the build's release to the conv that joins it (built by then)
      const int built = built_by[size_t(s)];
      label = detail::concat("sites", s, " order: coords by rank");
      si.req_order_coords = add_req(size_t(si.cap) * 16, p, built);
      label = detail::concat("sites", s, " order: keys");
      si.req_order_keys = add_req(size_t(si.cap), p, built);
      label = detail::concat("sites", s, " order: key counts");
      si.req_order_hist = add_req(size_t((site_order_blocks(si.cap) + 1) * kSiteOrderBuckets) * 4, p, built);
    }
  }
  // Kernel maps: out_in [cap_out x K], alive from the slot's build to its last conv.
  c.map_req.assign(ana.maps.size(), -1);
  for (size_t m = 0; m < ana.maps.size(); ++m) {
    const MapSlot& ms = ana.maps[m];
    int last = ms.first_node;
    for (int n : ms.nodes) last = std::max(last, n);
    label = detail::concat("map", m, " (", g.nodes[size_t(ms.first_node)].name, ")");
    c.map_req[m] =
        add_req(size_t(c.sites[size_t(ms.out_sites)].cap) * size_t(ms.kernel_volume()) * 4, release[m], last);
  }
  // Activations: one buffer per group, written at its writer's step, alive to the last reader.
  const size_t nv = g.values.size();
  std::vector<int> first(nv, INT_MAX), last(nv, -1);
  std::vector<size_t> bytes(nv, 0);
  for (size_t v = 0; v < nv; ++v) {
    const int w = fu.written_by[v];
    const bool materialised = w >= 0 && fu.materialized[v];
    if (!materialised) continue;
    const int r = in.groups->root(int(v));
    first[size_t(r)] = std::min(first[size_t(r)], w);
    // a residual read by a fused conv is read at the conv
    last[size_t(r)] = std::max({last[size_t(r)], ana.last_use[v], w});
    const Value& val = g.values[v];
    size_t b;
    if (val.sparse) {
      b = size_t(c.sites[size_t(ana.value_sites[v])].cap) * in.row_bytes(int(v));
    } else {
      int64_t e = 1;
      for (int64_t d : in.shapes->dense_shape[v]) e *= d;
      b = size_t(e) * 2;
    }
    bytes[size_t(r)] = std::max(bytes[size_t(r)], b);
  }
  // A densify's output is alive from its input's writer on: the densify launches programmatically after that
  // conv and stores zeros while it runs (backends/cuda/elementwise.cu), so the two must not share bytes.
  for (const auto& [node, out] : fu.densify_out) {
    const int in_v = g.nodes[size_t(node)].inputs[0];
    const int w = fu.written_by[size_t(in_v)];
    const int r = in.groups->root(out);
    if (w >= 0 && first[size_t(r)] != INT_MAX) first[size_t(r)] = std::min(first[size_t(r)], w);
  }
  // Values read through a Reshape view: their group lives as long as the view's readers.
  for (size_t v = 0; v < nv; ++v) {
    const int r = in.groups->root(int(v));
    if (first[size_t(r)] == INT_MAX) continue;
    last[size_t(r)] = std::max(last[size_t(r)], ana.last_use[v]);
  }
  c.value_req.assign(nv, -1);
  for (size_t v = 0; v < nv; ++v)
    if (first[v] != INT_MAX) {
      label = detail::concat("value '", g.values[v].name, "'");
      c.value_req[v] = add_req(bytes[v], first[v], last[v]);
    }
  // INT8 engines: converted copies, alive at their reader only.
  for (const ArenaShadow& sh : in.shadows) {
    label = detail::concat("convert '", g.values[size_t(sh.value)].name, "' for ", g.nodes[size_t(sh.reader)].name);
    const size_t cap = size_t(c.sites[size_t(ana.value_sites[size_t(sh.value)])].cap);
    c.shadow_req.push_back(
        add_req(cap * size_t(sh.stride) * (sh.to_q ? 1 : 2), sh.producer >= 0 ? sh.producer : sh.reader, sh.reader));
  }
  return c;
}

}  // namespace

std::vector<bool> neighbour_row_sets(const Graph& g, const GraphAnalysis& ana, CudaSiteOrder order) {
  std::vector<bool> ordered(size_t(ana.num_site_sets), false);
  if (order == CudaSiteOrder::Bitmap) return ordered;
  // per generated set: read by a submanifold conv, and the fewest input channels of those convs
  std::vector<int> narrowest(size_t(ana.num_site_sets), INT_MAX);
  for (const MapSlot& m : ana.maps)
    if (m.kind == MapKind::Subm && ana.site_input[size_t(m.in_sites)] < 0)
      for (int n : m.nodes)
        narrowest[size_t(m.in_sites)] = std::min(narrowest[size_t(m.in_sites)], g.nodes[size_t(n)].conv.in_channels);
  for (int s = 0; s < ana.num_site_sets; ++s)
    ordered[size_t(s)] = narrowest[size_t(s)] != INT_MAX &&
                         (order == CudaSiteOrder::NeighbourRows || narrowest[size_t(s)] >= kSiteOrderAutoChannels);
  for (int v : g.outputs)
    if (g.values[size_t(v)].sparse) ordered[size_t(ana.value_sites[size_t(v)])] = false;
  return ordered;
}

bool strided_sites_from_bitmap(const GraphAnalysis& ana, const MapSlot& m, CudaStridedSites how) {
  if (m.kind != MapKind::Strided || how == CudaStridedSites::FromRows) return false;
  const bool fits = strided_bits_window_fits(m.kernel_size[0], m.kernel_size[1], m.kernel_size[2], m.dilation[2]);
  return fits && (how == CudaStridedSites::FromBitmap || ana.site_input[size_t(m.in_sites)] < 0);
}

std::vector<int> sites_ahead_roots(const GraphAnalysis& ana, const CudaOptions& o, const ReleasePoints& r) {
  std::vector<int> root(ana.maps.size(), -1);
  if (!o.sites_ahead || r.lookahead == 0) return root;
  std::vector<int> generator(size_t(ana.num_site_sets), -1);  // the strided slot generating each set
  for (size_t m = 0; m < ana.maps.size(); ++m)
    if (ana.maps[m].kind == MapKind::Strided) generator[size_t(ana.maps[m].out_sites)] = int(m);
  // slots in build order generate the sets later slots read: a root is resolved before its dependents
  for (int m : r.map_order) {
    const MapSlot& ms = ana.maps[size_t(m)];
    if (!strided_sites_from_bitmap(ana, ms, o.strided_sites)) continue;
    const int g = generator[size_t(ms.in_sites)];
    if (g < 0) continue;  // an input set: its bitmap is made by the input step
    root[size_t(m)] = root[size_t(g)] >= 0 ? root[size_t(g)] : g;
  }
  return root;
}

ReleasePoints plan_release_points(const std::vector<Step>& steps, const GraphAnalysis& ana, int lookahead) {
  ReleasePoints r;
  r.lookahead = lookahead;
  r.release.assign(ana.maps.size(), 0);
  for (const Step& st : steps)
    if (st.kind == StepKind::Map) r.map_order.push_back(st.slot);
  bool inputs_first = true;
  bool seen_other = false;
  for (const Step& st : steps) {
    if (st.kind == StepKind::Input && seen_other) inputs_first = false;
    if (st.kind != StepKind::Input) seen_other = true;
  }
  if (!inputs_first) r.lookahead = 0;
  const size_t la = size_t(r.lookahead);
  for (size_t j = 0; j < r.map_order.size(); ++j) {
    const int m = r.map_order[j];
    r.release[size_t(m)] = (la > 0 && j >= la) ? ana.maps[size_t(r.map_order[j - la])].first_node
                           : la > 0            ? 0
                                               : ana.maps[size_t(m)].first_node;
  }
  return r;
}

ArenaLayout plan_arena_layout(const ArenaInputs& in) {
  const GraphAnalysis& ana = *in.analysis;
  const std::vector<int>& order = in.release.map_order;
  std::vector<int> release = in.release.release;
  // Map builds released early only where it pays: a map released `lookahead` slots ahead is
  // alive beside the previous level's activations. From the last map backwards to the second (the
  // ones released right after the inputs included), release it one slot later instead when that
  // lowers the most bytes alive at once (the deep levels have small maps and long convolutions, so
  // the map stream keeps its head start where it needs it; CenterPoint fitted to the real frame:
  // the level-1 submanifold map released at conv5, not beside level 0's peak).
  if (in.release.lookahead > 1) {
    size_t best = peak_live_bytes(collect(in, release).req, 256);
    for (size_t j = order.size(); j-- > 1;) {
      const int m = order[j];
      const int old = release[size_t(m)];
      const int later = ana.maps[size_t(order[j - 1])].first_node;
      if (later <= old) continue;
      release[size_t(m)] = later;
      const size_t p = peak_live_bytes(collect(in, release).req, 256);
      if (p < best)
        best = p;
      else
        release[size_t(m)] = old;
    }
  }
  Collected c = collect(in, release);
  ArenaLayout out;
  out.memory = plan_memory(c.req, 256);
  out.peak_live = peak_live_bytes(c.req, 256);
  out.requests = std::move(c.req);
  out.labels = std::move(c.label);
  out.sites = std::move(c.sites);
  out.map_req = std::move(c.map_req);
  out.value_req = std::move(c.value_req);
  out.shadow_req = std::move(c.shadow_req);
  out.release = std::move(release);
  return out;
}

}  // namespace scn
