// Synthetic LiDAR-like frames: determinism, exact counts, valid sites, plausible features.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <unordered_set>

#include "core/half.h"
#include "synthetic_frame.h"

namespace {

using scn::synth::FrameOptions;
using scn::synth::generate_frame;

FrameOptions opts(int64_t voxels, uint64_t seed) {
  FrameOptions o;
  o.voxels = voxels;
  o.seed = seed;
  return o;
}

uint64_t site_key(const int32_t* r) {
  return ((uint64_t(uint32_t(r[0])) * 4096 + uint64_t(r[1])) * 4096 + uint64_t(r[2])) * 4096 + uint64_t(r[3]);
}

float feat(const scn::synth::Frame& f, int64_t row, int c) {
  return scn::half_to_float(f.features[size_t(row * f.channels + c)]);
}

TEST(SynthFrame, SameSeedSameFrameOtherSeedOtherFrame) {
  const auto a = generate_frame(opts(20000, 7));
  const auto b = generate_frame(opts(20000, 7));
  const auto c = generate_frame(opts(20000, 8));
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.features, b.features);
  EXPECT_NE(a.indices, c.indices);
  EXPECT_NE(a.features, c.features);
}

TEST(SynthFrame, ExactVoxelCount) {
  for (int64_t n : {1, 1000, 10000, 79745, 150000}) {
    const auto f = generate_frame(opts(n, 3));
    EXPECT_EQ(f.num_voxels, n);
    EXPECT_EQ(f.indices.size(), size_t(n) * 4);
    EXPECT_EQ(f.features.size(), size_t(n) * 5);
    EXPECT_GE(f.voxels_before_trim, n);
  }
}

TEST(SynthFrame, DefaultScanLooksLikeARealFrame) {
  // The real nuScenes frame has 79,745 voxels; a default scan (voxels = 0) lands in that range.
  for (uint64_t seed : {1, 2, 3}) {
    const auto f = generate_frame(opts(0, seed));
    EXPECT_GT(f.num_voxels, 25000) << "seed " << seed;
    EXPECT_LT(f.num_voxels, 200000) << "seed " << seed;
    EXPECT_EQ(f.sweeps, 10);
    EXPECT_EQ(f.voxels_before_trim, f.num_voxels);
  }
}

TEST(SynthFrame, SitesAreUniqueAndInsideTheGrid) {
  FrameOptions o = opts(80000, 11);
  o.batch_index = 2;
  const auto f = generate_frame(o);
  ASSERT_EQ(f.grid, (std::array<int32_t, 3>{41, 1440, 1440}));
  std::unordered_set<uint64_t> seen;
  for (int64_t i = 0; i < f.num_voxels; ++i) {
    const int32_t* r = &f.indices[size_t(4 * i)];
    ASSERT_EQ(r[0], 2);
    for (int d = 0; d < 3; ++d) {
      ASSERT_GE(r[d + 1], 0) << "row " << i;
      ASSERT_LT(r[d + 1], f.grid[size_t(d)]) << "row " << i;
    }
    ASSERT_TRUE(seen.insert(site_key(r)).second) << "duplicate site in row " << i;
  }
}

TEST(SynthFrame, FeaturesAreFiniteAndLieInTheirVoxel) {
  const auto f = generate_frame(opts(50000, 5));
  const double vx = 0.075, vy = 0.075, vz = 0.2;
  double max_time = 0;
  for (int64_t i = 0; i < f.num_voxels; ++i) {
    for (int c = 0; c < 5; ++c) ASSERT_TRUE(std::isfinite(feat(f, i, c))) << "row " << i << " channel " << c;
    const int32_t* r = &f.indices[size_t(4 * i)];
    // Mean point inside its voxel, allowing for float16 rounding (spacing 1/32 near 50 m).
    const double cx = -54 + (r[3] + 0.5) * vx, cy = -54 + (r[2] + 0.5) * vy, cz = -5 + (r[1] + 0.5) * vz;
    ASSERT_LE(std::abs(feat(f, i, 0) - cx), vx / 2 + 0.032) << "row " << i;
    ASSERT_LE(std::abs(feat(f, i, 1) - cy), vy / 2 + 0.032) << "row " << i;
    ASSERT_LE(std::abs(feat(f, i, 2) - cz), vz / 2 + 0.004) << "row " << i;
    ASSERT_GE(feat(f, i, 3), 0.f);
    ASSERT_LE(feat(f, i, 3), 255.f);
    ASSERT_GE(feat(f, i, 4), 0.f);
    ASSERT_LE(feat(f, i, 4), 0.4502f);
    max_time = std::max<double>(max_time, feat(f, i, 4));
  }
  EXPECT_GT(max_time, 0.04);  // several sweeps merged
}

TEST(SynthFrame, HeightsAreMostlyLowButSpread) {
  const auto f = generate_frame(opts(80000, 21));
  std::vector<int64_t> hist(41, 0);
  for (int64_t i = 0; i < f.num_voxels; ++i) ++hist[size_t(f.indices[size_t(4 * i + 1)])];
  int levels = 0;
  int64_t low = 0;
  for (int z = 0; z < 41; ++z) {
    levels += hist[size_t(z)] > 50;
    if (z <= 20) low += hist[size_t(z)];
  }
  EXPECT_GE(levels, 15);              // ground, cars, walls, trees: many heights
  EXPECT_GT(low, f.num_voxels / 2);   // but mostly near the ground (z index ~16)
  EXPECT_GT(hist[39] + hist[38], 0);  // and up to the top of the range
}

TEST(SynthFrame, NeighbourhoodDensityIsLidarLike) {
  // The real frame has 7.4 active sites in each 3x3x3 neighbourhood (itself included); random
  // sites in the grid would have ~1, a solid block 27.
  const auto f = generate_frame(opts(79745, 9));
  std::unordered_set<uint64_t> sites;
  for (int64_t i = 0; i < f.num_voxels; ++i) sites.insert(site_key(&f.indices[size_t(4 * i)]));
  int64_t pairs = 0;
  for (int64_t i = 0; i < f.num_voxels; ++i) {
    const int32_t* r = &f.indices[size_t(4 * i)];
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          const int32_t q[4] = {r[0], r[1] + dz, r[2] + dy, r[3] + dx};
          if (q[1] >= 0 && q[2] >= 0 && q[3] >= 0) pairs += int64_t(sites.count(site_key(q)));
        }
  }
  const double mean = double(pairs) / double(f.num_voxels);
  EXPECT_GT(mean, 4.0);
  EXPECT_LT(mean, 12.0);
}

TEST(SynthFrame, XyzIsAPermutationOfZyx) {
  FrameOptions o = opts(30000, 4);
  const auto zyx = generate_frame(o);
  o.order = scn::synth::IndexOrder::Xyz;
  const auto xyz = generate_frame(o);
  ASSERT_EQ(zyx.num_voxels, xyz.num_voxels);
  EXPECT_EQ(xyz.grid, (std::array<int32_t, 3>{1440, 1440, 41}));
  EXPECT_EQ(zyx.features, xyz.features);
  for (int64_t i = 0; i < zyx.num_voxels; ++i) {
    const int32_t* a = &zyx.indices[size_t(4 * i)];
    const int32_t* b = &xyz.indices[size_t(4 * i)];
    ASSERT_EQ(a[0], b[0]);
    ASSERT_EQ(a[1], b[3]);
    ASSERT_EQ(a[2], b[2]);
    ASSERT_EQ(a[3], b[1]);
  }
}

TEST(SynthFrame, FarthestTrimKeepsTheNearestVoxels) {
  FrameOptions o = opts(20000, 6);
  const auto random = generate_frame(o);
  o.trim = scn::synth::Trim::Farthest;
  const auto nearest = generate_frame(o);
  ASSERT_EQ(nearest.num_voxels, 20000);
  ASSERT_GT(nearest.voxels_before_trim, nearest.num_voxels);  // something was dropped
  auto max_range = [](const scn::synth::Frame& f) {
    double m = 0;
    for (int64_t i = 0; i < f.num_voxels; ++i) m = std::max<double>(m, std::hypot(feat(f, i, 0), feat(f, i, 1)));
    return m;
  };
  EXPECT_LT(max_range(nearest), max_range(random) - 1.0);
}

TEST(SynthFrame, KittiPreset) {
  FrameOptions o = FrameOptions::kitti();
  o.voxels = 15000;
  o.seed = 2;
  const auto f = generate_frame(o);
  EXPECT_EQ(f.grid, (std::array<int32_t, 3>{41, 1600, 1408}));
  ASSERT_EQ(f.channels, 4);
  ASSERT_EQ(f.features.size(), size_t(15000) * 4);
  for (int64_t i = 0; i < f.num_voxels; ++i) {
    ASSERT_GE(feat(f, i, 0), 0.f);   // front only
    ASSERT_LE(feat(f, i, 3), 1.0f);  // reflectance
    ASSERT_LT(f.indices[size_t(4 * i + 1)], 40);
  }
}

TEST(SynthFrame, PresetsByName) {
  const std::vector<std::string>& names = FrameOptions::preset_names();
  ASSERT_EQ(names, (std::vector<std::string>{"nuscenes", "kitti"}));
  EXPECT_EQ(FrameOptions::preset("kitti").channels, FrameOptions::kitti().channels);
  EXPECT_EQ(FrameOptions::preset("kitti").beams, 64);
  EXPECT_EQ(FrameOptions::preset("nuscenes").channels, FrameOptions::nuscenes().channels);
  try {
    FrameOptions::preset("waymo");
    FAIL() << "an unknown preset is an error";
  } catch (const scn::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'waymo'"), std::string::npos) << m;
    EXPECT_NE(m.find("nuscenes, kitti"), std::string::npos) << m;
  }
}

TEST(SynthFrame, BatchConcatenatesFramesWithTheirBatchIndex) {
  const auto f = scn::synth::generate_batch(opts(5000, 1), 3);
  ASSERT_EQ(f.num_voxels, 15000);
  std::set<std::pair<int32_t, uint64_t>> seen;
  for (int64_t i = 0; i < f.num_voxels; ++i) {
    ASSERT_EQ(f.indices[size_t(4 * i)], int32_t(i / 5000));
    ASSERT_TRUE(seen.insert({f.indices[size_t(4 * i)], site_key(&f.indices[size_t(4 * i)])}).second);
  }
  // Frames differ from each other.
  EXPECT_NE(std::vector<int32_t>(f.indices.begin() + 1, f.indices.begin() + 4),
            std::vector<int32_t>(f.indices.begin() + 5000 * 4 + 1, f.indices.begin() + 5000 * 4 + 4));
}

TEST(SynthFrame, GridOverrideDropsSitesBeyondIt) {
  FrameOptions o = opts(2000, 3);
  o.grid_zyx = {41, 720, 720};  // the -x/-y quadrant only
  const auto f = generate_frame(o);
  ASSERT_EQ(f.num_voxels, 2000);
  for (int64_t i = 0; i < f.num_voxels; ++i) {
    ASSERT_LT(f.indices[size_t(4 * i + 2)], 720);
    ASSERT_LT(f.indices[size_t(4 * i + 3)], 720);
    ASSERT_LT(feat(f, i, 0), 0.05f);
  }
}

TEST(SynthFrame, TensorsHaveTheFrameShapes) {
  const auto f = generate_frame(opts(1234, 1));
  const scn::Tensor t = scn::synth::features_tensor(f);
  const scn::Tensor i = scn::synth::indices_tensor(f);
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{1234, 5}));
  EXPECT_EQ(t.dtype(), scn::DType::Float16);
  EXPECT_EQ(i.shape(), (std::vector<int64_t>{1234, 4}));
  EXPECT_EQ(i.dtype(), scn::DType::Int32);
  EXPECT_EQ(i.ptr<int32_t>()[5], f.indices[5]);
}

TEST(SynthFrame, InvalidOptionsAreErrors) {
  FrameOptions o = opts(100, 1);
  o.channels = 3;
  EXPECT_THROW(generate_frame(o), scn::Error);
  o = opts(-1, 1);
  EXPECT_THROW(generate_frame(o), scn::Error);
  o = opts(100, 1);
  o.voxel_size = {0.f, 0.075f, 0.2f};
  EXPECT_THROW(generate_frame(o), scn::Error);
  // More voxels than a tiny grid can hold.
  o = opts(5000, 1);
  o.grid_zyx = {41, 10, 10};
  try {
    generate_frame(o);
    FAIL() << "expected scn::Error";
  } catch (const scn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot reach 5000 voxels"), std::string::npos) << e.what();
  }
}

TEST(SynthFrame, ThreeHundredThousandVoxelsInReasonableTime) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto f = generate_frame(opts(300000, 1));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(f.num_voxels, 300000);
  // ~0.5 s on one core; the bound only catches pathological slow-downs on a loaded machine.
  EXPECT_LT(s, 10.0);
  std::printf("300k voxels generated in %.3f s (%d passes, %lld points)\n", s, f.passes,
              static_cast<long long>(f.points));
}

}  // namespace
