// Ops on sparse tensors that keep their sites: Add / QuantAdd (a, b), Relu (x), Concat (x0, x1,
// ...) along channels.
#include <limits>

#include "importers.h"
#include "onnx.pb.h"

namespace scn::onnx_import {

namespace {

// NVIDIA's exporters write the INT8 Add as op "Add" with dynamic ranges, its parser also accepts
// "QuantAdd"; both are the same node.
ValueId import_add(NodeImport& n) {
  n.expect_inputs(2, 2, "(a, b)");
  const OnnxAttrs& a = n.attrs();
  const ValueId x0 = n.value(0, "a");
  const ValueId x1 = n.value(1, "b");
  QuantAttrs q;
  q.precision = read_precision(a, "precision");
  q.output_precision = read_precision(a, "output_precision");
  q.input0_dynamic_range = read_dynamic_range(a, "input0_dynamic_range");
  q.input1_dynamic_range = read_dynamic_range(a, "input1_dynamic_range");
  const ValueId y = n.builder().push_add(n.name(), x0, x1, q, n.output());
  if (n.op_type() != "Add") n.builder().annotate_last("onnx_op_type", n.op_type());
  return y;
}

ValueId import_relu(NodeImport& n) {
  n.expect_inputs(1, 1, "(x)");
  return n.builder().push_relu(n.name(), n.value(0, "x"), n.output());
}

ValueId import_concat(NodeImport& n) {
  n.expect_inputs(2, std::numeric_limits<int>::max(), "(x0, x1, ...)");
  const OnnxAttrs& a = n.attrs();
  if (a.has("axis")) {
    const int64_t axis = a.get_int("axis");
    if (axis != 1 && axis != -1)
      a.fail("axis", detail::concat("Concat joins sparse tensors [N, C] along channels (axis 1 or "
                                    "-1), found ",
                                    axis));
  }
  std::vector<ValueId> xs;
  for (int i = 0; i < n.num_inputs(); ++i) xs.push_back(n.value(i, "x"));
  return n.builder().push_concat(n.name(), xs, n.output());
}

}  // namespace

void register_elementwise_importers(ImporterRegistry& r) {
  r.add("Add", &import_add);
  r.add("QuantAdd", &import_add);
  r.add("Relu", &import_relu);
  r.add("Concat", &import_concat);
}

}  // namespace scn::onnx_import
