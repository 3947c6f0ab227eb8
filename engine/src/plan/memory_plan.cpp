#include "plan/memory_plan.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>

namespace scn {

namespace {

using Order = std::function<bool(const BufferRequest&, const BufferRequest&)>;

/// One greedy pass: buffers in `order`, each at the lowest offset (best fit) where it overlaps no
/// placed buffer alive at the same time.
MemoryPlan place(const std::vector<BufferRequest>& req, const std::vector<size_t>& order, size_t alignment,
                 bool best_fit) {
  auto align = [&](size_t v) { return (v + alignment - 1) / alignment * alignment; };
  MemoryPlan plan;
  plan.offsets.assign(req.size(), 0);
  std::vector<size_t> placed;
  std::vector<std::pair<size_t, size_t>> busy;
  for (size_t i : order) {
    const size_t size = align(req[i].bytes);
    busy.clear();
    for (size_t j : placed)
      if (!(req[j].last < req[i].first || req[i].last < req[j].first))
        busy.emplace_back(plan.offsets[j], plan.offsets[j] + align(req[j].bytes));
    std::sort(busy.begin(), busy.end());
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, cursor = 0;
    for (const auto& b : busy) {
      if (b.first >= cursor + size && b.first - cursor < best_gap) {
        best = cursor;
        best_gap = b.first - cursor;
        if (!best_fit) break;  // first fit: the lowest gap that holds it
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

}  // namespace

size_t peak_live_bytes(const std::vector<BufferRequest>& req, size_t alignment) {
  std::vector<std::pair<int, int64_t>> events;  // (step, +bytes at first / -bytes after last)
  for (const auto& r : req) {
    const int64_t b = int64_t((r.bytes + alignment - 1) / alignment * alignment);
    events.emplace_back(r.first, b);
    events.emplace_back(r.last + 1, -b);
  }
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second < b.second;  // frees before allocations
  });
  int64_t live = 0, peak = 0;
  for (const auto& e : events) {
    live += e.second;
    peak = std::max(peak, live);
  }
  return size_t(peak);
}

MemoryPlan plan_memory(const std::vector<BufferRequest>& req, size_t alignment) {
  // Greedy placement depends on the order; a few classic orders (each deterministic, ties by
  // first use then index) are tried and the smallest arena is kept. Cheap: a graph has at most a
  // few hundred buffers and this runs once per plan.
  const std::vector<Order> orders = {
      [](const BufferRequest& a, const BufferRequest& b) { return a.bytes > b.bytes; },
      [](const BufferRequest& a, const BufferRequest& b) {
        return double(a.bytes) * (a.last - a.first + 1) > double(b.bytes) * (b.last - b.first + 1);
      },
      [](const BufferRequest& a, const BufferRequest& b) { return a.last - a.first > b.last - b.first; },
      [](const BufferRequest& a, const BufferRequest& b) { return a.first < b.first; },
  };
  MemoryPlan best;
  bool have = false;
  for (const Order& o : orders) {
    std::vector<size_t> order(req.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (o(req[a], req[b])) return true;
      if (o(req[b], req[a])) return false;
      return req[a].first != req[b].first ? req[a].first < req[b].first : req[a].bytes > req[b].bytes;
    });
    for (bool best_fit : {true, false}) {
      MemoryPlan p = place(req, order, alignment, best_fit);
      if (!have || p.total < best.total) {
        best = std::move(p);
        have = true;
      }
    }
  }
  // Then a short local search from the best order: swap two buffers, keep the swap when the arena
  // does not grow. A fixed seed keeps it deterministic; the budget shrinks with the square of the
  // buffer count so that big graphs still plan in milliseconds.
  if (req.size() > 2) {
    std::vector<size_t> order(req.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return best.offsets[a] < best.offsets[b]; });
    MemoryPlan cur = place(req, order, alignment, true);
    if (cur.total < best.total) best = cur;
    const size_t n = req.size();
    const size_t iters = std::min<size_t>(2000, size_t(4e6) / (n * n) + 1);
    uint64_t state = 0x9e3779b97f4a7c15ull;
    auto next = [&]() {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      return state;
    };
    for (size_t it = 0; it < iters; ++it) {
      const size_t a = size_t(next() % n), b = size_t(next() % n);
      if (a == b) continue;
      std::swap(order[a], order[b]);
      MemoryPlan p = place(req, order, alignment, true);
      if (p.total <= cur.total) {
        cur = std::move(p);
        if (cur.total < best.total) best = cur;
      } else {
        std::swap(order[a], order[b]);
      }
    }
  }
  if (!have) best.offsets.clear();
  return best;
}

}  // namespace scn
