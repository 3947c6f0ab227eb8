// The CPU voxelizer (the oracle) against the independent reference of voxelize_test_util.h, and
// its rules one by one: half-open range, cell faces, full voxels, empty and out-of-range clouds,
// NaN / Inf, max_voxels overflow, presets and the grid check.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "scn/error.h"
#include "voxelize/voxelize_test_util.h"

namespace {

using namespace scn;
using voxtest::floats;
using voxtest::make_cloud;
using voxtest::reference_voxelize;
using voxtest::small_config;

Tensor rows(const std::vector<std::vector<float>>& r) {
  std::vector<float> v;
  for (const auto& x : r) v.insert(v.end(), x.begin(), x.end());
  return Tensor::from_host(v.data(), {int64_t(r.size()), int64_t(r.empty() ? 4 : r[0].size())}, DType::Float32);
}

void expect_matches_reference(const Tensor& points, const VoxelizerConfig& c) {
  const VoxelizeResult got = voxelize(points, c);
  const voxtest::RefResult ref = reference_voxelize(points, c);
  const int64_t n = int64_t(ref.indices.size());
  ASSERT_EQ(got.stats.voxels, n);
  ASSERT_EQ(got.indices.shape(), (std::vector<int64_t>{n, 4}));
  ASSERT_EQ(got.features.shape(), (std::vector<int64_t>{n, int64_t(c.feature_columns.size())}));
  EXPECT_EQ(got.features.dtype(), c.feature_dtype);
  EXPECT_EQ(got.stats.points, points.dim(0));
  EXPECT_EQ(got.stats.dropped_out_of_range, ref.out_of_range);
  EXPECT_EQ(got.stats.dropped_non_finite, ref.non_finite);
  EXPECT_EQ(got.stats.dropped_full, ref.full);
  const int32_t* idx = got.indices.ptr<int32_t>();
  const std::vector<float> f = floats(got.features);
  const size_t F = c.feature_columns.size();
  for (int64_t v = 0; v < n; ++v) {
    for (int k = 0; k < 4; ++k) ASSERT_EQ(idx[v * 4 + k], ref.indices[size_t(v)][size_t(k)]) << "voxel " << v;
    for (size_t j = 0; j < F; ++j) {
      float want = ref.features[size_t(v)][j];
      if (c.feature_dtype == DType::Float16) want = half_to_float(float_to_half(want));
      uint32_t a, b;
      std::memcpy(&a, &f[size_t(v) * F + j], 4);
      std::memcpy(&b, &want, 4);
      ASSERT_EQ(a, b) << "voxel " << v << " feature " << j << ": " << f[size_t(v) * F + j] << " vs " << want;
    }
  }
}

TEST(VoxelizeCpu, MatchesReferenceZyxMeanFp32) {
  VoxelizerConfig c = small_config();
  c.feature_dtype = DType::Float32;
  const Tensor pts = make_cloud(c, 20000, 1);
  expect_matches_reference(pts, c);
  const VoxelizeResult r = voxelize(pts, c);
  EXPECT_GT(r.stats.dropped_full, 1000);  // the cloud really exercises the point limit
  EXPECT_GT(r.stats.dropped_out_of_range, 100);
  EXPECT_GT(r.stats.dropped_non_finite, 50);
  EXPECT_GT(r.stats.voxels, 200);
}

TEST(VoxelizeCpu, MatchesReferenceXyzFirstFp16SubsetOfColumns) {
  VoxelizerConfig c = small_config();
  c.order = VoxelOrder::Xyz;
  c.reduction = VoxelReduction::First;
  c.feature_columns = {3, 0, 2};
  c.batch_index = 3;
  expect_matches_reference(make_cloud(c, 15000, 2), c);
}

TEST(VoxelizeCpu, MatchesReferenceOnNuscenesPreset) {
  VoxelizerConfig c = voxelizer_preset("nuscenes-centerpoint");
  const Tensor pts = make_cloud(c, 50000, 3);
  expect_matches_reference(pts, c);
  c.feature_dtype = DType::Float32;
  expect_matches_reference(pts, c);
}

TEST(VoxelizeCpu, VoxelsAscendInIndexOrderWithinTheGrid) {
  for (VoxelOrder o : {VoxelOrder::Zyx, VoxelOrder::Xyz}) {
    VoxelizerConfig c = small_config();
    c.order = o;
    const VoxelizeResult r = voxelize(make_cloud(c, 5000, 4), c);
    const Int3 g = voxel_grid(c);
    const int32_t* idx = r.indices.ptr<int32_t>();
    for (int64_t v = 0; v < r.stats.voxels; ++v) {
      for (int d = 0; d < 3; ++d) {
        ASSERT_GE(idx[v * 4 + 1 + d], 0);
        ASSERT_LT(idx[v * 4 + 1 + d], g[size_t(d)]);
      }
      if (v > 0) {
        ASSERT_TRUE(std::lexicographical_compare(idx + (v - 1) * 4, idx + v * 4, idx + v * 4, idx + v * 4 + 4));
      }
    }
  }
}

TEST(VoxelizeCpu, HalfOpenRangeAndCellFaces) {
  VoxelizerConfig c = small_config();  // voxel sizes are powers of two: faces are exact floats
  c.feature_dtype = DType::Float32;
  const float below_max = std::nextafter(2.f, 0.f);
  const Tensor pts = rows({
      {-2.f, -2.f, -1.f, 1.f},  // on the min corner: kept, cell (0, 0, 0)
      {2.f, 0.f, 0.f, 2.f},     // x on max: dropped
      {0.f, 2.f, 0.f, 3.f},     // y on max: dropped
      {0.f, 0.f, 1.f, 4.f},     // z on max: dropped
      // One ulp below max: (p - min) rounds up to the full span, the cell is n: outside the grid,
      // dropped like NVIDIA's kernel drops it.
      {below_max, 0.f, 0.f, 9.f},
      {1.99f, 1.99f, 0.99f, 5.f},                        // below max: last cell
      {-1.75f, 0.25f, 0.5f, 6.f},                        // on cell faces: x cell 1, y cell 9, z cell 3
      {std::nextafter(-1.75f, -2.f), 0.25f, 0.5f, 7.f},  // just below a face: x cell 0
      {std::nextafter(-2.f, -3.f), 0.f, 0.f, 8.f},       // just below min: dropped
  });
  const VoxelizeResult r = voxelize(pts, c);
  EXPECT_EQ(r.stats.dropped_out_of_range, 5);
  ASSERT_EQ(r.stats.voxels, 4);
  const int32_t* idx = r.indices.ptr<int32_t>();
  const float* f = r.features.ptr<float>();
  // zyx order, ascending: (0,0,0), (3,9,0), (3,9,1), (3,15,15)
  const int32_t want[4][4] = {{0, 0, 0, 0}, {0, 3, 9, 0}, {0, 3, 9, 1}, {0, 3, 15, 15}};
  const float want_intensity[4] = {1.f, 7.f, 6.f, 5.f};
  for (int v = 0; v < 4; ++v) {
    for (int k = 0; k < 4; ++k) EXPECT_EQ(idx[v * 4 + k], want[v][k]) << "voxel " << v;
    EXPECT_EQ(f[v * 4 + 3], want_intensity[v]) << "voxel " << v;
  }
  expect_matches_reference(pts, c);
}

TEST(VoxelizeCpu, FullVoxelKeepsTheFirstPointsInInputOrder) {
  VoxelizerConfig c = small_config();
  c.feature_dtype = DType::Float32;
  std::vector<std::vector<float>> r;
  for (int i = 0; i < 10; ++i) r.push_back({0.1f + 0.01f * float(i), 0.1f, 0.1f, float(10 * (i + 1))});
  r.insert(r.begin() + 5, {-1.9f, -1.9f, -0.9f, 999.f});  // another voxel in between
  const VoxelizeResult m = voxelize(rows(r), c);
  ASSERT_EQ(m.stats.voxels, 2);
  EXPECT_EQ(m.stats.dropped_full, 7);
  const float* f = m.features.ptr<float>();
  // Second voxel (higher key) is the cluster: mean of the first three in input order.
  EXPECT_EQ(f[4 + 3], (10.f + 20.f + 30.f) / 3.f);
  EXPECT_EQ(f[4 + 0], ((0.1f + 0.11f) + 0.12f) / 3.f);
  EXPECT_EQ(f[3], 999.f);
  c.reduction = VoxelReduction::First;
  const VoxelizeResult first = voxelize(rows(r), c);
  EXPECT_EQ(first.features.ptr<float>()[4 + 3], 10.f);
  EXPECT_EQ(first.features.ptr<float>()[4 + 0], 0.1f);
}

TEST(VoxelizeCpu, EmptyAndAllOutOfRangeClouds) {
  VoxelizerConfig c = small_config();
  const VoxelizeResult e = voxelize(Tensor::from_host(nullptr, {0, 4}, DType::Float32), c);
  EXPECT_EQ(e.stats.voxels, 0);
  EXPECT_EQ(e.features.shape(), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(e.indices.shape(), (std::vector<int64_t>{0, 4}));
  const VoxelizeResult o = voxelize(rows({{5.f, 0.f, 0.f, 1.f}, {0.f, -7.f, 0.f, 1.f}, {0.f, 0.f, 3.f, 1.f}}), c);
  EXPECT_EQ(o.stats.voxels, 0);
  EXPECT_EQ(o.stats.dropped_out_of_range, 3);
  EXPECT_EQ(o.features.dim(0), 0);
}

TEST(VoxelizeCpu, NonFiniteCoordinatesAreDroppedAndCounted) {
  VoxelizerConfig c = small_config();
  c.feature_dtype = DType::Float32;
  const VoxelizeResult r = voxelize(rows({{NAN, 0.f, 0.f, 1.f},
                                          {0.f, INFINITY, 0.f, 1.f},
                                          {0.f, 0.f, -INFINITY, 1.f},
                                          {0.5f, 0.5f, 0.5f, 4.f},
                                          {0.5f, 0.5f, 0.5f, NAN}}),  // NaN intensity: passes through
                                    c);
  EXPECT_EQ(r.stats.dropped_non_finite, 3);
  EXPECT_EQ(r.stats.dropped_out_of_range, 0);
  ASSERT_EQ(r.stats.voxels, 1);
  EXPECT_TRUE(std::isnan(r.features.ptr<float>()[3]));
  uint32_t nan_bits = 0;
  std::memcpy(&nan_bits, r.features.ptr<float>() + 3, 4);
  EXPECT_EQ(nan_bits, 0x7fffffffu) << "one NaN pattern, the CUDA voxelizer's";
  EXPECT_EQ(r.features.ptr<float>()[0], 0.5f);
  c.feature_dtype = DType::Float16;  // float16 features: the canonical half NaN
  const VoxelizeResult h = voxelize(rows({{0.5f, 0.5f, 0.5f, -NAN}}), c);
  ASSERT_EQ(h.stats.voxels, 1);
  EXPECT_EQ(h.features.ptr<uint16_t>()[3], 0x7fffu);
}

TEST(VoxelizeCpu, MoreVoxelsThanMaxVoxelsIsAnError) {
  VoxelizerConfig c = small_config();
  const Tensor pts = make_cloud(c, 5000, 5);
  const int64_t n = voxelize(pts, c).stats.voxels;
  c.max_voxels = n - 1;
  try {
    voxelize(pts, c);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(std::to_string(n) + " voxels exceed max_voxels = " + std::to_string(n - 1)), std::string::npos)
        << m;
  }
  c.max_voxels = n;
  EXPECT_EQ(voxelize(pts, c).stats.voxels, n);
}

TEST(VoxelizeCpu, Float16PointsEqualTheirFloat32Values) {
  VoxelizerConfig c = small_config();
  const Tensor p32 = make_cloud(c, 4000, 6, false).to_dtype(DType::Float16).to_dtype(DType::Float32);
  const VoxelizeResult a = voxelize(p32, c), b = voxelize(p32.to_dtype(DType::Float16), c);
  ASSERT_EQ(a.features.bytes(), b.features.bytes());
  EXPECT_EQ(std::memcmp(a.features.data(), b.features.data(), a.features.bytes()), 0);
  EXPECT_EQ(std::memcmp(a.indices.data(), b.indices.data(), a.indices.bytes()), 0);
}

TEST(VoxelizeCpu, BadPointsAndConfigsAreErrors) {
  VoxelizerConfig c = small_config();
  EXPECT_THROW(voxelize(Tensor::from_host(nullptr, {0, 5}, DType::Float32), c), Error);  // 5 columns, 4 expected
  std::vector<int32_t> ints(8, 0);
  EXPECT_THROW(voxelize(Tensor::from_host(ints.data(), {2, 4}, DType::Int32), c), Error);
  VoxelizerConfig bad = c;
  bad.feature_columns = {0, 4};
  EXPECT_THROW(validate(bad), Error);
  bad = c;
  bad.voxel_size[1] = 0.f;
  EXPECT_THROW(validate(bad), Error);
  bad = c;
  bad.range[2] = 5.f;
  EXPECT_THROW(validate(bad), Error);
  bad = c;
  bad.max_points_per_voxel = 0;
  EXPECT_THROW(validate(bad), Error);
  EXPECT_THROW(voxelizer_preset("nuscenes"), Error);
  // one axis of 2.1e9 cells is its count (it was saturated to 2^31 - 1 from 2e9 on, and accepted: the other axes
  // are one cell); 2^31 or more cells on an axis, or a range whose width is past float32's, are errors
  auto message = [](const VoxelizerConfig& v) {
    try {
      validate(v);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  bad = c;
  bad.range = {0.f, 0.f, 0.f, 2.1e9f, 1.f, 1.f};
  bad.voxel_size = {1.f, 1.f, 1.f};
  EXPECT_EQ(message(bad), "no error");
  EXPECT_EQ(voxel_grid(bad)[size_t(bad.order == VoxelOrder::Xyz ? 0 : 2)], 2100000000);
  bad.range = {0.f, 0.f, 0.f, 2.2e9f, 1.f, 1.f};
  EXPECT_NE(message(bad).find("range x"), std::string::npos) << message(bad);
  EXPECT_NE(message(bad).find("2^31 or more"), std::string::npos) << message(bad);
  bad.range = {-3e38f, 0.f, 0.f, 3e38f, 1.f, 1.f};
  EXPECT_NE(message(bad).find("2^31 or more"), std::string::npos) << message(bad);
}

TEST(VoxelizePresets, GridsFollowFromRangeAndVoxelSize) {
  const VoxelizerConfig nu = voxelizer_preset("nuscenes-centerpoint");
  EXPECT_EQ(voxel_grid(nu), (Int3{40, 1440, 1440}));
  EXPECT_EQ(model_grid(nu), (Int3{41, 1440, 1440}));
  EXPECT_EQ(nu.max_points_per_voxel, 10);
  EXPECT_EQ(nu.max_voxels, 160000);
  EXPECT_EQ(nu.point_columns, 5);
  const VoxelizerConfig ki = voxelizer_preset("kitti-second");
  EXPECT_EQ(voxel_grid(ki), (Int3{40, 1600, 1408}));
  EXPECT_EQ(model_grid(ki), (Int3{41, 1600, 1408}));
  EXPECT_EQ(ki.point_columns, 4);
  const VoxelizerConfig wa = voxelizer_preset("waymo-centerpoint");
  EXPECT_EQ(voxel_grid(wa), (Int3{40, 1504, 1504}));
  VoxelizerConfig x = nu;
  x.order = VoxelOrder::Xyz;
  EXPECT_EQ(voxel_grid(x), (Int3{1440, 1440, 40}));
  EXPECT_EQ(model_grid(x), (Int3{1440, 1440, 41}));
  for (const std::string& n : voxelizer_preset_names()) EXPECT_NO_THROW(validate(voxelizer_preset(n))) << n;
}

TEST(VoxelizePresets, CheckGridSaysHowTheModelGridRelates) {
  const VoxelizerConfig nu = voxelizer_preset("nuscenes-centerpoint");
  EXPECT_NE(check_grid(nu, {41, 1440, 1440}).find("one z plane more"), std::string::npos);
  EXPECT_NE(check_grid(nu, {40, 1440, 1440}).find("equals"), std::string::npos);
  try {
    check_grid(nu, {41, 1600, 1408});
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("41x1600x1408"), std::string::npos) << m;
    EXPECT_NE(m.find("40x1440x1440"), std::string::npos) << m;
    EXPECT_NE(m.find("y 1600 vs 1440"), std::string::npos) << m;
    EXPECT_NE(m.find("x 1408 vs 1440"), std::string::npos) << m;
  }
  EXPECT_THROW(check_grid(nu, {42, 1440, 1440}), Error);
  VoxelizerConfig x = nu;
  x.order = VoxelOrder::Xyz;
  EXPECT_NO_THROW(check_grid(x, {1440, 1440, 41}));
  EXPECT_THROW(check_grid(x, {41, 1440, 1440}), Error);  // a zyx grid for an xyz voxelizer
}

TEST(VoxelizerCpuBackend, RunCountStatsAndCapacity) {
  VoxelizerConfig c = small_config();
  auto v = Voxelizer::create(c, Backend::Cpu, 3000);
  EXPECT_THROW(v->count(), Error);  // nothing run yet
  const Tensor pts = make_cloud(c, 3000, 7);
  v->run(pts);
  const VoxelizeResult ref = voxelize(pts, c);
  EXPECT_EQ(v->count(), ref.stats.voxels);
  EXPECT_EQ(v->stats().dropped_full, ref.stats.dropped_full);
  EXPECT_EQ(std::memcmp(v->features().data(), ref.features.data(), ref.features.bytes()), 0);
  EXPECT_EQ(v->device_count(), nullptr);
  EXPECT_THROW(v->run(make_cloud(c, 3001, 7)), Error);
}

TEST(VoxelizerCpuBackend, RunBatchPutsTheFramesOneAfterAnotherWithTheirBatchIndex) {
  VoxelizerConfig c = small_config();
  c.batch_index = 5;  // a single frame's; run_batch numbers its frames 0, 1, ...
  auto v = Voxelizer::create(c, Backend::Cpu, 3000, 0, 3);
  EXPECT_EQ(v->max_batch(), 3);
  const std::vector<Tensor> frames{make_cloud(c, 3000, 11), Tensor::empty({0, 4}, DType::Float32),
                                   make_cloud(c, 1200, 13)};
  v->run_batch(frames);
  EXPECT_GT(voxtest::expect_batch_equals_frames(*v, frames), 100);
  v->run_batch({frames[2]});  // a batch of one: batch index 0
  EXPECT_EQ(voxtest::expect_batch_equals_frames(*v, {frames[2]}), voxelize(frames[2], c).stats.voxels);
  v->run(frames[0]);  // single frames keep the config's batch index
  EXPECT_EQ(static_cast<const int32_t*>(v->indices().data())[0], 5);
  EXPECT_EQ(v->count(), voxelize(frames[0], c).stats.voxels);
}

TEST(VoxelizerCpuBackend, RunBatchErrorsNameTheFrameAndTheLimit) {
  VoxelizerConfig c = small_config();
  const Tensor small = make_cloud(c, 200, 21), large = make_cloud(c, 3000, 22);
  const int64_t n_small = voxelize(small, c).stats.voxels, n_large = voxelize(large, c).stats.voxels;
  ASSERT_GT(n_large, n_small + 1);
  c.max_voxels = n_small + 1;  // frame 0 fits, frame 1 does not
  auto v = Voxelizer::create(c, Backend::Cpu, 3000, 0, 2);
  const auto message = [&](const std::vector<Tensor>& frames) {
    try {
      v->run_batch(frames);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({small, large})
                .find("voxelizer 'small (frame 1 of the batch)': " + std::to_string(n_large) +
                      " voxels exceed max_voxels = " + std::to_string(n_small + 1)),
            std::string::npos)
      << message({small, large});
  EXPECT_NE(message({}).find("run_batch got 0 frames; it takes 1 to max_batch = 2"), std::string::npos);
  EXPECT_NE(message({small, small, small}).find("run_batch got 3 frames"), std::string::npos);
  EXPECT_NE(message({small, make_cloud(c, 3001, 23)}).find("3001 points exceed max_points = 3000"), std::string::npos);
  EXPECT_THROW(v->count(), Error);  // no successful run: nothing to read
  EXPECT_THROW(Voxelizer::create(c, Backend::Cpu, 3000, 0, 0), Error);
}

// parallel_frames: 0 resolves to max_batch; outside 0..max_batch is an error naming the value and the limit (checked
// before any backend is chosen, so the CUDA voxelizer refuses the same values).
TEST(VoxelizerCpuBackend, ParallelFramesLieBetweenZeroAndMaxBatch) {
  const VoxelizerConfig c = small_config();
  EXPECT_EQ(Voxelizer::create(c, Backend::Cpu, 3000, 0, 4)->parallel_frames(), 4);
  EXPECT_EQ(Voxelizer::create(c, Backend::Cpu, 3000, 0, 4, 0)->parallel_frames(), 4);
  EXPECT_EQ(Voxelizer::create(c, Backend::Cpu, 3000, 0, 4, 2)->parallel_frames(), 2);
  for (const int bad : {-1, 5}) {
    for (const Backend b : {Backend::Cpu, Backend::Cuda}) {
      try {
        Voxelizer::create(c, b, 3000, 0, 4, bad);
        FAIL() << "parallel_frames = " << bad << " accepted";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("voxelizer 'small': parallel_frames = " + std::to_string(bad) +
                                             " must lie in 0..max_batch (4); 0 means max_batch"),
                  std::string::npos)
            << e.what();
      }
    }
  }
  // the CPU voxelizer runs its frames one after another whatever the value: the same batch either way
  auto one = Voxelizer::create(c, Backend::Cpu, 3000, 0, 3, 1);
  const std::vector<Tensor> frames{make_cloud(c, 3000, 71), make_cloud(c, 900, 72), make_cloud(c, 2000, 73)};
  one->run_batch(frames);
  EXPECT_GT(voxtest::expect_batch_equals_frames(*one, frames), 100);
}

}  // namespace
