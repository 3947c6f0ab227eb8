// The pieces behind `scn compare` and the argument helpers of the CLI.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>

#include "batch_frames.h"
#include "common.h"
#include "compare.h"
#include "core/half.h"

namespace {

using scn::DType;
using scn::Tensor;
using namespace scn::cli;

Tensor f32(const std::vector<float>& v, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {int64_t(v.size())};
  return Tensor::from_host(v.data(), shape, DType::Float32);
}

Tensor f16(const std::vector<float>& v) {
  std::vector<uint16_t> h;
  for (float x : v) h.push_back(scn::float_to_half(x));
  return Tensor::from_host(h.data(), {int64_t(h.size())}, DType::Float16);
}

Tensor i32(const std::vector<int32_t>& v, std::vector<int64_t> shape) {
  return Tensor::from_host(v.data(), shape, DType::Int32);
}

bool file_exists(const std::string& p) { return std::ifstream(p).good(); }

TEST(CompareMetrics, KnownValues) {
  const CompareResult r = compare_tensors(f32({1, 2, 3, 4}), f32({1, 2, 3, 5}));
  EXPECT_EQ(r.numel, 4);
  EXPECT_DOUBLE_EQ(r.max_abs, 1.0);
  EXPECT_DOUBLE_EQ(r.mean_abs, 0.25);
  EXPECT_DOUBLE_EQ(r.sum_abs, 1.0);
  EXPECT_NEAR(r.rel_l2, 1.0 / std::sqrt(39.0), 1e-15);
  EXPECT_NEAR(r.cosine, 34.0 / (std::sqrt(30.0) * std::sqrt(39.0)), 1e-15);
  EXPECT_EQ(r.exact, 3);
  EXPECT_EQ(r.a.nonfinite + r.b.nonfinite, 0);
  EXPECT_DOUBLE_EQ(r.b.absmax, 5.0);
  EXPECT_DOUBLE_EQ(r.a.mean, 2.5);
}

TEST(CompareMetrics, IdenticalTensorsAcrossDtypes) {
  const std::vector<float> v = {0.5f, -1.25f, 3.0f, 1024.f};  // exact in float16
  const CompareResult r = compare_tensors(f16(v), f32(v));
  EXPECT_EQ(r.max_abs, 0.0);
  EXPECT_EQ(r.rel_l2, 0.0);
  EXPECT_NEAR(r.cosine, 1.0, 1e-15);
  EXPECT_EQ(r.exact, 4);
}

TEST(CompareMetrics, Int32Tensors) {
  const CompareResult r = compare_tensors(i32({0, 5, 7, 9}, {2, 2}), i32({0, 5, 8, 9}, {2, 2}));
  EXPECT_EQ(r.max_abs, 1.0);
  EXPECT_EQ(r.exact, 3);
}

TEST(CompareMetrics, ShapeMismatchAndDtypeAreErrors) {
  try {
    compare_tensors(f32({1, 2, 3, 4}, {2, 2}), f32({1, 2, 3, 4}, {4}), 0, "x.tensor", "y.tensor");
    FAIL() << "expected scn::Error";
  } catch (const scn::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("x.tensor"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 2]"), std::string::npos) << m;
  }
  const std::vector<int64_t> v = {1, 2};
  EXPECT_THROW(compare_tensors(Tensor::from_host(v.data(), {2}, DType::Int64), f32({1, 2})), scn::Error);
}

TEST(CompareMetrics, NaNPropagatesAndFailsEveryBound) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const CompareResult r = compare_tensors(f32({1, nan, 3}), f32({1, 2, 3}));
  EXPECT_TRUE(std::isnan(r.max_abs));
  EXPECT_TRUE(std::isnan(r.rel_l2));
  EXPECT_TRUE(std::isnan(r.cosine));
  EXPECT_EQ(r.a.nonfinite, 1);
  EXPECT_EQ(r.b.nonfinite, 0);
  EXPECT_FALSE(check_bound("max-abs", r.max_abs, 1e9, true).pass);
  EXPECT_FALSE(check_bound("cosine", r.cosine, -1, false).pass);
  EXPECT_TRUE(check_bound("max-abs", 0.5, 0.5, true).pass);
  EXPECT_FALSE(check_bound("max-abs", 0.51, 0.5, true).pass);
  EXPECT_TRUE(check_bound("cosine", 0.99, 0.98, false).pass);
  EXPECT_FALSE(check_bound("cosine", 0.97, 0.98, false).pass);
  ASSERT_FALSE(r.top.empty());
  EXPECT_EQ(r.top[0].flat, 1);  // NaN ranks first
}

TEST(CompareMetrics, ZeroTensors) {
  const CompareResult both = compare_tensors(f32({0, 0}), f32({0, 0}));
  EXPECT_EQ(both.cosine, 1.0);
  EXPECT_EQ(both.rel_l2, 0.0);
  const CompareResult zero_ref = compare_tensors(f32({1, 0}), f32({0, 0}));
  EXPECT_EQ(zero_ref.cosine, 0.0);
  EXPECT_TRUE(std::isinf(zero_ref.rel_l2));
}

TEST(CompareMetrics, TopDifferencesWithMultiDimensionalIndex) {
  std::vector<float> a(24, 1.f), b(24, 1.f);
  b[23] = 9.f;   // [1, 2, 3]
  b[5] = 3.f;    // [0, 1, 1]
  b[12] = 1.5f;  // [1, 0, 0]
  const CompareResult r = compare_tensors(f32(a, {2, 3, 4}), f32(b, {2, 3, 4}), 2);
  ASSERT_EQ(r.top.size(), 2u);
  EXPECT_EQ(r.top[0].index, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_DOUBLE_EQ(r.top[0].diff, 8.0);
  EXPECT_EQ(r.top[1].index, (std::vector<int64_t>{0, 1, 1}));
}

TEST(CompareMetrics, DifferenceBuckets) {
  const CompareResult r = compare_tensors(f32({0, 0, 0, 0, 0, 0}), f32({0, 5e-7f, 5e-4f, 0.05f, 2.f, 3.f}));
  std::map<std::string, int64_t> dec;
  for (const Bucket& b : r.decade_buckets) dec[b.label] = b.count;
  EXPECT_EQ(dec["= 0"], 1);
  EXPECT_EQ(dec["(0, 1e-06]"], 1);
  EXPECT_EQ(dec["(1e-04, 1e-03]"], 1);
  EXPECT_EQ(dec["(1e-02, 1e-01]"], 1);
  EXPECT_EQ(dec["(1e+00, inf)"], 2);
  EXPECT_EQ(dec["non-finite"], 0);
  // > 75 % of max (3): only 3; > 50 %: 2 and 3; > 0: five.
  ASSERT_EQ(r.relative_buckets.size(), 5u);
  EXPECT_EQ(r.relative_buckets[0].count, 1);
  EXPECT_EQ(r.relative_buckets[1].count, 2);
  EXPECT_EQ(r.relative_buckets[3].count, 5);
  EXPECT_EQ(r.relative_buckets[4].count, 1);
}

TEST(CompareMetrics, SparseRowsAlignedBySite) {
  const Tensor ia = i32({0, 1, 2, 3, 0, 4, 5, 6, 0, 7, 8, 9}, {3, 4});
  const Tensor ib = i32({0, 7, 8, 9, 0, 1, 2, 3, 0, 4, 5, 6}, {3, 4});
  const Tensor fb = f32({30, 31, 10, 11, 20, 21}, {3, 2});
  const Tensor aligned = align_sparse_rows(ia, fb, ib, "a.idx", "b.idx");
  const float* p = aligned.ptr<float>();
  EXPECT_EQ(std::vector<float>(p, p + 6), (std::vector<float>{10, 11, 20, 21, 30, 31}));
  const Tensor other = i32({0, 7, 8, 9, 0, 1, 2, 3, 0, 4, 5, 7}, {3, 4});
  try {
    align_sparse_rows(ia, fb, other, "a.idx", "b.idx");
    FAIL() << "expected scn::Error";
  } catch (const scn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("1 sites only in a.idx, 1 only in b.idx"), std::string::npos) << e.what();
  }
}

TEST(CliHelpers, ParseGrid) {
  EXPECT_EQ(parse_grid("41x1440x1440"), (scn::Int3{41, 1440, 1440}));
  EXPECT_EQ(parse_grid("9X8x8"), (scn::Int3{9, 8, 8}));
  for (const char* bad : {"", "41x1440", "41x1440x1440x2", "0x8x8", "-1x8x8", "axbxc", "41x1440x"})
    EXPECT_THROW(parse_grid(bad), scn::Error) << bad;
}

TEST(CliHelpers, ParseCountList) {
  EXPECT_EQ(parse_count_list("10000,20000,...,50000"), (std::vector<int64_t>{10000, 20000, 30000, 40000, 50000}));
  EXPECT_EQ(parse_count_list("5,80000"), (std::vector<int64_t>{5, 80000}));
  EXPECT_EQ(parse_count_list("1,3,...,8"), (std::vector<int64_t>{1, 3, 5, 7, 8}));
  for (const char* bad : {"", "0", "10,...,20", "20,10,...,5", "1,2,...", "x"})
    EXPECT_THROW(parse_count_list(bad), scn::Error) << bad;
}

TEST(CliHelpers, OutputPaths) {
  EXPECT_EQ(indices_path_for("out/x.tensor"), "out/x.indices.tensor");
  EXPECT_EQ(indices_path_for("y"), "y.indices.tensor");
  EXPECT_EQ(file_safe("7"), "7");
  EXPECT_EQ(file_safe("a/b:c"), "a_b_c");
  EXPECT_EQ(file_safe(".."), "output..");
}

TEST(CliHelpers, OutputSetIsAllOrNothing) {
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "/scn_outputset_good.tensor";
  const std::string bad = dir + "/no/such/dir/x.tensor";
  std::remove(good.c_str());
  OutputSet set;
  set.add_tensor(good, f32({1, 2}));
  set.add_tensor(bad, f32({3}));
  EXPECT_THROW(set.commit(), scn::Error);
  EXPECT_FALSE(file_exists(good));
  EXPECT_FALSE(file_exists(good + ".partial"));

  OutputSet ok;
  ok.add_tensor(good, f32({1, 2}));
  ok.add_text(dir + "/scn_outputset.csv", "a,b\n");
  EXPECT_EQ(ok.commit().size(), 2u);
  EXPECT_EQ(Tensor::load(good).numel(), 2);
  std::remove(good.c_str());
  std::remove((dir + "/scn_outputset.csv").c_str());
}

// --batch-sweep with a file frame: B copies of its rows, batch column = the copy, everything else unchanged
TEST(CliHelpers, BatchOfCopies) {
  const std::vector<int32_t> idx = {0, 1, 2, 3, 0, 4, 5, 6, 0, 7, 0, 1};
  const Tensor features = f32({0.5f, -1.f, 2.f, 3.5f, -7.f, 8.25f}, {3, 2});
  const FrameBatch fb = batch_of_copies(features, i32(idx, {3, 4}), 3, "f.tensor", "i.tensor");
  ASSERT_EQ(fb.features.shape(), (std::vector<int64_t>{9, 2}));
  ASSERT_EQ(fb.indices.shape(), (std::vector<int64_t>{9, 4}));
  EXPECT_EQ(fb.features.dtype(), DType::Float32);
  for (int64_t r = 0; r < 9; ++r) {
    EXPECT_EQ(fb.indices.ptr<int32_t>()[4 * r], r / 3) << r;
    for (int c = 1; c < 4; ++c) EXPECT_EQ(fb.indices.ptr<int32_t>()[4 * r + c], idx[size_t(4 * (r % 3) + c)]) << r;
    for (int c = 0; c < 2; ++c)
      EXPECT_EQ(fb.features.ptr<float>()[2 * r + c], features.ptr<float>()[2 * (r % 3) + c]) << r;
  }
  const FrameBatch one = batch_of_copies(features, i32(idx, {3, 4}), 1, "f.tensor", "i.tensor");
  EXPECT_EQ(one.indices.shape(), (std::vector<int64_t>{3, 4}));
}

TEST(CliHelpers, BatchOfCopiesRejectsABatchAndMismatchedShapes) {
  const Tensor features = f32({0.5f, -1.f, 2.f, 3.5f, -7.f, 8.25f}, {3, 2});
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // a frame that already holds two samples: the indices file and the row are named
  const std::string two = message([&] {
    batch_of_copies(features, i32({0, 1, 2, 3, 0, 4, 5, 6, 1, 7, 0, 1}, {3, 4}), 2, "f.tensor", "i.tensor");
  });
  EXPECT_NE(two.find("i.tensor: row 2 has batch index 1"), std::string::npos) << two;
  const std::string rows = message([&] {
    batch_of_copies(features, i32({0, 1, 2, 3, 0, 4, 5, 6}, {2, 4}), 2, "f.tensor", "i.tensor");
  });
  EXPECT_NE(rows.find("f.tensor: features must be [N, C] with N = 2"), std::string::npos) << rows;
  const std::string cols = message([&] {
    batch_of_copies(features, i32({0, 1, 2, 0, 4, 5, 0, 7, 0}, {3, 3}), 2, "f.tensor", "i.tensor");
  });
  EXPECT_NE(cols.find("i.tensor: indices must be int32 [N, 4]"), std::string::npos) << cols;
}

}  // namespace
