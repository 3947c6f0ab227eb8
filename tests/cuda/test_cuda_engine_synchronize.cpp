// Engine::synchronize against the stream a forward was enqueued on: after it returns, the caller's stream holds no
// unfinished work (the Python package relies on it before letting go of bound inputs at interpreter exit), and the
// outputs read afterwards without another wait are the forward's.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "cuda/cuda_test_util.h"
#include "engine/centerpoint_graph.h"

namespace {

using namespace scn;
using namespace scn::cudatest;
using test::random_input;
using test::SparseInput;

TEST(CudaEngineSynchronize, WaitsForTheForwardOnTheCallersStream) {
  SCN_REQUIRE_CUDA();
  const Int3 grid{41, 256, 256};
  const SparseInput in = random_input(40000, 5, grid, 1, 301);
  const EngineBuilder b = test::centerpoint_builder(grid);
  auto gpu = b.build(cuda_options(true, 40000));
  const RunResult want = run(*gpu, {in});  // tunes and captures; output() waits
  const Tensor df = in.features.to(Device::Cuda), di = in.indices.to(Device::Cuda);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  gpu->set_input(0, df, di, grid, 1);
  gpu->synchronize();  // nothing forwarded since the last wait: returns at once
  int busy = 0;
  for (int round = 0; round < 5; ++round) {
    gpu->forward(s);
    busy += cudaStreamQuery(s) == cudaErrorNotReady;  // a forward of 40k voxels outlasts its enqueue
    gpu->synchronize();
    EXPECT_EQ(cudaStreamQuery(s), cudaSuccess) << "round " << round;
  }
  EXPECT_GT(busy, 0) << "no forward was still running when queried: the test cannot tell a wait from none";
  EXPECT_TRUE(to_bytes(gpu->output_async(0)) == to_bytes(want.outputs[0]));
  gpu->check_errors();
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

}  // namespace
