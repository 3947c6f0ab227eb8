// A graph pushed again, node by node, into a new EngineBuilder, with hooks that change what a node is pushed with:
// the INT8 attributes (with_int8_attributes), a conv's attributes or the value an operand reads (the quantization
// simulator, tests/int8/quant_sim.cpp). Everything a hook does not change is pushed as the graph holds it.
#pragma once

#include <cstddef>
#include <functional>

#include "scn/engine.h"
#include "scn/graph.h"

namespace scn {

struct RebuildHooks {
  /// The node's INT8 attributes (default: the node's own).
  std::function<QuantAttrs(const Node&)> quant;
  /// A SparseConvolution's attributes (default: the node's own).
  std::function<ConvAttrs(const Node&)> conv;
  /// The value operand k of the node reads in the new builder, given the rebuilt value `v` it reads by default; the
  /// hook may push nodes of its own into `b` first (default: v).
  std::function<ValueId(const Node&, size_t k, ValueId v, EngineBuilder& b)> input;
};

/// The graph's nodes and outputs pushed in graph order into a builder of the same source name, with the nodes'
/// annotations.
EngineBuilder rebuild_graph(const Graph& g, const RebuildHooks& hooks = {});

}  // namespace scn
