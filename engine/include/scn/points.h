// scn — LiDAR point files: raw float32 .bin (KITTI x4, nuScenes x5), NVIDIA's raw float16 .bin
// (Lidar_AI_Solution 3DSparseConvolution workspace: float16 [-1, 5] x, y, z, intensity, time lag,
// no header), .tensor, and PCD (ASCII or binary, fields chosen by name). Every malformation is an
// scn::Error naming the file.
#pragma once

#include <string>
#include <vector>

#include "scn/tensor.h"

namespace scn {

enum class PointFormat {
  Auto,    ///< by extension: .bin -> Bin, .tensor -> Tensor, .pcd -> Pcd
  Bin,     ///< raw little-endian float32 rows of `columns` values
  BinF16,  ///< raw little-endian float16 rows of `columns` values (NVIDIA's workspace files)
  Tensor,  ///< a 2-D float32 / float16 `.tensor`
  Pcd,     ///< Point Cloud Library PCD v0.7, DATA ascii or binary
};

/// "auto", "bin", "bin-f16", "tensor", "pcd"; throws scn::Error on anything else.
PointFormat parse_point_format(const std::string& name);
const char* point_format_name(PointFormat format);

struct PointFileOptions {
  PointFormat format = PointFormat::Auto;
  /// Values per point of a .bin (required there: nothing in the file says it); for .tensor, when
  /// > 0, the column count the tensor must have. Ignored for PCD (the fields decide).
  int columns = 0;
  /// PCD: the fields to read, in this order (each must exist with COUNT 1).
  std::vector<std::string> fields{"x", "y", "z", "intensity"};
};

/// Reads a point file into a host tensor [P, C]: float32, or float16 for BinF16 and float16
/// .tensor files.
Tensor read_points(const std::string& path, const PointFileOptions& options = {});

/// Writes host points [P, C] (float32, or float16 converted to float32) as a raw float32 .bin,
/// atomically (temporary name, then rename).
void write_points_bin(const std::string& path, const Tensor& points);

}  // namespace scn
