// Small kernels: counts, residual add / ReLU when they are not fused into a conv, Concat, the
// fused densify (ScatterDense + Transpose folded, zeros written in the same pass), generic
// permutation and the compaction of padded sparse outputs.
#include <algorithm>

#include "backends/cuda/common.cuh"
#include "backends/cuda/ptx.cuh"

namespace scn::cuda {

namespace {

__global__ void set_input_source_kernel(InputSource* dst, InputSource src, int* count, int rows) {
  *dst = src;
  *count = rows;
}

// An input whose row count lives on the device (set_input_device_count): the count is clamped to
// the capacity and to the bound buffers' rows (an excess is recorded, never read past), stored as the site count,
// and the first rows of features (copied as 2-byte units: fp16 rows of odd channel counts are not 4-byte
// aligned) and indices are staged. The error's row tells the causes apart (kCountRow*, kernels.h).
__global__ void stage_counted_rows_kernel(const uint16_t* __restrict__ src_feat, uint16_t* __restrict__ dst_feat,
                                          int feat_row_halves, const int4* __restrict__ src_idx,
                                          int4* __restrict__ dst_idx, const int* src_count, int* dst_count, int64_t cap,
                                          int64_t bound_rows, ErrSlot* err) {
  const int64_t raw = *src_count;
  const int64_t limit = bound_rows < cap ? bound_rows : cap;
  const int64_t n = raw < 0 ? 0 : (raw < limit ? raw : limit);
  const int64_t tid = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  if (tid == 0) {
    *dst_count = int(n);
    if (raw < 0)
      record_error(err, kCountRowNegative, 0, cap);
    else if (raw > bound_rows)  // no capacity fixes this one: it is reported first
      record_error(err, kCountRowBeyondBuffers, raw, bound_rows);
    else if (raw > cap)
      record_error(err, kCountRowBeyondCapacity, raw, cap);
  }
  for (int64_t i = tid; i < n * feat_row_halves; i += stride) dst_feat[i] = src_feat[i];
  for (int64_t i = tid; i < n; i += stride) dst_idx[i] = src_idx[i];
}

__global__ void add_kernel(const __half* __restrict__ a, const __half* __restrict__ b, __half* __restrict__ y, int cp,
                           const int* count, int64_t cap, bool relu) {
  const int64_t total = rows_of(count, cap) * cp / 2;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const float2 u = __half22float2(reinterpret_cast<const __half2*>(a)[t]);
    const float2 v = __half22float2(reinterpret_cast<const __half2*>(b)[t]);
    float r0 = u.x + v.x, r1 = u.y + v.y;
    if (relu) {
      // round first (the Add stores fp16), then the ReLU: identical to unfused nodes
      r0 = __half2float(__float2half_rn(r0));
      r1 = __half2float(__float2half_rn(r1));
      r0 = r0 > 0.f ? r0 : 0.f;
      r1 = r1 > 0.f ? r1 : 0.f;
    }
    reinterpret_cast<__half2*>(y)[t] = __floats2half2_rn(r0, r1);
  }
}

__global__ void relu_kernel(const __half* __restrict__ x, __half* __restrict__ y, int cp, const int* count,
                            int64_t cap) {
  const int64_t total = rows_of(count, cap) * cp / 2;
  const __half2 zero = __float2half2_rn(0.f);
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x)
    reinterpret_cast<__half2*>(y)[t] = __hmax2(reinterpret_cast<const __half2*>(x)[t], zero);
}

__global__ void copy_columns_kernel(const __half* __restrict__ x, int xp, int c, __half* __restrict__ y, int yp, int c0,
                                    const int* count, int64_t cap) {
  const int64_t total = rows_of(count, cap) * c;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = t / c;
    const int j = int(t - r * c);
    y[r * yp + c0 + j] = x[r * xp + j];
  }
}

__global__ void zero_columns_kernel(__half* __restrict__ y, int yp, int c0, const int* count, int64_t cap) {
  const int w = yp - c0;
  const int64_t total = rows_of(count, cap) * w;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = t / w;
    y[r * yp + c0 + int(t - r * w)] = __float2half_rn(0.f);
  }
}

/// Source coordinate k (0 batch, 1 channel, 2..4 spatial) from the output axis values q[j]: the
/// axis j with out_axis[j] == k. Unrolled selects instead of a runtime-indexed array, which would
/// put the array in local memory (and make the driver reserve local memory for every thread).
__device__ __forceinline__ int src_coord(const int (&q)[5], const int (&out_axis)[5], int k) {
  int v = 0;
#pragma unroll
  for (int j = 0; j < 5; ++j) v = out_axis[j] == k ? q[j] : v;
  return v;
}

struct DensifyPlan {
  DensifyArgs a;
  int jc;        // output axis holding the channels
  int64_t cs;    // output stride of the channel axis
  int64_t npos;  // output elements per channel
  int groups;    // channel groups of 8
};

__global__ void densify_kernel(const DensifyPlan p) {
  const DensifyArgs& a = p.a;
  const __half* __restrict__ x = static_cast<const __half*>(a.x);
  __half* __restrict__ y = static_cast<__half*>(a.y);
  const int64_t total = p.npos * p.groups;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int g = int(t / p.npos);
    int64_t rem = t - int64_t(g) * p.npos;
    int q[5] = {0, 0, 0, 0, 0};
    int64_t off = 0, stride = 1;
#pragma unroll
    for (int j = 4; j >= 0; --j) {
      if (j == p.jc) {
        stride *= a.out_size[j];
        continue;
      }
      q[j] = int(rem % a.out_size[j]);
      rem /= a.out_size[j];
      off += q[j] * stride;
      stride *= a.out_size[j];
    }
    const int32_t row = site_lookup(a.sites, src_coord(q, a.out_axis, 0), src_coord(q, a.out_axis, 2),
                                    src_coord(q, a.out_axis, 3), src_coord(q, a.out_axis, 4));
    const int c0 = g * 8;
    alignas(16) __half v[8];
    ptx::grid_dependency_wait();  // launched programmatically: x is the previous kernel's output
    if (row >= 0) {
      *reinterpret_cast<uint4*>(v) = *reinterpret_cast<const uint4*>(x + int64_t(row) * a.cp + c0);
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] = __float2half_rn(0.f);
    }
    // batch of the output: src[0] already folded into off through its axis
#pragma unroll
    for (int j = 0; j < 8; ++j)
      if (c0 + j < a.channels) y[off + int64_t(c0 + j) * p.cs] = v[j];
  }
  ptx::grid_dependency_wait();  // a thread without positions waits too: the grid completes after x's writer
}

// Four consecutive positions of the innermost output axis (a spatial axis) and up to
// kDensifyGroups channel groups of 8 per thread: four lookups (the site lookup is the costly part,
// and it does not depend on the channel), then per channel group four 16-byte row reads and per
// channel one 8-byte store of four outputs. Launched programmatically after the conv that writes x
// (launch_densify), a thread looks its sites up and stores the zeros of four empty positions while
// that conv still runs; it waits for the conv only before reading x (the site index is the map
// stream's, and the arena keeps y apart from the conv's buffers: arena_layout.cpp).
constexpr int kDensifyGroups = 4;

// I: index arithmetic (uint32_t when the output's elements and the threads fit 31 bits: the runtime
// divisions by the output sizes are several times cheaper than 64-bit ones); Key: the bitmap key (site_key).
template <class I, class Key>
__global__ void densify4_kernel(const DensifyPlan p) {
  const DensifyArgs& a = p.a;
  const __half* __restrict__ x = static_cast<const __half*>(a.x);
  __half* __restrict__ y = static_cast<__half*>(a.y);
  const I quads = I(p.npos / 4);
  const int gblocks = (p.groups + kDensifyGroups - 1) / kDensifyGroups;
  const I total = quads * I(gblocks);
  I size[5];
#pragma unroll
  for (int j = 0; j < 5; ++j) size[j] = I(a.out_size[j]);
  const I cs = I(p.cs);
  for (I t = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); t < total; t += I(gridDim.x) * I(blockDim.x)) {
    const int gb = int(t / quads);
    I rem = (t - I(gb) * quads) * 4;
    int q[5] = {0, 0, 0, 0, 0};
    I off = 0, stride = 1;
#pragma unroll
    for (int j = 4; j >= 0; --j) {
      if (j == p.jc) {
        stride *= size[j];
        continue;
      }
      const I next = rem / size[j];
      q[j] = int(rem - next * size[j]);
      rem = next;
      off += I(q[j]) * stride;
      stride *= size[j];
    }
    int32_t rows[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      int qe[5] = {q[0], q[1], q[2], q[3], q[4] + e};  // axis 4 (innermost output axis) is spatial here
      rows[e] = site_lookup<Key>(a.sites, src_coord(qe, a.out_axis, 0), src_coord(qe, a.out_axis, 2),
                                 src_coord(qe, a.out_axis, 3), src_coord(qe, a.out_axis, 4));
    }
    if (rows[0] >= 0 || rows[1] >= 0 || rows[2] >= 0 || rows[3] >= 0) ptx::grid_dependency_wait();
    for (int gi = 0; gi < kDensifyGroups; ++gi) {
      const int g = gb * kDensifyGroups + gi;
      if (g >= p.groups) break;
      const int c0 = g * 8;
      alignas(16) __half v[4][8];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (rows[e] >= 0) {
          *reinterpret_cast<uint4*>(v[e]) = *reinterpret_cast<const uint4*>(x + int64_t(rows[e]) * a.cp + c0);
        } else {
#pragma unroll
          for (int q = 0; q < 8; ++q) v[e][q] = __float2half_rn(0.f);
        }
      }
#pragma unroll
      for (int q = 0; q < 8; ++q) {
        if (c0 + q >= a.channels) break;
        alignas(8) __half o[4] = {v[0][q], v[1][q], v[2][q], v[3][q]};
        *reinterpret_cast<uint2*>(y + off + I(c0 + q) * cs) = *reinterpret_cast<const uint2*>(o);
      }
    }
  }
  // a thread whose positions were all empty never waited above: it waits here, so the grid completes only
  // after the conv that writes x (the next kernel on the stream must not overlap that conv)
  ptx::grid_dependency_wait();
}

__global__ void permute_kernel(const PermuteArgs a) {
  const __half* __restrict__ x = static_cast<const __half*>(a.x);
  __half* __restrict__ y = static_cast<__half*>(a.y);
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < a.total; t += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = t, src = 0;
    for (int d = a.nd - 1; d >= 0; --d) {
      src += (rem % a.out_shape[d]) * a.src_stride[d];
      rem /= a.out_shape[d];
    }
    y[t] = x[src];
  }
}

__global__ void compact_rows_kernel(const __half* __restrict__ x, int xp, __half* __restrict__ y, int c, int64_t n) {
  const int64_t total = n * c;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = t / c;
    y[t] = x[r * xp + (t - r * c)];
  }
}

}  // namespace

void launch_set_input_source(InputSource* dst, InputSource src, int* count, int rows, cudaStream_t st) {
  set_input_source_kernel<<<1, 1, 0, st>>>(dst, src, count, rows);
  SCN_CUDA_LAUNCHED();
}

void launch_stage_counted_rows(const void* src_feat, void* dst_feat, int feat_row_bytes, const int32_t* src_idx,
                               int32_t* dst_idx, const int* src_count, int* dst_count, int64_t cap, int64_t bound_rows,
                               ErrSlot* err, int sm, cudaStream_t st) {
  const int halves = feat_row_bytes / 2;
  stage_counted_rows_kernel<<<grid_for(std::min(cap, bound_rows) * halves, 256, sm), 256, 0, st>>>(
      static_cast<const uint16_t*>(src_feat), static_cast<uint16_t*>(dst_feat), halves,
      reinterpret_cast<const int4*>(src_idx), reinterpret_cast<int4*>(dst_idx), src_count, dst_count, cap, bound_rows,
      err);
  SCN_CUDA_LAUNCHED();
}

void launch_add(const void* a, const void* b, void* y, int cp, const int* count, int64_t cap, bool relu, int sm,
                cudaStream_t st) {
  add_kernel<<<grid_for(cap * cp / 2, 256, sm), 256, 0, st>>>(
      static_cast<const __half*>(a), static_cast<const __half*>(b), static_cast<__half*>(y), cp, count, cap, relu);
  SCN_CUDA_LAUNCHED();
}

void launch_relu(const void* x, void* y, int cp, const int* count, int64_t cap, int sm, cudaStream_t st) {
  relu_kernel<<<grid_for(cap * cp / 2, 256, sm), 256, 0, st>>>(static_cast<const __half*>(x), static_cast<__half*>(y),
                                                               cp, count, cap);
  SCN_CUDA_LAUNCHED();
}

void launch_copy_columns(const void* x, int xp, int c, void* y, int yp, int c0, const int* count, int64_t cap, int sm,
                         cudaStream_t st) {
  copy_columns_kernel<<<grid_for(cap * c, 256, sm), 256, 0, st>>>(static_cast<const __half*>(x), xp, c,
                                                                  static_cast<__half*>(y), yp, c0, count, cap);
  SCN_CUDA_LAUNCHED();
}

void launch_zero_columns(void* y, int yp, int c0, const int* count, int64_t cap, int sm, cudaStream_t st) {
  if (c0 >= yp) return;
  zero_columns_kernel<<<grid_for(cap * (yp - c0), 256, sm), 256, 0, st>>>(static_cast<__half*>(y), yp, c0, count, cap);
  SCN_CUDA_LAUNCHED();
}

void launch_densify(const DensifyArgs& a, int sm, cudaStream_t st, bool pdl) {
  DensifyPlan p;
  p.a = a;
  p.jc = 0;
  for (int j = 0; j < 5; ++j)
    if (a.out_axis[j] == 1) p.jc = j;
  p.cs = 1;
  for (int j = p.jc + 1; j < 5; ++j) p.cs *= a.out_size[j];
  p.npos = 1;
  for (int j = 0; j < 5; ++j)
    if (j != p.jc) p.npos *= a.out_size[j];
  p.groups = (a.channels + 7) / 8;
  const int64_t total = p.npos * p.groups;
  if (total == 0) return;
  // innermost output axis spatial and a multiple of 4 wide: 8-byte stores of 4 positions
  if (p.jc != 4 && a.out_size[4] % 4 == 0 && p.cs % 4 == 0) {
    const int64_t threads = p.npos / 4 * ((p.groups + kDensifyGroups - 1) / kDensifyGroups);
    const int grid = grid_for(threads, 256, sm, 16);
    // 32-bit indices: every output element, and a grid stride past the last thread, below 2^31
    const bool narrow = p.npos * int64_t(p.groups) * 8 + int64_t(grid) * 256 < (int64_t(1) << 31);
    const bool keys32 = site_keys32(a.sites);
    if (narrow && keys32)
      launch_kernel(densify4_kernel<uint32_t, uint32_t>, unsigned(grid), 256, 0, st, pdl, p);
    else if (keys32)
      launch_kernel(densify4_kernel<int64_t, uint32_t>, unsigned(grid), 256, 0, st, pdl, p);
    else
      launch_kernel(densify4_kernel<int64_t, int64_t>, unsigned(grid), 256, 0, st, pdl, p);
  } else {
    launch_kernel(densify_kernel, unsigned(grid_for(total, 256, sm, 16)), 256, 0, st, pdl, p);
  }
  SCN_CUDA_LAUNCHED();
}

void launch_permute(const PermuteArgs& a, int sm, cudaStream_t st) {
  if (a.total == 0) return;
  permute_kernel<<<grid_for(a.total, 256, sm, 16), 256, 0, st>>>(a);
  SCN_CUDA_LAUNCHED();
}

void launch_compact_rows(const void* x, int xp, void* y, int c, int64_t n, cudaStream_t st) {
  if (n == 0) return;
  compact_rows_kernel<<<grid_for(n * c, 256, 132, 16), 256, 0, st>>>(static_cast<const __half*>(x), xp,
                                                                     static_cast<__half*>(y), c, n);
  SCN_CUDA_LAUNCHED();
}

}  // namespace scn::cuda
