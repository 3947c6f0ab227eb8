// Device helpers shared by the CUDA backend's kernels.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <utility>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels.h"
#include "backends/cuda/ptx.cuh"
#include "scn/error.h"

namespace scn::cuda {

/// Blocks for a grid-stride loop over `n` items: enough to fill the device, never more than needed.
inline int grid_for(int64_t n, int threads, int sm_count, int per_sm = 8) {
  const int64_t need = (n + threads - 1) / threads;
  const int64_t most = int64_t(sm_count) * per_sm;
  const int64_t g = need < most ? need : most;
  return g < 1 ? 1 : int(g);
}

/// The current GPU runs the backend's kernels from an image with griddepcontrol (compiled for sm_90 or
/// newer), so they may launch programmatically (launch.cu; one answer per device).
bool pdl_image();

/// The launch attribute of clusters of `z` CTAs along the grid's z axis (the split tiles' CTAs that share a tile).
inline cudaLaunchAttribute cluster_z_attribute(unsigned z) {
  cudaLaunchAttribute a{};
  a.id = cudaLaunchAttributeClusterDimension;
  a.val.clusterDim.x = 1;
  a.val.clusterDim.y = 1;
  a.val.clusterDim.z = z;
  return a;
}

/// Launches `kernel` through cudaLaunchKernelEx: as a programmatic dependent launch when `programmatic` (PDL; the
/// caller checked pdl_image(): it may start while the kernel before it on `st` runs, and waits
/// (griddepcontrol.wait) before it reads what that kernel writes), in clusters of `cluster_z` CTAs when > 1.
template <class... Params, class... Args>
void launch_ex(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t st, bool programmatic,
               unsigned cluster_z, Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = st;
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  if (cluster_z > 1) attr[n++] = cluster_z_attribute(cluster_z);
  if (programmatic) {
    attr[n] = cudaLaunchAttribute{};
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n;
  SCN_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

/// Launches `kernel` programmatically when `pdl` is asked and the image has griddepcontrol, else in stream
/// order.
template <class... Params, class... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t st, bool pdl,
                   Args&&... args) {
  if (pdl && pdl_image())
    launch_ex(kernel, grid, block, smem, st, true, 1, std::forward<Args>(args)...);
  else
    kernel<<<grid, block, smem, st>>>(std::forward<Args>(args)...);
}

/// Launches a site-index or map kernel, whose last parameter is `let_next` (wait_previous_kernel): as a
/// programmatic launch when `pdl` (launch_kernel), and then letting its own successor launch early — the two
/// always go together, so the rule is stated here once and not at every call.
template <typename... Params, typename... Args>
void launch_chained(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t st, bool pdl,
                    Args&&... args) {
  launch_kernel(kernel, grid, block, smem, st, pdl, std::forward<Args>(args)..., pdl);
}

/// First statement of a site-index or map kernel (the input kernel: after the work that needs no bitmap), which may
/// launch programmatically (launch_kernel): waits
/// for the kernel before it on the stream (complete, its writes visible; a no-op in a grid launched in stream
/// order), then, with `let_next` (the kernel's own launch was programmatic), lets a programmatic launch after
/// it start at once, its blocks taking the SM room this grid's blocks leave. Only programmatic chains on the
/// main stream trigger early. The map stream's kernels launch in stream order and so never trigger: early-launched
/// waiting blocks there held SM room the convs beside them needed (docs/benchmarks.md, session 20). (Session 20's
/// early triggers there also raced with the conv joining that stream, whose graph edge from the map kernel is
/// programmatic and which then read its map before its wait; such a conv now reads it after: ConvArgs::map_late.)
__device__ __forceinline__ void wait_previous_kernel(bool let_next) {
  ptx::grid_dependency_wait();
  if (let_next) ptx::grid_launch_dependents();
}

/// Every key of the bitmap of `s` fits a 32-bit key: fewer than 2^26 words (site_key<uint32_t> takes several
/// instructions fewer per key than 64-bit keys).
inline bool site_keys32(const SiteIndex& s) { return s.words < (int64_t(1) << 26); }

/// Calls f(Key{}) with the key type of the bitmap of `s`: uint32_t where site_keys32, else int64_t.
template <class F>
void with_site_key(const SiteIndex& s, F&& f) {
  if (site_keys32(s))
    f(uint32_t{});
  else
    f(int64_t{});
}

/// Bitmap key of a site, in `Key` (int64_t; uint32_t where every key of the bitmap fits 32 bits).
template <class Key = int64_t>
__device__ __forceinline__ Key site_key(const SiteIndex& s, int b, int i0, int i1, int i2) {
  return ((Key(b) * Key(s.s0) + Key(i0)) * Key(s.s1) + Key(i1)) * Key(s.s2) + Key(i2);
}

/// (b, i0, i1) inside the batch and the grid's first two axes (the last axis: site_in_grid).
__device__ __forceinline__ bool site_line_in_grid(const SiteIndex& s, int b, int i0, int i1) {
  return b >= 0 && b < s.batch && i0 >= 0 && i0 < s.s0 && i1 >= 0 && i1 < s.s1;
}

__device__ __forceinline__ bool site_in_grid(const SiteIndex& s, int b, int i0, int i1, int i2) {
  return site_line_in_grid(s, b, i0, i1) && i2 >= 0 && i2 < s.s2;
}

/// Rank of the first set bit of bitmap word w (sites in all words before it).
__device__ __forceinline__ int64_t site_rank_base(const SiteIndex& s, int64_t w) {
  return int64_t(__ldg(s.rank_block + (w / kRankBlock))) + int64_t(__ldg(s.rank_local + w));
}

/// Sorted rank of a key whose bit is known to be set, given the rank base of its word.
__device__ __forceinline__ int64_t site_rank_in_word(int64_t base, int64_t key, uint64_t word) {
  return base + __popcll(word & ((uint64_t(1) << (key & 63)) - 1));
}

/// Sorted rank of a key whose bit is known to be set.
__device__ __forceinline__ int64_t site_rank(const SiteIndex& s, int64_t key, uint64_t word) {
  return site_rank_in_word(site_rank_base(s, key >> 6), key, word);
}

/// Row of the site of sorted rank r, or -1 when an overflow dropped it (rank >= cap).
__device__ __forceinline__ int32_t site_row(const SiteIndex& s, int64_t r) {
  if (r >= s.cap) return -1;
  return s.perm ? __ldg(s.perm + r) : int32_t(r);
}

/// Row of the site (b, i0, i1, i2) or -1 (absent, outside the grid, or dropped by an overflow). Key as in
/// site_key (uint32_t only when every key of the bitmap fits).
template <class Key = int64_t>
__device__ __forceinline__ int32_t site_lookup(const SiteIndex& s, int b, int i0, int i1, int i2) {
  if (!site_in_grid(s, b, i0, i1, i2)) return -1;
  const Key key = site_key<Key>(s, b, i0, i1, i2);
  const uint64_t word = __ldg(s.bits + (key >> 6));
  if (!((word >> (key & 63)) & 1)) return -1;
  return site_row(s, site_rank(s, key, word));
}

/// Kernel taps of input site `c` whose strided-conv output coordinate is whole and inside the output
/// grid, as one bit mask per axis (bit r = tap r; at most kMaxTapsPerAxis taps per axis). Masks, not
/// arrays: a stack frame would make the driver reserve local memory for every resident thread.
struct TapMasks {
  uint32_t m0, m1, m2;
};
__device__ __forceinline__ TapMasks strided_taps(const int4& c, const MapGeom& g, const SiteIndex& out) {
  TapMasks m{0u, 0u, 0u};
  for (int r = 0; r < g.k0; ++r) {
    const int t = c.y + g.p0 - r * g.d0;
    if (t >= 0 && t % g.st0 == 0 && t / g.st0 < out.s0) m.m0 |= 1u << r;
  }
  for (int r = 0; r < g.k1; ++r) {
    const int t = c.z + g.p1 - r * g.d1;
    if (t >= 0 && t % g.st1 == 0 && t / g.st1 < out.s1) m.m1 |= 1u << r;
  }
  for (int r = 0; r < g.k2; ++r) {
    const int t = c.w + g.p2 - r * g.d2;
    if (t >= 0 && t % g.st2 == 0 && t / g.st2 < out.s2) m.m2 |= 1u << r;
  }
  return m;
}

/// Device row count clamped to the capacity.
__device__ __forceinline__ int64_t rows_of(const int* count, int64_t cap) {
  const int64_t n = *count;
  return n < cap ? (n < 0 ? 0 : n) : cap;
}

__device__ __forceinline__ float apply_act(float v, Act a, float alpha) {
  switch (a) {
    case Act::None:
      return v;
    case Act::ReLU:
      return v > 0.f ? v : 0.f;
    case Act::Sigmoid:
      return 1.f / (1.f + expf(-v));
    case Act::LeakyReLU:
      return v > 0.f ? v : v * alpha;
  }
  return v;
}

/// One stored conv output element after the fused residual Add `r` (when has_res; rounded like an fp16
/// Add) and the ReLU that follows it.
__device__ __forceinline__ __half add_residual_relu(__half v, __half r, bool has_res, bool relu_after) {
  float f = __half2float(v);
  if (has_res) f = __half2float(__float2half_rn(f + __half2float(r)));
  if (relu_after) f = f > 0.f ? f : 0.f;
  return __float2half_rn(f);
}

/// The fp16 conv epilogue's last steps on 8 consecutive columns of one row, then their 16-byte
/// store at y + at: v holds half(act(acc + bias)); with a residual v = half(v + r), then the
/// optional ReLU (the roundings of an unfused fp16 Add and Relu). Shared by the implicit-GEMM tiles
/// and the osplit kernel, so both round alike. y may be the residual (in place): each chunk is read
/// before it is written.
__device__ __forceinline__ void store8_residual_relu(__half* y, const __half* __restrict__ res, int64_t at,
                                                     bool relu_after, __half (&v)[8]) {
  if (res || relu_after) {
    alignas(16) __half r[8];
    if (res) *reinterpret_cast<uint4*>(r) = *reinterpret_cast<const uint4*>(res + at);
#pragma unroll
    for (int q = 0; q < 8; ++q) v[q] = add_residual_relu(v[q], r[q], res != nullptr, relu_after);
  }
  *reinterpret_cast<uint4*>(y + at) = *reinterpret_cast<const uint4*>(v);
}

__device__ __forceinline__ void record_error(ErrSlot* e, long long row, long long v0, long long v1) {
  atomicAdd(&e->hits, 1ull);
  atomicMin(&e->row, row);
  atomicMax(&e->v0, v0);
  atomicMax(&e->v1, v1);
}

}  // namespace scn::cuda
