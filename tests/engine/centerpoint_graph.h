// CenterPoint SpMiddleResNetFHD (docs/semantics layer table) built directly with EngineBuilder,
// seeded He-scaled fp16 weights with a bias (BatchNorm folded). Shared by CPU and CUDA tests and
// benchmarks; the ONNX route is tested separately through the exporter.
#pragma once

#include <string>

#include "test_helpers.h"

namespace scn::test {

/// zyx order, grid 41 x 1440 x 1440 (or any grid), `cin` input channels. Returns the builder
/// with one dense output [1, 256, s1/8, s2/8].
inline EngineBuilder centerpoint_builder(const Int3& grid = {41, 1440, 1440}, int cin = 5, uint64_t seed = 2024) {
  EngineBuilder b("centerpoint(builder)");
  int conv_id = 0;
  uint64_t s = seed;
  auto conv = [&](ValueId x, int ci, int co, Int3 k, Int3 st, Int3 pad, bool subm, const std::string& key,
                  Activation act) {
    ConvAttrs c = random_conv(ci, co, k, st, pad, {1, 1, 1}, subm, s++, act);
    c.rulebook = key;
    c.output_bound = 200000;
    return b.push_sparse_conv("conv" + std::to_string(conv_id++), x, c);
  };
  int add_id = 0, relu_id = 0;
  auto block = [&](ValueId x, int ch, const std::string& key) {
    ValueId y = conv(x, ch, ch, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true, key, Activation::ReLU);
    y = conv(y, ch, ch, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true, key, Activation::None);
    y = b.push_add("add" + std::to_string(add_id++), y, x);
    return b.push_relu("relu" + std::to_string(relu_id++), y);
  };
  ValueId x = b.push_input("0", cin);
  x = conv(x, cin, 16, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true, "res0", Activation::ReLU);
  x = block(x, 16, "res0");
  x = block(x, 16, "res0");
  x = conv(x, 16, 32, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, false, "", Activation::ReLU);
  x = block(x, 32, "res1");
  x = block(x, 32, "res1");
  x = conv(x, 32, 64, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, false, "", Activation::ReLU);
  x = block(x, 64, "res2");
  x = block(x, 64, "res2");
  x = conv(x, 64, 128, {3, 3, 3}, {2, 2, 2}, {0, 1, 1}, false, "", Activation::ReLU);
  x = block(x, 128, "res3");
  x = block(x, 128, "res3");
  x = conv(x, 128, 128, {3, 1, 1}, {2, 1, 1}, {0, 0, 0}, false, "", Activation::ReLU);
  Int3 g = grid;
  auto down = [](Int3 in, Int3 k, Int3 st, Int3 p) {
    Int3 o;
    for (int d = 0; d < 3; ++d) o[d] = (in[d] + 2 * p[d] - (k[d] - 1) - 1) / st[d] + 1;
    return o;
  };
  g = down(g, {3, 3, 3}, {2, 2, 2}, {1, 1, 1});
  g = down(g, {3, 3, 3}, {2, 2, 2}, {1, 1, 1});
  g = down(g, {3, 3, 3}, {2, 2, 2}, {0, 1, 1});
  g = down(g, {3, 1, 1}, {2, 1, 1}, {0, 0, 0});
  DenseAttrs d;
  d.input_spatial_shape = g;
  d.output_shape = {1, 128, g[0], g[1], g[2]};
  d.format = "zyx";
  ValueId dense = b.push_dense("scatter0", x, d);
  b.push_output(b.push_reshape("reshape0", dense, {1, 128 * g[0], g[1], g[2]}));
  return b;
}

}  // namespace scn::test
