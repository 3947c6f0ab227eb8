// A device site set (the CUDA backend's SiteIndex over buffers of its own) for the tests that call the site, rank,
// order and map launchers directly: the index's fields are set from the buffers and the grid in one place, as the
// engine's arena sets them.
#pragma once

#include <vector_types.h>

#include <cstdint>

#include "backends/cuda/kernels.h"
#include "cuda/device_buffer.h"

namespace scn::cudatest {

/// A site set's grid: batch x s0 x s1 x s2 cells, one bit each.
struct SiteGrid {
  int batch, s0, s1, s2;
  int64_t cells() const { return int64_t(batch) * s0 * s1 * s2; }
  int64_t words() const { return (cells() + 63) / 64; }
};

struct DeviceSiteSet {
  DeviceBuffer<uint64_t> bits;        ///< the grid's words, then guard_words more (a test's overrun check)
  DeviceBuffer<uint16_t> rank_local;  ///< per word
  DeviceBuffer<uint32_t> rank_block;  ///< per kRankBlock words
  DeviceBuffer<int32_t> perm;         ///< cap entries with a perm, else one unused element (s.perm is null)
  DeviceBuffer<int4> coords;          ///< cap rows
  DeviceBuffer<int> count;            ///< the device row count
  cuda::SiteIndex s;

  DeviceSiteSet(const SiteGrid& g, int64_t cap, bool with_perm = false, int64_t guard_words = 0)
      : bits(size_t(g.words() + guard_words)),
        rank_local(size_t(g.words())),
        rank_block(size_t(cuda::rank_blocks(g.words()))),
        perm(with_perm ? size_t(cap) : 1),
        coords(size_t(cap)),
        count(1) {
    s.bits = bits.p;
    s.rank_local = rank_local.p;
    s.rank_block = rank_block.p;
    s.perm = with_perm ? perm.p : nullptr;
    s.coords = coords.p;
    s.count = count.p;
    s.words = g.words();
    s.cap = cap;
    s.s0 = g.s0;
    s.s1 = g.s1;
    s.s2 = g.s2;
    s.batch = g.batch;
  }
  /// Every allocation succeeded.
  bool ok() const { return bits.p && rank_local.p && rank_block.p && perm.p && coords.p && count.p; }
};

}  // namespace scn::cudatest
