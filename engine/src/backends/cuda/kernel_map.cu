// Kernel maps on the GPU in the implicit-GEMM format out_in[o * K + k] (input row or -1), one
// O(1) bitmap-rank lookup (common.cuh) per (row, offset): by kernel rows (rows_map_kernel, the
// default for submanifold and strided maps) or one lookup per (row, offset) (map_kernel: inverse
// maps, and the baseline of the other two).
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
    map_kernel(SiteIndex rows, SiteIndex look, MapGeom g, int32_t* __restrict__ out_in, bool let_next) {
  wait_previous_kernel(let_next);
  const int K = g.K();
  const int64_t n = rows_of(rows.count, rows.cap);
  // rows are warp-uniform: every lane of a warp runs the same number of iterations
  for (int64_t o = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.y; o < n; o += int64_t(gridDim.x) * kRowsPerBlock) {
    const int4 c = rows.coords[o];
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
// Any kernel size, dilation and bitmap (64-bit keys); the common case — 3x3x3, dilation 1 along the last axis,
// 32-bit keys — runs rows3_map_kernel below instead.
template <MapMode M>
__global__ void rows_map_kernel(SiteIndex rows, SiteIndex s, MapGeom g, int32_t* __restrict__ out_in, bool let_next) {
  using Key = int64_t;
  wait_previous_kernel(let_next);
  static_assert(M != MapMode::Inverse, "inverse maps keep map_kernel");
  const int k0 = g.k0, k1 = g.k1, k2 = g.k2;
  const int K = k0 * k1 * k2;
  const int P = k0 * k1;
  const int64_t total = rows_of(rows.count, rows.cap) * P;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = t / P;
    const int q = int(t - o * P);
    const int r0 = q / k1, r1 = q - r0 * k1;
    const int4 c = rows.coords[o];
    const int i0 = M == MapMode::Subm ? c.y + (r0 - k0 / 2) * g.d0 : c.y * g.st0 - g.p0 + r0 * g.d0;
    const int i1 = M == MapMode::Subm ? c.z + (r1 - k1 / 2) * g.d1 : c.z * g.st1 - g.p1 + r1 * g.d1;
    int32_t* dst = out_in + o * K + q * k2;
    // the kernel row's candidates differ in their last coordinate only: one key base for all of them
    const bool row_in = site_line_in_grid(s, c.x, i0, i1);
    const Key base_key = site_key<Key>(s, c.x, i0, i1, 0);
    Key cur = Key(-1);  // bitmap word held in `word`, and its rank base (-1: not loaded yet)
    uint64_t word = 0;
    int64_t base = -1;
    for (int r2 = 0; r2 < k2; ++r2) {
      const int i2 = M == MapMode::Subm ? c.w + (r2 - k2 / 2) * g.d2 : c.w * g.st2 - g.p2 + r2 * g.d2;
      int32_t v = -1;
      if (row_in && i2 >= 0 && i2 < s.s2) {
        const Key key = base_key + Key(i2);
        const Key w = key >> 6;
        if (w != cur) {
          cur = w;
          word = __ldg(s.bits + w);
          base = -1;
        }
        if ((word >> (key & 63)) & 1) {
          if (base < 0) base = site_rank_base(s, int64_t(w));
          v = site_row(s, site_rank_in_word(base, int64_t(key), word));
        }
      }
      dst[r2] = v;
    }
  }
}

// The 3x3x3 kernel rows with dilation 1 along the last axis, 32-bit keys and fewer than 2^31 (row, kernel
// row) items: the same entries as rows_map_kernel<M>, without its serial chain. There, each
// candidate's loads sat behind the previous candidate's branches (coordinates -> word -> rank -> row of
// the first, then the row of the second, then of the third: six dependent round trips); here every load
// is predicated and each kind is issued for all three candidates at once (coordinates -> words -> rank
// base -> rows: four), in 32-bit index and rank arithmetic (ranks are below cap < 2^31).
template <MapMode M>
__global__ void rows3_map_kernel(SiteIndex rows, SiteIndex s, MapGeom g, int32_t* __restrict__ out_in, bool let_next) {
  wait_previous_kernel(let_next);
  const uint32_t total = uint32_t(rows_of(rows.count, rows.cap)) * 9u;
  const uint32_t cap = uint32_t(s.cap);
  for (uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < total; t += gridDim.x * blockDim.x) {
    const uint32_t o = t / 9u;
    const int q = int(t - o * 9u);
    const int r0 = q / 3, r1 = q - r0 * 3;
    const int4 c = __ldg(rows.coords + o);
    const int i0 = M == MapMode::Subm ? c.y + (r0 - 1) * g.d0 : c.y * g.st0 - g.p0 + r0 * g.d0;
    const int i1 = M == MapMode::Subm ? c.z + (r1 - 1) * g.d1 : c.z * g.st1 - g.p1 + r1 * g.d1;
    const int f2 = M == MapMode::Subm ? c.w - 1 : c.w * g.st2 - g.p2;  // last coordinate of candidate 0
    const bool line = site_line_in_grid(s, c.x, i0, i1);
    // candidate r2 (last coordinate f2 + r2) inside the grid
    const bool v0 = line && f2 >= 0 && f2 < s.s2, v1 = line && f2 + 1 >= 0 && f2 + 1 < s.s2,
               v2 = line && f2 + 2 >= 0 && f2 + 2 < s.s2;
    const uint32_t k0 = site_key<uint32_t>(s, c.x, i0, i1, 0) + uint32_t(f2);  // candidate r2: k0 + r2
    // the first and the last valid candidate's words (the same one but at a word edge)
    const uint32_t wl = (v0 ? k0 : v1 ? k0 + 1u : k0 + 2u) >> 6, wh = (v2 ? k0 + 2u : v1 ? k0 + 1u : k0) >> 6;
    const bool any = v0 || v1 || v2;
    const uint64_t lo = any ? __ldg(s.bits + wl) : 0u;
    const uint64_t hi = any && wh != wl ? __ldg(s.bits + wh) : lo;
    auto word_of = [&](uint32_t k) { return (k >> 6) == wl ? lo : hi; };
    const bool p0 = v0 && (word_of(k0) >> (k0 & 63) & 1u);
    const bool p1 = v1 && (word_of(k0 + 1u) >> ((k0 + 1u) & 63) & 1u);
    const bool p2 = v2 && (word_of(k0 + 2u) >> ((k0 + 2u) & 63) & 1u);
    const bool in_lo0 = (k0 >> 6) == wl, in_lo1 = ((k0 + 1u) >> 6) == wl, in_lo2 = ((k0 + 2u) >> 6) == wl;
    const bool need_lo = (p0 && in_lo0) || (p1 && in_lo1) || (p2 && in_lo2);
    const bool need_hi = (p0 && !in_lo0) || (p1 && !in_lo1) || (p2 && !in_lo2);
    const uint32_t rb_lo = need_lo ? __ldg(s.rank_block + wl / kRankBlock) + __ldg(s.rank_local + wl) : 0u;
    const uint32_t rb_hi = need_hi ? __ldg(s.rank_block + wh / kRankBlock) + __ldg(s.rank_local + wh) : 0u;
    auto row = [&](bool p, bool in_lo, uint32_t k) -> int32_t {
      if (!p) return -1;
      const uint64_t w = in_lo ? lo : hi;
      const uint32_t r = (in_lo ? rb_lo : rb_hi) + uint32_t(__popcll(w & ((uint64_t(1) << (k & 63)) - 1u)));
      if (r >= cap) return -1;
      return s.perm ? __ldg(s.perm + r) : int32_t(r);
    };
    const int32_t e0 = row(p0, in_lo0, k0), e1 = row(p1, in_lo1, k0 + 1u), e2 = row(p2, in_lo2, k0 + 2u);
    int32_t* dst = out_in + size_t(o) * 27u + size_t(q) * 3u;
    dst[0] = e0;
    dst[1] = e1;
    dst[2] = e2;
  }
}

int map_grid(int64_t cap, int sm) {
  const int64_t need = (cap + kRowsPerBlock - 1) / kRowsPerBlock;
  const int64_t most = int64_t(sm) * 32;
  return int(need < 1 ? 1 : (need < most ? need : most));
}

/// rows3_map_kernel runs the map: 3x3x3, dilation 1 along the last axis, 32-bit keys, (row, kernel row)
/// items below 2^31.
bool rows3(const SiteIndex& rows, const MapGeom& g, const SiteIndex& look) {
  return g.k0 == 3 && g.k1 == 3 && g.k2 == 3 && g.d2 == 1 && site_keys32(look) && rows.cap * 9 < (int64_t(1) << 31);
}

}  // namespace

void launch_subm_map(SiteIndex s, MapGeom g, int32_t* out_in, MapKernel kind, int sm, cudaStream_t st, bool pdl) {
  const unsigned grid = unsigned(grid_for(s.cap * g.k0 * g.k1, 256, sm, 16));
  if (kind == MapKernel::Rows && rows3(s, g, s))
    launch_chained(rows3_map_kernel<MapMode::Subm>, grid, 256, 0, st, pdl, s, s, g, out_in);
  else if (kind == MapKernel::Rows)
    launch_chained(rows_map_kernel<MapMode::Subm>, grid, 256, 0, st, pdl, s, s, g, out_in);
  else
    launch_chained(map_kernel<MapMode::Subm>, unsigned(map_grid(s.cap, sm)), dim3(32, kRowsPerBlock), 0, st, pdl, s, s,
                   g, out_in);
  SCN_CUDA_LAUNCHED();
}

void launch_strided_map(SiteIndex in, SiteIndex out, MapGeom g, int32_t* out_in, MapKernel kind, int sm,
                        cudaStream_t st, bool pdl) {
  const unsigned grid = unsigned(grid_for(out.cap * g.k0 * g.k1, 256, sm, 16));
  if (kind == MapKernel::Rows && rows3(out, g, in))
    launch_chained(rows3_map_kernel<MapMode::Strided>, grid, 256, 0, st, pdl, out, in, g, out_in);
  else if (kind == MapKernel::Rows)
    launch_chained(rows_map_kernel<MapMode::Strided>, grid, 256, 0, st, pdl, out, in, g, out_in);
  else
    launch_chained(map_kernel<MapMode::Strided>, unsigned(map_grid(out.cap, sm)), dim3(32, kRowsPerBlock), 0, st, pdl,
                   out, in, g, out_in);
  SCN_CUDA_LAUNCHED();
}

void launch_inverse_map(SiteIndex in, SiteIndex out, MapGeom g, int32_t* out_in, int sm, cudaStream_t st, bool pdl) {
  launch_chained(map_kernel<MapMode::Inverse>, unsigned(map_grid(in.cap, sm)), dim3(32, kRowsPerBlock), 0, st, pdl, in,
                 out, g, out_in);
  SCN_CUDA_LAUNCHED();
}

}  // namespace scn::cuda
