#include "voxel_options.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "common.h"
#include "scn/points.h"

namespace scn::cli {

namespace {

std::vector<float> parse_floats(const std::string& text, size_t n, const char* what) {
  std::vector<float> v;
  std::stringstream ss(text);
  for (std::string t; std::getline(ss, t, ',');) {
    size_t used = 0;
    float f = 0;
    try {
      f = std::stof(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    SCN_CHECK(used == t.size() && !t.empty(), what, " '", text, "': '", t, "' is not a number");
    v.push_back(f);
  }
  SCN_CHECK(v.size() == n, what, " '", text, "' must have ", n, " comma-separated values");
  return v;
}

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> v;
  std::stringstream ss(text);
  for (std::string t; std::getline(ss, t, ',');) v.push_back(t);
  return v;
}

}  // namespace

void add_voxel_options(CLI::App* c, VoxelOptions& o, CLI::Option* points, bool with_preset) {
  std::string presets;
  for (const std::string& n : voxelizer_preset_names()) presets += (presets.empty() ? "" : ", ") + n;
  if (with_preset)
    c->add_option("--preset", o.preset, "Voxelizer preset: " + presets)
        ->capture_default_str()
        ->check(CLI::IsMember(voxelizer_preset_names()));
  c->add_option("--range", o.range, "Override: point-cloud range x0,y0,z0,x1,y1,z1 (metres, [min, max))");
  c->add_option("--voxel-size", o.voxel_size, "Override: voxel size vx,vy,vz (metres)");
  c->add_option("--max-points-per-voxel", o.max_points_per_voxel,
                "Override: points kept per voxel (first in input order)")
      ->check(CLI::Range(1, 1 << 20));
  c->add_option("--max-voxels", o.max_voxels, "Override: voxel capacity (more is an error)")
      ->check(CLI::Range(int64_t(1), int64_t(INT32_MAX)));
  c->add_option("--order", o.order, "Index order (default: the model's for run, else zyx)")
      ->check(CLI::IsMember({"zyx", "xyz"}));
  c->add_option("--reduction", o.reduction, "mean (default) or first")->check(CLI::IsMember({"mean", "first"}));
  c->add_option("--dtype", o.dtype, "Feature dtype: fp16 (default) or fp32")->check(CLI::IsMember({"fp16", "fp32"}));
  c->add_option("--feature-columns", o.feature_columns, "Point columns that become features, e.g. 0,1,2,3,4");
  c->add_option("--batch-index", o.batch_index, "Batch index written in column 0")->check(CLI::Range(0, 1 << 16));
  c->add_option("--format", o.format, "Point file format")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "bin", "bin-f16", "tensor", "pcd"}));
  c->add_option("--columns", o.columns, "Values per point in the file (.bin; 0: the preset's)")
      ->check(CLI::Range(0, 64));
  c->add_option("--fields", o.fields,
                "PCD fields to read, e.g. x,y,z,intensity (default: the first C of x,y,z,intensity,time)");
  if (!points) return;
  for (const char* name :
       {"--range", "--voxel-size", "--max-points-per-voxel", "--max-voxels", "--order", "--reduction", "--dtype",
        "--feature-columns", "--batch-index", "--format", "--columns", "--fields"})
    c->get_option(name)->needs(points);
  if (with_preset) c->get_option("--preset")->needs(points);
}

VoxelizerConfig make_voxelizer_config(const VoxelOptions& o) {
  VoxelizerConfig c = voxelizer_preset(o.preset);
  if (!o.range.empty()) {
    const std::vector<float> r = parse_floats(o.range, 6, "--range");
    for (size_t i = 0; i < 6; ++i) c.range[i] = r[i];
  }
  if (!o.voxel_size.empty()) {
    const std::vector<float> s = parse_floats(o.voxel_size, 3, "--voxel-size");
    for (size_t i = 0; i < 3; ++i) c.voxel_size[i] = s[i];
  }
  if (o.max_points_per_voxel) c.max_points_per_voxel = o.max_points_per_voxel;
  if (o.max_voxels) c.max_voxels = o.max_voxels;
  if (!o.order.empty()) c.order = o.order == "xyz" ? VoxelOrder::Xyz : VoxelOrder::Zyx;
  if (!o.reduction.empty()) c.reduction = o.reduction == "first" ? VoxelReduction::First : VoxelReduction::Mean;
  if (!o.dtype.empty()) c.feature_dtype = o.dtype == "fp32" ? DType::Float32 : DType::Float16;
  c.batch_index = o.batch_index;
  if (o.columns) {
    c.point_columns = o.columns;
    if (o.feature_columns.empty()) {
      c.feature_columns.clear();
      for (int i = 0; i < o.columns; ++i) c.feature_columns.push_back(i);
    }
  }
  if (!o.feature_columns.empty()) {
    c.feature_columns.clear();
    for (const std::string& t : split_names(o.feature_columns)) {
      size_t used = 0;
      int v = -1;
      try {
        v = std::stoi(t, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      SCN_CHECK(used == t.size() && !t.empty(), "--feature-columns '", o.feature_columns, "': '", t,
                "' is not a column number");
      c.feature_columns.push_back(v);
    }
  }
  validate(c);
  return c;
}

Tensor read_point_file(const std::string& path, const VoxelOptions& o, const VoxelizerConfig& c) {
  PointFileOptions po;
  po.format = parse_point_format(o.format);
  po.columns = c.point_columns;
  if (!o.fields.empty()) {
    po.fields = split_names(o.fields);
  } else {
    const char* names[5] = {"x", "y", "z", "intensity", "time"};
    po.fields.clear();
    for (int i = 0; i < std::min(c.point_columns, 5); ++i) po.fields.push_back(names[i]);
  }
  const Tensor t = read_points(path, po);
  SCN_CHECK(t.dim(1) == c.point_columns, path, ": ", t.dim(1), " point columns, the voxelizer expects ",
            c.point_columns, " (--columns / --fields / the preset)");
  return t;
}

bool model_input_grid(const Graph& g, int input, Int3* grid) {
  const int v = g.inputs.at(size_t(input));
  for (const Node& n : g.nodes) {
    if (n.op != OpType::SparseConv || n.inputs.empty() || n.inputs[0] != v) continue;
    for (const auto& kv : n.info) {
      if (kv.first != "input_spatial_shape") continue;
      std::vector<int32_t> d;
      std::string num;
      for (char ch : kv.second + ",") {
        if (ch >= '0' && ch <= '9') {
          num += ch;
        } else if (!num.empty()) {
          d.push_back(std::stoi(num));
          num.clear();
        }
      }
      if (d.size() != 3) return false;
      *grid = Int3{d[0], d[1], d[2]};
      return true;
    }
  }
  return false;
}

PointFrames read_point_frames(const std::vector<std::string>& paths, const VoxelOptions& o, const Engine& engine,
                              const std::string& grid_text) {
  VoxelOptions opt = o;
  const std::string model_order = model_index_order(engine.graph());
  SCN_CHECK(opt.order.empty() || opt.order == model_order, "--order ", opt.order,
            " disagrees with the model's index order ", model_order);
  opt.order = model_order;
  if (opt.dtype.empty()) opt.dtype = engine.precision() == Precision::Fp32 ? "fp32" : "fp16";
  PointFrames pf;
  pf.config = make_voxelizer_config(opt);
  Int3 declared{};
  const bool has_declared = model_input_grid(engine.graph(), 0, &declared);
  if (!grid_text.empty()) {
    pf.grid = parse_grid(grid_text);
    SCN_CHECK(!has_declared || declared == pf.grid, "--grid ", grid_text, " disagrees with the input grid ",
              int3_string(declared), " the model declares (input_spatial_shape)");
  } else {
    pf.grid = has_declared ? declared : model_grid(pf.config);
  }
  pf.grid_note = check_grid(pf.config, pf.grid);
  if (grid_text.empty() && !has_declared) pf.grid_note += " (the model declares no input grid: the preset's is used)";
  for (const std::string& path : paths) {
    pf.frames.push_back(read_point_file(path, opt, pf.config));
    pf.most_points = std::max(pf.most_points, pf.frames.back().dim(0));
  }
  return pf;
}

PointsInput voxelize_for_engine(const std::vector<std::string>& paths, const VoxelOptions& o, Engine& engine,
                                const std::string& grid_text) {
  PointFrames pf = read_point_frames(paths, o, engine, grid_text);
  PointsInput in;
  in.grid = pf.grid;
  in.grid_note = pf.grid_note;
  const int64_t t0 = now_ns();
  in.voxelizer = Voxelizer::create(pf.config, engine.backend(), pf.most_points, 0, int(pf.frames.size()));
  if (pf.frames.size() == 1)
    in.voxelizer->run(pf.frames[0], nullptr);
  else
    in.voxelizer->run_batch(pf.frames, nullptr);
  in.features = in.voxelizer->features();  // phase 1: the count comes back to the host here
  in.indices = in.voxelizer->indices();
  in.stats = in.voxelizer->stats();
  in.voxelize_ms = ms_since(t0);
  return in;
}

}  // namespace scn::cli
