// Owned CUDA memory: device (cudaMalloc) or pinned host (cudaMallocHost), freed by the destructor.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "backends/cuda/cuda_check.h"

namespace scn::cuda {

template <bool Pinned>
class CudaMem {
 public:
  CudaMem() = default;
  CudaMem(const CudaMem&) = delete;
  CudaMem& operator=(const CudaMem&) = delete;
  CudaMem(CudaMem&& o) noexcept : p_(o.p_), bytes_(o.bytes_) {
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  CudaMem& operator=(CudaMem&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = o.p_;
      bytes_ = o.bytes_;
      o.p_ = nullptr;
      o.bytes_ = 0;
    }
    return *this;
  }
  ~CudaMem() { reset(); }
  void alloc(size_t bytes) {
    reset();
    if (bytes == 0) {
      if (!Pinned) return;
      bytes = 16;  // pinned staging is always addressable
    }
    if (Pinned)
      SCN_CUDA_CHECK(cudaMallocHost(&p_, bytes));
    else
      SCN_CUDA_CHECK(cudaMalloc(&p_, bytes));
    bytes_ = bytes;
  }
  void reset() {
    if (p_) {
      if (Pinned)
        cudaFreeHost(p_);
      else
        cudaFree(p_);
    }
    p_ = nullptr;
    bytes_ = 0;
  }
  template <typename T = void>
  T* get() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};
using DevMem = CudaMem<false>;
using PinnedMem = CudaMem<true>;

}  // namespace scn::cuda
