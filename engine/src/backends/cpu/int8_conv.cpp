#include "backends/cpu/int8_conv.h"

#include <algorithm>
#include <vector>

#include "backends/cpu/sparse_conv.h"
#include "backends/cpu/thread_pool.h"

namespace scn::cpu {

namespace {

// Row kernel: int8 x int8 products summed in int32 (exact, so the order is irrelevant).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx2", "default")))
#endif
void int8_rows(const int8_t* __restrict x, const int32_t* __restrict out_in, const int8_t* __restrict w, int cin,
               int cout, int K, int64_t begin, int64_t end, int32_t* __restrict acc_out) {
  for (int64_t o = begin; o < end; ++o) {
    int32_t* __restrict acc = acc_out + o * cout;
    for (int c = 0; c < cout; ++c) acc[c] = 0;
    const int32_t* row = out_in + o * K;
    for (int r = 0; r < K; ++r) {
      const int32_t i = row[r];
      if (i < 0) continue;
      const int8_t* xi = x + int64_t(i) * cin;
      const int8_t* wr = w + int64_t(r) * cin * cout;
      for (int ci = 0; ci < cin; ++ci) {
        const int32_t xv = xi[ci];
        if (xv == 0) continue;
        const int8_t* wc = wr + int64_t(ci) * cout;
        for (int c = 0; c < cout; ++c) acc[c] += xv * int32_t(wc[c]);
      }
    }
  }
}

}  // namespace

float int8_epilogue(int32_t acc, float multiplier, float bias, Activation act, float alpha) {
  const float scaled = float(acc) * multiplier;  // float(acc): round to nearest even beyond 2^24
  const float y = scaled + bias;
  return apply_activation(y, act, alpha);
}

void int8_conv_accumulate(const int8_t* xq, const KernelMap& map, const int8::ConvPlan& p, int32_t* acc,
                          int threads) {
  parallel_for(map.num_out, threads, [&](int64_t b, int64_t e) {
    int8_rows(xq, map.out_in.data(), p.weight.data(), p.cin, p.cout, map.kernel_volume, b, e, acc);
  });
}

void int8_conv_forward(const int8_t* xq, const KernelMap& map, const int8::ConvPlan& p, float* y, int threads) {
  parallel_for(map.num_out, threads, [&](int64_t b, int64_t e) {
    constexpr int64_t kRows = 64;  // accumulate a block of rows, then run their epilogue
    std::vector<int32_t> acc(size_t(kRows * p.cout));
    for (int64_t r0 = b; r0 < e; r0 += kRows) {
      const int64_t r1 = std::min(e, r0 + kRows);
      int8_rows(xq, map.out_in.data() + r0 * map.kernel_volume, p.weight.data(), p.cin, p.cout,
                map.kernel_volume, 0, r1 - r0, acc.data());
      for (int64_t o = r0; o < r1; ++o)
        for (int c = 0; c < p.cout; ++c)
          y[o * p.cout + c] = int8_epilogue(acc[size_t((o - r0) * p.cout + c)], p.multiplier[size_t(c)],
                                            p.bias[size_t(c)], p.activation, p.alpha);
    }
  });
}

}  // namespace scn::cpu
