// Kernel maps on the GPU in the implicit-GEMM format out_in[o * K + k] (input row or -1), one
// O(1) bitmap-rank lookup (common.cuh) per (row, offset), one thread each; strided maps by
// default from the input side (one lookup per (input, tap) pair, strided_scatter_kernel).
//   subm:     in = o + (r - K/2) * dil                           on the same site set
//   strided:  in = o * st - p + r * dil                          on the conv's input set
//   inverse:  out = (i + p - r * dil) / st when divisible, for i on the strided conv's input set

#include "backends/cuda/common.cuh"

namespace scn::cuda {

namespace {

constexpr int kRowsPerBlock = 8;  // block = 32 offsets x 8 rows: one lookup per thread

enum class MapMode { Subm, Strided, Inverse };

// Lanes are kernel offsets (k = lane, lane + 32, ...), warps are rows: every lookup is independent,
// so the few dependent loads of each lookup overlap across the block, and each warp writes one
// row's K entries contiguously.
template <MapMode M>
__global__ void __launch_bounds__(32 * kRowsPerBlock)
    map_kernel(SiteIndex rows, SiteIndex look, MapGeom g, int32_t* __restrict__ out_in, uint32_t* __restrict__ masks) {
  const int K = g.K();
  const int64_t n = rows_of(rows.count, rows.cap);
  // rows are warp-uniform: every lane of a warp runs the same number of iterations
  for (int64_t o = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.y; o < n; o += int64_t(gridDim.x) * kRowsPerBlock) {
    const int4 c = rows.coords[o];
    uint32_t mask = 0;
    for (int kb = 0; kb < K; kb += 32) {
      const int k = kb + int(threadIdx.x);
      int32_t v = -1;
      if (k < K) {
        const int r0 = k / (g.k1 * g.k2), r1 = (k / g.k2) % g.k1, r2 = k % g.k2;
        if constexpr (M == MapMode::Subm) {
          v = site_lookup(look, c.x, c.y + (r0 - g.k0 / 2) * g.d0, c.z + (r1 - g.k1 / 2) * g.d1,
                          c.w + (r2 - g.k2 / 2) * g.d2);
        } else if constexpr (M == MapMode::Strided) {
          v = site_lookup(look, c.x, c.y * g.st0 - g.p0 + r0 * g.d0, c.z * g.st1 - g.p1 + r1 * g.d1,
                          c.w * g.st2 - g.p2 + r2 * g.d2);
        } else {
          const int t0 = c.y + g.p0 - r0 * g.d0, t1 = c.z + g.p1 - r1 * g.d1, t2 = c.w + g.p2 - r2 * g.d2;
          if (site_in_grid(rows, c.x, c.y, c.z, c.w) && t0 >= 0 && t1 >= 0 && t2 >= 0 && t0 % g.st0 == 0 &&
              t1 % g.st1 == 0 && t2 % g.st2 == 0)
            v = site_lookup(look, c.x, t0 / g.st0, t1 / g.st1, t2 / g.st2);
        }
        out_in[o * K + k] = v;
      }
      const uint32_t b = __ballot_sync(0xffffffffu, v >= 0);  // one call site, every lane
      if (kb == 0) mask = b;
    }
    if (masks && threadIdx.x == 0) masks[o] = mask;
  }
}

// Submanifold map of an input set (user row order through perm) with odd kernel sizes and K <= 31,
// using the symmetry d(K-1-k) = -d(k): if row o finds row i at offset k < K/2, then row i finds
// row o at offset K-1-k. Two rows per warp, one half-warp (16 lanes) per row; lane j < K/2 does the
// full lookup for offset j, writes out_in[o*K + j] and, when found (i), out_in[i*K + K-1-j] = o;
// it also tests the bit of offset K-1-j (one load, no rank) and writes -1 there when absent, so
// every entry is written exactly once. Lane K/2 looks the row itself up (the centre offset), in
// parallel with the other lanes' lookups. A row whose own lookup is not itself (outside the grid,
// or a duplicate that lost the perm slot) takes every offset by a full lookup, as the general
// kernel does, and is never written by others: the map is bitwise identical to map_kernel<Subm>.
// Valid only when every set bit has rank < cap (input sets).
__global__ void __launch_bounds__(32 * kRowsPerBlock)
    subm_sym_kernel(SiteIndex s, MapGeom g, int32_t* __restrict__ out_in) {
  const int K = g.K();
  const int half = K / 2;
  const int lane = int(threadIdx.x);
  const int j = lane & 15;
  const int64_t n = rows_of(s.count, s.cap);
  constexpr int kRows = 2 * kRowsPerBlock;
  // o0 is warp-uniform (every lane runs the same iterations: the shuffle below needs all 32)
  for (int64_t o0 = int64_t(blockIdx.x) * kRows + threadIdx.y * 2; o0 < n; o0 += int64_t(gridDim.x) * kRows) {
    const int64_t o = o0 + (lane >> 4);
    const bool live = o < n;
    const int4 c = live ? s.coords[o] : make_int4(-1, 0, 0, 0);
    int32_t v = -1;
    bool present = true;
    if (live && j <= half) {
      const int r0 = j / (g.k1 * g.k2), r1 = (j / g.k2) % g.k1, r2 = j % g.k2;
      const int a0 = (r0 - g.k0 / 2) * g.d0, a1 = (r1 - g.k1 / 2) * g.d1, a2 = (r2 - g.k2 / 2) * g.d2;
      if (j < half) {
        // mirrored offset K-1-j = -d(j): bit test only (its value comes from the neighbour's lane)
        const int m0 = c.y - a0, m1 = c.z - a1, m2 = c.w - a2;
        present = false;
        if (site_in_grid(s, c.x, m0, m1, m2)) {
          const int64_t key = site_key(s, c.x, m0, m1, m2);
          present = (__ldg(s.bits + (key >> 6)) >> (key & 63)) & 1;
        }
      }
      v = site_lookup(s, c.x, c.y + a0, c.z + a1, c.w + a2);  // j == half: the row itself
    }
    const int32_t self = __shfl_sync(0xffffffffu, v, (lane & 16) | half);
    if (!live) continue;
    if (self == int32_t(o)) {
      if (j < half) {
        out_in[o * K + j] = v;
        if (v >= 0) out_in[int64_t(v) * K + (K - 1 - j)] = int32_t(o);
        if (!present) out_in[o * K + (K - 1 - j)] = -1;
      } else if (j == half) {
        out_in[o * K + j] = v;
      }
    } else {
      for (int k = j; k < K; k += 16) {
        const int r0 = k / (g.k1 * g.k2), r1 = (k / g.k2) % g.k1, r2 = k % g.k2;
        out_in[o * K + k] = site_lookup(s, c.x, c.y + (r0 - g.k0 / 2) * g.d0, c.z + (r1 - g.k1 / 2) * g.d1,
                                        c.w + (r2 - g.k2 / 2) * g.d2);
      }
    }
  }
}

// Maps by kernel rows: one thread per (output row o, pair (r0, r1)) fills the k2 entries of that
// kernel row. Along the last axis the k2 candidate sites are consecutive keys (dilation 1), so they
// share one bitmap word (two at a word edge) and one rank base: about a third of the loads of one
// lookup per (row, offset), and each thread writes k2 contiguous entries, every entry once. Same
// entries as map_kernel<M> (the same test per candidate: in the grid, bit set, rank below cap).
//   Subm:    rows = look = the set, candidate c + (r - k/2) * d
//   Strided: rows = the output set, look = the input set, candidate c * st - p + r * d
template <MapMode M>
__global__ void rows_map_kernel(SiteIndex rows, SiteIndex s, MapGeom g, int32_t* __restrict__ out_in) {
  static_assert(M != MapMode::Inverse, "inverse maps keep map_kernel");
  const int K = g.K();
  const int P = g.k0 * g.k1;
  const int64_t total = rows_of(rows.count, rows.cap) * P;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = t / P;
    const int q = int(t - o * P);
    const int r0 = q / g.k1, r1 = q - r0 * g.k1;
    const int4 c = rows.coords[o];
    const int i0 = M == MapMode::Subm ? c.y + (r0 - g.k0 / 2) * g.d0 : c.y * g.st0 - g.p0 + r0 * g.d0;
    const int i1 = M == MapMode::Subm ? c.z + (r1 - g.k1 / 2) * g.d1 : c.z * g.st1 - g.p1 + r1 * g.d1;
    int32_t* dst = out_in + o * K + q * g.k2;
    int64_t cur = -1;  // bitmap word held in `word`, and its rank base (-1: not loaded yet)
    uint64_t word = 0;
    int64_t base = -1;
    for (int r2 = 0; r2 < g.k2; ++r2) {
      const int i2 = M == MapMode::Subm ? c.w + (r2 - g.k2 / 2) * g.d2 : c.w * g.st2 - g.p2 + r2 * g.d2;
      int32_t v = -1;
      if (site_in_grid(s, c.x, i0, i1, i2)) {
        const int64_t key = site_key(s, c.x, i0, i1, i2);
        const int64_t w = key >> 6;
        if (w != cur) {
          cur = w;
          word = __ldg(s.bits + w);
          base = -1;
        }
        if ((word >> (key & 63)) & 1) {
          if (base < 0) base = site_rank_base(s, w);
          v = site_row(s, site_rank_in_word(base, key, word));
        }
      }
      dst[r2] = v;
    }
  }
}

// Strided map from the input side: one thread per input row; for each kernel tap whose output
// coordinate is whole and inside the grid (the pairs strided_mark_kernel marked),
// out_in[row(o) * K + k] = i. An (o, k) entry has at most one input site, so after the live rows
// are set to -1 this is the gather form's map, with one lookup per (input, tap) pair (~3.4 at
// stride 2) instead of one per (output, offset) (27).
__global__ void strided_scatter_kernel(SiteIndex in, SiteIndex out, MapGeom g, int32_t* __restrict__ out_in) {
  const int K = g.K();
  const int64_t n = rows_of(in.count, in.cap);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int4 c = in.coords[i];
    // the site's row (a duplicate row that lost the site, or a row outside the grid, maps nothing);
    // a generated set's row i is the site of rank i, in the grid: no lookup needed
    if (in.perm && site_lookup(in, c.x, c.y, c.z, c.w) != int32_t(i)) continue;
    const TapMasks m = strided_taps(c, g, out);
    for (uint32_t a = m.m0; a; a &= a - 1u)
      for (uint32_t b = m.m1; b; b &= b - 1u)
        for (uint32_t e = m.m2; e; e &= e - 1u) {
          const int r0 = __ffs(a) - 1, r1 = __ffs(b) - 1, r2 = __ffs(e) - 1;
          const int32_t o = site_lookup(out, c.x, (c.y + g.p0 - r0 * g.d0) / g.st0, (c.z + g.p1 - r1 * g.d1) / g.st1,
                                        (c.w + g.p2 - r2 * g.d2) / g.st2);
          if (o >= 0) out_in[int64_t(o) * K + (r0 * g.k1 + r1) * g.k2 + r2] = int32_t(i);
        }
  }
}

// -1 in the K entries of every live row of a map.
__global__ void map_clear_kernel(const int* count, int64_t cap, int K, int32_t* __restrict__ out_in) {
  const int64_t total = rows_of(count, cap) * K;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x)
    out_in[t] = -1;
}

int map_grid(int64_t cap, int sm) {
  const int64_t need = (cap + kRowsPerBlock - 1) / kRowsPerBlock;
  const int64_t most = int64_t(sm) * 32;
  return int(need < 1 ? 1 : (need < most ? need : most));
}

}  // namespace

void launch_subm_map(SiteIndex s, MapGeom g, int32_t* out_in, uint32_t* masks, SubmMapKernel kind, int sm,
                     cudaStream_t st) {
  if (kind == SubmMapKernel::Rows && !masks) {
    rows_map_kernel<MapMode::Subm><<<grid_for(s.cap * g.k0 * g.k1, 256, sm, 16), 256, 0, st>>>(s, s, g, out_in);
    SCN_CUDA_LAUNCHED();
    return;
  }
  // symmetric variant: input sets (perm: every set bit has rank < count <= cap), odd kernel sizes
  // (d(K-1-k) = -d(k)), K <= 31 (half a warp per row), no neighbour masks wanted (row sort off)
  if (kind == SubmMapKernel::Symmetric && s.perm && !masks && (g.k0 & 1) && (g.k1 & 1) && (g.k2 & 1) && g.K() <= 31) {
    const int64_t need = (s.cap + 2 * kRowsPerBlock - 1) / (2 * kRowsPerBlock);
    const int64_t most = int64_t(sm) * 32;
    const int grid = int(need < 1 ? 1 : (need < most ? need : most));
    subm_sym_kernel<<<grid, dim3(32, kRowsPerBlock), 0, st>>>(s, g, out_in);
    SCN_CUDA_LAUNCHED();
    return;
  }
  map_kernel<MapMode::Subm><<<map_grid(s.cap, sm), dim3(32, kRowsPerBlock), 0, st>>>(s, s, g, out_in, masks);
  SCN_CUDA_LAUNCHED();
}

void launch_strided_map(SiteIndex in, SiteIndex out, MapGeom g, int32_t* out_in, uint32_t* masks, StridedMapKernel kind,
                        int sm, cudaStream_t st) {
  if (kind == StridedMapKernel::Rows && !masks) {
    rows_map_kernel<MapMode::Strided>
        <<<grid_for(out.cap * g.k0 * g.k1, 256, sm, 16), 256, 0, st>>>(out, in, g, out_in);
    SCN_CUDA_LAUNCHED();
    return;
  }
  // from the input side (fewer lookups), unless neighbour masks are wanted (row sort)
  const bool scatter = kind == StridedMapKernel::Scatter && !masks && g.k0 <= kMaxTapsPerAxis &&
                       g.k1 <= kMaxTapsPerAxis && g.k2 <= kMaxTapsPerAxis;
  if (scatter) {
    map_clear_kernel<<<grid_for(out.cap * g.K(), 256, sm), 256, 0, st>>>(out.count, out.cap, g.K(), out_in);
    SCN_CUDA_LAUNCHED();
    strided_scatter_kernel<<<grid_for(in.cap, 128, sm, 16), 128, 0, st>>>(in, out, g, out_in);
    SCN_CUDA_LAUNCHED();
    return;
  }
  map_kernel<MapMode::Strided><<<map_grid(out.cap, sm), dim3(32, kRowsPerBlock), 0, st>>>(out, in, g, out_in, masks);
  SCN_CUDA_LAUNCHED();
}

void launch_inverse_map(SiteIndex in, SiteIndex out, MapGeom g, int32_t* out_in, uint32_t* masks, int sm,
                        cudaStream_t st) {
  map_kernel<MapMode::Inverse><<<map_grid(in.cap, sm), dim3(32, kRowsPerBlock), 0, st>>>(in, out, g, out_in, masks);
  SCN_CUDA_LAUNCHED();
}

}  // namespace scn::cuda
