// The dense tail: ScatterDense (sparse -> dense [N, C, s0, s1, s2]), then Transpose / Reshape,
// whose permutation / shape is the non-standard attribute `dims` (not an input, not `perm`).
#include <algorithm>

#include "importers.h"
#include "onnx.pb.h"

namespace scn::onnx_import {

namespace {

ValueId import_scatter_dense(NodeImport& n) {
  n.expect_inputs(1, 1, "(x)");
  const OnnxAttrs& a = n.attrs();
  const ValueId x = n.value(0, "x");
  DenseAttrs d;
  d.input_spatial_shape = a.get_int3("input_spatial_shape");
  d.output_shape = a.get_ints("output_shape", 5);
  d.format = a.get_string("format");
  if (d.format != "zyx" && d.format != "xyz")
    a.fail("format", detail::concat("expected \"zyx\" or \"xyz\", found \"", d.format, "\""));
  // Absent in every public export; the builder rejects layouts other than NCHW.
  d.layout = a.get_string("output_layout", "NCHW");
  QuantAttrs q;
  q.input_dynamic_range = read_dynamic_range(a, "input_dynamic_range");
  return n.builder().push_dense(n.name(), x, d, q, n.output());
}

std::vector<int64_t> read_dims(const NodeImport& n, const char* what) {
  const OnnxAttrs& a = n.attrs();
  if (!a.has("dims")) {
    const bool standard = n.num_inputs() > 1 || a.has("perm") || a.has("shape");
    a.fail("dims",
           detail::concat("required attribute is missing (scn's ", n.op_type(), " reads the ", what,
                          " from attribute 'dims'",
                          standard ? ", not from standard ONNX's input or 'perm'" : "", ")"));
  }
  return a.get_ints("dims");
}

ValueId import_reshape(NodeImport& n) {
  const std::vector<int64_t> dims = read_dims(n, "target shape");
  n.expect_inputs(1, 1, "(x; the shape is attribute 'dims')");
  if (dims.empty()) n.attrs().fail("dims", "the target shape is empty");
  for (int64_t v : dims)
    if (v < 1 && v != -1)
      n.attrs().fail("dims", detail::concat(dims_text(dims), ": value ", v, " must be >= 1 or -1"));
  return n.builder().push_reshape(n.name(), n.value(0, "x"), dims, n.output());
}

ValueId import_transpose(NodeImport& n) {
  const std::vector<int64_t> dims = read_dims(n, "permutation");
  n.expect_inputs(1, 1, "(x; the permutation is attribute 'dims')");
  const ValueId x = n.value(0, "x");
  const Value& xv = n.builder().graph().values[size_t(x)];
  if (dims.empty()) n.attrs().fail("dims", "the permutation is empty");
  std::vector<int64_t> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  bool perm = true;
  for (size_t i = 0; i < sorted.size(); ++i) perm = perm && sorted[i] == int64_t(i);
  if (!perm)
    n.attrs().fail("dims", detail::concat(dims_text(dims), " is not a permutation of 0..",
                                          int64_t(dims.size()) - 1));
  if (!xv.sparse && dims.size() != xv.shape.size())
    n.attrs().fail("dims", detail::concat(dims_text(dims), " permutes ", dims.size(),
                                          " axes, but input '", xv.name, "' has ", xv.shape.size(),
                                          " (shape ", dims_text(xv.shape), ")"));
  return n.builder().push_transpose(n.name(), x, dims, n.output());
}

}  // namespace

void register_dense_importers(ImporterRegistry& r) {
  r.add("ScatterDense", &import_scatter_dense);
  r.add("Reshape", &import_reshape);
  r.add("Transpose", &import_transpose);
}

}  // namespace scn::onnx_import
