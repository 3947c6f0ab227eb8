// The `scn` subcommands. Each add_* registers its options on the app; each run_* executes after
// a successful parse and returns the exit code (scn::Error and other exceptions propagate to
// main, which prints "scn <command>: <message>" and exits with 1).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "scn/engine.h"
#include "voxel_options.h"

namespace scn::cli {

/// CLI11 validators shared by the commands (a failure is a usage error: exit code 2).
CLI::Validator grid_validator();
CLI::Validator count_list_validator();
/// Every numeric option of `app` and its subcommands, by the type CLI11 records: integers are read as decimal only
/// and within their type (CLI11 2.1 reads "010" as octal, "0x10" as hex, saturates a 64-bit value beyond its range
/// and wraps "-1" into an unsigned one); floating values must be finite (a NaN passes every CLI::Range and is the
/// "not given" marker of `compare`'s bounds). Call once after every add_*.
void strict_numbers(CLI::App& app);
/// `--offset-groups N` (CudaOptions::offset_groups) for `run` and `bench`.
void add_offset_groups_option(CLI::App* c, int& groups);
/// `--site-order auto|bitmap|neighbour-rows` (CudaOptions::site_order) for `run`, `bench` and `inspect --memory`.
CLI::Option* add_site_order_option(CLI::App* c, std::string& order);
CudaSiteOrder site_order_of(const std::string& order);

struct RunArgs {
  std::string model, features, indices, grid;
  std::vector<std::string> points;  ///< --points: voxelize these files (options in vox; several: a batch, frame b
                                    ///< with batch index b) instead of --features/--indices
  VoxelOptions vox;
  int batch = 1;
  std::string precision = "fp16", device = "auto";
  std::string output, output_dir;
  int repeat = 1;
  int threads = 0;
  bool no_autotune = false;         ///< CudaOptions::autotune = false
  std::string tile;                 ///< CudaOptions::tile
  std::string tuning_cache;         ///< CudaOptions::tuning_cache
  int offset_groups = 0;            ///< CudaOptions::offset_groups
  std::string site_order = "auto";  ///< CudaOptions::site_order
};
CLI::App* add_run(CLI::App& app, RunArgs& a);
int run_run(const RunArgs& a);

struct CompareArgs {
  std::string a, b;
  std::string indices_a, indices_b;
  bool detail = false;
  /// Bounds; NaN = not given.
  double max_rel_l2 = std::numeric_limits<double>::quiet_NaN();
  double min_cosine = std::numeric_limits<double>::quiet_NaN();
  double max_abs = std::numeric_limits<double>::quiet_NaN();
  int top = 10;
  /// --layers: A is a model, B the exporter's intermediates_dir; the frame and how to run it.
  bool layers = false;
  std::string features, indices, grid;
  std::string precision = "fp32", device = "cpu";
  int batch = 1, threads = 0;
};
CLI::App* add_compare(CLI::App& app, CompareArgs& a);
int run_compare(const CompareArgs& a);

struct InspectArgs {
  std::string model;
  std::string grid;
  int batch = 1;
  bool attrs = false;
  bool memory = false;              ///< the CUDA arena for --grid (cuda_arena_report)
  std::string frame_indices;        ///< --memory: a frame's indices; its rows per level fit the plan
  int64_t max_voxels = 0;           ///< BuildOptions::max_input_voxels
  double capacity_margin = 0.0;     ///< BuildOptions::capacity_margin (0: its default)
  std::string site_order = "auto";  ///< CudaOptions::site_order
  bool sites_ahead = false;         ///< CudaOptions::sites_ahead
};
CLI::App* add_inspect(CLI::App& app, InspectArgs& a);
int run_inspect(const InspectArgs& a);

struct SynthArgs {
  int64_t voxels = 0;
  uint64_t seed = 0;
  std::string order = "zyx", preset = "nuscenes", trim = "random";
  std::string features, indices;
  std::string points;  ///< raw points .bin
  int azimuth_steps = 0, sweeps = 0;
  int batch_index = 0, batch_size = 1;
  std::string grid;
  int channels = 0;
  bool quiet = false;
};
CLI::App* add_synth(CLI::App& app, SynthArgs& a);
int run_synth(const SynthArgs& a);

struct BenchArgs {
  std::string model, features, indices, grid;
  std::vector<std::string> points;  ///< --points: time points -> outputs (several files: one batch)
  VoxelOptions vox;                 ///< the voxelizer's settings (its preset: `preset`)
  int parallel_frames = 0;          ///< --points batches: Voxelizer::create's parallel_frames
  int64_t synthetic = 0;
  uint64_t seed = 0;
  std::string preset;  ///< synthetic scene (nuscenes, kitti) or, with --points, voxelizer preset
  int batch = 1;
  std::string precision = "fp16", device = "auto";
  int warmup = -1, runs = -1, threads = 0;  ///< -1: the backend's default (CUDA 20 / 200, CPU 2 / 10)
  std::string sweep, csv, sweep_csv;
  std::string batch_sweep, batch_csv;  ///< batch sizes through one engine (frames/s per batch), its CSV
  bool layers = false;
  bool no_cuda_graph = false;
  bool no_autotune = false;                                  ///< CudaOptions::autotune = false
  std::string tile;                                          ///< CudaOptions::tile
  std::string tuning_cache;                                  ///< CudaOptions::tuning_cache
  int offset_groups = 0;                                     ///< CudaOptions::offset_groups
  std::string site_order = "auto";                           ///< CudaOptions::site_order
  int split = 0;                                             ///< CudaOptions::split
  std::vector<std::string> tune_skip;                        ///< CudaOptions::tune_skip
  bool tune_once = false;                                    ///< CudaOptions::tune_bucket_factor = 0
  double tune_bucket_factor = 0;                             ///< > 0: CudaOptions::tune_bucket_factor
  int map_lookahead = -1;                                    ///< >= 0: CudaOptions::map_lookahead
  std::string strided_sites = "auto";                        ///< CudaOptions::strided_sites: auto | bitmap | rows
  bool sites_ahead = false;                                  ///< CudaOptions::sites_ahead
  bool stream_priorities = CudaOptions{}.stream_priorities;  ///< CudaOptions::stream_priorities
  bool fit_capacities = false;                               ///< BuildOptions::capacity_source = FirstFrame
  bool grow = false;                                         ///< BuildOptions::on_capacity_overflow = Grow
  double capacity_margin = 0.0;                              ///< BuildOptions::capacity_margin (0: its default)
};
CLI::App* add_bench(CLI::App& app, BenchArgs& a);
int run_bench(const BenchArgs& a);
/// scn bench --points (bench_points.cpp): the engine built from `builder` with `options` (max_batch and
/// max_input_voxels set there from the point files and the voxelizer).
int run_points_bench(const BenchArgs& a, EngineBuilder& builder, BuildOptions options, double parse_ms);

struct CalibrateArgs {
  std::string model, output;
  std::vector<std::pair<std::string, std::string>> frames;  ///< (features, indices) per --frame
  std::string grid;
  int64_t synthetic = 0;
  int num_frames = 4;
  uint64_t seed = 1000;
  std::string preset;
  std::string method = "absmax";
  double percentile = 99.99;
  int bins = 4096;
  std::string keep_fp16;
  int keep_fp16_first = 0;
  bool int8_scatter = false;
  std::vector<std::string> eval;
  double min_cosine = 0.0;  ///< > 0: choose the fp16 layers so that the --eval cosine reaches it
  std::string time_on;      ///< with min_cosine: "cuda" / "cpu": weigh layers by the time int8 saves there
  int threads = 0;
  bool quiet = false;
};
CLI::App* add_calibrate(CLI::App& app, CalibrateArgs& a);
int run_calibrate(const CalibrateArgs& a);

struct VizArgs {
  CLI::App* occupancy = nullptr;  ///< the nested subcommands (which one was parsed picks the picture)
  CLI::App* heatmap = nullptr;
  CLI::App* diff = nullptr;
  std::vector<std::string> inputs;
  std::string grid, order = "zyx", channels, output;
  int batch_index = 0;
};
CLI::App* add_viz(CLI::App& app, VizArgs& a);
int run_viz(const VizArgs& a);
struct VoxelizeArgs {
  std::string points, features, indices;
  VoxelOptions vox;
  std::string device = "auto";
  int bench = 0, warmup = 20;
  bool quiet = false;
};
CLI::App* add_voxelize(CLI::App& app, VoxelizeArgs& a);
int run_voxelize(const VoxelizeArgs& a);

}  // namespace scn::cli
