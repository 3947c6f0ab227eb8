// What every launcher asks of the device image: whether the current GPU runs the backend's kernels from
// code compiled for sm_90 or newer, i.e. with the griddepcontrol instructions programmatic launches need.
#include "backends/cuda/common.cuh"
#include "backends/cuda/per_device.h"

namespace scn::cuda {

namespace {

// Compiled like every kernel of the backend (one architecture list for every .cu file; the sm_90a
// wgmma object runs only on compute capability 9.0, where this image is sm_90 code too).
__global__ void image_probe_kernel() {}

}  // namespace

bool pdl_image() {
  static PerDevice<bool> has;
  return has.get_or_make(current_cuda_device(), [] {
    cudaFuncAttributes fa{};
    SCN_CUDA_CHECK(cudaFuncGetAttributes(&fa, reinterpret_cast<const void*>(image_probe_kernel)));
    // the virtual architecture the code was compiled for (__CUDA_ARCH__), also when the driver JIT-compiles it
    return fa.ptxVersion >= 90;
  });
}

}  // namespace scn::cuda
