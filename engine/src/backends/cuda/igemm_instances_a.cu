// Implicit-GEMM tile instances (a): "igemm mBMnBNkBKsSTAGES[t][gG][rB]" (t: weights by TMA, gG: G
// offsets per pipeline step, rB: registers capped for B blocks per SM).
#include "backends/cuda/implicit_gemm.cuh"

namespace scn::cuda::igemm {

void add_instances_a(std::vector<Instance>& v) {
  v.push_back(make_instance<128, 16, 16, 4, 1, 4, false, 1, 1>("igemm m128n16k16s4"));
  v.push_back(make_instance<128, 16, 16, 4, 1, 3, false, 1, 6>("igemm m128n16k16s3r6"));
  v.push_back(make_instance<128, 16, 16, 4, 1, 3, false, 4, 1>("igemm m128n16k16s3g4"));
  v.push_back(make_instance<128, 16, 32, 4, 1, 3, false, 1, 1>("igemm m128n16k32s3"));
  v.push_back(make_instance<128, 16, 16, 4, 1, 4, true, 1, 1>("igemm m128n16k16s4t"));
}

}  // namespace scn::cuda::igemm
