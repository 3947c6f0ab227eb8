// Summaries of repeated timings, such as the milliseconds Engine::time_forward returns: the one definition of
// median and percentile that the CLI, the INT8 timed search and the benchmarks report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace scn {

struct TimingStats {
  int64_t count = 0;
  double median = 0, p99 = 0, mean = 0, min = 0, max = 0, stddev = 0;
};

/// Median (the mean of the two middle values for an even count), 99th percentile (nearest rank), mean, min, max
/// and population standard deviation of `values`; every field is 0 when there are none.
TimingStats summarize_timings(std::vector<double> values);

/// The counts every timing call takes: warmup >= 0 and runs >= 1, else an scn::Error "<where>: warmup = W, runs =
/// R ..." (zero runs once returned no timings, which summarize to a median of 0).
void check_timing_counts(const std::string& where, int warmup, int runs);

}  // namespace scn
