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
    map_kernel(SiteIndex rows, SiteIndex look, MapGeom g, int32_t* __restrict__ out_in) {
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
// KS: the kernel size of every axis when known at compile time (3: the 3x3x3 convs, whose divisions
// by the kernel rows then compile to multiplications; the kernel is bound by its integer arithmetic),
// 0 = read from g. Key: the bitmap key's type, 32-bit when every key of the bitmap fits (the common
// case: 64-bit keys cost several instructions per multiply and compare), else 64-bit.
template <MapMode M, int KS, typename Key>
__global__ void rows_map_kernel(SiteIndex rows, SiteIndex s, MapGeom g, int32_t* __restrict__ out_in) {
  static_assert(M != MapMode::Inverse, "inverse maps keep map_kernel");
  const int k0 = KS ? KS : g.k0, k1 = KS ? KS : g.k1, k2 = KS ? KS : g.k2;
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

int map_grid(int64_t cap, int sm) {
  const int64_t need = (cap + kRowsPerBlock - 1) / kRowsPerBlock;
  const int64_t most = int64_t(sm) * 32;
  return int(need < 1 ? 1 : (need < most ? need : most));
}

bool cube3(const MapGeom& g) { return g.k0 == 3 && g.k1 == 3 && g.k2 == 3; }

/// Every key of the bitmap of `s` fits a 32-bit key.
bool keys32(const SiteIndex& s) { return s.words < (int64_t(1) << 26); }

}  // namespace

void launch_subm_map(SiteIndex s, MapGeom g, int32_t* out_in, MapKernel kind, int sm, cudaStream_t st) {
  const int grid = grid_for(s.cap * g.k0 * g.k1, 256, sm, 16);
  if (kind == MapKernel::Rows && cube3(g) && keys32(s))
    rows_map_kernel<MapMode::Subm, 3, uint32_t><<<grid, 256, 0, st>>>(s, s, g, out_in);
  else if (kind == MapKernel::Rows && cube3(g))
    rows_map_kernel<MapMode::Subm, 3, int64_t><<<grid, 256, 0, st>>>(s, s, g, out_in);
  else if (kind == MapKernel::Rows)
    rows_map_kernel<MapMode::Subm, 0, int64_t><<<grid, 256, 0, st>>>(s, s, g, out_in);
  else
    map_kernel<MapMode::Subm><<<map_grid(s.cap, sm), dim3(32, kRowsPerBlock), 0, st>>>(s, s, g, out_in);
  SCN_CUDA_LAUNCHED();
}

void launch_strided_map(SiteIndex in, SiteIndex out, MapGeom g, int32_t* out_in, MapKernel kind, int sm,
                        cudaStream_t st) {
  const int grid = grid_for(out.cap * g.k0 * g.k1, 256, sm, 16);
  if (kind == MapKernel::Rows && cube3(g) && keys32(in))
    rows_map_kernel<MapMode::Strided, 3, uint32_t><<<grid, 256, 0, st>>>(out, in, g, out_in);
  else if (kind == MapKernel::Rows && cube3(g))
    rows_map_kernel<MapMode::Strided, 3, int64_t><<<grid, 256, 0, st>>>(out, in, g, out_in);
  else if (kind == MapKernel::Rows)
    rows_map_kernel<MapMode::Strided, 0, int64_t><<<grid, 256, 0, st>>>(out, in, g, out_in);
  else
    map_kernel<MapMode::Strided><<<map_grid(out.cap, sm), dim3(32, kRowsPerBlock), 0, st>>>(out, in, g, out_in);
  SCN_CUDA_LAUNCHED();
}

void launch_inverse_map(SiteIndex in, SiteIndex out, MapGeom g, int32_t* out_in, int sm, cudaStream_t st) {
  map_kernel<MapMode::Inverse><<<map_grid(in.cap, sm), dim3(32, kRowsPerBlock), 0, st>>>(in, out, g, out_in);
  SCN_CUDA_LAUNCHED();
}

}  // namespace scn::cuda
