// A strided conv's output site set made from the input bitmap (launch_strided_sites_from_bits) against the CPU
// oracle's strided map (spconv's rule: output o exists when some input site sits at o * stride - pad + r * dilation)
// and against the atomic marking from the input rows (launch_strided_mark + launch_rank): bitmap words, ranks and count
// compared word by word, over geometries whose lines straddle bitmap words or are shorter than one word.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <vector_functions.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernel_map.h"
#include "backends/cuda/kernels.h"
#include "cuda/cuda_test_util.h"
#include "cuda/device_buffer.h"
#include "cuda/device_site_set.h"

namespace scn::cuda {
namespace {

#define CUDA_OK(x) ASSERT_EQ((x), cudaSuccess) << #x

template <class T>
using Dev = cudatest::DeviceBuffer<T>;

using Grid = cudatest::SiteGrid;
using DevSet = cudatest::DeviceSiteSet;

int out_size(int in, int k, int st, int p, int d) { return (in + 2 * p - d * (k - 1) - 1) / st + 1; }

struct Case {
  std::string name;
  Grid in;
  MapGeom g;
  double density;
};

TEST(CudaStridedSites, FromBitmapEqualsTheRuleAndTheAtomicMarking) {
  SCN_REQUIRE_CUDA();
  int device = 0, sms = 0;
  CUDA_OK(cudaGetDevice(&device));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::vector<Case> cases{
      // CenterPoint's downsampling conv: lines of 150 -> 75 sites straddle words
      {"k3s2p1", {2, 9, 21, 150}, {3, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1}, 0.05},
      {"k3s2p1_dense", {1, 7, 13, 200}, {3, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1}, 0.6},
      // conv_out of CenterPoint: (3, 1, 1) stride (2, 1, 1), no padding; lines shorter than a word
      {"k311s211p0", {2, 11, 30, 40}, {3, 1, 1, 2, 1, 1, 0, 0, 0, 1, 1, 1}, 0.1},
      // even kernel, no padding; strides, pads and dilations that differ per axis; stride 3 along the last axis
      {"k2s2p0", {1, 8, 16, 128}, {2, 2, 2, 2, 2, 2, 0, 0, 0, 1, 1, 1}, 0.08},
      {"mixed", {2, 10, 17, 97}, {3, 2, 5, 1, 2, 3, 0, 1, 2, 1, 1, 2}, 0.04},
      // a reach of 63 sites along the last axis (the widest one window holds); lines of 5 sites
      {"reach63", {1, 6, 9, 300}, {1, 3, 4, 1, 2, 4, 0, 1, 30, 1, 1, 21}, 0.02},
      {"short_lines", {3, 5, 7, 5}, {3, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1}, 0.3},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const MapGeom& g = c.g;
    ASSERT_TRUE(strided_sites_from_bits_fits(g));
    const Grid out{c.in.batch, out_size(c.in.s0, g.k0, g.st0, g.p0, g.d0), out_size(c.in.s1, g.k1, g.st1, g.p1, g.d1),
                   out_size(c.in.s2, g.k2, g.st2, g.p2, g.d2)};
    ASSERT_GT(out.s0 * out.s1 * out.s2, 0);
    std::mt19937 rng(unsigned(c.name.size() * 7919 + out.cells()));
    std::bernoulli_distribution occupied(c.density);
    std::vector<uint8_t> occ(size_t(c.in.cells()));
    std::vector<int4> sites;
    for (int64_t i = 0; i < c.in.cells(); ++i)
      if ((occ[size_t(i)] = occupied(rng))) {
        const int i2 = int(i % c.in.s2), i1 = int(i / c.in.s2 % c.in.s1), i0 = int(i / c.in.s2 / c.in.s1 % c.in.s0),
                  b = int(i / c.in.s2 / c.in.s1 / c.in.s0);
        sites.push_back(make_int4(b, i0, i1, i2));
      }
    ASSERT_GT(sites.size(), 0u);
    // the CPU oracle's strided map (spconv's rule: output o exists when an input site sits at o * st - p + r * d for
    // some tap r per axis) gives the expected output sites
    cpu::SiteSet cin;
    cin.shape = {c.in.s0, c.in.s1, c.in.s2};
    cin.batch = c.in.batch;
    for (const int4& q : sites) cin.coords.insert(cin.coords.end(), {q.x, q.y, q.z, q.w});
    cin.index();
    MapSlot slot;
    slot.kind = MapKind::Strided;
    slot.kernel_size = {g.k0, g.k1, g.k2};
    slot.stride = {g.st0, g.st1, g.st2};
    slot.padding = {g.p0, g.p1, g.p2};
    slot.dilation = {g.d0, g.d1, g.d2};
    cpu::SiteSet cout;
    cpu::build_strided_map(cin, slot, {out.s0, out.s1, out.s2}, cout, 1);
    std::vector<uint64_t> expect(size_t(out.words()), 0);
    const int64_t expect_n = cout.size();
    for (const int64_t key : cout.keys) expect[size_t(key / 64)] |= uint64_t(1) << (key % 64);
    ASSERT_GT(expect_n, 0);

    // the input set on the device: bits and coordinates from the host (the atomic marking reads the coordinates)
    const int64_t in_cap = int64_t(sites.size());
    DevSet din(c.in, in_cap);
    std::vector<uint64_t> in_bits(size_t(c.in.words()), 0);
    for (int64_t i = 0; i < c.in.cells(); ++i)
      if (occ[size_t(i)]) in_bits[size_t(i / 64)] |= uint64_t(1) << (i % 64);
    const int n_in = int(in_cap);
    ASSERT_TRUE(din.ok());
    CUDA_OK(cudaMemcpy(din.bits.p, in_bits.data(), in_bits.size() * 8, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(din.coords.p, sites.data(), sites.size() * sizeof(int4), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(din.count.p, &n_in, sizeof(int), cudaMemcpyHostToDevice));

    // both output sets, their bitmaps first filled with garbage: the bitmap kernel writes every word itself
    const int64_t cap = expect_n + 5;
    DevSet a(out, cap), m(out, cap);
    ASSERT_TRUE(a.ok() && m.ok());
    CUDA_OK(cudaMemset(a.bits.p, 0xA5, size_t(out.words()) * 8));
    Dev<ErrSlot> err(kNumErrKinds);
    ASSERT_TRUE(err.p);
    CUDA_OK(cudaMemset(err.p, 0, sizeof(ErrSlot) * kNumErrKinds));
    launch_strided_sites_from_bits(din.s, a.s, g, err.p, sms, nullptr);
    CUDA_OK(cudaMemset(m.bits.p, 0, size_t(out.words()) * 8));
    launch_strided_mark(din.s, m.s, g, sms, nullptr);
    launch_rank(m.s, true, err.p, sms, nullptr);
    CUDA_OK(cudaDeviceSynchronize());

    for (DevSet* d : {&a, &m}) {
      const char* who = d == &a ? "from the bitmap" : "by atomics";
      std::vector<uint64_t> bits(size_t(out.words()));
      std::vector<uint16_t> local(size_t(out.words()));
      std::vector<uint32_t> block(size_t(rank_blocks(out.words())));
      int count = -1;
      CUDA_OK(cudaMemcpy(bits.data(), d->bits.p, bits.size() * 8, cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(local.data(), d->rank_local.p, local.size() * 2, cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(block.data(), d->rank_block.p, block.size() * 4, cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(&count, d->count.p, sizeof(int), cudaMemcpyDeviceToHost));
      EXPECT_EQ(count, expect_n) << who;
      int64_t bad = 0, rank = 0;
      for (int64_t w = 0; w < out.words(); ++w) {
        if (w % kRankBlock == 0 && block[size_t(w / kRankBlock)] != uint32_t(rank) && bad++ == 0)
          ADD_FAILURE() << who << ": rank block " << w / kRankBlock << " starts at " << block[size_t(w / kRankBlock)]
                        << ", expected " << rank;
        const int64_t in_block = rank - int64_t(block[size_t(w / kRankBlock)]);
        if (bits[size_t(w)] != expect[size_t(w)] && bad++ == 0)
          ADD_FAILURE() << who << ": word " << w << " is " << std::hex << bits[size_t(w)] << ", expected "
                        << expect[size_t(w)];
        if (local[size_t(w)] != uint16_t(in_block) && bad++ == 0)
          ADD_FAILURE() << who << ": word " << w << " has local rank " << local[size_t(w)] << ", expected " << in_block;
        rank += __builtin_popcountll(expect[size_t(w)]);
      }
      EXPECT_EQ(bad, 0) << who << ": " << out.words() << " words, " << expect_n << " sites";
    }
    std::vector<ErrSlot> errs(kNumErrKinds);
    CUDA_OK(cudaMemcpy(errs.data(), err.p, sizeof(ErrSlot) * kNumErrKinds, cudaMemcpyDeviceToHost));
    EXPECT_EQ(errs[kErrOverflow].hits, 0u);
  }
}

TEST(CudaStridedSites, AnOverflowIsRecordedAndTheCountClamped) {
  SCN_REQUIRE_CUDA();
  int device = 0, sms = 0;
  CUDA_OK(cudaGetDevice(&device));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const Grid in{1, 8, 8, 70};
  const MapGeom g{3, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1};
  const Grid out{1, 4, 4, 35};
  std::vector<uint64_t> bits(size_t(in.words()), ~uint64_t(0));  // every site present: every output site too
  bits.back() &= (uint64_t(1) << (in.cells() % 64)) - 1;
  DevSet din(in, in.cells()), d(out, 100);
  ASSERT_TRUE(din.ok() && d.ok());
  CUDA_OK(cudaMemcpy(din.bits.p, bits.data(), bits.size() * 8, cudaMemcpyHostToDevice));
  Dev<ErrSlot> err(kNumErrKinds);
  ASSERT_TRUE(err.p);
  CUDA_OK(cudaMemset(err.p, 0, sizeof(ErrSlot) * kNumErrKinds));
  launch_strided_sites_from_bits(din.s, d.s, g, err.p, sms, nullptr);
  CUDA_OK(cudaDeviceSynchronize());
  int count = -1;
  CUDA_OK(cudaMemcpy(&count, d.count.p, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_EQ(count, 100);
  std::vector<ErrSlot> errs(kNumErrKinds);
  CUDA_OK(cudaMemcpy(errs.data(), err.p, sizeof(ErrSlot) * kNumErrKinds, cudaMemcpyDeviceToHost));
  EXPECT_GE(errs[kErrOverflow].hits, 1u);
  EXPECT_EQ(errs[kErrOverflow].v0, out.cells()) << "the overflow names the rows the set needs";
}

}  // namespace
}  // namespace scn::cuda
