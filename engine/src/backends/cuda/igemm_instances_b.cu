// Implicit-GEMM tile instances (b): "igemm mBMnBNkBKsSTAGES[t][gG][rB]" (t: weights by TMA, gG: G
// offsets per pipeline step, rB: registers capped for B blocks per SM).
#include "backends/cuda/implicit_gemm.cuh"

namespace scn::cuda::igemm {

void add_instances_b(std::vector<Instance>& v) {
  v.push_back(make_instance<128, 32, 32, 4, 1, 4, false, 1, 1>("igemm m128n32k32s4"));
  v.push_back(make_instance<128, 32, 16, 4, 1, 4, false, 1, 1>("igemm m128n32k16s4"));
  v.push_back(make_instance<128, 32, 16, 4, 1, 3, false, 2, 1>("igemm m128n32k16s3g2"));
  v.push_back(make_instance<128, 32, 32, 4, 1, 4, true, 1, 1>("igemm m128n32k32s4t"));
}

}  // namespace scn::cuda::igemm
