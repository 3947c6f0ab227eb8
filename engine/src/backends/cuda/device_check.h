// Whether this build of the CUDA backend can run on the current device: a GPU below compute
// capability 8.0 (mma.sync m16n8k16) or without a compiled image for its architecture is refused
// when an engine is built, not at the first launch.
#pragma once

#include <cuda_runtime_api.h>

namespace scn::cuda {

/// cudaFuncGetAttributes on one implicit-GEMM kernel of the current device: cudaSuccess when an
/// image (SASS or PTX the driver can compile) exists for it, else the runtime's error
/// (cudaErrorNoKernelImageForDevice, cudaErrorInvalidDeviceFunction).
cudaError_t probe_kernel_image();

}  // namespace scn::cuda
