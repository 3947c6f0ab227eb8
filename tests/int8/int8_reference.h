// An independent float64 model of docs/int8.md for the INT8 tests: it re-derives the storage of
// every value from the attributes, and evaluates each node from given input values with brute-force
// site lookups (no kernel maps, no code shared with the backend). Quantization is done in double:
// q = clamp(rne(x * 127 / R), -127, 127); the engine's float32 evaluation may differ from it only by
// the final rounding (one int8 step or one fp16 ulp), which the tests count.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/half.h"
#include "scn/graph.h"

namespace scn::test::int8ref {

inline int quantize(double x, double range) {
  if (std::isnan(x)) return 0;
  const double v = x * 127.0 / range;
  if (v >= 127.0) return 127;
  if (v <= -127.0) return -127;
  return int(std::nearbyint(v));  // ties to even
}

inline double half(double x) { return half_to_float(float_to_half(float(x))); }

inline double wvalue(const Tensor& t, int64_t i) {
  return t.dtype() == DType::Float16 ? half_to_float(t.ptr<uint16_t>()[i]) : t.ptr<float>()[i];
}

/// A value as a node stores it: int8 storage holds q, fp16 storage the fp16 values.
struct Stored {
  std::vector<double> v;
  std::vector<int32_t> coords;  ///< sparse: [rows, 4]
  int64_t rows = 0, channels = 0;
  bool int8 = false;
  double range = -1;
  bool sparse = true;
};

/// Per value: stored as int8? with which range? (docs/int8.md "Where a value is int8").
struct StoragePlan {
  std::vector<bool> int8;
  std::vector<double> range;
};

inline StoragePlan storage_plan(const Graph& g) {
  StoragePlan p;
  p.int8.assign(g.values.size(), false);
  p.range.assign(g.values.size(), -1.0);
  std::vector<int> root(g.values.size());
  for (size_t v = 0; v < root.size(); ++v) root[v] = int(v);
  for (const Node& n : g.nodes) {
    if (n.op == OpType::SparseConv || n.op == OpType::Add)
      p.int8[size_t(n.output)] = n.quant.output_precision == Precision::Int8;
    if (n.op == OpType::Relu) {
      p.int8[size_t(n.output)] = p.int8[size_t(n.inputs[0])];
      root[size_t(n.output)] = root[size_t(n.inputs[0])];
    }
  }
  // the first int8 reader's range of each root
  std::vector<double> r(g.values.size(), -1.0);
  for (const Node& n : g.nodes) {
    auto claim = [&](int v, float range) {
      if (range > 0 && r[size_t(root[size_t(v)])] < 0) r[size_t(root[size_t(v)])] = range;
    };
    if (n.op == OpType::SparseConv && n.quant.precision == Precision::Int8) claim(n.inputs[0], n.quant.input_dynamic_range);
    if (n.op == OpType::Add && n.quant.precision == Precision::Int8) {
      claim(n.inputs[0], n.quant.input0_dynamic_range);
      claim(n.inputs[1], n.quant.input1_dynamic_range);
    }
    if (n.op == OpType::ScatterDense) claim(n.inputs[0], n.quant.input_dynamic_range);
  }
  for (size_t v = 0; v < g.values.size(); ++v)
    if (p.int8[v]) p.range[v] = r[size_t(root[v])];
  return p;
}

/// fp16 view of a stored value: int8 -> half(q * R / 127).
inline std::vector<double> fp16_view(const Stored& s) {
  if (!s.int8) return s.v;
  std::vector<double> out(s.v.size());
  for (size_t i = 0; i < s.v.size(); ++i) out[i] = half(s.v[i] * (s.range / 127.0));
  return out;
}

/// int8 view with range R: int8 storage as is (its range must be R), fp16 quantized.
inline std::vector<double> int8_view(const Stored& s, double range) {
  if (s.int8) return s.v;
  std::vector<double> out(s.v.size());
  for (size_t i = 0; i < s.v.size(); ++i) out[i] = quantize(s.v[i], range);
  return out;
}

inline double activation(double y, Activation a, double alpha) {
  switch (a) {
    case Activation::None: return y;
    case Activation::ReLU: return y > 0 ? y : 0;
    case Activation::LeakyReLU: return y > 0 ? y : y * alpha;
    case Activation::Sigmoid: return 1.0 / (1.0 + std::exp(-y));
  }
  return y;
}

/// Pre-storage results y (double) of a SparseConvolution at the output sites `out_coords`.
inline std::vector<double> conv_y(const Node& node, const Stored& in, const std::vector<int32_t>& out_coords) {
  const ConvAttrs& c = node.conv;
  const int cin = c.in_channels, cout = c.out_channels;
  const int K = c.kernel_size[0] * c.kernel_size[1] * c.kernel_size[2];
  std::map<std::tuple<int, int, int, int>, int64_t> at;
  for (int64_t i = 0; i < in.rows; ++i) {
    const int32_t* r = &in.coords[size_t(4 * i)];
    at[{r[0], r[1], r[2], r[3]}] = i;
  }
  Int3 pad = c.padding, st = c.stride;
  if (c.subm)
    for (int d = 0; d < 3; ++d) {
      pad[d] = (c.kernel_size[d] / 2) * c.dilation[d];
      st[d] = 1;
    }
  const bool int8 = node.quant.precision == Precision::Int8;
  const double rx = node.quant.input_dynamic_range;
  std::vector<double> x = int8 ? int8_view(in, rx) : fp16_view(in);
  // weights: fp16 values, or q_w with the per-channel ranges (given, else absmax; 0 -> 1)
  std::vector<double> rw(size_t(cout), 0.0);
  if (int8) {
    if (!node.quant.weight_dynamic_ranges.empty()) {
      for (int co = 0; co < cout; ++co) rw[size_t(co)] = node.quant.weight_dynamic_ranges[size_t(co)];
    } else {
      for (int co = 0; co < cout; ++co) {
        for (int64_t i = 0; i < int64_t(K) * cin; ++i)
          rw[size_t(co)] = std::max(rw[size_t(co)], std::fabs(wvalue(c.weight, int64_t(co) * K * cin + i)));
        if (rw[size_t(co)] == 0) rw[size_t(co)] = 1;
      }
    }
  }
  auto w = [&](int co, int64_t r, int ci) {
    const double v = wvalue(c.weight, (int64_t(co) * K + r) * cin + ci);
    return int8 ? double(quantize(v, rw[size_t(co)])) : v;
  };
  const int64_t m = int64_t(out_coords.size() / 4);
  std::vector<double> y(size_t(m * cout), 0.0);
  for (int64_t o = 0; o < m; ++o) {
    const int32_t* s = &out_coords[size_t(4 * o)];
    std::vector<double> acc(size_t(cout), 0.0);  // exact: integer sums below 2^53 in int8 mode
    for (int r0 = 0; r0 < c.kernel_size[0]; ++r0)
      for (int r1 = 0; r1 < c.kernel_size[1]; ++r1)
        for (int r2 = 0; r2 < c.kernel_size[2]; ++r2) {
          const auto it = at.find({s[0], s[1] * st[0] - pad[0] + r0 * c.dilation[0],
                                   s[2] * st[1] - pad[1] + r1 * c.dilation[1], s[3] * st[2] - pad[2] + r2 * c.dilation[2]});
          if (it == at.end()) continue;
          const int64_t r = (int64_t(r0) * c.kernel_size[1] + r1) * c.kernel_size[2] + r2;
          for (int co = 0; co < cout; ++co)
            for (int ci = 0; ci < cin; ++ci) acc[size_t(co)] += w(co, r, ci) * x[size_t(it->second * cin + ci)];
        }
    for (int co = 0; co < cout; ++co) {
      const double b = c.bias.defined() ? wvalue(c.bias, co) : 0.0;
      const double v = int8 ? acc[size_t(co)] * (rx / 127.0) * (rw[size_t(co)] / 127.0) + b : acc[size_t(co)] + b;
      y[size_t(o * cout + co)] = activation(v, c.activation, c.activation_alpha);
    }
  }
  return y;
}

/// Stores y for value v by the plan: q = quantize(y, R) or half(y).
inline std::vector<double> store(const std::vector<double>& y, bool int8, double range) {
  std::vector<double> out(y.size());
  for (size_t i = 0; i < y.size(); ++i) out[i] = int8 ? double(quantize(y[i], range)) : half(y[i]);
  return out;
}

/// Evaluates node n from `in(value)` (its inputs as stored); `out_coords` gives the output sites
/// (sparse) and `batch` the bound batch size (dense). Returns the output as stored.
inline Stored eval_node(const Graph& g, int n, const StoragePlan& plan, const std::function<const Stored&(int)>& in,
                        const std::vector<int32_t>& out_coords, int batch = 1) {
  const Node& node = g.nodes[size_t(n)];
  const int out = node.output;
  Stored s;
  s.int8 = plan.int8[size_t(out)];
  s.range = plan.range[size_t(out)];
  s.coords = out_coords;
  s.rows = int64_t(out_coords.size() / 4);
  s.channels = g.values[size_t(out)].channels;
  switch (node.op) {
    case OpType::SparseConv:
      s.v = store(conv_y(node, in(node.inputs[0]), out_coords), s.int8, s.range);
      break;
    case OpType::Add: {
      const Stored& a = in(node.inputs[0]);
      const Stored& b = in(node.inputs[1]);
      std::vector<double> y(a.v.size());
      if (node.quant.precision == Precision::Int8) {
        const double r0 = node.quant.input0_dynamic_range, r1 = node.quant.input1_dynamic_range;
        const std::vector<double> qa = int8_view(a, r0), qb = int8_view(b, r1);
        for (size_t i = 0; i < y.size(); ++i) y[i] = qa[i] * (r0 / 127.0) + qb[i] * (r1 / 127.0);
      } else {
        const std::vector<double> fa = fp16_view(a), fb = fp16_view(b);
        for (size_t i = 0; i < y.size(); ++i) y[i] = fa[i] + fb[i];
      }
      s.v = store(y, s.int8, s.range);
      break;
    }
    case OpType::Relu: {
      const Stored& a = in(node.inputs[0]);
      s.v = a.v;
      for (double& v : s.v) v = v > 0 ? v : 0;
      break;
    }
    case OpType::Concat: {
      s.v.assign(size_t(s.rows * s.channels), 0.0);
      int64_t c0 = 0;
      for (int v : node.inputs) {
        const Stored& a = in(v);
        const std::vector<double> f = fp16_view(a);
        for (int64_t i = 0; i < s.rows; ++i)
          for (int64_t c = 0; c < a.channels; ++c) s.v[size_t(i * s.channels + c0 + c)] = f[size_t(i * a.channels + c)];
        c0 += a.channels;
      }
      break;
    }
    case OpType::ScatterDense: {
      const Stored& a = in(node.inputs[0]);
      const std::vector<double> f = fp16_view(a);
      const auto& os = node.dense.output_shape;
      const int64_t C = os[1], S = os[2] * os[3] * os[4];
      s.sparse = false;
      s.coords.clear();
      s.rows = batch * C * S;
      s.channels = 1;
      s.v.assign(size_t(s.rows), 0.0);
      for (int64_t r = 0; r < a.rows; ++r) {
        const int32_t* c = &a.coords[size_t(4 * r)];
        const int64_t site = (int64_t(c[1]) * os[3] + c[2]) * os[4] + c[3];
        for (int64_t ch = 0; ch < C; ++ch) s.v[size_t((int64_t(c[0]) * C + ch) * S + site)] = f[size_t(r * C + ch)];
      }
      break;
    }
    case OpType::Reshape: {
      s = in(node.inputs[0]);
      break;
    }
    default:
      throw std::runtime_error("int8ref: op not modelled");
  }
  return s;
}

}  // namespace scn::test::int8ref
