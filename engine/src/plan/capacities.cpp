#include "plan/capacities.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "scn/error.h"

namespace scn {

namespace {

/// Output sites one input site can reach through a strided conv: along an axis, the taps j with
/// (x + pad - j d) divisible by s are one in every s / gcd(s, d), so prod(ceil(k / (s / gcd(s, d)))).
int64_t reach(const MapSlot& m) {
  int64_t fan = 1;
  for (int d = 0; d < 3; ++d) {
    const int64_t period = m.stride[d] / std::gcd(m.stride[d], std::max(1, m.dilation[d]));
    fan *= (m.kernel_size[d] + period - 1) / period;
  }
  return fan;
}

}  // namespace

Capacities plan_capacities(const Graph& g, const GraphAnalysis& an, int64_t max_input_voxels, int max_batch) {
  int64_t largest_bound = 0;
  for (const Node& n : g.nodes)
    if (n.op == OpType::SparseConv) largest_bound = std::max(largest_bound, n.conv.output_bound);
  const int64_t fallback = largest_bound > 0 ? largest_bound : kDefaultCapacity;
  const int64_t per_sample = max_input_voxels > 0 ? max_input_voxels : fallback;
  // output_bound and max_input_voxels are each checked against kMaxSiteRows where they are set; their products with
  // max_batch here
  SCN_CHECK(per_sample <= kMaxSiteRows / max_batch, g.source, ": ", per_sample, " input voxels per sample (",
            max_input_voxels > 0 ? "BuildOptions.max_input_voxels" : "the largest output_bound", ") x max_batch ",
            max_batch, " is above the ", kMaxSiteRows, " rows a site set can hold");
  Capacities c;
  c.site_rows.assign(size_t(an.num_site_sets), 0);
  for (int s = 0; s < an.num_site_sets; ++s)
    if (an.site_input[size_t(s)] >= 0) c.site_rows[size_t(s)] = per_sample * max_batch;
  for (const MapSlot& m : an.maps) {
    if (m.kind != MapKind::Strided) continue;
    int64_t ob = 0;
    int bound_node = -1;
    for (int n : m.nodes)
      if (g.nodes[size_t(n)].conv.output_bound > ob) ob = g.nodes[size_t(n)].conv.output_bound, bound_node = n;
    SCN_CHECK(ob <= kMaxSiteRows / max_batch, g.source, ": node '", g.nodes[size_t(bound_node)].name,
              "': output_bound ", ob, " x max_batch ", max_batch, " is above the ", kMaxSiteRows,
              " rows a site set can hold");
    const int64_t in_cap = c.site_rows[size_t(m.in_sites)];
    const int64_t stated = ob > 0 ? ob * max_batch : std::max(in_cap, fallback * max_batch);
    // every input site reaching all its output sites, and no more rows than a set can index: a frame beyond the
    // plan is the forward's overflow error (or a grown plan), as for any capacity
    const int64_t r = reach(m);
    const int64_t reachable = in_cap > kMaxSiteRows / r ? kMaxSiteRows : in_cap * r;
    c.site_rows[size_t(m.out_sites)] = std::min({stated, reachable, kMaxSiteRows});
  }
  return c;
}

int64_t fitted_capacity(int64_t count, double margin) {
  return std::max(kMinFittedCapacity, int64_t(std::ceil(double(std::max<int64_t>(count, 0)) * margin)));
}

std::vector<int64_t> first_frame_capacities(const GraphAnalysis& an, const std::vector<int64_t>& bounds,
                                            const std::vector<int64_t>& input_rows, double margin) {
  std::vector<int64_t> c = bounds;
  for (int s = 0; s < an.num_site_sets; ++s) {
    const int k = an.site_input[size_t(s)];
    if (k >= 0 && size_t(k) < input_rows.size() && input_rows[size_t(k)] >= 0)
      c[size_t(s)] = fitted_capacity(input_rows[size_t(k)], margin);
  }
  // maps are in graph order: a strided slot's input set is final before its output set is guessed
  for (const MapSlot& m : an.maps)
    if (m.kind == MapKind::Strided)
      c[size_t(m.out_sites)] = std::min(bounds[size_t(m.out_sites)], c[size_t(m.in_sites)]);
  return c;
}

std::vector<int64_t> grow_capacities(const std::vector<int64_t>& current, const std::vector<int64_t>& needed,
                                     double margin) {
  std::vector<int64_t> c = current;
  for (size_t s = 0; s < c.size() && s < needed.size(); ++s)
    if (needed[s] > c[s]) c[s] = std::max(c[s] + 1, fitted_capacity(needed[s], margin));
  return c;
}

std::vector<int64_t> fit_capacities(const std::vector<int64_t>& counts, double margin) {
  std::vector<int64_t> c(counts.size());
  for (size_t s = 0; s < counts.size(); ++s) c[s] = fitted_capacity(counts[s], margin);
  return c;
}

}  // namespace scn
