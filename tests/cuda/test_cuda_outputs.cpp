// The CUDA engine's outputs belong to the last forward of the bound inputs, as on the CPU: a binding (same grid, or
// one that re-plans the arena) ends them, and output(), output_async() and output_indices() then raise "requested
// before forward()" instead of wrapping buffers no forward wrote; the next forward's outputs are the new frame's.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>

#include "common/error_message.h"
#include "cuda/cuda_test_util.h"
#include "engine/centerpoint_graph.h"

namespace {

using namespace scn;
using namespace scn::cudatest;
using test::random_input;
using test::SparseInput;

using test::error_message;

void expect_no_outputs(Engine& e, const std::string& when) {
  EXPECT_NE(error_message([&] { e.output(0); }).find("output(0) requested before forward()"), std::string::npos)
      << when;
  EXPECT_NE(error_message([&] { e.output_async(0); }).find("output_async(0) requested before forward()"),
            std::string::npos)
      << when;
  EXPECT_NE(error_message([&] { e.output_indices(0); }).find("output_indices(0) requested before forward()"),
            std::string::npos)
      << when;
}

TEST(CudaEngineOutputs, ABindingEndsTheLastForwardsOutputs) {
  SCN_REQUIRE_CUDA();
  const Int3 grid{41, 256, 256};
  const SparseInput first = random_input(20000, 5, grid, 1, 401), second = random_input(20000, 5, grid, 1, 402),
                    third = random_input(30000, 5, grid, 2, 403);
  const EngineBuilder b = test::centerpoint_builder(grid);
  auto gpu = b.build(cuda_options(true, 40000, 2));
  expect_no_outputs(*gpu, "before any forward");
  const RunResult got_first = run(*gpu, {first});

  // the same grid and batch: the arena stays, its contents are the first frame's
  gpu->set_input(0, second.features, second.indices, second.grid, 1);
  expect_no_outputs(*gpu, "after a binding of the same shape");
  gpu->forward();
  gpu->check_errors();
  const Tensor out_second = gpu->output(0).to(Device::Host);

  // another batch size: the engine re-plans (a new arena) at the binding
  gpu->set_input(0, third.features, third.indices, third.grid, third.batch);
  expect_no_outputs(*gpu, "after a binding that re-plans");
  gpu->forward();
  gpu->check_errors();
  const Tensor out_third = gpu->output(0).to(Device::Host);

  // each forward's output is its own frame's: equal to a fresh engine's on that frame
  for (const auto& [in, out] : {std::pair{&second, &out_second}, std::pair{&third, &out_third}}) {
    auto fresh = b.build(cuda_options(true, 40000, 2));
    const RunResult want = run(*fresh, {*in});
    EXPECT_TRUE(to_bytes(*out) == to_bytes(want.outputs[0])) << "batch " << in->batch;
  }
  EXPECT_FALSE(to_bytes(out_second) == to_bytes(got_first.outputs[0])) << "two frames gave one output";
  // a binding that fails its checks also ends the outputs (the engine may have changed state before the check)
  const Tensor bad = Tensor::empty({10, 3}, DType::Float16);
  EXPECT_THROW(gpu->set_input(0, bad, third.indices, third.grid, third.batch), Error);
  expect_no_outputs(*gpu, "after a failed binding");

  // a forward whose error check_errors() raised (a duplicate row, found on the device) leaves nothing to read
  Tensor dup = second.indices.clone();
  std::memcpy(dup.ptr<int32_t>() + 4 * 5, dup.ptr<int32_t>() + 4 * 3, 16);
  gpu->set_input(0, second.features.to(Device::Cuda), dup.to(Device::Cuda), second.grid, 1);
  gpu->forward();
  EXPECT_NE(error_message([&] { gpu->check_errors(); }).find("duplicate"), std::string::npos);
  expect_no_outputs(*gpu, "after the forward's error was raised");
}

}  // namespace
