// Helpers shared by engine tests: random sparse inputs, seeded weights, a brute-force dense
// reference of spconv's convolution that shares no code with the backends.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "core/half.h"
#include "scn/engine.h"

namespace scn::test {

/// Random distinct sites (b, i0, i1, i2) in the grid, `n` of them, and random fp16 features that
/// are never all zero.
struct SparseInput {
  Tensor features;  // [n, c] float16
  Tensor indices;   // [n, 4] int32
  Int3 grid;
  int batch = 1;
};

/// CPU-backend build options at a precision, with few threads (tests run beside each other).
inline BuildOptions cpu_build_options(Precision precision, int threads = 2) {
  BuildOptions o;
  o.backend = Backend::Cpu;
  o.precision = precision;
  o.num_threads = threads;
  return o;
}

inline SparseInput random_input(int64_t n, int c, Int3 grid, int batch, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::set<std::tuple<int, int, int, int>> used;
  const int64_t sites = int64_t(batch) * grid[0] * grid[1] * grid[2];
  if (n > sites)  // distinct sites only: more would never finish
    throw std::invalid_argument("random_input: " + std::to_string(n) + " voxels do not fit in " +
                                std::to_string(sites) + " sites");
  SparseInput in;
  in.grid = grid;
  in.batch = batch;
  in.features = Tensor::empty({n, c}, DType::Float16);
  in.indices = Tensor::empty({n, 4}, DType::Int32);
  int32_t* idx = in.indices.ptr<int32_t>();
  for (int64_t i = 0; i < n;) {
    const int b = int(rng() % uint64_t(batch));
    const int a0 = int(rng() % uint64_t(grid[0])), a1 = int(rng() % uint64_t(grid[1])),
              a2 = int(rng() % uint64_t(grid[2]));
    if (!used.insert({b, a0, a1, a2}).second) continue;
    idx[4 * i] = b;
    idx[4 * i + 1] = a0;
    idx[4 * i + 2] = a1;
    idx[4 * i + 3] = a2;
    ++i;
  }
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < n * c; ++i) in.features.ptr<uint16_t>()[i] = float_to_half(u(rng) * 2.f + 0.05f);
  return in;
}

/// A conv with seeded fp16 weights of a scale that keeps activations O(1).
inline ConvAttrs random_conv(int cin, int cout, Int3 k, Int3 stride, Int3 pad, Int3 dil, bool subm, uint64_t seed,
                             Activation act = Activation::None, bool bias = true) {
  ConvAttrs c;
  c.kernel_size = k;
  c.stride = stride;
  c.padding = pad;
  c.dilation = dil;
  c.subm = subm;
  c.activation = act;
  const int64_t kv = int64_t(k[0]) * k[1] * k[2];
  c.weight = Tensor::empty({cout, k[0], k[1], k[2], cin}, DType::Float16);
  std::mt19937_64 rng(seed);
  const float scale = std::sqrt(2.f / float(cin * kv));
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int64_t i = 0; i < c.weight.numel(); ++i) c.weight.ptr<uint16_t>()[i] = float_to_half(nd(rng) * scale);
  if (bias) {
    c.bias = Tensor::empty({cout}, DType::Float16);
    for (int64_t i = 0; i < cout; ++i) c.bias.ptr<uint16_t>()[i] = float_to_half(nd(rng) * 0.1f);
  }
  return c;
}

inline float tensor_value(const Tensor& t, int64_t i) {
  return t.dtype() == DType::Float16 ? half_to_float(t.ptr<uint16_t>()[i]) : t.ptr<float>()[i];
}

/// Dense reference of a regular or submanifold conv (double precision), evaluated at `out_sites`
/// ([M, 4]): out[o] = sum_r W[r] x[o*st - p + r*dil]; for subm only active input sites count and
/// padding is (K/2)*dil.
inline std::vector<double> reference_conv(const Tensor& feats, const Tensor& idx, Int3 grid, const ConvAttrs& c,
                                          const std::vector<int32_t>& out_sites) {
  const int cin = int(c.weight.dim(4)), cout = int(c.weight.dim(0));
  std::map<std::tuple<int, int, int, int>, int64_t> at;
  for (int64_t i = 0; i < idx.dim(0); ++i) {
    const int32_t* r = idx.ptr<int32_t>() + 4 * i;
    at[{r[0], r[1], r[2], r[3]}] = i;
  }
  Int3 pad = c.padding, st = c.stride;
  if (c.subm)
    for (int d = 0; d < 3; ++d) {
      pad[d] = (c.kernel_size[d] / 2) * c.dilation[d];
      st[d] = 1;
    }
  const int64_t m = int64_t(out_sites.size() / 4);
  std::vector<double> out(size_t(m * cout), 0.0);
  for (int64_t o = 0; o < m; ++o) {
    const int32_t* s = &out_sites[size_t(4 * o)];
    for (int co = 0; co < cout; ++co) out[size_t(o * cout + co)] = c.bias.defined() ? tensor_value(c.bias, co) : 0.0;
    for (int r0 = 0; r0 < c.kernel_size[0]; ++r0)
      for (int r1 = 0; r1 < c.kernel_size[1]; ++r1)
        for (int r2 = 0; r2 < c.kernel_size[2]; ++r2) {
          const int n0 = s[1] * st[0] - pad[0] + r0 * c.dilation[0];
          const int n1 = s[2] * st[1] - pad[1] + r1 * c.dilation[1];
          const int n2 = s[3] * st[2] - pad[2] + r2 * c.dilation[2];
          const auto it = at.find({s[0], n0, n1, n2});
          if (it == at.end()) continue;
          const int64_t r = (int64_t(r0) * c.kernel_size[1] + r1) * c.kernel_size[2] + r2;
          for (int co = 0; co < cout; ++co) {
            double acc = 0.0;
            for (int ci = 0; ci < cin; ++ci)
              acc += double(tensor_value(c.weight, (int64_t(co) * (c.weight.numel() / cout / cin) + r) * cin + ci)) *
                     double(tensor_value(feats, it->second * cin + ci));
            out[size_t(o * cout + co)] += acc;
          }
        }
  }
  if (c.activation == Activation::ReLU)
    for (auto& v : out) v = v > 0 ? v : 0;
  return out;
}

/// rel-L2 = ||a - b|| / ||b||.
template <typename A, typename B>
double rel_l2(const A& a, const B& b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  return std::sqrt(num / (den > 0 ? den : 1e-300));
}

}  // namespace scn::test
