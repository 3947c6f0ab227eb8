// Kernel maps of the CPU reference backend (spconv 2.x semantics, see docs/semantics):
// a site set is a list of active voxels (b, i0, i1, i2) with a hash index; a kernel map is an
// out_in table [N_out x K] holding, for every output site and kernel offset, the input row
// that contributes (or -1).
#pragma once

#include <cstdint>
#include <vector>

#include "graph/analysis.h"

namespace scn::cpu {

/// Open-addressing hash from a linear site key to its row.
class SiteHash {
 public:
  void build(const std::vector<int64_t>& keys);
  int32_t find(int64_t key) const {
    if (keys_.empty()) return -1;
    size_t h = slot(key);
    while (true) {
      const int64_t k = keys_[h];
      if (k == key) return rows_[h];
      if (k == kEmpty) return -1;
      h = (h + 1) & mask_;
    }
  }

 private:
  static constexpr int64_t kEmpty = -1;
  size_t slot(int64_t key) const {
    uint64_t x = uint64_t(key) * 0x9E3779B97F4A7C15ull;
    return size_t(x >> 17) & mask_;
  }
  std::vector<int64_t> keys_;
  std::vector<int32_t> rows_;
  size_t mask_ = 0;
};

struct SiteSet {
  Int3 shape{0, 0, 0};
  int batch = 1;
  std::vector<int32_t> coords;  ///< [N, 4]: b, i0, i1, i2
  std::vector<int64_t> keys;    ///< linear keys, same order
  SiteHash hash;
  int64_t size() const { return int64_t(keys.size()); }
  int64_t key(int32_t b, int32_t i0, int32_t i1, int32_t i2) const {
    return ((int64_t(b) * shape[0] + i0) * shape[1] + i1) * shape[2] + i2;
  }
  /// Fills keys and the hash from coords.
  void index();
};

struct KernelMap {
  int kernel_volume = 0;
  int64_t num_out = 0;
  std::vector<int32_t> out_in;  ///< [num_out x kernel_volume], -1 = no pair
  int64_t num_pairs() const;
};

/// Submanifold map: output sites = input sites.
KernelMap build_subm_map(const SiteSet& sites, const MapSlot& slot, int threads);
/// Regular (strided) map; fills `out` with the output sites sorted by linear key.
KernelMap build_strided_map(const SiteSet& in, const MapSlot& slot, const Int3& out_shape,
                            SiteSet& out, int threads);
/// The pairs of a strided map used backwards: out_in[i][r] = o for every stored (i -> o, r).
KernelMap build_inverse_map(const KernelMap& strided, int64_t num_in_sites);

}  // namespace scn::cpu
