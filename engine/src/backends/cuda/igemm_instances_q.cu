// Implicit-GEMM tile instances of INT8 engines, fp16 operands (mode kF16Q): fp16 convs whose
// output is stored int8 or whose fused residual Add involves int8 (docs/int8.md). BK = 16 fits
// every padded channel count; the N tile follows the output width.
#include "backends/cuda/implicit_gemm.cuh"

namespace scn::cuda::igemm {

void add_instances_q(std::vector<Instance>& v) {
  v.push_back(make_instance<128, 16, 16, 4, 1, 4, false, 1, 1, 1, kF16Q>("igemm-q m128n16k16s4"));
  v.push_back(make_instance<128, 32, 16, 4, 1, 4, false, 1, 1, 1, kF16Q>("igemm-q m128n32k16s4"));
  v.push_back(make_instance<64, 64, 16, 2, 2, 3, false, 1, 1, 1, kF16Q>("igemm-q m64n64k16s3"));
  v.push_back(make_instance<64, 128, 16, 2, 2, 3, false, 1, 1, 1, kF16Q>("igemm-q m64n128k16s3"));
  v.push_back(make_instance<128, 16, 16, 4, 1, 4, true, 1, 1, 1, kF16Q>("igemm-q m128n16k16s4t"));
  v.push_back(make_instance<128, 16, 16, 4, 1, 2, true, 2, 1, 1, kF16Q>("igemm-q m128n16k16s2tg2"));
}

}  // namespace scn::cuda::igemm
