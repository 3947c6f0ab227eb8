// The per-point rules of the voxelizer, shared verbatim by the CPU oracle (voxelize_cpu.cpp) and the
// CUDA kernels (voxelize_kernels.cuh) so both classify every point the same way. Device code uses the
// round-to-nearest intrinsics explicitly so no compiler flag can change the arithmetic.
#pragma once

#include <cmath>
#include <cstdint>

#include "scn/voxelize.h"

#if defined(__FAST_MATH__) || defined(__USE_FAST_MATH__)
#error "the voxelizer needs IEEE float arithmetic (CPU and CUDA results must be bitwise equal): no fast math"
#endif

#ifdef __CUDACC__
#define SCN_VOX_HD __host__ __device__ __forceinline__
#else
#define SCN_VOX_HD inline
#endif

namespace scn::vox {

/// Everything a kernel needs about the config, as plain values.
struct Geometry {
  float min[3], max[3], size[3];  ///< x, y, z
  int32_t n[3];                   ///< cells along x, y, z
  int32_t s[3];                   ///< grid in the output index order
  int xyz;                        ///< 1: indices (b, x, y, z); 0: (b, z, y, x)
  uint32_t cells;                 ///< s0 * s1 * s2: also the key of dropped points (sorts last)
  int key_bits;                   ///< bits of `cells`: the radix sort's end bit
};

Geometry make_geometry(const VoxelizerConfig& config);

enum PointClass : int { kKept = 0, kNonFinite = 1, kOutOfRange = 2 };

SCN_VOX_HD float cell_coordinate(float p, float min, float size) {
#ifdef __CUDA_ARCH__
  return floorf(__fdiv_rn(__fsub_rn(p, min), size));
#else
  return std::floor((p - min) / size);
#endif
}

/// Classifies a point and gives its cell key (ascending key = ascending (i0, i1, i2)).
SCN_VOX_HD int classify_point(const Geometry& g, float x, float y, float z, uint32_t* key) {
  *key = g.cells;
#ifdef __CUDA_ARCH__
  if (!isfinite(x) || !isfinite(y) || !isfinite(z)) return kNonFinite;
#else
  if (!std::isfinite(x) || !std::isfinite(y) || !std::isfinite(z)) return kNonFinite;
#endif
  const float p[3] = {x, y, z};
  int32_t c[3];
  for (int d = 0; d < 3; ++d) {
    if (!(p[d] >= g.min[d] && p[d] < g.max[d])) return kOutOfRange;
    const float q = cell_coordinate(p[d], g.min[d], g.size[d]);
    // Rounding can put a point just below max into cell n: outside the grid, dropped like NVIDIA's.
    if (!(q >= 0.f && q < float(g.n[d]))) return kOutOfRange;
    c[d] = int32_t(q);
  }
  const uint32_t i0 = uint32_t(g.xyz ? c[0] : c[2]), i2 = uint32_t(g.xyz ? c[2] : c[0]);
  *key = (i0 * uint32_t(g.s[1]) + uint32_t(c[1])) * uint32_t(g.s[2]) + i2;
  return kKept;
}

/// The indices row (b, i0, i1, i2) of a cell key.
SCN_VOX_HD void key_to_index(const Geometry& g, uint32_t key, int32_t batch, int32_t* row) {
  row[0] = batch;
  row[3] = int32_t(key % uint32_t(g.s[2]));
  key /= uint32_t(g.s[2]);
  row[2] = int32_t(key % uint32_t(g.s[1]));
  row[1] = int32_t(key / uint32_t(g.s[1]));
}

/// The bits a NaN feature is written with, in float32 and float16 outputs: one NaN whatever produced it. A NaN in a
/// feature column (not a coordinate: those drop the point) reaches the output; its payload would otherwise differ
/// between the CPU (x86 keeps an operand's payload) and CUDA (arithmetic and conversions give the canonical NaN).
constexpr uint32_t kFeatureNanBits = 0x7fffffffu;
constexpr uint16_t kFeatureNanHalfBits = 0x7fffu;

}  // namespace scn::vox
