#include "plan/engine_plan.h"

namespace scn {

FramePlan EnginePlan::replan(const std::vector<Int3>& grids, int batch) const {
  FramePlan f;
  f.grids = grids;
  f.batch = batch;
  f.shapes = infer_shapes(*graph, *analysis, grids, batch);
  return f;
}

EnginePlan make_plan(std::shared_ptr<const Graph> graph, std::shared_ptr<const GraphAnalysis> analysis,
                     const BuildOptions& options) {
  EnginePlan p;
  p.graph = std::move(graph);
  p.analysis = std::move(analysis);
  const Graph& g = *p.graph;
  // An fp16 engine runs every node in fp16 and ignores the nodes' INT8 attributes (docs/int8.md);
  // an int8 engine runs every node with its own precision, as int8::plan() states.
  p.int8 = options.precision == Precision::Int8;
  if (p.int8) p.int8_plan = int8::plan(g);
  p.fusion = plan_fusion(g);
  p.groups = plan_buffer_groups(g, p.fusion, p.int8_or_null());
  p.capacities = plan_capacities(g, *p.analysis, options.max_input_voxels, options.max_batch);
  p.steps = plan_steps(g, *p.analysis, p.fusion);
  return p;
}

}  // namespace scn
