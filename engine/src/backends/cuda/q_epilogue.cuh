// The quantization-aware epilogue of INT8-engine convs (kernel modes kF16Q and kI8, docs/int8.md),
// shared by the implicit-GEMM tiles and osplit: the CPU oracle's operations, one for one.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "backends/cuda/kernels.h"

namespace scn::cuda {

/// Kernel modes: fp16 operands with the fp16 epilogue; fp16 operands with the quantization-aware
/// epilogue; int8 operands (int32 accumulation) with the quantization-aware epilogue.
enum Mode : int { kF16 = 0, kF16Q = 1, kI8 = 2 };

/// The conv's value before its activation (docs/int8.md): with int8 operands float(acc) * mult + bias
/// in two float32 roundings (no FMA); with fp16 operands acc + bias (`mult` unused).
__device__ __forceinline__ float q_conv_value(int acc, float mult, float bias) {
  return __fadd_rn(__fmul_rn(__int2float_rn(acc), mult), bias);
}
__device__ __forceinline__ float q_conv_value(float acc, float /*mult*/, float bias) { return acc + bias; }

/// docs/int8.md quantize(): one float32 product, round half to even (NaN -> 0), clamp to +-127.
__device__ __forceinline__ int quantize8(float x, float inv) {
  const int q = __float2int_rn(__fmul_rn(x, inv));
  return q > 127 ? 127 : (q < -127 ? -127 : q);
}
__device__ __forceinline__ float round_half(float x) { return __half2float(__float2half_rn(x)); }

/// The stored value of one output element of an INT8-engine conv (docs/int8.md): `v` is the
/// conv's float result (after its activation), `r` the residual element as stored (the integer q
/// when q.res_q, else the fp16 value). Returns the integer q (q.y_q) or the fp16 value.
__device__ __forceinline__ float q_epilogue(float v, bool has_res, float r, bool relu_after, const QEpilogue& q) {
  float o;
  if (!has_res) {
    o = q.y_q ? float(quantize8(v, q.y_inv)) : round_half(v);
  } else {
    float y;
    if (q.add_q) {  // int8 Add: both operands on their int8 grids, two products, one sum
      const float qa = q.conv_q ? float(quantize8(v, q.conv_inv)) : float(quantize8(round_half(v), q.add_inv_a));
      const float qb = q.res_q ? r : float(quantize8(r, q.add_inv_b));
      y = __fadd_rn(__fmul_rn(qa, q.add_sa), __fmul_rn(qb, q.add_sb));
    } else {  // fp16 Add of the operands as fp16 (int8 storage dequantized to fp16)
      const float fa = q.conv_q ? round_half(__fmul_rn(float(quantize8(v, q.conv_inv)), q.conv_s)) : round_half(v);
      const float fb = q.res_q ? round_half(__fmul_rn(r, q.res_s)) : r;
      y = __fadd_rn(fa, fb);
    }
    o = q.y_q ? float(quantize8(y, q.y_inv)) : round_half(y);
  }
  if (relu_after) o = o > 0.f ? o : 0.f;
  return o;
}

/// The store forms of q_store8, stated once: the epilogue flags a form fixes (form 0 fixes none; 1: y int8,
/// no second output, no residual; 2: the same with the int8 Add of the conv's int8 value and an int8 residual)
/// applied to `qe`, and whether the form reads a residual.
template <int kForm>
__device__ __forceinline__ QEpilogue q_store_form_flags(QEpilogue qe) {
  if constexpr (kForm != 0) {
    qe.y_q = true;
    qe.y2 = nullptr;
  }
  if constexpr (kForm == 2) {
    qe.add_q = true;
    qe.conv_q = true;
    qe.res_q = true;
  }
  return qe;
}
template <int kForm>
__device__ __forceinline__ bool q_store_form_residual(const ConvArgs& a) {
  return kForm == 0 ? a.residual != nullptr : kForm == 2;
}

/// Stores columns [col, col + 8) of output row `row` of an INT8-engine conv: `v` holds the conv's float
/// results after its activation (read only where col + q < a.cout; other columns are written as 0),
/// then the residual Add, the ReLU after it, y as int8 or fp16, and the optional second output y2
/// (quantize(fp16 value), for an int8 reader). Columns at or beyond y's stride are written to y2 only.
/// kForm (q_store8_form, checked once by the caller): 0 reads every flag; 1 and 2 are the all-int8 cases
/// whose flags are then constants, so the compiler drops the branches on them for every element.
template <int kForm = 0>
__device__ __forceinline__ void q_store8(const ConvArgs& a, const QEpilogue& q_in, int64_t row, int col,
                                         const float (&v)[8]) {
  const QEpilogue qe = q_store_form_flags<kForm>(q_in);
  float o[8];
  if (col >= a.cout) {
#pragma unroll
    for (int q = 0; q < 8; ++q) o[q] = 0.f;
  } else {
    float r[8];
    const bool has_res = q_store_form_residual<kForm>(a);
    if (has_res) {
      if (qe.res_q) {
        const uint2 raw =
            *reinterpret_cast<const uint2*>(static_cast<const int8_t*>(a.residual) + row * qe.res_stride + col);
        const int8_t* rb = reinterpret_cast<const int8_t*>(&raw);
#pragma unroll
        for (int q = 0; q < 8; ++q) r[q] = float(rb[q]);
      } else {
        alignas(16) __half rh[8];
        *reinterpret_cast<uint4*>(rh) =
            *reinterpret_cast<const uint4*>(static_cast<const __half*>(a.residual) + row * qe.res_stride + col);
#pragma unroll
        for (int q = 0; q < 8; ++q) r[q] = __half2float(rh[q]);
      }
    }
#pragma unroll
    for (int q = 0; q < 8; ++q) o[q] = col + q < a.cout ? q_epilogue(v[q], has_res, r[q], a.relu_after, qe) : 0.f;
  }
  if (qe.y2) {  // quantize(fp16 value): what an int8 reader of the fp16 storage reads
    alignas(8) int8_t qb[8];
#pragma unroll
    for (int q = 0; q < 8; ++q) qb[q] = int8_t(quantize8(o[q], qe.y2_inv));
    *reinterpret_cast<uint2*>(static_cast<int8_t*>(qe.y2) + row * qe.y2_stride + col) =
        *reinterpret_cast<const uint2*>(qb);
    if (col >= qe.y_stride) return;
  }
  if (qe.y_q) {
    alignas(8) int8_t ob[8];
#pragma unroll
    for (int q = 0; q < 8; ++q) ob[q] = int8_t(int(o[q]));
    *reinterpret_cast<uint2*>(static_cast<int8_t*>(a.y) + row * qe.y_stride + col) =
        *reinterpret_cast<const uint2*>(ob);
  } else {
    alignas(16) __half oh[8];
#pragma unroll
    for (int q = 0; q < 8; ++q) oh[q] = __float2half_rn(o[q]);
    *reinterpret_cast<uint4*>(static_cast<__half*>(a.y) + row * qe.y_stride + col) =
        *reinterpret_cast<const uint4*>(oh);
  }
}

/// Whether a conv's epilogue flags are those form kForm fixes (q_store_form_flags leaves them unchanged).
template <int kForm>
__device__ __forceinline__ bool in_q_store_form(const ConvArgs& a, const QEpilogue& qe) {
  const QEpilogue f = q_store_form_flags<kForm>(qe);
  return f.y_q == qe.y_q && f.y2 == qe.y2 && f.add_q == qe.add_q && f.conv_q == qe.conv_q && f.res_q == qe.res_q &&
         q_store_form_residual<kForm>(a) == (a.residual != nullptr);
}

/// Which form of q_store8 an epilogue can use: 1 or 2 when its flags are that form's, else 0 (any combination).
__device__ __forceinline__ int q_store8_form(const ConvArgs& a, const QEpilogue& qe) {
  if (in_q_store_form<1>(a, qe)) return 1;
  return in_q_store_form<2>(a, qe) ? 2 : 0;
}

/// Runs an epilogue's loop, `items(form)`, with the conv's store form as a std::integral_constant for
/// q_store8<form>: one branch per epilogue instead of branches on uniform flags for every element. Without
/// kForms (the fp16-operand modes) only the general form is compiled.
template <bool kForms, class Items>
__device__ __forceinline__ void with_q_store_form(const ConvArgs& a, const QEpilogue& qe, Items&& items) {
  if constexpr (kForms) {
    const int form = q_store8_form(a, qe);
    if (form == 1) return items(std::integral_constant<int, 1>{});
    if (form == 2) return items(std::integral_constant<int, 2>{});
  }
  items(std::integral_constant<int, 0>{});
}

/// The largest stride the quantization-aware epilogue writes a row to (y, or a wider y2): columns
/// from the conv's width up to it are written as zeros (row padding).
__device__ __forceinline__ int q_pad_end(const QEpilogue& qe) {
  return qe.y2 && qe.y2_stride > qe.y_stride ? qe.y2_stride : qe.y_stride;
}

}  // namespace scn::cuda
