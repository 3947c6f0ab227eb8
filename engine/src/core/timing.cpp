// summarize_timings (scn/timing.h).
#include "scn/timing.h"

#include <algorithm>
#include <cmath>

#include "scn/error.h"

namespace scn {

void check_timing_counts(const std::string& where, int warmup, int runs) {
  SCN_CHECK(warmup >= 0 && runs >= 1, where, ": warmup = ", warmup, ", runs = ", runs, " (warmup >= 0, runs >= 1)");
}

TimingStats summarize_timings(std::vector<double> v) {
  TimingStats s;
  s.count = int64_t(v.size());
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.p99 = v[std::min(n - 1, size_t(std::ceil(0.99 * double(n))) - 1)];
  s.min = v.front();
  s.max = v.back();
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / double(n);
  double sq = 0;
  for (double x : v) sq += (x - s.mean) * (x - s.mean);
  s.stddev = std::sqrt(sq / double(n));
  return s;
}

}  // namespace scn
