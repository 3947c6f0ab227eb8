// A device allocation owned by a test of the CUDA backend's internal launchers (test_cuda_*.cpp that call kernels
// directly): freed on scope exit; `p` is null when cudaMalloc failed (tests assert it).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>

namespace scn::cudatest {

template <class T>
struct DeviceBuffer {
  T* p = nullptr;
  explicit DeviceBuffer(size_t n) {
    void* v = nullptr;
    if (cudaMalloc(&v, std::max<size_t>(n, 1) * sizeof(T)) == cudaSuccess) p = static_cast<T*>(v);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(p); }
};

}  // namespace scn::cudatest
