// CUDA backend (fp16) against the CPU reference backend (fp32), one conv at a time on random sparse inputs: every
// conv kind (subm, strided, regular with stride 1, dilated, 1x1x1, K > 32), channel counts from 1 to 256,
// activations, batch 2. Every test skips visibly without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/conv_case.h"
#include "cuda/cuda_test_util.h"

namespace {

using namespace scn;
using namespace scn::cudatest;
using test::random_input;
using test::SparseInput;

std::vector<ConvCase> conv_cases() {
  std::vector<ConvCase> v;
  const Int3 g{12, 17, 15};
  const Int3 k3{3, 3, 3}, one{1, 1, 1}, zero{0, 0, 0}, two{2, 2, 2};
  // channel sweep on a subm 3x3x3
  const std::vector<std::pair<int, int>> ch = {{1, 16},    {3, 16},    {5, 16},  {16, 16}, {16, 24},  {24, 32},
                                               {32, 32},   {32, 64},   {64, 64}, {64, 96}, {96, 128}, {128, 128},
                                               {128, 256}, {256, 128}, {16, 1},  {16, 3}};
  for (auto [ci, co] : ch) v.push_back({ci, co, k3, one, one, one, true, Activation::ReLU, 1, 400, g, ""});
  // kernels
  v.push_back({16, 32, one, one, zero, one, true, Activation::None, 1, 400, g, ""});
  v.push_back({32, 32, {3, 1, 1}, one, zero, one, true, Activation::ReLU, 1, 400, g, ""});
  v.push_back({16, 16, {1, 1, 3}, one, zero, one, true, Activation::ReLU, 1, 400, g, ""});
  // strided
  v.push_back({16, 32, k3, two, one, one, false, Activation::ReLU, 1, 400, g, ""});
  v.push_back({64, 128, k3, two, {0, 1, 1}, one, false, Activation::ReLU, 1, 400, g, ""});
  v.push_back({128, 128, {3, 1, 1}, {2, 1, 1}, zero, one, false, Activation::ReLU, 1, 400, g, ""});
  v.push_back({128, 128, {1, 1, 3}, {1, 1, 2}, zero, one, false, Activation::ReLU, 1, 400, g, ""});
  v.push_back({32, 64, two, two, zero, one, false, Activation::None, 1, 400, g, ""});
  v.push_back({24, 24, k3, two, {0, 1, 2}, one, false, Activation::ReLU, 1, 400, g, ""});  // asymmetric padding
  v.push_back({5, 16, k3, {1, 2, 3}, {2, 0, 1}, one, false, Activation::ReLU, 1, 400, g, ""});
  // regular conv with stride 1 (dilates the sites), dilation 2
  v.push_back({16, 16, k3, one, one, one, false, Activation::ReLU, 1, 300, g, ""});
  v.push_back({16, 16, k3, one, two, two, false, Activation::ReLU, 1, 300, g, ""});
  v.push_back({16, 32, k3, one, one, two, true, Activation::ReLU, 1, 400, g, ""});
  // activations
  v.push_back({32, 32, k3, one, one, one, true, Activation::Sigmoid, 1, 400, g, ""});
  v.push_back({32, 32, k3, one, one, one, true, Activation::LeakyReLU, 1, 400, g, ""});
  // batch 2
  v.push_back({16, 16, k3, one, one, one, true, Activation::ReLU, 2, 600, g, ""});
  v.push_back({16, 32, k3, two, one, one, false, Activation::ReLU, 2, 600, g, ""});
  // larger kernel (K > 32: no shared-memory map, no offset skipping)
  v.push_back({16, 32, {5, 5, 3}, one, zero, one, true, Activation::ReLU, 1, 500, g, ""});
  // denser input (many full tiles)
  v.push_back({32, 64, k3, one, one, one, true, Activation::ReLU, 1, 2500, g, ""});
  for (auto& c : v) c.name = case_name(c);
  return v;
}

class CudaConv : public ::testing::TestWithParam<ConvCase> {};

TEST_P(CudaConv, MatchesCpuReference) {
  SCN_REQUIRE_CUDA();
  const ConvCase& cc = GetParam();
  const uint64_t seed = std::hash<std::string>()(cc.name) & 0xffff;
  const SparseInput in = random_input(cc.n, cc.cin, cc.grid, cc.batch, seed);
  expect_close(single_conv(cc, seed + 7), {in}, 1e-3, cuda_options(true, 0, cc.batch));
}

INSTANTIATE_TEST_SUITE_P(All, CudaConv, ::testing::ValuesIn(conv_cases()),
                         [](const ::testing::TestParamInfo<ConvCase>& i) { return i.param.name; });

}  // namespace
