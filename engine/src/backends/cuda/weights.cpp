// Weight packing and upload: fp16 weights [K][cout_w][cin_p] (cout_w = cout rounded up to 128, zero
// padded), or pairs of int8 weights from int8::plan (mode 2) with the per-channel multipliers; fp32
// biases; TMA configs also get the weights re-tiled in the shared-memory layout (igemm_tile_weights),
// one copy per TMA config a size bucket runs (tile_buckets.cpp).
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_engine.h"
#include "backends/cuda/tile_choice.h"
#include "core/half.h"

namespace scn::cuda {

namespace {

float tensor_float(const Tensor& t, int64_t i) {
  return t.dtype() == DType::Float16 ? half_to_float(t.ptr<uint16_t>()[i]) : t.ptr<float>()[i];
}

}  // namespace

/// [K][cout_w][cin_p] in 16-bit units: fp16 weights, or pairs of int8 weights (mode 2). Packed on
/// the host from the model whenever needed (at build, and when a size bucket's tuning needs the plain
/// weights or a re-tiled copy again after they were dropped): the bytes are the same every time.
std::vector<uint16_t> CudaEngine::pack_weights(const ConvPlan& c) const {
  const ConvAttrs& a = graph_->nodes[size_t(c.node)].conv;
  std::vector<uint16_t> w(size_t(c.K) * size_t(c.cout_w) * size_t(c.cin_p), 0);
  if (c.mode == 2) {
    // int8::plan's q_w [K][Cin][Cout] -> rows of 2 * cin_p int8 per output channel
    const int8::ConvPlan& qp = plan_->int8_plan.convs[size_t(c.node)];
    auto* w8 = reinterpret_cast<int8_t*>(w.data());
    const size_t row = size_t(c.cin_p) * 2;
    for (int k = 0; k < c.K; ++k)
      for (int ci = 0; ci < c.cin; ++ci)
        for (int co = 0; co < c.cout; ++co)
          w8[(size_t(k) * size_t(c.cout_w) + size_t(co)) * row + size_t(ci)] =
              qp.weight[(size_t(k) * size_t(c.cin) + size_t(ci)) * size_t(c.cout) + size_t(co)];
  } else {
    for (int co = 0; co < c.cout; ++co)
      for (int k = 0; k < c.K; ++k)
        for (int ci = 0; ci < c.cin; ++ci) {
          const float v = tensor_float(a.weight, (int64_t(co) * c.K + k) * c.cin + ci);
          w[(size_t(k) * size_t(c.cout_w) + size_t(co)) * size_t(c.cin_p) + size_t(ci)] = float_to_half(v);
        }
  }
  return w;
}

void CudaEngine::upload_weights(ConvPlan& c) {
  const ConvAttrs& a = graph_->nodes[size_t(c.node)].conv;
  const std::vector<uint16_t> w = pack_weights(c);
  if (c.mode == 2) {
    const int8::ConvPlan& qp = plan_->int8_plan.convs[size_t(c.node)];
    std::vector<float> m(size_t(c.cout_w), 0.f);
    for (int co = 0; co < c.cout; ++co) m[size_t(co)] = qp.multiplier[size_t(co)];
    c.mult.alloc(m.size() * 4);
    SCN_CUDA_CHECK(cudaMemcpy(c.mult.get(), m.data(), m.size() * 4, cudaMemcpyHostToDevice));
  }
  std::vector<float> b(size_t(c.cout_w), 0.f);
  if (a.bias.defined())
    for (int co = 0; co < c.cout; ++co) b[size_t(co)] = tensor_float(a.bias, co);
  c.w.alloc(w.size() * 2);
  c.bias.alloc(b.size() * 4);
  SCN_CUDA_CHECK(cudaMemcpy(c.w.get(), w.data(), w.size() * 2, cudaMemcpyHostToDevice));
  if (c.cfg >= 0 && igemm_config(c.cfg).tma) c.w_tiled[tiled_layout(c.cfg)] = upload_tiled(c, c.cfg, w);
  SCN_CUDA_CHECK(cudaMemcpy(c.bias.get(), b.data(), b.size() * 4, cudaMemcpyHostToDevice));
  if (c.mode != 0) c.qargs.alloc(sizeof(QEpilogue));  // filled by place_arena (it holds arena addresses)
}

DevMem CudaEngine::upload_tiled(const ConvPlan& c, int id, const std::vector<uint16_t>& w) const {
  const std::vector<uint16_t> t = igemm_tile_weights(id, w, c.K, c.cout_w, c.cin_p, c.cout_p);
  DevMem d;
  d.alloc(t.size() * 2);
  SCN_CUDA_CHECK(cudaMemcpy(d.get(), t.data(), t.size() * 2, cudaMemcpyHostToDevice));
  return d;
}

void CudaEngine::ensure_plain_weights(ConvPlan& c) {
  if (c.w.get()) return;
  const std::vector<uint16_t> w = pack_weights(c);
  c.w.alloc(w.size() * 2);
  SCN_CUDA_CHECK(cudaMemcpy(c.w.get(), w.data(), w.size() * 2, cudaMemcpyHostToDevice));
}

}  // namespace scn::cuda
