// Implicit-GEMM tile instances for the latency-bound levels: 128-row tiles with 8 warps ("w8") instead
// of 4, registers capped ("rB") so that shared memory, not the register file,
// sets the blocks per SM. The 32-channel convs are latency-bound at 2-3
// resident warps per scheduler (Nsight Compute, docs/benchmarks.md); more,
// smaller warp tiles on the same shared memory hide more of it (level-1 convs
// 52 -> 42 µs on the H200). Results are bitwise identical to the 4-warp tiles:
// each output element keeps its summation order.
#include "backends/cuda/implicit_gemm.cuh"

namespace scn::cuda::igemm {

void add_instances_fp16_latency(std::vector<Instance>& v) {
  v.push_back(make_instance<128, 32, 16, 8, 1, 4, false, 1, 1>());
  v.push_back(make_instance<128, 32, 32, 8, 1, 4, true, 1, 3>());
  v.push_back(make_instance<128, 32, 32, 8, 1, 3, true, 1, 4>());
  v.push_back(make_instance<64, 32, 32, 4, 1, 4, true, 1, 1>());
  v.push_back(make_instance<64, 32, 32, 4, 1, 4, true, 1, 5>());
  v.push_back(make_instance<64, 32, 32, 4, 2, 4, true, 1, 1>());
  v.push_back(make_instance<64, 32, 16, 4, 1, 4, false, 1, 1>());
  v.push_back(make_instance<64, 64, 64, 2, 2, 2, true, 1, 1>());
  v.push_back(make_instance<128, 16, 16, 4, 1, 2, true, 2, 1>());
  v.push_back(make_instance<64, 32, 32, 4, 1, 2, true, 2, 1>());
  v.push_back(make_instance<64, 32, 16, 4, 1, 2, true, 4, 1>());
}

}  // namespace scn::cuda::igemm
