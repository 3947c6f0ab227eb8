// Implicit-GEMM tile instances (c): "igemm mBMnBNkBKsSTAGES[t][gG][rB]" (t: weights by TMA, gG: G
// offsets per pipeline step, rB: registers capped for B blocks per SM).
#include "backends/cuda/implicit_gemm.cuh"

namespace scn::cuda::igemm {

void add_instances_c(std::vector<Instance>& v) {
  v.push_back(make_instance<64, 64, 32, 2, 2, 3, true, 1, 1>("igemm m64n64k32s3t"));
  v.push_back(make_instance<64, 64, 32, 2, 2, 4, true, 1, 1>("igemm m64n64k32s4t"));
  v.push_back(make_instance<64, 64, 16, 2, 2, 3, false, 1, 1>("igemm m64n64k16s3"));
  v.push_back(make_instance<64, 64, 32, 2, 2, 3, false, 1, 1>("igemm m64n64k32s3"));
}

}  // namespace scn::cuda::igemm
