// A small zyx model on the nuScenes grid 41 x 1440 x 1440 for CLI and install tests: subm conv
// 5 -> 4 (ReLU), a (1, 8, 8)-strided conv 4 -> 4 to 41 x 180 x 180, ScatterDense and a Reshape to
// the BEV map [1, 164, 180, 180] (output "4"). About 5 ms per CPU forward on 3000 voxels.
#pragma once

#include "onnx_parser/onnx_writer.h"

namespace scn::test {

inline ModelDef bev_model() {
  ModelDef m;
  m.inputs.push_back({"0", 10, {-1, 5}});
  ConvSpec c;
  c.name = "conv0", c.x = "0", c.y = "1", c.cin = 5, c.cout = 4, c.rulebook = "subm0";
  c.in_shape = c.out_shape = {41, 1440, 1440};
  add_conv(m, c);
  c = {};
  c.name = "conv1", c.x = "1", c.y = "2", c.cin = 4, c.cout = 4, c.kernel = {1, 8, 8}, c.stride = {1, 8, 8};
  c.padding = {0, 0, 0}, c.subm = false, c.in_shape = {41, 1440, 1440}, c.out_shape = {41, 180, 180}, c.seed = 2;
  add_conv(m, c);
  m.nodes.push_back({"ScatterDense",
                     "scatter0",
                     {"2"},
                     {"3"},
                     {attr_string("format", "zyx"), attr_ints("input_spatial_shape", {41, 180, 180}),
                      attr_ints("output_shape", {1, 4, 41, 180, 180})},
                     ""});
  m.nodes.push_back({"Reshape", "reshape0", {"3"}, {"4"}, {attr_ints("dims", {1, 164, 180, 180})}, ""});
  m.outputs.push_back({"4", 10, {1, 164, 180, 180}});
  return m;
}

}  // namespace scn::test
