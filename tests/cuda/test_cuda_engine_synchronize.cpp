// Engine::synchronize against the stream a forward was enqueued on: after it returns, the caller's stream holds no
// unfinished work (the Python package relies on it before letting go of bound inputs at interpreter exit), and the
// outputs read afterwards without another wait are the forward's.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "cuda/cuda_test_util.h"
#include "engine/centerpoint_graph.h"
#include "scn/voxelize.h"

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

namespace {

int current_device() {
  int d = -1;
  EXPECT_EQ(cudaGetDevice(&d), cudaSuccess);
  return d;
}

// Every call of an engine or voxelizer on GPU 1 (build, binding, forward, outputs, errors, timing, destruction) leaves
// the calling thread's current device (0) as it was, and the engine computes there what one on GPU 0 computes.
TEST(CudaCallerDevice, CallsOnAnotherGpuKeepTheCallersCurrentDevice) {
  SCN_REQUIRE_CUDA();
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  if (count < 2) GTEST_SKIP() << "one CUDA device visible: needs two (the device tool's nvidia-h200-x2)";
  const Int3 grid{41, 256, 256};
  const SparseInput in = random_input(20000, 5, grid, 1, 501);
  const EngineBuilder b = test::centerpoint_builder(grid);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  auto on0 = b.build(cuda_options(true, 40000));
  const RunResult want = run(*on0, {in});
  BuildOptions o = cuda_options(true, 40000);
  o.device = 1;
  {
    auto on1 = b.build(o);
    EXPECT_EQ(current_device(), 0) << "build";
    on1->set_input(0, in.features, in.indices, grid, 1);
    EXPECT_EQ(current_device(), 0) << "set_input";
    on1->forward();
    EXPECT_EQ(current_device(), 0) << "forward";
    on1->check_errors();
    EXPECT_EQ(current_device(), 0) << "check_errors";
    const Tensor out = on1->output(0);
    EXPECT_EQ(current_device(), 0) << "output";
    EXPECT_TRUE(to_bytes(out) == to_bytes(want.outputs[0])) << "GPU 1 computes GPU 0's bits";
    on1->time_forward(2, 3);
    EXPECT_EQ(current_device(), 0) << "time_forward";
    on1->profile_layers();
    EXPECT_EQ(current_device(), 0) << "profile_layers";
    on1->synchronize();
    EXPECT_EQ(current_device(), 0) << "synchronize";
  }
  EXPECT_EQ(current_device(), 0) << "the engine's destruction";
  {
    auto vox = Voxelizer::create(voxelizer_preset("nuscenes-centerpoint"), Backend::Cuda, 1000, 1);
    EXPECT_EQ(current_device(), 0) << "voxelizer create";
    std::vector<float> pts(1000 * 5);
    for (size_t k = 0; k < pts.size(); ++k) pts[k] = float(k % 97) * 0.1f;
    vox->run(Tensor::from_host(pts.data(), {1000, 5}, DType::Float32));
    EXPECT_EQ(current_device(), 0) << "voxelizer run";
    EXPECT_GT(vox->count(), 0);
    EXPECT_EQ(current_device(), 0) << "voxelizer count";
  }
  EXPECT_EQ(current_device(), 0) << "the voxelizer's destruction";
}

}  // namespace
