// Writes the small zyx model the install test runs (argv[1]): on the nuScenes grid 41 x 1440 x 1440,
// subm conv 5 -> 4 (ReLU), a (1, 8, 8)-strided conv 4 -> 4 to 41 x 180 x 180, ScatterDense and a
// Reshape to the BEV map [1, 164, 180, 180]. Written by the ONNX test writer (no Python needed).
#include <cstdio>
#include <fstream>

#include "onnx_parser/onnx_writer.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: install_test_model OUT.onnx\n");
    return 2;
  }
  using namespace scn::test;
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
  std::ofstream f(argv[1], std::ios::binary);
  f << encode_model(m);
  return f.good() ? 0 : 1;
}
