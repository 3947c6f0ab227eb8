// Implicit-GEMM wgmma tile instances of the INT8 engines (sm_90a), one warpgroup per 64 rows, TMA weights:
//  - int8 operands (mode kI8): wgmma m64nNk32 s8 -> s32. BK counts 16-bit units of two int8 channels:
//    k64 = 128 channels per chunk (rows in the 128-byte swizzle), k32 = 64 channels (the 64-byte swizzle).
//    Integer sums are exact, so every config, split or not, gives the int8 mma.sync tiles' bits;
//  - fp16 operands with the quantizing epilogue (mode kF16Q, fp16 layers storing int8 for int8 readers):
//    the fp16 wgmma tiles' MMAs, summed like the mode-1 mma.sync tiles (bitwise theirs).
// Compiled for sm_90a alone with the fp16 wgmma tiles (engine/src/backends/cuda/CMakeLists.txt);
// registered on compute capability 9.0.
#include "backends/cuda/implicit_gemm.cuh"

namespace scn::cuda::igemm {

void add_instances_int8_wgmma(std::vector<Instance>& v) {
  // 128 int8 channels in (one chunk per offset)
  v.push_back(make_instance<64, 128, 64, 4, 1, 2, true, 1, 1, 1, kI8, true>());
  v.push_back(make_instance<64, 128, 64, 4, 1, 3, true, 1, 1, 1, kI8, true>());
  v.push_back(make_instance<64, 128, 64, 4, 1, 4, true, 1, 1, 1, kI8, true>());
  v.push_back(make_instance<128, 128, 64, 8, 1, 2, true, 1, 1, 1, kI8, true>());
  v.push_back(make_instance<128, 128, 64, 8, 1, 3, true, 1, 1, 1, kI8, true>());
  v.push_back(make_instance<64, 64, 64, 4, 1, 3, true, 1, 1, 1, kI8, true>());
  v.push_back(make_instance<64, 64, 64, 4, 1, 4, true, 1, 1, 1, kI8, true>());
  v.push_back(make_instance<128, 64, 64, 8, 1, 3, true, 1, 1, 1, kI8, true>());
  // split over kernel offsets in a cluster of two: twice the CTAs for the few row tiles of the 128-channel
  // levels (int32 partial sums: the unsplit tiles' bits)
  v.push_back(make_instance<64, 128, 64, 4, 1, 2, true, 1, 1, 2, kI8, true>());
  v.push_back(make_instance<64, 128, 64, 4, 1, 3, true, 1, 1, 2, kI8, true>());
  v.push_back(make_instance<64, 128, 64, 4, 1, 4, true, 1, 1, 2, kI8, true>());
  v.push_back(make_instance<128, 128, 64, 8, 1, 2, true, 1, 1, 2, kI8, true>());
  v.push_back(make_instance<64, 128, 32, 4, 1, 3, true, 1, 1, 2, kI8, true>());
  v.push_back(make_instance<64, 128, 32, 4, 1, 4, true, 1, 1, 2, kI8, true>());
  // 64 int8 channels in (the 64-byte swizzle)
  v.push_back(make_instance<64, 64, 32, 4, 1, 3, true, 1, 1, 1, kI8, true>());
  v.push_back(make_instance<64, 64, 32, 4, 1, 4, true, 1, 1, 1, kI8, true>());
  v.push_back(make_instance<64, 64, 32, 4, 1, 6, true, 1, 1, 1, kI8, true>());
  v.push_back(make_instance<128, 64, 32, 8, 1, 3, true, 1, 1, 1, kI8, true>());
  v.push_back(make_instance<128, 64, 32, 8, 1, 4, true, 1, 1, 1, kI8, true>());
  v.push_back(make_instance<64, 128, 32, 4, 1, 3, true, 1, 1, 1, kI8, true>());
  v.push_back(make_instance<64, 128, 32, 4, 1, 4, true, 1, 1, 1, kI8, true>());
  v.push_back(make_instance<128, 128, 32, 8, 1, 3, true, 1, 1, 1, kI8, true>());
  // mode kF16Q: 64 or 128 fp16 channels in, 64-channel chunks
  v.push_back(make_instance<64, 64, 64, 4, 1, 3, true, 1, 1, 1, kF16Q, true>());
  v.push_back(make_instance<64, 64, 64, 4, 1, 4, true, 1, 1, 1, kF16Q, true>());
  v.push_back(make_instance<128, 64, 64, 8, 1, 3, true, 1, 1, 1, kF16Q, true>());
  v.push_back(make_instance<64, 128, 64, 4, 1, 3, true, 1, 1, 1, kF16Q, true>());
  v.push_back(make_instance<64, 128, 64, 4, 1, 4, true, 1, 1, 1, kF16Q, true>());
  v.push_back(make_instance<128, 128, 64, 8, 1, 3, true, 1, 1, 1, kF16Q, true>());
}

}  // namespace scn::cuda::igemm
