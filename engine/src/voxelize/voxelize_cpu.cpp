// The CPU voxelizer, the oracle the CUDA kernels are checked against bit for bit: classify every
// point (voxel_rules.h), sort the kept ones by (cell key, input position), then one pass over the
// runs of equal keys sums the first max_points_per_voxel points of each voxel in input order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/half.h"
#include "scn/error.h"
#include "voxelize/voxel_rules.h"
#include "voxelize/voxelize_internal.h"

namespace scn {

namespace vox {

void check_points(const Tensor& points, const VoxelizerConfig& c, const char* where) {
  SCN_CHECK(points.defined() && points.ndim() == 2, "voxelizer '", c.name, "': ", where, " points must be [P, ",
            c.point_columns, "], got ", points.defined() ? points.shape_string() : std::string("no tensor"));
  SCN_CHECK(points.dim(1) == c.point_columns, "voxelizer '", c.name, "': ", where, " points have ", points.dim(1),
            " columns, the config expects ", c.point_columns, " (point_columns)");
  SCN_CHECK(points.dtype() == DType::Float32 || points.dtype() == DType::Float16, "voxelizer '", c.name, "': ", where,
            " points are ", dtype_name(points.dtype()), "; float32 or float16 expected");
}

void check_frame(const Tensor& points, const VoxelizerConfig& c, int64_t max_points, const char* where) {
  check_points(points, c, where);
  SCN_CHECK(points.dim(0) <= max_points, "voxelizer '", c.name, "': ", points.dim(0),
            " points exceed max_points = ", max_points, " the ", where,
            " was created for (its buffers are sized once)");
}

void check_batch(const VoxelizerConfig& c, size_t frames, int max_batch) {
  SCN_CHECK(frames >= 1 && frames <= size_t(max_batch), "voxelizer '", c.name, "': run_batch got ", frames,
            " frames; it takes 1 to max_batch = ", max_batch, " (the voxelizer's max_batch at creation)");
}

VoxelizerConfig frame_config(const VoxelizerConfig& c, int b) {
  VoxelizerConfig f = c;
  f.batch_index = b;
  f.name = detail::concat(c.name, " (frame ", b, " of the batch)");
  return f;
}

std::string overflow_message(const VoxelizerConfig& c, int64_t voxels, int64_t points) {
  return detail::concat("voxelizer '", c.name, "': ", voxels, " voxels exceed max_voxels = ", c.max_voxels, " (",
                        points,
                        " points); raise max_voxels (nothing was truncated: the output is incomplete and must not be "
                        "used)");
}

}  // namespace vox

VoxelizeResult voxelize(const Tensor& points_in, const VoxelizerConfig& c) {
  const vox::Geometry g = vox::make_geometry(c);
  vox::check_points(points_in, c, "host");
  SCN_CHECK(points_in.device() == Device::Host, "voxelizer '", c.name,
            "': voxelize() takes host points; use Voxelizer with Backend::Cuda for device points");
  const Tensor points = points_in.dtype() == DType::Float32 ? points_in : points_in.to_dtype(DType::Float32);
  const int64_t P = points.dim(0);
  const int C = c.point_columns;
  const float* p = points.ptr<float>();

  VoxelizeResult r;
  r.stats.points = P;
  // (key << 32 | position): sorting these sorts by cell, then by input position.
  std::vector<uint64_t> kept;
  kept.reserve(size_t(P));
  for (int64_t i = 0; i < P; ++i) {
    const float* row = p + i * C;
    uint32_t key = 0;
    const int cls = vox::classify_point(g, row[0], row[1], row[2], &key);
    if (cls == vox::kNonFinite) ++r.stats.dropped_non_finite;
    if (cls == vox::kOutOfRange) ++r.stats.dropped_out_of_range;
    if (cls == vox::kKept) kept.push_back(uint64_t(key) << 32 | uint64_t(i));
  }
  std::sort(kept.begin(), kept.end());

  std::vector<size_t> starts;  // first entry of each voxel's run in `kept`
  for (size_t k = 0; k < kept.size(); ++k)
    if (k == 0 || (kept[k] >> 32) != (kept[k - 1] >> 32)) starts.push_back(k);
  starts.push_back(kept.size());
  const int64_t n = int64_t(starts.size()) - 1;
  r.stats.voxels = n;
  SCN_CHECK(n <= c.max_voxels, vox::overflow_message(c, n, P));

  const int F = int(c.feature_columns.size());
  std::vector<float> feat(size_t(n) * size_t(F));
  std::vector<int32_t> idx(size_t(n) * 4);
  for (int64_t v = 0; v < n; ++v) {
    const size_t b = starts[size_t(v)], e = starts[size_t(v) + 1];
    const size_t count = std::min(e - b, size_t(c.max_points_per_voxel));
    r.stats.dropped_full += int64_t(e - b - count);
    vox::key_to_index(g, uint32_t(kept[b] >> 32), c.batch_index, &idx[size_t(v) * 4]);
    for (int f = 0; f < F; ++f) {
      const int col = c.feature_columns[size_t(f)];
      float value = p[int64_t(kept[b] & 0xffffffffu) * C + col];
      if (c.reduction == VoxelReduction::Mean) {
        for (size_t k = b + 1; k < b + count; ++k) value += p[int64_t(kept[k] & 0xffffffffu) * C + col];
        value /= float(count);
      }
      if (std::isnan(value)) std::memcpy(&value, &vox::kFeatureNanBits, 4);  // the CUDA voxelizer's bits
      feat[size_t(v) * size_t(F) + size_t(f)] = value;
    }
  }

  r.indices = Tensor::from_host(idx.data(), {n, 4}, DType::Int32);
  if (c.feature_dtype == DType::Float32) {
    r.features = Tensor::from_host(feat.data(), {n, F}, DType::Float32);
  } else {
    std::vector<uint16_t> h(feat.size());
    for (size_t i = 0; i < feat.size(); ++i)
      h[i] = std::isnan(feat[i]) ? vox::kFeatureNanHalfBits : float_to_half(feat[i]);
    r.features = Tensor::from_host(h.data(), {n, F}, DType::Float16);
  }
  return r;
}

}  // namespace scn
