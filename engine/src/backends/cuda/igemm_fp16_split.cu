// Implicit-GEMM tile instances: fp16 split over kernel offsets in a thread-block cluster of two ("x2";
// the split class is fixed by the layer shape, split_for in tile_choice.cpp).
#include "backends/cuda/implicit_gemm.cuh"

namespace scn::cuda::igemm {

void add_instances_fp16_split(std::vector<Instance>& v) {
  v.push_back(make_instance<64, 128, 64, 2, 2, 3, true, 1, 1, 2>());
  v.push_back(make_instance<128, 64, 64, 2, 2, 3, true, 1, 1, 2>());
  v.push_back(make_instance<128, 32, 32, 4, 1, 3, false, 1, 1, 2>());
  v.push_back(make_instance<128, 16, 16, 4, 1, 4, false, 1, 1, 2>());
}

}  // namespace scn::cuda::igemm
