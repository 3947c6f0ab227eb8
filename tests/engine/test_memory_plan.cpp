// The liveness planner never lets two buffers that are alive at once share bytes, and reuses memory.
#include <gtest/gtest.h>

#include <random>

#include "plan/memory_plan.h"

TEST(MemoryPlan, LiveBuffersNeverOverlapAndMemoryIsReused) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<scn::BufferRequest> req;
    size_t sum = 0;
    for (int i = 0; i < 30; ++i) {
      scn::BufferRequest r;
      r.bytes = 1 + rng() % 5000;
      r.first = int(rng() % 40);
      r.last = r.first + int(rng() % 6);
      sum += (r.bytes + 255) / 256 * 256;
      req.push_back(r);
    }
    const scn::MemoryPlan p = scn::plan_memory(req);
    ASSERT_EQ(p.offsets.size(), req.size());
    for (size_t i = 0; i < req.size(); ++i) {
      EXPECT_EQ(p.offsets[i] % 256, 0u);
      EXPECT_LE(p.offsets[i] + req[i].bytes, p.total);
      for (size_t j = i + 1; j < req.size(); ++j) {
        const bool live_together = !(req[i].last < req[j].first || req[j].last < req[i].first);
        const bool overlap = p.offsets[i] < p.offsets[j] + req[j].bytes && p.offsets[j] < p.offsets[i] + req[i].bytes;
        EXPECT_FALSE(live_together && overlap) << "buffers " << i << " and " << j;
      }
    }
    EXPECT_LT(p.total, sum);  // short lifetimes must share memory
  }
}
