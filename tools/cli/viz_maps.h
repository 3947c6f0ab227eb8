// The 2-D maps `scn viz` draws, computed from .tensor contents.
#pragma once

#include <string>
#include <vector>

#include "scn/tensor.h"
#include "scn/types.h"
#include "viz_render.h"

namespace scn::cli {

/// BEV occupancy of a frame: for every (y, x) cell the number of voxels of batch `batch` above it
/// (summed over the height axis). `indices` [N, 4] int32 (b, i0, i1, i2) in `order` ("zyx": (b, z,
/// y, x), grid (z, y, x); "xyz": (b, x, y, z), grid (x, y, z)). Rows of the map are y, columns x.
/// scn::Error (naming `name`) on a bad tensor or a row outside the grid.
Map2D occupancy_map(const Tensor& indices, const Int3& grid, const std::string& order, int batch,
                    const std::string& name);

/// Per-cell L2 norm over the channels of a dense [N, C, H, W] tensor (or [N, C, D, H, W], whose
/// (C, D) pairs count as channels) for batch `batch`: sqrt(sum over c of x[b, c, h, w]^2).
/// `channels` (empty: all) picks channels of C. float16 / float32; scn::Error naming `name`.
Map2D channel_norm_map(const Tensor& t, const std::vector<int64_t>& channels, int batch, const std::string& name);

/// The same norm of the difference A - B (same shape): |A - B| per cell.
Map2D diff_norm_map(const Tensor& a, const Tensor& b, const std::vector<int64_t>& channels, int batch,
                    const std::string& name_a, const std::string& name_b);

/// "0,5,7" -> {0, 5, 7} (non-negative integers); scn::Error on anything else.
std::vector<int64_t> parse_channel_list(const std::string& text);

}  // namespace scn::cli
