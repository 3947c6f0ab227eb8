#include "backends/cpu/thread_pool.h"

#include <algorithm>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

#include "scn/error.h"

namespace scn::cpu {

int resolve_threads(int requested) {
  if (requested > 0) return requested;
  const unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : int(hc);
}

void parallel_for(int64_t n, int threads, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  // Small loops are not worth a thread start (~20 us).
  const int64_t t = std::min<int64_t>(threads, std::max<int64_t>(1, n / 256));
  if (t <= 1) {
    fn(0, n);
    return;
  }
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(t));
  const int64_t chunk = (n + t - 1) / t;
  std::string not_started;
  for (int64_t k = 1; k < t; ++k) {
    const int64_t b = k * chunk, e = std::min(n, b + chunk);
    if (b >= e) break;
    try {
      pool.emplace_back([&, k, b, e] {
        try {
          fn(b, e);
        } catch (...) {
          errors[size_t(k)] = std::current_exception();
        }
      });
    } catch (const std::system_error& err) {
      // the threads already started are joined first: a joinable std::thread destroyed by the unwinding would
      // terminate the process
      not_started = err.what();
      break;
    }
  }
  if (!not_started.empty()) {
    for (auto& th : pool) th.join();
    SCN_FAIL("CPU backend: could not start worker thread ", pool.size() + 1, " of ", t, " (", not_started,
             "); lower BuildOptions.num_threads");
  }
  try {
    fn(0, std::min(n, chunk));
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (auto& th : pool) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace scn::cpu
