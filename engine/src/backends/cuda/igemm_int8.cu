// Implicit-GEMM tile instances on the int8 tensor cores (mode kI8, mma.sync
// m16n8k32 s8 -> s32). BK counts 16-bit units of two int8 channels: k8 = 16
// channels per chunk (mma m16n8k16, rows of at most 16 channels), k16 = 32, k32
// = 64, k64 = 128 (wider rows are padded to 32 channels). In bytes an int8
// layer of C channels looks like an fp16 layer of C/2, so the shapes mirror the
// fp16 winners one level down (docs/benchmarks.md).
#include "backends/cuda/implicit_gemm.cuh"

namespace scn::cuda::igemm {

void add_instances_int8(std::vector<Instance>& v) {
  v.push_back(make_instance<128, 16, 8, 4, 1, 4, false, 1, 1, 1, kI8>());
  v.push_back(make_instance<128, 16, 8, 4, 1, 4, true, 1, 1, 1, kI8>());
  v.push_back(make_instance<128, 16, 8, 4, 1, 3, true, 2, 1, 1, kI8>());
  v.push_back(make_instance<128, 16, 8, 4, 1, 3, false, 4, 1, 1, kI8>());
  v.push_back(make_instance<128, 32, 8, 4, 1, 4, false, 1, 1, 1, kI8>());
  v.push_back(make_instance<128, 32, 8, 8, 1, 4, false, 1, 1, 1, kI8>());
  v.push_back(make_instance<128, 16, 16, 4, 1, 4, false, 1, 1, 1, kI8>());
  v.push_back(make_instance<128, 16, 16, 4, 1, 4, true, 1, 1, 1, kI8>());
  v.push_back(make_instance<128, 32, 16, 4, 1, 4, false, 1, 1, 1, kI8>());
  v.push_back(make_instance<128, 32, 16, 8, 1, 4, false, 1, 1, 1, kI8>());
  v.push_back(make_instance<128, 32, 16, 8, 1, 4, true, 1, 1, 1, kI8>());
  v.push_back(make_instance<128, 32, 16, 4, 1, 3, false, 2, 1, 1, kI8>());
  v.push_back(make_instance<128, 32, 16, 8, 1, 3, false, 2, 1, 1, kI8>());
  v.push_back(make_instance<128, 64, 32, 4, 2, 3, true, 1, 1, 1, kI8>());
  v.push_back(make_instance<64, 64, 32, 2, 2, 4, true, 1, 1, 1, kI8>());
  v.push_back(make_instance<64, 64, 16, 2, 2, 3, false, 1, 1, 1, kI8>());
  v.push_back(make_instance<32, 128, 64, 1, 4, 3, true, 1, 1, 1, kI8>());
  v.push_back(make_instance<64, 128, 32, 2, 2, 3, true, 1, 1, 1, kI8>());
  v.push_back(make_instance<64, 128, 16, 2, 2, 3, false, 1, 1, 1, kI8>());
  v.push_back(make_instance<64, 32, 16, 4, 1, 4, true, 1, 1, 1, kI8>());
  v.push_back(make_instance<64, 32, 16, 4, 1, 4, true, 1, 6, 1, kI8>());
  v.push_back(make_instance<64, 32, 16, 4, 1, 4, true, 1, 8, 1, kI8>());
  v.push_back(make_instance<64, 32, 16, 4, 2, 4, true, 1, 1, 1, kI8>());
  v.push_back(make_instance<64, 32, 8, 4, 1, 4, false, 1, 1, 1, kI8>());
  v.push_back(make_instance<64, 32, 16, 4, 1, 4, true, 2, 1, 1, kI8>());
  v.push_back(make_instance<64, 64, 32, 2, 2, 2, true, 2, 1, 1, kI8>());
  v.push_back(make_instance<64, 32, 16, 4, 1, 2, true, 4, 1, 1, kI8>());
  v.push_back(make_instance<64, 32, 8, 4, 1, 2, true, 4, 1, 1, kI8>());
  // split over kernel offsets in a cluster of two (sm_90; int32 partial sums: the unsplit tiles' bits)
  v.push_back(make_instance<32, 128, 64, 1, 4, 3, true, 1, 1, 2, kI8>());
  v.push_back(make_instance<64, 128, 64, 2, 2, 3, true, 1, 1, 2, kI8>());
}

}  // namespace scn::cuda::igemm
