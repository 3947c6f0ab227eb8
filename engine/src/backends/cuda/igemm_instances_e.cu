// Implicit-GEMM tile instances (e): split over kernel offsets in a thread-block cluster ("xS").
#include "backends/cuda/implicit_gemm.cuh"

namespace scn::cuda::igemm {

void add_instances_e(std::vector<Instance>& v) {
  v.push_back(make_instance<64, 128, 64, 2, 2, 3, true, 1, 1, 2>("igemm m64n128k64s3tx2"));
  v.push_back(make_instance<64, 128, 64, 2, 2, 3, true, 1, 1, 4>("igemm m64n128k64s3tx4"));
  v.push_back(make_instance<128, 64, 64, 2, 2, 3, true, 1, 1, 2>("igemm m128n64k64s3tx2"));
  v.push_back(make_instance<128, 64, 64, 2, 2, 3, true, 1, 1, 4>("igemm m128n64k64s3tx4"));
  v.push_back(make_instance<128, 32, 32, 4, 1, 3, false, 1, 1, 2>("igemm m128n32k32s3x2"));
  v.push_back(make_instance<128, 32, 32, 4, 1, 3, false, 1, 1, 4>("igemm m128n32k32s3x4"));
  v.push_back(make_instance<128, 16, 16, 4, 1, 4, false, 1, 1, 2>("igemm m128n16k16s4x2"));
}

}  // namespace scn::cuda::igemm
