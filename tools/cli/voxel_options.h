// Voxelizer options shared by `scn voxelize` and `scn run --points`: a preset plus overrides, the
// point file's format, and turning a point file into an engine input (voxelized on the engine's
// backend, the grid checked against the model's input grid).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "scn/engine.h"
#include "scn/voxelize.h"

namespace scn::cli {

struct VoxelOptions {
  std::string preset = "nuscenes-centerpoint";
  std::string range, voxel_size, order, reduction, dtype, feature_columns;
  int max_points_per_voxel = 0;  ///< 0: the preset's
  int64_t max_voxels = 0;        ///< 0: the preset's
  int batch_index = 0;
  std::string format = "auto";  ///< point file format
  int columns = 0;              ///< point columns of a .bin; 0: the preset's
  std::string fields;           ///< PCD fields, comma-separated; "": x,y,z,intensity[,time]
};

/// Registers the options on a subcommand (`--preset` only when with_preset: scn bench has its own). `points`: the
/// subcommand's --points option, which every voxelizer option then needs (given without it, an option would be
/// ignored); nullptr where the points are always given (scn voxelize).
void add_voxel_options(CLI::App* c, VoxelOptions& o, CLI::Option* points, bool with_preset = true);

/// The preset with the overrides applied and validated.
VoxelizerConfig make_voxelizer_config(const VoxelOptions& o);

/// Reads a point file with the config's column count (PCD: the named fields, by default the
/// first point_columns of x, y, z, intensity, time).
Tensor read_point_file(const std::string& path, const VoxelOptions& o, const VoxelizerConfig& config);

/// The input grid a model declares: input_spatial_shape of the first sparse conv reading graph
/// input `input`. False when the file does not say.
bool model_input_grid(const Graph& graph, int input, Int3* grid);

/// Point files read for an engine's graph input 0: the voxelizer settings (the model's index order, the engine's
/// feature dtype unless --dtype), the grid (`grid_text` when given, else the model's declared input grid, else the
/// preset's; checked against the voxel grid) and the frames.
struct PointFrames {
  VoxelizerConfig config;
  Int3 grid{};
  std::string grid_note;  ///< how the model grid relates to the voxel grid
  std::vector<Tensor> frames;
  int64_t most_points = 1;  ///< the largest frame's point count (at least 1)
};
PointFrames read_point_frames(const std::vector<std::string>& paths, const VoxelOptions& o, const Engine& engine,
                              const std::string& grid_text);

/// A voxelized point file ready for Engine::set_input.
struct PointsInput {
  Tensor features, indices;  ///< on the engine's device
  Int3 grid{};
  VoxelizeStats stats;
  std::string grid_note;  ///< how the model grid relates to the voxel grid
  double voxelize_ms = 0;
  std::unique_ptr<Voxelizer> voxelizer;  ///< owns the device features / indices
};

/// Voxelizes point files on the engine's backend (phase 1: the count is read back to the host) for graph input 0,
/// several files as one batch (Voxelizer::run_batch: file b's voxels with batch index b), checking the voxel grid
/// against `grid_text` (when given) and the model's declared input grid (when the file has one).
PointsInput voxelize_for_engine(const std::vector<std::string>& paths, const VoxelOptions& o, Engine& engine,
                                const std::string& grid_text);

}  // namespace scn::cli
