// More int8 tile instances (mode kI8) for the 16- and 32-channel levels, in a translation unit of
// their own so that nvcc compiles them beside igemm_instances_i8.cu. These layers are latency-bound:
// a tile has few channels per row, so what counts is how many gathers a block keeps in flight
// (offsets per step G, pipeline depth) against how many blocks fit on an SM; the autotuner picks
// per layer (docs/benchmarks.md, session 7).
#include "backends/cuda/implicit_gemm.cuh"

namespace scn::cuda::igemm {

void add_instances_i8b(std::vector<Instance> &v) {
  // 16 input channels (bk = 8 units: 16-byte rows, unpadded)
  v.push_back(make_instance<128, 16, 8, 4, 1, 4, true, 2, 1, 1, kI8>("igemm-i8 m128n16k8s4tg2"));
  v.push_back(make_instance<128, 16, 8, 4, 1, 3, true, 4, 1, 1, kI8>("igemm-i8 m128n16k8s3tg4"));
  v.push_back(make_instance<128, 16, 8, 4, 1, 4, true, 4, 1, 1, kI8>("igemm-i8 m128n16k8s4tg4"));
  v.push_back(make_instance<128, 16, 8, 4, 1, 2, true, 8, 1, 1, kI8>("igemm-i8 m128n16k8s2tg8"));
  v.push_back(make_instance<64, 16, 8, 4, 1, 4, true, 4, 1, 1, kI8>("igemm-i8 m64n16k8s4tg4"));
  v.push_back(make_instance<256, 16, 8, 8, 1, 3, true, 2, 1, 1, kI8>("igemm-i8 m256n16k8s3tw8g2"));
  v.push_back(make_instance<128, 16, 8, 4, 1, 3, true, 2, 6, 1, kI8>("igemm-i8 m128n16k8s3tg2r6"));
  v.push_back(make_instance<64, 32, 8, 4, 1, 3, true, 4, 1, 1, kI8>("igemm-i8 m64n32k8s3tg4"));
  v.push_back(make_instance<128, 32, 8, 4, 1, 3, true, 4, 1, 1, kI8>("igemm-i8 m128n32k8s3tg4"));
  v.push_back(make_instance<128, 32, 8, 8, 1, 2, true, 4, 1, 1, kI8>("igemm-i8 m128n32k8s2tw8g4"));
  // 32 input channels (bk = 16 units)
  v.push_back(make_instance<64, 32, 16, 4, 1, 3, true, 4, 1, 1, kI8>("igemm-i8 m64n32k16s3tg4"));
  v.push_back(make_instance<64, 32, 16, 4, 1, 4, true, 4, 1, 1, kI8>("igemm-i8 m64n32k16s4tg4"));
  v.push_back(make_instance<128, 32, 16, 4, 1, 3, true, 2, 1, 1, kI8>("igemm-i8 m128n32k16s3tg2"));
  v.push_back(make_instance<128, 32, 16, 4, 1, 2, true, 4, 1, 1, kI8>("igemm-i8 m128n32k16s2tg4"));
  v.push_back(make_instance<128, 32, 16, 8, 1, 3, true, 4, 1, 1, kI8>("igemm-i8 m128n32k16s3tw8g4"));
  v.push_back(make_instance<64, 32, 16, 4, 1, 2, true, 8, 1, 1, kI8>("igemm-i8 m64n32k16s2tg8"));
}

}  // namespace scn::cuda::igemm
