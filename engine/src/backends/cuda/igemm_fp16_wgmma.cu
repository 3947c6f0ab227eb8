// Implicit-GEMM tile instances: warpgroups issuing wgmma (sm_90a), one per 64 rows of the tile,
// on 64/128 output channels, operands in the 128-byte swizzle ("wg"; three or more stages keep one
// step's MMAs in flight). Compiled for sm_90a alone
// (engine/src/backends/cuda/CMakeLists.txt); registered only on compute capability 9.0.
#include "backends/cuda/implicit_gemm.cuh"

namespace scn::cuda::igemm {

void add_instances_fp16_wgmma(std::vector<Instance>& v) {
  v.push_back(make_instance<64, 64, 64, 4, 1, 2, true, 1, 1, 1, kF16, true>());
  v.push_back(make_instance<64, 64, 64, 4, 1, 3, true, 1, 1, 1, kF16, true>());
  v.push_back(make_instance<64, 64, 64, 4, 1, 4, true, 1, 1, 1, kF16, true>());
  v.push_back(make_instance<64, 64, 64, 4, 1, 2, true, 2, 1, 1, kF16, true>());
  v.push_back(make_instance<64, 128, 64, 4, 1, 2, true, 1, 1, 1, kF16, true>());
  v.push_back(make_instance<64, 128, 64, 4, 1, 3, true, 1, 1, 1, kF16, true>());
  v.push_back(make_instance<64, 128, 64, 4, 1, 4, true, 1, 1, 1, kF16, true>());
  // several warpgroups sharing each weight slice: fewer weight bytes from L2 per row
  v.push_back(make_instance<128, 64, 64, 8, 1, 2, true, 1, 1, 1, kF16, true>());
  v.push_back(make_instance<128, 64, 64, 8, 1, 3, true, 1, 1, 1, kF16, true>());
  v.push_back(make_instance<128, 64, 64, 8, 1, 4, true, 1, 1, 1, kF16, true>());
  v.push_back(make_instance<128, 128, 64, 8, 1, 3, true, 1, 1, 1, kF16, true>());
  v.push_back(make_instance<128, 128, 64, 8, 1, 4, true, 1, 1, 1, kF16, true>());
  // split over kernel offsets in a cluster of two (split class 2): large row tiles on every SM
  v.push_back(make_instance<128, 128, 64, 8, 1, 2, true, 1, 1, 2, kF16, true>());
  v.push_back(make_instance<128, 128, 64, 8, 1, 3, true, 1, 1, 2, kF16, true>());
  v.push_back(make_instance<64, 128, 64, 4, 1, 2, true, 1, 1, 2, kF16, true>());
  v.push_back(make_instance<128, 64, 64, 8, 1, 2, true, 1, 1, 2, kF16, true>());
  v.push_back(make_instance<128, 64, 64, 8, 1, 3, true, 1, 1, 2, kF16, true>());
  v.push_back(make_instance<256, 64, 64, 16, 1, 2, true, 1, 1, 1, kF16, true>());
  v.push_back(make_instance<256, 64, 64, 16, 1, 3, true, 1, 1, 1, kF16, true>());
}

}  // namespace scn::cuda::igemm
