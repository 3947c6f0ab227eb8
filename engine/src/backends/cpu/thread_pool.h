// Static-partition parallel loops for the CPU backend. Each index range is processed by exactly
// one thread and every output element by one iteration, so results do not depend on the
// thread count (the CPU backend is bitwise deterministic).
#pragma once

#include <cstdint>
#include <functional>

namespace scn::cpu {

/// Number of threads to use for `requested` (0 = hardware concurrency).
int resolve_threads(int requested);

/// Calls fn(begin, end) on `threads` contiguous chunks of [0, n) in parallel.
void parallel_for(int64_t n, int threads, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace scn::cpu
