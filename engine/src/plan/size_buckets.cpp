#include "plan/size_buckets.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "scn/error.h"

namespace scn {

namespace {

constexpr int64_t kOpen = std::numeric_limits<int64_t>::max();

std::string rows_label(int64_t lo, int64_t hi) {
  if (hi == kOpen) return "rows " + std::to_string(lo) + "-";
  return "rows " + std::to_string(lo) + "-" + std::to_string(hi - 1);
}

}  // namespace

SizeBucket size_bucket(int64_t rows, int64_t base, double factor) {
  SCN_CHECK(rows >= 0, "size_bucket: negative row count ", rows);
  SCN_CHECK(factor == 0.0 || (factor >= 1.1 && factor <= 16.0), "BuildOptions.cuda.tune_bucket_factor = ", factor,
            " is neither 0 (one bucket) nor in [1.1, 16]");
  SCN_CHECK(base >= 1, "BuildOptions.cuda.tune_bucket_base must be >= 1, got ", base);
  SizeBucket b;
  if (factor == 0.0) {
    b.hi = kOpen;
    b.label = "rows all";
    return b;
  }
  int64_t lo = 0, hi = base;
  int k = 0;
  // At most ~440 steps (factor 1.1 from base 1 to INT64_MAX): the ladder is walked, not logged, so
  // the edges are exact integers whatever the rounding of pow().
  while (rows >= hi && hi != kOpen) {
    lo = hi;
    const double next = std::round(double(hi) * factor);
    hi = next >= 9.0e18 ? kOpen : std::max(hi + 1, int64_t(next));
    ++k;
  }
  b.index = k;
  b.lo = lo;
  b.hi = hi;
  b.label = rows_label(lo, hi);
  return b;
}

SizeBucket device_count_bucket() {
  SizeBucket b;
  b.index = -1;
  b.hi = kOpen;
  b.label = "device count";
  return b;
}

std::string size_ladder(int64_t base, double factor) {
  if (factor == 0.0) return "one bucket";
  // to_chars, not printf's %g: the label is a tuning cache key, and %g writes LC_NUMERIC's decimal point (a host
  // application under de_DE would write "1,5" and re-tune against a cache that says "1.5")
  char num[32];
  const std::to_chars_result r = std::to_chars(num, num + sizeof(num), factor, std::chars_format::general, 6);
  return "base " + std::to_string(base) + " factor " + std::string(num, r.ptr);
}

}  // namespace scn
