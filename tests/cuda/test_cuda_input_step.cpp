// The input step's first two kernels called directly: launch_clear_bits over a bitmap left full of stale bits (as the
// arena leaves it: its bytes are other buffers' between forwards), then launch_input_sites_features launched
// programmatically after it — it converts the features before it waits for the clearing, and inserts its sites only
// after. The bitmap must hold exactly the input's sites (a missing wait would let the clearing erase some), the words
// past the bitmap must be untouched, and the features must be the fp16 rows with their padding zeroed. Both ways of
// reading the rows: the engine's staging (a host input) and a device input's buffers read in place through an
// InputSource written by launch_set_input_source (which writes the row count as well), where the staging then keeps
// only the offending rows' coordinates for the error messages.
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "backends/cuda/kernels.h"
#include "cuda/cuda_test_util.h"
#include "cuda/device_buffer.h"
#include "cuda/device_site_set.h"

namespace scn::cuda {
namespace {

#define CUDA_OK(x) ASSERT_EQ((x), cudaSuccess) << #x

template <class T>
using Dev = cudatest::DeviceBuffer<T>;

constexpr uint64_t kStale = 0xA5A5A5A5A5A5A5A5ull;

struct InputCase {
  int batch, s0, s1, s2;  // grid; cells / 64 odd or even
  int rows;
  int channels;  // < 16: padded to 16 halves
};

void run_case(const InputCase& c, bool in_place, int sms, cudaStream_t st) {
  SCOPED_TRACE(::testing::Message() << "grid " << c.batch << "x" << c.s0 << "x" << c.s1 << "x" << c.s2 << ", " << c.rows
                                    << " rows" << (in_place ? ", read in place" : ", staged"));
  const int64_t cells = int64_t(c.batch) * c.s0 * c.s1 * c.s2;
  const int64_t words = (cells + 63) / 64;
  const int cp = (c.channels + 15) / 16 * 16;
  std::mt19937 rng(uint32_t(cells + c.rows));
  // distinct random sites
  std::set<int64_t> picked;
  std::uniform_int_distribution<int64_t> cell(0, cells - 1);
  while (int(picked.size()) < c.rows) picked.insert(cell(rng));
  std::vector<int64_t> keys(picked.begin(), picked.end());
  std::shuffle(keys.begin(), keys.end(), rng);
  std::vector<int32_t> idx(size_t(c.rows) * 4);
  std::vector<uint64_t> want_bits(size_t(words), 0);
  for (int i = 0; i < c.rows; ++i) {
    int64_t k = keys[size_t(i)];
    want_bits[size_t(k >> 6)] |= uint64_t(1) << (k & 63);
    idx[size_t(i) * 4 + 3] = int32_t(k % c.s2);
    k /= c.s2;
    idx[size_t(i) * 4 + 2] = int32_t(k % c.s1);
    k /= c.s1;
    idx[size_t(i) * 4 + 1] = int32_t(k % c.s0);
    idx[size_t(i) * 4 + 0] = int32_t(k / c.s0);
  }
  std::uniform_real_distribution<float> val(-4.f, 4.f);
  std::vector<__half> feat(size_t(c.rows) * c.channels);
  for (auto& f : feat) f = __float2half_rn(val(rng));

  const int64_t guard = 4;  // words past the bitmap that must keep their stale value
  cudatest::DeviceSiteSet set({c.batch, c.s0, c.s1, c.s2}, c.rows, false, guard);
  ASSERT_EQ(set.s.words, words);
  Dev<int32_t> d_idx(idx.size());
  Dev<__half> d_feat(feat.size()), out(size_t(c.rows) * cp);
  Dev<ErrSlot> err(kNumErrKinds);
  ASSERT_TRUE(set.ok() && d_idx.p && d_feat.p && out.p && err.p);
  const SiteIndex& s = set.s;
  std::vector<uint64_t> stale(size_t(words + guard), kStale);
  CUDA_OK(cudaMemcpy(set.bits.p, stale.data(), stale.size() * 8, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_idx.p, idx.data(), idx.size() * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_feat.p, feat.data(), feat.size() * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(out.p, 0xFF, size_t(c.rows) * cp * 2));  // padding must come back zero
  std::vector<ErrSlot> none(kNumErrKinds, ErrSlot{0, LLONG_MAX, 0, 0});
  CUDA_OK(cudaMemcpy(err.p, none.data(), sizeof(ErrSlot) * kNumErrKinds, cudaMemcpyHostToDevice));

  Dev<InputSource> source(1);
  Dev<int32_t> kept(idx.size());  // in place: the staging, which no row without an error may touch
  ASSERT_TRUE(source.p && kept.p);
  CUDA_OK(cudaMemset(kept.p, 0x5A, idx.size() * 4));
  InputRows rows;
  if (in_place) {
    CUDA_OK(cudaMemset(set.count.p, 0, sizeof(int)));
    launch_set_input_source(source.p, InputSource{d_feat.p, d_idx.p}, set.count.p, c.rows, st);
    rows.source = source.p;
    rows.indices = kept.p;
  } else {
    CUDA_OK(cudaMemcpy(set.count.p, &c.rows, sizeof(int), cudaMemcpyHostToDevice));
    rows.features = d_feat.p;
    rows.indices = d_idx.p;
  }
  launch_clear_bits(s, sms, st);
  launch_input_sites_features(rows, false, c.channels, cp, out.p, s, err.p, sms, st, true);
  CUDA_OK(cudaStreamSynchronize(st));
  if (in_place) {
    std::vector<int32_t> got_kept(idx.size());
    CUDA_OK(cudaMemcpy(got_kept.data(), kept.p, got_kept.size() * 4, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(std::all_of(got_kept.begin(), got_kept.end(), [](int32_t v) { return v == 0x5A5A5A5A; }))
        << "the staging was written without an offending row";
  }

  std::vector<uint64_t> got(size_t(words + guard));
  CUDA_OK(cudaMemcpy(got.data(), set.bits.p, got.size() * 8, cudaMemcpyDeviceToHost));
  int64_t wrong = 0;
  for (int64_t w = 0; w < words; ++w) wrong += got[size_t(w)] != want_bits[size_t(w)];
  EXPECT_EQ(wrong, 0) << "bitmap words differing from the input's sites";
  for (int64_t w = words; w < words + guard; ++w)
    EXPECT_EQ(got[size_t(w)], kStale) << "word " << w << " past the bitmap";

  std::vector<__half> got_feat(size_t(c.rows) * cp);
  CUDA_OK(cudaMemcpy(got_feat.data(), out.p, got_feat.size() * 2, cudaMemcpyDeviceToHost));
  int64_t bad = 0;
  for (int i = 0; i < c.rows; ++i)
    for (int ch = 0; ch < cp; ++ch) {
      const float g = __half2float(got_feat[size_t(i) * cp + ch]);
      const float w = ch < c.channels ? __half2float(feat[size_t(i) * c.channels + ch]) : 0.f;
      bad += std::memcmp(&g, &w, 4) != 0;
    }
  EXPECT_EQ(bad, 0) << "feature values differing from the input (padding must be +0)";
  std::vector<int4> got_coords(size_t(c.rows));
  CUDA_OK(cudaMemcpy(got_coords.data(), set.coords.p, got_coords.size() * sizeof(int4), cudaMemcpyDeviceToHost));
  for (int i = 0; i < c.rows; ++i) {
    const int4 r = got_coords[size_t(i)];
    ASSERT_TRUE(r.x == idx[size_t(i) * 4] && r.y == idx[size_t(i) * 4 + 1] && r.z == idx[size_t(i) * 4 + 2] &&
                r.w == idx[size_t(i) * 4 + 3])
        << "row " << i;
  }
  std::vector<ErrSlot> errs(kNumErrKinds);
  CUDA_OK(cudaMemcpy(errs.data(), err.p, sizeof(ErrSlot) * kNumErrKinds, cudaMemcpyDeviceToHost));
  for (int k = 0; k < kNumErrKinds; ++k) EXPECT_EQ(errs[size_t(k)].hits, 0u) << "error kind " << k;
}

TEST(CudaInputStep, ClearedBitmapHoldsExactlyTheInputSites) {
  SCN_REQUIRE_CUDA();
  int device = 0, sms = 0;
  CUDA_OK(cudaGetDevice(&device));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  cudaStream_t st = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  // CenterPoint's input grid (1,328,400 words, even) at the real frame's size: the clearing takes microseconds, so
  // inserts that did not wait for it would be erased
  for (const bool in_place : {false, true}) {
    run_case({1, 41, 1440, 1440, 80000, 5}, in_place, sms, st);
    // an odd word count (the last word cleared by its own store) and a partial last word; 16 channels, no padding
    run_case({2, 3, 7, 61, 900, 16}, in_place, sms, st);
    // one word
    run_case({1, 1, 1, 40, 17, 3}, in_place, sms, st);
  }
  cudaStreamDestroy(st);
}

// A device input read in place with offending rows (outside the grid, a duplicate, a NaN feature): each is recorded
// and its coordinates kept in the engine's staging — only those rows — so that the error message can name the site
// after the caller's buffer has changed.
TEST(CudaInputStep, InPlaceRowsKeepTheOffendingCoordinates) {
  SCN_REQUIRE_CUDA();
  int device = 0, sms = 0;
  CUDA_OK(cudaGetDevice(&device));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int rows_n = 64, channels = 8, cp = 16;
  const int s0 = 4, s1 = 8, s2 = 8;
  std::vector<int32_t> idx(size_t(rows_n) * 4);
  for (int i = 0; i < rows_n; ++i) {  // distinct sites in the grid
    idx[size_t(i) * 4 + 1] = i / (s1 * s2);
    idx[size_t(i) * 4 + 2] = (i / s2) % s1;
    idx[size_t(i) * 4 + 3] = i % s2;
  }
  idx[size_t(9) * 4 + 2] = s1 + 5;                            // row 9: outside the grid
  std::copy_n(&idx[size_t(3) * 4], 4, &idx[size_t(40) * 4]);  // row 40 repeats row 3
  std::vector<__half> feat(size_t(rows_n) * channels, __float2half_rn(1.5f));
  feat[size_t(21) * channels + 6] = __float2half_rn(NAN);  // row 21: a NaN feature

  cudatest::DeviceSiteSet set({1, s0, s1, s2}, rows_n, false, 0);
  Dev<int32_t> d_idx(idx.size()), kept(idx.size());
  Dev<__half> d_feat(feat.size()), out(size_t(rows_n) * cp);
  Dev<ErrSlot> err(kNumErrKinds);
  Dev<InputSource> source(1);
  ASSERT_TRUE(set.ok() && d_idx.p && kept.p && d_feat.p && out.p && err.p && source.p);
  CUDA_OK(cudaMemcpy(d_idx.p, idx.data(), idx.size() * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_feat.p, feat.data(), feat.size() * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(kept.p, 0x5A, idx.size() * 4));
  std::vector<ErrSlot> none(kNumErrKinds, ErrSlot{0, LLONG_MAX, 0, 0});
  CUDA_OK(cudaMemcpy(err.p, none.data(), sizeof(ErrSlot) * kNumErrKinds, cudaMemcpyHostToDevice));
  launch_set_input_source(source.p, InputSource{d_feat.p, d_idx.p}, set.count.p, rows_n, nullptr);
  launch_clear_bits(set.s, sms, nullptr);
  InputRows rows;
  rows.source = source.p;
  rows.indices = kept.p;
  launch_input_sites_features(rows, false, channels, cp, out.p, set.s, err.p, sms, nullptr);
  CUDA_OK(cudaDeviceSynchronize());

  std::vector<ErrSlot> errs(kNumErrKinds);
  CUDA_OK(cudaMemcpy(errs.data(), err.p, sizeof(ErrSlot) * kNumErrKinds, cudaMemcpyDeviceToHost));
  EXPECT_EQ(errs[kErrRange].hits, 1u);
  EXPECT_EQ(errs[kErrRange].row, 9);
  EXPECT_EQ(errs[kErrDuplicate].hits, 1u);  // row 3 or row 40, whichever inserted second
  EXPECT_TRUE(errs[kErrDuplicate].row == 3 || errs[kErrDuplicate].row == 40) << errs[kErrDuplicate].row;
  EXPECT_EQ(errs[kErrNonFinite].hits, 1u);
  EXPECT_EQ(errs[kErrNonFinite].row, 21);
  std::vector<int32_t> got(idx.size());
  CUDA_OK(cudaMemcpy(got.data(), kept.p, got.size() * 4, cudaMemcpyDeviceToHost));
  const std::set<long long> offending = {9, 21, errs[kErrDuplicate].row};
  for (int i = 0; i < rows_n; ++i)
    for (int k = 0; k < 4; ++k) {
      const int32_t want = offending.count(i) ? idx[size_t(i) * 4 + k] : 0x5A5A5A5A;
      ASSERT_EQ(got[size_t(i) * 4 + k], want) << "row " << i << ", index " << k;
    }
}

}  // namespace
}  // namespace scn::cuda
