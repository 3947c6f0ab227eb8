// Shared by the voxelizer tests: deterministic synthetic clouds and an independent reference
// voxelizer written with plain loops and a std::map (no sort, no keys, no code shared with
// engine/src/voxelize).
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/half.h"
#include "scn/voxelize.h"

namespace scn::voxtest {

/// Points [P, C] float32 around a few clusters (so voxels fill up and overflow their point limit),
/// plus a share of points outside the range and, when asked, NaN / Inf coordinates.
inline Tensor make_cloud(const VoxelizerConfig& c, int64_t P, uint64_t seed, bool non_finite = true) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  auto next = [&] {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  };
  auto uni = [&] { return double(next() >> 11) * 0x1.0p-53; };
  std::vector<float> v(size_t(P) * size_t(c.point_columns));
  std::array<double, 3> centre{};
  for (int64_t i = 0; i < P; ++i) {
    float* row = &v[size_t(i) * size_t(c.point_columns)];
    if (i % 64 == 0)
      for (int d = 0; d < 3; ++d)
        centre[size_t(d)] = c.range[size_t(d)] + uni() * (c.range[size_t(d) + 3] - c.range[size_t(d)]);
    const double r = uni();
    // every other cluster is tight (half a voxel wide: a few voxels take its ~45 points, beyond any
    // point limit), the others loose (3 voxels wide)
    const double width = (i / 64) % 2 ? 0.5 : 3.0;
    for (int d = 0; d < 3; ++d) {
      const double lo = c.range[size_t(d)], hi = c.range[size_t(d) + 3], span = hi - lo;
      double p = r < 0.7 ? centre[size_t(d)] + (uni() - 0.5) * width * c.voxel_size[size_t(d)]  // clustered
                         : lo - 0.05 * span + uni() * 1.1 * span;                               // spread, some outside
      row[d] = float(p);
    }
    for (int k = 3; k < c.point_columns; ++k) row[k] = float(std::floor(uni() * 256.0)) + 0.25f * float(k);
    if (non_finite && next() % 97 == 0) row[next() % 3] = (next() & 1) ? NAN : -INFINITY;
  }
  return Tensor::from_host(v.data(), {P, c.point_columns}, DType::Float32);
}

struct RefResult {
  std::vector<std::array<int32_t, 4>> indices;  ///< ascending (i0, i1, i2)
  std::vector<std::vector<float>> features;     ///< float32 before any float16 rounding
  int64_t out_of_range = 0, non_finite = 0, full = 0;
};

/// The reference: per point, per axis, the rule written out; voxels in a std::map.
inline RefResult reference_voxelize(const Tensor& points, const VoxelizerConfig& c) {
  const int C = int(points.dim(1));
  const float* p = points.ptr<float>();
  int n[3];
  for (int d = 0; d < 3; ++d)
    n[d] = int(std::round((c.range[size_t(d) + 3] - c.range[size_t(d)]) / c.voxel_size[size_t(d)]));
  std::map<std::array<int32_t, 3>, std::vector<int64_t>> cells;
  RefResult r;
  for (int64_t i = 0; i < points.dim(0); ++i) {
    const float* row = p + i * C;
    if (!std::isfinite(row[0]) || !std::isfinite(row[1]) || !std::isfinite(row[2])) {
      ++r.non_finite;
      continue;
    }
    int cell[3];
    bool in = true;
    for (int d = 0; d < 3; ++d) {
      const float lo = c.range[size_t(d)], hi = c.range[size_t(d) + 3];
      if (row[d] < lo || row[d] >= hi) in = false;
      if (!in) break;
      const float q = std::floor((row[d] - lo) / c.voxel_size[size_t(d)]);
      cell[d] = int(q);
      if (cell[d] < 0 || cell[d] >= n[d]) in = false;
    }
    if (!in) {
      ++r.out_of_range;
      continue;
    }
    const std::array<int32_t, 3> key = c.order == VoxelOrder::Zyx ? std::array<int32_t, 3>{cell[2], cell[1], cell[0]}
                                                                  : std::array<int32_t, 3>{cell[0], cell[1], cell[2]};
    cells[key].push_back(i);
  }
  for (const auto& kv : cells) {
    r.indices.push_back({c.batch_index, kv.first[0], kv.first[1], kv.first[2]});
    const size_t kept = std::min(kv.second.size(), size_t(c.max_points_per_voxel));
    r.full += int64_t(kv.second.size() - kept);
    std::vector<float> f;
    for (int col : c.feature_columns) {
      float sum = 0.f;
      const size_t use = c.reduction == VoxelReduction::Mean ? kept : 1;
      for (size_t k = 0; k < use; ++k) sum = sum + p[kv.second[k] * C + col];
      f.push_back(c.reduction == VoxelReduction::Mean ? sum / float(kept) : sum);
    }
    r.features.push_back(f);
  }
  return r;
}

/// The tensor's bytes, brought to the host.
inline std::vector<uint8_t> host_bytes(const Tensor& t) {
  const Tensor h = t.to(Device::Host);
  const auto* p = static_cast<const uint8_t*>(h.data());
  return std::vector<uint8_t>(p, p + h.bytes());
}

/// Features as float32 values (float16 converted).
inline std::vector<float> floats(const Tensor& t) {
  std::vector<float> v(size_t(t.numel()));
  if (t.dtype() == DType::Float16)
    for (size_t i = 0; i < v.size(); ++i) v[i] = half_to_float(t.ptr<uint16_t>()[i]);
  else if (!v.empty())
    std::memcpy(v.data(), t.data(), v.size() * 4);
  return v;
}

/// The last run_batch(frames) of `v` against the oracle frame by frame: voxelize(frame b) with batch index b, the
/// frames' rows one after another (bytes of features and indices), statistics summed. Returns the batch's rows.
inline int64_t expect_batch_equals_frames(Voxelizer& v, const std::vector<Tensor>& frames) {
  const Tensor f = v.features().to(Device::Host), i = v.indices().to(Device::Host);
  int64_t n = 0, points = 0, out = 0, non_finite = 0, full = 0;
  size_t fo = 0, io = 0;
  for (size_t b = 0; b < frames.size(); ++b) {
    SCOPED_TRACE("frame " + std::to_string(b));
    VoxelizerConfig c = v.config();
    c.batch_index = int32_t(b);
    const VoxelizeResult ref = voxelize(frames[b].to(Device::Host), c);  // the oracle takes host points
    EXPECT_LE(fo + ref.features.bytes(), f.bytes());
    EXPECT_LE(io + ref.indices.bytes(), i.bytes());
    if (fo + ref.features.bytes() > f.bytes() || io + ref.indices.bytes() > i.bytes()) return -1;
    EXPECT_EQ(std::memcmp(static_cast<const char*>(f.data()) + fo, ref.features.data(), ref.features.bytes()), 0);
    EXPECT_EQ(std::memcmp(static_cast<const char*>(i.data()) + io, ref.indices.data(), ref.indices.bytes()), 0);
    int64_t other_batch = 0;  // the batch column, stated on its own
    for (int64_t r = 0; r < ref.stats.voxels; ++r)
      other_batch += static_cast<const int32_t*>(i.data())[(io / 4) + size_t(r) * 4] != int32_t(b);
    EXPECT_EQ(other_batch, 0);
    fo += ref.features.bytes();
    io += ref.indices.bytes();
    n += ref.stats.voxels;
    points += ref.stats.points;
    out += ref.stats.dropped_out_of_range;
    non_finite += ref.stats.dropped_non_finite;
    full += ref.stats.dropped_full;
  }
  EXPECT_EQ(v.count(), n);
  EXPECT_EQ(f.dim(0), n);
  const VoxelizeStats s = v.stats();
  EXPECT_EQ(s.points, points);
  EXPECT_EQ(s.voxels, n);
  EXPECT_EQ(s.dropped_out_of_range, out);
  EXPECT_EQ(s.dropped_non_finite, non_finite);
  EXPECT_EQ(s.dropped_full, full);
  return n;
}

/// A small config: grid 4 x 16 x 16 (zyx), 3 points per voxel, 4 columns.
inline VoxelizerConfig small_config() {
  VoxelizerConfig c;
  c.name = "small";
  c.range = {-2.f, -2.f, -1.f, 2.f, 2.f, 1.f};
  c.voxel_size = {0.25f, 0.25f, 0.5f};
  c.max_points_per_voxel = 3;
  c.max_voxels = 100000;
  c.point_columns = 4;
  c.feature_columns = {0, 1, 2, 3};
  return c;
}

}  // namespace scn::voxtest
