// Determinism: the same input gives bitwise the same outputs run after run on one engine, and
// engine after engine (CPU: whatever the thread count). Parametrised by backend; the CUDA
// variant skips visibly without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "robustness/robust_util.h"

namespace scn::robust {
namespace {

class Determinism : public ::testing::TestWithParam<Backend> {};

TEST_P(Determinism, RunToRunOnOneEngine) {
  SCN_SKIP_WITHOUT_BACKEND(GetParam());
  const Frame a = make_frame(40000, 3), b = make_frame(12000, 4);
  std::unique_ptr<Engine> e = small_backbone().build(options_for(GetParam(), 40000));
  const std::vector<Tensor> first = run_once(*e, a);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(bitwise_diff(run_once(*e, a), first), "") << "run " << i;
    // Forward again on the bound input without set_input.
    e->forward();
    EXPECT_EQ(bitwise_diff(host_outputs(*e), first), "") << "repeat " << i;
    run_once(*e, b);  // another frame in between must not change the next result
  }
}

TEST_P(Determinism, EngineToEngine) {
  SCN_SKIP_WITHOUT_BACKEND(GetParam());
  const Frame a = make_frame(40000, 5);
  const EngineBuilder builder = small_backbone();
  std::vector<Tensor> ref;
  // CPU: 1, 2 and 3 worker threads split the rows differently; the sums per output row do not
  // depend on the split. CUDA: the thread count is ignored, each engine is a fresh plan.
  for (int threads : {1, 2, 3}) {
    std::unique_ptr<Engine> e = builder.build(options_for(GetParam(), 40000, threads));
    const std::vector<Tensor> got = run_once(*e, a);
    if (ref.empty())
      ref = got;
    else
      EXPECT_EQ(bitwise_diff(got, ref), "") << threads << " threads";
  }
}

TEST_P(Determinism, Fp32EngineToEngine) {
  SCN_SKIP_WITHOUT_BACKEND(GetParam());
  if (GetParam() == Backend::Cuda) GTEST_SKIP() << "the CUDA backend stores fp16 activations only";
  const Frame a = make_frame(25000, 6);
  BuildOptions o = options_for(GetParam(), 25000);
  o.precision = Precision::Fp32;
  const EngineBuilder builder = small_backbone();
  std::unique_ptr<Engine> e0 = builder.build(o), e1 = builder.build(o);
  EXPECT_EQ(bitwise_diff(run_once(*e0, a), run_once(*e1, a)), "");
}

TEST(DeterminismCpu, InputRowOrderDoesNotChangeTheMap) {
  // Output-stationary summation in kernel-offset order: the dense map does not depend on the
  // order of the voxel rows (the CPU backend's design; not promised by the CUDA backend).
  const Frame a = make_frame(30000, 8);
  const int64_t n = a.indices.dim(0);
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937_64 rng(9);
  std::shuffle(perm.begin(), perm.end(), rng);
  Frame p = a;
  p.features = Tensor::empty({n, 5}, DType::Float16);
  p.indices = Tensor::empty({n, 4}, DType::Int32);
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(p.features.ptr<uint16_t>() + 5 * i, a.features.ptr<uint16_t>() + 5 * perm[size_t(i)], 10);
    std::memcpy(p.indices.ptr<int32_t>() + 4 * i, a.indices.ptr<int32_t>() + 4 * perm[size_t(i)], 16);
  }
  std::unique_ptr<Engine> e = small_backbone().build(options_for(Backend::Cpu, n));
  const std::vector<Tensor> ref = run_once(*e, a);
  EXPECT_EQ(bitwise_diff(run_once(*e, p), ref), "");
}

INSTANTIATE_TEST_SUITE_P(Backends, Determinism, ::testing::Values(Backend::Cpu, Backend::Cuda), backend_label);

}  // namespace
}  // namespace scn::robust
