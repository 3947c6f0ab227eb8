// Owned CUDA streams and events (destroyed with their owner), and the CUDA-event timing of enqueued work that the
// engine's time_forward, the voxelizer's time_run and time_points_to_bev share.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "backends/cuda/cuda_check.h"

namespace scn::cuda {

/// A non-blocking CUDA stream on the current device.
struct OwnedStream {
  cudaStream_t s = nullptr;
  OwnedStream() { SCN_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~OwnedStream() { cudaStreamDestroy(s); }
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
};

/// A CUDA event on the current device; without timing unless asked (cheaper to record and wait on).
struct OwnedEvent {
  cudaEvent_t e = nullptr;
  explicit OwnedEvent(bool timing = false) {
    SCN_CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  ~OwnedEvent() { cudaEventDestroy(e); }
  OwnedEvent(const OwnedEvent&) = delete;
  OwnedEvent& operator=(const OwnedEvent&) = delete;
};

/// Milliseconds of each of `runs` calls of enqueue() (which enqueues work on s), measured by two events on s around
/// the call, waiting for the second before the next call.
template <typename Enqueue>
std::vector<double> time_enqueues(cudaStream_t s, int runs, const Enqueue& enqueue) {
  const OwnedEvent a(true), b(true);
  std::vector<double> ms;
  ms.reserve(size_t(runs > 0 ? runs : 0));
  for (int i = 0; i < runs; ++i) {
    SCN_CUDA_CHECK(cudaEventRecord(a.e, s));
    enqueue();
    SCN_CUDA_CHECK(cudaEventRecord(b.e, s));
    SCN_CUDA_CHECK(cudaEventSynchronize(b.e));
    float t = 0.f;
    SCN_CUDA_CHECK(cudaEventElapsedTime(&t, a.e, b.e));
    ms.push_back(double(t));
  }
  return ms;
}

}  // namespace scn::cuda
