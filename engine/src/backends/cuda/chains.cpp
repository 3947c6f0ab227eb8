// Which convs run as osplit chains (igemm_osplit_chain.cuh, docs/cuda_backend.md "osplit chains"): runs of
// consecutive steps that are fp16 3x3x3 submanifold convs of one kernel map in the same osplit class, with
// no step between them on the main stream, and whose buffers alias row for row or not at all. Planned with
// the arena (the aliasing is the arena's); launched by enqueue (schedule.cpp) in place of the run's steps.
#include <algorithm>
#include <cstdio>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_engine.h"
#include "backends/cuda/igemm_osplit_chain.h"
#include "core/options.h"

namespace scn::cuda {

void CudaEngine::plan_chains() {
  chains_.clear();
  if (!opt().osplit_chains) return;
  const GraphAnalysis& ana = an();
  const int inline_map = map_order_.empty() ? -1 : map_order_[0];
  // the conv of step i when it may join a chain, else nullptr
  auto chainable = [&](const Step& st) -> const ConvPlan* {
    if (st.kind != StepKind::Conv) return nullptr;
    const ConvPlan& c = convs_[size_t(fusion().conv_of_node[size_t(st.node)])];
    if (c.mode != 0 || c.osplit_class == 0 || c.osplit < 0 || c.K != 27 || c.cin_p != c.cout_p) return nullptr;
    // a generated site set (rows in bitmap order: a slab's neighbours lie within a few z-planes' rows);
    // an input's rows keep the caller's order, where a slab may read any row of the conv before
    if (ana.maps[size_t(c.slot)].kind != MapKind::Subm || !sites_[size_t(ana.maps[size_t(c.slot)].out_sites)].generated)
      return nullptr;
    return osplit_chain_for(c.cin_p, c.cout_p, c.osplit_class) >= 0 ? &c : nullptr;
  };
  // conv c may follow the run: its output overlaps no buffer an earlier conv of the run reads, unless it is
  // that buffer (same base: rows alias row for row, e.g. an in-place residual)
  auto aliases_rows = [&](const std::vector<int>& run, const ConvPlan& c) {
    const ConvArgs y = conv_args(c);
    const auto* y0 = static_cast<const uint8_t*>(y.y);
    const size_t bytes = size_t(y.cap_out) * size_t(y.cout_p) * 2;
    for (int k : run) {
      const ConvArgs a = conv_args(convs_[size_t(k)]);
      for (const void* p : {a.x, a.residual}) {
        const auto* x0 = static_cast<const uint8_t*>(p);
        if (!x0 || x0 == y0) continue;
        if (x0 < y0 + bytes && y0 < x0 + bytes) return false;
      }
    }
    return true;
  };
  std::vector<int> run;
  size_t run_first = 0, run_last = 0;
  auto close = [&]() {
    if (run.size() >= 2) {
      ChainPlan ch;
      ch.first = run_first;
      ch.last = run_last;
      ch.convs = run;
      const ConvPlan& c0 = convs_[size_t(run[0])];
      ch.cfg = osplit_chain_for(c0.cin_p, c0.cout_p, c0.osplit_class);
      const int64_t rows = osplit_chain_rows(ch.cfg);
      ch.max_slabs = (sites_[size_t(ana.maps[size_t(c0.slot)].out_sites)].cap + rows - 1) / rows;
      const size_t ints = 2 + size_t(run.size()) * size_t(ch.max_slabs);
      ch.sync.alloc(ints * sizeof(int));
      SCN_CUDA_CHECK(cudaMemset(ch.sync.get(), 0, ints * sizeof(int)));
      if (trace_plan()) {
        std::fprintf(stderr, "[plan] %s: %zu convs, nodes %d..%d; maps released inside:", osplit_chain_config(ch.cfg).name,
                     run.size(), steps_[run_first].node, steps_[run_last].node);
        for (size_t m = 0; m < release_node_.size(); ++m)
          if (release_node_[m] > steps_[run_first].node && release_node_[m] <= steps_[run_last].node)
            std::fprintf(stderr, " %zu@%d", m, release_node_[m]);
        std::fprintf(stderr, "\n");
      }
      chains_.push_back(std::move(ch));
    }
    run.clear();
  };
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& st = steps_[i];
    if (st.kind == StepKind::Map && st.slot != inline_map) continue;  // built on the map stream
    const ConvPlan* c = chainable(st);
    if (c && !run.empty()) {
      const ConvPlan& p = convs_[size_t(run.back())];
      if (c->slot == p.slot && c->cin_p == p.cin_p && c->osplit_class == p.osplit_class &&
          int(run.size()) < kMaxChainConvs && aliases_rows(run, *c)) {
        run.push_back(fusion().conv_of_node[size_t(st.node)]);
        run_last = i;
        continue;
      }
    }
    close();
    if (c) {
      run.push_back(fusion().conv_of_node[size_t(st.node)]);
      run_first = run_last = i;
    }
  }
  close();
}

const ChainPlan* CudaEngine::chain_at(size_t step) const {
  for (const ChainPlan& ch : chains_)
    if (ch.first == step) return &ch;
  return nullptr;
}

void CudaEngine::launch_chain(const ChainPlan& ch, cudaStream_t s, bool pdl) {
  ChainArgs a;
  a.count = int(ch.convs.size());
  for (int j = 0; j < a.count; ++j) a.conv[j] = conv_args(convs_[size_t(ch.convs[size_t(j)])]);
  a.max_slabs = ch.max_slabs;
  a.sync = ch.sync.get<int>();
  launch_osplit_chain(ch.cfg, a, sm_count_, s, pdl);
}

}  // namespace scn::cuda
