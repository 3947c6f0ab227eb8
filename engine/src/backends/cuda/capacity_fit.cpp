// Capacities that follow the frame (docs/cuda_backend.md "Memory and capacities"):
// CapacitySource::FirstFrame sizes every site set from the first bound frame's measured rows x
// capacity_margin, CapacityOverflow::Grow grows the sets a frame overflowed, re-plans the arena and
// re-runs the forward from the still-bound input. Both measure by running the forward on the
// engine's stream (no CUDA graph) and reading the device's overflow slots and row counts.
#include <algorithm>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_engine.h"
#include "plan/capacities.h"

namespace scn::cuda {

std::vector<int64_t> CudaEngine::capacities() const {
  std::vector<int64_t> c;
  for (const SiteInfo& si : sites_) c.push_back(si.cap_build);
  return c;
}

void CudaEngine::resize_input(int index, int64_t rows) {
  InputSlot& in = inputs_[size_t(index)];
  if (in.copy_pending) SCN_CUDA_CHECK(cudaEventSynchronize(in.copied));
  in.copy_pending = false;
  if (forwarded_) SCN_CUDA_CHECK(cudaEventSynchronize(done_event_));
  SCN_CUDA_CHECK(cudaStreamSynchronize(own_stream_));
  in.raw_feat.alloc(size_t(rows) * size_t(in.channels) * (in.raw_fp32 ? 4 : 2) + 16);
  in.raw_idx.alloc(size_t(rows) * 16 + 16);
  in.host_feat.alloc(size_t(rows) * size_t(in.channels) * 4 + 16);
  in.host_idx.alloc(size_t(rows) * 16 + 16);
  sites_[size_t(an().value_sites[size_t(graph_->inputs[size_t(index)])])].cap_build = rows;
  planned_ = false;  // the input set's rows size the arena's coordinates and permutation
  exec_valid_ = false;
}

void CudaEngine::set_capacities(const std::vector<int64_t>& caps) {
  bool changed = false;
  for (int s = 0; s < an().num_site_sets; ++s) {
    if (sites_[size_t(s)].cap_build == caps[size_t(s)]) continue;
    const int k = an().site_input[size_t(s)];
    // An input's staging is sized at set_input for host rows; device inputs, whose rows the forward reads (in
    // place, or staged from a device count) up to the capacity, are resized here.
    if (k >= 0 && !inputs_[size_t(k)].on_device) continue;
    if (k >= 0)
      resize_input(k, caps[size_t(s)]);
    else
      sites_[size_t(s)].cap_build = caps[size_t(s)];
    changed = true;
  }
  if (changed) planned_ = false;
  ensure_planned();
}

std::vector<int64_t> CudaEngine::overflow_rows(const std::vector<ErrSlot>& e, bool& other_errors) const {
  std::vector<int64_t> need(size_t(an().num_site_sets), 0);
  other_errors = false;
  for (size_t n = 0; n < g().nodes.size(); ++n)
    for (int k = 0; k < kNumErrKinds; ++k) {
      const ErrSlot& es = e[n * kNumErrKinds + size_t(k)];
      if (es.hits == 0) continue;
      const Node& node = g().nodes[n];
      int s = -1;
      if (k == kErrOverflow && node.op == OpType::Input && es.row == kCountRowBeyondCapacity)
        s = an().value_sites[size_t(node.output)];  // (a count past the bound buffers or negative: no growth fixes it)
      else if (k == kErrOverflow && node.op == OpType::SparseConv && an().node_map[n] >= 0)
        s = an().maps[size_t(an().node_map[n])].out_sites;
      if (s < 0) {
        other_errors = true;  // bad input, or an overflow no capacity fixes: reported by check_errors
        continue;
      }
      need[size_t(s)] = std::max<int64_t>(need[size_t(s)], es.v0);
    }
  return need;
}

bool CudaEngine::measure_forward(std::vector<int64_t>& need) {
  reset_errors();
  stage_inputs(own_stream_);
  enqueue(own_stream_, nullptr);
  SCN_CUDA_CHECK(cudaEventRecord(done_event_, own_stream_));
  forwarded_ = true;
  SCN_CUDA_CHECK(cudaEventSynchronize(done_event_));
  std::vector<ErrSlot> e(g().nodes.size() * kNumErrKinds);
  SCN_CUDA_CHECK(cudaMemcpy(e.data(), errors_.get(), e.size() * sizeof(ErrSlot), cudaMemcpyDeviceToHost));
  bool other = false;
  need = overflow_rows(e, other);
  return !other;
}

bool CudaEngine::grow_until_fits(std::vector<int64_t> need) {
  // A set that overflowed dropped sites, so the sets after it measured too few: each pass fixes at
  // least the first overflowing set, and a graph has num_site_sets of them.
  const double margin = options_.capacity_margin;
  for (int pass = 0;; ++pass) {
    bool any = false;
    for (size_t s = 0; s < need.size(); ++s) any = any || need[s] > sites_[s].cap_build;
    if (!any) return true;
    SCN_CHECK(pass <= an().num_site_sets, g().source, ": capacities still overflow after ", pass,
              " growth passes (an internal error: every pass grows the first overflowing site set)");
    set_capacities(grow_capacities(capacities(), need, margin));
    if (!measure_forward(need)) return false;  // a bad input: check_errors() reports it
  }
}

void CudaEngine::fit_to_first_frame() {
  fit_pending_ = false;
  const double margin = options_.capacity_margin;
  // The first guess: every level at its map input's rows (inputs already at the frame's rows x
  // margin where set_input saw them), never above the build bounds; the measuring forward grows
  // what overflowed, then every set is fitted to its measured rows x margin.
  set_capacities(first_frame_capacities(an(), capacities(), {}, margin));
  std::vector<int64_t> need;
  if (!measure_forward(need) || !grow_until_fits(need)) {
    fit_pending_ = true;  // a bad input (reported by check_errors): fit to the next frame instead
    return;
  }
  std::vector<int64_t> counts(size_t(an().num_site_sets), 0);
  std::vector<int> host(counts.size(), 0);
  SCN_CUDA_CHECK(cudaMemcpy(host.data(), counts_.get(), host.size() * sizeof(int), cudaMemcpyDeviceToHost));
  for (size_t s = 0; s < counts.size(); ++s) counts[s] = host[s];
  set_capacities(fit_capacities(counts, margin));
}

bool CudaEngine::grow_on_overflow(const std::vector<ErrSlot>& e) {
  if (options_.on_capacity_overflow != CapacityOverflow::Grow) return false;
  bool other = false;
  const std::vector<int64_t> need = overflow_rows(e, other);
  if (other) return false;
  SCN_CHECK(!caller_captured_, g().source,
            ": a frame overflowed the planned capacities and BuildOptions.on_capacity_overflow = Grow, but the "
            "forward was recorded into the caller's own CUDA graph, which holds the old arena addresses; bind the "
            "largest frame before capturing, or build with larger capacities");
  grow_until_fits(need);  // its last pass is the forward of the bound input, now without overflow
  return true;
}

}  // namespace scn::cuda
