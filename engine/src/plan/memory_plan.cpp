#include "plan/memory_plan.h"

#include <algorithm>
#include <cstdint>
#include <numeric>

namespace scn {

MemoryPlan plan_memory(const std::vector<BufferRequest>& req, size_t alignment) {
  auto align = [&](size_t v) { return (v + alignment - 1) / alignment * alignment; };
  MemoryPlan plan;
  plan.offsets.assign(req.size(), 0);
  std::vector<size_t> order(req.size());
  std::iota(order.begin(), order.end(), size_t(0));
  // Largest first; ties by first use, so the plan is deterministic.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return req[a].bytes != req[b].bytes ? req[a].bytes > req[b].bytes : req[a].first < req[b].first;
  });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const size_t size = align(req[i].bytes);
    // Intervals of already placed buffers that are alive at the same time, sorted by offset.
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t j : placed)
      if (!(req[j].last < req[i].first || req[i].last < req[j].first))
        busy.emplace_back(plan.offsets[j], plan.offsets[j] + align(req[j].bytes));
    std::sort(busy.begin(), busy.end());
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, cursor = 0;
    for (const auto& b : busy) {
      if (b.first >= cursor + size && b.first - cursor < best_gap) {
        best = cursor;
        best_gap = b.first - cursor;
      }
      cursor = std::max(cursor, b.second);
    }
    if (best == SIZE_MAX) best = cursor;  // after everything alive
    plan.offsets[i] = best;
    plan.total = std::max(plan.total, best + size);
    placed.push_back(i);
  }
  return plan;
}

}  // namespace scn
