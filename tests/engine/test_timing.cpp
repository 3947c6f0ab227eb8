// summarize_timings (scn/timing.h): the statistics every timing report shares.
#include <gtest/gtest.h>

#include <vector>

#include "scn/timing.h"

namespace {

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
