// Resident-weights tile instances (igemm_resident_weights.cuh): warp-specialised, split over kernel
// offsets in a cluster of eight (split class 8), each CTA keeping its offsets' weights in shared
// memory. Compiled for sm_90a alone, like the other wgmma tiles (engine/src/backends/cuda/CMakeLists.txt);
// registered on compute capability 9.0.
#include "backends/cuda/igemm_resident_weights.cuh"

namespace scn::cuda::igemm {

void add_instances_fp16_wgmma_rw(std::vector<Instance>& v) {
  v.push_back(make_rw_instance<128, 4, 8>());
  v.push_back(make_rw_instance<128, 6, 8>());
  v.push_back(make_rw_instance<64, 4, 8>());
}

}  // namespace scn::cuda::igemm
