// Implicit-GEMM tile instances of INT8 engines, fp16 operands (mode kF16Q): fp16 convs whose
// output is stored int8 or whose fused residual Add involves int8 (docs/int8.md). BK = 16 fits
// every padded channel count; the N tile follows the output width.
#include "backends/cuda/implicit_gemm.cuh"

namespace scn::cuda::igemm {

void add_instances_int8_fp16_operands(std::vector<Instance>& v) {
  v.push_back(make_instance<128, 16, 16, 4, 1, 4, false, 1, 1, 1, kF16Q>());
  v.push_back(make_instance<128, 32, 16, 4, 1, 4, false, 1, 1, 1, kF16Q>());
  v.push_back(make_instance<64, 64, 16, 2, 2, 3, false, 1, 1, 1, kF16Q>());
  v.push_back(make_instance<64, 128, 16, 2, 2, 3, false, 1, 1, 1, kF16Q>());
  v.push_back(make_instance<128, 16, 16, 4, 1, 4, true, 1, 1, 1, kF16Q>());
  v.push_back(make_instance<128, 16, 16, 4, 1, 2, true, 2, 1, 1, kF16Q>());
}

}  // namespace scn::cuda::igemm
