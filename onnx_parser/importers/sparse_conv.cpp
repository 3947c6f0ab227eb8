// SparseConvolution (spconv SubMConv3d / SparseConv3d / SparseInverseConv3d): inputs
// (x, weight[, bias]); weight [Cout, k0, k1, k2, Cin] and bias [Cout] are FLOAT16 initializers.
//
// Attribute policy (NVIDIA's exporters write all of the "required" ones on every conv):
//   required  kernel_size, stride, padding, dilation (ints[3]), subm (0/1), activation
//   optional  inverse (default 0; older and QAT-free exports omit it), rulebook (default "": no
//             shared kernel map; the QAT exporter writes "" for layers without a key),
//             output_bound (default 0 = not given; scn does not invent NVIDIA's 150000),
//             precision / output_precision ("fp16" default, "int8"), input_dynamic_range,
//             weight_dynamic_ranges, alpha (required for LeakyReLU)
//   checked   in_channels / out_channels (against the weight), transposed (must be 0), groups
//             (must be 1), ndim (must be 3), input/output_spatial_shape (ints[3], consistent
//             with the conv arithmetic); shown by inspect
//   shown     everything else (output_padding, input_shape, output_shape, fixed_launch_points)
#include <array>
#include <cmath>
#include <limits>

#include "scn/inspect.h"
#include "importers.h"
#include "onnx.pb.h"

namespace scn::onnx_import {

namespace {

Activation read_activation(const OnnxAttrs& a, float* alpha) {
  const std::string s = a.get_string("activation");
  if (s == "None") return Activation::None;
  if (s == "ReLU") return Activation::ReLU;
  if (s == "Sigmoid") return Activation::Sigmoid;
  if (s == "LeakyReLU") {
    *alpha = a.get_float("alpha");
    if (!std::isfinite(*alpha))
      a.fail("alpha", detail::concat("LeakyReLU needs a finite slope, found ", *alpha));
    return Activation::LeakyReLU;
  }
  a.fail("activation",
         detail::concat("expected \"ReLU\", \"None\", \"Sigmoid\" or \"LeakyReLU\", found \"", s,
                        "\""));
}

// The geometry, before anything computes with it, with messages that name the attribute (the
// builder re-checks): no stride 0 (a division by zero in the shape arithmetic), no negative
// padding, and an extent 2 * padding + dilation * (kernel - 1) inside int32.
void check_geometry(const OnnxAttrs& a, const ConvAttrs& c) {
  for (int d = 0; d < 3; ++d) {
    if (c.kernel_size[size_t(d)] < 1)
      a.fail("kernel_size", detail::concat(int3_string(c.kernel_size), " must be >= 1 on every axis"));
    if (c.stride[size_t(d)] < 1)
      a.fail("stride", detail::concat(int3_string(c.stride), " must be >= 1 on every axis"));
    if (c.dilation[size_t(d)] < 1)
      a.fail("dilation", detail::concat(int3_string(c.dilation), " must be >= 1 on every axis"));
    if (c.padding[size_t(d)] < 0)
      a.fail("padding", detail::concat(int3_string(c.padding), " must be >= 0 on every axis"));
  }
  for (int d = 0; d < 3; ++d) {
    const int64_t pad = 2 * int64_t(c.padding[size_t(d)]);
    const int64_t reach = int64_t(c.dilation[size_t(d)]) * (int64_t(c.kernel_size[size_t(d)]) - 1);
    if (pad + reach > std::numeric_limits<int32_t>::max())
      a.fail(pad > reach ? "padding" : "dilation",
             detail::concat("kernel_size ", int3_string(c.kernel_size), ", dilation ", int3_string(c.dilation),
                            " and padding ", int3_string(c.padding), " span more than 2^31 - 1 voxels on axis ",
                            d));
  }
}

// Attributes NVIDIA's parser ignores; scn checks them against what it does use.
void check_validation_attrs(NodeImport& n, const ConvAttrs& c, const Tensor& weight,
                            const std::string& weight_name) {
  const OnnxAttrs& a = n.attrs();
  const std::string wshape = dims_text(weight.shape());
  if (a.has("transposed")) {
    if (a.get_int("transposed") != 0)
      a.fail("transposed",
             "transposed sparse convolution is not supported (spconv's "
             "SparseInverseConv3d is written as inverse=1, not transposed=1)");
    a.show("transposed");
  }
  if (a.has("groups")) {
    const int64_t g = a.get_int("groups");
    if (g != 1)
      a.fail("groups", detail::concat("grouped convolution is not supported (groups=", g, ")"));
    a.show("groups");
  }
  if (a.has("ndim")) {
    const int64_t nd = a.get_int("ndim");
    if (nd != 3)
      a.fail("ndim", detail::concat("only 3-d sparse convolution is supported, found ", nd));
    a.show("ndim");
  }
  if (a.has("in_channels")) {
    const int64_t v = a.get_int("in_channels");
    if (v != weight.dim(4))
      a.fail("in_channels", detail::concat(v, " disagrees with the weight '", weight_name,
                                           "' of shape ", wshape, " (Cin = ", weight.dim(4), ")"));
    a.show("in_channels");
  }
  if (a.has("out_channels")) {
    const int64_t v = a.get_int("out_channels");
    if (v != weight.dim(0))
      a.fail("out_channels",
             detail::concat(v, " disagrees with the weight '", weight_name, "' of shape ", wshape,
                            " (Cout = ", weight.dim(0), ")"));
    a.show("out_channels");
  }
  Int3 in{}, out{};
  const bool has_in = a.has("input_spatial_shape"), has_out = a.has("output_spatial_shape");
  if (has_in) in = a.get_int3("input_spatial_shape");
  if (has_out) out = a.get_int3("output_spatial_shape");
  for (int d = 0; d < 3; ++d) {
    if (has_in && in[size_t(d)] < 1)
      a.fail("input_spatial_shape", detail::concat(int3_string(in), " is not positive"));
    if (has_out && out[size_t(d)] < 1)
      a.fail("output_spatial_shape", detail::concat(int3_string(out), " is not positive"));
  }
  // An inverse conv's output shape is its rulebook conv's input shape, known only to the graph.
  if (has_in && has_out && !c.inverse) {
    const std::array<int64_t, 3> want =
        c.subm ? std::array<int64_t, 3>{in[0], in[1], in[2]} : conv_output_extent(in, c);
    if (want != std::array<int64_t, 3>{out[0], out[1], out[2]})
      a.fail("output_spatial_shape",
             detail::concat(int3_string(out), " disagrees with ", want[0], "x", want[1], "x", want[2],
                            c.subm ? ", the input_spatial_shape of a submanifold conv"
                                   : " computed from input_spatial_shape, kernel_size, stride, "
                                     "padding and dilation"));
  }
  if (has_in) a.show("input_spatial_shape");
  if (has_out) a.show("output_spatial_shape");
}

ValueId import_sparse_conv(NodeImport& n) {
  n.expect_inputs(2, 3, "(x, weight[, bias])");
  const OnnxAttrs& a = n.attrs();
  const ValueId x = n.value(0, "x");
  const onnx::TensorProto& w = n.initializer(1, "weight");
  ConvAttrs c;
  c.weight = fp16_initializer(n, w, "weight");
  if (n.has_input(2)) c.bias = fp16_initializer(n, n.initializer(2, "bias"), "bias");

  c.kernel_size = a.get_int3("kernel_size");
  c.stride = a.get_int3("stride");
  c.padding = a.get_int3("padding");
  c.dilation = a.get_int3("dilation");
  c.subm = a.get_bool("subm");
  c.inverse = a.get_bool("inverse", false);
  c.rulebook = a.get_string("rulebook", "");
  c.activation = read_activation(a, &c.activation_alpha);
  c.output_bound = a.get_int("output_bound", 0);
  if (c.output_bound < 0 || c.output_bound > kMaxSiteRows)
    a.fail("output_bound", detail::concat("must be in [0, ", kMaxSiteRows, "] (0: not given), found ", c.output_bound));

  QuantAttrs q;
  q.precision = read_precision(a, "precision");
  q.output_precision = read_precision(a, "output_precision");
  q.input_dynamic_range = read_dynamic_range(a, "input_dynamic_range");
  q.weight_dynamic_ranges = a.get_floats_or("weight_dynamic_ranges", {});

  // Shapes, with messages naming the initializer and the attribute (the builder re-checks).
  const std::string wshape = dims_text(c.weight.shape());
  if (c.weight.ndim() != 5)
    n.fail("weight '", w.name(), "' has shape ", wshape, "; expected [Cout, k0, k1, k2, Cin]");
  for (int d = 0; d < 3; ++d)
    if (c.weight.dim(d + 1) != c.kernel_size[size_t(d)])
      a.fail("kernel_size",
             detail::concat(int3_string(c.kernel_size), " disagrees with the weight '", w.name(),
                            "' of shape ", wshape, " ([Cout, k0, k1, k2, Cin])"));
  if (n.has_input(2) && (c.bias.ndim() != 1 || c.bias.dim(0) != c.weight.dim(0)))
    n.fail("bias '", n.node().input(2), "' has shape ", dims_text(c.bias.shape()), "; expected [",
           c.weight.dim(0), "] (Cout of the weight ", wshape, ")");
  check_geometry(a, c);
  check_validation_attrs(n, c, c.weight, w.name());

  if (c.inverse) {
    if (c.subm)
      a.fail("inverse",
             "inverse=1 together with subm=1 is not a valid convolution (an inverse "
             "convolution reverses a strided one)");
    if (c.rulebook.empty())
      a.fail("rulebook",
             "an inverse convolution (inverse=1) needs the rulebook of the strided "
             "convolution it reverses");
    if (!n.ctx().strided_rulebooks.count(c.rulebook))
      a.fail("rulebook",
             detail::concat("inverse convolution's rulebook '", c.rulebook,
                            "' names no earlier strided (non-submanifold) convolution"));
  }

  const ValueId y = n.builder().push_sparse_conv(n.name(), x, c, q, n.output());
  if (!c.subm && !c.inverse && !c.rulebook.empty()) n.ctx().strided_rulebooks.insert(c.rulebook);
  return y;
}

}  // namespace

void register_sparse_conv_importers(ImporterRegistry& r) {
  r.add("SparseConvolution", &import_sparse_conv);
}

}  // namespace scn::onnx_import
