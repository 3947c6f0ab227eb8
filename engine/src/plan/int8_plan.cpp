#include "plan/int8_plan.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include "plan/int8_arith.h"
#include "core/half.h"
#include "scn/error.h"

namespace scn::int8 {

namespace {

float element(const Tensor& t, int64_t i) {
  return t.dtype() == DType::Float16 ? half_to_float(t.ptr<uint16_t>()[i]) : t.ptr<float>()[i];
}

/// A reader that states the scale of a value it reads as int8.
struct RangeClaim {
  float range = -1.f;
  int node = -1;
  const char* attr = "";
};

std::string claim_text(const Graph& g, const RangeClaim& c) {
  return detail::concat(g.describe(c.node), " ", c.attr, "=", c.range);
}

}  // namespace

std::vector<float> weight_absmax_per_channel(const Tensor& w) {
  SCN_CHECK(w.defined() && w.ndim() == 5, "weight_absmax_per_channel: expected a weight [Cout, k0, k1, k2, Cin]");
  const int64_t cout = w.dim(0), per = w.numel() / (cout > 0 ? cout : 1);
  std::vector<float> r(size_t(cout), 0.f);
  for (int64_t c = 0; c < cout; ++c)
    for (int64_t i = 0; i < per; ++i) r[size_t(c)] = std::max(r[size_t(c)], std::fabs(element(w, c * per + i)));
  return r;
}

std::vector<int> value_groups(const Graph& g) {
  std::vector<int> group(g.values.size());
  for (size_t v = 0; v < group.size(); ++v) group[v] = int(v);
  for (const Node& n : g.nodes)
    if (n.op == OpType::Relu) group[size_t(n.output)] = group[size_t(n.inputs[0])];
  return group;
}

ConvPlan plan_conv(const ConvAttrs& c, const QuantAttrs& q, float input_range, const std::string& where) {
  ConvPlan p;
  p.int8 = true;
  p.input_range = input_range;
  p.cin = c.in_channels;
  p.cout = c.out_channels;
  p.kernel_volume = c.kernel_size[0] * c.kernel_size[1] * c.kernel_size[2];
  p.activation = c.activation;
  p.alpha = c.activation_alpha;
  SCN_CHECK(std::isfinite(input_range) && input_range > 0.f, where,
            ": precision is int8 but attribute 'input_dynamic_range' is missing or not positive (got ",
            input_range, "); an int8 layer quantizes its input with scale input_dynamic_range / 127");
  // |acc| <= K * Cin * 127 * 127 must fit int32 (no saturation anywhere in the contract).
  const int64_t terms = int64_t(p.kernel_volume) * p.cin;
  SCN_CHECK(terms * 127 * 127 <= INT32_MAX, where, ": kernel volume x input channels = ", terms,
            " could overflow the int32 accumulator of an int8 convolution (limit ", INT32_MAX / (127 * 127), ")");
  if (q.weight_dynamic_ranges.empty()) {
    p.weight_range = weight_absmax_per_channel(c.weight);
    p.weight_range_from_absmax = true;
    // An all-zero channel quantizes to zeros whatever its scale; 1 keeps the scale finite.
    for (float& r : p.weight_range)
      if (r == 0.f) r = 1.f;
  } else {
    SCN_CHECK(int64_t(q.weight_dynamic_ranges.size()) == p.cout, where, ": attribute 'weight_dynamic_ranges' has ",
              q.weight_dynamic_ranges.size(), " values for ", p.cout, " output channels");
    p.weight_range = q.weight_dynamic_ranges;
    for (size_t i = 0; i < p.weight_range.size(); ++i)
      SCN_CHECK(std::isfinite(p.weight_range[i]) && p.weight_range[i] > 0.f, where,
                ": attribute 'weight_dynamic_ranges'[", i, "] must be a positive finite range, got ", p.weight_range[i]);
  }
  const float sx = scale(input_range);
  p.multiplier.resize(size_t(p.cout));
  for (int co = 0; co < p.cout; ++co) p.multiplier[size_t(co)] = sx * scale(p.weight_range[size_t(co)]);
  // source [Cout][K][Cin] -> [K][Cin][Cout]
  p.weight.resize(size_t(p.kernel_volume) * size_t(p.cin) * size_t(p.cout));
  for (int co = 0; co < p.cout; ++co) {
    const float inv = inv_scale(p.weight_range[size_t(co)]);
    for (int r = 0; r < p.kernel_volume; ++r)
      for (int ci = 0; ci < p.cin; ++ci)
        p.weight[(size_t(r) * size_t(p.cin) + size_t(ci)) * size_t(p.cout) + size_t(co)] =
            int8_t(quantize(element(c.weight, (int64_t(co) * p.kernel_volume + r) * p.cin + ci), inv));
  }
  p.bias.assign(size_t(p.cout), 0.f);
  if (c.bias.defined())
    for (int co = 0; co < p.cout; ++co) p.bias[size_t(co)] = element(c.bias, co);
  return p;
}

Plan plan(const Graph& g) {
  Plan p;
  const size_t nv = g.values.size();
  p.values.resize(nv);
  p.convs.resize(g.nodes.size());
  const std::vector<int> group = value_groups(g);
  auto prefix = [&](int n) { return detail::concat(g.source, ": ", g.describe(n)); };

  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    ValuePlan& out = p.values[size_t(node.output)];
    out.group = group[size_t(node.output)];
    switch (node.op) {
      case OpType::SparseConv:
      case OpType::Add:
        out.storage = node.quant.output_precision == Precision::Int8 ? Storage::Int8 : Storage::Fp16;
        break;
      case OpType::Relu:
        out.storage = p.values[size_t(node.inputs[0])].storage;
        break;
      default:
        out.storage = Storage::Fp16;
        break;
    }
  }

  // Readers that state the range of what they read as int8.
  std::vector<std::vector<RangeClaim>> claims(nv);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    const QuantAttrs& q = node.quant;
    auto claim = [&](int input, float range, const char* attr, bool required) {
      if (required)
        SCN_CHECK(range > 0.f && std::isfinite(range), prefix(int(n)), ": precision is int8 but attribute '", attr,
                  "' is missing (an int8 node quantizes that input with scale ", attr, " / 127)");
      if (range > 0.f) claims[size_t(group[size_t(input)])].push_back({range, int(n), attr});
    };
    if (node.op == OpType::SparseConv && q.precision == Precision::Int8) {
      claim(node.inputs[0], q.input_dynamic_range, "input_dynamic_range", true);
    } else if (node.op == OpType::Add && q.precision == Precision::Int8) {
      claim(node.inputs[0], q.input0_dynamic_range, "input0_dynamic_range", true);
      claim(node.inputs[1], q.input1_dynamic_range, "input1_dynamic_range", true);
    } else if (node.op == OpType::ScatterDense) {
      claim(node.inputs[0], q.input_dynamic_range, "input_dynamic_range", false);
    }
  }

  for (size_t v = 0; v < nv; ++v) {
    if (group[v] != int(v) || p.values[v].storage != Storage::Int8) continue;
    const int producer = g.values[v].producer;
    const std::vector<RangeClaim>& c = claims[v];
    SCN_CHECK(!c.empty(), prefix(producer), ": output_precision is int8 but no reader of its output '",
              g.values[v].name,
              "' (or of a Relu of it) gives the range to quantize it with: an int8 SparseConvolution's "
              "input_dynamic_range, an int8 Add's input0/1_dynamic_range or a ScatterDense's input_dynamic_range");
    for (const RangeClaim& other : c)
      SCN_CHECK(other.range == c[0].range, prefix(producer), ": output_precision is int8, but the readers of '",
                g.values[v].name, "' quantize it with different ranges: ", claim_text(g, c[0]), ", ",
                claim_text(g, other), "; a value stored as int8 has one scale, so they must agree");
    p.values[v].range = c[0].range;
  }
  for (size_t v = 0; v < nv; ++v) p.values[v].range = p.values[size_t(group[v])].range;

  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    if (node.op == OpType::SparseConv && node.quant.precision == Precision::Int8)
      p.convs[n] = plan_conv(node.conv, node.quant, node.quant.input_dynamic_range, prefix(int(n)));
  }
  return p;
}

}  // namespace scn::int8
