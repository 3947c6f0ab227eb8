// Kernel maps on the GPU in the implicit-GEMM format out_in[o * K + k] (input row or -1), one
// thread per (output row, offset), every entry one O(1) bitmap-rank lookup (common.cuh):
//   subm:     in = o + (r - K/2) * dil                           on the same site set
//   strided:  in = o * st - p + r * dil                          on the conv's input set
//   inverse:  out = (i + p - r * dil) / st when divisible, for i on the strided conv's input set
#include "backends/cuda/common.cuh"

namespace scn::cuda {

namespace {

__device__ __forceinline__ void offset_of(int k, const MapGeom& g, int& r0, int& r1, int& r2) {
  r0 = k / (g.k1 * g.k2);
  r1 = (k / g.k2) % g.k1;
  r2 = k % g.k2;
}

__global__ void subm_map_kernel(SiteIndex s, MapGeom g, int32_t* __restrict__ out_in) {
  const int K = g.K();
  const int64_t total = rows_of(s.count, s.cap) * K;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = t / K;
    const int k = int(t - o * K);
    int r0, r1, r2;
    offset_of(k, g, r0, r1, r2);
    const int4 c = s.coords[o];
    out_in[t] = site_lookup(s, c.x, c.y + (r0 - g.k0 / 2) * g.d0, c.z + (r1 - g.k1 / 2) * g.d1,
                            c.w + (r2 - g.k2 / 2) * g.d2);
  }
}

__global__ void strided_map_kernel(SiteIndex in, SiteIndex out, MapGeom g, int32_t* __restrict__ out_in) {
  const int K = g.K();
  const int64_t total = rows_of(out.count, out.cap) * K;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = t / K;
    const int k = int(t - o * K);
    int r0, r1, r2;
    offset_of(k, g, r0, r1, r2);
    const int4 c = out.coords[o];
    out_in[t] = site_lookup(in, c.x, c.y * g.st0 - g.p0 + r0 * g.d0, c.z * g.st1 - g.p1 + r1 * g.d1,
                            c.w * g.st2 - g.p2 + r2 * g.d2);
  }
}

__global__ void inverse_map_kernel(SiteIndex in, SiteIndex out, MapGeom g, int32_t* __restrict__ out_in) {
  const int K = g.K();
  const int64_t total = rows_of(in.count, in.cap) * K;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = t / K;
    const int k = int(t - i * K);
    int r0, r1, r2;
    offset_of(k, g, r0, r1, r2);
    const int4 c = in.coords[i];
    int32_t v = -1;
    const int n0 = c.y + g.p0 - r0 * g.d0, n1 = c.z + g.p1 - r1 * g.d1, n2 = c.w + g.p2 - r2 * g.d2;
    if (site_in_grid(in, c.x, c.y, c.z, c.w) && n0 >= 0 && n1 >= 0 && n2 >= 0 && n0 % g.st0 == 0 &&
        n1 % g.st1 == 0 && n2 % g.st2 == 0)
      v = site_lookup(out, c.x, n0 / g.st0, n1 / g.st1, n2 / g.st2);
    out_in[t] = v;
  }
}

}  // namespace

void launch_subm_map(SiteIndex s, MapGeom g, int32_t* out_in, int sm, cudaStream_t st) {
  subm_map_kernel<<<grid_for(s.cap * g.K(), 256, sm), 256, 0, st>>>(s, g, out_in);
  SCN_CUDA_LAUNCHED();
}

void launch_strided_map(SiteIndex in, SiteIndex out, MapGeom g, int32_t* out_in, int sm, cudaStream_t st) {
  strided_map_kernel<<<grid_for(out.cap * g.K(), 256, sm), 256, 0, st>>>(in, out, g, out_in);
  SCN_CUDA_LAUNCHED();
}

void launch_inverse_map(SiteIndex in, SiteIndex out, MapGeom g, int32_t* out_in, int sm, cudaStream_t st) {
  inverse_map_kernel<<<grid_for(in.cap * g.K(), 256, sm), 256, 0, st>>>(in, out, g, out_in);
  SCN_CUDA_LAUNCHED();
}

}  // namespace scn::cuda
