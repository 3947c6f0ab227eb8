// The plan of an engine, computed once by EngineBuilder::build() from one graph analysis and handed
// to the backend (backends/backend_factory.h), as ggml keeps backends to compute and buffers:
//   analysis   site sets, kernel-map slots, last uses        (graph/analysis.h)
//   int8       INT8 storage plan and packed weights          (plan/int8_plan.h; Precision::Int8)
//   fusion     conv -> Relu, conv -> Add [-> Relu], densify transposes (graph/fusion.h)
//   groups     shared buffers: Reshape views, in-place residuals (plan/buffer_groups.h)
//   capacity   rows per site set from BuildOptions           (plan/capacities.h)
//   steps      the fused step list                           (plan/steps.h)
// A frame of a new grid or batch size goes through replan(), which infers the shapes; the backend
// then sizes its buffers (CUDA: the device arena) from the result.
#pragma once

#include <memory>
#include <vector>

#include "graph/analysis.h"
#include "graph/fusion.h"
#include "plan/buffer_groups.h"
#include "plan/capacities.h"
#include "plan/int8_plan.h"
#include "plan/steps.h"
#include "scn/engine.h"

namespace scn {

/// What depends on the bound frame: its grids (one per graph input) and batch size.
struct FramePlan {
  std::vector<Int3> grids;
  int batch = 0;
  ShapeInfo shapes;
};

struct EnginePlan {
  std::shared_ptr<const Graph> graph;
  std::shared_ptr<const GraphAnalysis> analysis;
  bool int8 = false;  ///< Precision::Int8: every node with its own precision (int8_plan)
  int8::Plan int8_plan;
  FusionPlan fusion;
  BufferGroups groups;
  Capacities capacities;
  std::vector<Step> steps;

  /// Shapes for a frame of these grids and batch size (throws naming the node when a ScatterDense
  /// does not fit them).
  FramePlan replan(const std::vector<Int3>& grids, int batch) const;
  /// The INT8 storage plan, or nullptr for an fp16 / fp32 engine.
  const int8::Plan* int8_or_null() const { return int8 ? &int8_plan : nullptr; }
};

/// `analysis` is analyze_graph(*graph) (EngineBuilder::check_graph keeps it).
EnginePlan make_plan(std::shared_ptr<const Graph> graph, std::shared_ptr<const GraphAnalysis> analysis,
                     const BuildOptions& options);

}  // namespace scn
