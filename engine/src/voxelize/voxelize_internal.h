// Pieces shared by the CPU and CUDA voxelizers, and the CUDA half of time_points_to_bev (not public).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "scn/points_to_bev.h"
#include "scn/voxelize.h"

namespace scn::vox {

/// Throws scn::Error unless points is [P, point_columns] float32 / float16.
void check_points(const Tensor& points, const VoxelizerConfig& config, const char* where);
/// check_points, and at most max_points rows (a reusable Voxelizer's run and run_batch frames).
void check_frame(const Tensor& points, const VoxelizerConfig& config, int64_t max_points, const char* where);
/// Throws scn::Error unless 1 <= frames <= max_batch (run_batch).
void check_batch(const VoxelizerConfig& config, size_t frames, int max_batch);
/// Frame b of a run_batch: the config with batch index b, named "<name> (frame b of the batch)" for messages.
VoxelizerConfig frame_config(const VoxelizerConfig& config, int b);
/// The message of a max_voxels overflow (CPU exception and CUDA check_errors()).
std::string overflow_message(const VoxelizerConfig& config, int64_t voxels, int64_t points);

/// Defined by voxelize_cuda.cu in CUDA builds.
std::unique_ptr<Voxelizer> create_cuda_voxelizer(const VoxelizerConfig& config, int64_t max_points, int device,
                                                 int max_batch, int parallel_frames);
/// The frames of a time_points_to_bev run: one frame through run(), several as one batch through run_batch().
void run_frames(Voxelizer& vox, const std::vector<Tensor>& frames, void* stream);
/// time_points_to_bev for a CUDA engine and voxelizer (points_to_bev_cuda.cpp, in CUDA builds).
PointsToBevTiming time_points_graphs(Engine& engine, Voxelizer& vox, const std::vector<Tensor>& frames,
                                     const Int3& grid, int warmup, int runs, int input);

}  // namespace scn::vox
