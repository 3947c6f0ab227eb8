// Warp-specialised wgmma tile instances (igemm_warp_specialized.cuh): a producer warpgroup and one or
// two consumer warpgroups, 64/128 output channels, 64-channel chunks. Compiled for sm_90a alone, like
// the other wgmma tiles (engine/src/backends/cuda/CMakeLists.txt); registered on compute capability 9.0.
#include "backends/cuda/igemm_warp_specialized.cuh"

namespace scn::cuda::igemm {

void add_instances_fp16_wgmma_ws(std::vector<Instance>& v) {
  v.push_back(make_ws_instance<128, 64, 3>());
  v.push_back(make_ws_instance<128, 64, 4>());
  v.push_back(make_ws_instance<128, 64, 6>());
  v.push_back(make_ws_instance<128, 64, 8>());
  v.push_back(make_ws_instance<64, 64, 4>());
  v.push_back(make_ws_instance<64, 64, 6>());
  v.push_back(make_ws_instance<64, 64, 8>());
  v.push_back(make_ws_instance<128, 128, 4>());
  v.push_back(make_ws_instance<128, 128, 6>());
  v.push_back(make_ws_instance<64, 128, 4>());
  v.push_back(make_ws_instance<64, 128, 6>());
  // the next tile's map fetched ahead: for frames where a CTA runs several tiles
  v.push_back(make_ws_instance<128, 64, 3, true>());
  v.push_back(make_ws_instance<128, 64, 4, true>());
  v.push_back(make_ws_instance<64, 64, 3, true>());
  v.push_back(make_ws_instance<128, 128, 4, true>());
}

}  // namespace scn::cuda::igemm
