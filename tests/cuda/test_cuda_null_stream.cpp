// A forward without a stream on inputs the caller wrote on the device: the engine's own stream is non-blocking, so the
// forward must be ordered after the producer the caller enqueued on the legacy default stream (Voxelizer::run(points)
// with no stream, kernels and copies on stream 0). The producer here is held back by a host function on the legacy
// stream; a forward that did not wait for it would read the features written before.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "cuda/cuda_test_util.h"
#include "engine/centerpoint_graph.h"

namespace {

using namespace scn;
using namespace scn::cudatest;
using test::random_input;
using test::SparseInput;

void CUDART_CB hold_stream(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }

TEST(CudaNullStream, ForwardRunsAfterTheDefaultStreamsProducer) {
  SCN_REQUIRE_CUDA();
  const Int3 grid{41, 256, 256};
  const SparseInput a = random_input(20000, 5, grid, 1, 411);
  SparseInput b = a;
  b.features = random_input(20000, 5, grid, 1, 412).features;  // other values on the same sites
  const EngineBuilder builder = test::centerpoint_builder(grid);
  auto gpu = builder.build(cuda_options(true, 20000));
  const std::vector<uint8_t> want_a = to_bytes(run(*gpu, {a}).outputs[0]);
  const std::vector<uint8_t> want_b = to_bytes(run(*gpu, {b}).outputs[0]);
  ASSERT_FALSE(want_a == want_b) << "the two feature sets give one output: the test cannot tell them apart";

  // The engine reads `x` in place; the producer copies b's features into it on the legacy stream, behind a host
  // function that holds that stream for 300 ms.
  Tensor x = a.features.to(Device::Cuda);
  const Tensor idx = a.indices.to(Device::Cuda), fb = b.features.to(Device::Cuda);
  gpu->set_input(0, x, idx, grid, 1);
  gpu->forward();
  EXPECT_TRUE(to_bytes(gpu->output(0)) == want_a);
  ASSERT_EQ(cudaLaunchHostFunc(cudaStreamLegacy, hold_stream, nullptr), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(x.data(), fb.data(), fb.bytes(), cudaMemcpyDeviceToDevice, cudaStreamLegacy), cudaSuccess);
  gpu->forward();
  EXPECT_TRUE(to_bytes(gpu->output(0)) == want_b) << "the forward did not wait for the legacy stream's producer";
  gpu->check_errors();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace
