#include "backends/cpu/sparse_conv.h"

#include <cmath>
#include <cstring>

#include "backends/cpu/thread_pool.h"
#include "core/half.h"

namespace scn::cpu {

namespace {
float to_float(const Tensor& t, int64_t i) {
  return t.dtype() == DType::Float16 ? half_to_float(t.ptr<uint16_t>()[i]) : t.ptr<float>()[i];
}

// Row kernel: the hot loop. Compiled for AVX2 and baseline x86-64 (function multi-versioning);
// no FMA contraction (ISO C++ mode), so every version rounds identically.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx2", "default")))
#endif
void conv_rows(const float* __restrict x, const int32_t* __restrict out_in, const float* __restrict w,
               const float* __restrict bias, int cin, int cout, int K, int64_t begin, int64_t end,
               float* __restrict acc, float* __restrict y) {
  for (int64_t o = begin; o < end; ++o) {
    for (int c = 0; c < cout; ++c) acc[c] = bias[c];
    const int32_t* row = out_in + o * K;
    for (int r = 0; r < K; ++r) {
      const int32_t i = row[r];
      if (i < 0) continue;
      const float* xi = x + int64_t(i) * cin;
      const float* wr = w + int64_t(r) * cin * cout;
      for (int ci = 0; ci < cin; ++ci) {
        const float xv = xi[ci];
        if (xv == 0.f) continue;  // adding 0*w changes nothing (weights are finite)
        const float* wc = wr + int64_t(ci) * cout;
        for (int c = 0; c < cout; ++c) acc[c] += xv * wc[c];
      }
    }
    std::memcpy(y + o * cout, acc, sizeof(float) * size_t(cout));
  }
}
}  // namespace

float apply_activation(float v, Activation a, float alpha) {
  switch (a) {
    case Activation::None: return v;
    case Activation::ReLU: return v > 0.f ? v : 0.f;
    case Activation::Sigmoid: return 1.f / (1.f + std::exp(-v));
    case Activation::LeakyReLU: return v > 0.f ? v : v * alpha;
  }
  return v;
}

PackedConv pack_conv(const ConvAttrs& c) {
  PackedConv p;
  p.cin = c.in_channels;
  p.cout = c.out_channels;
  p.kernel_volume = c.kernel_size[0] * c.kernel_size[1] * c.kernel_size[2];
  p.activation = c.activation;
  p.alpha = c.activation_alpha;
  p.weight.resize(size_t(p.kernel_volume) * size_t(p.cin) * size_t(p.cout));
  // source [Cout][K][Cin] -> [K][Cin][Cout]
  for (int co = 0; co < p.cout; ++co)
    for (int r = 0; r < p.kernel_volume; ++r)
      for (int ci = 0; ci < p.cin; ++ci)
        p.weight[(size_t(r) * size_t(p.cin) + size_t(ci)) * size_t(p.cout) + size_t(co)] =
            to_float(c.weight, (int64_t(co) * p.kernel_volume + r) * p.cin + ci);
  p.bias.assign(size_t(p.cout), 0.f);
  if (c.bias.defined())
    for (int co = 0; co < p.cout; ++co) p.bias[size_t(co)] = to_float(c.bias, co);
  return p;
}

void sparse_conv_forward(const float* x, const KernelMap& map, const PackedConv& pc, float* y, int threads) {
  parallel_for(map.num_out, threads, [&](int64_t b, int64_t e) {
    std::vector<float> acc(static_cast<size_t>(pc.cout));
    conv_rows(x, map.out_in.data(), pc.weight.data(), pc.bias.data(), pc.cin, pc.cout, map.kernel_volume, b, e,
              acc.data(), y);
    if (pc.activation != Activation::None)
      for (int64_t i = b * pc.cout; i < e * pc.cout; ++i) y[i] = apply_activation(y[i], pc.activation, pc.alpha);
  });
}

}  // namespace scn::cpu
