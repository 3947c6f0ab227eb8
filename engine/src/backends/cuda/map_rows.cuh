// One kernel row of a kernel map (the k2 entries of output row o at kernel taps (r0, r1, 0..k2-1)), the
// unit of work of rows_map_kernel (kernel_map.cu) and of the osplit conv that builds the input level's
// submanifold map itself (igemm_offset_split.cuh, MapBuild).
#pragma once

#include "backends/cuda/common.cuh"

namespace scn::cuda {

enum class MapMode { Subm, Strided, Inverse };

/// Entries of kernel row q = r0 * k1 + r1 of output row o (coordinates c) -> dst[0 .. k2).
/// Along the last axis the k2 candidate sites are consecutive keys (dilation 1), so they share one bitmap
/// word (two at a word edge) and one rank base: about a third of the loads of one lookup per (row, offset).
/// Same entries as one lookup per offset (the same test per candidate: in the grid, bit set, rank below cap).
///   Subm:    s = the set, candidate c + (r - k/2) * d
///   Strided: s = the conv's input set, candidate c * st - p + r * d
/// KS: the kernel size of every axis when known at compile time (3: the 3x3x3 convs, whose divisions
/// by the kernel rows then compile to multiplications), 0 = read from g. Key: the bitmap key's type,
/// 32-bit when every key of the bitmap fits (64-bit keys cost several instructions per multiply and
/// compare). dst may be global or shared memory.
template <MapMode M, int KS, typename Key>
__device__ __forceinline__ void map_kernel_row(const SiteIndex& s, const MapGeom& g, const int4 c, int q,
                                               int32_t* dst) {
  static_assert(M != MapMode::Inverse, "inverse maps keep map_kernel");
  const int k0 = KS ? KS : g.k0, k1 = KS ? KS : g.k1, k2 = KS ? KS : g.k2;
  const int r0 = q / k1, r1 = q - r0 * k1;
  const int i0 = M == MapMode::Subm ? c.y + (r0 - k0 / 2) * g.d0 : c.y * g.st0 - g.p0 + r0 * g.d0;
  const int i1 = M == MapMode::Subm ? c.z + (r1 - k1 / 2) * g.d1 : c.z * g.st1 - g.p1 + r1 * g.d1;
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

/// Every key of the bitmap of `s` fits a 32-bit key.
inline bool map_keys32(const SiteIndex& s) { return s.words < (int64_t(1) << 26); }

}  // namespace scn::cuda
