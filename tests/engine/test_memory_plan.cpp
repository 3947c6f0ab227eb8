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

// The CUDA backend's requests for CenterPoint on the real frame (SCN_CUDA_PLAN_TRACE, bytes and
// step ranges): the size-first greedy order alone needs a 130 MB arena for 113.8 MB alive at the
// peak; the planner must reach the live-bytes lower bound here.
TEST(MemoryPlan, ReachesTheLiveBoundOnCenterPoint) {
  const std::vector<scn::BufferRequest> req = {
      {3200000, 0, 10}, {10627000, 0, 10}, {2657000, 0, 10}, {5000, 0, 10}, {800000, 0, 10}, {3200000, 0, 19},
      {1361000, 0, 19}, {340000, 0, 19}, {1000, 0, 19}, {3200000, 10, 28}, {178000, 10, 28}, {45000, 10, 28},
      {0, 10, 28}, {2592000, 19, 37}, {20000, 19, 37}, {5000, 19, 37}, {0, 19, 37}, {1037000, 28, 38},
      {8000, 28, 38}, {2000, 28, 38}, {0, 28, 38}, {21600000, 0, 7}, {21600000, 0, 10}, {21600000, 1, 16},
      {21600000, 10, 19}, {21600000, 11, 25}, {17496000, 19, 28}, {17496000, 20, 34}, {778000, 28, 37},
      {6400000, 0, 1}, {6400000, 1, 10}, {6400000, 2, 3}, {6400000, 6, 7}, {12800000, 10, 19},
      {12800000, 11, 12}, {12800000, 15, 16}, {25600000, 19, 28}, {25600000, 20, 21}, {25600000, 24, 25},
      {41472000, 28, 37}, {41472000, 29, 30}, {41472000, 33, 34}, {16589000, 37, 38}, {16589000, 38, 40}};
  const scn::MemoryPlan p = scn::plan_memory(req);
  const size_t bound = scn::peak_live_bytes(req);
  EXPECT_GE(p.total, bound);
  EXPECT_EQ(p.total, bound) << "arena " << p.total << " vs live peak " << bound;
  for (size_t i = 0; i < req.size(); ++i)
    for (size_t k = i + 1; k < req.size(); ++k) {
      const bool live_together = !(req[i].last < req[k].first || req[k].last < req[i].first);
      const bool overlap = p.offsets[i] < p.offsets[k] + req[k].bytes && p.offsets[k] < p.offsets[i] + req[i].bytes;
      EXPECT_FALSE(live_together && overlap) << "buffers " << i << " and " << k;
    }
}

TEST(MemoryPlan, PeakLiveBytes) {
  const std::vector<scn::BufferRequest> req = {{1000, 0, 1}, {2000, 1, 2}, {4000, 3, 3}};
  EXPECT_EQ(scn::peak_live_bytes(req, 256), size_t(1024 + 2048 > 4096 ? 1024 + 2048 : 4096));
  EXPECT_EQ(scn::peak_live_bytes({}, 256), 0u);
}
