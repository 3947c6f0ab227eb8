// scn/inspect.h cuda_arena_report: the CUDA engine's device arena planned on the host
// (plan/arena_layout.h) for a grid, a batch and, optionally, a frame's measured rows per level.
#include <memory>

#include "backends/cpu/kernel_map.h"
#include "core/input_check.h"
#include "plan/arena_layout.h"
#include "plan/engine_plan.h"
#include "scn/inspect.h"

namespace scn {

std::vector<int64_t> frame_site_rows(const Graph& graph, const Int3& grid, int batch, const Tensor& idx,
                                     const std::string& label) {
  // (unchecked, a grid past 2^62 sites wrapped the site keys: two rows reported as one site)
  check_grid_and_batch(grid, batch, label + ": frame");
  check_sparse_indices(idx, grid, batch, "frame", label);
  const int32_t* p = idx.ptr<int32_t>();
  const int64_t n = idx.dim(0);
  const GraphAnalysis an = analyze_graph(graph);
  const ShapeInfo shapes = infer_shapes(graph, an, {grid}, batch);
  std::vector<cpu::SiteSet> sets(size_t(an.num_site_sets));
  for (int s = 0; s < an.num_site_sets; ++s)
    if (an.site_input[size_t(s)] >= 0) {
      sets[size_t(s)].shape = grid;
      sets[size_t(s)].batch = batch;
      sets[size_t(s)].coords.assign(p, p + 4 * n);
      sets[size_t(s)].index();
    }
  for (const MapSlot& m : an.maps)
    if (m.kind == MapKind::Strided) {
      sets[size_t(m.out_sites)].batch = batch;
      cpu::build_strided_map(sets[size_t(m.in_sites)], m, shapes.site_shape[size_t(m.out_sites)],
                             sets[size_t(m.out_sites)], 1);
    }
  std::vector<int64_t> rows;
  for (const cpu::SiteSet& s : sets) rows.push_back(s.size());
  return rows;
}

ArenaReport cuda_arena_report(const Graph& graph, const Int3& grid, int batch, const BuildOptions& options,
                              const Tensor* frame_indices) {
  if (!frame_indices) return cuda_arena_report(graph, grid, batch, options, std::vector<int64_t>{});
  return cuda_arena_report(graph, grid, batch, options, frame_site_rows(graph, grid, batch, *frame_indices));
}

ArenaReport cuda_arena_report(const Graph& graph, const Int3& grid, int batch, const BuildOptions& options,
                              const std::vector<int64_t>& frame_rows) {
  SCN_CHECK(graph.inputs.size() == 1, graph.source, ": the arena report takes one input grid; the graph has ",
            graph.inputs.size(), " inputs");
  SCN_CHECK(batch >= 1 && batch <= options.max_batch, "batch ", batch,
            " is outside 1..BuildOptions.max_batch = ", options.max_batch);
  check_grid_and_batch(grid, batch, graph.source + ": the arena report");
  auto g = std::make_shared<const Graph>(graph);
  auto an = std::make_shared<const GraphAnalysis>(analyze_graph(*g));
  BuildOptions fp16 = options;
  fp16.precision = Precision::Fp16;
  const EnginePlan plan = make_plan(g, an, fp16);
  const FramePlan frame = plan.replan({grid}, batch);
  ArenaReport r;
  std::vector<int64_t> caps = plan.capacities.site_rows;
  if (!frame_rows.empty()) {
    SCN_CHECK(frame_rows.size() == caps.size(), graph.source, ": ", frame_rows.size(),
              " frame rows given for a graph of ", caps.size(), " site sets");
    r.measured_rows = frame_rows;
    if (options.capacity_source == CapacitySource::FirstFrame)
      caps = fit_capacities(r.measured_rows, options.capacity_margin);
  }
  ArenaInputs in;
  in.graph = g.get();
  in.analysis = an.get();
  in.fusion = &plan.fusion;
  in.groups = &plan.groups;
  in.shapes = &frame.shapes;
  in.batch = batch;
  in.site_capacity = caps;
  for (int s = 0; s < an->num_site_sets; ++s) in.site_generated.push_back(an->site_input[size_t(s)] < 0);
  in.site_ordered = neighbour_row_sets(*g, *an, options.cuda.site_order);
  in.row_bytes = [&graph](int v) { return size_t((graph.values[size_t(v)].channels + 15) / 16 * 16) * 2; };
  in.release = plan_release_points(plan.steps, *an, options.cuda.map_lookahead);
  in.sites_ahead = sites_ahead_roots(*an, options.cuda, in.release);
  const ArenaLayout lay = plan_arena_layout(in);
  for (const ArenaSite& s : lay.sites) r.capacity.push_back(s.cap);
  for (size_t i = 0; i < lay.requests.size(); ++i)
    r.buffers.push_back(
        {lay.labels[i], lay.requests[i].bytes, lay.requests[i].first, lay.requests[i].last, lay.memory.offsets[i]});
  r.total = lay.memory.total;
  r.peak_live = lay.peak_live;
  return r;
}

}  // namespace scn
