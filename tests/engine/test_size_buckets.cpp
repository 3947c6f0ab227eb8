// The autotuner's size buckets (plan/size_buckets.h): the geometric ladder's edges, which bucket a
// count falls in, the one-bucket ladder, the device-count bucket and the checks of the options.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "common/comma_locale.h"
#include "core/options.h"
#include "plan/size_buckets.h"

namespace scn {
namespace {

TEST(SizeBuckets, TheDefaultLadderSplitsTheSweepRange) {
  const CudaOptions d;
  // base 8192, factor 1.5: edges 8192, 12288, 18432, 27648, 41472, 62208, 93312, 139968, 209952, 314928
  const SizeBucket a = size_bucket(100, d.tune_bucket_base, d.tune_bucket_factor);
  EXPECT_EQ(a.index, 0);
  EXPECT_EQ(a.lo, 0);
  EXPECT_EQ(a.hi, 8192);
  EXPECT_EQ(a.label, "rows 0-8191");
  const SizeBucket b = size_bucket(10000, d.tune_bucket_base, d.tune_bucket_factor);
  EXPECT_EQ(b.index, 1);
  EXPECT_EQ(b.lo, 8192);
  EXPECT_EQ(b.hi, 12288);
  EXPECT_EQ(b.label, "rows 8192-12287");
  const SizeBucket c = size_bucket(80000, d.tune_bucket_base, d.tune_bucket_factor);
  EXPECT_EQ(c.lo, 62208);
  EXPECT_EQ(c.hi, 93312);
  EXPECT_EQ(size_bucket(300000, d.tune_bucket_base, d.tune_bucket_factor).hi, 314928);
  // the sweep's points from 10k to 300k: each inside its bucket, whose edges differ by the factor
  int buckets = 0, last = -1;
  for (int64_t n : {10000, 20000, 40000, 60000, 80000, 100000, 120000, 160000, 200000, 300000}) {
    const SizeBucket s = size_bucket(n, d.tune_bucket_base, d.tune_bucket_factor);
    EXPECT_GE(n, s.lo);
    EXPECT_LT(n, s.hi);
    EXPECT_EQ(s.hi, int64_t(s.lo * 1.5 + 0.5)) << n;
    if (s.index != last) ++buckets;
    last = s.index;
  }
  EXPECT_EQ(buckets, 8);  // 100k and 120k share [93312, 139968), 160k and 200k [139968, 209952)
}

TEST(SizeBuckets, EdgesAreExactAndEveryCountHasOneBucket) {
  // walking every count from 0 to 5000 on a fine ladder: buckets are contiguous, in order, each
  // count inside its own
  SizeBucket prev = size_bucket(0, 10, 1.1);
  EXPECT_EQ(prev.lo, 0);
  for (int64_t n = 1; n <= 5000; ++n) {
    const SizeBucket s = size_bucket(n, 10, 1.1);
    ASSERT_GE(n, s.lo);
    ASSERT_LT(n, s.hi);
    if (s.index != prev.index) {
      ASSERT_EQ(s.index, prev.index + 1) << n;
      ASSERT_EQ(s.lo, prev.hi) << n;
      ASSERT_NE(s.label, prev.label);
    } else {
      ASSERT_EQ(s.label, prev.label);
    }
    prev = s;
  }
  // a factor whose rounding would not move a small edge still moves it by one
  EXPECT_EQ(size_bucket(1, 1, 1.1).lo, 1);
  EXPECT_EQ(size_bucket(1, 1, 1.1).hi, 2);
  // the largest counts end in an open bucket, never a loop or an overflow
  const SizeBucket top = size_bucket(std::numeric_limits<int64_t>::max(), 8192, 16.0);
  EXPECT_EQ(top.hi, std::numeric_limits<int64_t>::max());
  EXPECT_LE(top.lo, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(top.label, "rows " + std::to_string(top.lo) + "-");
}

TEST(SizeBuckets, FactorZeroIsOneBucketAndDeviceCountsHaveTheirOwn) {
  const SizeBucket a = size_bucket(10, 8192, 0.0), b = size_bucket(5000000, 8192, 0.0);
  EXPECT_EQ(a.label, "rows all");
  EXPECT_EQ(a.label, b.label);
  EXPECT_EQ(a.index, b.index);
  const SizeBucket d = device_count_bucket();
  EXPECT_EQ(d.index, -1);
  EXPECT_EQ(d.label, "device count");
  EXPECT_EQ(size_ladder(8192, 1.5), "base 8192 factor 1.5");
  EXPECT_EQ(size_ladder(8192, 0.0), "one bucket");
}

// The ladder's label is a tuning cache key: the same text whatever the process's locale (printf's %g wrote "1,5"
// under de_DE, so a host application re-tuned against a cache the CLI had written).
TEST(SizeBuckets, TheLadderLabelIgnoresTheLocale) {
  const test::CommaLocale comma;
  if (!comma.active()) GTEST_SKIP() << "no comma locale here (none installed, localedef failed)";
  EXPECT_EQ(size_ladder(8192, 1.5), "base 8192 factor 1.5");
  EXPECT_EQ(size_ladder(20000, 1.25), "base 20000 factor 1.25");
  EXPECT_EQ(size_ladder(8192, 2.0), "base 8192 factor 2");
}

TEST(SizeBuckets, BadLaddersAreErrorsNamingTheOption) {
  for (double f : {0.5, 1.0, 1.05, 17.0, -1.0}) {
    BuildOptions o;
    o.cuda.tune_bucket_factor = f;
    try {
      validate(o);
      ADD_FAILURE() << "accepted tune_bucket_factor " << f;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("BuildOptions.cuda.tune_bucket_factor"), std::string::npos) << e.what();
    }
    EXPECT_THROW(size_bucket(100, 8192, f), Error);
  }
  BuildOptions o;
  o.cuda.tune_bucket_base = 0;
  EXPECT_THROW(validate(o), Error);
  EXPECT_THROW(size_bucket(100, 0, 1.5), Error);
  EXPECT_THROW(size_bucket(-1, 8192, 1.5), Error);
  o = {};
  o.cuda.tune_bucket_factor = 0.0;  // one bucket
  EXPECT_NO_THROW(validate(o));
}

}  // namespace
}  // namespace scn
