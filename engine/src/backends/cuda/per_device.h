// A table computed once per CUDA device and immutable afterwards. The kernels' launch limits (blocks per
// SM, resident clusters) and whether the image has programmatic launches differ between the GPUs of one
// process, and engines on other threads launch from them while a new engine prepares its device: so each
// device gets its own table, written once under a lock and then only read (lock-free).
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>

#include "backends/cuda/cuda_check.h"

namespace scn::cuda {

/// The calling thread's current CUDA device.
inline int current_cuda_device() {
  int d = 0;
  SCN_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

template <class T>
class PerDevice {
 public:
  static constexpr int kMaxDevices = 64;

  /// Device `d`'s table, built by `make()` on the first call for that device.
  template <class Make>
  const T& get_or_make(int d, Make make) {
    check(d);
    if (const T* t = slots_[size_t(d)].load(std::memory_order_acquire)) return *t;
    std::lock_guard<std::mutex> lock(mu_);
    if (!owned_[size_t(d)]) {
      owned_[size_t(d)] = std::make_unique<T>(make());
      slots_[size_t(d)].store(owned_[size_t(d)].get(), std::memory_order_release);
    }
    return *owned_[size_t(d)];
  }

  /// Device `d`'s table; `what` names the preparation call in the error when there is none.
  const T& get(int d, const char* what) const {
    check(d);
    const T* t = slots_[size_t(d)].load(std::memory_order_acquire);
    SCN_CHECK(t != nullptr, what, "() was not called for CUDA device ", d);
    return *t;
  }

 private:
  static void check(int d) {
    SCN_CHECK(d >= 0 && d < kMaxDevices, "CUDA device ", d, ": the CUDA backend supports devices 0..", kMaxDevices - 1);
  }

  std::array<std::atomic<const T*>, kMaxDevices> slots_{};
  std::array<std::unique_ptr<T>, kMaxDevices> owned_{};
  std::mutex mu_;
};

}  // namespace scn::cuda
