// Elementwise kernels of INT8 engines (docs/int8.md): conversions at FP16 <-> INT8 boundaries,
// the Add node when it is not fused into a conv, and ReLU on int8 rows. The arithmetic is the
// CPU oracle's, operation for operation (quantize8 / round_half from q_epilogue.cuh).
#include "backends/cuda/common.cuh"
#include "backends/cuda/q_epilogue.cuh"

namespace scn::cuda {

namespace {

/// Element (r, j) of an operand as its stored number: the integer q (int8) or the fp16 value.
__device__ __forceinline__ float load_stored(const QOperand& x, int64_t r, int j) {
  if (x.q) return float(static_cast<const int8_t*>(x.p)[r * x.stride + j]);
  return __half2float(static_cast<const __half*>(x.p)[r * x.stride + j]);
}

__device__ __forceinline__ void store(void* y, int64_t i, bool q, float v) {
  if (q)
    static_cast<int8_t*>(y)[i] = int8_t(int(v));
  else
    static_cast<__half*>(y)[i] = __float2half_rn(v);
}

__global__ void convert_kernel(const QOperand x, void* y, int y_stride, bool y_q, float y_inv, int c, const int* count,
                               int64_t cap) {
  const int64_t total = rows_of(count, cap) * y_stride;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = t / y_stride;
    const int j = int(t - r * y_stride);
    float v = 0.f;
    if (j < c) {
      const float s = load_stored(x, r, j);
      // fp16 -> int8: quantize the fp16 value; int8 -> fp16: half(float(q) * s)
      v = y_q ? (x.q ? s : float(quantize8(s, y_inv))) : (x.q ? round_half(__fmul_rn(s, x.s)) : s);
    }
    store(y, t, y_q, v);
  }
}

__global__ void qadd_kernel(const QAddArgs a, const int* count, int64_t cap) {
  const int64_t total = rows_of(count, cap) * a.y_stride;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = t / a.y_stride;
    const int j = int(t - r * a.y_stride);
    float o = 0.f;
    if (j < a.c) {
      const float va = load_stored(a.a, r, j), vb = load_stored(a.b, r, j);
      float y;
      if (a.add_q) {
        const float qa = a.a.q ? va : float(quantize8(va, a.inv_a));
        const float qb = a.b.q ? vb : float(quantize8(vb, a.inv_b));
        y = __fadd_rn(__fmul_rn(qa, a.sa), __fmul_rn(qb, a.sb));
      } else {
        const float fa = a.a.q ? round_half(__fmul_rn(va, a.a.s)) : va;
        const float fb = a.b.q ? round_half(__fmul_rn(vb, a.b.s)) : vb;
        y = __fadd_rn(fa, fb);
      }
      o = a.y_q ? float(quantize8(y, a.y_inv)) : round_half(y);
    }
    store(a.y, t, a.y_q, o);
  }
}

__global__ void relu_i8_kernel(const int8_t* __restrict__ x, int8_t* __restrict__ y, int stride, const int* count,
                               int64_t cap) {
  const int64_t total = rows_of(count, cap) * stride;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x)
    y[t] = x[t] > 0 ? x[t] : int8_t(0);
}

}  // namespace

void launch_convert(QOperand x, void* y, int y_stride, bool y_q, float y_inv, int c, const int* count, int64_t cap,
                    int sm, cudaStream_t st) {
  convert_kernel<<<grid_for(cap * y_stride, 256, sm), 256, 0, st>>>(x, y, y_stride, y_q, y_inv, c, count, cap);
  SCN_CUDA_LAUNCHED();
}

void launch_qadd(const QAddArgs& a, const int* count, int64_t cap, int sm, cudaStream_t st) {
  qadd_kernel<<<grid_for(cap * a.y_stride, 256, sm), 256, 0, st>>>(a, count, cap);
  SCN_CUDA_LAUNCHED();
}

void launch_relu_i8(const void* x, void* y, int stride, const int* count, int64_t cap, int sm, cudaStream_t st) {
  relu_i8_kernel<<<grid_for(cap * stride, 256, sm), 256, 0, st>>>(static_cast<const int8_t*>(x),
                                                                  static_cast<int8_t*>(y), stride, count, cap);
  SCN_CUDA_LAUNCHED();
}

}  // namespace scn::cuda
