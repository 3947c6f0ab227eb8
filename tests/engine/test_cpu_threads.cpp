// The CPU backend's worker threads (backends/cpu/thread_pool.h): a thread that cannot start is an scn::Error after
// the threads already started are joined (a joinable std::thread destroyed by the unwinding aborted the process:
// "terminate called without an active exception", seen with a large num_threads under a container's memory limit).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "backends/cpu/thread_pool.h"
#include "common/sanitizers.h"
#include "scn/error.h"

namespace {

/// In a child process: the address space capped ~256 MiB above what the process maps, so that thousands of worker
/// threads (8 MiB stacks) cannot all start; exits 0 when parallel_for raises scn::Error.
[[noreturn]] void start_more_threads_than_fit() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0;
  statm >> pages;
  const rlim_t cap = rlim_t(pages) * 4096 + (rlim_t(256) << 20);
  const rlimit r{cap, cap};
  if (setrlimit(RLIMIT_AS, &r) != 0) std::exit(3);
  try {
    scn::cpu::parallel_for(int64_t(1) << 22, 2000, [](int64_t, int64_t) {});
    std::fprintf(stderr, "no error\n");
    std::exit(1);
  } catch (const scn::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::exit(0);
  }
}

TEST(CpuThreads, AThreadThatCannotStartIsAnError) {
#ifdef SCN_UNDER_ASAN
  GTEST_SKIP() << "AddressSanitizer reserves more address space than the cap this test sets";
#else
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_EXIT(start_more_threads_than_fit(), ::testing::ExitedWithCode(0),
              "CPU backend: could not start worker thread [0-9]+ of 2000 .*lower BuildOptions.num_threads");
#endif
}

TEST(CpuThreads, EveryChunkRunsOnce) {
  std::vector<int> hits(100000, 0);
  scn::cpu::parallel_for(int64_t(hits.size()), 7, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) ++hits[size_t(i)];
  });
  for (int h : hits) ASSERT_EQ(h, 1);
}

}  // namespace
