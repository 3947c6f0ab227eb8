// The neighbour-row order of a generated site set (backends/cuda/site_order.cu) against a host twin: the set's ranks
// (bitmap order), each site's six-bit key and a stable sort by key, compared element by element. The engine's tests
// see the order only through outputs that do not depend on it (a row's sum is the same wherever the row sits); this
// one checks the permutation itself.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "backends/cuda/kernels.h"
#include "cuda/cuda_test_util.h"
#include "cuda/device_buffer.h"
#include "cuda/device_site_set.h"
#include "plan/arena_layout.h"

namespace scn::cuda {
namespace {

#define CUDA_OK(x) ASSERT_EQ((x), cudaSuccess) << #x

struct HostSet {
  int batch, s0, s1, s2;
  std::vector<uint8_t> occupied;  // [batch x s0 x s1 x s2]
  bool at(int b, int i0, int i1, int i2) const {
    if (i0 < 0 || i0 >= s0 || i1 < 0 || i1 >= s1 || i2 < 0 || i2 >= s2) return false;
    return occupied[((size_t(b) * s0 + i0) * s1 + i1) * s2 + i2] != 0;
  }
  /// Bit q: the kernel row (i0 - 1 for q < 3, else i0 + 1; i1 + q % 3 - 1) holds a site among i2 - 1 .. i2 + 1.
  uint32_t key(int b, int i0, int i1, int i2) const {
    uint32_t k = 0;
    for (int q = 0; q < 6; ++q) {
      const int r0 = i0 + (q < 3 ? -1 : 1), r1 = i1 + q % 3 - 1;
      bool any = false;
      for (int d = -1; d <= 1; ++d) any = any || at(b, r0, r1, i2 + d);
      k |= uint32_t(any) << q;
    }
    return k;
  }
};

template <class T>
using Dev = cudatest::DeviceBuffer<T>;

TEST(CudaSiteOrder, PermutationIsAStableSortOfTheBitmapOrderByNeighbourRowKey) {
  SCN_REQUIRE_CUDA();
  int device = 0, sms = 0;
  CUDA_OK(cudaGetDevice(&device));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // the last axis (150) is no multiple of 64, so kernel rows straddle bitmap words; sparse to nearly full frames
  for (const double density : {0.03, 0.35, 0.9}) {
    HostSet h{2, 7, 23, 150, {}};
    const size_t cells = size_t(h.batch) * h.s0 * h.s1 * h.s2;
    std::mt19937 rng(unsigned(density * 1000));
    std::bernoulli_distribution occupied(density);
    h.occupied.resize(cells);
    for (auto& o : h.occupied) o = occupied(rng);
    std::vector<std::array<int, 4>> sites;  // bitmap (= rank) order
    for (int b = 0; b < h.batch; ++b)
      for (int i0 = 0; i0 < h.s0; ++i0)
        for (int i1 = 0; i1 < h.s1; ++i1)
          for (int i2 = 0; i2 < h.s2; ++i2)
            if (h.at(b, i0, i1, i2)) sites.push_back({b, i0, i1, i2});
    const int64_t n = int64_t(sites.size());
    ASSERT_GT(n, 0);
    // host twin: row of rank r = its place in a stable sort by key
    std::vector<uint32_t> keys(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
      const auto& c = sites[size_t(r)];
      keys[size_t(r)] = h.key(c[0], c[1], c[2], c[3]);
    }
    std::vector<int64_t> by_row(static_cast<size_t>(n));
    std::iota(by_row.begin(), by_row.end(), 0);
    std::stable_sort(by_row.begin(), by_row.end(),
                     [&](int64_t a, int64_t b) { return keys[size_t(a)] < keys[size_t(b)]; });
    std::vector<int32_t> expect_perm(static_cast<size_t>(n));
    for (int64_t row = 0; row < n; ++row) expect_perm[size_t(by_row[size_t(row)])] = int32_t(row);
    // the device set's bits, from the host
    const int64_t words = int64_t((cells + 63) / 64);
    std::vector<uint64_t> bits(static_cast<size_t>(words), 0);
    for (size_t i = 0; i < cells; ++i)
      if (h.occupied[i]) bits[i / 64] |= uint64_t(1) << (i % 64);

    // spare capacity (an engine planned for more rows), and grids of 3 blocks: each block walks several groups
    for (const std::pair<int64_t, int>& variant : {std::pair<int64_t, int>{37, 0}, {8 * n, 3}}) {
      const int64_t spare = variant.first;
      const int max_blocks = variant.second;
      SCOPED_TRACE(::testing::Message() << "capacity " << n << " + " << spare << ", max_blocks " << max_blocks);
      const int64_t cap = n + spare;
      // the device set: the bits, ranks and count by launch_rank, then the order
      cudatest::DeviceSiteSet set({h.batch, h.s0, h.s1, h.s2}, cap, true);
      ASSERT_EQ(set.s.words, words);
      Dev<int4> d_by_rank{static_cast<size_t>(cap)};
      Dev<uint8_t> d_keys{static_cast<size_t>(cap)};
      Dev<uint32_t> d_hist{static_cast<size_t>((site_order_blocks(cap) + 1) * kSiteOrderBuckets)};  // as the arena
      Dev<ErrSlot> d_err(kNumErrKinds);
      ASSERT_TRUE(set.ok() && d_by_rank.p && d_keys.p && d_hist.p && d_err.p);
      CUDA_OK(cudaMemcpy(set.bits.p, bits.data(), bits.size() * 8, cudaMemcpyHostToDevice));
      CUDA_OK(cudaMemset(d_err.p, 0, sizeof(ErrSlot) * kNumErrKinds));
      const SiteIndex& s = set.s;
      SiteOrderBuffers t;
      t.coords_by_rank = d_by_rank.p;
      t.keys = d_keys.p;
      t.hist = d_hist.p;
      launch_rank(s, true, d_err.p, sms, nullptr);
      launch_site_order(s, t, sms, nullptr, false, max_blocks);
      CUDA_OK(cudaDeviceSynchronize());

      int count = 0;
      CUDA_OK(cudaMemcpy(&count, set.count.p, sizeof(int), cudaMemcpyDeviceToHost));
      ASSERT_EQ(count, n) << "density " << density;
      std::vector<int32_t> perm(static_cast<size_t>(n));
      std::vector<int4> coords(static_cast<size_t>(n));
      CUDA_OK(cudaMemcpy(perm.data(), set.perm.p, perm.size() * 4, cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(coords.data(), set.coords.p, coords.size() * sizeof(int4), cudaMemcpyDeviceToHost));
      int64_t perm_bad = 0, coord_bad = 0;
      for (int64_t r = 0; r < n; ++r) {
        if (perm[size_t(r)] != expect_perm[size_t(r)]) {
          if (perm_bad++ == 0)
            ADD_FAILURE() << "density " << density << ": rank " << r << " (key " << keys[size_t(r)] << ") at row "
                          << perm[size_t(r)] << ", expected " << expect_perm[size_t(r)];
          continue;
        }
        const int4 c = coords[size_t(perm[size_t(r)])];
        const auto& e = sites[size_t(r)];
        coord_bad += c.x != e[0] || c.y != e[1] || c.z != e[2] || c.w != e[3];
      }
      EXPECT_EQ(perm_bad, 0) << "density " << density << ", " << n << " sites";
      EXPECT_EQ(coord_bad, 0) << "density " << density << ": rows whose coordinates are not their rank's site";
    }
    // the keys spread over many groups: the order is not the bitmap order
    EXPECT_GT(std::count_if(expect_perm.begin(), expect_perm.end(),
                            [&, r = int64_t(0)](int32_t row) mutable { return row != r++; }),
              0);
  }
}

}  // namespace
}  // namespace scn::cuda
