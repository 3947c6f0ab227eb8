// summarize_timings (scn/timing.h): the statistics every timing report shares.
#include <gtest/gtest.h>

#include <vector>

#include "engine/centerpoint_graph.h"
#include "engine/test_helpers.h"
#include "scn/error.h"
#include "scn/timing.h"

namespace {

// Zero runs once returned no timings (a median of 0) from time_forward and the voxelizers' time_run
TEST(TimingStats, TimingCallsNeedARunAndNoNegativeWarmup) {
  EXPECT_NO_THROW(scn::check_timing_counts("x", 0, 1));
  for (auto [warmup, runs] : {std::pair<int, int>{0, 0}, {-1, 5}, {2, -3}}) {
    try {
      scn::check_timing_counts("model.onnx: time_forward", warmup, runs);
      ADD_FAILURE() << "no error for " << warmup << ", " << runs;
    } catch (const scn::Error& e) {
      EXPECT_NE(std::string(e.what()).find("model.onnx: time_forward: warmup = " + std::to_string(warmup) +
                                           ", runs = " + std::to_string(runs)),
                std::string::npos)
          << e.what();
    }
  }
  const scn::EngineBuilder b = scn::test::centerpoint_builder({41, 64, 64});
  auto e = b.build(scn::test::cpu_build_options(scn::Precision::Fp32));
  EXPECT_THROW(e->time_forward(0, 0), scn::Error);  // before any input: the count is checked first
}

TEST(TimingStats, EvenCountAveragesTheMiddlePair) {
  const scn::TimingStats s = scn::summarize_timings({4, 1, 3, 2});
  EXPECT_EQ(s.count, 4);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.p99, 4);
  EXPECT_DOUBLE_EQ(s.stddev, 1.118033988749895);  // population: sqrt(1.25)
}

TEST(TimingStats, OddCountTakesTheMiddleValue) {
  EXPECT_DOUBLE_EQ(scn::summarize_timings({7, 1, 5}).median, 5);
  EXPECT_DOUBLE_EQ(scn::summarize_timings({0.5}).median, 0.5);
}

TEST(TimingStats, P99IsTheNearestRank) {
  std::vector<double> many(200);
  for (int i = 0; i < 200; ++i) many[size_t(i)] = 199 - i;  // unsorted input
  const scn::TimingStats m = scn::summarize_timings(many);
  EXPECT_DOUBLE_EQ(m.p99, 197);  // ceil(0.99 * 200) = the 198th smallest value
  EXPECT_DOUBLE_EQ(m.median, 99.5);
  std::vector<double> hundred(100);
  for (int i = 0; i < 100; ++i) hundred[size_t(i)] = i;
  EXPECT_DOUBLE_EQ(scn::summarize_timings(hundred).p99, 98);  // ceil(99) = the 99th
}

TEST(TimingStats, NoValuesGiveZeros) {
  const scn::TimingStats s = scn::summarize_timings({});
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.median, 0);
  EXPECT_EQ(s.p99, 0);
  EXPECT_EQ(s.stddev, 0);
}

}  // namespace
