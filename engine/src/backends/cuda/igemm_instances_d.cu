// Implicit-GEMM tile instances (d): "igemm mBMnBNkBKsSTAGES[t][gG][rB]" (t: weights by TMA, gG: G
// offsets per pipeline step, rB: registers capped for B blocks per SM).
#include "backends/cuda/implicit_gemm.cuh"

namespace scn::cuda::igemm {

void add_instances_d(std::vector<Instance>& v) {
  v.push_back(make_instance<32, 128, 64, 1, 4, 3, true, 1, 1>("igemm m32n128k64s3t"));
  v.push_back(make_instance<32, 128, 64, 1, 4, 4, true, 1, 1>("igemm m32n128k64s4t"));
  v.push_back(make_instance<32, 128, 32, 1, 4, 4, true, 1, 1>("igemm m32n128k32s4t"));
  v.push_back(make_instance<64, 128, 16, 2, 2, 3, false, 1, 1>("igemm m64n128k16s3"));
  v.push_back(make_instance<64, 128, 64, 2, 2, 3, false, 1, 1>("igemm m64n128k64s3"));
}

}  // namespace scn::cuda::igemm
