// The gather -> GEMM -> scatter-add path (the simple reference dataflow, and the cuBLAS baseline):
//
//   pairs of offset k = {(out_in[o, k], o) : out_in[o, k] >= 0}, sorted by o   (deterministic
//                        compaction: per-block counts, prefix on the host, per-block emission)
//   acc = 0 (fp32)
//   for k: G = x[in rows]; P = G * W_k (cuBLAS, fp16 in, fp32 out); acc[out rows] += P
//          (every output row appears at most once per offset: no atomics, fixed order)
//   y = epilogue(acc)
#include "backends/cuda/common.cuh"

namespace scn::cuda {

namespace {

constexpr int kPairBlock = 256;

__global__ void __launch_bounds__(kPairBlock)
    pair_counts_kernel(const int32_t* __restrict__ out_in, const int* n_out, int64_t cap, int K, int32_t* counts) {
  const int64_t n = rows_of(n_out, cap);
  const int64_t row = int64_t(blockIdx.x) * kPairBlock + threadIdx.x;
  for (int k = 0; k < K; ++k) {
    const bool v = row < n && out_in[row * K + k] >= 0;
    const int c = __syncthreads_count(v);
    if (threadIdx.x == 0) counts[int64_t(blockIdx.x) * K + k] = c;
  }
}

__global__ void __launch_bounds__(kPairBlock)
    pair_emit_kernel(const int32_t* __restrict__ out_in, const int* n_out, int64_t cap, int K,
                     const int32_t* __restrict__ offsets, int32_t* in_idx, int32_t* out_idx) {
  __shared__ int warp_base[kPairBlock / 32];
  const int64_t n = rows_of(n_out, cap);
  const int64_t row = int64_t(blockIdx.x) * kPairBlock + threadIdx.x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int k = 0; k < K; ++k) {
    const int32_t src = row < n ? out_in[row * K + k] : -1;
    const unsigned ballot = __ballot_sync(0xffffffffu, src >= 0);
    if (lane == 0) warp_base[warp] = __popc(ballot);
    __syncthreads();
    int before = 0;
    for (int w = 0; w < warp; ++w) before += warp_base[w];
    if (src >= 0) {
      const int64_t pos = int64_t(offsets[int64_t(blockIdx.x) * K + k]) + before + __popc(ballot & ((1u << lane) - 1u));
      in_idx[pos] = src;
      out_idx[pos] = int32_t(row);
    }
    __syncthreads();
  }
}

__global__ void gather_rows_kernel(const __half* __restrict__ x, int cin_p, const int32_t* __restrict__ in_idx,
                                   int64_t n, __half* __restrict__ G) {
  const int chunks = cin_p / 8;
  const int64_t total = n * chunks;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = t / chunks;
    const int c = int(t - j * chunks) * 8;
    *reinterpret_cast<uint4*>(G + j * cin_p + c) =
        *reinterpret_cast<const uint4*>(x + int64_t(in_idx[j]) * cin_p + c);
  }
}

__global__ void scatter_add_kernel(const float* __restrict__ P, int cout_p, const int32_t* __restrict__ out_idx,
                                   int64_t n, float* __restrict__ acc) {
  const int chunks = cout_p / 4;
  const int64_t total = n * chunks;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = t / chunks;
    const int c = int(t - j * chunks) * 4;
    const float4 p = *reinterpret_cast<const float4*>(P + j * cout_p + c);
    float4* d = reinterpret_cast<float4*>(acc + int64_t(out_idx[j]) * cout_p + c);
    float4 v = *d;
    v.x += p.x;
    v.y += p.y;
    v.z += p.z;
    v.w += p.w;
    *d = v;
  }
}

__global__ void gemm_epilogue_kernel(const float* __restrict__ acc, const ConvArgs a) {
  const int64_t n = rows_of(a.n_out, a.cap_out);
  const int pairs = a.cout_p / 2;
  const int64_t total = n * pairs;
  const __half* res = static_cast<const __half*>(a.residual);
  __half* y = static_cast<__half*>(a.y);
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = t / pairs;
    const int col = int(t - row * pairs) * 2;
    float r0 = 0.f, r1 = 0.f;
    if (res) {
      const __half2 rv = *reinterpret_cast<const __half2*>(res + row * a.cout_p + col);
      r0 = __low2float(rv);
      r1 = __high2float(rv);
    }
    const float* s = acc + row * a.cout_p + col;
    const float v0 = col < a.cout ? epilogue_value(s[0], a.bias[col], a.act, a.alpha, res != nullptr, r0, a.relu_after)
                                  : 0.f;
    const float v1 = col + 1 < a.cout
                         ? epilogue_value(s[1], a.bias[col + 1], a.act, a.alpha, res != nullptr, r1, a.relu_after)
                         : 0.f;
    *reinterpret_cast<__half2*>(y + row * a.cout_p + col) = __floats2half2_rn(v0, v1);
  }
}

int blocks_for(int64_t items) {
  const int64_t b = (items + 255) / 256;
  return int(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

}  // namespace

void launch_pair_counts(const int32_t* out_in, const int* n_out, int64_t cap, int K, int32_t* counts,
                        cudaStream_t st) {
  const int64_t blocks = (cap + kPairBlock - 1) / kPairBlock;
  if (blocks == 0) return;
  pair_counts_kernel<<<unsigned(blocks), kPairBlock, 0, st>>>(out_in, n_out, cap, K, counts);
  SCN_CUDA_LAUNCHED();
}

void launch_pair_emit(const int32_t* out_in, const int* n_out, int64_t cap, int K, const int32_t* offsets,
                      int32_t* in_idx, int32_t* out_idx, cudaStream_t st) {
  const int64_t blocks = (cap + kPairBlock - 1) / kPairBlock;
  if (blocks == 0) return;
  pair_emit_kernel<<<unsigned(blocks), kPairBlock, 0, st>>>(out_in, n_out, cap, K, offsets, in_idx, out_idx);
  SCN_CUDA_LAUNCHED();
}

void launch_gather_rows(const void* x, int cin_p, const int32_t* in_idx, int64_t n, void* G, cudaStream_t st) {
  if (n == 0) return;
  gather_rows_kernel<<<blocks_for(n * (cin_p / 8)), 256, 0, st>>>(static_cast<const __half*>(x), cin_p, in_idx, n,
                                                                   static_cast<__half*>(G));
  SCN_CUDA_LAUNCHED();
}

void launch_scatter_add(const float* P, int cout_p, const int32_t* out_idx, int64_t n, float* acc, cudaStream_t st) {
  if (n == 0) return;
  scatter_add_kernel<<<blocks_for(n * (cout_p / 4)), 256, 0, st>>>(P, cout_p, out_idx, n, acc);
  SCN_CUDA_LAUNCHED();
}

void launch_gemm_epilogue(const float* acc, const ConvArgs& a, cudaStream_t st) {
  gemm_epilogue_kernel<<<blocks_for(a.cap_out * (a.cout_p / 2)), 256, 0, st>>>(acc, a);
  SCN_CUDA_LAUNCHED();
}

}  // namespace scn::cuda
