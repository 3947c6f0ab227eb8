// inspect_onnx: every problem of a file at once.
#include <gtest/gtest.h>

#include "onnx_parser/parser_test_util.h"
#include "scn/inspect.h"
#include "scn/onnx.h"

namespace scn::test {
namespace {

int count_with(const std::vector<std::string>& errors, const std::string& a, const std::string& b) {
  int n = 0;
  for (const std::string& e : errors)
    if (e.find(a) != std::string::npos && e.find(b) != std::string::npos) ++n;
  return n;
}

std::string joined(const std::vector<std::string>& errors) {
  std::string s;
  for (const std::string& e : errors) s += "\n  " + e;
  return s;
}

TEST(OnnxInspect, ValidFileHasNoErrors) {
  const OnnxReport r = inspect_onnx(write_model(small_centerpoint(), test_file_name()));
  EXPECT_TRUE(r.errors.empty()) << joined(r.errors);
  ASSERT_NE(r.builder, nullptr);
  ASSERT_NE(r.partial, nullptr);
  EXPECT_EQ(r.builder->graph().nodes.size(), 10u);
  EXPECT_EQ(r.partial->graph().nodes.size(), 10u);
}

// The input a model expects (scn inspect prints it): the order from the ScatterDense format, the grid
// from the input_spatial_shape of the conv reading the input; a model stating neither says so.
TEST(OnnxInspect, ExpectedInputLayout) {
  ModelDef m = small_centerpoint();
  InputLayout l = expected_input(parse_onnx(write_model(m, test_file_name())).graph());
  EXPECT_EQ(l.order, "zyx");
  EXPECT_TRUE(l.order_stated);
  EXPECT_EQ(l.grid, (Int3{9, 8, 8}));
  EXPECT_EQ(l.grid_node, "conv0");
  m.node("scatter0").set(attr_string("format", "xyz"));
  m.node("conv0").erase("input_spatial_shape");
  l = expected_input(parse_onnx(write_model(m, "layout_xyz.onnx")).graph());
  EXPECT_EQ(l.order, "xyz");
  EXPECT_EQ(l.grid, (Int3{0, 0, 0}));
  EXPECT_TRUE(l.grid_node.empty());
  // The kernel-map plan through the public API: conv0..conv2 share one submanifold map.
  const KernelMapPlan p = kernel_map_plan(parse_onnx(write_model(small_centerpoint(), "plan.onnx")).graph());
  ASSERT_EQ(p.maps.size(), 3u);  // subm (conv0-2), strided conv3, strided conv4
  EXPECT_EQ(p.maps[0].kind, "subm");
  EXPECT_EQ(p.maps[0].nodes.size(), 3u);
}

TEST(OnnxInspect, CollectsErrorsOfTwoBadNodes) {
  ModelDef m = small_centerpoint();
  m.node("conv1").set(attr_int("transposed", 1));
  // A dead-end branch with an unknown op: independent of conv1.
  m.nodes.push_back({"HardSwish", "weird0", {"1"}, {"extra"}, {}, ""});
  const OnnxReport r = inspect_onnx(write_model(m, test_file_name()));
  EXPECT_GE(r.errors.size(), 2u);
  EXPECT_EQ(count_with(r.errors, "node 'conv1'", "attribute 'transposed'"), 1) << joined(r.errors);
  EXPECT_EQ(count_with(r.errors, "node 'weird0'", "unknown op type 'HardSwish'"), 1) << joined(r.errors);
  // conv2 reads conv1's output: reported as not produced, naming the node that failed.
  EXPECT_EQ(count_with(r.errors, "node 'conv2'", "input '2' was not produced (node 'conv1'"), 1) << joined(r.errors);
  EXPECT_EQ(count_with(r.errors, "graph output '9'", "not produced"), 1) << joined(r.errors);
  for (const std::string& e : r.errors) EXPECT_NE(e.find(test_file_name()), std::string::npos) << e;
  EXPECT_EQ(r.builder, nullptr);
  ASSERT_NE(r.partial, nullptr);
  ASSERT_EQ(r.partial->graph().nodes.size(), 2u);  // the input and conv0
  EXPECT_EQ(r.partial->graph().nodes[1].name, "conv0");
}

TEST(OnnxInspect, CollectsAttributeErrorsOnParallelBranches) {
  ModelDef m = small_centerpoint();
  m.node("conv1").set(attr_ints("stride", {1, 1}));
  // A second, independent bad node: a side branch reading conv0's output.
  m.nodes.push_back({"ScatterDense",
                     "side",
                     {"1"},
                     {"side_out"},
                     {attr_string("format", "yxz"), attr_ints("input_spatial_shape", {9, 8, 8}),
                      attr_ints("output_shape", {1, 8, 9, 8, 8})},
                     ""});
  const OnnxReport r = inspect_onnx(write_model(m, test_file_name()));
  EXPECT_EQ(count_with(r.errors, "node 'conv1'", "attribute 'stride'"), 1) << joined(r.errors);
  EXPECT_EQ(count_with(r.errors, "node 'side'", "attribute 'format'"), 1) << joined(r.errors);
  EXPECT_EQ(r.builder, nullptr);
}

TEST(OnnxInspect, CollectsGraphLevelErrors) {
  ModelDef m = small_centerpoint();
  m.node("conv2").outputs = {"2"};                              // duplicate output name
  m.node("relu0").inputs = {"42"};                              // no producer
  m.nodes.push_back({"Relu", "loop_a", {"b"}, {"a"}, {}, ""});  // a cycle of two
  m.nodes.push_back({"Relu", "loop_b", {"a"}, {"b"}, {}, ""});
  m.inputs.push_back({"extra", 10, {-1, 3}});  // a second graph input
  const OnnxReport r = inspect_onnx(write_model(m, test_file_name()));
  EXPECT_EQ(count_with(r.errors, "2 inputs", "'extra'"), 1) << joined(r.errors);
  EXPECT_EQ(count_with(r.errors, "node 'conv2'", "output '2'"), 1) << joined(r.errors);
  EXPECT_EQ(count_with(r.errors, "node 'relu0'", "input '42'"), 1) << joined(r.errors);
  EXPECT_EQ(count_with(r.errors, "cycle", "node 'loop_a'"), 1) << joined(r.errors);
  EXPECT_EQ(r.builder, nullptr);
  EXPECT_NE(r.partial, nullptr);
}

TEST(OnnxInspect, UnreadableFile) {
  const std::string path = temp_dir() + "/" + test_file_name();
  write_bytes(path, std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11));
  const OnnxReport r = inspect_onnx(path);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_MESSAGE_HAS(r.errors[0], path, "not a valid ONNX model");
  EXPECT_EQ(r.builder, nullptr);
  EXPECT_EQ(r.partial, nullptr);
  const OnnxReport missing = inspect_onnx(temp_dir() + "/missing.onnx");
  ASSERT_EQ(missing.errors.size(), 1u);
  EXPECT_MESSAGE_HAS(missing.errors[0], "cannot open");
}

// Checks that need the whole graph (here: Add over different voxel sites) run after the nodes,
// in parse_onnx and in inspect_onnx alike.
TEST(OnnxInspect, WholeGraphChecks) {
  ModelDef m = small_centerpoint();
  ConvSpec c;
  c.name = "down", c.x = "5", c.y = "s", c.cin = 8, c.cout = 8, c.stride = {2, 2, 2};
  c.subm = false;
  add_conv(m, c);
  m.nodes.push_back({"Add", "add_mixed", {"5", "s"}, {"mixed"}, {}, ""});
  const std::string path = write_model(m, test_file_name());
  const OnnxReport r = inspect_onnx(path);
  ASSERT_EQ(r.errors.size(), 1u) << joined(r.errors);
  EXPECT_MESSAGE_HAS(r.errors[0], "node 'add_mixed'", "sites");
  EXPECT_EQ(r.builder, nullptr);
  EXPECT_MESSAGE_HAS(parse_error_at(path), "node 'add_mixed'", "sites");
}

}  // namespace
}  // namespace scn::test
