// Host-side CUDA error checks of the CUDA backend (usable from .cpp and .cu files).
#pragma once

#include <cuda_runtime_api.h>

#include "scn/error.h"

#define SCN_CUDA_CHECK(expr)                                                                  \
  do {                                                                                        \
    const cudaError_t scn_e_ = (expr);                                                        \
    if (scn_e_ != cudaSuccess)                                                                \
      throw ::scn::Error(::scn::detail::concat("CUDA error in ", #expr, ": ",                 \
                                               cudaGetErrorString(scn_e_), " (", __FILE__, \
                                               ":", __LINE__, ")"));                          \
  } while (0)

/// After a launch: a bad configuration is reported at once (no synchronisation).
#define SCN_CUDA_LAUNCHED() SCN_CUDA_CHECK(cudaGetLastError())

namespace scn::cuda {

/// Makes `device` the current CUDA device for a scope and gives the calling thread its own current device back at
/// the end: the engine's and the voxelizer's calls run on their GPU without changing the caller's (a process pinned to
/// another GPU, e.g. a PyTorch rank after torch.cuda.set_device, keeps allocating there).
class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    SCN_CUDA_CHECK(cudaGetDevice(&caller_));
    if (caller_ != device) {
      SCN_CUDA_CHECK(cudaSetDevice(device));
      switched_ = true;
    }
  }
  ~ScopedDevice() {
    if (switched_) cudaSetDevice(caller_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int caller_ = 0;
  bool switched_ = false;
};

/// The same for a destructor, whose members free their device memory after its body: declared as the class's first
/// data member (destroyed last), armed in the destructor's body.
class CallerDeviceOnDestruction {
 public:
  CallerDeviceOnDestruction() = default;
  CallerDeviceOnDestruction(const CallerDeviceOnDestruction&) = delete;
  CallerDeviceOnDestruction& operator=(const CallerDeviceOnDestruction&) = delete;
  /// Makes `device` current until this member is destroyed.
  void arm(int device) {
    if (cudaGetDevice(&caller_) != cudaSuccess) return;
    switched_ = caller_ != device && cudaSetDevice(device) == cudaSuccess;
  }
  ~CallerDeviceOnDestruction() {
    if (switched_) cudaSetDevice(caller_);
  }

 private:
  int caller_ = 0;
  bool switched_ = false;
};

}  // namespace scn::cuda
