// Implicit-GEMM tile instances (wg): warpgroups issuing wgmma (sm_90a), one per 64 rows of the tile,
// on 64/128 output channels, operands in the 128-byte swizzle ("wg"; three or more stages keep one
// step's MMAs in flight). Compiled for sm_90a alone
// (engine/src/backends/cuda/CMakeLists.txt); registered only on compute capability 9.0.
#include "backends/cuda/implicit_gemm.cuh"

namespace scn::cuda::igemm {

void add_instances_wg(std::vector<Instance>& v) {
  v.push_back(make_instance<64, 64, 64, 4, 1, 2, true, 1, 1, 1, kF16, true>("igemm m64n64k64s2twg"));
  v.push_back(make_instance<64, 64, 64, 4, 1, 3, true, 1, 1, 1, kF16, true>("igemm m64n64k64s3twg"));
  v.push_back(make_instance<64, 64, 64, 4, 1, 4, true, 1, 1, 1, kF16, true>("igemm m64n64k64s4twg"));
  v.push_back(make_instance<64, 64, 64, 4, 1, 2, true, 2, 1, 1, kF16, true>("igemm m64n64k64s2tg2wg"));
  v.push_back(make_instance<64, 128, 64, 4, 1, 2, true, 1, 1, 1, kF16, true>("igemm m64n128k64s2twg"));
  v.push_back(make_instance<64, 128, 64, 4, 1, 3, true, 1, 1, 1, kF16, true>("igemm m64n128k64s3twg"));
  v.push_back(make_instance<64, 128, 64, 4, 1, 4, true, 1, 1, 1, kF16, true>("igemm m64n128k64s4twg"));
  // several warpgroups sharing each weight slice: fewer weight bytes from L2 per row
  v.push_back(make_instance<128, 64, 64, 8, 1, 2, true, 1, 1, 1, kF16, true>("igemm m128n64k64s2tw8wg"));
  v.push_back(make_instance<128, 64, 64, 8, 1, 3, true, 1, 1, 1, kF16, true>("igemm m128n64k64s3tw8wg"));
  v.push_back(make_instance<128, 64, 64, 8, 1, 4, true, 1, 1, 1, kF16, true>("igemm m128n64k64s4tw8wg"));
  v.push_back(make_instance<128, 128, 64, 8, 1, 3, true, 1, 1, 1, kF16, true>("igemm m128n128k64s3tw8wg"));
  v.push_back(make_instance<128, 128, 64, 8, 1, 4, true, 1, 1, 1, kF16, true>("igemm m128n128k64s4tw8wg"));
  // split over kernel offsets in a cluster of two (SCN_CUDA_SPLIT=2): large row tiles on every SM
  v.push_back(make_instance<128, 128, 64, 8, 1, 2, true, 1, 1, 2, kF16, true>("igemm m128n128k64s2tw8x2wg"));
  v.push_back(make_instance<128, 128, 64, 8, 1, 3, true, 1, 1, 2, kF16, true>("igemm m128n128k64s3tw8x2wg"));
  v.push_back(make_instance<64, 128, 64, 4, 1, 2, true, 1, 1, 2, kF16, true>("igemm m64n128k64s2tx2wg"));
  v.push_back(make_instance<128, 64, 64, 8, 1, 2, true, 1, 1, 2, kF16, true>("igemm m128n64k64s2tw8x2wg"));
  v.push_back(make_instance<128, 64, 64, 8, 1, 3, true, 1, 1, 2, kF16, true>("igemm m128n64k64s3tw8x2wg"));
  v.push_back(make_instance<256, 64, 64, 16, 1, 2, true, 1, 1, 1, kF16, true>("igemm m256n64k64s2tw16wg"));
  v.push_back(make_instance<256, 64, 64, 16, 1, 3, true, 1, 1, 1, kF16, true>("igemm m256n64k64s3tw16wg"));
}

}  // namespace scn::cuda::igemm
