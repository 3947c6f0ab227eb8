// Union-staged instances whose warpgroup issues wgmma (A fragments by slot in registers, the weights
// read by the tensor cores from shared memory). Compiled for sm_90a alone
// (engine/src/backends/cuda/CMakeLists.txt); registered only on compute capability 9.0.
#include "backends/cuda/igemm_union_staged.cuh"

namespace scn::cuda::ustage {

void add_instances_wgmma(std::vector<UstageInstance>& v) {
  v.push_back(make<16, 16, 64, 512, 4, 4, true>("ustage c16x16m64u512w4t4wg"));
  v.push_back(make<16, 16, 64, 512, 4, 6, true>("ustage c16x16m64u512w4t6wg"));
  v.push_back(make<32, 32, 64, 512, 4, 3, true>("ustage c32x32m64u512w4t3wg"));
  v.push_back(make<32, 32, 64, 512, 4, 4, true>("ustage c32x32m64u512w4t4wg"));
  v.push_back(make<32, 32, 64, 128, 4, 4, true>("ustage c32x32m64u128w4t4wg"));
  v.push_back(make<16, 32, 64, 512, 4, 2, true>("ustage c16x32m64u512w4t2wg"));
  v.push_back(make<16, 32, 64, 512, 4, 4, true>("ustage c16x32m64u512w4t4wg"));
}

}  // namespace scn::cuda::ustage
