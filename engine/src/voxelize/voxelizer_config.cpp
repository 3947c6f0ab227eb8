// Voxelizer configuration: the presets with their published parameters, validation, the grid that
// follows from range and voxel size, and the check of that grid against a model's input grid.
#include <cmath>
#include <limits>

#include "scn/error.h"
#include "voxelize/voxel_rules.h"

namespace scn {

namespace {

// 2^31 (exact in float32): an axis's cell count must stay below it to fit an int32 coordinate
constexpr float kAxisCellLimit = 2147483648.f;

/// Cells of axis d (x, y, z) in float32 throughout, as NVIDIA's Params::getGrid*Size(): validate refuses a count that
/// is not finite or not below kAxisCellLimit, voxel_grid converts it.
float axis_cells(const VoxelizerConfig& c, int d) {
  return std::round((c.range[size_t(d) + 3] - c.range[size_t(d)]) / c.voxel_size[size_t(d)]);
}

VoxelizerConfig make(const char* name, std::array<float, 6> range, std::array<float, 3> size, int max_points,
                     int64_t max_voxels, int columns) {
  VoxelizerConfig c;
  c.name = name;
  c.range = range;
  c.voxel_size = size;
  c.max_points_per_voxel = max_points;
  c.max_voxels = max_voxels;
  c.point_columns = columns;
  c.feature_columns.clear();
  for (int i = 0; i < columns; ++i) c.feature_columns.push_back(i);
  return c;
}

}  // namespace

std::vector<std::string> voxelizer_preset_names() {
  return {"nuscenes-centerpoint", "kitti-second", "waymo-centerpoint"};
}

VoxelizerConfig voxelizer_preset(const std::string& name) {
  // NVIDIA-AI-IOT/Lidar_AI_Solution: CUDA-CenterPoint and libraries/3DSparseConvolution/src/
  // voxelization.cu (class Params): range [-54,-54,-5, 54,54,3], voxel 0.075 x 0.075 x 0.2, 10 points
  // per voxel, 160000 voxels, 5 features x, y, z, intensity, time lag.
  if (name == "nuscenes-centerpoint")
    return make("nuscenes-centerpoint", {-54.f, -54.f, -5.f, 54.f, 54.f, 3.f}, {0.075f, 0.075f, 0.2f}, 10, 160000, 5);
  // OpenPCDet tools/cfgs/dataset_configs/kitti_dataset.yaml (SECOND, PV-RCNN): POINT_CLOUD_RANGE
  // [0,-40,-3, 70.4,40,1], VOXEL_SIZE [0.05,0.05,0.1], MAX_POINTS_PER_VOXEL 5, MAX_NUMBER_OF_VOXELS
  // test 40000; used_feature_list x, y, z, intensity.
  if (name == "kitti-second")
    return make("kitti-second", {0.f, -40.f, -3.f, 70.4f, 40.f, 1.f}, {0.05f, 0.05f, 0.1f}, 5, 40000, 4);
  // OpenPCDet tools/cfgs/waymo_models/centerpoint.yaml over dataset_configs/waymo_dataset.yaml:
  // POINT_CLOUD_RANGE [-75.2,-75.2,-2, 75.2,75.2,4], VOXEL_SIZE [0.1,0.1,0.15], MAX_POINTS_PER_VOXEL 5,
  // MAX_NUMBER_OF_VOXELS 150000; used_feature_list x, y, z, intensity, elongation.
  if (name == "waymo-centerpoint")
    return make("waymo-centerpoint", {-75.2f, -75.2f, -2.f, 75.2f, 75.2f, 4.f}, {0.1f, 0.1f, 0.15f}, 5, 150000, 5);
  std::string names;
  for (const std::string& n : voxelizer_preset_names()) names += (names.empty() ? "" : ", ") + n;
  SCN_FAIL("unknown voxelizer preset '", name, "' (presets: ", names, ")");
}

void validate(const VoxelizerConfig& c) {
  const std::string w = "voxelizer config '" + c.name + "': ";
  // (an enum value out of range ran as zyx / first)
  SCN_CHECK(c.order == VoxelOrder::Zyx || c.order == VoxelOrder::Xyz, w, "order = ", int(c.order),
            " is not a VoxelOrder");
  SCN_CHECK(c.reduction == VoxelReduction::Mean || c.reduction == VoxelReduction::First, w,
            "reduction = ", int(c.reduction), " is not a VoxelReduction");
  const char axis[3] = {'x', 'y', 'z'};
  for (int d = 0; d < 3; ++d) {
    const float lo = c.range[size_t(d)], hi = c.range[size_t(d) + 3], s = c.voxel_size[size_t(d)];
    SCN_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo < hi, w, "range ", axis[d], " [", lo, ", ", hi,
              ") must be finite with min < max");
    SCN_CHECK(std::isfinite(s) && s > 0.f, w, "voxel size ", axis[d], " = ", s, " must be positive and finite");
    // an axis of 2^31 cells or more (or a width past float's range) is refused here, before voxel_grid saturates it
    const float cells = axis_cells(c, d);
    SCN_CHECK(std::isfinite(cells) && cells < kAxisCellLimit, w, "range ", axis[d], " [", lo, ", ", hi,
              ") over voxel size ", s, " gives ", cells, " cells on one axis, 2^31 or more");
  }
  SCN_CHECK(c.max_points_per_voxel >= 1, w, "max_points_per_voxel = ", c.max_points_per_voxel, " must be >= 1");
  SCN_CHECK(c.max_voxels >= 1 && c.max_voxels <= std::numeric_limits<int32_t>::max(), w, "max_voxels = ", c.max_voxels,
            " must lie in 1..2^31-1");
  SCN_CHECK(c.point_columns >= 3, w, "point_columns = ", c.point_columns, " must be >= 3 (x, y, z first)");
  SCN_CHECK(!c.feature_columns.empty(), w, "feature_columns is empty");
  for (int f : c.feature_columns)
    SCN_CHECK(f >= 0 && f < c.point_columns, w, "feature column ", f, " is outside the ", c.point_columns,
              " point columns");
  SCN_CHECK(c.feature_dtype == DType::Float16 || c.feature_dtype == DType::Float32, w, "feature dtype ",
            dtype_name(c.feature_dtype), " is not float16 or float32");
  SCN_CHECK(c.batch_index >= 0, w, "batch_index = ", c.batch_index, " must be >= 0");
  const Int3 g = voxel_grid(c);
  int64_t cells = 1;
  for (int d = 0; d < 3; ++d) {
    SCN_CHECK(g[size_t(d)] >= 1, w, "the grid ", int3_string(g), " has an empty axis (range smaller than a voxel)");
    cells *= g[size_t(d)];
    SCN_CHECK(cells < (int64_t(1) << 31), w, "the grid ", int3_string(g), " has more than 2^31 cells");
  }
}

Int3 voxel_grid(const VoxelizerConfig& c) {
  int32_t n[3];
  for (int d = 0; d < 3; ++d) {
    const float cells = axis_cells(c, d);
    n[d] = std::isfinite(cells) && cells < kAxisCellLimit ? int32_t(cells) : std::numeric_limits<int32_t>::max();
  }
  return c.order == VoxelOrder::Xyz ? Int3{n[0], n[1], n[2]} : Int3{n[2], n[1], n[0]};
}

Int3 model_grid(const VoxelizerConfig& c) {
  Int3 g = voxel_grid(c);
  if (c.model_z_plus_one) ++g[c.order == VoxelOrder::Xyz ? 2 : 0];
  return g;
}

std::string check_grid(const VoxelizerConfig& c, const Int3& model) {
  const Int3 g = voxel_grid(c);
  const bool xyz = c.order == VoxelOrder::Xyz;
  const int zaxis = xyz ? 2 : 0;
  const char* order = xyz ? "x, y, z" : "z, y, x";
  if (model == g) return "model grid " + int3_string(model) + " equals the voxel grid";
  Int3 plus = g;
  ++plus[size_t(zaxis)];
  if (model == plus)
    return detail::concat("model grid ", int3_string(model), " = voxel grid ", int3_string(g),
                          " with one z plane more (spconv convention: z indices stay below ", g[size_t(zaxis)], ")");
  std::string axes;
  const char* names = xyz ? "xyz" : "zyx";
  for (int d = 0; d < 3; ++d)
    if (model[size_t(d)] != g[size_t(d)] && !(d == zaxis && model[size_t(d)] == plus[size_t(d)]))
      axes += detail::concat(axes.empty() ? "" : ", ", names[d], " ", model[size_t(d)], " vs ", g[size_t(d)]);
  SCN_FAIL("voxelizer '", c.name, "': the model's input grid ", int3_string(model), " (", order,
           ") disagrees with the voxel grid ", int3_string(g), " that range and voxel size give (", axes,
           "); expected ", int3_string(g), " or ", int3_string(plus),
           " (z + 1, spconv convention); fix the preset's range / voxel size or the model");
}

namespace vox {

Geometry make_geometry(const VoxelizerConfig& c) {
  validate(c);
  Geometry g{};
  for (int d = 0; d < 3; ++d) {
    g.min[d] = c.range[size_t(d)];
    g.max[d] = c.range[size_t(d) + 3];
    g.size[d] = c.voxel_size[size_t(d)];
  }
  const Int3 s = voxel_grid(c);
  g.xyz = c.order == VoxelOrder::Xyz ? 1 : 0;
  for (int d = 0; d < 3; ++d) {
    g.s[d] = s[size_t(d)];
    g.n[d] = g.xyz ? s[size_t(d)] : s[size_t(2 - d)];
  }
  g.cells = uint32_t(int64_t(s[0]) * s[1] * s[2]);
  g.key_bits = 1;
  while (g.key_bits < 32 && (uint64_t(1) << g.key_bits) <= g.cells) ++g.key_bits;
  return g;
}

}  // namespace vox

}  // namespace scn
