// Device-side errors (kernels.h ErrSlot: per node and kind, the hit count, the smallest row and two
// values) decoded into messages that name the node, the input row and its coordinates, or the
// overflowing capacity.
#include <climits>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_engine.h"

namespace scn::cuda {

void CudaEngine::reset_errors() {
  std::vector<ErrSlot> init(graph_->nodes.size() * kNumErrKinds);
  for (auto& e : init) {
    e.hits = 0;
    e.row = LLONG_MAX;
    e.v0 = 0;
    e.v1 = 0;
  }
  SCN_CUDA_CHECK(cudaMemcpy(errors_.get(), init.data(), init.size() * sizeof(ErrSlot), cudaMemcpyHostToDevice));
}

std::string CudaEngine::error_message(int node, int kind, const ErrSlot& e) const {
  const Graph& g = *graph_;
  const Node& n = g.nodes[size_t(node)];
  if (kind == kErrOverflow && n.op == OpType::Input) {  // a device-side row count (set_input_device_count)
    if (e.row == kCountRowNegative)
      return detail::concat("input '", n.name, "' (device count): the row count is negative");
    if (e.row == kCountRowBeyondBuffers)
      return detail::concat("input '", n.name, "' (device count): the count ", e.v0,
                            " exceeds the rows of the bound buffers (features and indices of ", e.v1,
                            " rows, set_input_device_count); only the first ", e.v1,
                            " rows were read. Bind buffers that hold every counted row");
    return detail::concat("input '", n.name, "' (device count): ", e.v0, " voxels exceed the capacity of ", e.v1,
                          " planned (BuildOptions.max_input_voxels x max_batch, or as fitted to a frame); only the "
                          "first ",
                          e.v1,
                          " rows were read. Rebuild with a larger max_input_voxels, or set "
                          "BuildOptions.on_capacity_overflow = CapacityOverflow::Grow");
  }
  if (kind == kErrOverflow) {
    const bool bounds = options_.capacity_source == CapacitySource::Bounds;
    return detail::concat(
        g.source, ": ", g.describe(node), ": ", e.v0, " output sites exceed the capacity of ", e.v1,
        bounds ? detail::concat(" planned from output_bound=", n.conv.output_bound, " x max_batch=", options_.max_batch)
               : std::string(" fitted to the first frame (CapacitySource::FirstFrame)"),
        " (", e.v0 - e.v1,
        " sites were dropped); rebuild with a larger output_bound or BuildOptions.max_input_voxels, "
        "or set BuildOptions.on_capacity_overflow = CapacityOverflow::Grow");
  }
  // input errors: name the row and read its coordinates back from the staging copy
  int in_idx = 0;
  for (size_t k = 0; k < g.inputs.size(); ++k)
    if (g.inputs[k] == n.output) in_idx = int(k);
  const InputSlot& in = inputs_[size_t(in_idx)];
  int32_t r[4] = {0, 0, 0, 0};
  if (e.row >= 0 && e.row < in.n) cudaMemcpy(r, in.raw_idx.get<int32_t>() + 4 * e.row, 16, cudaMemcpyDeviceToHost);
  const std::string where = detail::concat("input '", n.name, "' (device check): row ", e.row, " (", r[0], ", ", r[1],
                                           ", ", r[2], ", ", r[3], ")");
  const std::string more = e.hits > 1 ? detail::concat(" [", e.hits, " rows affected]") : std::string();
  switch (kind) {
    case kErrBatch:
      return detail::concat(where, " has batch index ", r[0], ", outside 0..", batch_ - 1, " for batch size ", batch_,
                            more);
    case kErrRange:
      return detail::concat(where, " lies outside the grid ", int3_string(in.grid), more);
    case kErrDuplicate:
      return detail::concat(where, " is the same site as another row; duplicate coordinates are not allowed", more);
    case kErrNonFinite:
      return detail::concat("input '", n.name, "' (device check): row ", e.row,
                            " has a feature that is NaN, infinite or beyond the float16 activations (|x| >= 65520); "
                            "features must be finite and within float16",
                            more);
    default:
      break;
  }
  return detail::concat(g.source, ": ", g.describe(node), ": device error ", kind);
}

}  // namespace scn::cuda
