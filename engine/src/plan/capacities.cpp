#include "plan/capacities.h"

#include <algorithm>

namespace scn {

Capacities plan_capacities(const Graph& g, const GraphAnalysis& an, int64_t max_input_voxels, int max_batch) {
  int64_t largest_bound = 0;
  for (const Node& n : g.nodes)
    if (n.op == OpType::SparseConv) largest_bound = std::max(largest_bound, n.conv.output_bound);
  const int64_t fallback = largest_bound > 0 ? largest_bound : kDefaultCapacity;
  const int64_t per_sample = max_input_voxels > 0 ? max_input_voxels : fallback;
  Capacities c;
  c.site_rows.assign(size_t(an.num_site_sets), 0);
  for (int s = 0; s < an.num_site_sets; ++s)
    if (an.site_input[size_t(s)] >= 0) c.site_rows[size_t(s)] = per_sample * max_batch;
  for (const MapSlot& m : an.maps) {
    if (m.kind != MapKind::Strided) continue;
    int64_t ob = 0;
    for (int n : m.nodes) ob = std::max(ob, g.nodes[size_t(n)].conv.output_bound);
    int64_t fan = 1;
    for (int d = 0; d < 3; ++d) fan *= (m.kernel_size[d] + m.stride[d] - 1) / m.stride[d];
    const int64_t in_cap = c.site_rows[size_t(m.in_sites)];
    c.site_rows[size_t(m.out_sites)] =
        ob > 0 ? ob * max_batch : std::min(in_cap * fan, std::max(in_cap, fallback * max_batch));
  }
  return c;
}

}  // namespace scn
