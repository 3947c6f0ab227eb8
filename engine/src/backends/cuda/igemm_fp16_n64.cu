// Implicit-GEMM tile instances: fp16 tiles of 64 output channels (64-row tiles). Names are derived from the template
// arguments (igemm_config_name in tile_names.cpp).
#include "backends/cuda/implicit_gemm.cuh"

namespace scn::cuda::igemm {

void add_instances_fp16_n64(std::vector<Instance>& v) {
  v.push_back(make_instance<64, 64, 32, 2, 2, 3, true, 1, 1>());
  // capped at 128 registers: 4 blocks per SM instead of 3 (the strided 32 -> 64 conv of CenterPoint)
  v.push_back(make_instance<64, 64, 32, 2, 2, 3, true, 1, 4>());
  v.push_back(make_instance<64, 64, 32, 2, 2, 4, true, 1, 1>());
  v.push_back(make_instance<64, 64, 16, 2, 2, 3, false, 1, 1>());
  v.push_back(make_instance<64, 64, 32, 2, 2, 3, false, 1, 1>());
}

}  // namespace scn::cuda::igemm
