// PerDevice (backends/cuda/per_device.h): the kernels' launch limits as one table per CUDA device,
// made once and then read without a lock. Host logic only: runs without a GPU.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "backends/cuda/per_device.h"
#include "scn/error.h"

namespace scn::cuda {
namespace {

TEST(CudaPerDevice, OneTablePerDeviceMadeOnce) {
  PerDevice<std::vector<int>> t;
  int made = 0;
  const std::vector<int>& a = t.get_or_make(0, [&] {
    ++made;
    return std::vector<int>{10};
  });
  const std::vector<int>& again = t.get_or_make(0, [&] {
    ++made;
    return std::vector<int>{20};
  });
  const std::vector<int>& other = t.get_or_make(3, [&] {
    ++made;
    return std::vector<int>{30};
  });
  EXPECT_EQ(made, 2) << "a device's table is made on its first use only";
  EXPECT_EQ(&a, &again);
  EXPECT_NE(&a, &other) << "each device has its own table";
  EXPECT_EQ(a.at(0), 10);
  EXPECT_EQ(other.at(0), 30);
  EXPECT_EQ(&t.get(3, "x_init"), &other);
}

TEST(CudaPerDevice, MissingTableAndBadDeviceAreClearErrors) {
  PerDevice<int> t;
  try {
    t.get(1, "igemm_init");
    FAIL() << "a device without a table must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("igemm_init() was not called for CUDA device 1"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(t.get_or_make(PerDevice<int>::kMaxDevices, [] { return 0; }), Error);
  EXPECT_THROW(t.get(-1, "igemm_init"), Error);
}

TEST(CudaPerDevice, ConcurrentFirstUseMakesOneTable) {
  PerDevice<int> t;
  std::atomic<int> made{0};
  std::vector<const int*> seen(16, nullptr);
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i)
    threads.emplace_back([&, i] {
      seen[size_t(i)] = &t.get_or_make(2, [&] {
        made.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // others arrive while it is made
        return 7;
      });
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(made.load(), 1);
  for (const int* p : seen) {
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p, seen[0]);
    EXPECT_EQ(*p, 7);
  }
}

}  // namespace
}  // namespace scn::cuda
